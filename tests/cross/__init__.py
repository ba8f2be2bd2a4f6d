"""Bundles for every cross target, run on emulated boards (QEMU), qemu-user and wasmtime."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest


def require_tools(target: str, missing: list[str]) -> None:
    """Skip naming what to install; in CI, which installs every tool (scripts/test.sh), fail instead."""
    if missing:
        msg = f"{target} needs " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def copy_bundle(src: Path, dst: Path) -> Path:
    """A bundle folder to tamper with, without the host library and the cache's markers."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.so", "*.lock", ".complete"))
    return dst


def understate_activations(bundle: Path, name: str, by: int = 32) -> None:
    """Make NAME.h claim `by` fewer activation bytes than the bundle uses (for the guard-byte tests)."""
    header = bundle / f"{name}.h"
    text, n = re.subn(rf"(#define {name.upper()}_ACTIVATIONS_MEM_SIZE )(\d+)", lambda m: f"{m[1]}{int(m[2]) - by}",
                      header.read_text())
    assert n == 1
    header.write_text(text)
