"""Elementwise arithmetic, math, comparison and logic ops: each one C expression, fusable."""

from __future__ import annotations

from ember.codegen.emitter import ExprHandler
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def _binary(name: str, fmt: str, tests: tuple[str, ...] = (), **kw) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fmt.format(a=xs[0], b=xs[1])

    return register(OpDef(name, onnx=(name,), expr=expr, inplace=True,
                          tests=tests or (rf"test_{name.lower()}(_.*)?$",), **kw))


_binary("Add", "({a} + {b})")
_binary("Sub", "({a} - {b})")
_binary("Mul", "({a} * {b})")
_binary("Div", "({a} / {b})")
_binary("Equal", "({a} == {b})", tests=(r"test_equal(_.*)?$",))
_binary("Less", "({a} < {b})", tests=(r"test_less(_bcast|_int|_uint|$|_expanded)",))
_binary("Greater", "({a} > {b})", tests=(r"test_greater(_bcast|_int|_uint|$|_expanded)",))
_binary("LessOrEqual", "({a} <= {b})", tests=(r"test_less_equal.*",))
_binary("GreaterOrEqual", "({a} >= {b})", tests=(r"test_greater_equal.*",))
_binary("And", "({a} && {b})")
_binary("Or", "({a} || {b})")
