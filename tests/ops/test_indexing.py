"""The indexing family (ember/ops/indexing.py, reorder.py, CumProd) beyond the ONNX node tests: element
types, attributes and old opset forms the node tests leave out, against onnxruntime (or ONNX's reference
evaluator where onnxruntime has no kernel); and run-time indices out of range, which must neither read nor
write outside a tensor (checked under ASan/UBSan in the C driver) and give what ember documents: gathers
clamp, scatters skip, OneHot leaves the row off, ReverseSequence clamps each length."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.reference import onnxruntime_session
from tests.support import cdriver

RNG = np.random.default_rng(7)
I64 = np.iinfo(np.int64)


def _model(op: str, inputs: list[tuple[str, np.ndarray, bool]], outputs: list[tuple[str, type]], opset: int,
           **attrs: object) -> onnx.ModelProto:
    """One `op` node; inputs are (name, value, compile-time constant); outputs (name, numpy dtype)."""
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _ in outputs], **attrs)
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [node], "g",
        [vi(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a, const in inputs if not const],
        [vi(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None) for n, t in outputs],
        [numpy_helper.from_array(a, n) for n, a, const in inputs if const])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _feeds(inputs: list[tuple[str, np.ndarray, bool]]) -> dict[str, np.ndarray]:
    return {n: a for n, a, const in inputs if not const}


def _ember(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    folder = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    onnx.save(model, folder / "m.onnx")
    got = ember.compile(folder / "m.onnx", folder / "out").run(feeds)
    return [got[o.name] for o in model.graph.output]


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray], runtime: bool) -> list[np.ndarray]:
    """onnxruntime's outputs, or the ONNX reference evaluator's where onnxruntime has no kernel for the case
    (e.g. ScatterElements' add on float16) or `runtime` is off."""
    if runtime:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        try:
            sess = onnxruntime_session(model.SerializeToString(), opts)
            return sess.run(None, feeds)
        except (ort.capi.onnxruntime_pybind11_state.NotImplemented,
                ort.capi.onnxruntime_pybind11_state.RuntimeException) as e:
            if "not supported" not in str(e) and "NOT_IMPLEMENTED" not in str(e):
                raise
    return list(ReferenceEvaluator(model).run(None, feeds))


def _check(tmp_path: Path, op: str, inputs: list[tuple[str, np.ndarray, bool]], outputs: list[tuple[str, type]],
           opset: int, runtime: bool = True, **attrs: object) -> list[np.ndarray]:
    model = _model(op, inputs, outputs, opset, **attrs)
    feeds = _feeds(inputs)
    got, ref = _ember(tmp_path, model, feeds), _reference(model, feeds, runtime)
    for g, r, (name, _) in zip(got, ref, outputs, strict=True):
        r = np.asarray(r)
        assert g.dtype == r.dtype and g.shape == r.shape, f"{op} {name}: {g.dtype}{g.shape} != {r.dtype}{r.shape}"
        if r.dtype.kind == "f":
            np.testing.assert_allclose(g, r, rtol=1e-6, atol=0, equal_nan=True, err_msg=f"{op} {name}")
        else:
            np.testing.assert_array_equal(g, r, err_msg=f"{op} {name}")
    return got


def _rand(shape: tuple[int, ...], dtype: type, lo: int = -20, hi: int = 20) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind == "u":
        lo = max(lo, 0)
    return RNG.integers(lo, hi, shape).astype(dt) if dt.kind in "iu" else (RNG.standard_normal(shape) * 4).astype(dt)


# Gathers -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int64, np.bool_])
def test_gather_elements_types_and_smaller_indices(tmp_path: Path, dtype: type) -> None:
    # Indices smaller than data off the axis, negative ones, int32 indices on axis 1 of a 3-D tensor.
    data = _rand((3, 5, 4), dtype)
    ix = RNG.integers(-5, 5, (2, 7, 3)).astype(np.int32)
    _check(tmp_path, "GatherElements", [("d", data, False), ("i", ix, False)], [("y", dtype)], 13, axis=1)


def test_gather_elements_constant_folds_where_the_reference_cannot(tmp_path: Path) -> None:
    # transformers' BERT export gathers [1,128] position ids from a constant [1,512] buffer: ONNX's reference
    # implementation fails on it ("cannot reshape"), so folding must fall back to ember's own evaluation.
    data = np.arange(512, dtype=np.int64).reshape(1, 512) * 3
    ix = np.arange(128, dtype=np.int64).reshape(1, 128)[:, ::-1].copy()
    got = _check(tmp_path, "GatherElements", [("d", data, True), ("i", ix, True)], [("y", np.int64)], 13,
                 runtime=True, axis=1)
    np.testing.assert_array_equal(got[0], np.take_along_axis(data, ix, axis=1))


def test_gather_nd_batch_dims_2(tmp_path: Path) -> None:
    data = _rand((2, 3, 4, 5, 2), np.float64)
    ix = np.stack([RNG.integers(-4, 4, (2, 3, 6)), RNG.integers(-5, 5, (2, 3, 6))], -1).astype(np.int64)
    _check(tmp_path, "GatherND", [("d", data, False), ("i", ix, False)], [("y", np.float64)], 13, batch_dims=2)


def test_gather_nd_whole_coordinates(tmp_path: Path) -> None:
    data = _rand((4, 3), np.int16)
    ix = np.array([[[0, 2], [-1, -3]], [[3, 1], [2, 0]]], np.int64)
    _check(tmp_path, "GatherND", [("d", data, False), ("i", ix, False)], [("y", np.int16)], 13)


# Scatters ----------------------------------------------------------------------------------------
SCATTER_TYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                 np.uint32, np.uint64, np.bool_]


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", SCATTER_TYPES, ids=lambda t: np.dtype(t).name)
def test_scatter_elements_every_type_and_reduction(tmp_path: Path, dtype: type, reduction: str) -> None:
    # Duplicate indices accumulate in order; int8 sums and products overflow and must wrap.
    lo, hi = (-100, 100) if dtype is np.int8 and reduction != "none" else (-20, 20)
    data = _rand((3, 4), dtype, lo, hi)
    ix = np.array([[1, -1, 1], [0, 0, 0]], np.int64) if reduction == "none" else RNG.integers(-4, 4, (3, 3))
    upd = _rand(ix.shape, dtype, lo, hi)
    _check(tmp_path, "ScatterElements", [("d", data, False), ("i", ix.astype(np.int64), False), ("u", upd, False)],
           [("y", dtype)], 18, axis=1, reduction=reduction)


