"""TFLite's integer arithmetic for int8 operators whose result is a function of one byte (LEAKY_RELU,
HARD_SWISH, LOGISTIC, TANH): the 256 outputs computed here, at compile time, exactly as TFLite's kernels
compute them, become a QLut table (the same kernel as ember's own int8 lookups), so the bundle is bit-exact
with LiteRT and TFLite Micro.

Formulas follow TFLite's kernels (tensorflow/lite/kernels/internal/reference/*.h and each op's Prepare):
multipliers from QuantizeMultiplier (ops/qlinear.py `tflite_multiplier`), MultiplyByQuantizedMultiplier with
the rounding the requantisation of each interpreter uses (ops/qlinear.py SINGLE, DOUBLE).
"""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.ir.dtypes import DType
from ember.ir.graph import Value
from ember.ops.qlinear import SINGLE, tflite_multiplier
from ember.ops.qpointwise import QLutTable

INT8_CODES = np.arange(256, dtype=np.int64) - 256 * (np.arange(256) >= 128)  # byte b holds int8 value


def multiply(x: np.ndarray, real: float, rounding: int) -> np.ndarray:
    """MultiplyByQuantizedMultiplier(x, QuantizeMultiplier(real)) on int64 arrays of int32 values."""
    m, k = tflite_multiplier(real, rounding)
    x = np.asarray(x, np.int64)
    if rounding == SINGLE:
        return (x * m + (1 << (k - 1))) >> k
    a = np.clip(x << (31 - k), -(2**31), 2**31 - 1) if k < 31 else x
    p = a * m
    p = p + np.where(p >= 0, 1 << 30, 1 - (1 << 30))
    h = np.where(p >= 0, p >> 31, -((-p) >> 31))  # truncating division by 2^31
    rs = max(k - 31, 0)
    if not rs:
        return h
    mask = (1 << rs) - 1
    return (h >> rs) + ((h & mask) > (mask >> 1) + (h < 0))


def _f32(v: float) -> float:
    return float(np.float32(v))


def leaky_relu_table(ctx: OpContext, alpha: float) -> np.ndarray | None:
    """LEAKY_RELU's int8 outputs for the 256 inputs (QuantizeLeakyRelu; its Prepare's multipliers are float
    products promoted to double)."""
    xi, yo = ctx.info(0), ctx.out_info()
    if xi.quant is None or yo.quant is None:
        return None
    sx, sy = _f32(xi.quant.scale.reshape(-1)[0]), _f32(yo.quant.scale.reshape(-1)[0])
    zx, zy = int(xi.quant.zero_point.reshape(-1)[0]), int(yo.quant.zero_point.reshape(-1)[0])
    v = INT8_CODES - zx
    rounding = ctx.rounding()
    identity = multiply(v, _f32(np.float32(sx) / np.float32(sy)), rounding)
    scaled = multiply(v, _f32(np.float32(sx) * np.float32(alpha) / np.float32(sy)), rounding)
    return np.clip(zy + np.where(v >= 0, identity, scaled), -128, 127)


def lut(ctx: OpContext, table: np.ndarray) -> Value:
    """A QLut of input 0's bytes by the int8 outputs `table` (indexed as INT8_CODES)."""
    values = (np.asarray(table, np.int64) & 0xFF).astype(np.uint8)
    return ctx.emit("QLut", [ctx.raw(0)], {"_lut": QLutTable(tuple(int(b) for b in values))})


def int8_unary(ctx: OpContext) -> bool:
    """Whether the operator maps one int8 tensor to another (per-tensor quantized): a table of 256 bytes."""
    xi, yo = ctx.info(0), ctx.out_info()
    return (xi.dtype is DType.INT8 and yo.dtype is DType.INT8 and xi.quant is not None and yo.quant is not None
            and xi.quant.axis is None and yo.quant.axis is None)


# LOGISTIC and TANH --------------------------------------------------------------------------------
# LiteRT's int8 kernels (reference and optimized) look results up in a table its Prepare fills in float
# (PopulateLookupTable); TFLite Micro's compute them in fixed point (gemmlowp's logistic and tanh of a Q4.27
# input). Both are reproduced here for every int8 input.

