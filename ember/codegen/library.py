"""The C kernel library: real C99 files under kernels/, split into named blocks.

A block starts with `/*@kernel NAME [requires DEP ...]*/` and ends with `/*@end*/`. A bundle copies
in only the blocks its model uses (plus their dependencies), so NAME.c stays one translation unit
with no unused static functions (clean under -Wall -Wextra).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

KERNEL_DIR = Path(__file__).parent / "kernels"
_BLOCK = re.compile(r"/\*@kernel\s+(\w+)((?:\s+requires(?:\s+\w+)+)?)\s*\*/\n(.*?)/\*@end\*/", re.S)


@dataclass(frozen=True)
class Block:
    name: str
    requires: tuple[str, ...]
    text: str
    file: str


@cache
def blocks() -> dict[str, Block]:
    out: dict[str, Block] = {}
    for path in sorted(KERNEL_DIR.glob("*.c")):
        for m in _BLOCK.finditer(path.read_text()):
            name = m.group(1)
            reqs = tuple(m.group(2).split()[1:]) if m.group(2).strip() else ()
            if name in out:
                raise ValueError(f"kernel block {name} defined twice ({out[name].file}, {path.name})")
            out[name] = Block(name, reqs, m.group(3), path.name)
    return out


def assemble(names: set[str]) -> str:
    """Source text of the named blocks and everything they require, dependencies first, stable order."""
    lib = blocks()
    return "\n".join(lib[n].text.rstrip() + "\n" for n in ordered(names))


def ordered(names: set[str]) -> list[str]:
    """The named blocks and everything they require, dependencies first, in a stable order."""
    lib = blocks()
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        if n not in lib:
            raise KeyError(f"unknown kernel block '{n}'")
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise ValueError(f"kernel block dependency cycle at '{n}'")
        state[n] = 1
        for d in lib[n].requires:
            visit(d)
        state[n] = 2
        order.append(n)

    for n in sorted(names):
        visit(n)
    return order
