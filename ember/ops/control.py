"""Control flow: If (two branches, the one taken chosen at run time) and Loop (a body run up to a trip count
while its condition holds; ONNX Scan reaches the IR as a Loop, rewritten by the frontend).

Canonical forms (see ember.ir.graph.Node for how subgraphs capture outer values):

If:   inputs (cond, *captures); subgraphs "then" and "else", each with one formal input per capture and one
      output per node output. Both branches give the same static types. `cond` is one bool element.
Loop: inputs (M, cond, *initial, *captures), M (int64, one element) and cond (bool) optional; attribute
      `carried` = len(initial); subgraph "body" with formals (iteration, cond, *carried, *captures) and
      outputs (cond, *carried, *scan elements); node outputs (*final, *scan outputs). A scan output stacks its
      element of every iteration along a new first axis, so its length must be static: M a compile-time
      constant and no early exit (the body's condition passes through, or is constant true).

The C: an If is `if (cond) { then } else { else }`, each branch computing its outputs straight into the
If's (memory/planner.py binds them); a Loop is a `for` whose body reads the loop-carried values from the
node's final-value buffers and writes new ones to its own, copied back after each iteration.
"""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.opdef import OpDef, SubgraphBinding
from ember.ops.registry import get, register

# Ops that pass their input on unchanged: a Loop condition routed through them still passes through.
_PASS_THROUGH = ("Identity", "Copy")


def _same(a: TensorType, b: TensorType) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape


def _scalar_of(node: Node, i: int, dtype: DType, what: str) -> Value | None:
    v = node.input(i)
    if v is not None and (v.dtype != dtype or v.type.numel != 1):
        raise ShapeError(f"node '{node.name}' ({node.op}): {what} must be one {dtype.short} element, not {v.type}")
    return v


# ----------------------------------------------------------------------------- captures
def _reads(graph: Graph, v: Value) -> bool:
    return any(x is v for n in graph.nodes for x in n.inputs) or any(o is v for o in graph.outputs)


def _simplify_captures(node: Node, first_input: int, first_formal: int) -> None:
    """Captured values that became constants move into the subgraphs as constants; captures no subgraph
    reads are dropped (so nothing keeps an outer value alive across the node for nothing)."""
    subs = list(node.subgraphs.values())
    k = len(node.inputs) - 1
    while k >= first_input:
        outer = node.inputs[k]
        j = first_formal + k - first_input
        assert outer is not None
        if outer.is_const:
            for g in subs:
                formal = g.inputs[j]
                g.replace_uses(formal, Value(g.unique_name(formal.name), outer.type, None, outer.const))
        if outer.is_const or not any(_reads(g, g.inputs[j]) for g in subs):
            del node.inputs[k]
            for g in subs:
                del g.inputs[j]
        k -= 1


def _flops(graph: Graph) -> int:
    total = 0
    for n in graph.nodes:
        count = get(n.op).flops
        total += count(n) if count is not None else 0
    return total


# ----------------------------------------------------------------------------- If
def _branches(node: Node) -> tuple[Graph, Graph]:
    return node.subgraphs["then"], node.subgraphs["else"]


def _infer_if(node: Node) -> list[TensorType | None]:
    _scalar_of(node, 0, DType.BOOL, "the condition")
    then_g, else_g = _branches(node)
    for key, g in (("then", then_g), ("else", else_g)):
        if len(g.outputs) != len(node.outputs):
            raise ShapeError(f"node '{node.name}' (If): the {key} branch gives {len(g.outputs)} outputs, the node "
                             f"has {len(node.outputs)}")
        if len(g.inputs) != len(node.inputs) - 1:
            raise ShapeError(f"node '{node.name}' (If): the {key} branch binds {len(g.inputs)} captured values, "
                             f"the node passes {len(node.inputs) - 1}")
    for k, (t, e) in enumerate(zip(then_g.outputs, else_g.outputs, strict=True)):
        if not _same(t.type, e.type):
            raise ShapeError(f"node '{node.name}' (If): output {k} is {t.type} in the then branch but {e.type} in "
                             "the else branch (ember compiles both branches with static types)")
    return [v.type for v in then_g.outputs]


def _if_bindings(node: Node) -> list[SubgraphBinding]:
    return [SubgraphBinding(g, list(node.inputs[1:]), list(node.outputs)) for g in _branches(node)]


