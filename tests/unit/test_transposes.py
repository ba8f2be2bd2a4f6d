"""optimize_transposes: channels-last models (tf2onnx style, Transposes around every NCHW op) compile without
Transposes between layers, and still match onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.ops.shape import NHWC_OUT
from ember.passes.transposes import compose, invert, moves_only_unit_axes, optimize_transposes
from ember.passes.verify import verify
from ember.reference import onnxruntime_session
from tests.support import cdriver

F = TensorProto.FLOAT
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


class Net:
    """A tf2onnx-style model under construction: NHWC tensors, each NCHW op wrapped in Transposes."""

    def __init__(self, seed: int = 3) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.k = 0

    def name(self, base: str) -> str:
        self.k += 1
        return f"{base}{self.k}"

    def const(self, arr: np.ndarray, base: str = "c") -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def w(self, *shape: int, scale: float = 0.3) -> str:
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32), "w")

    def op(self, op: str, inputs: list[str], n_out: int = 1, **attrs) -> str | list[str]:
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def nchw(self, x: str, op: str, inputs: list[str], **attrs) -> str:
        """An NCHW op on an NHWC tensor, as converters write it."""
        t = self.op("Transpose", [x], perm=TO_NCHW)
        return self.op("Transpose", [self.op(op, [t, *inputs], **attrs)], perm=TO_NHWC)

    def conv(self, x: str, cin: int, cout: int, k: int = 3, act: str | None = "Relu", bn: bool = False) -> str:
        """Transpose -> Conv [-> BN] [-> act] -> Transpose, the activation inside the NCHW island."""
        t = self.op("Transpose", [x], perm=TO_NCHW)
        y = self.op("Conv", [t, self.w(cout, cin, k, k), self.w(cout)], pads=[k // 2] * 4)
        if bn:
            stats = [self.w(cout), self.w(cout), self.w(cout),
                     self.const(self.rng.uniform(0.5, 2.0, cout).astype(np.float32), "var")]
            y = self.op("BatchNormalization", [y, *stats])
        if act:
            y = self.op(act, [y])
        return self.op("Transpose", [y], perm=TO_NHWC)

    def save(self, path: Path, inputs: list[tuple[str, list[int]]], outputs: list[str], opset: int = 17) -> Path:
        g = helper.make_graph(self.nodes, "net", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                              [helper.make_tensor_value_info(o, F, None) for o in outputs], self.inits)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
        onnx.save(model, path)
        return path


def _feeds(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    model = onnx.load(path)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input}


def _check(path: Path, tmp_path: Path) -> Graph:
    """Outputs match onnxruntime; returns the optimized graph of the bundle."""
    feeds = _feeds(path)
    ref = onnxruntime_session(str(path)).run(None, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    for o, r in zip(onnx.load(path).graph.output, ref, strict=True):
        np.testing.assert_allclose(got[o.name], r, rtol=1e-4, atol=1e-4)
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    return graph


def _transposes(graph: Graph) -> int:
    """The Transposes left, an input's counted whether it runs or became the NhwcView its convolutions gather from
    (passes/nhwc_views.py: test_convs_gather_from_an_nhwc_input)."""
    counts = graph.op_counts()
    return counts.get("Transpose", 0) + counts.get("NhwcView", 0)


def _inner_transposes(graph: Graph) -> list[str]:
    """Transposes between layers: neither reading a graph input nor writing a graph output."""
    return [n.name for n in graph.nodes if n.op == "Transpose"
            and not graph.is_input(n.inputs[0]) and not graph.is_output(n.outputs[0])]


def _count_in_model(path: Path) -> int:
    return sum(n.op_type == "Transpose" for n in onnx.load(path).graph.node)


def _resnet(blocks: int = 4, c: int = 8) -> tuple[Net, str]:
    """NHWC ResNet: stem conv, residual blocks (conv-BN-relu, conv-BN, Add, Relu in NHWC), GAP."""
    net = Net()
    x = net.conv("image", 3, c, bn=True)
    for _ in range(blocks):
        y = net.conv(x, c, c, bn=True)
        y = net.conv(y, c, c, act=None, bn=True)
        x = net.op("Relu", [net.op("Add", [y, x])])
    pooled = net.nchw(x, "GlobalAveragePool", [])
    return net, net.op("Reshape", [pooled, net.const(np.array([1, c], np.int64))])


def test_resnet_style_nhwc_has_no_transposes_between_layers(tmp_path: Path) -> None:
    net, y = _resnet()
    path = net.save(tmp_path / "m.onnx", [("image", [1, 8, 8, 3])], [y])
    graph = _check(path, tmp_path)
    assert _count_in_model(path) == 20
    assert _inner_transposes(graph) == [] and _transposes(graph) == 1  # the input's
    # With the Transposes gone, every BN folded into its Conv and every Relu into a kernel epilogue.
    assert "BatchNormalization" not in graph.op_counts() and "Relu" not in graph.op_counts()


def test_concat_pad_mul_and_reduce_mean(tmp_path: Path) -> None:
    """Two branches concatenated on the channel axis, an NHWC Pad, a constant Mul over channels, a mean."""
    net = Net()
    a = net.conv("x", 4, 6)
    b = net.conv("x", 4, 5, k=1, act="Sigmoid")
    cat = net.op("Concat", [a, b], axis=3)
    scaled = net.op("Mul", [cat, net.const(np.linspace(0.5, 1.5, 11).astype(np.float32))])
    shifted = net.op("Add", [net.const(np.full((1, 1, 1, 11), 0.25, np.float32)), scaled])
    padded = net.op("Pad", [shifted, net.const(np.array([0, 1, 2, 0, 0, 2, 1, 0], np.int64))])
    c = net.conv(padded, 11, 4)
    mean = net.op("ReduceMean", [c, net.const(np.array([1, 2], np.int64))], keepdims=0)
    path = net.save(tmp_path / "m.onnx", [("x", [2, 7, 6, 4])], [mean], opset=18)
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []
    assert _transposes(graph) == 1  # the input's: the mean over H and W of NCHW is already [N, C]


def test_softmax_over_channels_and_nhwc_output(tmp_path: Path) -> None:
    net = Net()
    c = net.conv("x", 3, 6, act=None)
    sm = net.op("Softmax", [c], axis=-1)
    log = net.op("LogSoftmax", [net.conv(sm, 6, 4)], axis=3)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 5, 7, 3])], [log, sm])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []
    assert _transposes(graph) == 3  # the input's and one per NHWC output


def test_softmax_before_opset13_only_on_the_last_axis(tmp_path: Path) -> None:
    net = Net()
    c = net.conv("x", 3, 6, act=None)
    last = net.op("Softmax", [c], axis=3)  # one axis: pushed, a Softmax over channels
    flat = net.op("Softmax", [c], axis=2)  # W and C together: the frontend's 2-D Softmax between Reshapes
    path = net.save(tmp_path / "m.onnx", [("x", [1, 4, 5, 3])], [net.conv(last, 6, 2), flat], opset=11)
    graph = _check(path, tmp_path)
    soft = [n for n in graph.nodes if n.op == "Softmax"]
    assert sorted((n.attrs["axis"], n.inputs[0].shape) for n in soft) == [(-1, (4, 30)), (1, (1, 6, 4, 5))]
    to_2d = next(n for n in graph.nodes if n.op == "Reshape" and n.outputs[0] is soft[1].inputs[0])
    # the one Transpose left feeds the flattened Softmax's Reshape
    assert [n.name for n in graph.nodes if n.op == "Transpose" and n.outputs[0] is to_2d.inputs[0]] \
        == _inner_transposes(graph)


def test_pure_nchw_model_with_inverse_pairs_has_no_transposes(tmp_path: Path) -> None:
    net = Net()
    y = net.op("Conv", ["x", net.w(6, 3, 3, 3)], pads=[1, 1, 1, 1])
    t = net.op("Transpose", [y], perm=TO_NHWC)
    t = net.op("Mul", [net.op("LeakyRelu", [t], alpha=0.1), net.const(np.arange(1, 7, dtype=np.float32))])
    t = net.op("Clip", [t, net.const(np.float32(-1.0)), net.const(np.float32(2.0))])
    y = net.op("Transpose", [t], perm=TO_NCHW)
    y = net.op("Conv", [y, net.w(4, 6, 1, 1)])
    # Transposes whose product is the identity, and one of a constant.
    y = net.op("Transpose", [net.op("Transpose", [y], perm=[0, 2, 1, 3])], perm=[0, 2, 1, 3])
    bias = net.op("Transpose", [net.const(np.ones((1, 1, 1, 4), np.float32))], perm=TO_NCHW)
    out = net.op("Add", [y, bias])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 3, 6, 6])], [out])
    graph = _check(path, tmp_path)
    assert _transposes(graph) == 0


def test_swish_and_residual_from_the_input(tmp_path: Path) -> None:
    """A Transpose read by several ops (x * sigmoid(x)), and an NHWC graph input added to a layer's output."""
    net = Net()
    a = net.conv("x", 4, 4, act=None)
    swish = net.op("Mul", [a, net.op("Sigmoid", [a])])
    res = net.op("Add", [swish, "x"])
    y = net.conv(res, 4, 3)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 6, 6, 4])], [y])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []
    assert _transposes(graph) == 2  # one at the input (shared), one at the output


