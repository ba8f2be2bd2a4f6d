"""Transpose optimization: models stored channels-last (TFLite, tf2onnx, NHWC exports) reach the IR as NCHW ops
wrapped in Transposes; this pass moves the Transposes through the ops between layers until inverse pairs meet
and cancel, so such a model pays for its layout at most once at each graph input and output.

Rules, applied until nothing changes:
- a Transpose of a constant is folded (numpy);
- consecutive Transposes compose into one; a Transpose with the identity permutation is removed;
- a Transpose is pushed forward (towards the outputs) through the ops that commute with a permutation:
  elementwise ops (registry: `expr` is set), and the ops of `_AXIS_OPS`, whose axis-carrying attributes or
  inputs are remapped. From one Transpose the push grows a region as far as it can go (every op in it reads
  the permuted values, constants permuted to match, or other Transposes of the same permutation, which
  join it); where the region ends, a permuted value meets Transposes (composed with it, often cancelling)
  or other readers (one Transpose re-made there). A push is committed only if it lowers the number of
  Transposes, or keeps it and moves fewer bytes: a push that copies a Transpose onto several values
  must pay for itself by cancelling (onnxruntime's cost rule, made exact by counting the whole region).
  At equal cost a push is made only if it takes the Transposes to the graph outputs.
- last, a Transpose that only moves axes of size 1 is a Reshape (a zero-copy view).

A value `v` of the region is "carried": v == Transpose(v2, perm) where v2 is the value the rewritten graph
computes instead (`perm` may differ per value: a reduction without keepdims drops axes from it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember.ir.dtypes import DType, QuantParams, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.conv import CHANNELS_LAST, channels_last
from ember.ops.movement import pad_params
from ember.ops.reduce import reduce_axes

Perm = tuple[int, ...]


# ---- permutations -------------------------------------------------------------------------------------
# Transpose(x, p).shape[k] == x.shape[p[k]].

def compose(first: Perm, then: Perm) -> Perm:
    """The one permutation of Transpose(Transpose(x, first), then)."""
    return tuple(first[k] for k in then)


def invert(p: Perm) -> Perm:
    inv = [0] * len(p)
    for k, a in enumerate(p):
        inv[a] = k
    return tuple(inv)


def is_identity(p: Perm) -> bool:
    return all(k == a for k, a in enumerate(p))


def perm_of(node: Node) -> Perm:
    x = node.inputs[0]
    assert x is not None
    return tuple(int(a) % max(x.type.rank, 1) for a in node.attrs.get("perm", range(x.type.rank - 1, -1, -1)))


def moves_only_unit_axes(p: Perm, shape: tuple[int, ...]) -> bool:
    """The axes longer than 1 keep their order: the bytes do not move, the Transpose is a reshape."""
    kept = [a for a in p if shape[a] != 1]
    return kept == sorted(kept)


def source_type(t: TensorType, p: Perm) -> TensorType:
    """The type of x2 where a value of type `t` is Transpose(x2, p) (a per-axis quantization axis follows)."""
    inv = invert(p)
    q = t.quant
    if q is not None and q.axis is not None:
        q = QuantParams(q.scale, q.zero_point, p[q.axis % len(p)])
    return TensorType(t.dtype, tuple(t.shape[inv[j]] for j in range(len(p))), q)


def push_cost(p: Perm, v: Value) -> tuple[int, int]:
    """(Transposes, bytes moved) of one Transpose of v by p."""
    if is_identity(p) or moves_only_unit_axes(p, v.shape):
        return 0, 0
    return 1, v.type.nbytes


def _axis(a: int, rank: int) -> int:
    return a + rank if a < 0 else a


# ---- how each op is rewritten for permuted inputs ---------------------------------------------------------

@dataclass
class Rewrite:
    """How a node computes from its data inputs permuted by the handler's `p` (output k then comes out
    permuted by out_perms[k])."""

    # Inputs in the tensor layout: carried values, constants (permuted to match) or other run-time inputs.
    data: tuple[int, ...]
    out_perms: list[Perm]
    attrs: dict[str, Any] = field(default_factory=dict)
    # Parameter inputs (axes, pads) replaced by new constants.
    consts: dict[int, np.ndarray] = field(default_factory=dict)
    # Inputs removed (set to absent), e.g. Pad's axes once the pads cover every axis.
    drop: tuple[int, ...] = ()


Handler = Callable[[Node, Perm], "Rewrite | None"]


def _present(node: Node) -> tuple[int, ...]:
    return tuple(i for i, v in enumerate(node.inputs) if v is not None)


def _elementwise(node: Node, p: Perm) -> Rewrite | None:
    """numpy-broadcasting elementwise ops (and unary activations): every input is permuted alike."""
    if any(v is not None and v.type.rank != len(p) for v in node.outputs):
        return None  # a constant of higher rank widens the result
    return Rewrite(_present(node), [p] * len(node.outputs))


def _concat(node: Node, p: Perm) -> Rewrite:
    return Rewrite(_present(node), [p], {"axis": p[_axis(int(node.attrs.get("axis", 1)), len(p))]})


def _split(node: Node, p: Perm) -> Rewrite:
    return Rewrite((0,), [p] * len(node.outputs), {"axis": p[_axis(int(node.attrs.get("axis", 0)), len(p))]})


def _slice(node: Node, p: Perm) -> Rewrite | None:
    """A Slice of Transpose(x2, p) as a Slice of x2 (its axes remapped), or None where its axes are not constant."""
    rank = len(p)
    starts, axes_in = node.input(1), node.input(3)
    if starts is None or starts.const is None or (axes_in is not None and axes_in.const is None):
        return None
    axes = axes_in.const.reshape(-1).tolist() if axes_in is not None else list(range(starts.const.size))
    return Rewrite((0,), [p], consts={3: np.array([p[_axis(int(a), rank)] for a in axes], starts.const.dtype)})


def _pad(node: Node, p: Perm) -> Rewrite | None:
    rank = len(p)
    if any(v is not None and v.const is None for v in node.inputs[1:]):
        return None
    before, after, _ = pad_params(node, rank)
    b2, a2 = [0] * rank, [0] * rank
    for k in range(rank):
        b2[p[k]], a2[p[k]] = before[k], after[k]
    return Rewrite((0,), [p], consts={1: np.array(b2 + a2, np.int64)}, drop=(3,))


def _dropped(p: Perm, removed: set[int]) -> Perm:
    """The permutation left when the axes `removed` (of the permuted value) are squeezed away."""
    kept = [k for k in range(len(p)) if k not in removed]
    order = sorted(p[k] for k in kept)
    return tuple(order.index(p[k]) for k in kept)


def _reduce(node: Node, p: Perm) -> Rewrite | None:
    axes = reduce_axes(node)
    if axes is None:  # noop_with_empty_axes: the output is the input
        return Rewrite((0,), [p])
    new_axes = sorted(p[a] for a in axes)
    rw = Rewrite((0,), [p if node.attrs.get("keepdims", 1) else _dropped(p, set(axes))])
    axes_in = node.input(1)
    if axes_in is not None:
        rw.consts[1] = np.array(new_axes, axes_in.dtype.np)
    return rw


def _arg(node: Node, p: Perm) -> Rewrite:
    a = _axis(int(node.attrs.get("axis", 0)), len(p))
    return Rewrite((0,), [p if node.attrs.get("keepdims", 1) else _dropped(p, {a})], {"axis": p[a]})


def _softmax(node: Node, p: Perm) -> Rewrite:
    return Rewrite((0,), [p], {"axis": p[_axis(int(node.attrs.get("axis", -1)), len(p))]})


def _quant(node: Node, p: Perm) -> Rewrite | None:
    scale = node.input(1)
    if scale is None or scale.type.numel == 1:
        return Rewrite((0,), [p])
    if node.attrs.get("block_size", 0):
        return None  # blocked scales are shaped like the tensor: not remapped (yet)
    return Rewrite((0,), [p], {"axis": p[_axis(int(node.attrs.get("axis", 1)), len(p))]})


def _resize(node: Node, p: Perm) -> Rewrite:
    """Resize names its axes (scales, sizes and roi are listed in that order): the axes are remapped, the
    lists stay, so each axis is resized in the same order as before."""
    rank = len(p)
    axes = [_axis(int(a), rank) for a in node.attrs.get("axes", range(rank))]
    return Rewrite((0,), [p], {"axes": [p[a] for a in axes]})


def _channels_last(node: Node, p: Perm) -> Rewrite | None:
    """A channels-first pool (or LRN, or ConvTranspose: its weights and bias are no data) of a channels-last value
    runs on it as it is (ops/conv.py CHANNELS_LAST; fold_qdq and fold_qdq16 keep it in the integer pools they make).
    Not with MaxPool's Indices (flat NCHW positions)."""
    rank = len(p)
    if p != (0, rank - 1, *range(1, rank - 1)) or channels_last(node) or any(o is not None for o in node.outputs[1:]):
        return None
    return Rewrite((0,), [p], {CHANNELS_LAST: 1})


_REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")

# Ops that carry axes (attributes or constant inputs): how each remaps them. Elementwise ops need no entry
# (registry: OpDef.expr is set). A new axis-carrying op is one line here.
_AXIS_OPS: dict[str, Handler] = {
    "Concat": _concat,  # axis
    "Split": _split,  # axis
    "Slice": _slice,  # axes (input 3, or attribute before opset 10)
    "Pad": _pad,  # pads (input 1, attribute before opset 11), axes dropped
    **dict.fromkeys(_REDUCE, _reduce),  # axes, keepdims
    "ArgMax": _arg, "ArgMin": _arg,  # axis, keepdims
    "Softmax": _softmax, "LogSoftmax": _softmax,  # axis (one axis only)
    "QuantizeLinear": _quant, "DequantizeLinear": _quant,  # per-axis: axis
    "Resize": _resize,  # axes (its scales, sizes and roi follow them)
    **dict.fromkeys(("MaxPool", "AveragePool", "GlobalAveragePool", "QMaxPool", "QAvgPool", "QMean", "LRN",
                     "ConvTranspose"), _channels_last),  # the layout: channels last
}


# Elementwise ops that the registry gives no `expr`: the integer lookup tables the TFLite frontend emits for
# TFLite's exact LOGISTIC, TANH, HARD_SWISH, ... (one element in, one out).
LOOKUP_TABLES = ("QLut", "Q16Lookup", "Q16Rsqrt", "Q16Sigmoid")


