"""Indexing with run-time indices: GatherElements, GatherND, ScatterElements, ScatterND, OneHot and
ReverseSequence (TopK, Hardmax, DepthToSpace, SpaceToDepth and EyeLike are in reorder.py).

Indices are run-time data, so the C (kernels/indexing.c) checks each one: negative indices count from
the end (the spec), and what is still out of range is clamped by gathers, skipped by scatters (nothing
is written), left off by OneHot and clamped to the time axis by ReverseSequence. Gathers and scatters
first turn the indices into int32 element offsets in scratch memory, then move or combine elements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node, Value
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, same_as_input, typed
from ember.ops.movement import MAX_RANK, contiguous_strides, emit_fill, fill_value_table
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_INT32_MAX = 2**31 - 1
_REDUCTIONS = {"none": 0, "add": 1, "mul": 2, "max": 3, "min": 4}
_ALL_TYPES = tuple(d for d in DType if not d.is_storage_only)  # storage types are widened first


def _fits_int32(node: Node, *values: Value) -> None:
    """Offsets and counts are int32 in the kernels."""
    if any(v.type.numel > _INT32_MAX for v in values):
        raise ShapeError(f"node '{node.name}' ({node.op}): tensor too large for 32-bit offsets")


def _index_type(node: Node, ix: Value, allowed: Sequence[DType] = (DType.INT32, DType.INT64)) -> str:
    if ix.dtype not in allowed:
        raise UnsupportedOperatorError(node.op, node.name, f"indices of type {ix.dtype.short}")
    return "i64" if ix.dtype is DType.INT64 else "i32"


def _offset_scratch(node: Node) -> int:
    """Bytes for one int32 offset per update (elements) or per index tuple (ND)."""
    ix = inp(node, 1)
    n = ix.type.numel if node.op in ("GatherElements", "ScatterElements") else math.prod(ix.shape[:-1])
    return 4 * n


def _reduction(node: Node) -> int:
    r = node.attrs.get("reduction", "none")
    if r not in _REDUCTIONS:
        raise UnsupportedOperatorError(node.op, node.name, f"reduction '{r}'")
    return _REDUCTIONS[r]


def _np_wrap(ix: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    ix = np.asarray(ix).astype(np.int64)
    return np.where(ix < 0, ix + n, ix)


# GatherElements / ScatterElements --------------------------------------------------------------
def _check_elements(node: Node) -> int:
    """The normalized axis, after checking indices (and updates) against data."""
    data, ix = inp(node, 0), inp(node, 1)
    if ix.type.rank != data.type.rank or data.type.rank == 0:
        raise ShapeError(f"node '{node.name}' ({node.op}): indices of rank {ix.type.rank} for data of rank "
                         f"{data.type.rank} (they must be equal and at least 1)")
    a = norm_axis(node, int(node.attrs.get("axis", 0)), data.type.rank)
    if any(i > d for k, (i, d) in enumerate(zip(ix.shape, data.shape, strict=True)) if k != a):
        raise ShapeError(f"node '{node.name}' ({node.op}): indices {list(ix.shape)} exceed data {list(data.shape)} "
                         f"off axis {a}")
    if node.op == "GatherElements" and data.shape[a] == 0 and ix.type.numel:
        raise ShapeError(f"node '{node.name}' (GatherElements): indices into an empty axis {a}")
    if node.op == "ScatterElements" and tuple(inp(node, 2).shape) != tuple(ix.shape):
        raise ShapeError(f"node '{node.name}' (ScatterElements): updates {list(inp(node, 2).shape)} and indices "
                         f"{list(ix.shape)} differ")
    return a


def _emit_element_offsets(node: Node, k: KernelEmitter, skip: bool) -> str:
    data, ix = inp(node, 0), inp(node, 1)
    a = _check_elements(node)
    if data.type.rank > MAX_RANK:
        raise UnsupportedOperatorError(node.op, node.name, f"rank {data.type.rank} > {MAX_RANK}")
    _fits_int32(node, data, ix)
    strides = contiguous_strides(data.shape)
    odometer = [0 if d == a else s for d, s in enumerate(strides)]
    offs = k.scratch("int32_t")
    k.call(f"ember_element_offsets_{_index_type(node, ix)}", offs, k.inp(1), ix.type.numel, data.type.rank,
           k.table(ix.shape), k.table(odometer), data.shape[a], strides[a], int(skip))
    return offs


def _lower_gather_elements(node: Node, k: KernelEmitter) -> None:
    if node.outputs[0] is None or inp(node, 1).type.numel == 0:
        return
    offs = _emit_element_offsets(node, k, skip=False)
    k.call("ember_take", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), offs, inp(node, 1).type.numel, 1,
           inp(node, 0).dtype.itemsize)


def _eval_gather_elements(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    data = np.asarray(xs[0])
    a = _check_elements(node)
    ix = np.clip(_np_wrap(np.asarray(xs[1]), data.shape[a]), 0, data.shape[a] - 1)
    return [np.ascontiguousarray(np.take_along_axis(data, ix, axis=a))]


# Inputs: (data, indices (int32/int64, the rank of data)). Attribute axis (0). Output: indices' shape.
def _infer_gather_elements(node: Node) -> list[TensorType | None]:
    _check_elements(node)
    return [typed(inp(node, 0).dtype, inp(node, 1).shape)]


register(OpDef("GatherElements", lower=_lower_gather_elements, scratch=_offset_scratch,
               kernels=("ember_element_offsets_i32", "ember_element_offsets_i64", "ember_take"),
               infer=_infer_gather_elements, evaluate=_eval_gather_elements))


def _scatter_kernel(node: Node, k: KernelEmitter, offs: str, n: int, slice_elems: int) -> None:
    data = inp(node, 0)
    if not k.same_buffer(data, node.outputs[0]):  # type: ignore[arg-type]
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), data.type.nbytes)
    reduction = _reduction(node)
    if reduction == 0:
        k.call("ember_put", k.out(0, "uint8_t"), k.inp(2, "uint8_t"), offs, n, slice_elems, data.dtype.itemsize)
    else:
        k.call(f"ember_scatter_reduce_{data.dtype.suffix}", k.out(0), k.inp(2), offs, n, slice_elems, reduction)


def _lower_scatter_elements(node: Node, k: KernelEmitter) -> None:
    _reduction(node)
    if inp(node, 1).type.numel == 0:
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), inp(node, 0).type.nbytes)
        return
    offs = _emit_element_offsets(node, k, skip=True)
    _scatter_kernel(node, k, offs, inp(node, 1).type.numel, 1)


def _np_scatter(out: np.ndarray, where: tuple[np.ndarray, ...], upd: np.ndarray, reduction: str) -> None:
    """out[where] op= upd, one update at a time in order (duplicates accumulate; the last `none` wins)."""
    op = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}.get(reduction)
    for j in range(upd.shape[0]):
        at = tuple(w[j] for w in where)
        out[at] = upd[j] if op is None else op(out[at], upd[j])


def _eval_scatter_elements(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    data, updates = np.asarray(xs[0]), np.asarray(xs[2])
    a = _check_elements(node)
    ix = _np_wrap(np.asarray(xs[1]), data.shape[a])
    where = list(np.indices(ix.shape).reshape(ix.ndim, -1))
    where[a] = ix.reshape(-1)
    keep = (where[a] >= 0) & (where[a] < data.shape[a])
    out = data.copy()
    _np_scatter(out, tuple(w[keep] for w in where), updates.reshape(-1)[keep], node.attrs.get("reduction", "none"))
    return [out]


def _infer_scatter_elements(node: Node) -> list[TensorType | None]:
    _check_elements(node)
    _reduction(node)
    return same_as_input(node)


_SCATTER_REDUCE = tuple(f"ember_scatter_reduce_{d.suffix}" for d in _ALL_TYPES)
# Inputs: (data, indices (int32/int64), updates (indices' shape)). Attributes axis (0), reduction
# (none, add, mul, max, min). The deprecated Scatter (opset 9, 11) is this op (frontends/onnx/ops.py).
register(OpDef("ScatterElements", lower=_lower_scatter_elements, scratch=_offset_scratch,
               kernels=("ember_element_offsets_i32", "ember_element_offsets_i64", "ember_copy", "ember_put",
                        *_SCATTER_REDUCE),
               infer=_infer_scatter_elements, evaluate=_eval_scatter_elements))


# GatherND / ScatterND -------------------------------------------------------------------------
def _nd_geometry(node: Node) -> tuple[int, int]:
    """(batch_dims, k: coordinates per index tuple), checked against data."""
    data, ix = inp(node, 0), inp(node, 1)
    b = int(node.attrs.get("batch_dims", 0))
    if ix.type.rank < 1 or not ix.shape[-1:] or not 0 <= b < min(data.type.rank, ix.type.rank):
        raise ShapeError(f"node '{node.name}' ({node.op}): batch_dims {b} for data {list(data.shape)} and "
                         f"indices {list(ix.shape)}")
    kk = ix.shape[-1]
    if kk > data.type.rank - b or tuple(data.shape[:b]) != tuple(ix.shape[:b]):
        raise ShapeError(f"node '{node.name}' ({node.op}): indices {list(ix.shape)} do not index data "
                         f"{list(data.shape)} with batch_dims {b}")
    if node.op == "GatherND" and 0 in data.shape[b:b + kk] and math.prod(ix.shape[:-1]):
        raise ShapeError(f"node '{node.name}' (GatherND): indices into an empty dim of data {list(data.shape)}")
    if node.op == "ScatterND":
        _reduction(node)
        want = (*ix.shape[:-1], *data.shape[kk:])
        if tuple(inp(node, 2).shape) != want:
            raise ShapeError(f"node '{node.name}' (ScatterND): updates {list(inp(node, 2).shape)}, expected "
                             f"{list(want)}")
    return b, kk


def _emit_nd_offsets(node: Node, k: KernelEmitter, skip: bool) -> tuple[str, int, int]:
    """Emits the offsets kernel; returns the offsets, their count and the elements per slice."""
    data, ix = inp(node, 0), inp(node, 1)
    b, kk = _nd_geometry(node)
    _index_type(node, ix, (DType.INT64,))
    _fits_int32(node, data, ix)
    strides = contiguous_strides(data.shape)
    batch = math.prod(data.shape[:b])
    per_batch = math.prod(ix.shape[b:-1])
    offs = k.scratch("int32_t")
    k.call("ember_nd_offsets", offs, k.inp(1), batch, per_batch, kk, k.table(data.shape[b:b + kk]),
           k.table(strides[b:b + kk]), strides[b - 1] if b else 0, int(skip))
    return offs, batch * per_batch, math.prod(data.shape[b + kk:])


def _lower_gather_nd(node: Node, k: KernelEmitter) -> None:
    y = node.outputs[0]
    if y is None or y.type.numel == 0:
        return
    offs, n, slice_elems = _emit_nd_offsets(node, k, skip=False)
    k.call("ember_take", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), offs, n, slice_elems, y.dtype.itemsize)


def _infer_gather_nd(node: Node) -> list[TensorType | None]:
    data, ix = inp(node, 0), inp(node, 1)
    b, kk = _nd_geometry(node)
    return [typed(data.dtype, [*ix.shape[:-1], *data.shape[b + kk:]])]


def _nd_where(node: Node, data: np.ndarray, ix: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per index tuple (flattened over batch and index dims), the data coordinates it names (wrapped)."""
    b, kk = _nd_geometry(node)
    batch = np.indices(ix.shape[:-1]).reshape(ix.ndim - 1, -1)[:b]
    coords = _np_wrap(ix.reshape(-1, kk), np.asarray(data.shape[b:b + kk])).T
    return (*batch, *coords)


