"""Memory planning of control flow: If branches overlap each other, what a subgraph reads from outside and
a Loop's state outlive the subgraph's own intermediates, branch outputs land in the If's output buffers."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ir.graph import Graph, Value
from ember.memory.plan import MemoryPlan, Region
from ember.memory.planner import inlined_constants, plan_memory

N = 16  # floats: 64 bytes, one aligned slot


def _vi(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _save(tmp: Path, nodes, inputs, outputs) -> Path:
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 17)])
    p = tmp / "m.onnx"
    onnx.save(m, p)
    return p


def _plan(path: Path) -> tuple[Graph, MemoryPlan]:
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    return graph, plan_memory(graph, inlined_constants(graph))


def _named(graph: Graph, name: str) -> Value:
    for n in graph.walk():
        for v in n.outputs:
            if v is not None and v.name == name:
                return v
    raise KeyError(name)


def _bytes(plan: MemoryPlan, v: Value) -> tuple[Region, range]:
    region, off = plan.where(v)
    return region, range(off, off + v.type.nbytes)


def _disjoint(plan: MemoryPlan, a: Value, b: Value) -> bool:
    (ra, ba), (rb, bb) = _bytes(plan, a), _bytes(plan, b)
    return ra is not rb or not set(ba) & set(bb)


def test_if_branches_share_memory_and_outer_reads_outlive_them(tmp_path: Path) -> None:
    # h = relu(x) is read by both branches: it must stay intact while either runs; a and e never run together.
    then_g = helper.make_graph([helper.make_node("Exp", ["h"], ["a"]), helper.make_node("Add", ["a", "h"], ["t"])],
                               "then", [], [_vi("t", TensorProto.FLOAT, [N])])
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["h"], ["e"]), helper.make_node("Mul", ["e", "h"], ["f"])],
                               "else", [], [_vi("f", TensorProto.FLOAT, [N])])
    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    graph, plan = _plan(_save(tmp_path, nodes, [_vi("x", TensorProto.FLOAT, [N]), _vi("c", TensorProto.BOOL, [])],
                              [_vi("y", TensorProto.FLOAT, [N])]))
    h, a, e, y = (_named(graph, n) for n in ("h", "a", "e", "y"))
    assert plan.where(a) == plan.where(e)  # the two branches' intermediates overlap
    assert _disjoint(plan, h, a) and _disjoint(plan, h, e)  # the captured h is live across the whole If
    # Each branch's result is computed straight into the If's output (no copy, no buffer of its own).
    assert plan.where(_named(graph, "t")) == plan.where(y) == plan.where(_named(graph, "f"))
    assert plan.activations_size == 2 * 64


def test_loop_state_outlives_the_body(tmp_path: Path) -> None:
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Exp", ["v"], ["ev"]), helper.make_node("Add", ["ev", "h"], ["v_out"])],
                             "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                                      _vi("v", TensorProto.FLOAT, [N])],
                             [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out", TensorProto.FLOAT, [N])])
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Loop", ["m", "", "x"], ["vf"], body=body),
             helper.make_node("Neg", ["vf"], ["y"])]
    graph, plan = _plan(_save(tmp_path, nodes, [_vi("x", TensorProto.FLOAT, [N]), _vi("m", TensorProto.INT64, [])],
                              [_vi("y", TensorProto.FLOAT, [N])]))
    loop = next(n for n in graph.nodes if n.op == "Loop")
    b = loop.subgraphs["body"]
    h, ev, v_out, vf = _named(graph, "h"), _named(graph, "ev"), _named(graph, "v_out"), loop.outputs[0]
    assert vf is not None
    assert plan.where(b.inputs[2]) == plan.where(vf)  # the carried formal reads the final-value buffer
    for state in (h, vf, b.inputs[0], b.inputs[1]):  # capture, carried value, iteration counter, condition
        assert _disjoint(plan, state, ev) and _disjoint(plan, state, v_out)
    assert _disjoint(plan, ev, v_out)
