"""LiteRT's int8 SQRT and RSQRT as 256-entry tables (see exact.py for the scheme): SQRT dequantizes, takes
the float32 square root and truncates its quotient by the output scale; RSQRT stays in fixed point
(elementwise.cc RsqrtEvalQuantized: GetInvSqrtQuantizedMultiplierExp's Newton-Raphson iterations, then two
MultiplyByQuantizedMultiplier). Measured bit-exact with LiteRT's reference kernels on every int8 input a
model can feed them (TFLite Micro has no int8 SQRT or RSQRT to compare with)."""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.frontends.tflite.exact import INT8_CODES, _q, _rdbpot, _srdhm, _wrap
from ember.ops.qlinear import SINGLE, tflite_multiplier

_I32_MAX = (1 << 31) - 1


def sqrt_table(ctx: OpContext) -> np.ndarray:
    """static_cast<int32>(sqrtf(x_real) / output_scale) + zero point, saturated (a negative input's NaN
    converts to INT32_MIN, as x86's cvttss2si does)."""
    (sx, zx), (sy, zy) = _q(ctx, 0), _q(ctx, None)
    real = (np.float32(sx) * (INT8_CODES - zx).astype(np.float32)).astype(np.float32)
    with np.errstate(invalid="ignore"):
        quot = (np.sqrt(real) / np.float32(sy)).astype(np.float32)
    out = np.where(np.isfinite(quot) & (quot < 2.0**31), np.trunc(np.nan_to_num(quot)), -(2.0**31)).astype(np.int64)
    out = np.array([_wrap(int(v) + zy) for v in out], np.int64)
    return np.clip(out, -128, 127)


def _sat_pot(x: int, e: int) -> int:
    """gemmlowp's SaturatingRoundingMultiplyByPOT<e> on int32."""
    if e <= 0:
        return _rdbpot(x, -e)
    return max(-(1 << 31), min(_I32_MAX, x << e))


def _inv_sqrt(value: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp(value, kReverseShift = -1): (multiplier, left shift)."""
    if value <= 1:
        return _I32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = _rdbpot(value >> 1, 1)  # F3
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # F3 one
    for _ in range(5):
        x3 = _sat_pot(_srdhm(_srdhm(x, x), x), 6)  # F9 -> F3
        x = _sat_pot(_wrap(_srdhm(half_three, x) - _srdhm(half_input, x3)), 3)  # F6 -> F3
    x = _srdhm(x, 1518500250)  # times sqrt(2) / 2
    if shift < 0:
        x, shift = _wrap(x << -shift), 0
    return x, -shift


def _mbqm(x: int, m: int, shift: int, rounding: int) -> int:
    """MultiplyByQuantizedMultiplier(x, m, shift) (shift > 0: left), with either interpreter's rounding."""
    if rounding == SINGLE:
        total = 31 - shift
        return (x * m + (1 << (total - 1))) >> total
    left, right = max(shift, 0), max(-shift, 0)
    return _rdbpot(_srdhm(_wrap(x * (1 << left)), m), right)


def rsqrt_table(ctx: OpContext) -> np.ndarray:
    """RsqrtEvalQuantized for the 256 int8 inputs (those below the input zero point are invalid in LiteRT,
    which fails the inference; the table gives them the output for zero)."""
    (sx, zx), (sy, zy) = _q(ctx, 0), _q(ctx, None)
    rounding = ctx.rounding()
    real = 1.0 / float(np.float32(np.sqrt(np.float32(sx)) * np.float32(sy)))
    m, k = tflite_multiplier(real, rounding)
    out = []
    for v in (INT8_CODES - zx).tolist():
        if v <= 0:
            out.append(127)
            continue
        inv, inv_shift = _inv_sqrt(v)
        data = _mbqm(1, inv, inv_shift + 20, rounding)
        out.append(max(-128, min(127, _mbqm(data, m, 31 - k - 20, rounding) + zy)))
    return np.asarray(out, np.int64)

