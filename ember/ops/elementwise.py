"""Elementwise arithmetic, math, comparison and logic ops: each one C expression, fusable."""

from __future__ import annotations

import math

from ember.codegen.elementwise import emit_chain
from ember.codegen.emitter import ExprHandler, KernelEmitter, compute_ctype
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops import registry
from ember.ops.epilogue import Epilogue
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _in_dtype(n: Node, i: int) -> DType:
    v = n.inputs[i]
    assert v is not None
    return v.dtype


def _binary(name: str, fmt: str, tests: tuple[str, ...] = (), **kw) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fmt.format(a=xs[0], b=xs[1])

    return register(OpDef(name, onnx=(name,), expr=expr, inplace=True,
                          tests=tests or (rf"test_{name.lower()}(_.*)?$",), **kw))


def _unary(name: str, fn, tests: tuple[str, ...] = (), **kw) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fn(h, xs[0])

    return register(OpDef(name, onnx=(name,), expr=expr, inplace=True,
                          tests=tests or (rf"test_{name.lower()}(_example)?$",), **kw))


_binary("Add", "({a} + {b})", int8=Int8.ARITH)
_binary("Sub", "({a} - {b})", int8=Int8.ARITH)
_binary("Mul", "({a} * {b})", int8=Int8.ARITH)
# C integer division truncates toward zero, which is what ONNX Div specifies for integers.
_binary("Div", "({a} / {b})")
_binary("Equal", "({a} == {b})", tests=(r"test_equal(_.*)?$",))
_binary("Less", "({a} < {b})", tests=(r"test_less(_bcast|_int|_uint|$|_expanded)",))
_binary("Greater", "({a} > {b})", tests=(r"test_greater(_bcast|_int|_uint|$|_expanded)",))
_binary("LessOrEqual", "({a} <= {b})", tests=(r"test_less_equal.*",))
_binary("GreaterOrEqual", "({a} >= {b})", tests=(r"test_greater_equal.*",))
_binary("And", "({a} && {b})")
_binary("Or", "({a} || {b})")


# ---- unary math -------------------------------------------------------------------------------
def _abs(h: ExprHandler, a: str) -> str:
    if not h.dtype.is_signed:
        return a
    if h.dtype is DType.FLOAT64:
        return f"({a} < 0.0 ? -{a} : {a})"
    if h.dtype.is_float:
        return h.fn("fabs", a)
    return f"({a} < 0 ? -{a} : {a})"


_unary("Sqrt", lambda h, a: h.fn("sqrt", a), int8=Int8.LUT)
_unary("Exp", lambda h, a: h.fn("exp", a), int8=Int8.LUT)
_unary("Log", lambda h, a: h.fn("log", a))
_unary("Sin", lambda h, a: h.fn("sin", a))
_unary("Cos", lambda h, a: h.fn("cos", a))
_unary("Erf", lambda h, a: h.fn("erf", a), tests=(r"test_erf$",), int8=Int8.LUT)
_unary("Floor", lambda h, a: h.fn("floor", a) if h.dtype.is_float else a)
_unary("Ceil", lambda h, a: h.fn("ceil", a) if h.dtype.is_float else a)
# ONNX Round is half to even (numpy.round), which is what rintf does in the default rounding mode.
_unary("Round", lambda h, a: h.fn("rint", a) if h.dtype.is_float else a, tests=(r"test_round$",))
_unary("Reciprocal", lambda h, a: f"({h.lit(1)} / {a})")
_unary("Neg", lambda h, a: f"(-{a})", int8=Int8.LUT)
_unary("Abs", _abs, tests=(r"test_abs$",), int8=Int8.LUT)
_unary("Not", lambda h, a: f"(!{a})", tests=(r"test_not_\dd$",))


# ---- Pow: the base's type is the output's; the exponent may be any numeric type ------------------
def _pow(h: ExprHandler, xs: list[str], n: Node) -> str:
    a, b = xs
    et = _in_dtype(n, 1)
    if h.dtype.is_float:
        return h.fn("pow", a, f"(float)({b})")
    if not et.is_float:
        # Integer power by squaring in 64-bit unsigned arithmetic: wraps instead of overflowing (UB).
        h.need("ember_ipow")
        return f"ember_ipow((int64_t)({a}), (int64_t)({b}))"
    h.need("ember_powf")
    return f"ember_powf((float)({a}), (float)({b}))"


register(OpDef("Pow", onnx=("Pow",), expr=_pow, inplace=True, tests=(r"test_pow(_.*)?$",)))


# ---- variadic Min/Max/Sum/Mean (numpy broadcasting over all inputs) ----------------------------
def _minmax(op: str):
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        acc = xs[0]
        for x in xs[1:]:
            acc = h.let(acc)
            if h.dtype.is_float:
                # numpy's minimum/maximum propagate NaN from either side.
                acc = f"(({acc} != {acc} || {acc} {op} {x}) ? {acc} : {x})"
            else:
                acc = f"({acc} {op} {x} ? {acc} : {x})"
        return acc

    return expr


def _sum(h: ExprHandler, xs: list[str], n: Node) -> str:
    return "(" + " + ".join(xs) + ")"


def _mean(h: ExprHandler, xs: list[str], n: Node) -> str:
    return f"({_sum(h, xs, n)} / {h.lit(len(xs))})"


