"""fuse_elementwise: graph structure after the pass, and numerics of fused bundles vs numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.passes.fold_constants import fold_constants
from ember.passes.fuse_elementwise import fuse_elementwise

RNG = np.random.default_rng(3)
F = TensorProto.FLOAT


def _model(nodes, inputs, outputs=("y",), inits=(), opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _fused(model: onnx.ModelProto) -> Graph:
    graph = load_onnx(model, LoadOptions(), "net")
    fold_constants(graph)
    fuse_elementwise(graph)
    return graph


def _compile(model: onnx.ModelProto, tmp_path: Path):
    """Compile with the default pipeline (fuse_elementwise runs before outputs are materialized)."""
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return ember.compile(path, tmp_path / "out")


def _chain_model() -> onnx.ModelProto:
    # y = relu(x * w + b) - exp(-x) with w broadcast along rows and b a scalar initializer
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Neg", ["x"], ["n"]),
        helper.make_node("Exp", ["n"], ["e"]),
        helper.make_node("Sub", ["r", "e"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.float32(0.25).reshape(()), "b")]
    return _model(nodes, [("x", F, [3, 4]), ("w", F, [4])], inits=inits)


def test_chain_becomes_one_node() -> None:
    g = _fused(_chain_model())
    assert [n.op for n in g.nodes] == ["FusedElementwise"]
    node = g.nodes[0]
    assert [s.op for s in node.attrs["_steps"]] == ["Mul", "Add", "Relu", "Neg", "Exp", "Sub"]
    assert {v.name for v in node.inputs} == {"x", "w", "b"}
    assert node.outputs[0] is g.outputs[0]


def test_chain_numerics(tmp_path: Path) -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    w = RNG.standard_normal(4).astype(np.float32)
    got = _compile(_chain_model(), tmp_path).run({"x": x, "w": w})["y"]
    ref = np.maximum(x * w + 0.25, 0) - np.exp(-x)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


def test_shared_intermediate_and_outputs_stay() -> None:
    # t feeds two nodes, and s is a graph output: neither may disappear into a fused node.
    nodes = [
        helper.make_node("Exp", ["x"], ["t"]),
        helper.make_node("Add", ["t", "x"], ["s"]),
        helper.make_node("Mul", ["t", "s"], ["y"]),
    ]
    g = _fused(_model(nodes, [("x", F, [8])], outputs=("y", "s")))
    assert [n.op for n in g.nodes] == ["Exp", "Add", "Mul"]


def test_broadcast_producer_is_not_recomputed() -> None:
    # e = exp(row) has 4 elements, y has 12: fusing would compute exp 3 times per element of e.
    nodes = [helper.make_node("Exp", ["row"], ["e"]), helper.make_node("Add", ["e", "x"], ["y"])]
    g = _fused(_model(nodes, [("row", F, [1, 4]), ("x", F, [3, 4])]))
    assert [n.op for n in g.nodes] == ["Exp", "Add"]


def test_stops_at_kernels(tmp_path: Path) -> None:
    # Softmax is a kernel: the chain before it and the chain after it fuse separately.
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["b"]),
        helper.make_node("Softmax", ["b"], ["c"], axis=-1),
        helper.make_node("Log", ["c"], ["d"]),
        helper.make_node("Cast", ["d"], ["e"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["e"], ["y"], to=F),
    ]
    model = _model(nodes, [("x", F, [2, 5])], opset=13)
    g = _fused(model)
    assert [n.op for n in g.nodes] == ["FusedElementwise", "Softmax", "FusedElementwise"]
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    got = _compile(model, tmp_path).run({"x": x})["y"]
    b = 1 / (1 + np.exp(-(x * x).astype(np.float64)))
    ref = b - np.log(np.exp(b).sum(-1, keepdims=True))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_mixed_dtypes_and_where(tmp_path: Path) -> None:
    # A comparison (bool) and an int cast inside one chain: each step keeps its own C type.
    nodes = [
        helper.make_node("Greater", ["x", "z"], ["c"]),
        helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT32),
        helper.make_node("Cast", ["i"], ["f"], to=F),
        helper.make_node("Where", ["c", "f", "x"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.float32(0.0).reshape(()), "z")]
    model = _model(nodes, [("x", F, [16])], inits=inits)
    g = _fused(model)
    assert [n.op for n in g.nodes] == ["FusedElementwise"]
    x = (RNG.standard_normal(16) * 4).astype(np.float32)
    got = _compile(model, tmp_path).run({"x": x})["y"]
    np.testing.assert_array_equal(got, np.where(x > 0, np.trunc(x), x))


def test_value_used_twice_by_the_chain_it_joins(tmp_path: Path) -> None:
    # Add(r, r) with r = Relu(x): the Relu joins the chain once; its second use reads the chain's local.
    model = _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "r"], ["y"])],
                   [("x", F, [4, 5])])
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    assert [n.op for n in _fused(model).nodes] == ["FusedElementwise"]
    np.testing.assert_array_equal(_compile(model, tmp_path).run({"x": x})["y"], 2 * np.maximum(x, 0))
