"""Bundles for every cross target, run on emulated boards (QEMU), qemu-user and wasmtime."""

from __future__ import annotations

import os

import pytest


def require_tools(target: str, missing: list[str]) -> None:
    """Skip naming what to install; in CI, which installs every tool (scripts/test.sh), fail instead."""
    if missing:
        msg = f"{target} needs " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
