"""Elementwise arithmetic, math, comparison and logic ops: each one C expression, fusable."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from ember.codegen.elementwise import emit_chain
from ember.codegen.emitter import ExprHandler, KernelEmitter, compute_ctype
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops import registry
from ember.ops.epilogue import Epilogue
from ember.ops.infer import broadcast_infer, inp, present_inputs, same_as_input
from ember.ops.opdef import InferFn, Int8, OpDef
from ember.ops.registry import register
from ember.ops.storage_cast import storage_cast_array, storage_convert

FLOATS = frozenset({DType.FLOAT32, DType.FLOAT64, DType.FLOAT16})
INTEGERS = frozenset({DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.UINT8, DType.UINT16, DType.UINT32,
                      DType.UINT64})


def require_dtypes(infer: InferFn, allowed: frozenset[DType], same: bool = False) -> InferFn:
    """`infer`, after a one-line error naming the node when an input's type is not one the op's spec allows
    (or, with `same`, when the inputs' types differ: C would silently convert them)."""

    def checked(node: Node) -> list[TensorType | None]:
        types = [v.dtype for v in present_inputs(node)]
        for t in types:
            if t not in allowed:
                names = ", ".join(sorted(d.short for d in allowed))
                raise UnsupportedOperatorError(node.op, node.name, f"{t.short} input (allowed: {names})")
        if same and len(set(types)) > 1:
            raise UnsupportedOperatorError(node.op, node.name, "inputs of different types "
                                           f"({', '.join(t.short for t in types)})")
        return infer(node)

    return checked


def _in_dtype(n: Node, i: int) -> DType:
    v = n.inputs[i]
    assert v is not None
    return v.dtype


def numpy_fn(fn: Callable[..., np.ndarray], keep_dtype: bool = True):
    """An `evaluate` applying a numpy function to the present inputs, cast back to input 0's dtype."""

    def evaluate(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
        args = [np.asarray(x) for x in xs if x is not None]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            y = np.asarray(fn(*args))
        return [y.astype(args[0].dtype) if keep_dtype else y]

    return evaluate


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":  # integer division truncates toward zero
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) ^ (b < 0))).astype(q.dtype)
    return np.divide(a, b)


def _binary(name: str, fmt: str, fn: Callable[..., np.ndarray], logical: bool = False, **facts) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fmt.format(a=xs[0], b=xs[1])

    return register(OpDef(name, expr=expr, inplace=True, infer=broadcast_infer(DType.BOOL if logical else 0),
                          evaluate=numpy_fn(fn, keep_dtype=not logical), **facts))


def _unary(name: str, fn, np_fn: Callable[..., np.ndarray], allowed: frozenset[DType] | None = None,
           **facts) -> OpDef:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fn(h, xs[0])

    infer = same_as_input if allowed is None else require_dtypes(same_as_input, allowed)
    return register(OpDef(name, expr=expr, inplace=True, infer=infer, evaluate=numpy_fn(np_fn), **facts))


# Inputs: (A, B), broadcast together (numpy rules).
_binary("Add", "({a} + {b})", np.add, int8=Int8.ARITH)
_binary("Sub", "({a} - {b})", np.subtract, int8=Int8.ARITH)
_binary("Mul", "({a} * {b})", np.multiply, int8=Int8.ARITH)
# C integer division truncates toward zero, which is what ONNX Div specifies for integers.
_binary("Div", "({a} / {b})", _div)
_binary("Equal", "({a} == {b})", np.equal, logical=True)
_binary("Less", "({a} < {b})", np.less, logical=True)
_binary("Greater", "({a} > {b})", np.greater, logical=True)
_binary("LessOrEqual", "({a} <= {b})", np.less_equal, logical=True)
_binary("GreaterOrEqual", "({a} >= {b})", np.greater_equal, logical=True)
_binary("And", "({a} && {b})", np.logical_and, logical=True)
_binary("Or", "({a} || {b})", np.logical_or, logical=True)


# ---- unary math -------------------------------------------------------------------------------
def _abs(h: ExprHandler, a: str) -> str:
    if not h.dtype.is_signed:
        return a
    if h.dtype is DType.FLOAT64:
        return f"({a} < 0.0 ? -{a} : {a})"
    if h.dtype.is_float:
        return h.fn("fabs", a)
    return f"({a} < 0 ? -{a} : {a})"


def erf(x: np.ndarray) -> np.ndarray:
    """Elementwise erf in double precision, rounded to x's type."""
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


