"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss beyond the node tests (all float32, int64 targets).

Against the ONNX reference: float64 scores, int32 targets, weights with ignore_index and every
reduction, N-D inputs and SCE's log_prob output. Targets are run-time data: a class index out of range
must not read outside the scores (checked under AddressSanitizer + UBSan) and shows as a NaN loss.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.errors import ShapeError, UnsupportedOperatorError
from tests.support import cdriver

_TYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int32: TensorProto.INT32,
          np.int64: TensorProto.INT64}


def _model(path: Path, op: str, inputs: dict[str, np.ndarray], outputs: list[str], **attrs: object) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, list(inputs), outputs, **attrs)], "loss",
        [helper.make_tensor_value_info(k, _TYPES[v.dtype.type], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return model


# name: (op, scores shape, scores dtype, target dtype, weight, reduction, ignore_index, log_prob output)
CASES = {
    "nll_f64_i32_mean_weight_ii": ("NegativeLogLikelihoodLoss", (3, 5, 4), np.float64, np.int32, True, "mean", 2,
                                   False),
    "nll_f32_i32_sum_2d": ("NegativeLogLikelihoodLoss", (6, 4), np.float32, np.int32, False, "sum", None, False),
    "nll_f64_i64_none_4d": ("NegativeLogLikelihoodLoss", (2, 3, 2, 3), np.float64, np.int64, True, "none", -1,
                            False),
    "sce_f64_i32_mean_log_prob": ("SoftmaxCrossEntropyLoss", (2, 7, 3), np.float64, np.int32, True, "mean", 0,
                                  True),
    "sce_f32_i32_none_ii": ("SoftmaxCrossEntropyLoss", (4, 6, 2, 2), np.float32, np.int32, False, "none", 5,
                            True),
    "sce_f64_i64_sum": ("SoftmaxCrossEntropyLoss", (5, 3), np.float64, np.int64, False, "sum", None, False),
}


def _inputs(shape: tuple[int, ...], dtype: type, target_dtype: type, weight: bool, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape).astype(dtype)
    target = rng.integers(0, shape[1], (shape[0], *shape[2:])).astype(target_dtype)
    feeds = {"x": scores, "t": target}
    if weight:
        feeds["w"] = rng.uniform(0.2, 2.0, shape[1]).astype(dtype)
    return feeds


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_matches_reference(case: str, tmp_path: Path) -> None:
    op, shape, dtype, target_dtype, weight, reduction, ignore, log_prob = CASES[case]
    feeds = _inputs(shape, dtype, target_dtype, weight, len(case))
    if ignore is not None:  # some targets are the ignored class
        feeds["t"].reshape(-1)[::3] = ignore
    attrs: dict[str, object] = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    outputs = ["loss", "log_prob"] if log_prob else ["loss"]
    model = _model(tmp_path / "m.onnx", op, feeds, outputs, **attrs)
    want = ReferenceEvaluator(model).run(None, feeds)
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out")
    for got in (bundle.run(feeds), cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)):
        for name, ref in zip(outputs, want, strict=True):
            ref = np.asarray(ref)
            assert got[name].shape == ref.shape and got[name].dtype == ref.dtype, name
            np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-6, err_msg=f"{case}: {name}")


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
def test_out_of_range_targets_give_nan_without_reading_outside(op: str, tmp_path: Path) -> None:
    feeds = _inputs((4, 3, 2), np.float32, np.int64, True, 7)
    feeds["t"][:] = [[0, 3], [-1, 2], [1, 1 << 40], [2, -4]]  # 3, -1, 2^40 and -4 are no class of 3
    _model(tmp_path / "m.onnx", op, feeds, ["loss"], reduction="none", ignore_index=-4)
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out")
    bad = np.array([[0, 1], [1, 0], [0, 1], [0, 0]], bool)
    for got in (bundle.run(feeds)["loss"], cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)["loss"]):
        assert np.isnan(got[bad]).all() and np.isfinite(got[~bad]).all(), got
        assert got[3, 1] == 0  # the ignored target
    _model(tmp_path / "s.onnx", op, feeds, ["loss"], reduction="sum")
    assert np.isnan(ember.compile(tmp_path / "s.onnx", tmp_path / "s").run(feeds)["loss"])


def test_bad_reduction_and_target_shape_are_refused(tmp_path: Path) -> None:
    feeds = _inputs((2, 3), np.float32, np.int64, False, 1)
    _model(tmp_path / "r.onnx", "NegativeLogLikelihoodLoss", feeds, ["loss"], reduction="max")
    with pytest.raises(UnsupportedOperatorError, match="reduction 'max'"):
        ember.compile(tmp_path / "r.onnx", tmp_path / "r")
    feeds["t"] = np.zeros((3,), np.int64)
    _model(tmp_path / "t.onnx", "SoftmaxCrossEntropyLoss", feeds, ["loss"])
    with pytest.raises(ShapeError, match=r"target \[3\] does not match scores \[2, 3\]"):
        ember.compile(tmp_path / "t.onnx", tmp_path / "t")
