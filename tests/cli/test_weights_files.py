"""NAME.weights.txt on request, phase timings, and the object named in compile's summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tests.cli.helpers import ember, save_model


def _weighted_model(path: Path) -> Path:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    return save_model(path, [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])


def test_no_weights_txt_writes_bin_only_and_removes_a_stale_txt(tmp_path: Path) -> None:
    model = _weighted_model(tmp_path / "mm.onnx")
    out = tmp_path / "out"
    res = ember("compile", str(model), "-o", str(out))
    assert res.returncode == 0, res.stderr
    text = (out / "mm.weights.txt").read_text()
    assert bytes(int(c, 16) for c in text.replace(",", " ").split()) == (out / "mm.weights.bin").read_bytes()
    assert "(mm.o)" in res.stdout and "NAME.o" not in res.stdout
    res = ember("compile", str(model), "-o", str(out), "--no-weights-txt")
    assert res.returncode == 0, res.stderr
    assert not (out / "mm.weights.txt").exists()  # the earlier bundle's text would no longer match
    weights = (out / "mm.weights.bin").read_bytes()
    manifest = json.loads((out / "mm.json").read_text())
    assert len(weights) == manifest["memory"]["constant"]
    assert weights == bytes(int(c, 16) for c in text.replace(",", " ").split())
    assert "mm.weights.bin" in (out / "mm.h").read_text()


def test_compile_reports_its_phases(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = ember("compile", str(_weighted_model(tmp_path / "mm.onnx")), "-o", str(out))
    assert res.returncode == 0, res.stderr
    seconds = json.loads((out / "mm.json").read_text())["seconds"]
    assert list(seconds) == ["load", "passes", "plan", "codegen", "cc", "write"]
    assert all(v >= 0 for v in seconds.values()) and seconds["cc"] > 0
    line = next(ln for ln in res.stdout.splitlines() if "compiled in" in ln)
    assert all(k in line for k in seconds)
