"""Requantisation ties on the cross targets' integer paths: tests/ops/test_quant_ties.py's QDQ chain
(1x1, depthwise and 3x3 convolutions and a residual QAdd at power-of-two scales, where many results
land exactly on .5) compiled for each Linux target and run under qemu-user, equal to ONNX's reference
bit for bit. The targets' product paths (AArch64 NEON and SDOT, ARMv7 NEON and DSP, RISC-V's portable
code) have no rounding of their own: all requantise through quant.c's EMBER_Q_ROUND_SHIFT, pixel by pixel
(ember_q_requant) or, for tiles of 16 pixels (SDOT, portable), in ember_qrun's runs; these cases see a
change to either."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

import ember
from tests.cross import require_tools
from tests.ops.test_quant_ties import chain_model
from tests.support import crossrun

# (target, cpu): the int8 product path each takes (qgemm.c EMBER_Q_PATH)
CASES = [("aarch64", None),  # NEON
         ("aarch64", "cortex-a76"),  # SDOT
         ("armv7", None),  # no NEON: the DSP extension's SMLAD
         ("armv7", "cortex-a7"),  # NEON
         ("riscv64", None)]  # the portable path


@pytest.mark.parametrize(("target", "cpu"), CASES, ids=[f"{t}-{c or 'default'}" for t, c in CASES])
def test_chain_ties_on_target(tmp_path: Path, target: str, cpu: str | None) -> None:
    require_tools(target, crossrun.missing_tools(target))
    model, feeds = chain_model()
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out", target=target, **({"cpu": cpu} if cpu else {}))
    got = crossrun.run_linux(bundle.path, target, feeds, tmp_path / "run")["y"]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])