_unary("Sqrt", lambda h, a: h.fn("sqrt", a), np.sqrt, int8=Int8.LUT)
_unary("Exp", lambda h, a: h.fn("exp", a), np.exp, int8=Int8.LUT)
_unary("Log", lambda h, a: h.fn("log", a), np.log)
_unary("Sin", lambda h, a: h.fn("sin", a), np.sin)
_unary("Cos", lambda h, a: h.fn("cos", a), np.cos)
_unary("Erf", lambda h, a: h.fn("erf", a), erf, int8=Int8.LUT)
_unary("Floor", lambda h, a: h.fn("floor", a) if h.dtype.is_float else a, np.floor)
_unary("Ceil", lambda h, a: h.fn("ceil", a) if h.dtype.is_float else a, np.ceil)
# ONNX Round is half to even (numpy.round), which is what rintf does in the default rounding mode.
_unary("Round", lambda h, a: h.fn("rint", a) if h.dtype.is_float else a, np.round)
_unary("Reciprocal", lambda h, a: f"({h.lit(1)} / {a})", np.reciprocal)
_unary("Neg", lambda h, a: f"(-{a})", np.negative, int8=Int8.LUT)
_unary("Abs", _abs, np.absolute, int8=Int8.LUT)
_unary("Not", lambda h, a: f"(!{a})", np.logical_not)
# Float only (opset 22 types, bfloat16 aside); double is computed through ember's float math like Sin/Cos.
# A table in int8 for the ones defined on the whole real line (NaN outside the domain would fill it with 0s).
_unary("Tan", lambda h, a: h.fn("tan", a), np.tan, FLOATS)
_unary("Asin", lambda h, a: h.fn("asin", a), np.arcsin, FLOATS)
_unary("Acos", lambda h, a: h.fn("acos", a), np.arccos, FLOATS)
_unary("Atan", lambda h, a: h.fn("atan", a), np.arctan, FLOATS, int8=Int8.LUT)
_unary("Sinh", lambda h, a: h.fn("sinh", a), np.sinh, FLOATS, int8=Int8.LUT)
_unary("Cosh", lambda h, a: h.fn("cosh", a), np.cosh, FLOATS, int8=Int8.LUT)
_unary("Asinh", lambda h, a: h.fn("asinh", a), np.arcsinh, FLOATS, int8=Int8.LUT)
_unary("Acosh", lambda h, a: h.fn("acosh", a), np.arccosh, FLOATS)
_unary("Atanh", lambda h, a: h.fn("atanh", a), np.arctanh, FLOATS)


def _sign(h: ExprHandler, a: str) -> str:
    one, zero = h.lit(1), h.lit(0)
    if not h.dtype.is_signed:
        return f"({a} > {zero} ? {one} : {zero})"
    # Zeros and NaN are their own sign (numpy.sign keeps NaN).
    return f"({a} > {zero} ? {one} : {a} < {zero} ? {h.lit(-1)} : {a})"


_unary("Sign", _sign, np.sign, FLOATS | INTEGERS, int8=Int8.LUT)


# ---- IsInf / IsNaN: float in, bool out ------------------------------------------------------------
def _isinf(h: ExprHandler, xs: list[str], n: Node) -> str:
    inf = h.lit(math.inf, DType.FLOAT64 if _in_dtype(n, 0) is DType.FLOAT64 else DType.FLOAT32)
    tests = []
    if int(n.attrs.get("detect_positive", 1)):
        tests.append(f"{xs[0]} == {inf}")
    if int(n.attrs.get("detect_negative", 1)):
        tests.append(f"{xs[0]} == -{inf}")
    return f"({' || '.join(tests)})" if tests else "0"


def _infer_bool_like_input(node: Node) -> list[TensorType | None]:
    return [TensorType(DType.BOOL, inp(node, 0).shape)]


def _eval_isinf(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    pos, neg = int(node.attrs.get("detect_positive", 1)), int(node.attrs.get("detect_negative", 1))
    return [(np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))]


# Attributes detect_positive, detect_negative (both 1 by default): which infinities give true.
register(OpDef("IsInf", expr=_isinf, infer=require_dtypes(_infer_bool_like_input, FLOATS), evaluate=_eval_isinf))
register(OpDef("IsNaN", expr=lambda h, xs, n: f"({xs[0]} != {xs[0]})",
               infer=require_dtypes(_infer_bool_like_input, FLOATS),
               evaluate=lambda n, xs: [np.isnan(np.asarray(xs[0]))]))


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


# The output has the base's type and the broadcast shape.
register(OpDef("Pow", expr=_pow, inplace=True, infer=broadcast_infer(0), evaluate=numpy_fn(np.power)))


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