def test_split_slice_argmax_reducemax(tmp_path: Path) -> None:
    net = Net()
    c = net.conv("x", 3, 8, act=None)
    lo, hi = net.op("Split", [c, net.const(np.array([3, 5], np.int64))], n_out=2, axis=-1)
    sl = net.op("Slice", [hi, *(net.const(np.array(v, np.int64)) for v in ([1, 0], [5, 4], [1, 3]))])
    arg = net.op("ArgMax", [lo], axis=3, keepdims=0)
    mx = net.op("ReduceMax", [net.conv(sl, 4, 2)], axes=[1, 2], keepdims=1)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 6, 6, 3])], [mx, net.op("Cast", [arg], to=F)], opset=17)
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []
    # The input's, and the [1, 1, 1, C] max's, which only moves axes of 1: a Reshape.
    assert _transposes(graph) == 1


def test_quantize_dequantize_per_tensor_and_per_axis(tmp_path: Path) -> None:
    net = Net()
    c = net.conv("x", 3, 4, act=None)
    q = net.op("QuantizeLinear", [c, net.const(np.float32(0.05)), net.const(np.int8(3))])
    d = net.op("DequantizeLinear", [q, net.const(np.float32(0.05)), net.const(np.int8(3))])
    scales = np.array([0.02, 0.04, 0.03, 0.05], np.float32)
    q2 = net.op("QuantizeLinear", [d, net.const(scales), net.const(np.zeros(4, np.int8))], axis=3)
    d2 = net.op("DequantizeLinear", [q2, net.const(scales), net.const(np.zeros(4, np.int8))], axis=-1)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 5, 5, 3])], [net.conv(d2, 4, 2)])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_resize_runs_on_the_nhwc_tensor(tmp_path: Path, mode: str) -> None:
    """Resizes of H and W (by scales, then to sizes) from an NHWC input to an NHWC output: their
    axes are remapped to the NHWC tensor, no Transpose is left, and the outputs are onnxruntime's."""
    net = Net()
    up = net.nchw("x", "Resize", ["", net.const(np.array([1, 1, 2, 1.5], np.float32))], mode=mode)
    sized = net.nchw(net.op("Relu", [up]), "Resize", ["", "", net.const(np.array([1, 3, 7, 5], np.int64))],
                     mode=mode, coordinate_transformation_mode="align_corners")
    path = net.save(tmp_path / "m.onnx", [("x", [1, 4, 6, 3])], [sized], opset=18)
    graph = _check(path, tmp_path)
    assert _transposes(graph) == 0
    assert [n.attrs["axes"] for n in graph.nodes if n.op == "Resize"] == [[0, 3, 1, 2]] * 2