def _eval_gather_nd(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    data, ix = np.asarray(xs[0]), np.asarray(xs[1])
    b, kk = _nd_geometry(node)
    where = _nd_where(node, data, ix)
    where = tuple(np.clip(w, 0, n - 1) for w, n in zip(where, data.shape, strict=False))
    tuples = math.prod(ix.shape[:-1])
    out = data[where] if where else np.broadcast_to(data, (tuples, *data.shape))
    return [np.ascontiguousarray(out.reshape(*ix.shape[:-1], *data.shape[b + kk:]))]


# Inputs: (data, indices (int64; the last dim holds k coordinates)). Attribute batch_dims (0).
register(OpDef("GatherND", lower=_lower_gather_nd, scratch=_offset_scratch, infer=_infer_gather_nd,
               kernels=("ember_nd_offsets", "ember_take"), evaluate=_eval_gather_nd))


def _lower_scatter_nd(node: Node, k: KernelEmitter) -> None:
    _reduction(node)
    if math.prod(inp(node, 1).shape[:-1]) == 0:
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), inp(node, 0).type.nbytes)
        return
    offs, n, slice_elems = _emit_nd_offsets(node, k, skip=True)
    _scatter_kernel(node, k, offs, n, slice_elems)


def _eval_scatter_nd(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    data, ix, updates = np.asarray(xs[0]), np.asarray(xs[1]), np.asarray(xs[2])
    _, kk = _nd_geometry(node)
    where = _nd_where(node, data, ix)
    keep = np.all([(w >= 0) & (w < n) for w, n in zip(where, data.shape, strict=False)], axis=0)
    out = data.copy()
    upd = updates.reshape(-1, *data.shape[kk:])
    _np_scatter(out, tuple(w[keep] for w in where), upd[keep], node.attrs.get("reduction", "none"))
    return [out]


def _infer_scatter_nd(node: Node) -> list[TensorType | None]:
    _nd_geometry(node)
    if node.attrs.get("batch_dims", 0):
        raise ShapeError(f"node '{node.name}' (ScatterND): has no batch_dims")
    return same_as_input(node)


# Inputs: (data, indices (int64, last dim k), updates (indices.shape[:-1] + data.shape[k:])).
# Attribute reduction (none, add, mul, max, min).
register(OpDef("ScatterND", lower=_lower_scatter_nd, scratch=_offset_scratch, infer=_infer_scatter_nd,
               kernels=("ember_nd_offsets", "ember_copy", "ember_put", *_SCATTER_REDUCE),
               evaluate=_eval_scatter_nd))


# OneHot --------------------------------------------------------------------------------------
_ONEHOT_INDEX = {DType.INT8: "s8", DType.INT16: "s16", DType.INT32: "s32", DType.INT64: "s64", DType.UINT8: "u8",
                 DType.UINT16: "u16", DType.UINT32: "u32", DType.UINT64: "u64", DType.FLOAT32: "f32",
                 DType.FLOAT64: "f64", DType.FLOAT16: "f16"}


def _onehot_params(node: Node) -> tuple[int, int, np.ndarray]:
    """(depth, axis in the output, [off, on] values)."""
    for i, what in ((1, "depth"), (2, "values")):
        if inp(node, i).const is None:
            raise ShapeError(f"node '{node.name}' (OneHot): '{what}' must be a compile-time constant")
    depth_arr = np.asarray(inp(node, 1).const).reshape(-1)
    values = np.asarray(inp(node, 2).const).reshape(-1)
    if depth_arr.size != 1 or values.size != 2:
        raise ShapeError(f"node '{node.name}' (OneHot): depth must be one value and values two [off, on]")
    depth = int(depth_arr[0])
    if depth < 1 or depth > _INT32_MAX:
        raise ShapeError(f"node '{node.name}' (OneHot): depth {depth} out of range")
    a = norm_axis(node, int(node.attrs.get("axis", -1)), inp(node, 0).type.rank + 1)
    return depth, a, values


def _infer_onehot(node: Node) -> list[TensorType | None]:
    depth, a, _ = _onehot_params(node)
    shape = list(inp(node, 0).shape)
    return [typed(inp(node, 2).dtype, [*shape[:a], depth, *shape[a:]])]


def _lower_onehot(node: Node, k: KernelEmitter) -> None:
    ix, y = inp(node, 0), node.outputs[0]
    if y is None or y.type.numel == 0:
        return
    depth, a, values = _onehot_params(node)
    if ix.dtype not in _ONEHOT_INDEX:
        raise UnsupportedOperatorError("OneHot", node.name, f"indices of type {ix.dtype.short}")
    _fits_int32(node, y)
    emit_fill(k, y, values[0].item())
    on = fill_value_table(k, values[1].item(), y.dtype)
    k.call(f"ember_onehot_{_ONEHOT_INDEX[ix.dtype]}", k.out(0), k.inp(0), math.prod(ix.shape[:a]), depth,
           math.prod(ix.shape[a:]), on, y.dtype.itemsize, int(node.attrs.get("_wrap_negative", 1)))


def _eval_onehot(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    depth, a, values = _onehot_params(node)
    ix = np.asarray(xs[0])
    # In range: (-depth - 1, depth) before truncation toward zero, as the kernel decides (NaN is not).
    wide = ix.astype(np.float64) if ix.dtype.kind == "f" else ix.astype(object)
    with np.errstate(invalid="ignore"):
        ok = np.asarray((wide > -depth - 1) & (wide < depth), dtype=bool)
    v = np.where(ok, wide, 0).astype(np.int64)
    if not node.attrs.get("_wrap_negative", 1):
        ok &= v >= 0
    v = np.where(v < 0, v + depth, v)
    hot = ok[..., None] & (v[..., None] == np.arange(depth))
    return [np.ascontiguousarray(np.moveaxis(np.where(hot, values[1], values[0]), -1, a)).astype(values.dtype)]


# Inputs: (indices (any number type; negative count from the end), depth (compile-time, one value),
# values (compile-time [off, on]; their type is the output's)). Attribute axis (-1). `_wrap_negative`
# is 0 for opset 9, whose negative indices were out of range (frontends/onnx/ops.py).
register(OpDef("OneHot", lower=_lower_onehot, shape_inputs=(1, 2), infer=_infer_onehot, evaluate=_eval_onehot,
               kernels=("ember_fill", *(f"ember_onehot_{s}" for s in _ONEHOT_INDEX.values()))))


# ReverseSequence ------------------------------------------------------------------------------
def _reverse_axes(node: Node) -> tuple[int, int]:
    x, lens = inp(node, 0), inp(node, 1)
    t, b = int(node.attrs.get("time_axis", 0)), int(node.attrs.get("batch_axis", 1))
    if x.type.rank < 2 or {t, b} != {0, 1}:
        raise ShapeError(f"node '{node.name}' (ReverseSequence): time_axis {t} and batch_axis {b} must be 0 and 1 "
                         f"in either order, rank {x.type.rank} >= 2")
    if tuple(lens.shape) != (x.shape[b],):
        raise ShapeError(f"node '{node.name}' (ReverseSequence): sequence_lens {list(lens.shape)} for batch "
                         f"{x.shape[b]}")
    return t, b


def _lower_reverse_sequence(node: Node, k: KernelEmitter) -> None:
    x, lens = inp(node, 0), inp(node, 1)
    t, b = _reverse_axes(node)
    if lens.dtype is not DType.INT64:
        raise UnsupportedOperatorError("ReverseSequence", node.name, f"sequence_lens of type {lens.dtype.short}")
    if x.type.numel == 0:
        return
    strides = [s * x.dtype.itemsize for s in contiguous_strides(x.shape)]
    k.call("ember_reverse_sequence", k.out(0), k.inp(0), k.inp(1), x.shape[b], x.shape[t], strides[b], strides[t],
           strides[1])


def _eval_reverse_sequence(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, lens = np.asarray(xs[0]), np.asarray(xs[1])
    t, b = _reverse_axes(node)
    y = np.moveaxis(x.copy(), (b, t), (0, 1))
    src = np.moveaxis(x, (b, t), (0, 1))
    for i, n in enumerate(np.clip(lens, 0, x.shape[t])):
        y[i, :n] = src[i, :n][::-1]
    return [np.ascontiguousarray(np.moveaxis(y, (0, 1), (b, t)))]


def _infer_reverse_sequence(node: Node) -> list[TensorType | None]:
    _reverse_axes(node)
    return same_as_input(node)


# Inputs: (input (rank >= 2), sequence_lens (int64, one per batch entry)). Attributes time_axis (0),
# batch_axis (1): 0 and 1 in either order.
register(OpDef("ReverseSequence", lower=_lower_reverse_sequence, kernels=("ember_reverse_sequence",),
               infer=_infer_reverse_sequence, evaluate=_eval_reverse_sequence))
