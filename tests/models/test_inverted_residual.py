"""MobileNet/EfficientNet inverted-residual blocks against onnxruntime: expand 1x1 -> depthwise (3x3 stride 2,
5x5 stride 1) -> Squeeze-Excitation (GlobalAveragePool, two 1x1 convs, Mul) -> project 1x1, with a residual
Add; Swish written as Sigmoid * x (as torch exports SiLU) and MobileNetV3's HardSwish/HardSigmoid. These are
the layers whose fused epilogues and pools the float CNN speed work (issue 24) rewrote.

Odd plane sizes (23x23, 12x12, 6x6) leave the pools' 16-wide partial sums a tail, and inputs of a few
units put the Swish/Sigmoid epilogues on both sides of zero and far into the tails.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.passes import fuse_irblock, pipeline
from ember.toolchain.cpus import DEFAULT_FAMILY, CpuChoice
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs


class _Net:
    """Accumulates nodes and initializers of one graph; each method returns its output's name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(24)

    def _name(self, stem: str) -> str:
        return f"{stem}{len(self.nodes)}"

    def conv(self, x: str, cin: int, cout: int, k: int = 1, stride: int = 1, group: int = 1, dilation: int = 1) -> str:
        w, b, y = self._name("w"), self._name("b"), self._name("conv")
        fan_in = cin // group * k * k
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal((cout, cin // group, k, k)) * 1.5 / np.sqrt(fan_in)).astype(np.float32), w))
        self.inits.append(numpy_helper.from_array(self.rng.uniform(-0.5, 0.5, cout).astype(np.float32), b))
        self.nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[stride, stride],
                                           pads=[k // 2 * dilation] * 4, group=group, dilations=[dilation] * 2))
        return y

    def gemm(self, x: str, k: int, n: int, trans_b: int = 0, **attrs: float) -> str:
        """A fully connected layer of one row; its bias of shape (1, n), or (n,) with B transposed."""
        w, b, y = self._name("w"), self._name("b"), self._name("gemm")
        weights = self.rng.standard_normal((n, k) if trans_b else (k, n)) * 1.5 / np.sqrt(k)
        self.inits.append(numpy_helper.from_array(weights.astype(np.float32), w))
        bias = self.rng.uniform(-0.5, 0.5, n if trans_b else (1, n))
        self.inits.append(numpy_helper.from_array(bias.astype(np.float32), b))
        self.nodes.append(helper.make_node("Gemm", [x, w, b], [y], transB=trans_b, **attrs))
        return y

    def save(self, path: Path, name: str, inputs: dict[str, list[int]], outputs: dict[str, list[int]]) -> None:
        """The graph of float32 inputs and outputs of these shapes, checked (full shape inference) and saved."""
        graph = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                     for n, s in inputs.items()],
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, path)

    def op(self, op: str, *xs: str) -> str:
        y = self._name(op.lower())
        self.nodes.append(helper.make_node(op, list(xs), [y]))
        return y

    def swish(self, x: str) -> str:
        return self.op("Mul", x, self.op("Sigmoid", x))

    def block(self, x: str, cin: int, cout: int, expand: int, k: int, stride: int, v3: bool = False) -> str:
        """One inverted-residual block; the residual Add where shapes allow (stride 1, cin == cout)."""
        act = (lambda t: self.op("HardSwish", t)) if v3 else self.swish
        gate = "HardSigmoid" if v3 else "Sigmoid"
        mid = cin * expand
        h = act(self.conv(x, cin, mid))
        h = act(self.conv(h, mid, mid, k, stride, group=mid))
        s = self.op("GlobalAveragePool", h)
        s = self.op(gate, self.conv(act(self.conv(s, mid, max(1, mid // 4))), max(1, mid // 4), mid))
        h = self.conv(self.op("Mul", h, s), mid, cout)
        return self.op("Add", x, h) if stride == 1 and cin == cout else h


def _model(path: Path) -> Path:
    net = _Net()
    x = net.swish(net.conv("x", 3, 8, 3, 1))                     # 23x23
    x = net.block(x, 8, 12, expand=6, k=3, stride=2)             # 12x12, no residual
    x = net.block(x, 12, 12, expand=4, k=5, stride=1)            # 12x12, residual
    x = net.block(x, 12, 16, expand=3, k=5, stride=2, v3=True)   # 6x6, MobileNetV3's activations
    x = net.block(x, 16, 16, expand=4, k=3, stride=1, v3=True)   # residual
    # A dilated 7x7 depthwise with Relu6 (Clip: clamped in registers) on 20 channels, 6x6: the channel-blocked
    # path (kernels/dwblock.c) with a last block of channels that overlaps the one before it.
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    d = net.op("Clip", net.conv(net.conv(x, 16, 20), 20, 20, k=7, group=20, dilation=2), "zero", "six")
    x = net.op("Add", x, net.conv(d, 20, 16))
    y = net.op("GlobalAveragePool", x)
    # A classifier head of one image (Gemm of a single row: kernels/gemv.c) at widths that leave vector and
    # unroll tails: B transposed with alpha, beta and a fused HardSwish, then B as stored.
    h = net.op("HardSwish", net.gemm(net.op("Flatten", y), 16, 37, trans_b=1, alpha=0.5, beta=2.0))
    logits = net.gemm(h, 37, 19)
    net.save(path, "irblocks", {"x": [1, 3, 23, 23]}, {y: [1, 16, 1, 1], logits: [1, 19]})
    return path


def test_inverted_residual_blocks_match_onnxruntime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The NCHW kernels this checks, with the channels-last regions off (tests/models/test_nhwc_region.py has those).
    real = pipeline.resolve_cpu

    def resolve(target: str, cpu: str | None, params: tuple[str, ...] = ()) -> CpuChoice | None:
        choice = real(target, cpu, params)
        return None if choice is None else replace(choice, family=replace(choice.family, nhwc_min_convs=None))

    monkeypatch.setattr(pipeline, "resolve_cpu", resolve)
    path = _model(tmp_path / "irblocks.onnx")
    bundle = ember.compile(path, tmp_path / "out")
    source = (bundle.path / "irblocks.c").read_text()
    # the one-pixel and one-row products, the channel-blocked depthwise and the blocked 1x1 + activation ran
    assert all(f"{fn}(" in source for fn in ("ember_gemv_rows_f32", "ember_gemv_cols_f32", "ember_dwconv_blocked_f32",
                                             "ember_pointwise_act_f32"))
    x = {"x": (np.random.default_rng(5).standard_normal((1, 3, 23, 23)) * 3).astype(np.float32)}
    ref = onnxruntime_outputs(path, x)
    got, sanitized = bundle.run(x), cdriver.run(bundle.path, tmp_path / "asan", x, sanitize=True)
    for name in ref:
        assert_close(got[name], ref[name], f"inverted-residual blocks: {name}")
        # The same C built by itself with ASan + UBSan, and warning-free as freestanding C99.
        assert_close(sanitized[name], ref[name], f"inverted-residual blocks (sanitized C driver): {name}")
    cdriver.compile_werror(bundle.path, tmp_path / "werror.o")


def test_blocked_depthwise_and_pointwise_divide_among_threads(tmp_path: Path) -> None:
    """EfficientNet's 5x5 stride-2 depthwise + Swish (28x28 -> 14x14, 200 channels: enough work to divide) on
    the channel-blocked path, then a 1x1 conv + HardSwish (kernels/pointwise.c), compiled for 2 threads: the
    depthwise divides along channels (each part with its own scratch), the 1x1 along output pixels."""
    net = _Net()
    y = net.op("HardSwish", net.conv(net.swish(net.conv("x", 200, 200, k=5, stride=2, group=200)), 200, 64))
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 200, 28, 28])
    graph = helper.make_graph(net.nodes, "dw5", [x_info],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 64, 14, 14])], net.inits)
    path = tmp_path / "dw5.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=2)
    assert threaded.manifest["threads"]["divided"] == 2
    source = (threaded.path / "dw5.c").read_text()
    assert "ember_dwconv_blocked_f32(" in source and "ember_pointwise_act_f32(" in source
    x = {"x": np.random.default_rng(7).standard_normal((1, 200, 28, 28)).astype(np.float32) * 2}
    want, ref = serial.run(x)[y], onnxruntime_outputs(path, x)[y]
    assert_close(want, ref, "blocked depthwise, 1 thread")
    assert_close(threaded.run(x)[y], want, "blocked depthwise: 2 threads vs 1", rel=1e-5)
    sanitized = cdriver.run(threaded.path, tmp_path / "c", x, sanitize=True, cflags=("-pthread",))
    assert_close(sanitized[y], want, "blocked depthwise: sanitized C driver, 2 threads", rel=1e-5)


@pytest.mark.parametrize("cpu", [None, "x86-64"])
def test_stem_convolutions_with_swish_and_hardswish(tmp_path: Path, cpu: str | None) -> None:
    """EfficientNet's and MobileNetV3's stems (3x3 stride 2 from 3 channels) with their activations: on the
    baseline x86-64 family by im2col, the activation applied block by block after the product
    (kernels/pointwise.c, ember_conv_act_f32); on the host's family by whatever it chooses (AVX2: ConvShifted)."""
    net = _Net()
    a = net.swish(net.conv("x", 3, 24, k=3, stride=2))
    b = net.op("HardSwish", net.conv("x", 3, 16, k=3, stride=2))
    outs = [helper.make_tensor_value_info(a, TensorProto.FLOAT, [1, 24, 48, 48]),
            helper.make_tensor_value_info(b, TensorProto.FLOAT, [1, 16, 48, 48])]
    graph = helper.make_graph(net.nodes, "stem", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                              [1, 3, 96, 96])], outs, net.inits)
    path = tmp_path / "stem.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    bundle = ember.compile(path, tmp_path / "out", cpu=cpu)
    if cpu == "x86-64":
        assert (bundle.path / "stem.c").read_text().count("ember_conv_act_f32(") == 3  # the kernel, two calls
    x = {"x": np.random.default_rng(9).standard_normal((1, 3, 96, 96)).astype(np.float32) * 2}
    ref, got = onnxruntime_outputs(path, x), bundle.run(x)
    sanitized = cdriver.run(bundle.path, tmp_path / "asan", x, sanitize=True)
    for name in (a, b):
        assert_close(got[name], ref[name], f"stem {name}")
        assert_close(sanitized[name], ref[name], f"stem {name} (sanitized C driver)")