@pytest.mark.parametrize(("reduction", "dtype"), [("none", np.float32), ("add", np.float32), ("mul", np.int32),
                                                  ("max", np.float64), ("min", np.int64), ("add", np.float16)])
def test_scatter_nd_slices(tmp_path: Path, reduction: str, dtype: type) -> None:
    data = _rand((4, 3, 2), dtype)
    ix = np.array([[1, 2], [-1, 0], [1, -1], [3, 0]], np.int64)  # [1, 2] twice: duplicates reduce in order
    upd = _rand((4, 2), dtype)
    _check(tmp_path, "ScatterND", [("d", data, False), ("i", ix, False), ("u", upd, False)], [("y", dtype)], 18,
           reduction=reduction)


def test_scatter_opset9_is_scatter_elements(tmp_path: Path) -> None:
    data = np.zeros((3, 5), np.float32)
    ix = np.array([[1, 3], [0, 4], [2, 2]], np.int32)
    upd = RNG.standard_normal((3, 2)).astype(np.float32)
    _check(tmp_path, "Scatter", [("d", data, False), ("i", ix, False), ("u", upd, False)], [("y", np.float32)], 9,
           axis=1)


# OneHot ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("idx_type", "axis"), [(np.float32, -1), (np.float16, 0), (np.uint8, 1), (np.int8, -2),
                                                (np.uint64, 1), (np.float64, 2), (np.int16, 0)])
def test_onehot_index_types(tmp_path: Path, idx_type: type, axis: int) -> None:
    # Fractions truncate toward zero (as onnxruntime casts them); negatives count from the end; the rest
    # (5, -6.5, 200, 2**64 - 1) are all off.
    kind = np.dtype(idx_type).kind
    raw = [[0, 2.7, -1, -3.5], [5, 4.99, -6.5, 1]] if kind == "f" else [[0, 2, 200, 3], [5, 4, 255, 1]]
    ix = np.array(raw, np.float64 if kind == "f" else np.uint64).astype(idx_type)
    if idx_type is np.uint64:
        ix[1, 2] = np.iinfo(np.uint64).max
    if kind == "i":
        ix[0, 2], ix[1, 2] = -1, -6
    inputs = [("i", ix, False), ("d", np.array(5, np.int64), True), ("v", np.array([2, 7], np.int32), True)]
    (y,) = _ember(tmp_path, _model("OneHot", inputs, [("y", np.int32)], 11, axis=axis), _feeds(inputs))
    v = np.trunc(ix.astype(np.float64))
    v = np.where(v < 0, v + 5, v)
    want = np.where(np.arange(5) == v[..., None], 7, 2).astype(np.int32)
    np.testing.assert_array_equal(y, np.moveaxis(want, -1, axis))


