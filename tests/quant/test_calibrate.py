"""Histograms, calibration methods and the four schemas, on synthetic data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from ember.ir.dtypes import DType
from ember.quant import schema as qs
from ember.quant.calibrate import clip_range
from ember.quant.histogram import Histogram


def _hist(*chunks: np.ndarray) -> Histogram:
    h = Histogram()
    for c in chunks:
        h.add(c)
    return h


def test_growing_histogram_loses_no_count() -> None:
    rng = np.random.default_rng(0)
    chunks = [rng.normal(0, 0.1, 1000), rng.normal(3, 1, 1000), rng.normal(-20, 2, 1000), np.zeros(5)]
    h = _hist(*chunks)
    every = np.concatenate(chunks)
    assert h.count == every.size and h.counts.sum() == every.size
    assert (h.min, h.max) == (np.float32(every.min()), np.float32(every.max()))
    assert h.lo <= h.min and h.hi >= h.max
    # Re-binning kept every value in the bin that holds it at the final resolution.
    direct = np.histogram(every.astype(np.float32), bins=h.bins, range=(h.lo, h.hi))[0]
    assert np.abs(direct - h.counts).sum() <= 2  # values within float rounding of a bin edge


def test_nonfinite_values_are_counted_apart() -> None:
    h = _hist(np.array([1.0, np.nan, np.inf, 2.0], np.float32))
    assert (h.count, h.nonfinite, h.min, h.max) == (2, 2, 1.0, 2.0)


@pytest.fixture(scope="module")
def outliers() -> Histogram:
    """A million N(0, 1) values and ten at 50: minmax must span 50; the others should not."""
    rng = np.random.default_rng(1)
    return _hist(rng.standard_normal(1_000_000).astype(np.float32), np.full(10, 50.0, np.float32))


def test_minmax_keeps_outliers(outliers: Histogram) -> None:
    assert clip_range(outliers, "minmax", 127) == (outliers.min, 50.0)


@pytest.mark.parametrize("method,low,high", [("percentile", 3.5, 4.5), ("kl", 2.0, 8.0)])
def test_methods_clip_outliers(outliers: Histogram, method: str, low: float, high: float) -> None:
    lo, hi = clip_range(outliers, method, 127)
    assert low <= hi <= high, (method, hi)
    assert lo == pytest.approx(max(outliers.min, -hi))


def test_mse_balances_rounding_against_clipping() -> None:
    """10^6 N(0,1) values and one at 50: squared error 10^6 (T/127)^2/12 + (50 - T)^2 is least near T = 8.1
    (while ten values at 50 would be worth keeping: MSE weighs how far, not only how many)."""
    rng = np.random.default_rng(1)
    normal = rng.standard_normal(1_000_000).astype(np.float32)
    _, one = clip_range(_hist(normal, np.full(1, 50.0, np.float32)), "mse", 127)
    assert 7.0 <= one <= 9.5
    _, ten = clip_range(_hist(normal, np.full(10, 50.0, np.float32)), "mse", 127)
    assert ten > 25.0


def test_percentile_of_uniform_data() -> None:
    h = _hist(np.linspace(0, 10, 100_001, dtype=np.float32))
    _, hi = clip_range(h, "percentile", 255, percentile=90.0)
    assert hi == pytest.approx(9.0, abs=0.01)


def test_mse_prefers_fine_steps_when_tail_is_rare() -> None:
    """Laplacian data: at 4 bits of levels the MSE optimum clips well inside the range; at 255 less so."""
    x = np.random.default_rng(2).laplace(0, 1, 200_000).astype(np.float32)
    h = _hist(x)
    _, coarse = clip_range(h, "mse", 7)
    _, fine = clip_range(h, "mse", 255)
    assert coarse < fine < h.max


def test_schema_params() -> None:
    asym = qs.activation_params(-1.0, 3.0, "asymmetric", "int8")
    assert asym.dtype is DType.INT8
    assert float(asym.scale) == pytest.approx(4.0 / 255) and int(asym.zero_point) == -128 + 64
    # The range's ends map to the ends of the int8 range; 0 is exact.
    q = qs.quantize(np.array([-1.0, 0.0, 3.0], np.float32), asym)
    assert q.tolist() == [-128, int(asym.zero_point), 127]
    sym = qs.activation_params(-1.0, 3.0, "symmetric", "int8")
    assert (sym.dtype, int(sym.zero_point), float(sym.scale)) == (DType.INT8, 0, pytest.approx(3.0 / 127))
    u8 = qs.activation_params(0.0, 3.0, "symmetric_with_uint8", "int8")
    assert (u8.dtype, int(u8.zero_point), float(u8.scale)) == (DType.UINT8, 0, pytest.approx(3.0 / 255))
    signed = qs.activation_params(-0.5, 3.0, "symmetric_with_uint8", "int8")
    assert signed.dtype is DType.INT8 and int(signed.zero_point) == 0
    p2 = qs.activation_params(-1.0, 3.0, "symmetric_with_power2_scale", "int8")
    assert float(p2.scale) == 2.0**-5 and qs.is_power_of_two(float(p2.scale))  # 3/127 = 0.0236 -> 1/32
    assert int(p2.zero_point) == 0
    wide = qs.activation_params(-1.0, 3.0, "symmetric", "int16")
    assert wide.dtype is DType.INT16 and float(wide.scale) == pytest.approx(3.0 / 32767)
    assert qs.activation_params(0.0, 0.0, "asymmetric", "int8").scale == 1.0  # a constant-zero tensor


def test_weight_and_bias_params() -> None:
    w = np.array([[1.0, -2.0], [0.5, 0.25], [0.0, 0.0]], np.float32)
    per_channel = qs.weight_params(w, 0, "asymmetric", "int8")
    np.testing.assert_allclose(per_channel.scale, [2.0 / 127, 0.5 / 127, 1.0], rtol=1e-6)
    assert not per_channel.zero_point.any() and per_channel.axis == 0
    assert qs.quantize(w, per_channel).tolist() == [[64, -127], [127, 64], [0, 0]]
    per_tensor = qs.weight_params(w, None, "symmetric_with_power2_scale", "int8")
    assert per_tensor.axis is None and float(per_tensor.scale) == 2.0**-5  # 2/127 -> 1/32
    bias = qs.bias_params(np.array([0.1, 0.2, 0.3], np.float32), np.float32(0.02), per_channel, "int32", "asymmetric")
    assert bias.dtype is DType.INT32 and bias.axis == 0
    np.testing.assert_allclose(bias.scale, 0.02 * per_channel.scale, rtol=1e-6)
    as_int8 = qs.bias_params(np.array([0.1, -0.3], np.float32), np.float32(0.02), per_channel, "int8", "symmetric")
    assert as_int8.dtype is DType.INT8 and float(as_int8.scale) == pytest.approx(0.3 / 127)
