"""Operators whose output size depends on values: NonZero, Compress, Unique, NonMaxSuppression.

Each writes the static upper bound of its outputs and, as its last output, an int64 scalar count of the
valid entries (ember/ops/counted.py explains how the count reaches the bundle's user). Canonical forms:
- NonZero (X) -> (Y int64 [rank, numel], count): the coordinates of the first `count` nonzero elements.
- Compress (X, condition) attribute axis (absent: X flattened) -> (Y, count): Y's axis has min(n, len(cond))
  entries, the kept slices first.
- Unique (X) attributes axis (absent: flattened), sorted (1) -> (Y, indices, inverse_indices, counts,
  count): Y and the per-unique outputs have one entry per input slice, the unique ones first.
- NonMaxSuppression (boxes, scores, max_output_boxes_per_class: compile-time, iou_threshold,
  score_threshold) attribute center_point_box -> (selected_indices int64 [B*C*min(N, max), 3], count).
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, scalar, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_COUNT = TensorType(DType.INT64, ())
_ELEMENT_SUFFIX = ("f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8")


def _suffix(node: Node, dtype: DType) -> str:
    if dtype.suffix not in _ELEMENT_SUFFIX:
        raise UnsupportedOperatorError(node.op, node.name, f"element type {dtype.short}")
    return dtype.suffix


# ---- NonZero -------------------------------------------------------------------------------------

def _infer_nonzero(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    return [typed(DType.INT64, (max(x.type.rank, 1), x.type.numel)), _COUNT]


def _lower_nonzero(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    fn = f"ember_nonzero_{_suffix(node, x.dtype)}"
    dims = k.table(list(x.shape) or [1], DType.INT64)
    k.call(fn, k.out(0), k.out(1), k.inp(0), x.type.numel, max(x.type.rank, 1), dims)


def _eval_nonzero(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    found = np.array(np.nonzero(x.reshape(x.shape or (1,))), np.int64)
    y = np.zeros((max(x.ndim, 1), x.size), np.int64)
    y[:, :found.shape[1]] = found
    return [y, np.asarray(found.shape[1], np.int64)]


register(OpDef("NonZero", infer=_infer_nonzero, lower=_lower_nonzero, evaluate=_eval_nonzero,
               counted=lambda node: {0: 1}, kernels=tuple(f"ember_nonzero_{s}" for s in _ELEMENT_SUFFIX)))


# ---- Compress ------------------------------------------------------------------------------------

def _compress_geometry(node: Node) -> tuple[int, int, int, int]:
    """(outer, n, bound, inner) of X viewed as [outer, n, inner] along the compressed axis."""
    x, cond = inp(node, 0), inp(node, 1)
    if cond.type.rank != 1:
        raise ShapeError(f"node '{node.name}' (Compress): the condition must be 1-D, not {list(cond.shape)}")
    if "axis" not in node.attrs:
        return 1, x.type.numel, min(x.type.numel, cond.shape[0]), 1
    a = norm_axis(node, int(node.attrs["axis"]), x.type.rank)
    n = x.shape[a]
    return math.prod(x.shape[:a]), n, min(n, cond.shape[0]), math.prod(x.shape[a + 1:])


def _infer_compress(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    _, _, bound, _ = _compress_geometry(node)
    if "axis" not in node.attrs:
        return [typed(x.dtype, (bound,)), _COUNT]
    a = norm_axis(node, int(node.attrs["axis"]), x.type.rank)
    return [typed(x.dtype, (*x.shape[:a], bound, *x.shape[a + 1:])), _COUNT]


def _lower_compress(node: Node, k: KernelEmitter) -> None:
    outer, n, bound, inner = _compress_geometry(node)
    if inp(node, 1).dtype is not DType.BOOL:
        raise UnsupportedOperatorError("Compress", node.name, f"a {inp(node, 1).dtype.short} condition")
    k.call("ember_compress", k.out(0, "uint8_t"), k.out(1), k.inp(0, "uint8_t"), k.inp(1, "uint8_t"), outer, n,
           bound, inner, inp(node, 0).dtype.itemsize)


def _counted_axis(node: Node) -> dict[int, int]:
    if "axis" not in node.attrs:
        return {0: 0}
    return {0: norm_axis(node, int(node.attrs["axis"]), inp(node, 0).type.rank)}


register(OpDef("Compress", infer=_infer_compress, lower=_lower_compress, counted=_counted_axis,
               kernels=("ember_compress",)))


# ---- Unique --------------------------------------------------------------------------------------
_UNIQUE_TYPES = {DType.FLOAT32: "f32", DType.FLOAT64: "f64", DType.INT32: "s32", DType.INT64: "s64",
                 DType.INT8: "s8", DType.UINT8: "u8"}


def _unique_geometry(node: Node) -> tuple[int, int, int]:
    x = inp(node, 0)
    if "axis" not in node.attrs:
        return 1, x.type.numel, 1
    a = norm_axis(node, int(node.attrs["axis"]), x.type.rank)
    return math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:])


def _infer_unique(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    _, n, _ = _unique_geometry(node)
    y = typed(x.dtype, (n,) if "axis" not in node.attrs else x.shape)
    per = typed(DType.INT64, (n,))
    return [y, per, per, per, _COUNT][:len(node.outputs)]


def _lower_unique(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    if x.dtype not in _UNIQUE_TYPES:
        raise UnsupportedOperatorError("Unique", node.name, f"element type {x.dtype.short}")
    outer, n, inner = _unique_geometry(node)
    scratch = k.scratch("int64_t")
    # Absent optional outputs (indices, inverse, counts) still need room: after uniq and rank in scratch.
    outs = [k.out(i) if node.outputs[i] is not None else f"({scratch} + {(i + 1) * n})" for i in range(4)]
    k.call(f"ember_unique_{_UNIQUE_TYPES[x.dtype]}", *outs, k.out(4), k.inp(0), outer, n, inner,
           int(node.attrs.get("sorted", 1)), scratch, f"({scratch} + {n})")


def _counted_unique(node: Node) -> dict[int, int]:
    axis = 0 if "axis" not in node.attrs else norm_axis(node, int(node.attrs["axis"]), inp(node, 0).type.rank)
    return {0: axis, 1: 0, 3: 0}


register(OpDef("Unique", infer=_infer_unique, lower=_lower_unique, counted=_counted_unique,
               scratch=lambda node: 8 * 5 * _unique_geometry(node)[1],
               kernels=tuple(f"ember_unique_{s}" for s in _UNIQUE_TYPES.values())))


# ---- NonMaxSuppression ---------------------------------------------------------------------------

def _nms_geometry(node: Node) -> tuple[int, int, int, int]:
    """(batches, classes, boxes, per-class limit)."""
    boxes, scores = inp(node, 0), inp(node, 1)
    if boxes.type.rank != 3 or boxes.shape[2] != 4 or scores.type.rank != 3 or scores.shape[0] != boxes.shape[0] \
            or scores.shape[2] != boxes.shape[1]:
        raise ShapeError(f"node '{node.name}' (NonMaxSuppression): boxes {list(boxes.shape)} and scores "
                         f"{list(scores.shape)} are not [B, N, 4] and [B, C, N]")
    limit = max(int(scalar(node.input(2), 0)), 0)
    return boxes.shape[0], scores.shape[1], boxes.shape[1], limit


def _infer_nms(node: Node) -> list[TensorType | None]:
    b, c, n, limit = _nms_geometry(node)
    return [typed(DType.INT64, (b * c * min(n, limit), 3)), _COUNT]


def _lower_nms(node: Node, k: KernelEmitter) -> None:
    b, c, n, limit = _nms_geometry(node)
    for i in (0, 1, 3, 4):
        v = node.input(i)
        if v is not None and v.dtype is not DType.FLOAT32:
            raise UnsupportedOperatorError("NonMaxSuppression", node.name, f"input {i} of type {v.dtype.short}")
    scratch = k.scratch("int32_t")
    k.call("ember_nms", k.out(0), k.out(1), k.inp(0), k.inp(1), b, c, n, limit,
           k.inp(3) if node.input(3) is not None else "0", k.inp(4) if node.input(4) is not None else "0",
           int(node.attrs.get("center_point_box", 0)), b * c * min(n, limit), scratch, f"({scratch} + {n})")


register(OpDef("NonMaxSuppression", infer=_infer_nms, lower=_lower_nms, shape_inputs=(2,),
               counted=lambda node: {0: 0}, scratch=lambda node: 4 * 2 * max(_nms_geometry(node)[2], 1),
               kernels=("ember_nms",)))
