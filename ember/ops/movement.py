"""Data movement: Transpose, Concat, Split, Slice, Gather, Pad, Trilu.

Every op here is a pure rearrangement of bytes, so the kernels are dtype-agnostic: the lowering
describes the copy as dims plus byte strides (`emit_strided`) or per-dim offset tables
(`emit_index_copy`), after merging dims that are contiguous on both sides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.infer import const_ints, inp, typed
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register

MAX_RANK = 8  # EMBER_MAX_RANK in kernels/movement.c
_INT32_MAX = 2**31 - 1
_UNIT_DTYPE = {1: DType.UINT8, 2: DType.UINT16, 4: DType.UINT32, 8: DType.UINT64}


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a C-contiguous tensor."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def _unit(*byte_values: int) -> int:
    """The widest access (8, 4, 2, 1 bytes) that keeps every offset and stride aligned."""
    for u in (8, 4, 2):
        if all(v % u == 0 for v in byte_values):
            return u
    return 1


def _check_int32(node: Node, *values: int) -> None:
    if any(abs(v) > _INT32_MAX for v in values):
        raise ShapeError(f"node '{node.name}' ({node.op}): tensor too large for 32-bit offsets")


def _base(k: KernelEmitter, v: Value, off: int) -> str:
    p = k.ptr(v, "uint8_t")
    return f"({p} + {off})" if off else p


def emit_strided(k: KernelEmitter, dst: Value, dst_off: int, src: Value, src_off: int,
                 shape: Sequence[int], dstr: Sequence[int], sstr: Sequence[int]) -> None:
    """dst[idx] = src[idx] over `shape`; offsets and strides in elements of dst's dtype."""
    if any(d == 0 for d in shape):
        return
    size = dst.dtype.itemsize
    dims = [(d, ds * size, ss * size) for d, ds, ss in zip(shape, dstr, sstr, strict=True) if d != 1]
    merged: list[tuple[int, int, int]] = []
    for d, ds, ss in dims:
        if merged and merged[-1][1] == ds * d and merged[-1][2] == ss * d:
            merged[-1] = (merged[-1][0] * d, ds, ss)  # outer dim steps exactly over this one
        else:
            merged.append((d, ds, ss))
    elem = size
    if merged and merged[-1][1] == size and merged[-1][2] == size:
        elem = merged.pop()[0] * size  # innermost run is contiguous on both sides: copy it whole
    d_off, s_off = dst_off * size, src_off * size
    if not merged:
        k.call("ember_copy", _base(k, dst, d_off), _base(k, src, s_off), elem)
        return
    if len(merged) > MAX_RANK:
        raise UnsupportedOperatorError(k.node.op, k.node.name, f"copy of rank {len(merged)} > {MAX_RANK}")
    unit = _unit(elem, d_off, s_off, *(m[1] for m in merged), *(m[2] for m in merged))
    _check_int32(k.node, *(m[0] * m[1] for m in merged), *(m[0] * m[2] for m in merged), elem)
    k.call("ember_strided_copy", _base(k, dst, d_off), _base(k, src, s_off), len(merged),
           k.table([m[0] for m in merged]), k.table([m[1] for m in merged]), k.table([m[2] for m in merged]),
           unit, elem // unit)


def emit_index_copy(k: KernelEmitter, dst: Value, src: Value, maps: Sequence[np.ndarray]) -> None:
    """Contiguous dst[i0, ..] = src[maps[0][i0], maps[1][i1], ..] (per-dim source index tables)."""
    if dst.type.numel == 0:
        return
    if len(maps) > MAX_RANK:
        raise UnsupportedOperatorError(k.node.op, k.node.name, f"rank {len(maps)} > {MAX_RANK}")
    size = src.dtype.itemsize
    if not maps:
        k.call("ember_copy", k.out(0, "uint8_t"), k.ptr(src, "uint8_t"), size)
        return
    strides = contiguous_strides(src.shape)
    offs = np.concatenate([np.asarray(m, dtype=np.int64) * st * size for m, st in zip(maps, strides, strict=True)])
    _check_int32(k.node, int(offs.max(initial=0)))
    unit = _unit(size)
    k.call("ember_index_copy", k.ptr(dst, "uint8_t"), k.ptr(src, "uint8_t"), len(maps),
           k.table([len(m) for m in maps]), k.table(offs), unit, size // unit)


def fill_value_table(k: KernelEmitter, value: float | int | bool, dtype: DType) -> str:
    """A static table holding one element's bits, typed by its size so typed reads stay aligned."""
    bits = np.asarray(value).astype(dtype.np).reshape(1).view(_UNIT_DTYPE[dtype.itemsize].np)
    return k.table(bits, _UNIT_DTYPE[dtype.itemsize])


def emit_fill(k: KernelEmitter, dst: Value, value: float | int | bool) -> None:
    if dst.type.numel:
        size = dst.dtype.itemsize
        k.call("ember_fill", k.ptr(dst, "uint8_t"), fill_value_table(k, value, dst.dtype), size, dst.type.numel)


def _axis(node: Node, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"node '{node.name}' ({node.op}): axis {axis} out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _ints(v: Value | None) -> list[int] | None:
    return None if v is None or v.const is None else [int(x) for x in np.asarray(v.const).reshape(-1)]


def _io(node: Node) -> tuple[Value, Value]:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    return x, y


# Transpose -----------------------------------------------------------------
def _lower_transpose(node: Node, k: KernelEmitter) -> None:
    x, y = _io(node)
    perm = list(node.attrs.get("perm", range(x.type.rank - 1, -1, -1)))
    st = contiguous_strides(x.shape)
    emit_strided(k, y, 0, x, 0, y.shape, contiguous_strides(y.shape), [st[p] for p in perm])


def _perm(node: Node, rank: int) -> list[int]:
    return [_axis(node, p, rank) for p in node.attrs.get("perm", range(rank - 1, -1, -1))]


def _infer_transpose(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    perm = _perm(node, x.type.rank)
    if sorted(perm) != list(range(x.type.rank)):
        raise ShapeError(f"node '{node.name}' (Transpose): perm {perm} is not a permutation of rank {x.type.rank}")
    return [typed(x.dtype, [x.shape[p] for p in perm])]


_MOVE = ("ember_strided_copy", "ember_copy")
# Attribute `perm` (default: reversed dims).
register(OpDef("Transpose", lower=_lower_transpose, kernels=_MOVE, infer=_infer_transpose,
               evaluate=lambda n, xs: [np.ascontiguousarray(np.transpose(xs[0], _perm(n, np.ndim(xs[0]))))],
               int8=Int8.MOVE, data={"storage_types": True}))


# Concat / Split ------------------------------------------------------------
def _lower_concat(node: Node, k: KernelEmitter) -> None:
    y = node.outputs[0]
    assert y is not None
    axis = _axis(node, node.attrs["axis"], y.type.rank)
    ost = contiguous_strides(y.shape)
    pos = 0
    for x in node.inputs:
        if x is None:
            continue
        emit_strided(k, y, pos * ost[axis], x, 0, x.shape, ost, contiguous_strides(x.shape))
        pos += x.shape[axis]


def _infer_concat(node: Node) -> list[TensorType | None]:
    xs = [v for v in node.inputs if v is not None]
    rank = xs[0].type.rank
    axis = _axis(node, node.attrs["axis"], rank)
    shape = list(xs[0].shape)
    for v in xs[1:]:
        if v.type.rank != rank or any(a != b for i, (a, b) in enumerate(zip(v.shape, shape, strict=True))
                                      if i != axis):
            raise ShapeError(f"node '{node.name}' (Concat): input shapes {[list(x.shape) for x in xs]} "
                             f"do not agree off axis {axis}")
    shape[axis] = sum(v.shape[axis] for v in xs)
    return [typed(xs[0].dtype, shape)]


# Attribute `axis` (required).
register(OpDef("Concat", lower=_lower_concat, kernels=_MOVE, infer=_infer_concat,
               evaluate=lambda n, xs: [np.concatenate([x for x in xs if x is not None], axis=n.attrs["axis"])],
               int8=Int8.CONCAT, data={"storage_types": True}))


def _normalize_split(node: Node, graph: Graph) -> None:
    # Record each chunk's start before dead-code removal can drop unused outputs.
    starts, pos = [], 0
    x = node.inputs[0]
    assert x is not None
    axis = _axis(node, node.attrs.get("axis", 0), x.type.rank)
    for y in node.outputs:
        starts.append(pos)
        pos += y.shape[axis] if y is not None else 0
    node.attrs["_starts"] = starts


def _lower_split_at(node: Node, k: KernelEmitter) -> None:
    x = node.inputs[0]
    assert x is not None
    axis = _axis(node, node.attrs.get("axis", 0), x.type.rank)
    ist = contiguous_strides(x.shape)
    for y, start in zip(node.outputs, node.attrs["_starts"], strict=False):
        if y is not None:
            emit_strided(k, y, 0, x, start * ist[axis], y.shape, contiguous_strides(y.shape), ist)


def _split_sizes(node: Node, x_shape: Sequence[int]) -> tuple[int, list[int]]:
    axis = _axis(node, node.attrs.get("axis", 0), len(x_shape))
    sizes = const_ints(node, 1)
    if sizes is None or len(sizes) != len(node.outputs) or sum(sizes) != x_shape[axis]:
        raise ShapeError(f"node '{node.name}' (Split): sizes {sizes} do not split dim {x_shape[axis]} "
                         f"into {len(node.outputs)} outputs")
    return axis, sizes


def _infer_split(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    axis, sizes = _split_sizes(node, x.shape)
    return [typed(x.dtype, [*x.shape[:axis], n, *x.shape[axis + 1:]]) if y is not None else None
            for y, n in zip(node.outputs, sizes, strict=True)]


def _eval_split(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    axis, sizes = _split_sizes(node, x.shape)
    return [np.ascontiguousarray(a) for a in np.split(x, np.cumsum(sizes)[:-1], axis=axis)]


# Inputs: (X, split: each output's size along `axis` (int64, one per output; always given)).
register(OpDef("Split", lower=_lower_split_at, kernels=_MOVE, shape_inputs=(1,),
               normalize=_normalize_split, infer=_infer_split, evaluate=_eval_split, int8=Int8.SELECT,
               data={"storage_types": True}))


# Slice ---------------------------------------------------------------------
def slice_params(node: Node, shape: Sequence[int]) -> tuple[list[int], list[int]]:
    """Per-dim (start, step) after ONNX's negative-index and clamping rules."""
    first, step, _ = _slice_dims(node, shape)
    return first, step


def _slice_dims(node: Node, shape: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Per-dim (start, step, count) after the negative-index and clamping rules."""
    rank = len(shape)
    starts, ends = const_ints(node, 1), const_ints(node, 2)
    if starts is None or ends is None:
        raise ShapeError(f"node '{node.name}' (Slice): needs constant starts and ends")
    axes = const_ints(node, 3) or list(range(len(starts)))
    steps = const_ints(node, 4) or [1] * len(starts)
    first, step, count = [0] * rank, [1] * rank, list(shape)
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = _axis(node, a, rank)
        n = shape[a]
        if st == 0:
            raise ShapeError(f"node '{node.name}' (Slice): step 0")
        s = s + n if s < 0 else s
        s = min(max(s, 0), n) if st > 0 else min(max(s, 0), n - 1)
        first[a], step[a] = s, st
        e = e + n if e < 0 else e
        e = min(max(e, 0), n) if st > 0 else min(max(e, -1), n - 1)
        count[a] = max(0, -(-(e - s) // st)) if st > 0 else max(0, -(-(s - e) // -st))
    return first, step, count


def _lower_slice(node: Node, k: KernelEmitter) -> None:
    x, y = _io(node)
    first, step = slice_params(node, x.shape)
    ist = contiguous_strides(x.shape)
    off = sum(f * s for f, s in zip(first, ist, strict=True))
    emit_strided(k, y, 0, x, off, y.shape, contiguous_strides(y.shape), [s * t for s, t in zip(ist, step, strict=True)])


def _infer_slice(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    return [typed(x.dtype, _slice_dims(node, x.shape)[2])]


def _eval_slice(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    first, step, count = _slice_dims(node, x.shape)
    index = tuple(np.arange(count[d]) * step[d] + first[d] for d in range(x.ndim))
    return [np.ascontiguousarray(x[np.ix_(*index)])] if x.ndim else [x.copy()]


# Inputs: (X, starts, ends, axes (optional), steps (optional)), int constants.
register(OpDef("Slice", lower=_lower_slice, kernels=_MOVE, shape_inputs=(1, 2, 3, 4), infer=_infer_slice,
               evaluate=_eval_slice, int8=Int8.SELECT, data={"storage_types": True}))


# Gather --------------------------------------------------------------------
def _lower_gather(node: Node, k: KernelEmitter) -> None:
    x, y = _io(node)
    ix = node.inputs[1]
    assert ix is not None
    axis = _axis(node, node.attrs.get("axis", 0), x.type.rank)
    if y.type.numel == 0:
        return
    outer = math.prod(x.shape[:axis])
    inner = math.prod(x.shape[axis + 1:]) * x.dtype.itemsize
    _check_int32(node, x.type.nbytes)
    if ix.dtype not in (DType.INT32, DType.INT64):
        raise UnsupportedOperatorError("Gather", node.name, f"indices of type {ix.dtype.short}")
    fn = "ember_gather_i64" if ix.dtype is DType.INT64 else "ember_gather_i32"
    k.call(fn, k.out(0, "uint8_t"), k.inp(0, "uint8_t"), k.ptr(ix), outer, x.shape[axis], ix.type.numel, inner)


def _infer_gather(node: Node) -> list[TensorType | None]:
    x, ix = inp(node, 0), inp(node, 1)
    axis = _axis(node, node.attrs.get("axis", 0), x.type.rank)
    return [typed(x.dtype, [*x.shape[:axis], *ix.shape, *x.shape[axis + 1:]])]


def _eval_gather(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, ix = np.asarray(xs[0]), np.asarray(xs[1]).astype(np.int64)
    axis = _axis(node, node.attrs.get("axis", 0), x.ndim)
    return [np.ascontiguousarray(np.take(x, np.where(ix < 0, ix + x.shape[axis], ix), axis=axis))]


# Inputs: (data, indices (int32/int64; negative counts from the end)). Attribute `axis` (0).
register(OpDef("Gather", lower=_lower_gather, kernels=("ember_gather_i64", "ember_gather_i32"),
               infer=_infer_gather, evaluate=_eval_gather, data={"storage_types": True}))


# Pad -----------------------------------------------------------------------
def pad_params(node: Node, rank: int) -> tuple[list[int], list[int], float | int | bool]:
    """(pads before, pads after, constant value)."""
    pads = const_ints(node, 1) or [0] * 2 * rank
    cv = node.input(2)
    value: float | int | bool = (np.asarray(cv.const).reshape(-1)[0].item()
                                 if cv is not None and cv.const is not None and cv.const.size else 0)
    axes = [_axis(node, a, rank) for a in (const_ints(node, 3) or range(rank))]
    if len(pads) != 2 * len(axes):
        raise ShapeError(f"node '{node.name}' (Pad): {len(pads)} pads for {len(axes)} axes")
    n = len(axes)
    before, after = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        before[a], after[a] = pads[i], pads[n + i]
    return before, after, value


def _lower_pad(node: Node, k: KernelEmitter) -> None:
    x, y = _io(node)
    before, after, value = pad_params(node, x.type.rank)
    mode = node.attrs.get("mode", "constant")
    if mode == "constant":
        emit_fill(k, y, value)
        # Negative pads crop: copy only the part of x that lands inside y.
        src0 = [max(0, -b) for b in before]
        dst0 = [max(0, b) for b in before]
        shape = [n - max(0, -b) - max(0, -a) for n, b, a in zip(x.shape, before, after, strict=True)]
        if any(s <= 0 for s in shape):
            return
        ist, ost = contiguous_strides(x.shape), contiguous_strides(y.shape)
        emit_strided(k, y, sum(d * s for d, s in zip(dst0, ost, strict=True)), x,
                     sum(d * s for d, s in zip(src0, ist, strict=True)), shape, ost, ist)
        return
    if mode not in ("reflect", "edge", "wrap"):
        raise UnsupportedOperatorError("Pad", node.name, f"mode '{mode}'")
    if x.type.numel == 0:
        raise ShapeError(f"node '{node.name}' (Pad): {mode} padding of an empty tensor")
    maps = []
    for n, b, a in zip(x.shape, before, after, strict=True):
        # Negative pads crop first, then the cropped tensor is padded (onnxruntime's order; matters for wrap).
        lo, hi = max(0, -b), n - max(0, -a)
        if hi <= lo:
            raise ShapeError(f"node '{node.name}' (Pad): {mode} padding of an axis cropped to nothing")
        maps.append(np.pad(np.arange(lo, hi), (max(b, 0), max(a, 0)), mode=mode))  # type: ignore[call-overload]
    emit_index_copy(k, y, x, maps)


def _infer_pad(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    before, after, _ = pad_params(node, x.type.rank)
    shape = [n + b + a for n, b, a in zip(x.shape, before, after, strict=True)]
    if any(d < 0 for d in shape):
        raise ShapeError(f"node '{node.name}' (Pad): negative pads crop {list(x.shape)} below nothing")
    return [typed(x.dtype, shape)]


def _eval_pad(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    before, after, value = pad_params(node, x.ndim)
    mode = node.attrs.get("mode", "constant")
    # Negative pads crop first; then the cropped tensor is padded.
    x = x[tuple(slice(max(0, -b), n - max(0, -a)) for n, b, a in zip(x.shape, before, after, strict=True))]
    widths = [(max(b, 0), max(a, 0)) for b, a in zip(before, after, strict=True)]
    if mode == "constant":
        return [np.pad(x, widths, mode="constant", constant_values=np.asarray(value).astype(x.dtype))]
    return [np.pad(x, widths, mode=mode)]  # type: ignore[call-overload]


# Inputs: (X, pads (int64, begins then ends, per axis), constant_value (optional scalar), axes (optional)).
# Attribute `mode`: constant, reflect, edge or wrap.
register(OpDef("Pad", lower=_lower_pad, shape_inputs=(1, 2, 3),
               kernels=("ember_fill", "ember_strided_copy", "ember_index_copy", "ember_copy"),
               infer=_infer_pad, evaluate=_eval_pad))


# Trilu ---------------------------------------------------------------------
def _lower_trilu(node: Node, k: KernelEmitter) -> None:
    x, y = _io(node)
    if y.type.numel == 0:
        return
    rows, cols = x.shape[-2], x.shape[-1]
    kk = (_ints(node.input(1)) or [0])[0]
    kk = min(max(kk, -rows - 1), cols + 1)  # beyond these the result no longer changes; keeps C in int32
    k.call("ember_trilu", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), math.prod(x.shape[:-2]), rows, cols, kk,
           int(node.attrs.get("upper", 1)), x.dtype.itemsize)


def _eval_trilu(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    k = int(np.asarray(xs[1]).reshape(-1)[0]) if len(xs) > 1 and xs[1] is not None else 0
    fn = np.triu if node.attrs.get("upper", 1) else np.tril
    return [fn(np.asarray(xs[0]), k)]


# Inputs: (X, k (optional scalar)). Attribute `upper` (1).
register(OpDef("Trilu", lower=_lower_trilu, kernels=("ember_trilu",), shape_inputs=(1,),
               infer=lambda n: [typed(inp(n, 0).dtype, inp(n, 0).shape)], evaluate=_eval_trilu))