def test_pools_run_on_the_nhwc_tensor(tmp_path: Path) -> None:
    """MaxPool and AveragePool (padded, strided, dilated, ceil_mode, count_include_pad both ways),
    GlobalAveragePool and LRN between an NHWC input and NHWC outputs run channels-last: no Transpose is left, and the
    outputs are onnxruntime's."""
    net = Net()
    mx = net.nchw("x", "MaxPool", [], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    av = net.nchw(net.op("Relu", [mx]), "AveragePool", [], kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1],
                  ceil_mode=1)
    inc = net.nchw(mx, "AveragePool", [], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=1)
    dil = net.nchw("x", "MaxPool", [], kernel_shape=[2, 2], dilations=[2, 1])
    gap = net.nchw(mx, "GlobalAveragePool", [])
    lrn = net.nchw(dil, "LRN", [], size=5, alpha=0.01, beta=0.6, bias=1.5)
    path = net.save(tmp_path / "m.onnx", [("x", [2, 9, 7, 70])], [av, inc, dil, gap, lrn], opset=17)
    graph = _check(path, tmp_path)
    assert _transposes(graph) == 0
    assert all(n.attrs.get("channels_last") for n in graph.nodes if "Pool" in n.op or n.op == "LRN")
    # the bundle as C, -Wall -Wextra -Werror, under AddressSanitizer and UndefinedBehaviorSanitizer
    feeds = _feeds(path)
    got = cdriver.run(ember.compile(path, tmp_path / "c").path, tmp_path / "drv", feeds, sanitize=True)
    for o, r in zip(onnx.load(path).graph.output, onnxruntime_session(str(path)).run(None, feeds), strict=True):
        np.testing.assert_allclose(got[o.name], r, rtol=1e-5, atol=1e-5)


