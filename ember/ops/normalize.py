"""LpNormalization and MeanVarianceNormalization (float16 / float32 / float64).

LpNormalization normalizes along one axis: a kernel (kernels/normalize.c) over (outer, n, inner).
MeanVarianceNormalization reduces over any set of axes: a loop nest generated for the static shape, the
kept dims outside, the reduced ones inside (merged where contiguous), three passes per output group
(mean, deviation, write), computed in float for half precision.
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter, compute_ctype
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, same_as_input
from ember.ops.matmul import float16_via_f32
from ember.ops.movement import contiguous_strides
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_FLOATS = (DType.FLOAT16, DType.FLOAT32, DType.FLOAT64)


def _require_float(node: Node) -> None:
    x = inp(node, 0)
    if x.dtype not in _FLOATS:
        raise UnsupportedOperatorError(node.op, node.name, f"element type {x.dtype.short} (float types only)")


# LpNormalization -------------------------------------------------------------------------------

def _lp_p(node: Node) -> int:
    p = int(node.attrs.get("p", 2))
    if p not in (1, 2):
        raise UnsupportedOperatorError(node.op, node.name, f"p={p} (the spec allows 1 and 2)")
    return p


def _lp_axis(node: Node) -> int:
    x = inp(node, 0)
    return norm_axis(node, int(node.attrs.get("axis", -1)), x.type.rank)


def _normalize_lp(node: Node, graph: Graph) -> None:
    del graph
    _require_float(node)
    _lp_p(node)
    _lp_axis(node)


def _lower_lp(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    if x.type.numel == 0:
        return
    a = _lp_axis(node)
    fn = "ember_lpnorm_f64" if x.dtype is DType.FLOAT64 else "ember_lpnorm_f32"
    k.call(fn, k.out(0), k.inp(0), math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:]), _lp_p(node))


def _eval_lp(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a = _lp_axis(node)
    norm = np.sum(np.abs(x), axis=a, keepdims=True) if _lp_p(node) == 1 else np.sqrt(np.sum(x * x, axis=a,
                                                                                             keepdims=True))
    with np.errstate(all="ignore"):
        return [np.where(norm == 0, 0, x / norm).astype(x.dtype)]


# Attributes: axis (-1), p (2; 1 or 2). A zero norm gives zeros.
register(float16_via_f32(OpDef(
    "LpNormalization", lower=_lower_lp, normalize=_normalize_lp, infer=same_as_input, evaluate=_eval_lp,
    kernels=("ember_lpnorm_f32", "ember_lpnorm_f64"),
)))


# MeanVarianceNormalization ---------------------------------------------------------------------

_MVN_EPS = 1e-9  # the ONNX function body's epsilon, added to the standard deviation


def _mvn_axes(node: Node) -> tuple[int, ...]:
    x = inp(node, 0)
    axes = node.attrs.get("axes", [0, 2, 3])
    out = sorted({norm_axis(node, int(a), x.type.rank) for a in axes})
    if len(out) != len(axes):
        raise ShapeError(f"node '{node.name}' ({node.op}): axes {list(axes)} repeat an axis")
    return tuple(out)


def _dims(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(size, stride) of the kept and the reduced dims, adjacent dims of one kind merged."""
    merged: list[tuple[int, int, bool]] = []
    for d, (size, st) in enumerate(zip(shape, contiguous_strides(shape), strict=True)):
        if size == 1:
            continue
        red = d in axes
        if merged and merged[-1][2] == red and merged[-1][1] == st * size:
            merged[-1] = (merged[-1][0] * size, st, red)
        else:
            merged.append((size, st, red))
    return [(s, t) for s, t, r in merged if not r], [(s, t) for s, t, r in merged if r]


def _loops(k: KernelEmitter, dims: list[tuple[int, int]], prefix: str) -> str:
    terms = []
    for j, (size, stride) in enumerate(dims):
        k.w.open(f"for (size_t {prefix}{j} = 0; {prefix}{j} < {size}; ++{prefix}{j})")
        terms.append(f"{prefix}{j} * {stride}")
    return " + ".join(terms) or "0"


def _lower_mvn(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    if x.type.numel == 0:
        return
    kept, red = _dims(x.shape, _mvn_axes(node))
    count = math.prod(s for s, _ in red)
    ct = compute_ctype(x.dtype)
    half = x.dtype is DType.FLOAT16
    if half:
        k.need("ember_f16")
    sqrt = "ember_sqrt_f64" if x.dtype is DType.FLOAT64 else "ember_sqrtf"
    k.need(sqrt)
    src, dst = k.inp(0), k.out(0)

    def load(off: str) -> str:
        return f"ember_f16_to_f32({src}[b + {off}])" if half else f"{src}[b + {off}]"

    w = k.w
    with w.block():
        base = _loops(k, kept, "i")
        w.line(f"const size_t b = {base};")
        w.line(f"{ct} mu = 0, var = 0, inv;")
        off = _loops(k, red, "r")
        w.line(f"mu += {load(off)};")
        for _ in red:
            w.close()
        w.line(f"mu /= ({ct}){count};")
        off = _loops(k, red, "r")
        w.line(f"const {ct} d = {load(off)} - mu;")
        w.line("var += d * d;")
        for _ in red:
            w.close()
        w.line(f"inv = ({ct})1 / ({sqrt}(var / ({ct}){count}) + ({ct}){_MVN_EPS!r});")
        off = _loops(k, red, "r")
        value = f"({load(off)} - mu) * inv"
        w.line(f"{dst}[b + {off}] = {f'ember_f32_to_f16({value})' if half else value};")
        for _ in red:
            w.close()
        for _ in kept:
            w.close()


def _normalize_mvn(node: Node, graph: Graph) -> None:
    del graph
    _require_float(node)
    _mvn_axes(node)


def _eval_mvn(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    axes = _mvn_axes(node)
    mu = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True))
    return [((x - mu) / (std + _MVN_EPS)).astype(x.dtype)]


def _infer_mvn(node: Node) -> list[TensorType | None]:
    return same_as_input(node)


# Attribute: axes ([0, 2, 3]). Y = (X - mean) / (std + 1e-9) over the axes (the ONNX function's form).
register(OpDef(
    "MeanVarianceNormalization", lower=_lower_mvn, normalize=_normalize_mvn, infer=_infer_mvn,
    evaluate=_eval_mvn, kernels=("ember_f16", "ember_sqrtf", "ember_sqrt_f64"),
))