def test_onehot_float_indices_are_truncated_as_the_spec_says(tmp_path: Path) -> None:
    # The spec casts float indices to int64 (2.7 -> 2, -5.5 -> -5), as onnxruntime 1.32 does; onnxruntime 1.30
    # and onnx's reference evaluator turn fractional ones off instead. NaN and out-of-range ones are off.
    ix = np.array([0, 2.7, -1, -3.5, 4.99, -5.5, 5, -6.01, np.nan], np.float32)
    inputs = [("i", ix, False), ("d", np.array(5, np.float32), True), ("v", np.array([0.5, 3], np.float32), True)]
    (y,) = _ember(tmp_path, _model("OneHot", inputs, [("y", np.float32)], 11), _feeds(inputs))
    want = np.full((9, 5), 0.5, np.float32)
    for row, hot in enumerate([0, 2, 4, 2, 4, 0, None, None, None]):
        if hot is not None:
            want[row, hot] = 3
    np.testing.assert_array_equal(y, want)


def test_onehot_opset9_negative_indices_are_off(tmp_path: Path) -> None:
    ix = np.array([0, -1, 2, 3], np.int64)
    inputs = [("i", ix, False), ("d", np.array([3.0], np.float32), True), ("v", np.array([0, 1], np.uint8), True)]
    (y,) = _ember(tmp_path, _model("OneHot", inputs, [("y", np.uint8)], 9), _feeds(inputs))
    np.testing.assert_array_equal(y, [[1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]])