# Band-by-band blocks (passes/fuse_irblock.py, kernels/irblock.c) ------------------------------------------------

def _act(net: _Net, x: str, kind: str) -> str:
    if kind == "relu6":  # Clip(0, 6): clamped in registers
        return net.op("Clip", x, "zero", "six")
    return net.op("HardSwish", x) if kind == "hardswish" else net.swish(x)


def _plain_block(net: _Net, x: str, cin: int, cout: int, expand: int, stride: int, act: str,
                 dilation: int = 1, se: bool = False) -> str:
    """expand 1x1 -> 3x3 depthwise -> [Squeeze-Excitation ->] project 1x1 [+ x where the shapes agree]."""
    mid = cin * expand
    h = _act(net, net.conv(x, cin, mid), act) if expand > 1 else x
    h = _act(net, net.conv(h, mid, mid, 3, stride, group=mid, dilation=dilation), act)
    if se:
        s = net.op("Sigmoid", net.conv(_act(net, net.conv(net.op("GlobalAveragePool", h), mid, 4), act), 4, mid))
        h = net.op("Mul", h, s)
    h = net.conv(h, mid, cout)
    return net.op("Add", x, h) if stride == 1 and cin == cout else h


@pytest.fixture
def irblocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fusion on, from planes of 3136 pixels (no CPU family turns it on yet: toolchain/cpus.py)."""
    real = pipeline.resolve_cpu

    def resolve(target: str, cpu: str | None, params: tuple[str, ...] = ()) -> CpuChoice | None:
        choice = real(target, cpu, params)
        return None if choice is None else replace(choice, family=replace(choice.family, irblock_min_pixels=3136))

    monkeypatch.setattr(pipeline, "resolve_cpu", resolve)
    monkeypatch.setattr(pipeline, "DEFAULT_FAMILY", replace(DEFAULT_FAMILY, irblock_min_pixels=3136))


# Odd heights and widths over that size rule (3136 pixels): ReLU6, HardSwish and Swish; stride 1
# (irblock.c's row kernel, with and without the residual Add), dilation 2 (the general depthwise), a
# Squeeze-Excitation block (expand + depthwise only: the SE's pool needs the whole depthwise output), rows
# narrower than a vector (640x5). Stride-2 blocks (with and without SE) and an expand-ratio-1 block stay layer
# by layer. 4 blocks fuse.
_FUSED = 4


def _banded_model(path: Path, wide: int = 8) -> tuple[Path, list[str]]:
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = _plain_block(net, "x", wide, wide, 3, 1, "relu6")
    b = _plain_block(net, a, wide, 12, 4, 1, "hardswish", se=True)
    c = _plain_block(net, b, 12, 12, 2, 1, "swish", dilation=2)
    d = _plain_block(net, c, 12, 16, 3, 2, "swish", se=True)
    e = _plain_block(net, c, 12, 16, 3, 2, "relu6")
    f = _plain_block(net, c, 12, 16, 1, 1, "relu6")
    t = _plain_block(net, _plain_block(net, "t", 8, 8, 2, 1, "hardswish"), 8, 8, 3, 2, "relu6")
    shapes = {d: [1, 16, 29, 30], e: [1, 16, 29, 30], f: [1, 16, 57, 59], t: [1, 8, 320, 3]}
    net.save(path, "banded", {"x": [1, wide, 57, 59], "t": [1, 8, 640, 5]}, shapes)
    return path, list(shapes)


def _feeds(wide: int = 8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"x": (rng.standard_normal((1, wide, 57, 59)) * 3).astype(np.float32),
            "t": (rng.standard_normal((1, 8, 640, 5)) * 3).astype(np.float32)}


@pytest.mark.parametrize("band_bytes", [None, 12_000], ids=["l2-bands", "few-row-bands"])
def test_banded_blocks_match_onnxruntime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, irblocks: None,
                                         band_bytes: int | None) -> None:
    """Blocks cut into the default L2-sized bands (one per plane at these sizes) and into bands of 1-4 rows
    (each keeps the rows its windows share with the band before; shorter last bands); the latter also built
    with ASan + UBSan."""
    if band_bytes is not None:
        monkeypatch.setattr(fuse_irblock, "BAND_BYTES", band_bytes)
    path, names = _banded_model(tmp_path / "banded.onnx")
    bundle = ember.compile(path, tmp_path / "out")
    source = (bundle.path / "banded.c").read_text()
    assert source.count("ember_irblock_f32(") == _FUSED + 1  # the kernel and one call per fused block
    x = _feeds()
    ref, got = onnxruntime_outputs(path, x), bundle.run(x)
    for name in names:
        assert_close(got[name], ref[name], f"banded blocks ({band_bytes}): {name}")
    if band_bytes is not None:
        sanitized = cdriver.run(bundle.path, tmp_path / "asan", x, sanitize=True)
        for name in names:
            assert_close(sanitized[name], ref[name], f"banded blocks ({band_bytes}, sanitized C driver): {name}")
        cdriver.compile_werror(bundle.path, tmp_path / "werror.o")


def test_banded_blocks_divide_among_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, irblocks: None) -> None:
    """Compiled for 2 threads, the fused blocks divide along whole bands of output rows (each part with its
    own scratch, expanding its first band's halo itself): within 1e-5 of one thread, also sanitized."""
    monkeypatch.setattr(fuse_irblock, "BAND_BYTES", 30_000)
    path, names = _banded_model(tmp_path / "banded.onnx", wide=24)
    serial, threaded = ember.compile(path, tmp_path / "t1"), ember.compile(path, tmp_path / "t2", threads=2)
    assert threaded.manifest["threads"]["divided"] >= 4
    assert (threaded.path / "banded.c").read_text().count("ember_irblock_f32(") > _FUSED + 1
    x = _feeds(wide=24)
    want, ref = serial.run(x), onnxruntime_outputs(path, x)
    got = threaded.run(x)
    sanitized = cdriver.run(threaded.path, tmp_path / "c", x, sanitize=True, cflags=("-pthread",))
    for name in names:
        assert_close(want[name], ref[name], f"banded blocks, 1 thread: {name}")
        assert_close(got[name], want[name], f"banded blocks: 2 threads vs 1: {name}", rel=1e-5)
        assert_close(sanitized[name], want[name], f"banded blocks: sanitized C driver, 2 threads: {name}", rel=1e-5)


def test_no_cpu_family_fuses_blocks_yet(tmp_path: Path) -> None:
    """Measured no gain on Zen 3 (toolchain/cpus.py): by default the blocks stay layer by layer."""
    path, _ = _banded_model(tmp_path / "banded.onnx")
    assert "ember_irblock_f32(" not in (ember.compile(path, tmp_path / "out").path / "banded.c").read_text()
