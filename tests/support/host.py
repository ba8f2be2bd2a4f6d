"""What the machine running the tests has."""

from __future__ import annotations

from pathlib import Path


def cpu_has(*flags: str) -> bool:
    """Whether /proc/cpuinfo's first processor lists every one of `flags` (False where there is no such file)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    have = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))
    return all(f in have for f in flags)
