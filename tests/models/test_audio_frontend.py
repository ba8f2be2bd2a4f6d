"""A keyword-spotting feature extractor against onnxruntime: log-mel energies of a raw waveform.

signal [1, samples, 1] -> STFT (HannWindow, run-time frames) -> magnitude (ReduceSumSquare, Sqrt) ->
MatMul with MelWeightMatrix -> Log. The window and the mel matrix fold to constants; the STFT is the C
kernel: a radix-2 FFT for 256-sample frames, the direct DFT for 400-sample (25 ms at 16 kHz) ones. The
bundle runs in Python and, built with AddressSanitizer + UBSan, in the C driver; built for Cortex-M4 it
needs no double-precision soft float, and it runs on the emulated board where QEMU is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.cross import require_tools
from tests.support import cdriver, mcu
from tests.support.models import assert_close, onnxruntime_outputs

RATE = 16000
# name: (samples, frame length, frame step, mel bins)
CASES = {"radix2_frames": (4000, 256, 128, 40), "direct_25ms_frames": (3200, 400, 160, 32)}


def _model(path: Path, samples: int, frame: int, step: int, mels: int) -> None:
    consts = {
        "size": np.asarray(frame, np.int64), "step": np.asarray(step, np.int64),
        "mels": np.asarray(mels, np.int64), "dft_length": np.asarray(frame, np.int64),
        "rate": np.asarray(RATE, np.int64), "low": np.asarray(20.0, np.float32),
        "high": np.asarray(7600.0, np.float32), "eps": np.asarray(1e-6, np.float32),
    }
    nodes = [
        helper.make_node("HannWindow", ["size"], ["window"]),
        helper.make_node("STFT", ["signal", "step", "window"], ["spectrum"]),  # [1, frames, frame/2 + 1, 2]
        helper.make_node("ReduceSumSquare", ["spectrum"], ["power"], axes=[-1], keepdims=0),
        helper.make_node("Sqrt", ["power"], ["magnitude"]),
        helper.make_node("MelWeightMatrix", ["mels", "dft_length", "rate", "low", "high"], ["mel_matrix"]),
        helper.make_node("MatMul", ["magnitude", "mel_matrix"], ["mel"]),
        helper.make_node("Add", ["mel", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["features"]),
    ]
    graph = helper.make_graph(nodes, "kws_frontend",
                              [helper.make_tensor_value_info("signal", TensorProto.FLOAT, (1, samples, 1))],
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _waveform(samples: int, seed: int) -> np.ndarray:
    """Two tones and noise: energy in some mel bands, little in others (the log sees both)."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / RATE
    x = 0.6 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 3100 * t) + 0.05 * rng.standard_normal(samples)
    return x.astype(np.float32).reshape(1, samples, 1)


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_mel_frontend_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    samples, frame, step, mels = CASES[case]
    path = tmp_path / "frontend.onnx"
    _model(path, samples, frame, step, mels)
    x = {"signal": _waveform(samples, len(case))}
    ref = onnxruntime_outputs(path, x)["features"]
    assert ref.shape == (1, 1 + (samples - frame) // step, mels)
    bundle = ember.compile(path, tmp_path / "out")
    ops = [n["op"] for n in bundle.manifest["nodes"]]
    assert "STFT" in ops and not {"HannWindow", "MelWeightMatrix"} & set(ops), ops  # the tables folded
    assert_close(bundle.run(x)["features"], ref, case)
    assert_close(cdriver.run(bundle.path, tmp_path / "drv", x, sanitize=True)["features"], ref, f"{case} (ASan)")


_DOUBLE = re.compile(r"^__(aeabi_(d\w+|\w+2d)|\w*df\w*)$")  # double-precision soft float helpers


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_mel_frontend_on_cortex_m4(case: str, tmp_path: Path) -> None:
    samples, frame, step, mels = CASES[case]
    path = tmp_path / "frontend.onnx"
    _model(path, samples, frame, step, mels)
    bundle = ember.compile(path, tmp_path / "m4", target="cortex-m4")
    if shutil.which("arm-none-eabi-nm"):
        res = subprocess.run(["arm-none-eabi-nm", "-u", str(bundle.path / f"{bundle.name}.o")], capture_output=True,
                             text=True, check=True)
        doubles = [s for s in res.stdout.split() if _DOUBLE.match(s)]
        assert not doubles, f"double-precision soft float in a float32 front end: {doubles}"
    require_tools("cortex-m4", mcu.missing_tools("cortex-m4"))
    x = {"signal": _waveform(samples, 3)}
    ref = onnxruntime_outputs(path, x)["features"]
    assert_close(mcu.run_on_mcu(bundle.path, "cortex-m4", x, tmp_path / "qemu")["features"], ref,
                 f"{case} on cortex-m4")
