"""Quantization parameters for Glow's four schemas: real = scale * (q - zero_point).

- asymmetric: [lo, hi] (0 included) maps onto the whole signed range; zero point anywhere.
- symmetric: zero point 0, scale = max(|lo|, |hi|) / qmax (the most negative code is left unused).
- symmetric_with_uint8: symmetric, but a tensor that is never negative uses the unsigned type (twice
  the resolution for post-ReLU activations).
- symmetric_with_power2_scale: symmetric with the scale rounded up to a power of two, so requantisation
  is a shift (what CMSIS-NN-style kernels need).

Weights are always symmetric (zero point 0, codes -qmax..qmax, as TFLite and onnxruntime do): integer
kernels then need no weight-offset correction. Biases are int32 with scale = input scale * weight
scale (zero point 0), so they add straight into the int32 accumulator; `--bias int8` stores them in
int8 with their own scale instead (smaller, less exact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ember.errors import OptionError
from ember.ir.dtypes import DType, QuantParams

SCHEMAS = ("asymmetric", "symmetric", "symmetric_with_uint8", "symmetric_with_power2_scale")
PRECISIONS = ("int8", "int16")
_MIN_SCALE = 1e-10  # keeps a vanishing range from producing a zero or denormal float32 scale

_SIGNED = {"int8": DType.INT8, "int16": DType.INT16}
_UNSIGNED = {"int8": DType.UINT8, "int16": DType.UINT16}


@dataclass(frozen=True)
class Params:
    """Scale and zero point of one tensor: scalars, or vectors along `axis` (per channel)."""

    dtype: DType
    scale: np.ndarray  # float32
    zero_point: np.ndarray  # of `dtype`
    axis: int | None = None

    def quant(self) -> QuantParams:
        return QuantParams(tuple(float(s) for s in self.scale.reshape(-1)),
                           tuple(int(z) for z in self.zero_point.reshape(-1)), self.axis)


def check(schema: str, precision: str) -> None:
    if schema not in SCHEMAS:
        raise OptionError(f"--schema must be one of {', '.join(SCHEMAS)}, not '{schema}'")
    if precision not in PRECISIONS:
        raise OptionError(f"--precision must be int8 or int16, not '{precision}'")


def qrange(dtype: DType) -> tuple[int, int]:
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max)


def levels(lo: float, hi: float, schema: str, precision: str) -> int:
    """Quantization steps covering [0, T] of a tensor observed in [lo, hi] (for kl/mse calibration)."""
    bits = 8 if precision == "int8" else 16
    one_sided = lo >= 0 or hi <= 0
    if one_sided and (schema == "asymmetric" or (schema == "symmetric_with_uint8" and lo >= 0)):
        return 2**bits - 1
    return 2 ** (bits - 1) - 1


def power2(scale: np.ndarray) -> np.ndarray:
    """The smallest powers of two >= scale (nothing clips that the unrounded scale kept)."""
    return np.exp2(np.ceil(np.log2(np.maximum(scale, _MIN_SCALE))))


def activation_params(lo: float, hi: float, schema: str, precision: str) -> Params:
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if schema == "asymmetric":
        dtype = _SIGNED[precision]
        qmin, qmax = qrange(dtype)
        scale = np.float32(max((hi - lo) / (qmax - qmin), _MIN_SCALE) if hi > lo else 1.0)
        zp = int(np.clip(round(qmin - lo / float(scale)), qmin, qmax))
        return Params(dtype, np.asarray(scale, np.float32), np.asarray(zp, dtype.np))
    unsigned = schema == "symmetric_with_uint8" and lo >= 0
    dtype = _UNSIGNED[precision] if unsigned else _SIGNED[precision]
    top = max(-lo, hi)
    scale = np.asarray(max(top / qrange(dtype)[1], _MIN_SCALE) if top > 0 else 1.0, np.float64)
    if schema == "symmetric_with_power2_scale":
        scale = power2(scale)
    return Params(dtype, scale.astype(np.float32), np.zeros((), dtype.np))


def weight_params(w: np.ndarray, axis: int | None, schema: str, precision: str) -> Params:
    """Symmetric parameters of a weight tensor, per channel along `axis` or per tensor (axis None)."""
    dtype = _SIGNED[precision]
    qmax = qrange(dtype)[1]
    if axis is None:
        top = np.asarray(np.max(np.abs(w)) if w.size else 0.0, np.float64)
    else:
        moved = np.moveaxis(np.abs(w.astype(np.float64)), axis, 0).reshape(w.shape[axis], -1)
        top = moved.max(axis=1) if moved.shape[1] else np.zeros(w.shape[axis])
    scale = np.where(top > 0, np.maximum(top / qmax, _MIN_SCALE), 1.0)
    if schema == "symmetric_with_power2_scale":
        scale = power2(scale)
    return Params(dtype, scale.astype(np.float32), np.zeros(scale.shape, dtype.np), axis)


def bias_params(bias: np.ndarray, x_scale: np.ndarray, w: Params, kind: str, schema: str) -> Params:
    """int32: scale = x scale * w scale (per channel like w), zero point 0; int8: its own symmetric scale."""
    if kind == "int32":
        scale = (np.float32(x_scale) * w.scale).astype(np.float32)
        return Params(DType.INT32, scale, np.zeros(scale.shape, np.int32), w.axis if scale.ndim else None)
    if kind == "int8":
        return weight_params(bias, None, schema, "int8")
    raise OptionError(f"--bias must be int32 or int8, not '{kind}'")


def quantize(x: np.ndarray, p: Params) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point)."""
    scale, zp = p.scale.astype(np.float32), p.zero_point.astype(np.float64)
    if p.axis is not None and scale.ndim:
        shape = [1] * x.ndim
        shape[p.axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    q = np.rint(x.astype(np.float32) / scale).astype(np.float64) + zp
    lo, hi = qrange(p.dtype)
    return np.clip(q, lo, hi).astype(p.dtype.np)


def dequantize(q: np.ndarray, p: Params) -> np.ndarray:
    scale, zp = p.scale.astype(np.float32), p.zero_point.astype(np.float32)
    if p.axis is not None and scale.ndim:
        shape = [1] * q.ndim
        shape[p.axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((q.astype(np.float32) - zp) * scale).astype(np.float32)


def is_power_of_two(x: float) -> bool:
    m, _ = math.frexp(x)
    return x > 0 and m == 0.5
