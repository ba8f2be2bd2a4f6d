"""A full-integer TFLite model's firmware outputs against the interpreter its rounding follows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ember
from tests.frontends.test_tflite_int8 import micro_outputs
from tests.frontends.tflite_support import inputs_for, litert, run_litert
from tests.support import mcu


def assert_firmware_bit_exact(bundle: ember.Bundle, path: Path, target: str, rounding: str, work: Path) -> None:
    """Run `bundle` (compiled from `path` for `target`) under QEMU on seed-0 inputs: its outputs must equal
    LiteRT's (`rounding` "litert") or TFLite Micro's ("micro") byte for byte."""
    interp = litert(path)
    xs = inputs_for(interp, 0)
    names = [v["name"] for v in bundle.manifest["inputs"]]
    got = mcu.run_firmware(bundle.path, target, dict(zip(names, xs, strict=True)), work).outputs
    ref = run_litert(interp, xs) if rounding == "litert" else micro_outputs(path, xs, len(got))
    for r, v in zip(ref, [got[v["name"]] for v in bundle.manifest["outputs"]], strict=True):
        np.testing.assert_array_equal(np.asarray(v).reshape(r.shape), r)
