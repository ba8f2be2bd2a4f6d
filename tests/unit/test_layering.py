"""The IR, operators, passes, quantizer, planner and code generator know no frontend: none of them imports
onnx (directly or through ember.frontends), so a second frontend can produce the same IR."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import ember

_ROOT = Path(ember.__file__).parent
_NEUTRAL = ("ir", "ops", "passes", "quant", "memory", "codegen")


def test_no_neutral_module_names_onnx_or_a_frontend() -> None:
    offenders = []
    for package in _NEUTRAL:
        for path in sorted((_ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                for name in names:
                    if name.split(".")[0] == "onnx" or name.startswith("ember.frontends"):
                        offenders.append(f"{path.relative_to(_ROOT.parent)}:{node.lineno} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_importing_the_neutral_core_loads_no_onnx() -> None:
    # ember/__init__.py is the API (it picks the ONNX frontend): skipped, to see what the core itself loads.
    code = (
        "import importlib, pkgutil, sys, types\n"
        f"pkg = types.ModuleType('ember'); pkg.__path__ = [{str(_ROOT)!r}]; pkg.__version__ = '0'\n"
        "sys.modules['ember'] = pkg\n"
        f"for pkg in {_NEUTRAL!r}:\n"
        "    mod = importlib.import_module('ember.' + pkg)\n"
        "    for info in pkgutil.walk_packages(mod.__path__, mod.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "from ember.ops import registry\n"
        "registry.load_all()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'onnx' or m.startswith('ember.frontends'))\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(_ROOT.parent)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