def test_one_dimensional_pool_on_the_nwc_tensor(tmp_path: Path) -> None:
    net = Net()
    t = net.op("Transpose", ["x"], perm=[0, 2, 1])
    y = net.op("Transpose", [net.op("MaxPool", [t], kernel_shape=[3], strides=[2], pads=[1, 1])], perm=[0, 2, 1])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 11, 5])], [y])
    assert _transposes(_check(path, tmp_path)) == 0


@pytest.mark.parametrize(("pool", "int8_op"), [("AveragePool", "QAvgPool"), ("MaxPool", "QMaxPool"),
                                              ("GlobalAveragePool", "QMean")])
def test_int8_pools_on_nhwc_bytes_give_the_nchw_kernels_bytes(tmp_path: Path, pool: str, int8_op: str) -> None:
    """A QDQ pool of 70 channels (more than the channels-last kernels' block of 64) on an NHWC tensor runs
    channels-last on the int8 bytes, and gives exactly the values of the same model laid out NCHW."""
    def model(nhwc: bool) -> Path:
        net = Net()
        scale, zp = net.const(np.float32(0.04)), net.const(np.int8(-5))
        x = net.op("DequantizeLinear", [net.op("QuantizeLinear", ["x", scale, zp]), scale, zp])
        attrs = {"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 1, 1, 0]} if "Global" not in pool else {}
        y = net.nchw(x, pool, [], **attrs) if nhwc else net.op(pool, [x], **attrs)
        # MaxPool folds where its scale stays (a max of the bytes)
        oscale, ozp = (scale, zp) if pool == "MaxPool" else (net.const(np.float32(0.03)), net.const(np.int8(2)))
        out = net.op("DequantizeLinear", [net.op("QuantizeLinear", [y, oscale, ozp]), oscale, ozp])
        shape = [1, 9, 7, 70] if nhwc else [1, 70, 9, 7]
        return net.save(tmp_path / f"{nhwc}.onnx", [("x", shape)], [out])

    x = np.random.default_rng(5).standard_normal((1, 9, 7, 70)).astype(np.float32) * 2
    got = ember.compile(model(True), tmp_path / "nhwc").run({"x": x})
    want = ember.compile(model(False), tmp_path / "nchw").run({"x": x.transpose(0, 3, 1, 2).copy()})
    graph, _, _ = build_graph(str(model(True)), CompileOptions())
    assert _transposes(graph) == 0 and graph.op_counts().get(int8_op) == 1
    np.testing.assert_array_equal(next(iter(got.values())), next(iter(want.values())).transpose(0, 2, 3, 1))
    c = cdriver.run(ember.compile(model(True), tmp_path / "c").path, tmp_path / "drv", {"x": x}, sanitize=True)
    np.testing.assert_array_equal(next(iter(c.values())), next(iter(got.values())))  # under ASan and UBSan


@pytest.mark.parametrize(("shape", "m", "stride"), [((1, 20, 18, 8), 20, 1), ((2, 15, 140, 16), 12, 2)],
                         ids=["blocks_of_rows", "wide_rows"])
def test_shifted_conv_stores_the_nhwc_output(tmp_path: Path, shape: tuple[int, ...], m: int, stride: int) -> None:
    """A ConvShifted between an NHWC input and output reads the input in place and copies its blocks of output rows
    out transposed (an NhwcView of its output: no Transpose runs), also where its rows are wide enough (70) that an
    NCHW output would take each row's product straight into y, and for two images; with 2 threads (it then runs
    whole); against onnxruntime, and as sanitized C."""
    net = Net()
    t = net.op("Transpose", ["x"], perm=TO_NCHW)
    y = net.op("Conv", [t, net.w(m, shape[3], 3, 3), net.w(m)], strides=[stride, stride], pads=[1, 1, 1, 1])
    out = net.op("Transpose", [net.op("Relu", [y])], perm=TO_NHWC)
    path = net.save(tmp_path / "m.onnx", [("x", list(shape))], [out])
    graph = _check(path, tmp_path)
    convs = [n for n in graph.nodes if n.op == "ConvShifted"]
    assert "Transpose" not in graph.op_counts() and len(convs) == 1 and convs[0].attrs.get(NHWC_OUT), \
        graph.op_counts()
    feeds = _feeds(path)
    want = onnxruntime_session(str(path)).run(None, feeds)[0]
    c = cdriver.run(ember.compile(path, tmp_path / "c").path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_allclose(c[out], want, rtol=1e-4, atol=1e-4)
    two = ember.compile(path, tmp_path / "t2", threads=2).run(feeds)
    np.testing.assert_allclose(two[out], want, rtol=1e-4, atol=1e-4)


def test_a_convolution_output_pulled_channels_last_through_pools(tmp_path: Path) -> None:
    """An NCHW ConvShifted whose output reaches NHWC only through an AveragePool, a LeakyRelu and then both a MaxPool
    and a Reshape over the channels (TFLite's FULLY_CONNECTED on an image's channels): the convolution stores NHWC and
    the layout moves forward through the channels-last pools, so no Transpose runs (where Transpose optimization
    alone, pushing only forward, kept two); against onnxruntime and as sanitized C. Without a Transpose to meet, an
    NCHW model's convolution keeps its NCHW output."""
    net = Net()
    t = net.op("Transpose", ["x"], perm=TO_NCHW)
    c = net.op("Conv", [t, net.w(12, 8, 3, 3), net.w(12)], strides=[2, 2], pads=[1, 1, 1, 1])
    a = net.op("LeakyRelu", [net.op("AveragePool", [c], kernel_shape=[3, 2], strides=[2, 1])], alpha=0.2)
    pooled = net.op("Transpose", [net.op("MaxPool", [a], kernel_shape=[2, 2], strides=[2, 2])], perm=TO_NHWC)
    rows = net.op("Reshape", [net.op("Transpose", [a], perm=TO_NHWC), net.const(np.array([-1, 12], np.int64))])
    fc = net.op("MatMul", [rows, net.w(12, 5)])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 21, 19, 8])], [pooled, fc])
    graph = _check(path, tmp_path)
    convs = [n for n in graph.nodes if n.op == "ConvShifted"]
    assert "Transpose" not in graph.op_counts() and convs and convs[0].attrs.get(NHWC_OUT), graph.op_counts()
    assert all(n.attrs.get("channels_last") for n in graph.nodes if n.op in ("AveragePool", "MaxPool"))
    feeds = _feeds(path)
    c_out = cdriver.run(ember.compile(path, tmp_path / "c").path, tmp_path / "drv", feeds, sanitize=True)
    for o, r in zip((pooled, fc), onnxruntime_session(str(path)).run(None, feeds), strict=True):
        np.testing.assert_allclose(c_out[o], r, rtol=1e-4, atol=1e-4)
    plain = Net()
    y = plain.op("AveragePool", [plain.op("Conv", ["x", plain.w(12, 8, 3, 3)], strides=[2, 2])], kernel_shape=[2, 2])
    graph = _check(plain.save(tmp_path / "nchw.onnx", [("x", [1, 8, 21, 19])], [y]), tmp_path / "nchw")
    assert not any(n.attrs.get(NHWC_OUT) or n.attrs.get("channels_last") for n in graph.nodes), graph.op_counts()