def _q(ctx: OpContext, i: int | None) -> tuple[float, int]:
    t = ctx.out_info() if i is None else ctx.info(i)
    assert t.quant is not None
    return _f32(t.quant.scale.reshape(-1)[0]), int(t.quant.zero_point.reshape(-1)[0])


def float_table(ctx: OpContext, fn: str) -> np.ndarray:
    """PopulateLookupTable: float32 dequantize, the function (libm's, correctly rounded here), times
    1/scale, std::round (half away from zero), plus the zero point, saturated."""
    (sx, zx), (sy, zy) = _q(ctx, 0), _q(ctx, None)
    real = (np.float32(sx) * (INT8_CODES - zx).astype(np.float32)).astype(np.float32)
    if fn == "logistic":
        e = np.exp(-real.astype(np.float64)).astype(np.float32)
        out = (np.float32(1.0) / (np.float32(1.0) + e)).astype(np.float32)
    else:
        out = np.tanh(real.astype(np.float64)).astype(np.float32)
    scaled = (out * np.float32(np.float32(1.0) / np.float32(sy))).astype(np.float32)
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))
    return np.clip(rounded.astype(np.int64) + zy, -128, 127)


_I32 = 1 << 32


def _wrap(v: int) -> int:
    return (v + (1 << 31)) % _I32 - (1 << 31)


def _srdhm(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul on int32."""
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    p = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    return p >> 31 if p >= 0 else -((-p) >> 31)


def _rdbpot(x: int, e: int) -> int:
    """RoundingDivideByPOT: x / 2^e rounded half away from zero."""
    mask = (1 << e) - 1
    return (x >> e) + int((x & mask) > (mask >> 1) + int(x < 0))


def _sat_shl(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT for a positive exponent."""
    lim = (1 << (31 - e)) - 1
    return (1 << 31) - 1 if x > lim else -(1 << 31) if x < -lim else x << e


def _exp_quarter(a: int) -> int:
    """exp on [-1/4, 0) in Q0.31: its Taylor polynomial around -1/8."""
    c, third = 1895147668, 715827883  # exp(-1/8), 1/3
    x = _wrap(a + (1 << 28))
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    poly = _rdbpot(_wrap(_srdhm(_wrap(_rdbpot(x4, 2) + x3), third) + x2), 1)
    return _wrap(c + _srdhm(c, _wrap(x + poly)))


_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401))


def _half_sum(a: int, b: int) -> int:
    """RoundingHalfSum: (a + b) / 2, half away from zero."""
    s = a + b + (1 if a + b >= 0 else -1)
    return s // 2 if s >= 0 else -((-s) // 2)


def _reciprocal(a: int) -> int:
    """1 / (1 + a) in Q2.29 for a in Q0.31 [0, 1]: three Newton-Raphson steps from 48/17 - 32/17 d, with
    d = (1 + a) / 2 (gemmlowp's one_over_one_plus_x_for_x_in_0_1 before its final rescale)."""
    d = _half_sum(a, (1 << 31) - 1)
    x = _wrap(1515870810 + _srdhm(d, -1010580540))  # 48/17, -32/17 in Q2.29
    for _ in range(3):
        x = _wrap(x + _sat_shl(_srdhm(x, _wrap((1 << 29) - _srdhm(d, x))), 2))
    return x


def _exp_neg(a: int, bits: int) -> int:
    """exp of a <= 0 held in Q(bits).(31 - bits), in Q0.31: exp of a's part in [-1/4, 0), then a factor
    exp(-2^e) for each set bit of the rest (gemmlowp's exp_on_negative_values)."""
    frac = 31 - bits
    quarter = 1 << (frac - 2)
    mod = _wrap((a & (quarter - 1)) - quarter)
    result = _exp_quarter(_sat_shl(mod, bits))
    remainder = _wrap(mod - a)
    for exponent, mult in (*_BARREL, (4, 242)):
        if bits > exponent and remainder & (1 << (frac + exponent)):
            result = _srdhm(result, mult)
    return (1 << 31) - 1 if a == 0 else result


def _logistic_q4(a: int) -> int:
    """gemmlowp's logistic of a Q4.27 value, in Q0.31."""
    if a == 0:
        return 1 << 30
    pos = _sat_shl(_reciprocal(_exp_neg(-abs(a), 4)), 1)  # x / 2 as Q1.30, rescaled to Q0.31
    return pos if a > 0 else _wrap((1 << 31) - 1 - pos)


