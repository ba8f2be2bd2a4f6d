"""The full-integer LSTM (TFLite's integer arithmetic, ember/ops/lstm_int.py) on microcontrollers under QEMU:
one call with carried states (`--state io`) gives the same output and next-state bytes as the host bundle,
which tests/frontends/test_tflite_lstm_int8.py holds bit-exact with LiteRT and TFLite Micro. Cortex-M4 with
LiteRT's arithmetic, Cortex-M0 (no DSP, no unaligned access) with TFLite Micro's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from tests.cross import require_tools
from tests.support import mcu

MODEL = Path(__file__).resolve().parent.parent / "fixtures" / "tflite" / "lstm_int8_time_major.tflite"


@pytest.mark.parametrize("target, rounding", [("cortex-m4", "litert"), ("cortex-m0", "micro")])
def test_lstm_int8_step_matches_host(target: str, rounding: str, tmp_path: Path) -> None:
    require_tools(target, mcu.missing_tools(target))
    host = ember.compile(MODEL, tmp_path / "host", state="io", opt_level=1, tflite_rounding=rounding)
    rng = np.random.default_rng(22)
    feed = {i["name"]: rng.integers(-128, 128, i["shape"]).astype(i["dtype"]) for i in host.manifest["inputs"]}
    want = host.run(feed)
    ember.compile(MODEL, tmp_path / "b", state="io", target=target, tflite_rounding=rounding)
    got = mcu.run_on_mcu(tmp_path / "b", target, feed, tmp_path / "work")
    assert set(got) == set(want)
    for name, v in want.items():
        np.testing.assert_array_equal(got[name].reshape(v.shape), v, err_msg=name)