def _fold(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], mean: bool = False):
    def variadic(*xs: np.ndarray) -> np.ndarray:
        acc = xs[0].copy()
        for x in xs[1:]:
            acc = fn(acc, x)
        return acc / len(xs) if mean else acc

    return variadic


# Variadic: any number of inputs broadcast together.
register(OpDef("Max", expr=_minmax(">"), inplace=True, infer=broadcast_infer(0), evaluate=numpy_fn(_fold(np.maximum))))
register(OpDef("Min", expr=_minmax("<"), inplace=True, infer=broadcast_infer(0), evaluate=numpy_fn(_fold(np.minimum))))
register(OpDef("Sum", expr=_sum, inplace=True, infer=broadcast_infer(0), evaluate=numpy_fn(_fold(np.add))))
register(OpDef("Mean", expr=_mean, inplace=True, infer=broadcast_infer(0),
               evaluate=numpy_fn(_fold(np.add, mean=True))))


# ---- Where / Clip --------------------------------------------------------------------------------
def _where(h: ExprHandler, xs: list[str], n: Node) -> str:
    return f"({xs[0]} ? {xs[1]} : {xs[2]})"


# Inputs: (condition, X, Y), broadcast together; typed like X.
register(OpDef("Where", expr=_where, inplace=True, infer=broadcast_infer(1),
               evaluate=lambda n, xs: [np.where(xs[0], xs[1], xs[2]).astype(np.asarray(xs[1]).dtype)]))


def _clip(h: ExprHandler, xs: list[str], n: Node) -> str:
    lo_s = xs[1] if len(xs) > 1 and xs[1] else None
    hi_s = xs[2] if len(xs) > 2 and xs[2] else None
    y = xs[0]
    # numpy.clip order: max first, then min, so min > max gives max; NaN passes through both.
    if lo_s is not None:
        y = h.let(f"({y} < {lo_s} ? {lo_s} : {y})")
    if hi_s is not None:
        y = f"({y} > {hi_s} ? {hi_s} : {y})"
    return y


def _eval_clip(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    lo = xs[1] if len(xs) > 1 else None
    hi = xs[2] if len(xs) > 2 else None
    return [x.copy() if lo is None and hi is None else np.clip(x, lo, hi).astype(x.dtype)]


# Inputs: (X, min (optional scalar), max (optional scalar)).
def _clip_epilogue(n: Node) -> Epilogue | None:
    """Clip as an epilogue: only with compile-time bounds (absent ones are infinite)."""
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


register(OpDef("Clip", expr=_clip, inplace=True, infer=same_as_input, evaluate=_eval_clip, epilogue=_clip_epilogue,
               int8=Int8.ACTIVATION))


# ---- Cast -----------------------------------------------------------------------------------
def convert(h: ExprHandler, x: str, src: DType, dst: DType, saturate: bool = True, round_mode: str = "up") -> str:
    """`x` (in `src`'s compute type) converted to `dst`'s compute type, with no undefined behaviour.
    saturate, round_mode: Cast's attributes for the float8 targets (ember/ops/storage_cast.py)."""
    if src.is_storage_only or dst.is_storage_only:
        return storage_convert(h, x, src, dst, saturate, round_mode, convert)
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
    return convert(h, xs[0], _in_dtype(n, 0), h.dtype, bool(n.attrs.get("saturate", 1)),
                   str(n.attrs.get("round_mode", "up")))


def _infer_cast(node: Node) -> list[TensorType | None]:
    return [TensorType(node.attrs["to"], inp(node, 0).shape)]


def _eval_cast(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        x, to = np.asarray(xs[0]), node.attrs["to"]
        if to.is_storage_only or DType.from_numpy(x.dtype).is_storage_only:
            return [storage_cast_array(x, to, bool(node.attrs.get("saturate", 1)),
                                       str(node.attrs.get("round_mode", "up")))]
        return [x.astype(to.np)]


# Attribute `to`: the DType of the output; saturate (1) and round_mode ("up"): the float8 targets' overflow
# and float8 e8m0's rounding (ember/ops/storage_cast.py).
register(OpDef("Cast", expr=_cast, inplace=True, infer=_infer_cast, evaluate=_eval_cast, data={"storage_types": True}))


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


def _infer_fused(node: Node) -> list[TensorType | None]:
    from ember.ops.registry import get

    last = node.attrs["_steps"][-1]  # the chain's last step computes the output
    infer = get(last.op).infer
    assert infer is not None
    return infer(last)[:1]


register(OpDef("FusedElementwise", lower=_lower_fused, inplace=True, infer=_infer_fused))
