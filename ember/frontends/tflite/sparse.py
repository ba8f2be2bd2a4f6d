"""Sparse TFLite constants (a tensor's SparsityParameters: TFLite's generalized CSR with optional blocks)
made dense at compile time, so DENSIFY and the operators that read sparse weights directly see a plain array.

The layout, as TFLite's FormatConverter reads it: the tensor's dimensions, each blocked one split into
(outer, block), are visited in `traversal_order`; level k of that traversal is DENSE (every index 0..size-1)
or SPARSE_CSR (the indices `array_indices[array_segments[p]:array_segments[p + 1]]` under parent position p).
The stored values are the leaves in visiting order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ModelFormatError

_DENSE = 0  # tflite.DimensionType.DENSE; SPARSE_CSR is 1


def _int_vector(meta: Any, which: str) -> np.ndarray:
    """array_segments / array_indices: a union of Int32Vector, Uint16Vector and Uint8Vector tables."""
    import tflite

    table = getattr(meta, f"Array{which}")()
    kind = getattr(meta, f"Array{which}Type")()
    if table is None:
        return np.zeros(0, np.int64)
    cls = {tflite.SparseIndexVector.Int32Vector: tflite.Int32Vector,
           tflite.SparseIndexVector.Uint16Vector: tflite.Uint16Vector,
           tflite.SparseIndexVector.Uint8Vector: tflite.Uint8Vector}.get(kind)
    if cls is None:
        return np.zeros(0, np.int64)
    vec = cls()
    vec.Init(table.Bytes, table.Pos)
    return vec.ValuesAsNumpy().astype(np.int64) if vec.ValuesLength() else np.zeros(0, np.int64)


def densify(values: np.ndarray, shape: tuple[int, ...], sparsity: Any, what: str) -> np.ndarray:
    """The dense array of `shape` whose nonzero leaves `values` (flat, stored order) `sparsity` describes."""
    order = sparsity.TraversalOrderAsNumpy().tolist() if sparsity.TraversalOrderLength() else []
    block_map = sparsity.BlockMapAsNumpy().tolist() if sparsity.BlockMapLength() else []
    rank = len(shape)
    levels = []
    for k in range(sparsity.DimMetadataLength()):
        m = sparsity.DimMetadata(k)
        levels.append((m.Format(), int(m.DenseSize()), _int_vector(m, "Segments"), _int_vector(m, "Indices")))
    if len(order) != len(levels) or len(order) != rank + len(block_map):
        raise ModelFormatError(f"{what}: sparsity of {len(levels)} levels for a rank-{rank} tensor with "
                               f"{len(block_map)} blocked dimensions")
    block_size = [levels[order.index(rank + b)][1] for b in range(len(block_map))]
    dense = np.zeros(shape, values.dtype)
    flat = dense.reshape(-1)
    strides = np.cumprod([1, *shape[::-1]])[:-1][::-1]
    leaf = 0
    index = [0] * len(levels)

    def place() -> None:
        nonlocal leaf
        orig = [0] * rank
        for lv in range(rank):
            orig[order[lv]] = index[lv]
        for lv in range(rank, len(levels)):
            b = order[lv] - rank
            orig[block_map[b]] = orig[block_map[b]] * block_size[b] + index[lv]
        if leaf >= values.size:
            raise ModelFormatError(f"{what}: its sparsity names more elements than its {values.size} values")
        flat[int(np.dot(orig, strides))] = values[leaf]
        leaf += 1

    def visit(level: int, parent: int) -> None:
        if level == len(levels):
            place()
            return
        fmt, size, segments, indices = levels[level]
        if fmt == _DENSE:
            for i in range(size):
                index[level] = i
                visit(level + 1, parent * size + i)
            return
        if parent + 1 >= segments.size:
            raise ModelFormatError(f"{what}: sparse level {level} has too few array_segments")
        for j in range(int(segments[parent]), int(segments[parent + 1])):
            index[level] = int(indices[j])
            visit(level + 1, j)

    visit(0, 0)
    return dense
