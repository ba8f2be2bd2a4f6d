"""Ops without C for an ML storage type (bfloat16, float8, float4, int4/uint4, int2/uint2) compute in its
widened type (float32; int8/uint8 for the sub-byte integers) between Casts: ember/ops/widen.py.

The ONNX frontend widens its nodes as it reads them; this pass widens the ones passes create afterwards
(and graphs from other frontends), so the C writer never meets an Add on bfloat16 bits.
"""

from __future__ import annotations

from ember.ir.graph import Graph, Value
from ember.ops.widen import needs_widening, widen


def widen_storage_types(graph: Graph) -> None:
    cache: dict[int, Value] = {}  # one widened copy of a value for all its readers
    for node in list(graph.nodes):
        if not needs_widening(node):
            continue
        before, after = widen(graph, node, cache)
        at = graph.nodes.index(node)
        for k, cast in enumerate(before):
            graph.add_node(cast, at + k)
        at = graph.nodes.index(node) + 1
        for k, cast in enumerate(after):
            graph.add_node(cast, at + k)