def _tanh_q4(a: int) -> int:
    """gemmlowp's tanh of a Q4.27 value, in Q0.31: (1 - e) / (1 + e) for e = exp(-2 |a|) (the raw value
    of -|a| read as Q5.26)."""
    if a == 0:
        return 0
    t = _sat_shl(_wrap(_reciprocal(_exp_neg(-abs(a), 5)) - (1 << 29)), 2)
    return -t if a < 0 else t


def micro_table(ctx: OpContext, fn: str) -> np.ndarray | None:
    """TFLite Micro's int8 LOGISTIC (output scale 1/256, zero point -128) or TANH (1/128, 0)."""
    (sx, zx), (sy, zy) = _q(ctx, 0), _q(ctx, None)
    if (sy, zy) != ((1 / 256, -128) if fn == "logistic" else (1 / 128, 0)):
        return None
    q, shift = np.frexp(float(sx) * float(1 << 27))
    mult = int(np.floor(abs(q) * (1 << 31) + 0.5))
    radius = int(np.floor(15.0 * (1 << 27) / 2.0**shift))
    out = []
    for v in (INT8_CODES - zx).tolist():
        if v <= -radius or v >= radius:
            out.append(-128 if v <= -radius else 127)
            continue
        a = _srdhm(v << int(shift) if shift > 0 else v, mult)  # |v| < radius: no overflow
        a = _rdbpot(a, -int(shift)) if shift < 0 else a
        if fn == "logistic":
            out.append(min(max(_rdbpot(_logistic_q4(a), 23) - 128, -128), 127))
        else:
            out.append(min(max(_rdbpot(_tanh_q4(a), 24), -128), 127))
    return np.asarray(out, np.int64)


# HARD_SWISH ---------------------------------------------------------------------------------------
# Both interpreters run TFLite's reference int8 kernel: 16-bit fixed point on a "hires" input scale
# (input scale / 128), a relu-ish factor in [0, 1] and an output multiplier, each from QuantizeMultiplier of a
# float32 ratio cut to 16 bits (DownScaleInt32ToInt16Multiplier).

def _i16(v: int) -> int:
    return (v + (1 << 15)) % (1 << 16) - (1 << 15)


def _srdhm16(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int16."""
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    ab = a * b
    p = ab + ((1 << 14) if ab >= 0 else 1 - (1 << 14))
    return _i16(p // (1 << 15) if p >= 0 else -((-p) // (1 << 15)))


def _sat16(v: int) -> int:
    return max(-(1 << 15), min((1 << 15) - 1, v))


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier then DownScaleInt32ToInt16Multiplier: (Q15 significand, exponent)."""
    m, k = tflite_multiplier(real, SINGLE)
    if m == 0:
        return 0, 0
    m16 = (1 << 15) - 1 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16
    return m16, 31 - k


def hard_swish_table(ctx: OpContext) -> np.ndarray | None:
    """TFLite's int8 HARD_SWISH (reference_ops::HardSwish) for the 256 inputs."""
    (sx, zx), (sy, zy) = _q(ctx, 0), _q(ctx, None)
    hires = np.float32(np.float32(1.0 / 128.0) * np.float32(sx))
    out_m, out_e = _int16_multiplier(float(np.float32(hires / np.float32(sy))))
    relu_m, relu_e = _int16_multiplier(float(np.float32(hires / np.float32(3.0 / 32768.0))))
    if out_e > 0:
        return None  # TFLite refuses such a model
    table = []
    for v in (INT8_CODES - zx).tolist():
        x = _i16(v * 128)
        pre = _srdhm16(x, out_m)
        r = x
        if relu_e > 0:
            r = _sat16(r << (relu_e - 1))
        r = _srdhm16(r, relu_m)
        if relu_e > 0:
            r = _sat16(r << 1)
        elif relu_e < 0:
            r = _rdbpot(r, -relu_e)
        r = (r + (1 << 15)) >> 1
        prod = _i16(int(r * pre / (1 << 15)))  # SaturatingDoublingHighMul: truncates toward zero
        table.append(min(max(_rdbpot(prod, -out_e) + zy, -128), 127))
    return np.asarray(table, np.int64)
