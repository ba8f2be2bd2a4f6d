"""`--weights bf16` (MACE's weight-only compression): weights stored as bfloat16, widened and computed in float32."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import ember
from ember.cli import main
from ember.errors import OptionError
from ember.quant.weights import to_bfloat16_bits
from tests.quant.conftest import calibration_data
from tests.support import models

# bfloat16 keeps 8 significant bits (relative rounding error <= 2^-9 per weight), fp16 11: 8x fp16's tolerance
# (tests/quant/test_quantize.py). Relative to the output's range; seen: mlp 1.1e-2 (sharp softmax), cnn 1e-4.
TOLERANCE = 2e-2


def _widen(bits: np.ndarray) -> np.ndarray:
    """What ember_bf16_to_f32 computes: the 16 bits become the upper half of a float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def test_narrowing_rounds_to_nearest_even() -> None:
    """Against ml_dtypes' float32 -> bfloat16 cast (round to nearest even) on ties, carries into the exponent,
    subnormals, the largest floats (which round to inf), infinities, signed zeros and random values."""
    ties = np.array([0x3F808000, 0x3F818000, 0x3F80C000, 0x3F807FFF, 0xBF818000, 0x3FFF8000, 0x7F7F8000,
                     0x7F7FFFFF, 0x00008000, 0x00018000, 0x807FFFFF, 0x00000001], np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -2.5, 3.0e38, 1e-40], np.float32)
    rnd = np.random.default_rng(3).standard_normal(4096).astype(np.float32) * np.float32(10.0) ** \
        np.random.default_rng(4).integers(-30, 30, 4096).astype(np.float32)
    a = np.concatenate([ties, special, rnd])
    want = a.astype(ml_dtypes.bfloat16).view(np.uint16)
    got = to_bfloat16_bits(a)
    assert got.dtype == np.uint16
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(a.view(np.uint32)[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    # Widening is exact: what the kernel computes is the bfloat16 value as float32.
    assert np.array_equal(_widen(got), want.view(ml_dtypes.bfloat16).astype(np.float32))
    nan = to_bfloat16_bits(np.array([np.nan, -np.nan], np.float32))
    assert np.isnan(_widen(nan)).all()


def _rounded_copy(src: Path, dst: Path, stored: set[str]) -> Path:
    """The model with the named initializers replaced by their bfloat16 values (as float32)."""
    m = onnx.load(str(src))
    for init in m.graph.initializer:
        if init.name in stored:
            a = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array(_widen(to_bfloat16_bits(a)), init.name))
    onnx.save(m, str(dst))
    return dst


def _check(model: Path, tmp_path: Path, inputs: list[dict[str, np.ndarray]], ratio: float) -> dict[str, int]:
    ref = ember.compile(model, tmp_path / "f", opt_level=1)
    small = ember.compile(model, tmp_path / "bf16", weights="bf16", opt_level=1)
    size = {k: (tmp_path / k / f"{ref.name}.weights.bin").stat().st_size for k in ("f", "bf16")}
    print(f"{model.stem}: weights.bin float {size['f']} B, bf16 {size['bf16']} B")
    assert size["bf16"] <= ratio * size["f"], size
    assert small.manifest["ops"].get("BFloat16ToFloat", 0) > 0, small.manifest["ops"]
    for x in inputs:
        (name, want), = ref.run(x).items()
        err = np.abs(small.run(x)[name] - want).max()
        print(f"  max abs error {err:.3g} = {err / (want.max() - want.min()):.3g} x range")
        assert err <= TOLERANCE * (want.max() - want.min()), f"{model.stem}: max abs error {err:.3g}"
    return size


def test_small_cnn(cnn: Path, tmp_path: Path) -> None:
    """The quantizer's CNN (Conv+BN, depthwise, 1x1, Gemm): its 3x3 and 1x1 convolution and Gemm weights are
    stored half size; BN-folded biases and BN parameters stay float32, so the file is a bit over 1/2."""
    _check(cnn, tmp_path, [{"x": x[None]} for x in calibration_data(4, seed=21)], ratio=0.62)


def test_mlp_weights_are_the_rounded_ones(tmp_path: Path) -> None:
    """Gemm+Relu+Gemm+Softmax: NAME.weights.bin about half the float one, and the bf16 bundle computes with
    exactly the bfloat16-rounded weights: it matches the float bundle of the model whose weights were rounded
    beforehand (to float32 rounding, 1e-5 of the output's range)."""
    model = models.build("mlp", tmp_path / "models")
    xs = [models.random_inputs(model, None, seed=s) for s in range(4)]
    _check(model, tmp_path, xs, ratio=0.51)
    small = ember.load(tmp_path / "bf16")
    rounded = ember.compile(_rounded_copy(model, tmp_path / "rounded.onnx", {"w1", "w2"}), tmp_path / "r",
                            opt_level=1)
    for x in xs:
        want, got = rounded.run(x)["probs"], small.run(x)["probs"]
        assert np.abs(got - want).max() <= 1e-5 * (want.max() - want.min())


def test_bad_weights_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = models.build("mlp", tmp_path / "models")
    with pytest.raises(OptionError, match=r"^--weights must be one of fp16, bf16, int8, not 'bf8'$"):
        ember.compile(model, tmp_path / "b", weights="bf8")
    with pytest.raises(SystemExit) as e:
        main(["compile", str(model), "-o", str(tmp_path / "b"), "--weights", "bfloat16"])
    assert e.value.code == 2
    assert "argument --weights: invalid choice: 'bfloat16' (choose from 'fp16', 'bf16', 'int8')" in \
        capsys.readouterr().err
    assert not (tmp_path / "b").exists()
