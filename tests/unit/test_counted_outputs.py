"""Outputs whose size depends on values (ember/ops/counted.py): the static bound, the count output, NAME.h's
note, NAME.json's `valid_count`, Bundle.run's trimming, and the refusal of a bounded value other nodes read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import UnsupportedOperatorError
from tests.support.models import assert_outputs_match, onnxruntime_outputs


def _detection_head(path: Path) -> None:
    """Boxes and per-class scores through NonMaxSuppression, as detection exports end."""
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "thr"], ["selected"])]
    inits = [numpy_helper.from_array(np.array([3], np.int64), "max"),
             numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
             numpy_helper.from_array(np.array([0.2], np.float32), "thr")]
    g = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 40, 4]),
                                          helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 40])],
                          [helper.make_tensor_value_info("selected", TensorProto.INT64, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_bounded_output_is_trimmed_to_its_count(tmp_path: Path) -> None:
    _detection_head(tmp_path / "head.onnx")
    rng = np.random.default_rng(0)
    corners = rng.random((1, 40, 2)).astype(np.float32)
    boxes = np.concatenate([corners, corners + rng.random((1, 40, 2)).astype(np.float32) * 0.3], axis=2)
    scores = rng.random((1, 2, 40)).astype(np.float32)
    scores[0, 1] = 0.1  # class 1: one box above the score threshold
    scores[0, 1, 7] = 0.9
    feeds = {"boxes": boxes, "scores": scores}
    bundle = ember.compile(tmp_path / "head.onnx", tmp_path / "out")
    got = bundle.run(feeds)
    want = onnxruntime_outputs(tmp_path / "head.onnx", feeds)
    assert 0 < want["selected"].shape[0] < 6  # some but not all of the 2 x 3 slots: the count matters
    assert_outputs_match({"selected": got["selected"]}, want)
    assert int(got["selected_count"]) == want["selected"].shape[0]
    manifest = json.loads((tmp_path / "out" / "head.json").read_text())
    selected = next(o for o in manifest["outputs"] if o["name"] == "selected")
    assert selected["shape"] == [6, 3] and selected["valid_count"] == {"count": "selected_count", "axis": 0}
    header = (tmp_path / "out" / "head.h").read_text()
    assert "int64 output at HEAD_selected_count" in header and "#define HEAD_selected_count_SIZE 1" in header


def test_bounded_value_read_by_another_node_is_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("NonZero", ["x"], ["where"]), helper.make_node("Transpose", ["where"], ["rows"])]
    g = helper.make_graph(nodes, "nz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("rows", TensorProto.INT64, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "nz.onnx")
    with pytest.raises(UnsupportedOperatorError, match="NonZero.*'where'.*depends on values"):
        ember.compile(tmp_path / "nz.onnx", tmp_path / "out")


def _topk_model(path: Path, *, largest: int, with_indices: bool = True) -> None:
    """TopK along the middle axis of [2, 7, 3] with K a graph input (read when the bundle runs); without
    `with_indices`, the indices are no graph output (the kernel ranks in scratch memory)."""
    nodes = [helper.make_node("TopK", ["x", "k"], ["values", "indices"], axis=1, largest=largest, sorted=1)]
    g = helper.make_graph(nodes, "topk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 3]),
                                          helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("values", TensorProto.FLOAT, None),
                           *([helper.make_tensor_value_info("indices", TensorProto.INT64, None)] if with_indices
                             else [])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_with_a_run_time_k_is_bounded_by_its_axis(tmp_path: Path, largest: int) -> None:
    _topk_model(tmp_path / "topk.onnx", largest=largest)
    bundle = ember.compile(tmp_path / "topk.onnx", tmp_path / "out")
    x = np.random.default_rng(1).standard_normal((2, 7, 3)).astype(np.float32)
    x[0, 2, 1] = x[0, 5, 1]  # a tie: the lower index comes first
    for k in (0, 1, 4, 7):
        feeds = {"x": x, "k": np.array([k], np.int64)}
        got = bundle.run(feeds)
        want = onnxruntime_outputs(tmp_path / "topk.onnx", feeds)
        assert got["values"].shape == got["indices"].shape == (2, k, 3)
        assert_outputs_match({n: got[n] for n in want}, want)
        assert int(got["values_count"]) == k
    manifest = json.loads((tmp_path / "out" / "topk.json").read_text())
    shapes = {o["name"]: (o["shape"], o["valid_count"]) for o in manifest["outputs"]}
    assert shapes["values"] == ([2, 7, 3], {"count": "values_count", "axis": 1})
    assert shapes["indices"] == ([2, 7, 3], {"count": "values_count", "axis": 1})


def test_topk_run_time_k_values_alone(tmp_path: Path) -> None:
    _topk_model(tmp_path / "topk.onnx", largest=1, with_indices=False)
    feeds = {"x": np.random.default_rng(2).standard_normal((2, 7, 3)).astype(np.float32), "k": np.array([3])}
    got = ember.compile(tmp_path / "topk.onnx", tmp_path / "out").run(feeds)
    assert_outputs_match({"values": got["values"]}, onnxruntime_outputs(tmp_path / "topk.onnx", feeds))