def _inline(node: Node, graph: Graph, branch: Graph, bound: list[Value | None]) -> None:
    """Replaces `node` in `graph` with the nodes of `branch`, its formals bound to `bound`."""
    binding = {id(f): v for f, v in zip(branch.inputs, bound, strict=True)}
    index = graph.nodes.index(node)
    graph.remove_node(node)
    for n in reversed(branch.nodes):
        n.inputs = [binding.get(id(v), v) if v is not None else None for v in n.inputs]
        graph.add_node(n, index)
    for out, res in zip(node.outputs, branch.outputs, strict=True):
        if out is not None:
            graph.replace_uses(out, binding.get(id(res), res))


def _simplify_if(node: Node, graph: Graph) -> None:
    cond = node.inputs[0]
    assert cond is not None
    if cond.is_const:
        then_g, else_g = _branches(node)
        _inline(node, graph, then_g if bool(np.asarray(cond.const).reshape(-1)[0]) else else_g, node.inputs[1:])
        return
    _simplify_captures(node, 1, 0)


def _lower_if(node: Node, k: KernelEmitter) -> None:
    then_g, else_g = _branches(node)
    k.w.open(f"if ({k.inp(0, 'uint8_t')}[0])")
    _emit_branch(node, then_g, k)
    k.w.close()
    k.w.open("else")
    _emit_branch(node, else_g, k)
    k.w.close()


def _emit_branch(node: Node, branch: Graph, k: KernelEmitter) -> None:
    k.emit_graph(branch)
    for out, res in zip(node.outputs, branch.outputs, strict=True):
        if out is not None and out.type.nbytes and not k.same_buffer(out, res):  # a formal, constant or repeat
            k.call("ember_copy", k.ptr(out, "uint8_t"), k.ptr(res, "uint8_t"), f"{out.type.nbytes}u")


register(OpDef("If", infer=_infer_if, lower=_lower_if, kernels=("ember_copy",), bindings=_if_bindings,
               simplify=_simplify_if, flops=lambda n: max(_flops(g) for g in _branches(n))))


# ----------------------------------------------------------------------------- Loop
def _parts(node: Node) -> tuple[Graph, int, int]:
    """The body, the number of loop-carried values and of scan outputs."""
    body = node.subgraphs["body"]
    carried = int(node.attrs["carried"])
    return body, carried, len(body.outputs) - 1 - carried


def always_continues(node: Node) -> bool:
    """Whether the Loop runs exactly M iterations: its condition starts true and the body passes it on."""
    body = node.subgraphs["body"]
    cond = node.input(1)
    if cond is not None and not (cond.is_const and bool(np.asarray(cond.const).all())):
        return False
    v = body.outputs[0]
    while v.producer is not None and v.producer.op in _PASS_THROUGH and v.producer in body.nodes:
        src = v.producer.inputs[0]
        assert src is not None
        v = src
    return v is body.inputs[1] or (v.is_const and bool(np.asarray(v.const).all()))


def trip_count(node: Node) -> int | None:
    """M when it is a compile-time constant (negative counts run no iteration), else None."""
    m = node.input(0)
    return max(int(np.asarray(m.const).reshape(-1)[0]), 0) if m is not None and m.is_const else None


