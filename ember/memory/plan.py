"""The result of memory planning: where each value lives in Glow's three regions.

Code generation reads a plan; ember/memory/planner.py makes one (and needs the operator registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ember.ir.graph import Value

ALIGN = 64


def align(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


class Region(Enum):
    CONSTANT = "constantWeight"
    MUTABLE = "mutableWeight"
    ACTIVATIONS = "activations"


@dataclass(frozen=True)
class Lifetime:
    """One activation buffer as the planner placed it (for reports): node steps start..end inclusive."""

    start: int
    end: int
    offset: int
    size: int
    label: str


@dataclass
class MemoryPlan:
    location: dict[int, tuple[Region, int]] = field(default_factory=dict)
    scratch: dict[int, int] = field(default_factory=dict)  # id(node) -> activations offset
    constants: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, raw bytes)
    constant_size: int = 0
    mutable_size: int = 0
    activations_size: int = 0
    lower_bound: int = 0  # peak of simultaneously live activation bytes for this node order
    lifetimes: list[Lifetime] = field(default_factory=list)  # every activation buffer, for the report

    def where(self, v: Value) -> tuple[Region, int]:
        return self.location[id(v)]
