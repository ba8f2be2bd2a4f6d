"""The target table: one entry per target, no target branches elsewhere in the code."""

from __future__ import annotations

from dataclasses import dataclass

from ember.errors import OptionError


@dataclass(frozen=True)
class Target:
    name: str
    triple: str | None  # None: the host compiler's default
    cflags: tuple[str, ...]
    pointer_bits: int
    cpu: str = "native"  # default for --cpu
    cpu_flag: str = "-march={cpu}"  # how --cpu reaches the compiler
    has_fpu: bool = True
    float_abi: str = "hard"
    description: str = ""


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("host", None, (), 64, float_abi="none", description="this machine, system C compiler"),
    )
}


def get_target(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise OptionError(f"unknown target '{name}'; known: {', '.join(sorted(TARGETS))}") from None