register(OpDef("Max", onnx=("Max",), expr=_minmax(">"), inplace=True, tests=(r"test_max_(?!pool).*",)))
register(OpDef("Min", onnx=("Min",), expr=_minmax("<"), inplace=True, tests=(r"test_min_.*",)))
register(OpDef("Sum", onnx=("Sum",), expr=_sum, inplace=True, tests=(r"test_sum_.*",)))
register(OpDef("Mean", onnx=("Mean",), expr=_mean, inplace=True, tests=(r"test_mean_.*",)))


# ---- Where / Clip --------------------------------------------------------------------------------
def _where(h: ExprHandler, xs: list[str], n: Node) -> str:
    return f"({xs[0]} ? {xs[1]} : {xs[2]})"


register(OpDef("Where", onnx=("Where",), expr=_where, inplace=True, tests=(r"test_where_.*",)))


def _clip(h: ExprHandler, xs: list[str], n: Node) -> str:
    if n.version < 11:
        lo = n.attrs.get("min", float("-inf"))
        hi = n.attrs.get("max", float("inf"))
        lo_s: str | None = h.lit(lo)
        hi_s: str | None = h.lit(hi)
    else:
        lo_s = xs[1] if len(xs) > 1 and xs[1] else None
        hi_s = xs[2] if len(xs) > 2 and xs[2] else None
    y = xs[0]
    # numpy.clip order: max first, then min, so min > max gives max; NaN passes through both.
    if lo_s is not None:
        y = h.let(f"({y} < {lo_s} ? {lo_s} : {y})")
    if hi_s is not None:
        y = f"({y} > {hi_s} ? {hi_s} : {y})"
    return y


def _clip_epilogue(n: Node) -> Epilogue | None:
    """Clip as an epilogue: only with compile-time bounds (absent ones are infinite)."""
    if "min" in n.attrs or "max" in n.attrs:  # attribute form, before opset 11
        return Epilogue("Clip", float(n.attrs.get("min", -math.inf)), float(n.attrs.get("max", math.inf)))
    bounds = []
    for i, default in ((1, -math.inf), (2, math.inf)):
        v = n.input(i)
        if v is None:
            bounds.append(default)
        elif v.is_const and v.type.numel == 1:
            bounds.append(float(v.const.reshape(-1)[0]))
        else:
            return None  # run-time bounds
    return Epilogue("Clip", bounds[0], bounds[1])


register(OpDef("Clip", onnx=("Clip",), expr=_clip, inplace=True, tests=(r"test_clip(_.*)?$",),
               epilogue=_clip_epilogue, int8=Int8.ACTIVATION))


# ---- Cast / CastLike -------------------------------------------------------------------------------
def convert(h: ExprHandler, x: str, src: DType, dst: DType) -> str:
    """`x` (in `src`'s compute type) converted to `dst`'s compute type, with no undefined behaviour."""
    if dst is DType.BOOL:
        return f"({x} != 0)"
    ct = compute_ctype(dst)
    if dst.is_float or not src.is_float:
        return f"(({ct})({x}))"
    # Float -> int: C leaves out-of-range and NaN conversions undefined; saturate them (NaN -> 0).
    bits = dst.itemsize * 8
    sct = compute_ctype(src)
    if dst.is_signed:
        lo_v, hi_v, lo_i, hi_i = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    else:
        lo_v, hi_v, lo_i, hi_i = -1.0, 2.0**bits, 0, 2**bits - 1
    lo = h.lit(lo_v, DType.FLOAT64 if sct == "double" else DType.FLOAT32)
    hi = h.lit(hi_v, DType.FLOAT64 if sct == "double" else DType.FLOAT32)
    return (f"({x} != {x} ? ({ct})0 : {x} <= {lo} ? {h.lit(lo_i, dst)} : {x} >= {hi} ? {h.lit(hi_i, dst)} : "
            f"({ct})({x}))")


def _cast(h: ExprHandler, xs: list[str], n: Node) -> str:
    return convert(h, xs[0], _in_dtype(n, 0), h.dtype)


register(OpDef("Cast", onnx=("Cast",), expr=_cast, inplace=True, tests=(r"test_cast_.*",)))
def _castlike_to_cast(node: Node, graph) -> None:
    # Only the element type of `target_type` matters: rewriting to Cast frees its buffer, and keeps
    # the node foldable by the reference implementation if its input later becomes constant.
    out = node.outputs[0]
    assert out is not None
    node.op = "Cast"
    node.inputs = node.inputs[:1]
    node.attrs = {**node.attrs, "to": out.dtype.onnx}


register(OpDef("CastLike", onnx=("CastLike",), expr=_cast, inplace=True, normalize=_castlike_to_cast,
               tests=(r"test_castlike_.*",)))


# ---- internal: a fused elementwise chain (made by passes/fuse_elementwise.py) --------------------
def _lower_fused(node: Node, k: KernelEmitter) -> None:
    out = node.outputs[0]
    assert out is not None
    steps = []
    for step in node.attrs["_steps"]:
        expr = registry.get(step.op).expr
        assert expr is not None, f"{step.op} in a fused chain has no C expression"
        steps.append((step, expr))
    emit_chain(k.ctx, steps, node.inputs, out)


register(OpDef("FusedElementwise", lower=_lower_fused, inplace=True))
