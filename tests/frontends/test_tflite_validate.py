"""`ember validate` on a TFLite model: LiteRT is the reference, float and int8 models alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from ember.cli import main
from tests.frontends.tflite_support import FIXTURES


@pytest.mark.parametrize("model, kind", [("kws_cnn", "float"), ("kws_cnn_int8", "int8"),
                                         ("kws_cnn_int8_float_io", "int8")])
def test_validate_against_litert(model: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / f"{model}.tflite")
    assert main(["compile", path, "-o", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert main(["validate", path, str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{kind} bundle") and out.strip().endswith("PASS")


def test_validate_stateful_model_resets_litert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SVDF keeps state in LiteRT between invocations, a bundle does not: validating three samples passes only
    because the reference resets LiteRT's variables before each one."""
    import numpy as np

    path = str(FIXTURES / "svdf.tflite")
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).uniform(-1, 1, (3, 2, 6)).astype(np.float32))
    assert main(["compile", path, "-o", str(tmp_path / "b"), "-O1"]) == 0
    capsys.readouterr()
    assert main(["validate", path, str(tmp_path / "b"), "--input", f"x={data}"]) == 0
    out = capsys.readouterr().out
    assert "3 sample(s)" in out and out.strip().endswith("PASS"), out
