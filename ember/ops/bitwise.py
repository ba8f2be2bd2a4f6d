"""Mod, BitShift and the bitwise and boolean-xor ops: each one C expression, fusable.

Integer C has undefined behaviour where ONNX defines a result (division by zero, INT_MIN % -1, shifts by
a negative amount or by the width or more, left shifts into the sign bit); every expression here guards
or reroutes those cases to the result numpy and the ONNX reference give.
"""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import ExprHandler
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops.elementwise import FLOATS, INTEGERS, numpy_fn, require_dtypes
from ember.ops.infer import broadcast_infer
from ember.ops.opdef import OpDef
from ember.ops.registry import register


# ---- Mod ------------------------------------------------------------------------------------------
def _fmod_flag(n: Node) -> int:
    fmod = int(n.attrs.get("fmod", 0))
    if fmod not in (0, 1):
        raise UnsupportedOperatorError("Mod", n.name, f"fmod={fmod} (ONNX allows 0 or 1)")
    return fmod


def _mod(h: ExprHandler, xs: list[str], n: Node) -> str:
    fmod = _fmod_flag(n)
    a, b = xs
    dt = h.dtype
    if dt.is_float:
        fn = "ember_fmod" if dt is DType.FLOAT64 else "ember_fmodf"
        h.need(fn)
        if fmod:  # C fmod: the sign of the dividend
            return f"{fn}({a}, {b})"
        # Floored: the sign of the divisor. A zero remainder is a zero of the divisor's sign, a nonzero one
        # of the other sign moves by b (so x mod +-inf is x or +-inf, as the spec says).
        r = h.let(f"{fn}({a}, {b})")
        zero = h.lit(0)
        return (f"({r} != {zero} ? ((({r} < {zero}) != ({b} < {zero})) ? {r} + {b} : {r}) : "
                f"({b} < {zero} ? {h.lit(-0.0)} : {zero}))")
    # numpy gives 0 for x % 0 and for INT_MIN % -1 (both undefined in C); x % -1 is 0 for every x.
    guard = f"({b} == 0 || {b} == -1)" if dt.is_signed else f"({b} == 0)"
    r = h.let(f"({guard} ? 0 : {a} % {b})")
    if fmod or not dt.is_signed:
        return r
    # |r| < |b| and r, b differ in sign: r + b cannot overflow.
    return f"(({r} != 0 && (({r} < 0) != ({b} < 0))) ? {r} + {b} : {r})"


def _eval_mod(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    fn = np.fmod if _fmod_flag(node) else np.mod
    return numpy_fn(fn)(node, xs)


# Inputs (A, B) of one type, broadcast together; attribute fmod (0: floored like Python, 1: truncated like C;
# integer and float types alike).
register(OpDef("Mod", expr=_mod, inplace=True, evaluate=_eval_mod,
               infer=require_dtypes(broadcast_infer(0), FLOATS | INTEGERS, same=True)))


# ---- BitShift -------------------------------------------------------------------------------------
def _direction(n: Node) -> str:
    d = n.attrs.get("direction")
    if d not in ("LEFT", "RIGHT"):
        raise UnsupportedOperatorError("BitShift", n.name, f"direction {d!r} (must be 'LEFT' or 'RIGHT')")
    return d


def _bitshift(h: ExprHandler, xs: list[str], n: Node) -> str:
    a, b = xs
    bits = h.dtype.itemsize * 8
    signed = h.dtype.is_signed
    # An amount below 0 or of the width or more shifts every bit out: 0, or -1 for a negative X shifted right.
    out_of_range = f"({b} < 0 || {b} >= {bits})" if signed else f"({b} >= {bits})"
    if _direction(n) == "LEFT":
        # Shifted as unsigned (a signed left shift into the sign bit is undefined), then truncated to T.
        wide = "uint64_t" if bits == 64 else "uint32_t"
        return f"({out_of_range} ? 0 : ({h.ctype})(({wide}){a} << {b}))"
    if not signed:
        return f"({out_of_range} ? 0 : {a} >> {b})"
    # Arithmetic shift without implementation-defined behaviour: a negative X is shifted as its complement.
    neg = f"{a} < 0"
    return f"({out_of_range} ? ({neg} ? -1 : 0) : ({neg} ? ~(~{a} >> {b}) : {a} >> {b}))"


def _eval_bitshift(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = np.broadcast_arrays(np.asarray(xs[0]), np.asarray(xs[1]))
    bits = a.dtype.itemsize * 8
    bad = (b < 0) | (b >= bits)
    amount = np.where(bad, 0, b).astype(a.dtype)
    if _direction(node) == "LEFT":
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        y = np.left_shift(a.view(unsigned) if a.dtype != unsigned else a, amount.astype(unsigned)).view(a.dtype)
        return [np.where(bad, 0, y).astype(a.dtype)]
    fill = np.where(a < 0, -1, 0) if a.dtype.kind == "i" else 0
    return [np.where(bad, fill, np.right_shift(a, amount)).astype(a.dtype)]


# Inputs (X, Y) of one integer type, broadcast together; attribute direction 'LEFT' or 'RIGHT'.
register(OpDef("BitShift", expr=_bitshift, inplace=True, evaluate=_eval_bitshift,
               infer=require_dtypes(broadcast_infer(0), INTEGERS, same=True)))


# ---- bitwise and boolean xor ----------------------------------------------------------------------
def _bitwise(name: str, fmt: str, fn) -> None:
    def expr(h: ExprHandler, xs: list[str], n: Node) -> str:
        return fmt.format(a=xs[0], b=xs[1] if len(xs) > 1 else "")

    register(OpDef(name, expr=expr, inplace=True, evaluate=numpy_fn(fn),
                   infer=require_dtypes(broadcast_infer(0), INTEGERS, same=True)))


# Inputs (A, B) of one integer type, broadcast together (BitwiseNot: X alone).
_bitwise("BitwiseAnd", "({a} & {b})", np.bitwise_and)
_bitwise("BitwiseOr", "({a} | {b})", np.bitwise_or)
_bitwise("BitwiseXor", "({a} ^ {b})", np.bitwise_xor)
_bitwise("BitwiseNot", "(~{a})", np.invert)

# Inputs (A, B) bool, broadcast together.
register(OpDef("Xor", expr=lambda h, xs, n: f"(!{xs[0]} != !{xs[1]})", inplace=True,
               evaluate=numpy_fn(np.logical_xor, keep_dtype=False),
               infer=require_dtypes(broadcast_infer(DType.BOOL), frozenset({DType.BOOL}), same=True)))
