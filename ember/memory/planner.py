"""Static memory planning into Glow's three regions.

constant: weights, packed 64-byte aligned, identical tensors stored once.
mutable: graph inputs and outputs, each at a fixed offset (the user reads/writes them there).
activations: every intermediate, placed by liveness with offset reuse (ember/memory/offsets.py: greedy
  placements in several orders, then perturbed ones, then an exact search for small graphs, stopping at the
  lower bound), in-place outputs and zero-copy reshapes sharing their input's buffer.

Control flow: the nodes of a control-flow node's subgraphs are numbered after the node's own step, one
subgraph after the other, and the node ends one step after its last subgraph. An If's two branches thus
occupy disjoint spans, so their intermediates reuse the same offsets (they never run together), while
every value bound into a subgraph (a captured outer value, the node's outputs, a Loop's iteration
counter) lives across the whole node. A Loop body's intermediates are planned for one iteration: what
outlives it is a bound formal or a body output, both live to the node's end.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ember.ir.graph import Graph, Node, Value
from ember.memory.offsets import Span, peak_live, place
from ember.memory.plan import Lifetime, MemoryPlan, Region, align
from ember.ops import registry
from ember.ops.opdef import SubgraphBinding


@dataclass
class Buffer:
    """Storage shared by one or more values (aliases), alive from `start` to `end` (node indices). `tie`: the
    output of a streaming kernel written over its dying input (OpDef.overlap) starts that many bytes above
    the input's buffer, placed with it (offsets.py's tie groups)."""

    values: list[Value]
    size: int
    start: int
    end: int
    region: Region = Region.ACTIVATIONS
    offset: int = -1
    tie: tuple[Buffer, int] | None = None


def inlined_constants(graph: Graph) -> set[int]:
    """Constants that need storage: all except scalars read only by elementwise expressions
    (codegen writes those as literals)."""
    needs: set[int] = set()
    for n in graph.walk():
        op = registry.get(n.op)
        elementwise = op.expr is not None or n.op == "FusedElementwise"
        for v in n.inputs:
            if v is not None and v.is_const and not (elementwise and v.type.numel == 1):
                needs.add(id(v))
    return needs


def plan_memory(graph: Graph, needs_storage: set[int] | None = None, reuse_inputs: bool = False) -> MemoryPlan:
    """`needs_storage`: ids of constant values that must be placed (others are inlined by codegen).
    `reuse_inputs` (--reuse-inputs): inputs, outputs, intermediates and scratch all go in the mutable region,
    placed by liveness together, so intermediates reuse the bytes of inputs already read."""
    plan = MemoryPlan()
    _place_constants(graph, plan, needs_storage)
    buffers, scratch = _buffers(graph)
    region = Region.MUTABLE if reuse_inputs else Region.ACTIVATIONS
    if not reuse_inputs:
        _place_mutable(graph, buffers, plan)
    act = [b for b in buffers if reuse_inputs or b.region is Region.ACTIVATIONS] + [b for b, _ in scratch]
    spans = _spans(act)
    plan.lower_bound = peak_live(spans)
    offsets, size = place(spans)
    if reuse_inputs:
        plan.mutable_size, plan.scratch_region = size, region
    else:
        plan.activations_size = size
    for b, off in zip(act, offsets, strict=True):
        b.offset = off
    for b in act:
        for v in b.values:
            plan.location[id(v)] = (region, b.offset)
    for b, node in scratch:
        plan.scratch[id(node)] = b.offset
    labels = [b.values[0].name for b in act[: len(act) - len(scratch)]] + [f"{n.name} (scratch)" for _, n in scratch]
    plan.lifetimes = [Lifetime(b.start, b.end, b.offset, b.size, k) for b, k in zip(act, labels, strict=True)]
    return plan


def activation_peak(graph: Graph) -> int:
    """The planner's lower bound for the graph's current node order (what a reordering pass compares), without
    placing anything."""
    buffers, scratch = _buffers(graph)
    act = [b for b in buffers if b.region is Region.ACTIVATIONS] + [b for b, _ in scratch]
    return peak_live(_spans(act))


def _spans(act: list[Buffer]) -> list[Span]:
    """The placer's view of the activation buffers: a chain of ties is one group, each buffer at the sum of the
    ties below it (offsets.py places a group's buffers together)."""
    index = {id(b): k for k, b in enumerate(act)}
    tied = {id(b.tie[0]) for b in act if b.tie is not None}
    spans = []
    for b in act:
        root, rel = b, 0
        while root.tie is not None:
            rel += root.tie[1]
            root = root.tie[0]
        group = index[id(root)] if root is not b or id(b) in tied else -1
        spans.append(Span(b.start, b.end, b.size, group, rel))
    return spans


def _place_constants(graph: Graph, plan: MemoryPlan, needs_storage: set[int] | None) -> None:
    seen: dict[bytes, int] = {}
    offset = 0
    for n in graph.walk():
        for v in n.inputs:
            if v is None or not v.is_const or id(v) in plan.location:
                continue
            if needs_storage is not None and id(v) not in needs_storage:
                continue
            # A little-endian byte view of the constant, not a copy: the weights are held once.
            raw = np.ascontiguousarray(v.const.astype(v.dtype.np.newbyteorder("<"), copy=False)).reshape(-1)
            raw = raw.view(np.uint8)
            key = hashlib.sha256(raw.data).digest() + str(v.dtype).encode()
            if key not in seen:
                seen[key] = offset
                plan.constants.append((offset, raw))
                offset = align(offset + max(raw.size, 1))
            plan.location[id(v)] = (Region.CONSTANT, seen[key])
    plan.constant_size = offset


def _bindings(node: Node) -> list[SubgraphBinding]:
    fn = registry.get(node.op).bindings
    assert fn is not None, f"{node.op} holds subgraphs but has no bindings"
    return fn(node)


def _number(graph: Graph, steps: dict[int, tuple[int, int]], t: int) -> int:
    """Execution steps of every node, nested ones included: (start, end); returns the next free step."""
    for n in graph.nodes:
        start = t
        t += 1
        if n.subgraphs:
            for b in _bindings(n):
                t = _number(b.graph, steps, t)
            t += 1
        steps[id(n)] = (start, t - 1)
    return t


def _last_uses(graph: Graph, steps: dict[int, tuple[int, int]], last_use: dict[int, int]) -> None:
    for n in graph.nodes:
        end = steps[id(n)][1]
        for v in n.inputs:
            if v is not None:
                last_use[id(v)] = max(last_use.get(id(v), end), end)
        if n.subgraphs:
            for b in _bindings(n):
                _last_uses(b.graph, steps, last_use)
                for v in b.graph.outputs:  # read (copied on, or written straight into an output) at the node's end
                    last_use[id(v)] = max(last_use.get(id(v), end), end)


def _buffers(graph: Graph) -> tuple[list[Buffer], list[tuple[Buffer, Node]]]:
    """Group values into buffers (aliasing and in-place) and compute each buffer's live range."""
    steps: dict[int, tuple[int, int]] = {}
    end = _number(graph, steps, 0)
    last_use: dict[int, int] = {}
    _last_uses(graph, steps, last_use)
    for v in graph.outputs:
        last_use[id(v)] = end
    buf_of: dict[int, Buffer] = {}
    buffers: list[Buffer] = []
    for v in graph.inputs:
        b = Buffer([v], v.type.nbytes, -1, last_use.get(id(v), -1), Region.MUTABLE)
        buf_of[id(v)] = b
        buffers.append(b)
    scratch: list[tuple[Buffer, Node]] = []
    _place_nodes(graph, True, steps, last_use, buf_of, buffers, scratch)
    return buffers, scratch


def _place_nodes(graph: Graph, top: bool, steps: dict[int, tuple[int, int]], last_use: dict[int, int],
                 buf_of: dict[int, Buffer], buffers: list[Buffer], scratch: list[tuple[Buffer, Node]]) -> None:
    for n in graph.nodes:
        op = registry.get(n.op)
        i, node_end = steps[id(n)]
        for k, out in enumerate(n.outputs):
            if out is None:
                continue
            if id(out) in buf_of:  # a subgraph output computed straight into its control node's output
                b = buf_of[id(out)]
                b.values.append(out)
                b.end = max(b.end, last_use.get(id(out), i))
                continue
            shared = None
            if k == 0 and not n.subgraphs:
                shared = _shareable_input(graph, n, op, out, i, buf_of, last_use)
            tie = None
            if isinstance(shared, tuple):
                shared, tie = None, shared
            if shared is not None:
                shared.values.append(out)
                shared.end = max(shared.end, last_use.get(id(out), i))
                buf_of[id(out)] = shared
                continue
            region = Region.MUTABLE if top and graph.is_output(out) else Region.ACTIVATIONS
            b = Buffer([out], out.storage_bytes, i, max(last_use.get(id(out), i), i), region, tie=tie)
            buf_of[id(out)] = b
            buffers.append(b)
        if op.scratch is not None:
            size = op.scratch(n)
            if size > 0:
                scratch.append((Buffer([], size, i, i), n))
        if not n.subgraphs:
            continue
        for binding in _bindings(n):
            sub = binding.graph
            for formal, bound in zip(sub.inputs, binding.inputs, strict=True):
                if bound is None:
                    b = Buffer([formal], formal.storage_bytes, i, node_end)
                    buffers.append(b)
                else:
                    assert not bound.is_const, f"node '{n.name}': a constant is bound to a subgraph input"
                    b = buf_of[id(bound)]
                    b.values.append(formal)
                    b.end = max(b.end, node_end)
                buf_of[id(formal)] = b
            for sub_out, node_out in zip(sub.outputs, binding.outputs, strict=True):
                # Outputs the subgraph computes itself (not a formal, a constant or a repeat: those are copied).
                if node_out is not None and sub_out.producer is not None and id(sub_out) not in buf_of:
                    buf_of[id(sub_out)] = buf_of[id(node_out)]
            _place_nodes(sub, False, steps, last_use, buf_of, buffers, scratch)


def _dies_here(b: Buffer, i: int, last_use: dict[int, int]) -> bool:
    """Whether every value of activation buffer `b` is read for the last time at step `i`."""
    return b.region is Region.ACTIVATIONS and b.end == i and all(last_use.get(id(m), -1) <= i for m in b.values)


def _shareable_input(graph, node, op, out, i, buf_of, last_use) -> Buffer | tuple[Buffer, int] | None:
    """The buffer output 0 of `node` may share, or (input 0's buffer, bytes above it) where a buffer of its own
    overlaps input 0's (OpDef.overlap)."""
    if graph.is_output(out):
        return None
    if op.alias:
        src = node.inputs[0]
        if src is not None and not src.is_const and src.type.nbytes == out.type.nbytes:
            return buf_of[id(src)]
        return None
    if op.overlap is not None:
        src = node.inputs[0]
        if src is not None and not src.is_const and _dies_here(buf_of[id(src)], i, last_use):
            at = op.overlap(node)
            if at is not None:
                return buf_of[id(src)], at
    if not op.inplace:
        return None
    for slot, v in enumerate(node.inputs):
        if v is None or v.is_const or (op.inplace is not True and slot not in op.inplace):
            continue
        b = buf_of[id(v)]
        if (
            v.shape == out.shape
            and v.dtype.itemsize == out.dtype.itemsize
            and v.blocked == out.blocked
            and _dies_here(b, i, last_use)
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
