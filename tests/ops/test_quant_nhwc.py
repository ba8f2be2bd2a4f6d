"""Integer convolutions that read and write channels-last bytes in place (passes/nhwc_views.py): an NHWC int8 tensor
Transposed to NCHW for a QLinearConv whose output is Transposed back runs no Transpose. The convolution packs its
rows from the NHWC input (an NhwcView to NCHW) and stores its sums at the pixel stride M (qconv.c lay bit 3; the
view to NHWC reads them). Every case must give the bits of the NCHW build (--opt-level 1, which keeps both
Transposes): the strided stores of the portable, AVX2 and AVX-512 requantisations (runs of more than 16 pixels,
a narrow tile's row, the one- and two-pixel matrix-vector path), a direct 1x1 (its pixels packed as a product's
rows), groups (the output side only), depthwise ones (AVX-512 VNNI's 16-channel blocks, the planes of the
portable and AVX2 builds), two images, and a bundle
divided among threads along its pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ops.shape import NHWC_OUT
from tests.ops.test_quant_blocked import HAS_AVX2
from tests.ops.test_quant_kernels import _f32, _model
from tests.ops.test_quant_shifted import HAS_VNNI
from tests.support import cdriver

TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]

# name: (x NHWC shape, output channels, kernel, stride, group)
CASES = {
    "3x3_m6_strided_runs": ((1, 12, 11, 8), 6, 3, 1, 1),  # 132 pixels: AVX-512 runs of 64 stored 6 bytes apart
    "3x3_s2_m70": ((2, 9, 10, 16), 70, 3, 2, 1),  # two images, more channels than a tile's rows
    "direct_1x1": ((1, 7, 9, 12), 20, 1, 1, 1),
    "grouped": ((1, 6, 7, 8), 12, 3, 1, 2),
    "two_pixels": ((1, 1, 2, 8), 5, 1, 1, 1),  # ember_qconv's matrix-vector path
    # depthwise (qdwvnni.c: blocks of 16 channels, the last partial; qdwconv.c's planes elsewhere)
    "depthwise_24": ((1, 10, 9, 24), 24, 3, 1, 24),
    "depthwise_s2_two_images": ((2, 11, 12, 16), 16, 3, 2, 16),
    "depthwise_5x5": ((1, 9, 13, 20), 20, 5, 1, 20),
}


def _model_nhwc(x_shape: tuple[int, ...], m: int, k: int, stride: int, group: int, seed: int = 7,
                ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    c = x_shape[3]
    consts = {"s": _f32(0.05), "zp": np.array(-5, np.int8),
              "w": rng.integers(-60, 61, (m, c // group, k, k)).astype(np.int8),
              "ws": (rng.uniform(0.9, 1.4, m) / (35 * np.sqrt(c // group * k * k))).astype(np.float32),
              "wz": np.zeros(m, np.int8), "b": rng.integers(-200, 200, m).astype(np.int32),
              "ys": _f32(0.04), "yz": np.array(3, np.int8)}
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=TO_NCHW),
             helper.make_node("QLinearConv", ["xt", "s", "zp", "w", "ws", "wz", "ys", "yz", "b"], ["yc"],
                              pads=[k // 2] * 4, strides=[stride, stride], group=group),
             helper.make_node("Transpose", ["yc"], ["y"], perm=TO_NHWC)]
    feeds = {"x": rng.integers(-128, 128, x_shape).astype(np.int8)}
    return _model(nodes, feeds, consts, ("y",), 21), feeds


@pytest.mark.parametrize("case", list(CASES))
def test_qconv_reads_and_stores_nhwc_bytes_bit_identical(tmp_path: Path, case: str) -> None:
    model, feeds = _model_nhwc(*CASES[case])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    graph, _, _ = build_graph(str(path), CompileOptions())
    convs = [n for n in graph.nodes if n.op == "QConv"]
    # a grouped conv's input keeps its Transpose (the packings read one group's channels at their own stride)
    transposes = 1 if 1 < CASES[case][4] < CASES[case][0][3] else 0
    assert graph.op_counts().get("Transpose", 0) == transposes and len(convs) == 1 and convs[0].attrs.get(NHWC_OUT), \
        graph.op_counts()
    want = ember.compile(path, tmp_path / "nchw", opt_level=1).run(feeds)["y"]
    assert len(np.unique(want)) > min(20, want.size // 2)  # not saturated into a few values
    bundle = ember.compile(path, tmp_path / "nhwc")
    builds = {"host": bundle.run(feeds)["y"],
              "2 threads": ember.compile(path, tmp_path / "t2", threads=2).run(feeds)["y"],
              "x86-64-v3": ember.compile(path, tmp_path / "v3", cpu="x86-64-v3").run(feeds)["y"],
              # the portable path (no -march: SSE2), sanitized
              "portable": cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)["y"]}
    if HAS_VNNI or HAS_AVX2:  # the native tiles' strided stores, sanitized
        builds["native"] = cdriver.run(bundle.path, tmp_path / "drv_native", feeds, sanitize=True,
                                       cflags=("-march=native",))["y"]
    for build, got in builds.items():
        np.testing.assert_array_equal(got, want, err_msg=build)


def test_a_table_between_the_conv_and_its_transpose_maps_the_nhwc_bytes(tmp_path: Path) -> None:
    """A QDQ Sigmoid between the QLinearConv and the Transpose to NHWC (an exact lookup table): the convolution
    still stores channels-last and the table maps those bytes; a second reader of the conv output keeps it
    NCHW (and its Transpose)."""
    model, feeds = _model_nhwc((1, 8, 9, 8), 8, 3, 1, 1)
    g = model.graph
    out = g.node.pop()
    out.input[0] = "yq"
    g.node.extend([helper.make_node("DequantizeLinear", ["yc", "ys", "yz"], ["yf"]),
                   helper.make_node("Sigmoid", ["yf"], ["ya"]),
                   helper.make_node("QuantizeLinear", ["ya", "s8", "z8"], ["yq"]), out])
    g.initializer.extend([onnx.numpy_helper.from_array(_f32(1 / 256), "s8"),
                          onnx.numpy_helper.from_array(np.array(-128, np.int8), "z8")])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    graph, _, _ = build_graph(str(path), CompileOptions())
    assert "Transpose" not in graph.op_counts(), graph.op_counts()
    want = ember.compile(path, tmp_path / "nchw", opt_level=1).run(feeds)["y"]
    np.testing.assert_array_equal(ember.compile(path, tmp_path / "nhwc").run(feeds)["y"], want)
    # the conv output read twice: stored NCHW, both Transposes run
    g.output.append(onnx.ValueInfoProto(name="yc"))
    onnx.save(model, path)
    graph, _, _ = build_graph(str(path), CompileOptions())
    assert graph.op_counts().get("Transpose") == 1 and not any(n.attrs.get(NHWC_OUT) for n in graph.nodes)
    got = ember.compile(path, tmp_path / "two").run(feeds)
    np.testing.assert_array_equal(got["y"], want)
