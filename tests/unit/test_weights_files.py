"""NAME.weights.bin and NAME.weights.txt are streamed from the plan's constants, a block at a time: the
bytes must be exactly the constant region, and the text exactly its C array body, across block edges."""

from __future__ import annotations

import io

import numpy as np
import pytest

from ember.codegen import bundle
from ember.codegen.bundle import write_weights_txt
from ember.memory.plan import MemoryPlan, align


def _plan(sizes: list[int], seed: int = 0) -> MemoryPlan:
    rng = np.random.default_rng(seed)
    plan = MemoryPlan()
    off = 0
    for n in sizes:
        plan.constants.append((off, rng.integers(0, 256, n, dtype=np.uint8)))
        off = align(off + max(n, 1))
    plan.constant_size = off
    return plan


def _reference_txt(data: bytes) -> bytes:
    if not data:
        return b"0x00,\n"
    lines = []
    for i in range(0, len(data), 16):
        cells = [f"0x{b:02X}," for b in data[i : i + 16]]
        lines.append(" ".join(cells) + "\n")
    return "".join(lines).encode()


@pytest.mark.parametrize("sizes", [[], [1], [5, 17, 64, 3], [70_000, 1, 129], [(1 << 20) + 37, 1000, (1 << 19) + 5]])
def test_streamed_files_are_the_constant_region(sizes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "_TXT_BLOCK", 1 << 16)  # many block edges, some inside one constant
    plan = _plan(sizes)
    expected = bytes(plan.constant_bytes())
    assert len(expected) == plan.constant_size
    for off, raw in plan.constants:
        assert expected[off : off + raw.size] == raw.tobytes()
    binary = io.BytesIO()
    plan.write_constants(binary)
    assert binary.getvalue() == expected
    text = io.BytesIO()
    write_weights_txt(plan, text)
    assert text.getvalue() == _reference_txt(expected)
