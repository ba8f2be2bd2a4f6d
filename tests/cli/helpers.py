"""Shared by the CLI tests: run `ember`, build tiny models, snapshot folders to prove nothing else changed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]


def ember(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env)


def one_error_line(res: subprocess.CompletedProcess) -> str:
    """The run failed with exit code 1 and exactly one `ember: error:` line, no traceback."""
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ember: error: ")
    return lines[0]


def save_model(path: Path, nodes, inputs, outputs, inits=(), opset: int = 17) -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def add_model(path: Path, shape=(2, 3)) -> Path:
    """y = x + [0, 1, 2]: the smallest model with a weight."""
    c = numpy_helper.from_array(np.arange(3, dtype=np.float32), "c")
    return save_model(path, [helper.make_node("Add", ["x", "c"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))], [c])


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative path -> sha256), hidden ones included."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def user_files(folder: Path) -> dict[str, str]:
    """Files a user keeps next to a bundle, with the suffixes the old bundle writer deleted."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"main.c": "int main(void) { return 0; }\n", "todo.txt": "ship it\n", "config.json": '{"a": 1}\n',
             "util.h": "#define UTIL 1\n", "libfoo.so": "not really\n", "graph.dot": "digraph {}\n",
             "data.bin": "\x00\x01", "old.o": "obj"}
    for name, text in files.items():
        (folder / name).write_text(text)
    return snapshot(folder)
