"""Runs a pass pipeline over a graph, timing each pass (shown by `ember compile -v` and the report)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ember.ir.graph import Graph

PassFn = Callable[[Graph], None]


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
