"""Residual Adds fused into the convolution before them (passes/fuse_residual.py) against onnxruntime.

One model holds every kernel path that adds the shortcut (ops/conv.py RESIDUAL): the matmul tiles of a 1x1
conv and of im2col (two K blocks) on 7x7 maps, a pass after the product on bigger maps (also per pixel part
under threads) and after a one-pixel conv (matrix-vector kernel), Winograd F(2x2) and F(4x4) output
transforms, ConvShifted's row copies (stride 2) and its per-row products (a 7x7 stride-2 stem with 64-pixel
rows), LeakyRelu after the sum, and an Add of two convolutions (a downsampling shortcut), with and without
a Relu after the Add.
Compiled for AVX2 (`--cpu x86-64-v3`) and for SSE2 (`x86-64`, whose thresholds pick ConvNarrow at 7x7), and
with `--threads 2` (the residual cut with the output: channel and pixel parts, and F(4x4) Winograd's bands
of tile rows), which must agree with one thread within 1e-5. The AVX2 bundle also runs in a C driver under
ASan + UBSan.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# output name: (input channels, input size, output channels, kernel, stride, activation after the Add,
# the op x86-64-v3 picks)
CASES = {
    "direct_relu": (32, 24, 64, 1, 1, "Relu", "Conv"),  # 576 pixels: divided by pixels with threads
    "direct_7x7": (520, 7, 64, 1, 1, None, "Conv"),  # ConvNarrow on x86-64; 3 K blocks: the 49th column's dots
    "im2col_s2_relu": (32, 14, 48, 3, 2, "Relu", "Conv"),  # K = 288: two K blocks; divided by channels
    "wino2_relu": (16, 7, 24, 3, 1, "Relu", "ConvWinograd"),
    "wino4": (32, 14, 32, 3, 1, None, "ConvWinograd4"),
    "wino4_band_relu": (16, 50, 16, 3, 1, "Relu", "ConvWinograd4"),  # 13 x 13 tiles: bands of tile rows
    "shifted_s2_relu": (16, 28, 32, 3, 2, "Relu", "ConvShifted"),
    "stem_7x7_s2_relu": (3, 128, 16, 7, 2, "Relu", "ConvShifted"),  # 64-pixel rows: one product per row
    "leaky": (24, 12, 40, 1, 1, "LeakyRelu", "Conv"),
    "gemv_relu": (32, 1, 48, 1, 1, "Relu", "Conv"),
}


def _have_avx2() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return " avx2" in flags and " fma" in flags


def _conv(nodes: list, inits: list, rng: np.random.Generator, name: str, x: str, c: int, m: int, k: int,
          s: int) -> str:
    inits += [numpy_helper.from_array((rng.standard_normal((m, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32),
                                      f"w_{name}"),
              numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), f"b_{name}")]
    nodes.append(helper.make_node("Conv", [x, f"w_{name}", f"b_{name}"], [f"{name}_conv"], kernel_shape=[k, k],
                                  strides=[s, s], pads=[k // 2] * 4))
    return f"{name}_conv"


def _model(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    nodes: list = []
    inits: list = []
    inputs, outs, feed = [], [], {}

    def inp(name: str, shape: list[int]) -> str:
        inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        feed[name] = rng.standard_normal(shape).astype(np.float32)
        return name

    def finish(name: str, total: str, act: str | None) -> None:
        if act is not None:
            nodes.append(helper.make_node(act, [total], [name], **({"alpha": 0.2} if act == "LeakyRelu" else {})))
        outs.append(helper.make_tensor_value_info(name if act is not None else total, TensorProto.FLOAT, None))

    for name, (c, hw, m, k, s, act, _) in CASES.items():
        o = (hw + 2 * (k // 2) - k) // s + 1
        y = _conv(nodes, inits, rng, name, inp(f"x_{name}", [1, c, hw, hw]), c, m, k, s)
        total = name if act is None else f"{name}_sum"
        # The shortcut on either side of the Add.
        pair = [y, inp(f"r_{name}", [1, m, o, o])]
        nodes.append(helper.make_node("Add", pair if len(nodes) % 2 else pair[::-1], [total]))
        finish(name, total, act)
    # A downsampling shortcut: Add(body conv, strided 1x1 conv), then Relu.
    x = inp("x_down", [1, 16, 16, 16])
    body = _conv(nodes, inits, rng, "down_body", inp("h_down", [1, 24, 8, 8]), 24, 32, 3, 1)
    short = _conv(nodes, inits, rng, "down_short", x, 16, 32, 1, 2)
    nodes.append(helper.make_node("Add", [body, short], ["down_sum"]))
    finish("down", "down_sum", "Relu")
    graph = helper.make_graph(nodes, "convres", inputs, outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return feed


def test_fused_residuals_match_onnxruntime(tmp_path: Path) -> None:
    if not _have_avx2():
        pytest.skip("needs AVX2 + FMA to run an x86-64-v3 bundle")
    path = tmp_path / "convres.onnx"
    feed = _model(path)
    ref = onnxruntime_outputs(path, feed)
    bundles = {cpu: ember.compile(path, tmp_path / cpu, cpu=cpu) for cpu in ("x86-64-v3", "x86-64")}
    ops = [n["op"].split("+") for n in bundles["x86-64-v3"].manifest["nodes"]]
    # Every Add (and every activation after one) went into a convolution: the convolutions are all that is left.
    assert len(ops) == len(CASES) + 2 and all(op[0].startswith("Conv") for op in ops), ops
    assert {c[-1] for c in CASES.values()} <= {op[0] for op in ops}, ops
    assert sum(op[1:] == ["Relu"] for op in ops) == 1 + sum(c[5] == "Relu" for c in CASES.values()), ops
    assert "ConvNarrow" in [n["op"].split("+")[0] for n in bundles["x86-64"].manifest["nodes"]]
    sanitized = cdriver.run(bundles["x86-64-v3"].path, tmp_path / "asan", feed, sanitize=True,
                            cflags=("-march=x86-64-v3",))
    threaded = ember.compile(path, tmp_path / "t2", cpu="x86-64-v3", threads=2)
    # Divided: direct_relu by pixels, wino4_band_relu by bands of tile rows; direct_7x7, im2col_s2_relu, wino4,
    # shifted_s2_relu and stem_7x7_s2_relu by channels (the residual cut too).
    assert threaded.manifest["threads"]["divided"] == 7, threaded.manifest["threads"]
    source = (threaded.path / "convres.c").read_text()
    assert source.count("ember_conv_winograd4_f32(") == 1 + 2 + 2, "wino4 and the band case: two parts each"
    one = bundles["x86-64-v3"].run(feed)
    two = threaded.run(feed)
    for name in ref:
        for cpu, b in bundles.items():
            assert_close(b.run(feed)[name], ref[name], f"{name} ({cpu})")
        assert_close(sanitized[name], ref[name], f"{name} (sanitized C driver)")
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-6, err_msg=f"{name}: 2 threads vs 1")