# TopK / Hardmax ----------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64])
def test_topk_ties_match_onnxruntime(tmp_path: Path, dtype: type, largest: int) -> None:
    # Few distinct values, so most of the k chosen tie with others: the lower index must come first.
    x = RNG.integers(0, 4, (3, 17, 2)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[0, [3, 9], 0] = np.nan  # NaN ranks above every number (onnxruntime)
        x[1, 5, 1] = np.inf
    _check(tmp_path, "TopK", [("x", x, False), ("k", np.array([6], np.int64), True)],
           [("v", dtype), ("i", np.int64)], 11, axis=1, largest=largest)


def test_topk_opset1_k_attribute_and_all_of_axis0(tmp_path: Path) -> None:
    x = RNG.integers(-3, 3, (5, 4)).astype(np.float32)
    _check(tmp_path, "TopK", [("x", x, False)], [("v", np.float32), ("i", np.int64)], 1, axis=0, k=5)


@pytest.mark.parametrize("kept", [0, 1])
def test_topk_half_with_one_output_unused(tmp_path: Path, kept: int) -> None:
    # Nobody reads Indices: ember ranks in scratch memory; or nobody reads Values: no values are written.
    x = RNG.standard_normal((4, 9)).astype(np.float16)
    model = _model("TopK", [("x", x, False), ("k", np.array([3], np.int64), True)],
                   [("v", np.float16), ("i", np.int64)], 11)
    model.graph.output.pop(1 - kept)
    (got,) = _ember(tmp_path, model, {"x": x})
    order = np.argsort(-x, axis=1, kind="stable")[:, :3]
    np.testing.assert_array_equal(got, np.take_along_axis(x, order, 1) if kept == 0 else order)


# onnxruntime's Hardmax-11 is float32 only (the reference evaluator does not coerce to 2-D).
@pytest.mark.parametrize(("opset", "axis", "dtype"), [(11, 1, np.float32), (11, 0, np.float32), (11, -1, np.float32),
                                                      (13, 1, np.float16), (13, -3, np.float32), (13, 0, np.float64)])
def test_hardmax_axes_and_old_coerced_form(tmp_path: Path, opset: int, axis: int, dtype: type) -> None:
    x = RNG.integers(0, 3, (2, 3, 4)).astype(dtype)  # ties: the first maximum wins
    _check(tmp_path, "Hardmax", [("x", x, False)], [("y", dtype)], opset, axis=axis)


# Rearrangements and generators -------------------------------------------------------------------
@pytest.mark.parametrize(("batch_axis", "time_axis"), [(0, 1), (1, 0)])
def test_reverse_sequence(tmp_path: Path, batch_axis: int, time_axis: int) -> None:
    x = _rand((4, 5, 3) if batch_axis == 0 else (5, 4, 3), np.int16)
    lens = np.array([5, 0, 3, 1], np.int64)
    _check(tmp_path, "ReverseSequence", [("x", x, False), ("l", lens, False)], [("y", np.int16)], 10,
           batch_axis=batch_axis, time_axis=time_axis)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_block_rearrangements(tmp_path: Path, op: str, mode: str) -> None:
    x = _rand((2, 12, 4, 6), np.int8)
    _check(tmp_path, op, [("x", x, False)], [("y", np.int8)], 28 if op == "SpaceToDepth" else 13, runtime=False,
           blocksize=2, mode=mode)


@pytest.mark.parametrize(("dtype", "exclusive", "reverse"), [(np.float16, 0, 0), (np.int64, 1, 1),
                                                             (np.uint32, 0, 1), (np.float64, 1, 0)])
def test_cumprod_types(tmp_path: Path, dtype: type, exclusive: int, reverse: int) -> None:
    # int64 products overflow (they wrap); half precision rounds every partial product.
    x = (RNG.integers(1, 40, (3, 16, 2)) * RNG.choice([-1, 1], (3, 16, 2))).astype(dtype) if dtype is np.int64 \
        else (RNG.uniform(0.5, 1.7, (3, 16, 2)).astype(dtype) if np.dtype(dtype).kind == "f"
              else RNG.integers(1, 9, (3, 16, 2)).astype(dtype))
    _check(tmp_path, "CumProd", [("x", x, False), ("a", np.array(1, np.int64), True)], [("y", dtype)], 26,
           runtime=False, exclusive=exclusive, reverse=reverse)


@pytest.mark.parametrize(("k", "dtype"), [(2, onnx.TensorProto.INT32), (-1, onnx.TensorProto.BOOL),
                                          (9, onnx.TensorProto.FLOAT16), (0, None)])
def test_eyelike(tmp_path: Path, k: int, dtype: int | None) -> None:
    x = np.zeros((4, 6), np.float64)
    out = helper.tensor_dtype_to_np_dtype(dtype) if dtype is not None else np.float64
    attrs = {"k": k} | ({"dtype": dtype} if dtype is not None else {})
    _check(tmp_path, "EyeLike", [("x", x, False)], [("y", out)], 22, runtime=False, **attrs)


# Out-of-range run-time indices under ASan/UBSan --------------------------------------------------
def _sanitized(tmp_path: Path, inputs: list[tuple[str, np.ndarray, bool]], op: str, out_type: type,
               opset: int = 18, **attrs: object) -> np.ndarray:
    """ember's output, from the bundle's C built into the C driver with ASan+UBSan (no recovery)."""
    model = _model(op, inputs, [("y", out_type)], opset, **attrs)
    tmp_path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out")
    return cdriver.run(bundle.path, tmp_path / "drv", _feeds(inputs), sanitize=True)["y"]


BAD = np.array([I64.max, I64.min, 3, -4, 7, -100, 2, -3], np.int64)  # for an axis of 3: 2 and -3 are fine


def test_gather_elements_out_of_range_clamps(tmp_path: Path) -> None:
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    ix = np.tile(BAD, (4, 1))
    y = _sanitized(tmp_path, [("d", data, False), ("i", ix, False)], "GatherElements", np.float32, axis=1)
    want = np.take_along_axis(data, np.tile([2, 0, 2, 0, 2, 0, 2, 0], (4, 1)), axis=1)
    np.testing.assert_array_equal(y, want)


def test_gather_nd_out_of_range_clamps(tmp_path: Path) -> None:
    data = np.arange(9, dtype=np.int32).reshape(3, 3)
    ix = np.stack([BAD, BAD[::-1]], -1)
    y = _sanitized(tmp_path, [("d", data, False), ("i", ix, False)], "GatherND", np.int32)
    clamp = np.array([2, 0, 2, 0, 2, 0, 2, 0])
    np.testing.assert_array_equal(y, data[clamp, clamp[::-1]])


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_scatter_elements_out_of_range_skips(tmp_path: Path, reduction: str) -> None:
    data = np.zeros((2, 3), np.float32)
    ix = np.tile(BAD, (2, 1))
    upd = np.arange(1, 17, dtype=np.float32).reshape(2, 8)
    y = _sanitized(tmp_path, [("d", data, False), ("i", ix, False), ("u", upd, False)], "ScatterElements",
                   np.float32, axis=1, reduction=reduction)
    # Only the last two indices (2 and -3 = 0) are in range; the others write nothing.
    np.testing.assert_array_equal(y, [[8, 0, 7], [16, 0, 15]])


@pytest.mark.parametrize("reduction", ["none", "mul"])
def test_scatter_nd_out_of_range_skips(tmp_path: Path, reduction: str) -> None:
    data = np.ones((3, 3, 2), np.int64)
    ix = np.stack([BAD, np.array([0, 1, 2, 0, 1, 2, 1, -1])], -1)  # rows: only the last two are in range
    upd = np.full((8, 2), 5, np.int64)
    y = _sanitized(tmp_path, [("d", data, False), ("i", ix, False), ("u", upd, False)], "ScatterND", np.int64,
                   reduction=reduction)
    want = np.ones((3, 3, 2), np.int64)
    want[2, 1] = want[0, 2] = 5
    np.testing.assert_array_equal(y, want)


def test_onehot_and_reverse_sequence_out_of_range(tmp_path: Path) -> None:
    inputs = [("i", BAD, False), ("d", np.array(3, np.int64), True), ("v", np.array([0.0, 1.0], np.float32), True)]
    y = _sanitized(tmp_path / "onehot", inputs, "OneHot", np.float32, opset=11)
    want = np.zeros((8, 3), np.float32)
    want[6, 2] = want[7, 0] = 1
    np.testing.assert_array_equal(y, want)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)  # time 3, batch 4
    lens = np.array([I64.max, I64.min, 2, 4], np.int64)  # clamped to 3, 0, 2, 3
    y = _sanitized(tmp_path / "rev", [("x", x, False), ("l", lens, False)], "ReverseSequence", np.float32, opset=10)
    want = x.copy()
    for b, n in enumerate([3, 0, 2, 3]):
        want[:n, b] = x[:n, b][::-1]
    np.testing.assert_array_equal(y, want)


