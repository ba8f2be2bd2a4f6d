"""Cast to and from the ML storage types (bfloat16, float8, float4 e2m1, int4/uint4, int2/uint2): the C
expressions on kernels/convert.c, and the compile-time values with ONNX's reference semantics.

A storage value's compute type is its bits (DType.ctype); a float format converts from float32, float16,
and the other formats with one rounding (to nearest even; float64 and the integers go through float32
first, as ml_dtypes and so ONNX's reference do), the float8 targets honouring Cast's `saturate`, float8 e8m0 its
`round_mode`; the sub-byte integers wrap as ml_dtypes does (float sources are
truncated first, saturating as Cast to int64 does).
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from ember.codegen.emitter import ExprHandler
from ember.ir.dtypes import DType

# kernels/convert.c's format numbers.
FP_FORMAT = {
    DType.BFLOAT16: "EMBER_FP_BF16", DType.FLOAT8E4M3FN: "EMBER_FP_E4M3FN",
    DType.FLOAT8E4M3FNUZ: "EMBER_FP_E4M3FNUZ", DType.FLOAT8E5M2: "EMBER_FP_E5M2",
    DType.FLOAT8E5M2FNUZ: "EMBER_FP_E5M2FNUZ", DType.FLOAT4E2M1: "EMBER_FP_E2M1",
}
FLOAT8 = (DType.FLOAT8E4M3FN, DType.FLOAT8E4M3FNUZ, DType.FLOAT8E5M2, DType.FLOAT8E5M2FNUZ)
SUB_BYTE_INTS = {DType.INT4: (4, True), DType.UINT4: (4, False), DType.INT2: (2, True), DType.UINT2: (2, False)}
ROUND_MODES = {"up": 0, "down": 1, "nearest": 2}

# (h, x, src, dst) -> C expression: Cast's conversion between two types neither of which is a storage type.
PlainConvert = Callable[[ExprHandler, str, DType, DType], str]


def _sat(dst: DType, saturate: bool) -> str:
    return "1" if saturate and dst in FLOAT8 else "0"


def _decode_int(x: str, src: DType) -> str:
    bits, signed = SUB_BYTE_INTS[src]
    if signed:
        return f"ember_s{bits}((uint32_t)({x}))"
    return f"((int32_t)((uint32_t)({x}) & {(1 << bits) - 1}u))"


def storage_convert(h: ExprHandler, x: str, src: DType, dst: DType, saturate: bool, round_mode: str,
                    plain: PlainConvert) -> str:
    """`x` (in src's compute type) as dst's compute type, when src or dst is a storage type."""
    h.need("ember_convert")
    if src.is_storage_only:
        if src in FP_FORMAT and dst in FP_FORMAT:
            return f"(({dst.ctype})ember_fp_recode({x}, {FP_FORMAT[src]}, {FP_FORMAT[dst]}, {_sat(dst, saturate)}))"
        if src in FP_FORMAT and dst is DType.FLOAT64:
            h.need("ember_convert_f64")
            return f"ember_fp_to_f64({x}, {FP_FORMAT[src]})"
        if src in SUB_BYTE_INTS:
            wide, mid = DType.INT32, _decode_int(x, src)
        else:
            wide = DType.FLOAT32
            mid = f"ember_e8m0_to_f32({x})" if src is DType.FLOAT8E8M0 else f"ember_fp_to_f32({x}, {FP_FORMAT[src]})"
        if dst is DType.FLOAT8E8M0 and wide is DType.FLOAT32:
            return f"((uint8_t)ember_f32_to_e8m0({mid}, {int(saturate)}, {ROUND_MODES[round_mode]}))"
        if dst.is_storage_only:
            return storage_convert(h, mid, wide, dst, saturate, round_mode, plain)
        return plain(h, mid, wide, dst)
    # src is a plain type (x: float for float32/float16, double, an integer or bool).
    if dst in FP_FORMAT:
        sat = _sat(dst, saturate)
        # float64 and the integers through float32, as ml_dtypes (ONNX's reference) converts them
        return f"(({dst.ctype})ember_f32_to_fp((float)({x}), {FP_FORMAT[dst]}, {sat}))"
    if dst is DType.FLOAT8E8M0:  # the reference converts every source to float32 first
        return f"((uint8_t)ember_f32_to_e8m0((float)({x}), {int(saturate)}, {ROUND_MODES[round_mode]}))"
    bits, _ = SUB_BYTE_INTS[dst]
    if src.is_float:  # truncated toward zero (saturating, NaN 0), then wrapped as ml_dtypes does
        x = plain(h, x, src, DType.INT64)
    return f"((uint8_t)((uint64_t)({x}) & {(1 << bits) - 1}u))"


def storage_cast_array(x: np.ndarray, dst: DType, saturate: bool, round_mode: str) -> np.ndarray:
    """Cast at compile time, as ONNX's reference (onnx/reference/ops/op_cast.py) computes it."""
    if dst in FLOAT8 and saturate:
        info = ml_dtypes.finfo(dst.np)
        return np.clip(x, info.min, info.max).astype(dst.np)
    if dst is DType.FLOAT8E8M0:
        return _to_e8m0(np.asarray(x, np.float32), saturate, round_mode)
    return x.astype(dst.np)


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float32 -> float8 e8m0 as onnx.numpy_helper.to_float8e8m0 makes it (see ember_f32_to_e8m0)."""
    u = x.view(np.uint32)
    e = ((u >> 23) & 0xFF).astype(np.uint32)
    if round_mode == "up":
        up = (u & 0x7FFFFF) != 0
    elif round_mode == "nearest":
        up = ((u & 0x400000) != 0) & (((u & 0x3FFFFF) != 0) | (e > 0))
    else:
        up = np.zeros(u.shape, bool)
    if saturate:
        up &= e != 0xFE
    out = np.where(e == 0xFF, 0xFF, e + up.astype(np.uint32)).astype(np.uint8)
    return out.view(ml_dtypes.float8_e8m0fnu)
