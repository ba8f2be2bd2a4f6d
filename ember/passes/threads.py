"""Which kernel calls of a multi-threaded bundle (`--threads N`) divide among the threads.

A node is divided when its OpDef says how (`split`, ember/ops/split.py) and its work pays for waking
the other threads: below MIN_WORK floating-point operations a call takes a few microseconds, about
what handing parts to the pool costs, so small layers, elementwise ops and everything else stay on
the calling thread. The number of parts is fixed here, at compile time (static partitioning): at run
time `NAME_set_threads` only changes how many threads share those parts.
"""

from __future__ import annotations

import math

from ember.ir.graph import Graph, Node
from ember.ops import registry
from ember.ops.parallel import PARTS_ATTR, max_parts, relayout

MIN_WORK = 1_000_000


def _work(node: Node) -> int:
    op = registry.get(node.op)
    if op.flops is not None:
        return op.flops(node)
    # Integer convolutions and products have no FLOP count: 2 x outputs x the length of a row of their
    # packed weights (input 2), or of input 0's last axis.
    x, y = node.input(2) if len(node.inputs) > 2 and node.input(2) is not None else node.input(0), node.outputs[0]
    return 0 if x is None or y is None or not x.shape else 2 * math.prod(y.shape) * x.shape[-1]


def split_for_threads(graph: Graph, threads: int) -> None:
    for node in graph.nodes:
        op = registry.get(node.op)
        if op.split is None:
            continue
        split = op.split(node)
        if split is None or (split.work if split.work is not None else _work(node)) < MIN_WORK:
            continue
        parts = max_parts(split, threads)
        if parts > 1:
            node.attrs[PARTS_ATTR] = parts
            relayout(graph, node, split, parts)
