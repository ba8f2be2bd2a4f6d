"""Operators over other subgraphs: IF (onto ember's If) and WHILE (onto its Loop).

A TFLite subgraph reads only its own inputs and constants, so each becomes an IR Graph whose formal inputs
are exactly the operator's operands (loader.run_subgraph converts its operators into it). WHILE's condition
subgraph runs twice: once before the loop on the initial values (in the enclosing graph), and at the end of
each body on the new values, which is the Loop body's condition output.
"""

from __future__ import annotations

from ember.frontends.tflite.context import OpContext, add_node
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value


def _formals(graph: Graph, values: list[Value]) -> list[Value]:
    return [Value(graph.unique_name(v.name), v.type) for v in values]


def _node(ctx: OpContext, op: str, inputs: list[Value | None], n_out: int, attrs: dict,
          subgraphs: dict[str, Graph]) -> list[Value]:
    outs = [ctx.graph.value(f"{ctx.label}_out{k}", TensorType(DType.FLOAT32, ())) for k in range(n_out)]
    node = Node(op, ctx.graph.unique_name(ctx.label), inputs, list(outs), attrs, subgraphs)
    add_node(ctx.graph, node)
    return outs


def _cond(ctx: OpContext, v: Value) -> Value:
    """TFLite's condition tensor (bool of any one-element shape) as one bool element."""
    if v.dtype is not DType.BOOL:
        v = ctx.emit("Cast", [v], {"to": DType.BOOL})
    return v


def if_(ctx: OpContext) -> None:
    o = ctx.options
    operands = [ctx.raw(i) for i in range(1, len(ctx.inputs))]
    branches = {}
    for key, index in (("then", o.ThenSubgraphIndex()), ("else", o.ElseSubgraphIndex())):
        g = ctx.graph.subgraph(f"{ctx.label}_{key}")
        g.inputs = _formals(g, operands)
        g.outputs = ctx.b.run_subgraph(index, g, list(g.inputs), f"{ctx.label} {key} branch")
        branches[key] = g
    outs = _node(ctx, "If", [_cond(ctx, ctx.raw(0)), *operands], len(ctx.outputs), {}, branches)
    for i, v in enumerate(outs):
        ctx.output(i, v)


def while_(ctx: OpContext) -> None:
    o = ctx.options
    init = [ctx.raw(i) for i in range(len(ctx.inputs))]
    cond_index, body_index = o.CondSubgraphIndex(), o.BodySubgraphIndex()
    first = ctx.b.run_subgraph(cond_index, ctx.graph, init, f"{ctx.label} condition")[0]
    body = ctx.graph.subgraph(f"{ctx.label}_body")
    carried = _formals(body, init)
    body.inputs = [Value(body.unique_name("iteration"), TensorType(DType.INT64, ())),
                   Value(body.unique_name("cond"), TensorType(DType.BOOL, ())), *carried]
    new = ctx.b.run_subgraph(body_index, body, carried, f"{ctx.label} body")
    again = ctx.b.run_subgraph(cond_index, body, new, f"{ctx.label} condition")[0]
    if again.dtype is not DType.BOOL:
        raise ctx.unsupported(f"its condition subgraph gives {again.dtype.short}, not bool")
    body.outputs = [again, *new]
    outs = _node(ctx, "Loop", [None, _cond(ctx, first), *init], len(init), {"carried": len(init)},
                 {"body": body})
    for i, v in enumerate(outs):
        ctx.output(i, v)


# CALL_ONCE (which initializes resource variables, which stateless bundles do not have) is not here: the
# loader refuses it by name like any other builtin without a converter.
CONVERTERS = {"IF": if_, "WHILE": while_}
