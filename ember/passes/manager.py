"""Runs a pass pipeline over a graph, timing each pass (shown by `ember compile -v` and the report)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ember.ir.graph import Graph
from ember.ops import registry

PassFn = Callable[[Graph], None]


def simplify_control_flow(graph: Graph) -> None:
    """Each control-flow node of `graph` simplified by its OpDef (an If with a constant condition inlined,
    constant captured values handed to the subgraphs, unread captures dropped)."""
    for node in list(graph.nodes):
        if node.subgraphs:
            fn = registry.get(node.op).simplify
            if fn is not None:
                fn(node, graph)


def each_graph(fn: PassFn) -> PassFn:
    """`fn` on the graph and then, once control flow is simplified, on every subgraph, outermost first (what
    a pass makes constant outside reaches the subgraphs that capture it before the pass runs on them)."""

    def run(graph: Graph) -> None:
        fn(graph)
        simplify_control_flow(graph)
        for node in graph.nodes:
            for sub in node.subgraphs.values():
                run(sub)

    run.__name__ = getattr(fn, "__name__", "pass")
    return run


@dataclass
class PassRecord:
    name: str
    seconds: float
    nodes_after: int


@dataclass
class PassManager:
    pipeline: list[tuple[str, PassFn]]
    records: list[PassRecord] = field(default_factory=list)
    verify: Callable[[Graph], None] | None = None

    def run(self, graph: Graph) -> Graph:
        for name, fn in self.pipeline:
            t0 = time.perf_counter()
            fn(graph)
            self.records.append(PassRecord(name, time.perf_counter() - t0, len(graph.nodes)))
            if self.verify is not None:
                self.verify(graph)
        return graph