def _infer_loop(node: Node) -> list[TensorType | None]:
    body, n, scans = _parts(node)
    m = _scalar_of(node, 0, DType.INT64, "the trip count M")
    cond = _scalar_of(node, 1, DType.BOOL, "the condition")
    if m is None and cond is None:
        raise UnsupportedOperatorError("Loop", node.name, "it has neither a trip count nor a condition (it would "
                                       "never end)")
    if scans < 0 or len(body.inputs) != len(node.inputs) or len(node.outputs) != n + scans:
        raise ShapeError(f"node '{node.name}' (Loop): the body's inputs and outputs do not match the node's "
                         f"({len(body.inputs)} body inputs for {len(node.inputs)} node inputs, {len(body.outputs)} "
                         f"body outputs for {len(node.outputs)} node outputs)")
    c = body.outputs[0]
    if c.dtype != DType.BOOL or c.type.numel != 1:
        raise ShapeError(f"node '{node.name}' (Loop): the body's condition output must be one bool, not {c.type}")
    for k in range(n):
        initial, formal, out = node.inputs[2 + k], body.inputs[2 + k], body.outputs[1 + k]
        assert initial is not None
        if not (_same(initial.type, formal.type) and _same(formal.type, out.type)):
            raise ShapeError(f"node '{node.name}' (Loop): loop-carried value {k} ('{formal.name}') is {initial.type} "
                             f"going in but {out.type} coming out of the body (ember compiles static shapes only)")
    types: list[TensorType | None] = [body.inputs[2 + k].type for k in range(n)]
    if scans:
        count = trip_count(node)
        if count is None:
            raise UnsupportedOperatorError("Loop", node.name, "its scan outputs need a compile-time trip count M "
                                           "(their static length; freeze the input with --const)")
        if not always_continues(node):
            raise UnsupportedOperatorError("Loop", node.name, "an early exit (a condition computed at run time) "
                                           "with scan outputs: their length would depend on the data")
        types += [TensorType(e.dtype, (count, *e.shape)) for e in body.outputs[1 + n:]]
    return types


def _loop_bindings(node: Node) -> list[SubgraphBinding]:
    body, n, _ = _parts(node)
    inputs: list[Value | None] = [None, None, *node.outputs[:n], *node.inputs[2 + n:]]
    return [SubgraphBinding(body, inputs, [None] * len(body.outputs))]


def _simplify_loop(node: Node, graph: Graph) -> None:
    _, n, _ = _parts(node)
    _simplify_captures(node, 2 + n, 2 + n)


def _scalar_expr(k: KernelEmitter, v: Value | None, default: str, ctype: str) -> str:
    if v is None:
        return default
    if v.is_const:
        return literal(np.asarray(v.const).reshape(-1)[0].item(), v.dtype)
    return f"{k.ptr(v, ctype)}[0]"


def _lower_loop(node: Node, k: KernelEmitter) -> None:
    body, n, _ = _parts(node)
    it, go = k.fresh("loop_iteration"), k.fresh("loop_continue")
    k.w.open()
    for initial, final in zip(node.inputs[2:2 + n], node.outputs[:n], strict=True):
        assert initial is not None and final is not None
        if final.type.nbytes and not k.same_buffer(initial, final):
            k.call("ember_copy", k.ptr(final, "uint8_t"), k.ptr(initial, "uint8_t"), f"{final.type.nbytes}u")
    k.line(f"uint8_t {go} = (uint8_t)({_scalar_expr(k, node.input(1), '1', 'uint8_t')} != 0);")
    bound = ""
    if node.input(0) is not None:
        count = k.fresh("loop_count")
        k.line(f"const int64_t {count} = {_scalar_expr(k, node.input(0), '0', 'int64_t')};")
        bound = f" && {it} < {count}"
    k.w.open(f"for (int64_t {it} = 0; {go}{bound}; ++{it})")
    k.line(f"{k.ptr(body.inputs[0], 'int64_t')}[0] = {it};")
    k.line(f"{k.ptr(body.inputs[1], 'uint8_t')}[0] = {go};")
    k.emit_graph(body)
    k.line(f"{go} = (uint8_t)({k.ptr(body.outputs[0], 'uint8_t')}[0] != 0);")
    for res, final in zip(body.outputs[1:1 + n], node.outputs[:n], strict=True):
        assert final is not None
        if final.type.nbytes:
            k.call("ember_copy", k.ptr(final, "uint8_t"), k.ptr(res, "uint8_t"), f"{final.type.nbytes}u")
    for res, out in zip(body.outputs[1 + n:], node.outputs[n:], strict=True):
        assert out is not None
        if res.type.nbytes:
            k.call("ember_copy", f"{k.ptr(out, 'uint8_t')} + (size_t){it} * {res.type.nbytes}u",
                   k.ptr(res, "uint8_t"), f"{res.type.nbytes}u")
    k.w.close()
    k.w.close()


# FLOPs: the body's times the trip count (once when M is only known at run time).
register(OpDef("Loop", infer=_infer_loop, lower=_lower_loop, kernels=("ember_copy",), bindings=_loop_bindings,
               simplify=_simplify_loop, flops=lambda n: _flops(n.subgraphs["body"]) * (trip_count(n) or 1)))