def handler(op: str) -> Handler | None:
    if op in _AXIS_OPS:
        return _AXIS_OPS[op]
    if op in LOOKUP_TABLES:
        return _elementwise
    if op == "Transpose":
        return None
    return _elementwise if registry.get(op).expr is not None else None


# ---- planning a push ------------------------------------------------------------------------------------

@dataclass
class _Carried:
    value: Value
    perm: Perm
    new: Value | None  # the value computed instead (known for sources; made when the region is rewritten)
    source: Node | None = None  # the Transpose that made `value`, when it is one of the pushed Transposes


@dataclass
class _Member:
    node: Node
    perm: Perm
    rewrite: Rewrite
    # input index -> how it is fed: "carried", "const", "scalar", ("reuse", Transpose node) or "new"
    feed: dict[int, Any]


@dataclass
class _Plan:
    carried: dict[int, _Carried]
    members: list[_Member]
    new_side: int
    before: tuple[int, int]
    after: tuple[int, int]
    # A Transpose is re-made for a reader inside the graph (not only for graph outputs).
    inner_copies: bool


def _inverse_transpose(v: Value, p: Perm, uses: dict[int, list[Node]]) -> Node | None:
    """An existing Transpose of v by p's inverse (reused instead of making another)."""
    inv = invert(p)
    return next((t for t in uses.get(id(v), []) if t.op == "Transpose" and perm_of(t) == inv), None)


