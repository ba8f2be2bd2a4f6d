"""Static memory planning into Glow's three regions.

constant: weights, packed 64-byte aligned, identical tensors stored once.
mutable: graph inputs and outputs, each at a fixed offset (the user reads/writes them there).
activations: every intermediate, placed by liveness with offset reuse (greedy by size),
  in-place elementwise outputs and zero-copy reshapes sharing their input's buffer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ember.ir.graph import Graph, Node, Value
from ember.memory.plan import MemoryPlan, Region, align
from ember.ops import registry


@dataclass
class Buffer:
    """Storage shared by one or more values (aliases), alive from `start` to `end` (node indices)."""

    values: list[Value]
    size: int
    start: int
    end: int
    region: Region = Region.ACTIVATIONS
    offset: int = -1


def inlined_constants(graph: Graph) -> set[int]:
    """Constants that need storage: all except scalars read only by elementwise expressions
    (codegen writes those as literals)."""
    needs: set[int] = set()
    for n in graph.nodes:
        op = registry.get(n.op)
        elementwise = op.expr is not None or n.op == "FusedElementwise"
        for v in n.inputs:
            if v is not None and v.is_const and not (elementwise and v.type.numel == 1):
                needs.add(id(v))
    return needs


def plan_memory(graph: Graph, needs_storage: set[int] | None = None) -> MemoryPlan:
    """`needs_storage`: ids of constant values that must be placed (others are inlined by codegen)."""
    plan = MemoryPlan()
    _place_constants(graph, plan, needs_storage)
    buffers, scratch = _buffers(graph)
    _place_mutable(graph, buffers, plan)
    act = [b for b in buffers if b.region is Region.ACTIVATIONS] + [b for b, _ in scratch]
    plan.lower_bound = _lower_bound(act, len(graph.nodes))
    plan.activations_size = _greedy_by_size(act)
    for b in act:
        for v in b.values:
            plan.location[id(v)] = (Region.ACTIVATIONS, b.offset)
    for b, node in scratch:
        plan.scratch[id(node)] = b.offset
    return plan


def _place_constants(graph: Graph, plan: MemoryPlan, needs_storage: set[int] | None) -> None:
    seen: dict[bytes, int] = {}
    offset = 0
    for n in graph.nodes:
        for v in n.inputs:
            if v is None or not v.is_const or id(v) in plan.location:
                continue
            if needs_storage is not None and id(v) not in needs_storage:
                continue
            raw = v.const.astype(v.dtype.np.newbyteorder("<"), copy=False).tobytes()
            key = hashlib.sha256(raw + str(v.dtype).encode()).digest()
            if key not in seen:
                seen[key] = offset
                plan.constants.append((offset, raw))
                offset = align(offset + max(len(raw), 1))
            plan.location[id(v)] = (Region.CONSTANT, seen[key])
    plan.constant_size = offset


def _buffers(graph: Graph) -> tuple[list[Buffer], list[tuple[Buffer, Node]]]:
    """Group values into buffers (aliasing and in-place) and compute each buffer's live range."""
    last_use: dict[int, int] = {}
    for i, n in enumerate(graph.nodes):
        for v in n.inputs:
            if v is not None:
                last_use[id(v)] = i
    end = len(graph.nodes)
    for v in graph.outputs:
        last_use[id(v)] = end
    buf_of: dict[int, Buffer] = {}
    buffers: list[Buffer] = []
    for v in graph.inputs:
        b = Buffer([v], v.type.nbytes, -1, last_use.get(id(v), -1), Region.MUTABLE)
        buf_of[id(v)] = b
        buffers.append(b)
    for i, n in enumerate(graph.nodes):
        op = registry.get(n.op)
        for k, out in enumerate(n.outputs):
            if out is None:
                continue
            shared = _shareable_input(graph, n, op, k, out, i, buf_of, last_use) if k == 0 else None
            if shared is not None:
                shared.values.append(out)
                shared.end = max(shared.end, last_use.get(id(out), i))
                buf_of[id(out)] = shared
                continue
            region = Region.MUTABLE if graph.is_output(out) else Region.ACTIVATIONS
            b = Buffer([out], out.storage_bytes, i, max(last_use.get(id(out), i), i), region)
            buf_of[id(out)] = b
            buffers.append(b)
    scratch = []
    for i, n in enumerate(graph.nodes):
        op = registry.get(n.op)
        if op.scratch is not None:
            size = op.scratch(n)
            if size > 0:
                scratch.append((Buffer([], size, i, i), n))
    return buffers, scratch


def _shareable_input(graph, node, op, k, out, i, buf_of, last_use) -> Buffer | None:
    if graph.is_output(out):
        return None
    if op.alias:
        src = node.inputs[0]
        if src is not None and not src.is_const and src.type.nbytes == out.type.nbytes:
            return buf_of[id(src)]
        return None
    if not op.inplace:
        return None
    for v in node.inputs:
        if v is None or v.is_const:
            continue
        b = buf_of[id(v)]
        if (
            b.region is Region.ACTIVATIONS
            and v.shape == out.shape
            and v.dtype.itemsize == out.dtype.itemsize
            and v.blocked == out.blocked
            and b.end == i
            and all(last_use.get(id(m), -1) <= i for m in b.values)
        ):
            return b
    return None


def _place_mutable(graph: Graph, buffers: list[Buffer], plan: MemoryPlan) -> None:
    offset = 0
    for b in buffers:
        if b.region is Region.MUTABLE:
            b.offset = offset
            offset = align(offset + max(b.size, 1))
            for v in b.values:
                plan.location[id(v)] = (Region.MUTABLE, b.offset)
    plan.mutable_size = offset


def _lower_bound(buffers: list[Buffer], steps: int) -> int:
    peak = 0
    for t in range(steps):
        peak = max(peak, sum(b.size for b in buffers if b.start <= t <= b.end))
    return peak


def _greedy_by_size(buffers: list[Buffer]) -> int:
    """Largest buffers first, each at the lowest offset not overlapping a placed buffer alive at once."""
    placed: list[Buffer] = []
    total = 0
    for b in sorted(buffers, key=lambda b: (-b.size, b.start)):
        live = sorted(
            (p for p in placed if p.start <= b.end and b.start <= p.end), key=lambda p: p.offset
        )
        offset = 0
        for p in live:
            if offset + b.size <= p.offset:
                break
            offset = max(offset, align(p.offset + p.size))
        b.offset = offset
        placed.append(b)
        total = max(total, align(offset + b.size))
    return total