@pytest.mark.parametrize("rank", [3, 4])
def test_conv_transpose_runs_on_the_channels_last_tensor(tmp_path: Path, rank: int) -> None:
    """A ConvTranspose between an NHWC input and output (TFLite's TRANSPOSE_CONV, MediaPipe's segmentation heads)
    runs channels-last: its product takes the input pixels as rows and its col2im adds them at the channel stride,
    with groups, strides, dilations, asymmetric pads, output padding, a bias and a fused Relu; 1-D and 2-D;
    against onnxruntime, and as C under AddressSanitizer and UndefinedBehaviorSanitizer."""
    net = Net()
    r = rank - 2
    to_first, to_last = (TO_NCHW, TO_NHWC) if rank == 4 else ([0, 2, 1], [0, 2, 1])
    t = net.op("Transpose", ["x"], perm=to_first)
    y = net.op("ConvTranspose", [t, net.w(6, 5, *[3] * r), net.w(10)], group=2, strides=[2] * r,
               dilations=[2, 1][:r] if r == 2 else [2], pads=[1, 0, 0, 2][:2 * r] if r == 2 else [1, 0],
               output_padding=[1] * r)
    out = net.op("Transpose", [net.op("Relu", [y])], perm=to_last)
    shape = [1, 5, 7, 6] if rank == 4 else [2, 9, 6]
    path = net.save(tmp_path / "m.onnx", [("x", shape)], [out])
    graph = _check(path, tmp_path)
    convs = [n for n in graph.nodes if n.op == "ConvTranspose"]
    assert _transposes(graph) == 0 and convs[0].attrs.get("channels_last") == 1, graph.op_counts()
    feeds = _feeds(path)
    c = cdriver.run(ember.compile(path, tmp_path / "c").path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_allclose(c[out], onnxruntime_session(str(path)).run(None, feeds)[0], rtol=1e-4, atol=1e-4)


def test_two_readers_transposing_one_nhwc_value_back(tmp_path: Path) -> None:
    """Two NCHW ops (no Transpose moves through LRN) each read their own Transpose of one NHWC conv output back to
    NCHW: the first pair composes to nothing, and the second Transpose, its twin, must then read the conv output
    too (it was once left reading the removed first one)."""
    net = Net()
    a = net.conv("x", 3, 4, act=None)
    y1 = net.nchw(a, "LRN", [], size=3)
    y2 = net.nchw(a, "LRN", [], size=5)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 5, 6, 3])], [y1, y2])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == []


@pytest.mark.parametrize("threads", [1, 2])
def test_convs_gather_from_an_nhwc_input(tmp_path: Path, threads: int) -> None:
    """An NHWC input read only by convolutions that copy it anyway (a stride-2 ConvShifted and a padded 5x5
    through im2col): no Transpose runs, each gathers from the NHWC floats (NhwcView), with threads too, and the
    outputs are onnxruntime's; the C bundle clean under AddressSanitizer and UndefinedBehaviorSanitizer."""
    net = Net()
    t = net.op("Transpose", ["x"], perm=TO_NCHW)
    a = net.op("Conv", [t, net.w(16, 16, 3, 3), net.w(16)], strides=[2, 2], pads=[1, 1, 1, 1])
    b = net.op("Conv", [t, net.w(24, 16, 5, 5), net.w(24)], pads=[2, 2, 2, 2])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 40, 33, 16])], [a, b])
    feeds = _feeds(path)
    ref = onnxruntime_session(str(path)).run(None, feeds)
    bundle = ember.compile(path, tmp_path / "out", threads=threads)
    graph, _, _ = build_graph(str(path), CompileOptions(threads=threads))
    assert "Transpose" not in graph.op_counts() and graph.op_counts().get("NhwcView") == 1, graph.op_counts()
    assert {"ConvShifted", "Conv"} <= set(graph.op_counts()), graph.op_counts()
    got = bundle.run(feeds)
    c = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True) if threads == 1 else got
    for o, r in zip(onnx.load(path).graph.output, ref, strict=True):
        np.testing.assert_allclose(got[o.name], r, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(c[o.name], r, rtol=1e-4, atol=1e-4)


def test_attribute_forms_of_old_opsets(tmp_path: Path) -> None:
    """Pad, Slice, Split and ReduceMean with their axes and pads as attributes (opset 9)."""
    net = Net()
    c = net.conv("x", 3, 6, act=None)
    p = net.op("Pad", [c], pads=[0, 1, 0, 0, 0, 0, 2, 0])
    s = net.op("Slice", [p], starts=[1, 0], ends=[4, 5], axes=[1, 3])
    a, b = net.op("Split", [s], n_out=2, axis=3, split=[2, 3])
    m = net.op("Add", [b, net.op("ReduceMean", [b], axes=[1, 2], keepdims=1)])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 5, 6, 3])],
                    [net.conv(m, 3, 2), net.op("LogSoftmax", [m], axis=3), net.conv(a, 2, 2)], opset=9)
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == [] and _transposes(graph) == 4  # the input's, one per output


