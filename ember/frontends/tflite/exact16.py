"""The Prepare arithmetic of TFLite's int16 LOGISTIC, TANH, REDUCE_PROD, EXP, GELU, LOG and RSQRT (16x8 models):
the constants their int16 kernels take (ops/q16.py Q16Sigmoid, Q16Reduce, Q16Lookup), or a one-line refusal where
TFLite's own Prepare would reject the model."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.ir.dtypes import DType
from ember.ops.q16 import Q16ReduceSpec, Q16SigmoidSpec, q15_multiplier
from ember.ops.qlinear import DOUBLE, tflite_multiplier


def int16_in_out(ctx: OpContext) -> bool:
    """Whether input 0 or the output is an int16 tensor (a 16x8 model's activation)."""
    return DType.INT16 in (ctx.info(0).dtype, ctx.out_info().dtype)


def _scale(ctx: OpContext, i: int | None, what: str) -> float:
    """The per-tensor float32 scale of int16 tensor i (None: the output), zero point 0, as TFLite requires."""
    t = ctx.out_info() if i is None else ctx.info(i)
    q = t.quant
    if (t.dtype is not DType.INT16 or q is None or q.axis is not None or q.scale.size != 1
            or int(q.zero_point.reshape(-1)[0]) != 0):
        raise ctx.unsupported(f"its int16 tensor '{t.name}': TFLite's int16 {ctx.opname} needs {what} int16 "
                              f"tensors with one scale and zero point 0")
    return float(np.float32(q.scale.reshape(-1)[0]))


def _checked_log2(scale: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2 in float32: (whether the scale is a power of two within 1e-3 in log2, its log2)."""
    x = np.float32(np.log(np.float32(scale))) * np.float32(1.0 / np.log(np.float32(2.0)))
    r = np.float32(math.copysign(math.floor(abs(float(x)) + 0.5), float(x)))
    return bool(abs(np.float32(x - r)) < np.float32(1e-3)), int(r)


def sigmoid_spec(ctx: OpContext, tanh: bool) -> Q16SigmoidSpec:
    """LOGISTIC / TANH's Prepare for int16: a power-of-two input scale 2^-12 (TANH also 2^-11) keeps the raw
    value (times 3 << its shift: the table spans [-10.7, 10.7]); any other a multiplier of scale * 4096 * 3
    doubled (its shift counted) until above 32767 / 2. The output scale must be 2^-15."""
    sx = _scale(ctx, 0, "input and output")
    _scale(ctx, None, "input and output")
    out = ctx.out_info()
    ok, log2 = _checked_log2(float(np.float32(out.quant.scale.reshape(-1)[0])))
    if not ok or log2 != -15:
        raise ctx.unsupported(f"its int16 tensor '{out.name}': TFLite's int16 {ctx.opname} needs the output "
                              f"scale 2^-15")
    pot, log2 = _checked_log2(sx)
    shift = 12 + log2
    if pot and shift in ((0, 1) if tanh else (0,)):
        return Q16SigmoidSpec(tanh, 3 << shift, 0)
    mult, shift = sx * 4096.0 * 3.0, 0
    while mult <= 32767.0 / 2.0 and shift <= 30:
        shift, mult = shift + 1, mult * 2.0
    if int(mult) > 32767:  # TFLite Micro asserts this; the int32 product would overflow past it
        raise ctx.unsupported(f"its int16 tensor '{ctx.info(0).name}': an input scale above 2^-4/3 is outside "
                              f"TFLite's int16 {ctx.opname}")
    return Q16SigmoidSpec(tanh, int(mult), shift)


def prod_spec(ctx: OpContext, axes: list[int]) -> Q16ReduceSpec:
    """REDUCE_PROD's Prepare for int16: every multiply (and the final value) scaled by input scale over the
    n-th root of the output scale (n: the reduced elements), as the int64 MultiplyByQuantizedMultiplier's Q15
    multiplier and right shift."""
    sx, sy = _scale(ctx, 0, "input and output"), _scale(ctx, None, "input and output")
    shape = ctx.info(0).shape
    n = math.prod(shape[a] for a in axes)
    pair = q15_multiplier(sx / math.pow(sy, 1.0 / n), ctx.rounding()) if n else None
    if pair is None:
        raise ctx.unsupported(f"its int16 tensor '{ctx.out_info().name}': the output scale is outside what "
                              f"TFLite's int16 {ctx.opname} can requantise to")
    return Q16ReduceSpec(4, pair[0], pair[1], tuple(axes), tuple(ctx.out_info().shape))


def _round(v: np.ndarray) -> np.ndarray:
    """std::round of float32 values: half away from zero."""
    return (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.float32)


def lut_table(ctx: OpContext, fn: Callable[[np.ndarray], np.ndarray]) -> tuple[int, ...]:
    """TFLite's LUTPopulate<int16_t> in float32 (zero points 0): fn sampled at 512 steps over the input's real
    range plus its end, times 65536 over the output's range, each sample lowered by half (rounded) the
    interpolation's error at its step's midpoint, saturated to int16. `fn` maps float32 arrays to float32."""
    with np.errstate(over="ignore", invalid="ignore"):  # exp past float32's range: inf, saturated below
        return _lut_table(ctx, fn)


def _lut_table(ctx: OpContext, fn: Callable[[np.ndarray], np.ndarray]) -> tuple[int, ...]:
    f = np.float32
    sx, sy = f(_scale(ctx, 0, "input and output")), f(_scale(ctx, None, "input and output"))
    lo, hi = f(sx * f(-32768)), f(sx * f(32767))
    inv = f(f(65536) / f(f(sy * f(32767)) - f(sy * f(-32768))))
    step = f(f(hi - lo) / f(512))
    i = np.arange(512, dtype=np.float32)
    at = (lo + (i * step).astype(f)).astype(f)
    val = fn(at)
    mid = fn((at + f(step / f(2))).astype(f))
    nxt = fn((lo + ((i + f(1)) * step).astype(f)).astype(f))
    sample = _round((val * inv).astype(f))
    interp = _round(((((nxt * inv).astype(f) + sample).astype(f)) / f(2)).astype(f))
    bias = _round(((interp - _round((mid * inv).astype(f))).astype(f) / f(2)).astype(f))
    table = np.clip((sample - bias).astype(f), -32768, 32767)
    last = np.clip(_round((fn(np.asarray([hi], f)) * inv).astype(f)), -32768, 32767)
    # inf - inf where the function overflows float32 (EXP of a wide input range): a NaN entry, which std::min /
    # std::max pass through and x86's float to int conversion (cvttss2si) turns into 0x80000000, int16 0
    return tuple(0 if np.isnan(v) else int(v) for v in np.concatenate([table, last]))


def exp_f32(x: np.ndarray) -> np.ndarray:
    """expf, correctly rounded (computed in double)."""
    return np.exp(x.astype(np.float64)).astype(np.float32)


_F = np.float32


def _f32_map(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """A libm function of float32 values (erff, tanhf: computed in double, rounded to float32)."""
    return np.asarray([fn(float(v)) for v in x], np.float64).astype(np.float32)


def gelu_f32(x: np.ndarray) -> np.ndarray:
    """TFLite's GeluTransform in float32: 0.5f * x * erfc(x * -(float)sqrt(1/2))."""
    return (_F(0.5) * x * _f32_map(math.erfc, (x * _F(-math.sqrt(0.5))).astype(_F))).astype(_F)


def gelu_tanh_f32(x: np.ndarray) -> np.ndarray:
    """TFLite's GeluTransformApproximate in float32: 0.5f x (1 + tanh((float)sqrt(2/pi) (x + 0.044715f x^3)))."""
    inner = (x + (((_F(0.044715) * x).astype(_F) * x).astype(_F) * x).astype(_F)).astype(_F)
    t = _f32_map(math.tanh, (_F(math.sqrt(2.0 / math.pi)) * inner).astype(_F))
    return ((_F(0.5) * x).astype(_F) * (_F(1) + t).astype(_F)).astype(_F)


def log_f32(out_scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """LiteRT's int16 LOG table function: logf, and the output's lowest real value (-32768 x its scale) at and
    below zero."""
    low = _F(_F(-32768) * _F(out_scale))

    def fn(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.log(np.maximum(x, _F(1e-30)).astype(np.float64)).astype(_F)
        return np.where(x <= 0, low, v).astype(_F)

    return fn


def rsqrt_f32(out_scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """LiteRT's int16 RSQRT table function: 1.0f / sqrtf(x), and 32767 x the output scale at and below zero."""
    high = _F(_F(32767) * _F(out_scale))

    def fn(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            v = (_F(1) / np.sqrt(np.maximum(x, _F(1e-30)))).astype(_F)
        return np.where(x <= 0, high, v).astype(_F)

    return fn


def out_scale(ctx: OpContext) -> float:
    return _scale(ctx, None, "input and output")


def rsqrt_micro(ctx: OpContext) -> tuple[int, int]:
    """TFLite Micro's int16 RSQRT output multiplier: QuantizeMultiplier(1 / (sqrtf(input scale) x output
    scale)) as (Q31 multiplier, left shift)."""
    sx, sy = _F(_scale(ctx, 0, "input and output")), _F(out_scale(ctx))
    m, k = tflite_multiplier(1.0 / float(_F(np.sqrt(sx) * sy)), DOUBLE)
    return m, 31 - k
