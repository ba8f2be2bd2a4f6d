"""Channel-blocked int8 activations (passes/int8_layout.py): values between integer convolutions stored as
words of four channels in blocks of 64 pixels. Every producer and reader of the layout must give the
bits of the NCHW build (--opt-level 1, which neither blocks values nor shifts convolutions, and whose
kernels the other integer tests hold to the reference): 1x1s that read blocks in place (uint8) or
flipped (int8), shifted 3x3s that read and write it (stores that run into the next block), im2col
ones of strides 1 and 2, a strided 1x1, depthwise ones, a residual QAdd, two images, a last partial
block. On the host build, the portable path under ASan/UBSan and the AVX-512 or AVX2 tiles and
depthwise kernels under them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from tests.ops.test_quant_kernels import _f32, _model
from tests.ops.test_quant_shifted import HAS_VNNI, NATIVE
from tests.support import cdriver

RNG = np.random.default_rng(41)
HAS_AVX2 = "__AVX2__" in NATIVE and "__FMA__" in NATIVE and "__AVX512F__" not in NATIVE  # qgemm.c's AVX2 tiles

# name, input, input channels, output channels, kernel, stride: a chain from the input x; "sum" adds a
# and c.
LAYERS = [("a", "x", 8, 12, 1, 1), ("b", "a", 12, 8, 3, 1), ("p", "b", 8, 8, 3, 1), ("c", "p", 8, 12, 1, 1),
          ("d", "sum", 12, 8, 3, 2), ("q", "sum", 12, 12, 3, 2), ("e", "d", 8, 16, 1, 2), ("h", "e", 16, 16, 5, 1),
          ("f", "h", 16, 8, 3, 1), ("g", "f", 8, 4, 3, 1)]
# group = channels: 16 channels (one vector of qdwvnni.c), 8 and 12 (part of one), a 5x5
DEPTHWISE = {"p", "q", "h", "r", "u"}


def _chain(xdt: type, batch: int, layers: list[tuple[str, str, int, int, int, int]] = LAYERS,
           shape: tuple[int, int, int] = (8, 9, 84), outputs: tuple[str, ...] = ("g", "q"),
           ) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """QLinearConvs, by default on a 9x84 map (756 pixels: eleven blocks and a part) with a QDQ residual
    Add; g and q are the outputs. The 3x3 on 9x84 and the stride-2 1x1 are shifted; the stride-2 3x3
    and the 3x3s on 3x21 take im2col; p, q and h are depthwise (p and h blocked in and out, q blocked in
    and NCHW out)."""
    info = np.iinfo(xdt)
    zp = np.array(120 if xdt is np.uint8 else -5, xdt)
    feeds = {"x": RNG.integers(info.min, info.max + 1, (batch, *shape)).astype(xdt)}
    consts: dict[str, np.ndarray] = {"s": _f32(0.05), "zp": zp}
    nodes = []
    for name, src, c, m, k, stride in layers:
        group = c if name in DEPTHWISE else 1
        consts[f"w_{name}"] = RNG.integers(-60, 61, (m, c // group, k, k)).astype(np.int8)
        # about the input's spread in, the output's out (weights' spread about 35, K = c * k * k terms)
        consts[f"ws_{name}"] = (RNG.uniform(0.9, 1.4, m) / (35 * np.sqrt(c // group * k * k))).astype(np.float32)
        consts[f"wz_{name}"] = np.zeros(m, np.int8)
        consts[f"b_{name}"] = RNG.integers(-200, 200, m).astype(np.int32)
        nodes.append(helper.make_node(
            "QLinearConv", [src, "s", "zp", f"w_{name}", f"ws_{name}", f"wz_{name}", "s", "zp", f"b_{name}"],
            [name], pads=[k // 2] * 4, strides=[stride, stride], group=group))
        if name == "c":  # sum = a + c, in QDQ form (a QAdd)
            nodes += [helper.make_node("DequantizeLinear", ["a", "s", "zp"], ["a_f"]),
                      helper.make_node("DequantizeLinear", ["c", "s", "zp"], ["c_f"]),
                      helper.make_node("Add", ["a_f", "c_f"], ["sum_f"]),
                      helper.make_node("QuantizeLinear", ["sum_f", "s", "zp"], ["sum"])]
    return _model(nodes, feeds, consts, outputs, 21), feeds


def _blocked_values(path: Path) -> set[str]:
    graph, _, _ = build_graph(str(path), CompileOptions())  # host target: conv algorithms and int8 layout run
    blocked = [v for v in graph.values() if v.blocked]
    for v in blocked:  # the planner's size: whole blocks of 64 pixels
        n, c, h, w = v.shape
        assert v.storage_bytes == n * c * -(-h * w // 64) * 64, v
    return {v.name for v in blocked}


def _check_bit_identical(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                         blocked: set[str]) -> None:
    """The default build blocks exactly `blocked` (by node name) and, on the host, portable and native
    builds, gives every output of the NCHW build bit for bit."""
    onnx.save(model, tmp_path / "m.onnx")
    names = {n.split("_")[0] for n in _blocked_values(tmp_path / "m.onnx")}
    assert names == blocked, names
    ref = ember.compile(tmp_path / "m.onnx", tmp_path / "nchw", opt_level=1).run(feeds)
    assert all(len(np.unique(r)) > 20 for r in ref.values())  # not saturated into a few values
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "blocked")
    builds = {"host": bundle.run(feeds),
              # the portable path (no -march: SSE2), sanitized
              "portable": cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)}
    if HAS_VNNI or HAS_AVX2:  # the AVX-512 or AVX2 tiles' word stores and depthwise kernels, sanitized
        builds["native"] = cdriver.run(bundle.path, tmp_path / "drv_native", feeds, sanitize=True,
                                       cflags=("-march=native",))
    for build, got in builds.items():
        for name, r in ref.items():
            np.testing.assert_array_equal(got[name], r, err_msg=f"{build} {name}")


@pytest.mark.parametrize(("xdt", "batch"), [(np.uint8, 1), (np.int8, 2)], ids=["uint8", "int8-batch2"])
def test_blocked_chain_is_bit_identical_to_nchw(tmp_path: Path, xdt: type, batch: int) -> None:
    # everything but the input and the outputs g and q (a depthwise one reads the blocked sum)
    _check_bit_identical(tmp_path, *_chain(xdt, batch), {"a", "b", "p", "c", "sum", "d", "e", "h", "f"})


def test_depthwise_tiles_across_blocks(tmp_path: Path) -> None:
    """On a map 71 wide, qdwvnni.c's bands of 8 output rows (568 pixels) start mid-way into a block of 64, so
    its tiles of 16 pixels run into the next block when they store, and its rows of input when they load;
    the stride-2 ones (r: 3x3, left pad 1, reads 2 of every 3 rows of the blocked a; u: 5x5, left pad 2) cross
    a block at every offset and parity, so the AVX2 kernel's pairs of input pixels (one load for both column
    phases) end at odd run lengths."""
    layers = [("a", "x", 16, 16, 1, 1), ("p", "a", 16, 16, 3, 1), ("r", "a", 16, 16, 3, 2), ("u", "a", 16, 16, 5, 2),
              ("o", "p", 16, 8, 1, 1), ("t", "r", 16, 8, 1, 1), ("v", "u", 16, 8, 1, 1)]
    _check_bit_identical(tmp_path, *_chain(np.int8, 1, layers, (16, 20, 71), ("o", "t", "v")), {"a", "p", "r", "u"})


def test_which_values_are_blocked(tmp_path: Path) -> None:
    """Graph inputs and outputs stay NCHW, as do values that a reader without the layout reads (here a
    MaxPool), the QAdd's inputs when its output cannot be blocked, and values whose channels are not in
    fours."""
    model, _ = _chain(np.uint8, 1)
    graph = model.graph
    # the sum also feeds a MaxPool: so neither it nor the Add's inputs a and c can be blocked
    graph.node.append(helper.make_node("MaxPool", ["sum"], ["pooled"], kernel_shape=[2, 2]))
    graph.output.append(onnx.ValueInfoProto(name="pooled"))
    onnx.save(model, tmp_path / "m.onnx")
    blocked = _blocked_values(tmp_path / "m.onnx")
    names = {n.split("_")[0] for n in blocked}
    assert {"d", "e", "f", "b"} <= names, blocked
    assert not names & {"x", "a", "c", "sum", "g", "pooled"}, blocked
