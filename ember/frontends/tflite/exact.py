"""TFLite's integer arithmetic for int8 operators whose result is a function of one byte: the 256 outputs
computed here, at compile time, exactly as TFLite's kernels compute them, become a QLut table (the same
kernel as ember's own int8 lookups), so the bundle is bit-exact with LiteRT and TFLite Micro.

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
