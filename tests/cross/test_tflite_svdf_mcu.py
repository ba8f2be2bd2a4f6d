"""The full-integer SVDF (TFLite's integer arithmetic, ember/ops/svdf.py) on microcontrollers under QEMU:
one streaming step (`--state io`, a state carried over three host calls) gives the same output and next
state bytes as the host bundle, which tests/frontends/test_tflite_svdf_int8.py holds bit-exact with LiteRT
and TFLite Micro. Cortex-M4 (DSP) and Cortex-M0 (no DSP, no unaligned access)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from tests.cross import require_tools
from tests.support import mcu

MODEL = Path(__file__).resolve().parent.parent / "fixtures" / "tflite" / "svdf_int8.tflite"


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A frame and a carried state, and the host bundle's outputs for them."""
    host = ember.compile(MODEL, tmp_path_factory.mktemp("host"), state="io", opt_level=1)
    rng = np.random.default_rng(21)
    state = np.zeros((2, 40), np.int16)
    for _ in range(3):
        state = host.run({"x": rng.integers(-128, 128, (2, 8)).astype(np.int8), "state": state})["state_next"]
    feed = {"x": rng.integers(-128, 128, (2, 8)).astype(np.int8), "state": state}
    return feed, host.run(feed)


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m0"])
def test_svdf_int8_step_matches_host(target: str, step, tmp_path: Path) -> None:
    require_tools(target, mcu.missing_tools(target))
    feed, want = step
    ember.compile(MODEL, tmp_path / "b", state="io", target=target)
    got = mcu.run_on_mcu(tmp_path / "b", target, feed, tmp_path / "work")
    assert set(got) == {"y", "state_next"}
    for name in ("y", "state_next"):
        np.testing.assert_array_equal(got[name].reshape(want[name].shape), want[name], err_msg=name)
