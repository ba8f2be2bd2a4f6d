"""Dead-code removal: drop nodes none of whose outputs reach a graph output."""

from __future__ import annotations

from ember.ir.graph import Graph


def remove_dead_nodes(graph: Graph) -> None:
    live = {id(v) for v in graph.outputs}
    kept = []
    for node in reversed(graph.nodes):
        if any(v is not None and id(v) in live for v in node.outputs):
            kept.append(node)
            live.update(id(v) for v in node.inputs if v is not None)
    kept.reverse()
    graph.nodes = kept
    # Optional outputs nobody reads become absent, so kernels skip computing them (a control-flow node's
    # outputs stay: its subgraphs are bound to them).
    for node in graph.nodes:
        if node.subgraphs:
            continue
        node.outputs = [v if v is None or id(v) in live or k == 0 else None for k, v in enumerate(node.outputs)]