# Refusals: one line naming the node and the problem ---------------------------------------------
F32 = np.zeros((3, 4), np.float32)
REFUSALS = [
    ("ScatterElements", [("d", F32, False), ("i", np.zeros((3, 4), np.int64), False), ("u", F32, False)],
     [("y", np.float32)], 18, {"reduction": "avg"}, UnsupportedOperatorError, "reduction 'avg'"),
    ("GatherElements", [("d", F32, False), ("i", np.zeros((4, 4), np.int64), False)], [("y", np.float32)], 13,
     {"axis": 1}, ShapeError, r"indices \[4, 4\] exceed data \[3, 4\] off axis 1"),
    ("GatherElements", [("d", np.zeros((3, 0), np.float32), False), ("i", np.zeros((3, 2), np.int64), False)],
     [("y", np.float32)], 13, {"axis": 1}, ShapeError, "indices into an empty axis 1"),
    ("TopK", [("x", F32, False), ("k", np.array([5], np.int64), True)], [("v", np.float32), ("i", np.int64)], 11,
     {}, ShapeError, r"K 5 outside \[0, 4\]"),
    ("EyeLike", [("x", F32, False)], [("y", np.float32)], 22, {"dtype": onnx.TensorProto.STRING},
     UnsupportedOperatorError, "dtype: element type STRING is not supported"),
    ("OneHot", [("i", np.zeros(3, np.int64), False), ("d", np.array(0, np.int64), True),
                ("v", np.array([0, 1], np.float32), True)], [("y", np.float32)], 11, {}, ShapeError, "depth 0"),
    ("SpaceToDepth", [("x", np.zeros((1, 2, 3, 4), np.float32), False)], [("y", np.float32)], 13,
     {"blocksize": 2}, ShapeError, "3x4 not divisible by blocksize 2"),
]


@pytest.mark.parametrize(("op", "inputs", "outputs", "opset", "attrs", "error", "message"), REFUSALS,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)])
def test_refusals_name_the_node(tmp_path: Path, op: str, inputs: list, outputs: list, opset: int, attrs: dict,
                                error: type, message: str) -> None:
    onnx.save(_model(op, inputs, outputs, opset, **attrs), tmp_path / "m.onnx")
    with pytest.raises(error, match=message) as e:
        ember.compile(tmp_path / "m.onnx", tmp_path / "out")
    assert f"{op}_0" in str(e.value) and "\n" not in str(e.value)
