"""Memory planner: placement is valid (no live overlap), reuses memory, and stays near the lower bound."""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.memory.planner import Region, plan_memory


def _chain(n_layers: int, size: int) -> Graph:
    g = Graph("chain")
    x = g.value("x", TensorType(DType.FLOAT32, (size,)))
    g.inputs.append(x)
    cur = x
    for i in range(n_layers):
        out = g.value(f"t{i}", TensorType(DType.FLOAT32, (size,)))
        g.add_node(Node("Add", f"add{i}", [cur, g.constant(f"c{i}", np.ones(size, np.float32))], [out]))
        cur = out
    g.outputs.append(cur)
    g.output_names.append(cur.name)
    return g


def _overlaps(plan, graph: Graph) -> list[str]:
    """Pairs of activation values alive at the same time whose byte ranges intersect."""
    last = {}
    first = {}
    for i, n in enumerate(graph.nodes):
        for v in n.outputs:
            first.setdefault(id(v), i)
        for v in n.inputs:
            if v is not None:
                last[id(v)] = i
    vals = [v for n in graph.nodes for v in n.outputs if plan.where(v)[0] is Region.ACTIVATIONS]
    bad = []
    for a in vals:
        for b in vals:
            if a is b or plan.where(a) == plan.where(b):
                continue
            live = first[id(a)] <= last.get(id(b), 0) and first[id(b)] <= last.get(id(a), 0)
            oa, ob = plan.where(a)[1], plan.where(b)[1]
            if live and oa < ob + b.type.nbytes and ob < oa + a.type.nbytes:
                bad.append(f"{a.name}/{b.name}")
    return bad


def test_chain_reuses_memory_in_place() -> None:
    g = _chain(10, 1000)
    plan = plan_memory(g)
    # Elementwise chain: every intermediate can overwrite its input, so one buffer suffices.
    assert plan.activations_size == 4032
    assert plan.lower_bound == 4000
    assert _overlaps(plan, g) == []
    assert plan.mutable_size == 2 * 4032
    # Identical constants are stored once.
    assert plan.constant_size == 4032


def test_diamond_keeps_both_branches_alive() -> None:
    g = Graph("diamond")
    t = TensorType(DType.FLOAT32, (256,))
    x = g.value("x", t)
    g.inputs.append(x)
    a, b, c, d = (g.value(n, t) for n in "abcd")
    g.add_node(Node("Sub", "n0", [x, x], [a]))
    g.add_node(Node("Mul", "n1", [a, a], [b]))  # a still needed by n2: no in-place
    g.add_node(Node("Div", "n2", [a, b], [c]))
    g.add_node(Node("Add", "n3", [c, b], [d]))
    g.outputs.append(d)
    g.output_names.append("d")
    plan = plan_memory(g)
    assert _overlaps(plan, g) == []
    assert plan.where(a) != plan.where(b)
    assert plan.activations_size <= 1.10 * plan.lower_bound + 64 * 3
