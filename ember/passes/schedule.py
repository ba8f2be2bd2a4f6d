"""Operator order for the smallest activation peak: on branchy graphs (a ResNet's shortcut beside its body, an
Inception block, attention heads) which branch runs first decides how many tensors are alive at once.

The bytes alive after a set S of nodes has run do not depend on the order within S (a tensor is alive while
some consumer has not run), and neither does the cost of running node n next (what is alive, plus n's new
outputs and scratch, less an output written in place over, or overlapping (OpDef.overlap), an input that dies
at n). So the best peak over all topological orders is a dynamic program over the sets S closed under
predecessors, level by level (|S| = 0, 1, ...). Each level keeps its best states only up to a budget: exact
when a graph's levels fit (narrow and small graphs), a beam search beyond (a greedy order at worst). The result
replaces the node order only if the planner's own bound for it (memory/planner.activation_peak) is smaller;
ties keep the original order. The pass is deterministic.

Only the top-level graph is reordered: a control-flow node runs as one step, its subgraphs as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ember.ir.graph import Graph, Value
from ember.memory.planner import activation_peak
from ember.ops import registry

WORK = 100_000  # steps tried in all: states kept per level = WORK / (nodes x the most nodes ready at once)


@dataclass
class _Node:
    preds: int = 0  # bit mask of the nodes it reads from
    succs: list[int] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)  # activation groups it reads
    new: list[int] = field(default_factory=list)  # activation groups it creates
    scratch: int = 0
    in_place: list[int] = field(default_factory=list)  # groups its first output may overwrite if they die here
    saving: int = 0  # bytes that output takes


@dataclass
class _Model:
    nodes: list[_Node]
    size: list[int]  # per group
    users: list[int]  # per group: bit mask of the nodes that read it


def _model(graph: Graph) -> _Model:
    """Tensors as the planner groups them: a reshape-like output shares its input's buffer (a group); graph
    inputs and outputs live in the mutable region and constants in their own, so none of those count."""
    producer: dict[int, int] = {}
    group: dict[int, int] = {}
    size: list[int] = []
    users: list[int] = []
    nodes = [_Node() for _ in graph.nodes]
    for i, n in enumerate(graph.nodes):
        op = registry.get(n.op)
        me = nodes[i]
        for v in n.inputs:
            if v is None or v.is_const:
                continue
            if id(v) in producer and not nodes[i].preds >> producer[id(v)] & 1:
                me.preds |= 1 << producer[id(v)]
                nodes[producer[id(v)]].succs.append(i)
            g = group.get(id(v))
            if g is not None:
                users[g] |= 1 << i
                if g not in me.reads:
                    me.reads.append(g)
        if op.scratch is not None:
            me.scratch = max(op.scratch(n), 0)
        for k, out in enumerate(n.outputs):
            if out is None:
                continue
            producer[id(out)] = i
            if graph.is_output(out):
                continue
            src = n.inputs[0] if n.inputs else None
            if k == 0 and op.alias and not n.subgraphs and src is not None and not src.is_const \
                    and src.type.nbytes == out.type.nbytes:
                if id(src) in group:
                    group[id(out)] = group[id(src)]
                continue
            group[id(out)] = len(size)
            me.new.append(len(size))
            size.append(out.storage_bytes)
            users.append(0)
            if k == 0 and op.inplace and not n.subgraphs:
                me.in_place = [group[id(v)] for s, v in enumerate(n.inputs) if _may_share(op.inplace, s, v, out, group)]
                me.saving = out.storage_bytes if me.in_place else 0
            elif k == 0 and op.overlap is not None and src is not None and id(src) in group:
                at = op.overlap(n)  # the output starts `at` bytes into its dying input (OpDef.overlap)
                if at is not None:
                    me.in_place = [group[id(src)]]
                    me.saving = max(0, min(out.storage_bytes, src.storage_bytes - at))
    return _Model(nodes, size, users)


def _may_share(inplace: bool | tuple[int, ...], slot: int, v: Value | None, out: Value, group: dict[int, int]) -> bool:
    return (v is not None and not v.is_const and id(v) in group and (inplace is True or slot in inplace)
            and v.shape == out.shape and v.dtype.itemsize == out.dtype.itemsize and v.blocked == out.blocked)


@dataclass
class _State:
    peak: int
    live: int
    ready: tuple[int, ...]
    prev: int  # the state (its set) this one came from
    node: int  # the node that took it here


def _step(m: _Model, s: int, st: _State, i: int) -> tuple[int, int]:
    """(bytes in use while node i runs after set s, bytes alive after it)."""
    nd = m.nodes[i]
    done = s | 1 << i
    new = sum(m.size[g] for g in nd.new)
    during = st.live + new + nd.scratch
    if any(m.users[g] & ~done == 0 for g in nd.in_place):
        during -= nd.saving
    freed = sum(m.size[g] for g in nd.reads if m.users[g] & ~done == 0)
    freed += sum(m.size[g] for g in nd.new if m.users[g] == 0)
    return during, st.live + new - freed


def _width(m: _Model) -> int:
    """The most nodes ready at once along the original order (how many ways each state can go on)."""
    done, most = 0, 1
    for i in range(len(m.nodes)):
        ready = sum(1 for j in range(i, len(m.nodes)) if m.nodes[j].preds & ~done == 0)
        most = max(most, ready)
        done |= 1 << i
    return most


def best_order(graph: Graph) -> tuple[list[int], int, bool]:
    """Node indices in the order of smallest modelled peak, that peak, and whether the search was exhaustive."""
    m = _model(graph)
    n = len(m.nodes)
    beam = max(1, WORK // (max(n, 1) * _width(m)))
    start = tuple(i for i, nd in enumerate(m.nodes) if nd.preds == 0)
    levels: list[dict[int, _State]] = [{0: _State(0, 0, start, -1, -1)}]
    exact = True
    for _ in range(n):
        nxt: dict[int, _State] = {}
        for s, st in levels[-1].items():
            for i in st.ready:
                during, live = _step(m, s, st, i)
                t = s | 1 << i
                peak = max(st.peak, during)
                old = nxt.get(t)
                if old is None or (peak, live) < (old.peak, old.live):
                    nxt[t] = _State(peak, live, (), s, i)  # its ready nodes: below, if it is kept
        if len(nxt) > beam:
            exact = False
            nxt = dict(sorted(nxt.items(), key=lambda kv: (kv[1].peak, kv[1].live, kv[0]))[:beam])
        for t, st in nxt.items():
            before = levels[-1][st.prev].ready
            fresh = (j for j in m.nodes[st.node].succs if m.nodes[j].preds & ~t == 0)
            st.ready = tuple(sorted({*before, *fresh} - {st.node}))
        levels.append(nxt)
    s, st = next(iter(levels[-1].items()))
    peak = st.peak
    order = []
    for level in reversed(levels[1:]):
        st = level[s]
        order.append(st.node)
        s = st.prev
    return order[::-1], peak, exact


def schedule_for_memory(graph: Graph) -> None:
    """Reorder graph.nodes (a topological order still) if that lowers the planner's activation bound."""
    if len(graph.nodes) < 3:
        return
    order, _, _ = best_order(graph)
    if order == list(range(len(graph.nodes))):
        return
    before = activation_peak(graph)
    old = graph.nodes
    graph.nodes = [old[i] for i in order]
    if activation_peak(graph) >= before:
        graph.nodes = old
