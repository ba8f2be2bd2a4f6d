"""A full-integer TFLite network on Cortex-M4 and M33 (QEMU): the DSP kernels (kernels/qarm*.c) requantise
with TFLite's arithmetic, so the firmware's outputs equal LiteRT's (`tflite_rounding="litert"`) and TFLite
Micro's (`"micro"`) byte for byte, as the host build's do (tests/frontends/test_tflite_int8.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ember
from tests.cross import require_tools
from tests.cross.tflite_firmware import assert_firmware_bit_exact
from tests.frontends.tflite_support import FIXTURES
from tests.support import mcu

MODEL = "kws_cnn_int8"


@pytest.mark.parametrize(("target", "rounding"), [("cortex-m4", "litert"), ("cortex-m4", "micro"),
                                                  ("cortex-m33", "micro")])
def test_tflite_int8_network_on_qemu_bit_exact(tmp_path: Path, target: str, rounding: str) -> None:
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / f"{MODEL}.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="kws", target=target, tflite_rounding=rounding)
    text = (bundle.path / "kws.c").read_text()
    assert len(re.findall(r"^    ember_qarm_(conv|dw3|fc)\(", text, re.M)) >= 3  # not the portable path alone
    assert_firmware_bit_exact(bundle, path, target, rounding, tmp_path / "run")


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_channels_last_edges_in_place_on_qemu_bit_exact(tmp_path: Path, target: str) -> None:
    """mobilenet_like_int8's NHWC image goes into its stem convolution as it is (ops/qarm.py reads_nhwc: no layout
    Transpose in the bundle), and its outputs stay LiteRT's bytes."""
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / "mobilenet_like_int8.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="m", target=target)
    text = (bundle.path / "m.c").read_text()
    assert "Transpose" not in bundle.manifest["ops"], bundle.manifest["ops"]
    assert len(re.findall(r"^    ember_qarm_conv(_mve8)?_hwc\(", text, re.M)) == 1  # the stem
    assert_firmware_bit_exact(bundle, path, target, "litert", tmp_path / "run")