def _feed(v: Value, p: Perm, carried: dict[int, _Carried], uses: dict[int, list[Node]],
          allow_side: bool) -> tuple[Any, _Carried | None] | None:
    """How a data input v of a member laid out by p is fed, and the Transpose it joins as a source, if any."""
    c = carried.get(id(v))
    if c is not None:
        return ("carried", None) if c.perm == p else None
    if v.type.rank > len(p):
        return None
    if v.is_const:
        return "const", None
    if v.type.numel == 1:
        return "scalar", None  # broadcasts the same in any layout
    if v.type.rank != len(p):
        return None
    pr = v.producer
    if pr is not None and pr.op == "Transpose" and perm_of(pr) == p and id(pr.inputs[0]) not in carried:
        return "carried", _Carried(v, p, pr.inputs[0], pr)
    t = _inverse_transpose(v, p, uses)
    if t is not None:
        return ("reuse", t), None
    return ("new", None) if allow_side else None


def _try_member(node: Node, carried: dict[int, _Carried], uses: dict[int, list[Node]],
                allow_side: bool) -> tuple[_Member, list[_Carried]] | None:
    perms = {carried[id(v)].perm for v in node.inputs if v is not None and id(v) in carried}
    if len(perms) != 1:
        return None
    (p,) = perms
    fn = handler(node.op)
    rw = fn(node, p) if fn is not None else None
    if rw is None:
        return None
    feed: dict[int, Any] = {}
    sources: list[_Carried] = []
    for i, v in enumerate(node.inputs):
        if v is None:
            continue
        if i not in rw.data:
            if id(v) in carried:
                return None  # a permuted value used as a parameter
            continue
        how = _feed(v, p, carried, uses, allow_side)
        if how is None:
            return None
        feed[i] = how[0]
        if how[1] is not None and all(s.value is not how[1].value for s in sources):
            sources.append(how[1])
    return _Member(node, p, rw, feed), sources


def plan_push(graph: Graph, start: Node, uses: dict[int, list[Node]], allow_side: bool) -> _Plan | None:
    y, x = start.outputs[0], start.inputs[0]
    assert y is not None and x is not None
    carried = {id(y): _Carried(y, perm_of(start), x, start)}
    members: dict[int, _Member] = {}
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    grew = True
    while grew:
        grew = False
        for n in graph.nodes:
            if id(n) in members or n.op == "Transpose" or not any(
                    v is not None and id(v) in carried for v in n.inputs):
                continue
            got = _try_member(n, carried, uses, allow_side)
            if got is None:
                continue
            m, sources = got
            members[id(n)] = m
            for s in sources:
                carried[id(s.value)] = s
            for o, q in zip(n.outputs, m.rewrite.out_perms, strict=True):
                if o is not None and not is_identity(q):
                    carried[id(o)] = _Carried(o, q, None)
            grew = True
    if not members and not any(t.op == "Transpose" for t in uses.get(id(y), [])):
        return None
    if any(c.source is not None and id(c.new) in carried for c in carried.values()):
        return None  # a joined Transpose reads a value of the region: leave that tangle alone
    if any(isinstance(how, tuple) and id(how[1].outputs[0]) in carried for m in members.values()
           for how in m.feed.values()):
        return None  # an involution's Transpose both joined and reused: the count would be wrong
    return _score(graph, carried, sorted(members.values(), key=lambda m: order[id(m.node)]), uses)


