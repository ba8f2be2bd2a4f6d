"""Static partitioning of one kernel call for multi-threaded bundles (`--threads N`).

A node that `passes/threads.py` marks with `_parts` = P is computed as P independent calls of its own
lowering, each on a *view* of the node: the same op and attributes, but some inputs and outputs cut to
a contiguous range of output channels or rows (a pointer offset into the whole tensor). The kernels
never see threads and need no range parameters; each element of the output is computed by exactly the
code and in the reduction order of the unsplit call, so results do not depend on the thread count.

An OpDef says how it splits with `split(node) -> Split | None`: how many units (output channels, rows)
there are, on which multiple of units part boundaries fall, and which of its tensors are cut along
which axis. Only an axis with nothing but unit dimensions before it can be cut (a contiguous range).
Every part gets scratch of its own: the node's scratch becomes P strides of the largest part's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value

if TYPE_CHECKING:
    from ember.codegen.emitter import KernelEmitter

PARTS_ATTR = "_parts"
_ALIGN_BYTES = 64


@dataclass(frozen=True)
class Slice:
    """Input (`out=False`) or output `index`, cut along `axis`: one unit is `per_unit` entries of it.

    `part_major`: a constant input whose cut axis is not its first (Winograd weights [position][M][C])
    is stored part by part instead (`relayout`, when passes/threads.py divides the node): part p's
    sub-tensor, in the original layout, follows part p - 1's, so each part reads a contiguous block."""

    index: int
    axis: int
    out: bool = False
    per_unit: int = 1
    part_major: bool = False


@dataclass(frozen=True)
class Split:
    units: int  # output channels or rows the work divides into
    align: int  # part boundaries fall on multiples of this many units
    slices: tuple[Slice, ...]
    # Attributes the part of units [lo, hi) overrides (a depthwise Conv's group, per-channel int8 tables).
    attrs: Callable[[int, int], dict[str, Any]] | None = None
    # Instead of the op's lowering on a view: emits the part of units [lo, hi) of the whole node itself
    # (a range no view can express, such as columns of a matrix: a pointer offset with the whole row stride).
    lower: Callable[[Node, KernelEmitter, int, int], None] | None = None
    # The node's work in FLOP-equivalents where its op has no FLOP count (elementwise chains), for the
    # threshold of passes/threads.py.
    work: int | None = None


@dataclass
class PartView:
    """One part: the node as its lowering sees it, and where each cut value lies in its whole value."""

    node: Node
    units: tuple[int, int]
    locations: dict[int, tuple[Value, int]]  # id(view value) -> (whole value, byte offset)


def contiguous_axis(shape: tuple[int, ...]) -> int | None:
    """The first axis that is not a leading unit dimension (cutting it gives contiguous ranges)."""
    for axis, d in enumerate(shape):
        if d != 1:
            return axis
    return None


def relayout(graph: Graph, node: Node, split: Split, parts: int) -> None:
    """Stores each `part_major` constant input of a node divided into `parts` part by part."""
    for s in split.slices:
        v = node.inputs[s.index] if not s.out and s.index < len(node.inputs) else None
        if not s.part_major or v is None or v.const is None:
            continue
        blocks = [v.const[_index(s.axis, lo * s.per_unit, hi * s.per_unit)].reshape(-1)
                  for lo, hi in part_ranges(split, parts)]
        node.inputs[s.index] = graph.constant(f"{v.name}_parts", np.concatenate(blocks).reshape(v.shape))


def _index(axis: int, a: int, b: int) -> tuple[slice, ...]:
    return tuple([slice(None)] * axis + [slice(a, b)])


def cuttable(v: Value | None, axis: int) -> bool:
    return (v is not None and not v.blocked and 0 <= axis < v.type.rank and math.prod(v.shape[:axis]) == 1
            and not v.dtype.is_storage_only and v.dtype is not DType.FLOAT16)


def max_parts(split: Split, threads: int) -> int:
    return max(1, min(threads, split.units // split.align))


def part_ranges(split: Split, parts: int) -> list[tuple[int, int]]:
    """[lo, hi) units of each part: whole blocks of `align` units, as even as they divide."""
    blocks = -(-split.units // split.align)
    cuts = [min(split.units, (blocks * p // parts) * split.align) for p in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def part_views(node: Node, split: Split, parts: int) -> list[PartView]:
    views = []
    attrs = {k: v for k, v in node.attrs.items() if k != PARTS_ATTR}
    for lo, hi in part_ranges(split, parts):
        ins: list[Value | None] = list(node.inputs)
        outs: list[Value | None] = list(node.outputs)
        locations: dict[int, tuple[Value, int]] = {}
        for s in split.slices:
            values = outs if s.out else ins
            whole = values[s.index] if s.index < len(values) else None
            if whole is None:
                continue
            view, offset = _cut(whole, s, lo, hi)
            values[s.index] = view
            locations[id(view)] = (whole, offset)
        part_attrs = dict(attrs)
        if split.attrs is not None:
            part_attrs.update(split.attrs(lo, hi))
        views.append(PartView(Node(node.op, node.name, ins, outs, part_attrs), (lo, hi), locations))
    return views


def _cut(v: Value, s: Slice, lo: int, hi: int) -> tuple[Value, int]:
    a, b = lo * s.per_unit, min(hi * s.per_unit, v.shape[s.axis])
    shape = (*v.shape[: s.axis], b - a, *v.shape[s.axis + 1 :])
    if s.part_major:  # parts stored one after another (relayout): a block of the flat array
        start = a * math.prod(v.shape) // v.shape[s.axis]
        const = None if v.const is None else v.const.reshape(-1)[start : start + math.prod(shape)].reshape(shape)
        return Value(v.name, v.type.with_shape(shape), const=const), start * v.dtype.itemsize
    assert cuttable(v, s.axis), f"{v}: axis {s.axis} cannot be cut into contiguous parts"
    inner = math.prod(v.shape[s.axis + 1 :])
    const = None if v.const is None else v.const[_index(s.axis, a, b)]
    return Value(v.name, v.type.with_shape(shape), const=const), a * inner * v.dtype.itemsize


def node_split(node: Node, split_fn: Callable[[Node], Split | None] | None) -> tuple[Split, int] | None:
    """(split, parts) of a node marked for threads, else None."""
    parts = node.attrs.get(PARTS_ATTR, 1)
    if parts <= 1 or split_fn is None:
        return None
    split = split_fn(node)
    return (split, parts) if split is not None else None


def part_scratch(scratch: Callable[[Node], int], node: Node, split: Split, parts: int) -> int:
    """Bytes of scratch between one part's and the next's: the largest part's, 64-byte aligned."""
    most = max(scratch(v.node) for v in part_views(node, split, parts))
    return -(-most // _ALIGN_BYTES) * _ALIGN_BYTES


def with_part_scratch(scratch: Callable[[Node], int],
                      split_fn: Callable[[Node], Split | None]) -> Callable[[Node], int]:
    """An OpDef's scratch for nodes that may be split: one region per part."""

    def sized(node: Node) -> int:
        found = node_split(node, split_fn)
        if found is None:
            return scratch(node)
        split, parts = found
        return part_scratch(scratch, node, split, parts) * parts

    return sized
