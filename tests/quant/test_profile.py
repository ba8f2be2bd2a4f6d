"""`ember profile`: ranges and histograms from the capture build agree with onnxruntime's tensors."""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import yaml
from PIL import Image

import ember
from ember.reference import onnxruntime_session
from ember.runtime.profile import ProfileProgress, profile_model
from tests.quant.conftest import calibration_data


def _all_tensors(model: Path, names: list[str], samples: np.ndarray) -> dict[str, np.ndarray]:
    """onnxruntime's value of every named tensor over all samples (as extra graph outputs)."""
    m = onnx.load(model)
    known = {o.name for o in m.graph.output}
    for name in names:
        if name not in known and name != m.graph.input[0].name:
            m.graph.output.append(onnx.ValueInfoProto(name=name))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxruntime_session(m.SerializeToString(), opts)
    outs = [o.name for o in sess.get_outputs()]
    per_sample = [dict(zip(outs, sess.run(outs, {"x": s[None]}), strict=True)) | {"x": s[None]} for s in samples]
    return {n: np.stack([r[n] for r in per_sample]) for n in names}


def test_profile_matches_onnxruntime(cnn: Path, cnn_profile: Path) -> None:
    doc = yaml.safe_load(cnn_profile.read_text())
    assert doc["model_sha256"] == hashlib.sha256(cnn.read_bytes()).hexdigest()
    assert doc["samples"] == 24 and doc["preprocessing"]["image_mode"] == "0to1"
    tensors = doc["tensors"]
    # IR names after the float pipeline: BN folded and Relu fused into the first Conv (its value is r1).
    assert {"x", "r1", "p1", "c2", "r3", "sum", "logits", "prob"} <= set(tensors)
    assert "c1" not in tensors and "bn" not in tensors
    ref = _all_tensors(cnn, list(tensors), calibration_data(24))
    for name, t in tensors.items():
        values = ref[name].astype(np.float32).reshape(-1)
        span = float(values.max() - values.min())
        assert t["count"] == values.size, name
        assert abs(t["min"] - values.min()) <= 1e-5 * span + 1e-7, name
        assert abs(t["max"] - values.max()) <= 1e-5 * span + 1e-7, name
        hist = t["histogram"]
        counts = np.asarray(hist["counts"])
        assert counts.sum() == values.size and len(counts) == doc["bins"]
        direct = np.histogram(values, bins=len(counts), range=(hist["lo"], hist["hi"]))[0]
        # Float kernels and onnxruntime differ in the last bits: a few values may sit across a bin edge.
        assert np.abs(direct - counts).sum() <= max(4, values.size // 1000), name


def test_capture_hooks_compile_away(cnn: Path, tmp_path: Path) -> None:
    bundle = ember.compile(cnn, tmp_path / "b")
    source = (tmp_path / "b" / "cnn.c").read_text()
    assert "EMBER_CAPTURE_TENSOR(0, " in source and "#ifdef EMBER_CAPTURE" in source
    # The normal object calls no capture function (write_bundle's freestanding check passed too).
    assert "ember_capture_tensor" not in bundle.footprint["undefined_symbols"]
    x = calibration_data(1)
    sess = onnxruntime_session(str(cnn))
    np.testing.assert_allclose(bundle.run({"x": x})["prob"], sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-6)


def test_profile_images_with_progress(cnn: Path, tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for i in range(12):
        Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)).save(folder / f"{i:02d}.png")
    log = io.StringIO()
    doc = profile_model(str(cnn), [str(folder)], tmp_path / "p.yaml", stream=log)
    assert doc["samples"] == 12 and doc["files"] == 12
    assert "profiled 12 sample(s) from 12 files" in log.getvalue()
    x = doc["tensors"]["x"]  # 0to1 scaling of uint8 pixels
    assert 0.0 <= x["min"] < 0.01 and 0.99 < x["max"] <= 1.0
    assert yaml.safe_load((tmp_path / "p.yaml").read_text())["tensors"]["x"]["count"] == 12 * 3 * 12 * 12


def test_progress_bar_on_a_terminal_only() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    bar = ProfileProgress(20, out)
    bar.update(20)
    bar.close(20)
    assert "profiling:" in out.getvalue() and "/20 [" in out.getvalue()  # tqdm's bar (redrawn at most 10/s)
    assert re.search(r"profiled 20 sample\(s\) from 20 files in [0-9.]+s\n$", out.getvalue())
    log = io.StringIO()  # not a terminal: no bar, only the summary
    bar = ProfileProgress(20, log)
    bar.update(20)
    bar.close(20)
    assert log.getvalue().startswith("profiled 20 sample(s)") and "\r" not in log.getvalue()
    quiet = Tty()
    ProfileProgress(3, quiet).close(3)  # few inputs: no bar, no summary
    assert quiet.getvalue() == ""