def _score(graph: Graph, carried: dict[int, _Carried], members: list[_Member],
           uses: dict[int, list[Node]]) -> _Plan:
    inside = {id(m.node) for m in members}
    before, after = [0, 0], [0, 0]

    def add(acc: list[int], c: tuple[int, int]) -> None:
        acc[0] += c[0]
        acc[1] += c[1]

    inner_copies = False
    for c in carried.values():
        # What the region computes instead of c.value (its type; the value itself is made later).
        src = c.new if c.new is not None else Value(c.value.name, source_type(c.value.type, c.perm))
        if c.source is not None:
            add(before, push_cost(c.perm, src))
        outside = [n for n in uses.get(id(c.value), []) if id(n) not in inside]
        for t in outside:
            if t.op == "Transpose":
                add(before, push_cost(perm_of(t), c.value))
                add(after, push_cost(compose(c.perm, perm_of(t)), src))
        if any(t.op != "Transpose" for t in outside):
            inner_copies = True
        if graph.is_output(c.value) or any(t.op != "Transpose" for t in outside):
            add(after, push_cost(c.perm, src))
    new_side = 0
    for m in members:
        for i, how in m.feed.items():
            if how == "new":
                v = m.node.inputs[i]
                assert v is not None
                new_side += 1
                add(after, push_cost(invert(m.perm), v))
    return _Plan(carried, members, new_side, (before[0], before[1]), (after[0], after[1]), inner_copies)


# ---- rewriting ------------------------------------------------------------------------------------------

def _transpose_node(graph: Graph, x: Value, p: Perm, out: Value | None = None) -> Node:
    """A new Transpose of x by p (output `out`, or a new value), not yet in the graph."""
    if out is None:
        out = graph.value(f"{x.name}_t", source_type(x.type, invert(p)))
    return Node("Transpose", graph.unique_name(f"transpose_{x.name}"), [x], [out], {"perm": list(p)})


def _insert_before(graph: Graph, node: Node, anchor: Node) -> None:
    graph.add_node(node, graph.nodes.index(anchor))


def _permuted_const(graph: Graph, v: Value, p: Perm) -> Value:
    c = np.asarray(v.const)
    if c.size == 1 and c.ndim <= len(p):
        return v  # broadcasts the same in any layout (and Clip's bounds stay scalars)
    full = c.reshape((1,) * (len(p) - c.ndim) + c.shape)
    return graph.constant(f"{v.name}_perm", np.ascontiguousarray(np.transpose(full, invert(p))))


def _rewrite_member(graph: Graph, m: _Member, carried: dict[int, _Carried]) -> None:
    n, p, rw = m.node, m.perm, m.rewrite
    for i, how in m.feed.items():
        v = n.inputs[i]
        assert v is not None
        if how == "carried":
            new = carried[id(v)].new
            assert new is not None
            n.inputs[i] = new
        elif how == "const":
            n.inputs[i] = _permuted_const(graph, v, p)
        elif how == "new":
            t = _transpose_node(graph, v, invert(p))
            _insert_before(graph, t, n)
            n.inputs[i] = t.outputs[0]
        elif isinstance(how, tuple):  # reuse an existing Transpose by the inverse; it must come first
            t = how[1]
            if graph.nodes.index(t) > graph.nodes.index(n):
                graph.remove_node(t)
                _insert_before(graph, t, n)
            n.inputs[i] = t.outputs[0]
    while len(n.inputs) <= max(rw.consts, default=-1):
        n.inputs.append(None)
    for i, arr in rw.consts.items():
        n.inputs[i] = graph.constant(f"{n.name}_in{i}", arr)
    for i in rw.drop:
        if i < len(n.inputs):
            n.inputs[i] = None
    while n.inputs and n.inputs[-1] is None:
        n.inputs.pop()
    n.attrs.update(rw.attrs)
    for k, (o, q) in enumerate(zip(n.outputs, rw.out_perms, strict=True)):
        if o is None or is_identity(q):
            continue
        new = graph.value(f"{o.name}_perm", source_type(o.type, q))
        new.producer = n
        n.outputs[k] = new
        carried[id(o)].new = new


