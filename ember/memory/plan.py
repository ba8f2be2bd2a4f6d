"""The result of memory planning: where each value lives in Glow's three regions.

Code generation reads a plan; ember/memory/planner.py makes one (and needs the operator registry).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import BinaryIO

import numpy as np

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
    scratch: dict[int, int] = field(default_factory=dict)  # id(node) -> offset in scratch_region
    scratch_region: Region = Region.ACTIVATIONS  # MUTABLE when inputs are reused (planner.py: one region)
    # (offset, little-endian bytes as a uint8 array): views of the graph's constants, in offset order.
    constants: list[tuple[int, np.ndarray]] = field(default_factory=list)
    constant_size: int = 0
    mutable_size: int = 0
    activations_size: int = 0
    lower_bound: int = 0  # peak of simultaneously live activation bytes for this node order
    lifetimes: list[Lifetime] = field(default_factory=list)  # every activation buffer, for the report

    def where(self, v: Value) -> tuple[Region, int]:
        return self.location[id(v)]

    def constant_pieces(self) -> Iterator[memoryview]:
        """The constant region's bytes in order (the weights and the zero padding between them), without
        assembling them: a model's weights are written out as they are held, never copied whole."""
        at = 0
        for off, raw in self.constants:
            if off > at:
                yield memoryview(bytes(off - at))
            yield raw.data
            at = off + raw.size
        if self.constant_size > at:
            yield memoryview(bytes(self.constant_size - at))

    def write_constants(self, f: BinaryIO) -> None:
        for piece in self.constant_pieces():
            f.write(piece)

    def constant_bytes(self) -> bytearray:
        buf = bytearray(self.constant_size)
        for off, raw in self.constants:
            buf[off : off + raw.size] = raw.data
        return buf
