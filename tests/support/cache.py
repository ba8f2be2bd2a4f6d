"""Models and bundles built once per test run and shared by the pytest-xdist workers.

Exporting ResNet-18 or compiling MobileNetV2 takes seconds; several tests use each of them, and
xdist may send those tests to different workers. Each artifact is built under a file lock in a
folder common to all workers of one run, so the second worker waits and reuses it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ember
from tests.support import models


@contextmanager
def locked(folder: Path, key: str) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{key}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


class ArtifactCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def model(self, name: str) -> Path:
        return models.build(name, self.root / "models")

    def bundle(self, name: str, **options: Any) -> ember.Bundle:
        """Compile model `name` (options as ember.compile takes them) once; load it here."""
        spec = models.SPECS.get(name)
        if spec is not None and spec.defines:
            options.setdefault("defines", spec.defines)
        key = name
        if options:
            digest = hashlib.sha1(json.dumps(options, sort_keys=True).encode()).hexdigest()[:10]
            key = f"{name}-{digest}"
        out = self.root / "bundles" / key
        path = self.model(name)
        with locked(self.root / "bundles", key):
            if not (out / ".complete").exists():
                ember.compile(path, out, **options)
                (out / ".complete").touch()
            # Loading links NAME.so inside the bundle folder: keep it under the lock too.
            return ember.load(out)


def shared_root(basetemp: Path) -> Path:
    """xdist workers get basetemp .../pytest-N/popen-gwK; their common parent is per run."""
    return (basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp) / "ember-shared"
