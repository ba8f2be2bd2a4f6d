"""Requantisation ties: power-of-two scales put many integer results exactly on .5 after scaling, where
rounding half to even (ONNX's rule) and any other rounding differ. Random scales almost never make a
tie, so these cases are the ones that hold every requantising path to the rule, bit for bit against
ONNX's reference: the AVX-512 paths of this machine (VNNI tiles of im2col and shifted convolutions,
channel-blocked layers, the depthwise kernel, QAdd's vector code) and the portable ones of the SSE2
baseline (64-bit scalar requantisation, its 64-wide runs, QAdd's 32-bit loop), plus QMul, QAvgPool and
QMean. Each case also checks that ties are frequent in it, so that it cannot pass by missing them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.reference import onnxruntime_session
from tests.ops.test_quant_kernels import _f32, _model

RNG = np.random.default_rng(2024)
CPUS = [None, "x86-64"]  # native (AVX-512 VNNI/VBMI here), SSE2: the portable code
# and AVX2, whose product tiles of 16 pixels requantise in the portable 64-wide runs (ember_qrun)
CONV_CPUS = [*CPUS, "haswell"]
CONV_IDS = ["native", "x86-64", "haswell"]
MIN_TIES = 0.05  # of the outputs, at least, in every case


def _near(zero: int, shape: tuple[int, ...], dtype: type, spread: int = 4) -> np.ndarray:
    """Values within `spread` of the zero point: sums stay small enough not to saturate at scale 1/2."""
    return np.clip(RNG.integers(zero - spread, zero + spread + 1, shape), *_range(dtype)).astype(dtype)


def _range(dtype: type) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _tie_share(exact: np.ndarray) -> float:
    """The share of values exactly half-way between two integers."""
    exact = np.asarray(exact, np.float64)
    return float(np.mean(np.abs(exact - np.floor(exact)) == 0.5))


def _run(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str | None,
         runtime: bool = False) -> tuple:
    """ember's y, the reference's (onnxruntime's if `runtime`, else ONNX's evaluator) and ember's ops."""
    folder = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    bundle = ember.compile(folder / "m.onnx", folder / "out", **({"cpu": cpu} if cpu else {}))
    ops = [n["op"] for n in bundle.manifest["nodes"]]
    if runtime:
        ref = onnxruntime_session(model.SerializeToString()).run(None, feeds)[0]
    else:
        ref = ReferenceEvaluator(model).run(None, feeds)[0]
    return bundle.run(feeds)["y"], ref, ops


