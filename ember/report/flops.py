"""Floating-point work of a graph: the sum of each node's OpDef.flops (2 x multiply-accumulates of
convolutions and matrix products, the convention GFLOP/s figures for CNNs and transformers use;
elementwise work is not counted)."""

from __future__ import annotations

from ember.ir.graph import Graph, Node
from ember.ops import registry


def node_flops(node: Node) -> int:
    count = registry.get(node.op).flops
    return count(node) if count is not None else 0


def graph_flops(graph: Graph) -> int:
    return sum(node_flops(n) for n in graph.nodes)
