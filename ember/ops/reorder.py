"""Reordering along axes, with no run-time indices: TopK and Hardmax rank values along one axis
(kernels/indexing.c); DepthToSpace and SpaceToDepth move blocks between channels and space (one strided
copy each); EyeLike writes an identity matrix. Run-time indices are indexing.py's.

TopK returns each row's K best values and their int64 indices, best first; equal values keep the lower
index first (the spec's tiebreak) and NaN ranks above every number (onnxruntime's order). A compile-time K
sets the output shape; a K read at run time gives outputs of the axis' length and a count output
(ops/counted.py). Hardmax marks each row's first maximum with one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import const_ints, inp, same_as_input, typed
from ember.ops.movement import contiguous_strides, emit_strided, fill_value_table
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_TOPK_TYPES = tuple(d for d in DType if d is not DType.BOOL and not d.is_storage_only)
_HARDMAX_TYPES = (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16)


def _rows(shape: tuple[int, ...], a: int) -> tuple[int, int, int]:
    """(outer, n, inner): the axis `a` of `shape` as outer * inner rows of n elements at stride inner."""
    return math.prod(shape[:a]), shape[a], math.prod(shape[a + 1:])


# TopK ----------------------------------------------------------------------------------------
_COUNT = TensorType(DType.INT64, ())


def _run_time_k(node: Node) -> bool:
    """K is read when the bundle runs (the frontend gave the node a count output: ops/counted.py)."""
    return len(node.outputs) == 3


def _topk_params(node: Node) -> tuple[int, int]:
    """(axis, K), checked against X; for a run-time K, the outputs' static bound along the axis (its length)."""
    x = inp(node, 0)
    a = norm_axis(node, int(node.attrs.get("axis", -1)), x.type.rank)
    if _run_time_k(node):
        k_in = inp(node, 1)
        if k_in.dtype is not DType.INT64 or k_in.type.numel != 1:
            raise ShapeError(f"node '{node.name}' (TopK): K must be one int64, not {k_in.type}")
        return a, x.shape[a]
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
    return [typed(x.dtype, shape), typed(DType.INT64, shape), *([_COUNT] if _run_time_k(node) else [])]


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
    a, bound = _topk_params(node)
    outer, n, inner = _rows(x.shape, a)
    kk: int | str = bound
    if _run_time_k(node):
        # K out of [0, n] is an error in onnxruntime; a bundle cannot fail, so it clamps (the count says so).
        kv = k.fresh("k")
        k.line(f"int64_t {kv} = *{k.inp(1, 'int64_t')};")
        k.line(f"{kv} = {kv} < 0 ? 0 : {kv} > {n} ? {n} : {kv};")
        k.line(f"*{k.out(2, 'int64_t')} = {kv};")
        kk = f"(int32_t){kv}"
    if outer * inner * bound == 0:
        return
    if x.type.numel > 2**31 - 1:
        raise ShapeError(f"node '{node.name}' (TopK): tensor too large for 32-bit offsets")
    values = node.outputs[0]
    indices = node.outputs[1] if len(node.outputs) > 1 else None
    idx = k.out(1) if indices is not None else k.scratch("int64_t")
    k.call(f"ember_topk_{x.dtype.suffix}", k.out(0) if values is not None else "0", idx, k.inp(0), outer, n, inner,
           kk, bound, int(node.attrs.get("largest", 1)))


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
    values = np.take_along_axis(x, idx, axis=a)
    if not _run_time_k(node):
        return [np.ascontiguousarray(values), np.ascontiguousarray(idx)]
    count = min(max(int(np.asarray(xs[1]).reshape(-1)[0]), 0), k)
    keep = (np.arange(k) < count).reshape([k if i == a else 1 for i in range(x.ndim)])
    return [np.where(keep, values, 0).astype(x.dtype), np.where(keep, idx, 0), np.asarray(count, np.int64)]


def _counted_topk(node: Node) -> dict[int, int]:
    a = _topk_params(node)[0]
    return {0: a, 1: a} if _run_time_k(node) else {}


