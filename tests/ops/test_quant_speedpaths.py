"""The integer convolution's requantisation in registers (qgemm.c / qvec.c's float path) where the sums
can exceed what floats hold exactly: they are first clamped to +-L (qlinear.py `float_limit`), which
must change no output. Sums far past L, near it and near the saturation thresholds, through every
tile shape (4 rows and single rows; 4, 2 and 1 vectors of pixels; matrix-vector tail pixels), must equal
ONNX's reference bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from ember.ir.dtypes import DType
from ember.ops.qlinear import exact_in_float, float_limit, make_requant
from tests.ops.test_quant_kernels import _check, _f32

RNG = np.random.default_rng(11)


def _large_sum_case(m: int, c: int, hw: tuple[int, int], ys: float) -> tuple[dict, dict, np.ndarray]:
    """x (uint8, zero point 0) with some pixels all 255, weights near +-127 in some rows (so |sum| goes
    past 2^24), per-channel scales, output scale ys; other pixels' values smaller as ys is (so that
    their outputs spread over the range)."""
    top = int(np.clip(ys * 512, 1, 255))
    x = (RNG.integers(0, top + 1, (1, c, *hw)) * (RNG.random((1, c, *hw)) < min(1.0, ys * 30))).astype(np.uint8)
    # pixels whose sums reach the bound, or large fractions of it (sums times the multiplier must cover
    # every range where the float path without its clamp would go wrong)
    x[..., 0, :6] = np.array([255, 200, 128, 100, 64, 40], np.uint8)
    x[..., -1, -2:] = 0
    w = RNG.integers(-127, 128, (m, c, 3, 3)).astype(np.int8)
    w[0] = RNG.integers(120, 128, (c, 3, 3))  # a row of large positive weights: sums past 2^24
    w[1] = -w[0]
    ws = RNG.uniform(0.004, 0.008, m).astype(np.float32)
    consts = {"xs": _f32(0.02), "xz": np.array(0, np.uint8), "w": w, "ws": ws, "wz": np.zeros(m, np.int8),
              "ys": _f32(ys), "yz": np.array(-20, np.int8),
              "b": RNG.integers(-int(ys * 4e5) - 1, int(ys * 4e5) + 1, m).astype(np.int32)}
    return {"x": x}, consts, w


def _conv(tmp_path: Path, feeds: dict, consts: dict, sanitize: bool = False) -> np.ndarray:
    inputs = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    node = helper.make_node("QLinearConv", inputs, ["y"], pads=[1, 1, 1, 1])
    return _check(tmp_path, [node], feeds, consts, sanitize=sanitize)["y"]


def _path(consts: dict, w: np.ndarray) -> tuple[int, int]:
    """float_limit's (ok, L) for the case, asserting that the plain float path (sums below 2^24) is out."""
    rq = make_requant(np.float32(0.02) * consts["ws"] / consts["ys"][0], DType.INT8, -20)
    bound = np.abs(w.astype(np.float64)).reshape(len(w), -1).sum(axis=1) * 255 + np.abs(consts["b"])
    assert bound.max() >= 2**24 and not exact_in_float(rq, bound)
    return float_limit(rq, bound)


@pytest.mark.parametrize(("ys", "clamp"), [(0.5, False), (0.00003, True)])
def test_float_requant_past_2_24_is_exact(tmp_path: Path, ys: float, clamp: bool) -> None:
    """Sums past 2^24 (they saturate); with a multiplier large enough that sums times it pass 2^22, the
    clamp to +-L. 7 rows (4-row tiles and single rows), K = 576, 90 pixels: a 64-pixel block, then 26
    (a 2-vector tile)."""
    feeds, consts, w = _large_sum_case(7, 64, (9, 10), ys)
    ok, lim = _path(consts, w)
    assert ok and (lim > 0) == clamp
    y = _conv(tmp_path, feeds, consts)
    assert (y == 127).any() and (y == -128).any() and ((y > -128) & (y < 127)).mean() > 0.01


def test_clamped_float_requant_tail_pixels_sanitized(tmp_path: Path) -> None:
    """A 7x7 map (49 pixels: a 3-vector tile and one matrix-vector pixel) with the clamp, under ASan/UBSan."""
    feeds, consts, w = _large_sum_case(5, 64, (7, 7), 0.00003)
    assert _path(consts, w)[1] > 0
    _conv(tmp_path, feeds, consts, sanitize=True)


def test_float_limit_saturates_every_row() -> None:
    """L times each row's multiplier reaches past the clamp range from the zero point (exactly, in
    integers); no float path where L would not be exact in float."""
    rq = make_requant(np.array([0.3, 0.9, 0.07], np.float32), DType.UINT8, 200, lo=0, hi=255)
    ok, lim = float_limit(rq, None)  # any int32 sum: |v| * m passes 2^22, so a clamp
    assert ok and lim > 0
    for mu, s in zip(rq.mult, rq.shift, strict=True):
        assert lim * mu >= (200 + 1) << s  # |L * m| >= max(hi - zp, zp - lo) + 1
    assert float_limit(make_requant(np.array([1e-9], np.float32), DType.INT8, 0), None) == (0, 0)
