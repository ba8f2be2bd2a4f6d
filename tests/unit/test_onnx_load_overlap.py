"""The ONNX file is checked (onnx.checker, in a thread), hashed (in a thread) and built at once
(frontends/onnx/loader.py, driver.load_graph): the answers must be those of doing it one after the other."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.config import CompileOptions
from ember.driver import load_graph
from ember.errors import ModelFormatError


def _model(path: Path, raw: bytes | None = None) -> Path:
    w = numpy_helper.from_array(np.arange(10, dtype=np.float32), "w")
    if raw is not None:
        w.raw_data = raw
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [10])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_graph_and_hash_of_a_good_model(tmp_path: Path) -> None:
    path = _model(tmp_path / "m.onnx")
    graph, sha = load_graph(str(path), CompileOptions())
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [n.op for n in graph.nodes] == ["Add"]


def test_the_checker_names_the_problem_before_what_building_met(tmp_path: Path) -> None:
    """Too few bytes for the initializer's shape: building it would fail converting it; the checker's verdict
    (which names the tensor and the sizes) is the message, as when the checker ran first."""
    path = _model(tmp_path / "m.onnx", raw=b"\0" * 8)
    with pytest.raises(ModelFormatError, match=r"invalid ONNX model: .*tensor name: w.*too small"):
        load_graph(str(path), CompileOptions())
