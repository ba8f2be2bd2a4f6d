"""The layer rules of ARCHITECTURE.md: only the frontends read model formats."""

from __future__ import annotations

import re
from pathlib import Path

import ember

ROOT = Path(ember.__file__).parent
# What may name onnx: the frontends (they read the format), validation and the CLI/API that call
# onnxruntime or hand a model file to a frontend.
_ALLOWED = ("frontends/", "validate.py")
_IMPORT = re.compile(r"^\s*(?:import|from)\s+(onnx|onnxruntime)\b", re.M)


def test_no_module_below_the_frontends_imports_onnx() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(_ALLOWED):
            continue
        for m in _IMPORT.finditer(path.read_text()):
            offenders.append(f"{rel}: {m.group(0).strip()}")
    assert not offenders, "modules outside ember/frontends import onnx:\n" + "\n".join(offenders)
