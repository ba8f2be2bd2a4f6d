"""A 16x8 TFLite network (int16 activations, int8 weights) on Cortex-M4 (QEMU): the portable int16 kernels
(kernels/q16.c) give LiteRT's and TFLite Micro's outputs byte for byte, as the host build does
(tests/frontends/test_tflite_int16.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from tests.cross import require_tools
from tests.frontends.test_tflite_int8 import micro_outputs
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_litert
from tests.support import mcu


@pytest.mark.parametrize("rounding", ["litert", "micro"])
def test_tflite_int16_network_on_qemu_bit_exact(tmp_path: Path, rounding: str) -> None:
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / "kws_cnn_int16.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="kws16", target=target, tflite_rounding=rounding)
    interp = litert(path)
    xs = inputs_for(interp, 0)
    names = [v["name"] for v in bundle.manifest["inputs"]]
    got = mcu.run_firmware(bundle.path, target, dict(zip(names, xs, strict=True)), tmp_path / "run").outputs
    ref = run_litert(interp, xs) if rounding == "litert" else micro_outputs(path, xs, len(got))
    for r, v in zip(ref, [got[v["name"]] for v in bundle.manifest["outputs"]], strict=True):
        np.testing.assert_array_equal(np.asarray(v).reshape(r.shape), r)