def commit_push(graph: Graph, plan: _Plan) -> None:
    for m in plan.members:
        _rewrite_member(graph, m, plan.carried)
    uses = graph.consumers()
    for c in plan.carried.values():
        new = c.new
        assert new is not None
        keep = graph.is_output(c.value)
        for t in list(uses.get(id(c.value), [])):
            if t.op != "Transpose":
                keep = True
                continue
            t.attrs["perm"] = list(compose(c.perm, perm_of(t)))
            t.inputs[0] = new
        if c.source is not None:
            if not keep:
                graph.remove_node(c.source)
        elif keep:
            c.value.producer = None
            t = _transpose_node(graph, new, c.perm, c.value)
            assert new.producer is not None
            graph.add_node(t, graph.nodes.index(new.producer) + 1)


# ---- local clean-ups --------------------------------------------------------------------------------------

def simplify_transposes(graph: Graph) -> bool:
    """Folds, composes and removes Transposes; True if anything changed."""
    changed = False
    uses = graph.consumers()
    seen: dict[tuple[int, Perm], Value] = {}
    for t in list(graph.nodes):
        if t.op != "Transpose":
            continue
        x, y = t.inputs[0], t.outputs[0]
        assert x is not None and y is not None
        if not uses.get(id(y)) and not graph.is_output(y):
            graph.remove_node(t)
            changed = True
            continue
        p = perm_of(t)
        if x.is_const and not graph.is_output(y):
            y.const = np.ascontiguousarray(np.transpose(np.asarray(x.const), p))
            y.type = TensorType(DType.from_numpy(y.const.dtype), tuple(y.const.shape))
            y.producer = None
            graph.remove_node(t)
            changed = True
            continue
        inner = x.producer
        if inner is not None and inner.op == "Transpose":
            p = compose(perm_of(inner), p)
            x = inner.inputs[0]
            assert x is not None
            t.inputs[0] = x
            t.attrs["perm"] = list(p)
            changed = True
        if is_identity(p):
            graph.remove_node(t)
            graph.replace_uses(y, x)
            changed = True
            continue
        # Last, once t is what it stays: a twin found earlier must still be in the graph (one composed away to the
        # identity, as above, is not).
        twin = seen.setdefault((id(x), p), y)
        if twin is not y:  # the same Transpose of the same value again
            graph.remove_node(t)
            graph.replace_uses(y, twin)
            changed = True
    # `uses` goes stale as this runs, but only ever claims a use that is gone: a dead Transpose waits a round.
    return changed


def _worth(plan: _Plan) -> bool:
    """Fewer Transposes (or as many moving fewer bytes). At equal cost, Transposes move only all the way to
    the graph outputs (the model's layout is paid at its edges), and change nothing else: e.g. a QDQ model's
    DequantizeLinear -> Transpose -> QuantizeLinear stays the integer Transpose fold_qdq makes of it."""
    if plan.after != plan.before:
        return plan.after < plan.before
    return plan.new_side == 0 and bool(plan.members) and not plan.inner_copies


def _push_all(graph: Graph) -> bool:
    """Commits every profitable push, trying each Transpose once; True if one was made."""
    changed = False
    uses = graph.consumers()
    alive = {id(n) for n in graph.nodes}
    for t in list(graph.nodes):
        if t.op != "Transpose" or id(t) not in alive:
            continue
        best: _Plan | None = None
        for allow_side in (False, True):
            plan = plan_push(graph, t, uses, allow_side)
            if plan is not None and _worth(plan) and (best is None or plan.after < best.after):
                best = plan
        if best is not None:
            commit_push(graph, best)
            changed = True
            uses = graph.consumers()
            alive = {id(n) for n in graph.nodes}
    return changed