# Inputs: (X, K (one int64)). Attributes axis (-1), largest (1), sorted (1: ember always returns the k best in
# order, which sorted=0 allows too). Outputs: Values, Indices (int64), and, when K is known only at run time
# (the frontend adds it then), the count: Values and Indices then have the axis' length and K valid entries.
register(OpDef("TopK", lower=_lower_topk, infer=_infer_topk, scratch=_topk_scratch, counted=_counted_topk,
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


# DepthToSpace / SpaceToDepth ------------------------------------------------------------------
def _block_view(node: Node, shape: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """(6-D view of the input, permutation, output shape): both ops are one transpose of a view."""
    bs = int(node.attrs.get("blocksize", 0))
    mode = node.attrs.get("mode", "DCR")
    if len(shape) != 4 or bs < 1 or mode not in ("DCR", "CRD"):
        raise ShapeError(f"node '{node.name}' ({node.op}): needs a 4-D input, blocksize >= 1 and mode DCR or CRD "
                         f"(got {list(shape)}, {bs}, {mode})")
    n, c, h, w = shape
    if node.op == "DepthToSpace":
        if c % (bs * bs):
            raise ShapeError(f"node '{node.name}' (DepthToSpace): {c} channels not divisible by blocksize^2")
        if mode == "DCR":
            return [n, bs, bs, c // bs // bs, h, w], [0, 3, 4, 1, 5, 2], [n, c // bs // bs, h * bs, w * bs]
        return [n, c // bs // bs, bs, bs, h, w], [0, 1, 4, 2, 5, 3], [n, c // bs // bs, h * bs, w * bs]
    if h % bs or w % bs:
        raise ShapeError(f"node '{node.name}' (SpaceToDepth): {h}x{w} not divisible by blocksize {bs}")
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    return [n, c, h // bs, bs, w // bs, bs], perm, [n, c * bs * bs, h // bs, w // bs]


def _lower_block(node: Node, k: KernelEmitter) -> None:
    x, y = inp(node, 0), node.outputs[0]
    assert y is not None
    view, perm, _ = _block_view(node, x.shape)
    st = contiguous_strides(view)
    out_view = [view[p] for p in perm]
    emit_strided(k, y, 0, x, 0, out_view, contiguous_strides(out_view), [st[p] for p in perm])


def _eval_block(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    view, perm, out = _block_view(node, x.shape)
    return [np.ascontiguousarray(np.transpose(x.reshape(view), perm).reshape(out))]


# Input NCHW. Attributes blocksize (required), mode (DCR or CRD; DCR by default, as opset 1 had it).
for _name in ("DepthToSpace", "SpaceToDepth"):
    register(OpDef(_name, lower=_lower_block, kernels=("ember_strided_copy", "ember_copy"), evaluate=_eval_block,
                   infer=lambda n: [typed(inp(n, 0).dtype, _block_view(n, inp(n, 0).shape)[2])]))


# EyeLike -------------------------------------------------------------------------------------
def _eye_type(node: Node) -> TensorType:
    x = inp(node, 0)
    if x.type.rank != 2:
        raise ShapeError(f"node '{node.name}' (EyeLike): input of rank {x.type.rank}, must be 2-D")
    dtype = node.attrs.get("dtype", x.dtype)
    if not isinstance(dtype, DType):
        raise ShapeError(f"node '{node.name}' (EyeLike): dtype {dtype} is not an element type")
    return typed(dtype, x.shape)


def _lower_eyelike(node: Node, k: KernelEmitter) -> None:
    t = _eye_type(node)
    if t.numel:
        kk = int(node.attrs.get("k", 0))
        kk = min(max(kk, -t.shape[0]), t.shape[1])  # beyond these the matrix is all zeros; keeps C in int32
        k.call("ember_eye", k.out(0), fill_value_table(k, 1, t.dtype), t.shape[0], t.shape[1], kk, t.dtype.itemsize)


# Input: any 2-D tensor (only its shape is read). Attributes k (0: the main diagonal), dtype (the input's).
register(OpDef("EyeLike", lower=_lower_eyelike, kernels=("ember_eye",), infer=lambda n: [_eye_type(n)],
               evaluate=lambda n, xs: [np.eye(*_eye_type(n).shape, k=int(n.attrs.get("k", 0)),
                                              dtype=_eye_type(n).dtype.np)]))

