"""A 16x8 TFLite network (int16 activations, int8 weights) on Cortex-M4 (QEMU): the portable int16 kernels
(kernels/q16.c) give LiteRT's and TFLite Micro's outputs byte for byte, as the host build does
(tests/frontends/test_tflite_int16.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import ember
from tests.cross import require_tools
from tests.cross.tflite_firmware import assert_firmware_bit_exact
from tests.frontends.tflite_support import FIXTURES
from tests.support import mcu


@pytest.mark.parametrize("rounding", ["litert", "micro"])
def test_tflite_int16_network_on_qemu_bit_exact(tmp_path: Path, rounding: str) -> None:
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / "kws_cnn_int16.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="kws16", target=target, tflite_rounding=rounding)
    assert_firmware_bit_exact(bundle, path, target, rounding, tmp_path / "run")


@pytest.mark.parametrize("name", ["op_batch_matmul_int16", "op_mean_axes_int16"])
def test_tflite_int16_matmul_and_reduce_on_qemu_bit_exact(tmp_path: Path, name: str) -> None:
    """BATCH_MATMUL (ember_q16_matmul) and MEAN over [1, 3] (ember_q16_reduce) built for Cortex-M4 give TFLite
    Micro's outputs byte for byte."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="m", target=target, tflite_rounding="micro")
    assert_firmware_bit_exact(bundle, path, target, "micro", tmp_path / "run")


@pytest.mark.parametrize(("name", "rounding"), [("op_tanh_int16", "micro"), ("op_reduce_prod_int16", "litert"),
                                                ("op_gelu_int16", "litert"), ("op_rsqrt_int16", "micro")])
def test_tflite_int16_activations_on_qemu_bit_exact(tmp_path: Path, name: str, rounding: str) -> None:
    """TANH (ember_q16_sigmoid), REDUCE_PROD (ember_q16_reduce's running product), GELU (ember_q16_lookup) and TFLite
    Micro's RSQRT (ember_q16_rsqrt) built for Cortex-M4 give the interpreter's outputs byte for byte (LiteRT's where
    Micro has no int16 kernel)."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path / "out", name="m", target=target, tflite_rounding=rounding)
    assert_firmware_bit_exact(bundle, path, target, rounding, tmp_path / "run")
