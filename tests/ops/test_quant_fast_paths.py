"""The integer kernels' fast paths against ONNX's reference, bit-exact, on this machine's CPU and on the
SSE2 baseline (which takes the portable code of the same kernels): the channel-blocked depthwise
(qdwvnni.c: channel blocks, bands of rows, multipliers, dilation, 5-wide kernels, uint8), the row-wise
im2col packers (qpack.c: channels in fours or not, strides, dilation, 1x1 stride 2, uint8 weights whose
offsets need column sums), requantisation in registers (qvec.c), 2-D QMaxPool and QAdd with a folded Relu."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from tests.ops.test_quant_kernels import _f32, _model, _q

RNG = np.random.default_rng(11)
CPUS = [None, "x86-64"]  # native (AVX-512 VNNI/VBMI here), SSE2


def _run(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str | None) -> tuple:
    folder = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    bundle = ember.compile(folder / "m.onnx", folder / "out", **({"cpu": cpu} if cpu else {}))
    return bundle, bundle.run(feeds)["y"], ReferenceEvaluator(model).run(None, feeds)[0]


CONVS = {
    # name: (x dtype, x shape, w dtype, w shape, attrs, weight zero points)
    "dw_two_blocks_bands": (np.int8, (1, 20, 40, 37), np.int8, (20, 1, 3, 3), {"group": 20, "pads": [1, 1, 1, 1]},
                            False),
    "dw_u8_multiplier_stride": (np.uint8, (1, 9, 17, 19), np.int8, (18, 1, 3, 3),
                                {"group": 9, "strides": [2, 2], "pads": [0, 1, 2, 1]}, False),
    # multiplier 2 on the per-channel paths (qdwconv.c): each input channel's planes filled once for both of
    # its outputs; 23x23 taps make the sums too big for float (the int32 path), 3x3 ones take float
    "dw_multiplier_int32_sums": (np.int8, (1, 2, 24, 24), np.int8, (4, 1, 23, 23),
                                 {"group": 2, "strides": [2, 2], "pads": [11, 11, 11, 11]}, False),
    "dw_multiplier_float_sums": (np.int8, (1, 5, 11, 11), np.int8, (10, 1, 3, 3),
                                 {"group": 5, "strides": [2, 2], "pads": [1, 1, 1, 1]}, False),
    "dw_5x5_row_dilation": (np.int8, (1, 16, 21, 20), np.int8, (16, 1, 5, 5),
                            {"group": 16, "strides": [2, 1], "dilations": [2, 1], "pads": [4, 2, 3, 2]}, False),
    "rows_c3_7x7_stride2": (np.int8, (1, 3, 30, 33), np.int8, (8, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]},
                            False),
    "rows_c3_u8_offsets": (np.uint8, (1, 3, 23, 20), np.uint8, (6, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                           True),
    "rows_c8_1x1_stride2": (np.int8, (1, 8, 20, 21), np.int8, (12, 8, 1, 1), {"strides": [2, 2]}, False),
    "rows_c8_3x3_dilated_stride2": (np.uint8, (1, 8, 19, 26), np.int8, (20, 8, 3, 3),
                                    {"strides": [2, 2], "dilations": [2, 2], "pads": [2, 1, 2, 1]}, False),
    # qgemm.c: 49 pixels = 3 vectors and 1 pixel as a matrix-vector product (rows in fours and one more)
    "gemv_tail_7x7": (np.int8, (1, 32, 7, 7), np.int8, (21, 32, 3, 3), {"pads": [1, 1, 1, 1]}, False),
    "gemv_tail_7x7_offsets": (np.uint8, (1, 32, 7, 7), np.uint8, (8, 32, 3, 3), {"pads": [1, 1, 1, 1]}, True),
    # 196 pixels: three full blocks and 4 pixels as matrix-vector products; 42 and 25 pixels: 3 and 2 vectors
    "gemv_tail_14x14_1x1": (np.uint8, (1, 512, 14, 14), np.int8, (12, 512, 1, 1), {}, False),
    "tiles_3_vectors": (np.int8, (1, 8, 6, 7), np.int8, (8, 8, 3, 3), {"pads": [1, 1, 1, 1]}, False),
    "tiles_2_vectors": (np.uint8, (1, 12, 5, 5), np.int8, (9, 12, 3, 3), {"pads": [1, 1, 1, 1]}, True),
}


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("case", list(CONVS))
def test_conv_fast_paths(tmp_path: Path, case: str, cpu: str | None) -> None:
    xdt, xs, wdt, ws, attrs, wzp = CONVS[case]
    m = ws[0]
    consts = {"xs": _f32(0.02), "xz": np.array(3 if xdt is np.int8 else 131, xdt), "w": _q(ws, wdt),
              "ws": RNG.uniform(0.002, 0.01, m).astype(np.float32),
              "wz": _q((m,), wdt) if wzp else np.zeros(m, wdt),
              "ys": _f32(0.09), "yz": np.array(-7 if xdt is np.int8 else 120, xdt),
              "b": RNG.integers(-3000, 3000, m).astype(np.int32)}
    x = _q(xs, xdt)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], **attrs)
    _, got, ref = _run(tmp_path, _model([node], {"x": x}, consts, ("y",), 21), {"x": x}, cpu)
    np.testing.assert_array_equal(got, ref)


def _qdq(dtype: type, nodes: list, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray]) -> onnx.ModelProto:
    """DequantizeLinear of each int input -> `nodes` (reading '<name>_f') -> QuantizeLinear into y."""
    dq = [helper.make_node("DequantizeLinear", [n, f"{n}_s", f"{n}_z"], [f"{n}_f"]) for n in feeds]
    q = helper.make_node("QuantizeLinear", ["r", "y_s", "y_z"], ["y"])
    for n in [*feeds, "y"]:
        inits[f"{n}_s"] = _f32(float(RNG.uniform(0.01, 0.05)))
        inits[f"{n}_z"] = np.array(RNG.integers(-20, 20) if dtype is np.int8 else RNG.integers(100, 150), dtype)
    return _model([*dq, *nodes, q], feeds, inits, ("y",), 21)


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_maxpool_on_bytes(tmp_path: Path, dtype: type, cpu: str | None) -> None:
    x = _q((2, 5, 23, 20), dtype)
    pool = helper.make_node("MaxPool", ["x_f"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                            ceil_mode=1)
    model = _qdq(dtype, [pool, helper.make_node("Identity", ["p"], ["r"])], {"x": x}, {})
    # the output keeps the input's scale and zero point: max pooling of the bytes
    for k in ("s", "z"):
        model.graph.initializer.remove(next(i for i in model.graph.initializer if i.name == f"y_{k}"))
        model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(
            next(i for i in model.graph.initializer if i.name == f"x_{k}")), f"y_{k}"))
    bundle, got, ref = _run(tmp_path, model, {"x": x}, cpu)
    assert "QMaxPool" in [n["op"] for n in bundle.manifest["nodes"]]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_add_relu_folds_into_one_qadd(tmp_path: Path, dtype: type, cpu: str | None) -> None:
    """Add -> Relu -> QuantizeLinear (ember's quantizer leaves no QDQ between them, as onnxruntime's does)
    becomes one QAdd clamping at the zero point: within one step of ONNX's float reference."""
    a, b = _q((1, 3, 7, 11), dtype), _q((1, 3, 7, 11), dtype)
    nodes = [helper.make_node("Add", ["a_f", "b_f"], ["s"]), helper.make_node("Relu", ["s"], ["r"])]
    bundle, got, ref = _run(tmp_path, _qdq(dtype, nodes, {"a": a, "b": b}, {}), {"a": a, "b": b}, cpu)
    ops = [n["op"] for n in bundle.manifest["nodes"]]
    assert "QAdd" in ops and "Relu" not in ops and "QLut" not in ops, ops
    assert np.abs(got.astype(np.int32) - ref.astype(np.int32)).max() <= 1