def _unit_moves_to_reshape(graph: Graph) -> None:
    for k, t in enumerate(graph.nodes):
        x, y = t.inputs[0] if t.inputs else None, t.outputs[0] if t.outputs else None
        if t.op != "Transpose" or x is None or y is None or not moves_only_unit_axes(perm_of(t), x.shape):
            continue
        if y.type.numel == 0:
            continue  # Reshape would read a 0 in the shape as "keep this dimension"
        shape = graph.constant(f"{y.name}_shape", np.array(y.shape, np.int64))
        node = Node("Reshape", t.name, [x, shape], [y], {})
        y.producer = node
        graph.nodes[k] = node


def optimize_transposes(graph: Graph) -> None:
    # Each push lowers (Transposes, bytes moved) or takes Transposes to the outputs, where they stop: this
    # ends; the bound is a safety net.
    for _ in range(4 * len(graph.nodes) + 16):
        changed = simplify_transposes(graph)
        if not _push_all(graph) and not changed:
            break
    _unit_moves_to_reshape(graph)


def _permuted_k(node: Node, src: np.ndarray) -> np.ndarray | None:
    """The constant weights of matmul `node` with their K index i moved to src[i], or None where it has none: a
    QMatMul's packed N x Kp (qlinear.py: K along each row, padded), a MatMul's K x N B, a Gemm's B (K x N, or N x K
    with transB)."""
    if node.op == "QMatMul":
        w = node.input(2)
        if w is None or w.const is None or node.input(1) is not None:
            return None
        out = w.const.copy()
        out[:, src] = w.const[:, :len(src)]
        return out
    w = node.input(1)
    if w is None or w.const is None or w.type.rank != 2:
        return None
    k_axis = 1 if node.op == "Gemm" and node.attrs.get("transB", 0) else 0
    if node.op == "Gemm" and node.attrs.get("transA", 0):
        return None
    out = np.empty_like(w.const)
    if k_axis:
        out[:, src] = w.const
    else:
        out[src] = w.const
    return out


def fold_flatten_transposes(graph: Graph) -> None:
    """A Transpose whose only reader flattens it (Reshape to [N, K]) for a matmul with constant weights (a TFLite
    model's NHWC flatten into FULLY_CONNECTED after layers that run NCHW: QMatMul, MatMul, Gemm) becomes an order of
    the weights' K axis instead: Reshape(Transpose(x)) @ W = Reshape(x) @ W', W' W's K rows permuted as the
    Transpose moves the flattened elements, so no Transpose runs. After fold_qdq, on the integer graph; a
    QMatMul's zero-point corrections (sums over K) do not change."""
    uses = graph.consumers()
    for t in list(graph.nodes):
        x, y = t.input(0), t.outputs[0] if t.outputs else None
        if t.op != "Transpose" or x is None or y is None or graph.is_output(y) or x.type.rank < 2:
            continue
        perm = perm_of(t)
        readers = uses.get(id(y), [])
        if perm[0] != 0 or len(readers) != 1 or readers[0].op != "Reshape" or readers[0].input(0) is not y:
            continue
        flat = readers[0].outputs[0]
        matmuls = uses.get(id(flat), [])
        if (flat is None or graph.is_output(flat) or flat.shape != (x.shape[0], x.type.numel // max(x.shape[0], 1))
                or len(matmuls) != 1 or matmuls[0].op not in ("QMatMul", "MatMul", "Gemm")
                or matmuls[0].input(0) is not flat):
            continue
        # element j of the flattened Transpose is element src[j] of the flattened x
        src = np.arange(flat.shape[1]).reshape(x.shape[1:]).transpose([a - 1 for a in perm[1:]]).ravel()
        weights = _permuted_k(matmuls[0], src)
        if weights is None:
            continue
        i = 2 if matmuls[0].op == "QMatMul" else 1
        w = matmuls[0].inputs[i]
        assert w is not None
        matmuls[0].inputs[i] = graph.constant(f"{w.name}_unpermuted", weights)
        readers[0].inputs[0] = x
        graph.remove_node(t)
