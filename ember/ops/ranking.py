"""Selection by rank along one axis: TopK and Hardmax (kernels/indexing.c).

TopK returns each row's K best values and their int64 indices, best first; equal values keep the lower
index first (the spec's tiebreak) and NaN ranks above every number (onnxruntime's order). K is a
compile-time constant: it sets the output shape. Hardmax marks each row's first maximum with one.
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import const_ints, inp, same_as_input, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_TOPK_TYPES = tuple(d for d in DType if d is not DType.BOOL)
_HARDMAX_TYPES = (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16)


def _rows(shape: tuple[int, ...], a: int) -> tuple[int, int, int]:
    """(outer, n, inner): the axis `a` of `shape` as outer * inner rows of n elements at stride inner."""
    return math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:])


# TopK ----------------------------------------------------------------------------------------
def _topk_params(node: Node) -> tuple[int, int]:
    """(axis, K), checked against X."""
    x = inp(node, 0)
    a = norm_axis(node, int(node.attrs.get("axis", -1)), x.type.rank)
    ks = const_ints(node, 1)
    if ks is None or len(ks) != 1:
        raise ShapeError(f"node '{node.name}' (TopK): K must be one compile-time integer")
    if not 0 <= ks[0] <= x.shape[a]:
        raise ShapeError(f"node '{node.name}' (TopK): K {ks[0]} outside [0, {x.shape[a]}] (axis {a})")
    return a, ks[0]


def _infer_topk(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    a, k = _topk_params(node)
    shape = [*x.shape[:a], k, *x.shape[a + 1:]]
    return [typed(x.dtype, shape), typed(DType.INT64, shape)]


def _topk_scratch(node: Node) -> int:
    """The kernel keeps its ranking in the indices: scratch for them when that output is not used."""
    out = node.outputs[1] if len(node.outputs) > 1 else None
    if out is not None:
        return 0
    x = inp(node, 0)
    a, k = _topk_params(node)
    return 8 * x.type.numel // max(x.shape[a], 1) * k


def _lower_topk(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    if x.dtype not in _TOPK_TYPES:
        raise UnsupportedOperatorError("TopK", node.name, f"element type {x.dtype.short}")
    a, kk = _topk_params(node)
    outer, n, inner = _rows(x.shape, a)
    if outer * inner * kk == 0:
        return
    if x.type.numel > 2**31 - 1:
        raise ShapeError(f"node '{node.name}' (TopK): tensor too large for 32-bit offsets")
    values = node.outputs[0]
    indices = node.outputs[1] if len(node.outputs) > 1 else None
    idx = k.out(1) if indices is not None else k.scratch("int64_t")
    k.call(f"ember_topk_{x.dtype.suffix}", k.out(0) if values is not None else "0", idx, k.inp(0), outer, n, inner,
           kk, int(node.attrs.get("largest", 1)))


def _eval_topk(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a, k = _topk_params(node)
    # Stable sorts keep equal values in index order; numpy sorts NaN last, but NaN ranks first when largest.
    if x.dtype.kind == "f":
        xf = x.astype(np.float64)
        order = np.argsort(-xf if node.attrs.get("largest", 1) else xf, axis=a, kind="stable")
        if node.attrs.get("largest", 1):
            nan = np.isnan(np.take_along_axis(xf, order, axis=a))
            order = np.take_along_axis(order, np.argsort(~nan, axis=a, kind="stable"), axis=a)
    else:
        order = np.argsort(~x if node.attrs.get("largest", 1) else x, axis=a, kind="stable")
    idx = np.take(order, np.arange(k), axis=a).astype(np.int64)
    return [np.ascontiguousarray(np.take_along_axis(x, idx, axis=a)), np.ascontiguousarray(idx)]


# Inputs: (X, K (compile-time int64, one value)). Attributes axis (-1), largest (1), sorted (1: ember
# always returns the k best in order, which sorted=0 allows too). Outputs: Values, Indices (int64).
register(OpDef("TopK", lower=_lower_topk, shape_inputs=(1,), infer=_infer_topk, scratch=_topk_scratch,
               evaluate=_eval_topk, kernels=tuple(f"ember_topk_{d.suffix}" for d in _TOPK_TYPES)))


# Hardmax -------------------------------------------------------------------------------------
def _lower_hardmax(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    if x.dtype not in _HARDMAX_TYPES:
        raise UnsupportedOperatorError("Hardmax", node.name, f"element type {x.dtype.short}")
    a = norm_axis(node, int(node.attrs.get("axis", -1)), x.type.rank)
    if x.type.numel:
        k.call(f"ember_hardmax_{x.dtype.suffix}", k.out(0), k.inp(0), *_rows(x.shape, a))


def _eval_hardmax(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a = norm_axis(node, int(node.attrs.get("axis", -1)), x.ndim)
    best = np.expand_dims(np.argmax(x, axis=a), a)
    return [(np.arange(x.shape[a]).reshape([-1 if d == a else 1 for d in range(x.ndim)]) == best).astype(x.dtype)]


# Attribute axis (-1). Opsets before 13 coerce X to 2-D around the axis: frontends/onnx/ops.py rewrites that
# as a last-axis Hardmax between two reshapes (as for Softmax).
register(OpDef("Hardmax", lower=_lower_hardmax, infer=same_as_input, evaluate=_eval_hardmax,
               kernels=tuple(f"ember_hardmax_{d.suffix}" for d in _HARDMAX_TYPES)))
