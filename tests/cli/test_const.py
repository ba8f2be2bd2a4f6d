"""--const NAME=VALUE: a graph input frozen to a constant, so the control flow it decides folds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

SR = 16000


def _ember(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True, text=True)


def sample_rate_model(tmp: Path) -> Path:
    """y = x + x at 16 kHz, x * x otherwise: an If on the `sample_rate` input (int64 scalar)."""
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    nodes = [
        helper.make_node("Constant", [], ["sr16k"], value=onnx.numpy_helper.from_array(np.array(SR, np.int64))),
        helper.make_node("Equal", ["sample_rate", "sr16k"], ["is16k"]),
        helper.make_node("If", ["is16k"], ["y"], then_branch=then_g, else_branch=else_g, name="rate_if"),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                                       helper.make_tensor_value_info("sample_rate", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    p = tmp / "rate.onnx"
    onnx.save(m, p)
    return p


def _error_line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_const_folds_the_if_and_removes_the_input(tmp_path: Path) -> None:
    model = sample_rate_model(tmp_path)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.save(tmp_path / "x.npy", x)
    for value, want in ((str(SR), x + x), ("8000", x * x)):
        out = tmp_path / f"b{value}"
        res = _ember("compile", str(model), "-o", str(out), "--const", f"sample_rate={value}")
        assert res.returncode == 0, res.stderr
        man = json.loads((out / "rate.json").read_text())
        assert [e["name"] for e in man["inputs"]] == ["x"]
        assert "If" not in man["ops"] and "Equal" not in man["ops"]
        assert "RATE_SAMPLE_RATE" not in (out / "rate.h").read_text().upper()  # no macros for it
        res = _ember("run", str(out), "--input", f"x={tmp_path / 'x.npy'}", "--output", str(tmp_path / "o.npz"))
        assert res.returncode == 0, res.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["y"], want)
        res = _ember("validate", str(model), str(out))
        assert res.returncode == 0, res.stdout + res.stderr


def test_const_from_a_npy_file_and_a_list(tmp_path: Path) -> None:
    model = sample_rate_model(tmp_path)
    np.save(tmp_path / "sr.npy", np.array(SR, np.int64))
    res = _ember("compile", str(model), "-o", str(tmp_path / "b"), "--const", f"sample_rate={tmp_path / 'sr.npy'}")
    assert res.returncode == 0, res.stderr
    res = _ember("compile", str(model), "-o", str(tmp_path / "c"), "--const", "x=1,2,3", "--const",
                 "sample_rate=8000")
    assert res.returncode == 0, res.stderr
    man = json.loads((tmp_path / "c" / "rate.json").read_text())
    assert man["inputs"] == [] and man["options"]["consts"] == {"x": [1, 2, 3], "sample_rate": 8000}
    res = _ember("run", str(tmp_path / "c"), "--output", str(tmp_path / "o.npz"))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["y"], [1, 4, 9])


def test_const_errors_are_one_line_naming_the_input(tmp_path: Path) -> None:
    model = sample_rate_model(tmp_path)
    out = str(tmp_path / "b")
    line = _error_line(_ember("compile", str(model), "-o", out, "--const", "rate=16000"))
    assert "--const" in line and "rate" in line
    line = _error_line(_ember("compile", str(model), "-o", out, "--const", "x=1,2"))
    assert "'x'" in line and "float32[3]" in line
    line = _error_line(_ember("compile", str(model), "-o", out, "--const", "sample_rate=0.5"))
    assert "'sample_rate'" in line and "int64" in line
    line = _error_line(_ember("compile", str(model), "-o", out, "--const", "sample_rate=fast"))
    assert "--const" in line and "fast" in line
    line = _error_line(_ember("compile", str(model), "-o", out, "--const", "sample_rate=1", "--const",
                              "sample_rate=2"))
    assert "twice" in line
    assert not (tmp_path / "b").exists()