def test_a_side_input_gets_a_transpose_only_when_that_pays(tmp_path: Path) -> None:
    """conv(x) + y with y an NHWC input: y is transposed once instead of the sum's Transpose pair."""
    net = Net()
    a = net.op("Add", [net.conv("x", 3, 4, act=None), "y"])
    path = net.save(tmp_path / "m.onnx", [("x", [1, 5, 6, 3]), ("y", [1, 5, 6, 4])], [net.conv(a, 4, 2)])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == [] and _transposes(graph) == 3  # both inputs', the output's


def test_a_real_permutation_feeding_matmul_stays(tmp_path: Path) -> None:
    net = Net()
    r = net.op("Relu", [net.op("Mul", ["x", net.const(np.float32(2.0))])])
    t = net.op("Transpose", [r], perm=[0, 2, 1])
    y = net.op("MatMul", [net.op("Sigmoid", [t]), net.w(4, 5)])
    path = net.save(tmp_path / "m.onnx", [("x", [2, 4, 6])], [y])
    graph = _check(path, tmp_path)
    assert len(_inner_transposes(graph)) == 1


@pytest.mark.parametrize("head", ["MatMul", "Gemm", "Gemm_transB"])
def test_nhwc_flatten_becomes_an_order_of_the_weights(tmp_path: Path, head: str) -> None:
    """A conv's output flattened in NHWC order (Transpose, Reshape to [N, H*W*C]) into a matmul with constant
    weights: the weights' K rows are permuted at compile time, no Transpose runs, the outputs are onnxruntime's."""
    net = Net()
    x = net.conv("image", 3, 6)  # NHWC out
    flat = net.op("Reshape", [x, net.const(np.array([2, 5 * 4 * 6], np.int64))])
    if head == "MatMul":
        y = net.op("MatMul", [flat, net.w(120, 7)])
    else:
        trans = head == "Gemm_transB"
        y = net.op("Gemm", [flat, net.w(*((7, 120) if trans else (120, 7))), net.w(7)], transB=int(trans))
    path = net.save(tmp_path / "m.onnx", [("image", [2, 5, 4, 3])], [y])
    graph = _check(path, tmp_path)
    assert _inner_transposes(graph) == [] and _transposes(graph) == 1  # the input's


def test_graph_outputs_stay_produced(tmp_path: Path) -> None:
    """An identity pair whose result is a graph output, and a Transpose output read by a later layer too."""
    net = Net()
    back = net.op("Transpose", [net.op("Transpose", ["x"], perm=TO_NHWC)], perm=TO_NCHW)
    c = net.op("Conv", [back, net.w(4, 3, 1, 1)])
    nhwc = net.op("Transpose", [c], perm=TO_NHWC)
    y = net.op("Transpose", [net.op("Relu", [nhwc])], perm=TO_NCHW)
    path = net.save(tmp_path / "m.onnx", [("x", [1, 3, 4, 5])], [back, nhwc, y])
    graph = _check(path, tmp_path)
    assert _transposes(graph) == 1  # the NHWC output's


def test_pass_on_its_own_keeps_the_ir_valid() -> None:
    net, y = _resnet(blocks=2)
    g = helper.make_graph(net.nodes, "net", [helper.make_tensor_value_info("image", F, [1, 8, 8, 3])],
                          [helper.make_tensor_value_info(y, F, None)], net.inits)
    graph = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")
    before = graph.op_counts()["Transpose"]
    optimize_transposes(graph)
    verify(graph)
    assert before == 12 and graph.op_counts().get("Transpose", 0) == 1


@pytest.mark.parametrize(("p", "q"), [((0, 3, 1, 2), (0, 2, 3, 1)), ((2, 0, 1), (1, 2, 0)), ((1, 0), (1, 0))])
def test_permutation_algebra(p: tuple[int, ...], q: tuple[int, ...]) -> None:
    x = np.arange(np.prod(range(2, 2 + len(p)))).reshape(tuple(range(2, 2 + len(p))))
    np.testing.assert_array_equal(np.transpose(np.transpose(x, p), q), np.transpose(x, compose(p, q)))
    assert compose(p, invert(p)) == tuple(range(len(p)))
    assert moves_only_unit_axes((0, 2, 3, 1), (1, 8, 1, 1)) and not moves_only_unit_axes((0, 2, 3, 1), (1, 8, 2, 1))
