"""ONNX frontend: shape computations fold to constants, constant Ifs inline, Constant nodes become weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph


def _save(tmp: Path, graph: onnx.GraphProto, opset: int = 17) -> Path:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    p = tmp / "m.onnx"
    onnx.save(m, p)
    return p


def _shape_chain_model(tmp: Path) -> Path:
    # The PyTorch exporter's flatten: Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Constant", [], ["ax"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
        helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
        helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Mul", ["flat", "two"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])])
    return _save(tmp, g)


def test_shape_computation_folds(tmp_path: Path) -> None:
    p = _shape_chain_model(tmp_path)
    graph, _, _ = build_graph(str(p), CompileOptions(defines={"N": 4}), check=True)
    ops = [n.op for n in graph.nodes]
    assert "Shape" not in ops and "Gather" not in ops and "Concat" not in ops
    assert graph.outputs[0].shape == (4, 6)
    b = ember.compile(p, tmp_path / "b", defines={"N": 4})
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(b.run({"x": x})["y"], 2 * x.reshape(4, 6), rtol=1e-6)


def _if_model(tmp: Path, cond_value: bool | None) -> Path:
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    nodes = []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])]
    if cond_value is None:
        inputs.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    else:
        nodes.append(helper.make_node("Constant", [], ["c"],
                                      value=numpy_helper.from_array(np.array(cond_value))))
    nodes.append(helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="the_if"))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    return _save(tmp, g)


@pytest.mark.parametrize("cond", [True, False])
def test_constant_if_is_inlined(tmp_path: Path, cond: bool) -> None:
    b = ember.compile(_if_model(tmp_path, cond), tmp_path / "b")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(b.run({"x": x})["y"], x + x if cond else x * x)


@pytest.mark.parametrize("cond", [True, False])
def test_runtime_if_compiles_both_branches(tmp_path: Path, cond: bool) -> None:
    b = ember.compile(_if_model(tmp_path, None), tmp_path / "b")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(b.run({"x": x, "c": np.array(cond)})["y"], x + x if cond else x * x)


def test_external_data_is_read(tmp_path: Path) -> None:
    w = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "ext.onnx", save_as_external_data=True, location="ext.data", size_threshold=0)
    assert (tmp_path / "ext.data").exists()
    b = ember.compile(tmp_path / "ext.onnx", tmp_path / "b")
    x = np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(b.run({"x": x})["y"], x + w)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(ember.errors.ModelFormatError, match="external data"):
        ember.compile(tmp_path / "ext.onnx", tmp_path / "b2")


def test_same_model_gives_identical_files(tmp_path: Path) -> None:
    p = _shape_chain_model(tmp_path)
    ember.compile(p, tmp_path / "a", defines={"N": 2})
    ember.compile(p, tmp_path / "b", defines={"N": 2})
    for f in ("m.c", "m.h", "m.weights.bin", "m.weights.txt"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
