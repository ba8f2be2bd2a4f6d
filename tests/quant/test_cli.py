"""`ember profile` then `ember compile --profile --quantize int8` from the command line; the user errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from ember.cli import main
from ember.reference import onnxruntime_session
from tests.quant.conftest import build_cnn, calibration_data


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 1
    lines = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("ember: warning: ")]
    assert len(lines) == 1 and lines[0].startswith("ember: error: "), lines
    return lines[0]


def test_profile_then_quantized_compile(cnn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Outputs of the int8 bundle vs the float model (onnxruntime): max abs error <= 0.02 on probabilities,
    and the same top-1 class on at least 7 of 8 random inputs (the logits of an untrained net are close)."""
    np.savez(tmp_path / "calib.npz", x=calibration_data(24))
    assert main(["profile", str(cnn), str(tmp_path / "calib.npz"), "-o", str(tmp_path / "p.yaml")]) == 0
    assert "profile of 10 tensors from 24 sample(s)" in capsys.readouterr().out
    assert main(["compile", str(cnn), "-o", str(tmp_path / "q"), "-O", "1", "--profile", str(tmp_path / "p.yaml"),
                 "--quantize", "int8", "--schema", "symmetric", "--calibration", "mse", "--keep-float", "Softmax"]) == 0
    out = capsys.readouterr().out
    assert "quantized        : int8/int8, schema symmetric, calibration mse" in out
    manifest = yaml.safe_load((tmp_path / "q" / "cnn.json").read_text())
    assert manifest["options"]["keep_float"] == ["Softmax"] and manifest["options"]["quantize"] == "int8"
    from ember.runtime.loader import load

    bundle = load(tmp_path / "q")
    sess = onnxruntime_session(str(cnn))
    agree = 0
    for x in calibration_data(8, seed=11):
        got, ref = bundle.run({"x": x[None]})["prob"], sess.run(None, {"x": x[None]})[0]
        assert np.abs(got - ref).max() <= 0.02
        agree += int(got.argmax() == ref.argmax())
    assert agree >= 7


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    text = capsys.readouterr().out
    for flag in ("--image-mode", "--channel-order", "--layout", "--mean", "--std", "--input"):
        assert flag in text
    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    text = capsys.readouterr().out
    for flag in ("--quantize", "--profile", "--schema", "--precision", "--bias", "--per-channel", "--calibration",
                 "--keep-float", "--io", "--weights"):
        assert flag in text


def test_user_errors(cnn: Path, cnn_profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "b")
    assert "--quantize int8 needs --profile FILE" in _error(capsys, "compile", str(cnn), "-o", out,
                                                            "--quantize", "int8")
    assert "--profile needs --quantize int8" in _error(capsys, "compile", str(cnn), "-o", out,
                                                       "--profile", str(cnn_profile))
    assert "--keep-float: unknown operator 'Sofmax'" in _error(
        capsys, "compile", str(cnn), "-o", out, "--profile", str(cnn_profile), "--quantize", "int8",
        "--keep-float", "Sofmax")
    assert "--keep-float needs --quantize int8" in _error(capsys, "compile", str(cnn), "-o", out, "--keep-float", "Add")
    assert "nope.yaml: no such profile file" in _error(capsys, "compile", str(cnn), "-o", out, "--quantize", "int8",
                                                       "--profile", str(tmp_path / "nope.yaml"))
    (tmp_path / "junk.yaml").write_text("just: text\n")
    assert "junk.yaml: not an ember profile" in _error(capsys, "compile", str(cnn), "-o", out, "--quantize", "int8",
                                                       "--profile", str(tmp_path / "junk.yaml"))
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 truncated")  # a JPEG header, then nothing decodable
    assert "bad.jpg: cannot read the image" in _error(capsys, "profile", str(cnn), str(bad), "-o", out)
    np.save(tmp_path / "small.npy", np.zeros((3, 5, 5), np.float32))
    assert "does not fit input 'x' [1, 3, 12, 12]" in _error(capsys, "profile", str(cnn), str(tmp_path / "small.npy"),
                                                            "-o", out)
    assert "--input y: the model has no input of that name (inputs: x)" in _error(
        capsys, "profile", str(cnn), str(tmp_path / "small.npy"), "-o", out, "--input", "y")
    assert not (tmp_path / "b").exists()


def test_profile_of_another_model(cnn_profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same tensor names, other weights: a warning, and the compile goes on. Other names: an error naming one."""
    other = build_cnn(tmp_path / "cnn.onnx", seed=5)
    assert main(["compile", str(other), "-o", str(tmp_path / "q"), "-O", "1", "--quantize", "int8",
                 "--profile", str(cnn_profile)]) == 0
    assert "was made from another model file" in capsys.readouterr().err
    doc = yaml.safe_load(cnn_profile.read_text())
    del doc["tensors"]["sum"]
    (tmp_path / "partial.yaml").write_text(yaml.safe_dump(doc))
    line = _error(capsys, "compile", str(other), "-o", str(tmp_path / "q2"), "--quantize", "int8",
                  "--profile", str(tmp_path / "partial.yaml"))
    assert "partial.yaml: no range for tensor 'sum' (output of node 'Add_7' (Add))" in line
