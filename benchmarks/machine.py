"""What the benchmark tables name the machine by: the CPU model and the widest SIMD level it reports."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (empty where there is none: not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def simd_level(flags: set[str]) -> str:
    """The widest x86 vector extension among the CPU's flags (AArch64: NEON is always there)."""
    for level in ("avx512f", "avx2", "avx", "sse4_2"):
        if level in flags:
            return level
    return "neon" if platform.machine() in ("aarch64", "arm64") else "none"


def describe() -> dict[str, object]:
    """CPU model (a VM may show a bare family name, such as "AMD EPYC"), SIMD level and core count."""
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return {"cpu_model": info.get("model name") or platform.processor() or platform.machine(),
            "simd": simd_level(flags), "cpu_count": os.cpu_count()}


def banner(info: dict[str, object]) -> str:
    return f"CPU: {info['cpu_model']} ({info['simd']}, {info['cpu_count']} logical cores)"


def write_json(path: str | Path, result: object, note: str = "") -> None:
    """A benchmark's results as indented JSON at `path` (its folder made), and a line saying so."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}{note}")
