"""Operator order for memory (ember/passes/schedule.py): the best topological order on small graphs (checked
against every order), a smaller bound on branchy graphs, never a larger one, deterministic, and the same
outputs as onnxruntime after reordering."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.memory.planner import activation_peak, inlined_constants, plan_memory
from ember.passes.schedule import best_order, schedule_for_memory
from tests.support import cdriver
from tests.support.models import assert_outputs_match, onnxruntime_outputs


def _f(g: Graph, name: str, n: int) -> Value:
    return g.value(name, TensorType(DType.FLOAT32, (n,)))


def _op(g: Graph, name: str, inputs: list[Value], n: int) -> Value:
    """A node of `n` output floats (only sizes and liveness matter to the planner: a Tile, or a Concat)."""
    out = _f(g, name, n)
    if len(inputs) == 1:
        g.add_node(Node("Tile", name, [inputs[0], g.constant(name + "_r", np.array([1]))], [out]))
    else:
        g.add_node(Node("Concat", name, inputs, [out], {"axis": 0}))
    return out


def _two_towers() -> Graph:
    """Two branches that each expand then reduce; written breadth first (both expansions alive at once)."""
    g = Graph("towers")
    x = _f(g, "x", 16)
    g.inputs.append(x)
    a1, b1 = _op(g, "a1", [x], 4096), _op(g, "b1", [x], 4096)
    a2, b2 = _op(g, "a2", [a1], 16), _op(g, "b2", [b1], 16)
    y = _op(g, "y", [a2, b2], 32)
    g.outputs.append(y)
    g.output_names.append("y")
    return g


def _topological(g: Graph) -> bool:
    seen = {id(v) for v in g.inputs}
    for n in g.nodes:
        if any(v is not None and not v.is_const and id(v) not in seen for v in n.inputs):
            return False
        seen.update(id(v) for v in n.outputs if v is not None)
    return True


def test_branchy_graph_runs_depth_first() -> None:
    g = _two_towers()
    before = activation_peak(g)
    schedule_for_memory(g)
    assert [n.name for n in g.nodes] == ["a1", "a2", "b1", "b2", "y"]
    assert _topological(g)
    assert activation_peak(g) == 4 * (4096 + 16 + 16) < before == 4 * (2 * 4096 + 16)
    plan = plan_memory(g)
    assert plan.activations_size <= 1.02 * plan.lower_bound


def _random_dag(rng: random.Random, n: int) -> Graph:
    g = Graph("dag")
    x = _f(g, "x", 16)
    g.inputs.append(x)
    vals = [x]
    for i in range(n):
        k = 1 if len(vals) == 1 else rng.choice((1, 1, 2))
        ins = rng.sample(vals, k)
        vals.append(_op(g, f"n{i}", ins, 16 * rng.randint(1, 40)))
    # Everything nobody reads is an output (so nothing is dead), through one Concat.
    read = {id(v) for nd in g.nodes for v in nd.inputs}
    ends = [v for v in vals[1:] if id(v) not in read]
    y = _op(g, "y", ends, 16) if len(ends) > 1 else ends[0]
    g.outputs.append(y)
    g.output_names.append(y.name)
    return g


def _all_orders_best(g: Graph) -> int:
    nodes = list(g.nodes)
    best = None
    for perm in itertools.permutations(nodes):
        g.nodes = list(perm)
        if _topological(g):
            p = activation_peak(g)
            best = p if best is None else min(best, p)
    g.nodes = nodes
    assert best is not None
    return best


def test_small_graphs_get_the_best_order_of_all() -> None:
    rng = random.Random(5)
    for _ in range(8):
        g = _random_dag(rng, 6)
        want = _all_orders_best(g)
        order, modelled, exact = best_order(g)
        assert exact
        before = activation_peak(g)
        schedule_for_memory(g)
        assert _topological(g)
        assert activation_peak(g) == min(want, before) == want
        g.nodes = [g.nodes[i] for i in range(len(g.nodes))]
        assert modelled == want


def test_big_graphs_never_get_worse_and_are_deterministic() -> None:
    assert not best_order(_random_dag(random.Random(9), 60))[2]  # too wide for the exact search: the beam runs
    orders = []
    for _ in range(2):
        g = _random_dag(random.Random(9), 60)
        before = activation_peak(g)
        schedule_for_memory(g)
        assert _topological(g)
        assert activation_peak(g) <= before
        orders.append([n.name for n in g.nodes])
    assert orders[0] == orders[1]


def _towers_onnx(tmp: Path) -> Path:
    nodes = [
        helper.make_node("Tile", ["x", "r"], ["a1"]), helper.make_node("Tile", ["x", "r2"], ["b1"]),
        helper.make_node("ReduceMax", ["a1"], ["a2"], axes=[1], keepdims=1),
        helper.make_node("ReduceMin", ["b1"], ["b2"], axes=[1], keepdims=1),
        helper.make_node("Concat", ["a2", "b2"], ["y"], axis=1),
    ]
    inits = [numpy_helper.from_array(np.array([1, 64], np.int64), "r"),
             numpy_helper.from_array(np.array([1, 48], np.int64), "r2")]
    g = helper.make_graph(nodes, "towers", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 2])], inits)
    path = tmp / "towers.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_reordered_bundle_matches_onnxruntime(tmp_path: Path) -> None:
    path = _towers_onnx(tmp_path)
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    assert [n.op for n in graph.nodes][:2] != ["Tile", "Tile"]  # the pipeline reordered it
    plan = plan_memory(graph, inlined_constants(graph))
    assert plan.lower_bound == 4 * 4 * 32 * 64 + 4 * 4  # one tower's expansion at a time (+ its reduction)
    x = np.random.default_rng(2).standard_normal((4, 32)).astype(np.float32)
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    got = cdriver.run(bundle.path, tmp_path / "drv", {"x": x}, sanitize=True)
    assert_outputs_match(got, onnxruntime_outputs(path, {"x": x}))
