"""The 3x3 pad-1 depthwise fast paths (ember_dwconv3_f32 in dwconv.c) at their edges, against onnxruntime.

Stride 1: small planes copied into alternating zero-bordered buffers, big planes (>= 2048 outputs) read
in place between copies of their top and bottom rows; stride 2: phase planes split with vectors (even
sizes) or element by element (odd sizes), in one piece or in chunks of output rows with a short last
chunk, or deinterleaved in registers straight from the input rows (even widths, >= one vector of
outputs per row); small planes EMBER_VL channels at a time in vector lanes (with a per-plane remainder,
and blocks that straddle batch items). Also channel multipliers, batches, a non-clamp activation, and
Inf/NaN next to the row ends, which the masked wrap-around taps must not spread to outputs whose
windows do not contain them.
Every case also runs in a C driver built with AddressSanitizer + UBSan (taps read past a buffer fail).
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

# name: (input shape, channel multiplier, stride, activation after the conv)
CASES: dict[str, tuple[tuple[int, int, int, int], int, int, str | None]] = {
    "s1_small_batch2_clip": ((2, 6, 7, 7), 1, 1, "Clip"),
    "s1_big_rect_leakyrelu": ((1, 3, 48, 50), 1, 1, "LeakyRelu"),
    "s1_mult2_relu": ((1, 3, 9, 11), 2, 1, "Relu"),
    "s1_below_one_vector": ((1, 2, 3, 4), 1, 1, None),
    "s2_small_batch2_clip": ((2, 5, 14, 14), 1, 2, "Clip"),
    "s2_chunks_short_last": ((1, 2, 104, 20), 1, 2, None),
    "s2_chunks_mult2": ((1, 2, 66, 64), 2, 2, "Relu"),
    "s2_odd_rows": ((1, 3, 15, 16), 1, 2, "Clip"),
    "s2_odd_cols": ((1, 3, 16, 13), 1, 2, None),
    "s2_direct_odd_rows": ((1, 3, 33, 40), 1, 2, "Clip"),
    "blocked_s1_remainder_leakyrelu": ((1, 20, 14, 14), 1, 1, "LeakyRelu"),
    "blocked_s1_across_batch_clip": ((2, 9, 6, 7), 1, 1, "Clip"),
    "blocked_s2_relu": ((1, 17, 28, 28), 1, 2, "Relu"),
}


def _model(path: Path, shape: tuple[int, int, int, int], mult: int, stride: int, act: str | None) -> None:
    c = shape[1]
    rng = np.random.default_rng(sum(shape) + mult)
    inits = [numpy_helper.from_array(rng.standard_normal((c * mult, 1, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(c * mult).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if act else "y"], group=c, pads=[1, 1, 1, 1],
                              strides=[stride, stride])]
    if act == "Clip":
        inits += [numpy_helper.from_array(np.float32(-0.5), "lo"), numpy_helper.from_array(np.float32(1.5), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif act == "LeakyRelu":
        nodes.append(helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1))
    elif act:
        nodes.append(helper.make_node(act, ["c"], ["y"]))
    graph = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_depthwise_fast_path_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    shape, mult, stride, act = CASES[case]
    path = tmp_path / "dw.onnx"
    _model(path, shape, mult, stride, act)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ref = onnxruntime_outputs(path, {"x": x})["y"]
    bundle = ember.compile(path, tmp_path / "out")
    assert [n["op"] for n in bundle.manifest["nodes"]] == [f"Conv+{act}" if act else "Conv"]
    assert_close(bundle.run({"x": x})["y"], ref, case)
    assert_close(cdriver.run(bundle.path, tmp_path / "drv", {"x": x}, sanitize=True)["y"], ref, f"{case} (ASan)")


@pytest.mark.parametrize(("stride", "shape"), [(1, (1, 4, 16, 18)), (1, (1, 16, 8, 9)), (2, (1, 4, 16, 18)),
                                            (2, (1, 4, 16, 36)), (2, (1, 16, 8, 9))])
def test_non_finite_inputs_stay_inside_their_windows(stride: int, shape: tuple[int, int, int, int],
                                                     tmp_path: Path) -> None:
    path = tmp_path / "dw.onnx"
    _model(path, shape, 1, stride, None)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    h = shape[2] // 2
    x[0, 1, h - 1, -1] = np.inf  # its row's last column: the next row's first output must not see it
    x[0, 2, h, 0] = -np.inf  # first column: the previous row's last output
    x[0, 3, 0, 5] = np.nan  # top row: the previous channel's bottom outputs
    x[0, 0, -1, 3] = np.nan  # bottom row: the next channel's top outputs
    ref = onnxruntime_outputs(path, {"x": x})["y"]
    bundle = ember.compile(path, tmp_path / "out")
    for got, what in ((bundle.run({"x": x})["y"], "bundle"),
                      (cdriver.run(bundle.path, tmp_path / "drv", {"x": x}, sanitize=True)["y"], "ASan")):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg=f"{what}: NaN positions")
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref), err_msg=f"{what}: Inf positions")
        finite = np.isfinite(ref)
        assert finite.sum() > 0.9 * ref.size
        assert_close(got[finite], ref[finite], what)
