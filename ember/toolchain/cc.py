"""Finding and running the C compiler."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ember.errors import ToolchainError
from ember.toolchain.targets import Target

# Freestanding, no math errno (so sqrt is one instruction), no calls to memcpy/memset behind our back.
# -fno-strict-aliasing: the planner reuses one activation buffer for tensors of different element
# types over time, which type-based alias analysis would be allowed to reorder across.
BASE_FLAGS = ("-std=c99", "-ffreestanding", "-fno-math-errno", "-fno-tree-loop-distribute-patterns",
              "-fno-strict-aliasing", "-Wall", "-Wextra")
SANITIZE_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")


def find_cc(cc: str | None) -> list[str]:
    cmd = (cc or "cc").split()
    if shutil.which(cmd[0]) is None:
        hint = "install gcc or clang (Debian: apt-get install gcc)" if cc is None else "check --cc"
        raise ToolchainError(f"C compiler '{cmd[0]}' not found; {hint}")
    return cmd


def compile_object(src: Path, obj: Path, target: Target, opt_level: int, reloc: str, cc: str | None,
                   cpu: str | None = None, sanitize: bool = False) -> list[str]:
    """Compile one C file to an object; returns the command used (recorded in NAME.json)."""
    cpu_flag = target.cpu_flag.format(cpu=cpu if cpu is not None else target.cpu)
    cmd = [*find_cc(cc), *BASE_FLAGS, f"-O{opt_level}", *target.cflags, cpu_flag]
    if reloc == "pic":
        cmd.append("-fPIC")
    if sanitize:
        cmd += SANITIZE_FLAGS
    cmd += ["-c", str(src), "-o", str(obj)]
    _run(cmd, f"compiling {src.name}")
    return cmd


def link_shared(objs: list[Path], out: Path, cc: str | None, sanitize: bool = False) -> None:
    cmd = [*find_cc(cc), "-shared", *(SANITIZE_FLAGS if sanitize else ()), *map(str, objs), "-o", str(out)]
    _run(cmd, f"linking {out.name}")


def _run(cmd: list[str], what: str) -> None:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise ToolchainError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if res.returncode != 0:
        err = next((ln for ln in res.stderr.splitlines() if "error" in ln), res.stderr.strip()[:300])
        raise ToolchainError(f"{what} failed: {err}")