# name: (x dtype, x shape, w shape, attrs, the op ember lowers it to). Weight scales are 1/2 .. 1/8 per
# channel, x and y scales 1/4: multipliers 2^-1 .. 2^-3. The reference is onnxruntime: ONNX's evaluator
# adds y's zero point before it rounds, which moves ties of odd zero points (QuantizeLinear, and
# onnxruntime, add it after).
CONVS = {
    "shifted_3x3": (np.uint8, (1, 8, 10, 30), (8, 8, 3, 3), {"pads": [1, 1, 1, 1]}, "QConvShifted"),
    "shifted_rgb_stem_s2": (np.uint8, (1, 3, 15, 40), (8, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                            "QConvShifted"),
    "im2col_3x3_s2": (np.int8, (1, 8, 17, 19), (12, 8, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "QConv"),
    "pointwise_gemv_tail": (np.int8, (1, 32, 7, 7), (9, 32, 1, 1), {}, "QConv"),
    "depthwise_3x3": (np.int8, (1, 20, 13, 21), (20, 1, 3, 3), {"group": 20, "pads": [1, 1, 1, 1]}, "QConv"),
    "depthwise_u8_s2": (np.uint8, (1, 9, 14, 17), (9, 1, 3, 3), {"group": 9, "strides": [2, 2]}, "QConv"),
}


@pytest.mark.parametrize("cpu", CONV_CPUS, ids=CONV_IDS)
@pytest.mark.parametrize("case", list(CONVS))
def test_qlinearconv_ties(tmp_path: Path, case: str, cpu: str | None) -> None:
    xdt, xshape, wshape, attrs, op = CONVS[case]
    m = wshape[0]
    xz = 3 if xdt is np.int8 else 131
    consts = {"xs": _f32(0.25), "xz": np.array(xz, xdt), "w": RNG.integers(-3, 4, wshape).astype(np.int8),
              "ws": (0.5 ** RNG.integers(1, 4, m)).astype(np.float32), "wz": np.zeros(m, np.int8),
              "ys": _f32(0.25), "yz": np.array(-5 if xdt is np.int8 else 121, xdt),
              "b": RNG.integers(-20, 21, m).astype(np.int32)}
    feeds = {"x": _near(xz, xshape, xdt)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], **attrs)
    got, ref, ops = _run(tmp_path, _model([node], feeds, consts, ("y",), 21), feeds, cpu, runtime=True)
    assert op in ops, ops
    # the exact scaled sums, from ONNX's integer convolution
    sums = ReferenceEvaluator(_model([helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], **attrs)], feeds,
                                     {k: consts[k] for k in ("w", "xz")}, ("y",), 13)).run(None, feeds)[0]
    exact = (sums + consts["b"].reshape(1, m, 1, 1)) * consts["ws"].astype(np.float64).reshape(1, m, 1, 1)
    assert _tie_share(exact) >= MIN_TIES
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("cpu", CONV_CPUS, ids=CONV_IDS)
@pytest.mark.parametrize("rows", [70, 1])
def test_qlinearmatmul_ties(tmp_path: Path, rows: int, cpu: str | None) -> None:
    """Constant B: rows in tiles, or one row as a matrix-vector product (on AVX2: 27 columns, three groups of
    eight in registers and three single ones; K 40: one step of 32 and 8 left over)."""
    a = _near(-2, (rows, 40), np.int8)
    consts = {"as": _f32(0.5), "az": np.array(-2, np.int8), "b": RNG.integers(-3, 4, (40, 27)).astype(np.int8),
              "bs": _f32(0.25), "bz": np.array(0, np.int8), "ys": _f32(0.5), "yz": np.array(4, np.int8)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    got, ref, _ = _run(tmp_path, _model([node], {"a": a}, consts, ("y",), 21), {"a": a}, cpu, runtime=True)
    exact = (a.astype(np.int64) + 2) @ consts["b"].astype(np.int64) * 0.25
    assert _tie_share(exact) >= MIN_TIES
    np.testing.assert_array_equal(got, ref)


def _qdq(dtype: type, nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], scales: dict[str, float],
         zeros: dict[str, int], inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """DequantizeLinear of each feed -> `nodes` (reading '<name>_f', writing 'r') -> QuantizeLinear to y."""
    inits = dict(inits or {})
    dq = [helper.make_node("DequantizeLinear", [n, f"{n}_s", f"{n}_z"], [f"{n}_f"]) for n in feeds]
    for n in [*feeds, "y"]:
        inits[f"{n}_s"] = _f32(scales[n])
        inits[f"{n}_z"] = np.array(zeros[n], dtype)
    q = helper.make_node("QuantizeLinear", ["r", "y_s", "y_z"], ["y"])
    return _model([*dq, *nodes, q], feeds, inits, ("y",), 21)


def _real(x: np.ndarray, scale: float, zero: int) -> np.ndarray:
    return (x.astype(np.float64) - zero) * scale


# name: (op, a shape, b shape, (a, b, y) scales, (a, b) spreads): the rescaled sum or product lands on
# halves. "add_wide": b's multiplier 0.3 has 24 significant bits (AVX-512's split products), ties where
# b is at its zero point; "add_64bit": a's multiplier 2^13 leaves QAdd's int32 pieces (64-bit code),
# a at its zero point.
POINTWISE = {
    "add_narrow": ("Add", (1, 4, 9, 30), (1, 4, 9, 30), (0.5, 0.25, 1.0), (40, 40)),  # AVX-512: one product
    "add_wide": ("Add", (1, 4, 9, 30), (1, 4, 9, 30), (0.5, 0.3, 1.0), (40, 1)),
    "add_channel": ("Add", (1, 4, 9, 30), (1, 4, 1, 1), (0.5, 0.5, 1.0), (40, 40)),
    "add_64bit": ("Add", (1, 2, 9, 11), (1, 2, 9, 11), (64.0, 2.0 ** -8, 2.0 ** -7), (0, 40)),
    "sub_one_value": ("Sub", (2, 3, 5, 23), (1,), (0.25, 0.5, 0.5), (40, 40)),
    "mul": ("Mul", (1, 3, 8, 21), (1, 3, 8, 21), (0.5, 0.5, 0.5), (3, 3)),
}


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("case", list(POINTWISE))
def test_qdq_pointwise_ties(tmp_path: Path, case: str, dtype: type, cpu: str | None) -> None:
    op, ashape, bshape, (sa, sb, sy), (spread_a, spread_b) = POINTWISE[case]
    lo, hi = _range(dtype)
    z = {"a": 0 if dtype is np.int8 else 128, "b": 3 if dtype is np.int8 else 125, "y": -2 if dtype is np.int8 else 130}
    feeds = {"a": _near(z["a"], ashape, dtype, spread_a), "b": _near(z["b"], bshape, dtype, spread_b)}
    model = _qdq(dtype, [helper.make_node(op, ["a_f", "b_f"], ["r"])], feeds, {"a": sa, "b": sb, "y": sy}, z)
    got, ref, ops = _run(tmp_path, model, feeds, cpu)
    assert f"Q{op if op != 'Sub' else 'Add'}" in ops, ops
    ra, rb = _real(feeds["a"], sa, z["a"]), _real(feeds["b"], sb, z["b"])
    exact = {"Add": ra + rb, "Sub": ra - rb, "Mul": ra * rb}[op] / sy
    assert _tie_share(exact) >= MIN_TIES
    assert lo < got.min() or got.max() < hi  # not all saturated
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("cpu", CPUS, ids=["native", "x86-64"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
def test_qdq_pooling_ties(tmp_path: Path, dtype: type, cpu: str | None) -> None:
    """AveragePool over 2x2 and 4 taps (divisors 4, 2 and 1 at the padded edges) and GlobalAveragePool
    over 16 pixels: the mean's quarters and halves."""
    z = {"x": 1 if dtype is np.int8 else 127, "y": -1 if dtype is np.int8 else 129}
    pools = {  # node, x's spread, y's scale (x's: 1/2)
        "avg": (helper.make_node("AveragePool", ["x_f"], ["r"], kernel_shape=[2, 2], strides=[2, 2],
                                 pads=[1, 1, 1, 1]), 20, 0.5),
        "global": (helper.make_node("GlobalAveragePool", ["x_f"], ["r"]), 2, 1.0 / 32)}
    for kind, (node, spread, ys) in pools.items():
        feeds = {"x": _near(z["x"], (1, 32, 4, 8), dtype, spread)}
        model = _qdq(dtype, [node], feeds, {"x": 0.5, "y": ys}, z)
        got, ref, ops = _run(tmp_path, model, feeds, cpu)
        assert ("QAvgPool" if kind == "avg" else "QMean") in ops, ops
        real = {"x_f": (_real(feeds["x"], 0.5, z["x"]) / ys).astype(np.float32)}  # in y's units: exact
        assert _tie_share(ReferenceEvaluator(_model([node], real, {}, ("r",), 21)).run(None, real)[0]) >= MIN_TIES
        np.testing.assert_array_equal(got, ref, err_msg=kind)


def chain_model() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """QDQ convolutions (a 1x1, a depthwise 3x3, a 3x3, a 1x1) and a residual Add, all at power-of-two
    scales (multipliers 2^-1 .. 2^-3), on a 9x70 uint8 map, and its input."""
    z = 128
    feeds = {"x": _near(z, (1, 8, 9, 70), np.uint8, 3)}
    inits: dict[str, np.ndarray] = {"s": _f32(0.25), "zp": np.array(z, np.uint8)}
    nodes = []
    src = "x_f"
    for i, (k, group) in enumerate([(1, 1), (3, 8), (3, 1), (1, 1)]):
        inits[f"w{i}"] = RNG.integers(-3, 4, (8, 8 // group, k, k)).astype(np.int8)
        inits[f"ws{i}"] = (0.5 ** RNG.integers(1, 4, 8)).astype(np.float32)
        inits[f"wz{i}"] = np.zeros(8, np.int8)
        inits[f"b{i}"] = RNG.integers(-10, 11, 8).astype(np.int32)
        inits[f"bs{i}"] = (0.25 * inits[f"ws{i}"]).astype(np.float32)
        inits[f"bz{i}"] = np.zeros(8, np.int32)
        nodes += [helper.make_node("DequantizeLinear", [f"w{i}", f"ws{i}", f"wz{i}"], [f"wf{i}"], axis=0),
                  helper.make_node("DequantizeLinear", [f"b{i}", f"bs{i}", f"bz{i}"], [f"bf{i}"], axis=0),
                  helper.make_node("Conv", [src, f"wf{i}", f"bf{i}"], [f"c{i}"], group=group, pads=[k // 2] * 4),
                  helper.make_node("QuantizeLinear", [f"c{i}", "s", "zp"], [f"q{i}"]),
                  helper.make_node("DequantizeLinear", [f"q{i}", "s", "zp"], [f"d{i}"])]
        src = f"d{i}"
    nodes.append(helper.make_node("Add", ["d3", "d0"], ["r"]))
    return _qdq(np.uint8, nodes, feeds, {"x": 0.25, "y": 0.5}, {"x": z, "y": z}, inits), feeds


@pytest.mark.parametrize("cpu", CONV_CPUS, ids=CONV_IDS)
def test_qdq_chain_ties(tmp_path: Path, cpu: str | None) -> None:
    """The chain's values between convolutions channel-blocked (natively), its 3x3 shifted."""
    model, feeds = chain_model()
    got, ref, ops = _run(tmp_path, model, feeds, cpu)
    assert {"QConv", "QConvShifted", "QAdd"} <= set(ops), ops
    np.testing.assert_array_equal(got, ref)
