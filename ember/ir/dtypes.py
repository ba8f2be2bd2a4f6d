"""Element types and tensor types. Quantization parameters live in the type so int8 needs no redesign.

The ML element types numpy lacks (bfloat16, the float8 family, float4 e2m1, int4/uint4, int2/uint2) are
ml_dtypes' dtypes, as onnx.numpy_helper returns them, and have the same layout in bundle memory, in the
weights and at the bundle's inputs and outputs: bfloat16 is its 16 bits (uint16_t), each float8 its byte,
and the sub-byte types take ONE BYTE PER ELEMENT, the value in the low bits and the high bits zero (int4
-1 is 0x0F), so Bundle.run passes ml_dtypes arrays straight in and out. Packed storage (two int4 per
byte) exists only as the uint8 weights of MatMulInt4 (ember/ops/matmul.py). These types are storage types:
only Cast, QuantizeLinear/DequantizeLinear and the ops that move bytes work on them; passes/widen_dtypes.py
computes every other op in float32 (or int8/uint8) between Casts. Conversions are kernels/convert.c.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import ml_dtypes
import numpy as np


class DType(Enum):
    """An element type: `.np` its numpy dtype (ml_dtypes' for the ML types), `.ctype` its C storage type,
    `.itemsize` its bytes per element in bundle memory (1 for int4/int2/float4: one element per byte, see
    the module docstring)."""

    # value: (name, numpy dtype, C type)
    FLOAT32 = ("float32", np.float32, "float")
    FLOAT64 = ("float64", np.float64, "double")
    FLOAT16 = ("float16", np.float16, "uint16_t")
    INT8 = ("int8", np.int8, "int8_t")
    INT16 = ("int16", np.int16, "int16_t")
    INT32 = ("int32", np.int32, "int32_t")
    INT64 = ("int64", np.int64, "int64_t")
    UINT8 = ("uint8", np.uint8, "uint8_t")
    UINT16 = ("uint16", np.uint16, "uint16_t")
    UINT32 = ("uint32", np.uint32, "uint32_t")
    UINT64 = ("uint64", np.uint64, "uint64_t")
    BOOL = ("bool", np.bool_, "uint8_t")
    # Storage-only ML types (see the module docstring): C type = the bits.
    BFLOAT16 = ("bfloat16", ml_dtypes.bfloat16, "uint16_t")
    FLOAT8E4M3FN = ("float8e4m3fn", ml_dtypes.float8_e4m3fn, "uint8_t")
    FLOAT8E4M3FNUZ = ("float8e4m3fnuz", ml_dtypes.float8_e4m3fnuz, "uint8_t")
    FLOAT8E5M2 = ("float8e5m2", ml_dtypes.float8_e5m2, "uint8_t")
    FLOAT8E5M2FNUZ = ("float8e5m2fnuz", ml_dtypes.float8_e5m2fnuz, "uint8_t")
    FLOAT8E8M0 = ("float8e8m0", ml_dtypes.float8_e8m0fnu, "uint8_t")
    FLOAT4E2M1 = ("float4e2m1", ml_dtypes.float4_e2m1fn, "uint8_t")
    INT4 = ("int4", ml_dtypes.int4, "uint8_t")
    UINT4 = ("uint4", ml_dtypes.uint4, "uint8_t")
    INT2 = ("int2", ml_dtypes.int2, "uint8_t")
    UINT2 = ("uint2", ml_dtypes.uint2, "uint8_t")

    @property
    def short(self) -> str:
        return self.value[0]

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.value[1])

    @property
    def ctype(self) -> str:
        return self.value[2]

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    @property
    def is_float(self) -> bool:
        return self in (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16) or self in _STORAGE_FLOATS

    @property
    def is_signed(self) -> bool:
        signed_ints = (DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.INT4, DType.INT2)
        return self in signed_ints or (self.is_float and self is not DType.FLOAT8E8M0)  # e8m0: no sign bit

    @property
    def is_storage_only(self) -> bool:
        """An ML type kept as its bits (bfloat16, float8, float4, int4/uint4, int2/uint2): C code computes
        on it only through Cast (kernels/convert.c); other ops run in `widened`."""
        return self in _STORAGE_FLOATS or self in _STORAGE_INTS

    @property
    def widened(self) -> DType:
        """The type ops without a kernel for this one compute in: float32 for the float formats,
        int8/uint8 for the sub-byte integers (exact), itself for the others."""
        if self in _STORAGE_FLOATS:
            return DType.FLOAT32
        if self in _STORAGE_INTS:
            return DType.INT8 if self.is_signed else DType.UINT8
        return self

    @property
    def bits(self) -> int:
        """Bits of one value (4 for int4, 8 for float8; itemsize * 8 for the others)."""
        return _BITS.get(self, self.itemsize * 8)

    @property
    def suffix(self) -> str:
        """Kernel name suffix, e.g. ember_conv2d_f32."""
        return _SUFFIX[self]

    @staticmethod
    def from_numpy(dt: np.dtype) -> DType:
        dt = np.dtype(dt)
        for d in DType:
            if d.np == dt:
                return d
        raise KeyError(f"numpy dtype {dt} is not supported")

    @staticmethod
    def parse(text: str) -> DType:
        t = text.strip().lower()
        alias = {"float": "float32", "f32": "float32", "double": "float64", "half": "float16", "long": "int64",
                 "bf16": "bfloat16", "float8_e4m3fn": "float8e4m3fn", "float8_e4m3fnuz": "float8e4m3fnuz",
                 "float8_e5m2": "float8e5m2", "float8_e5m2fnuz": "float8e5m2fnuz", "float8_e8m0fnu": "float8e8m0",
                 "float4_e2m1fn": "float4e2m1"}  # and ml_dtypes' names
        t = alias.get(t, t)
        for d in DType:
            if d.short == t:
                return d
        raise KeyError(f"unknown dtype '{text}'")


_SUFFIX = {
    DType.FLOAT32: "f32", DType.FLOAT64: "f64", DType.FLOAT16: "f16", DType.INT8: "s8",
    DType.INT16: "s16", DType.INT32: "s32", DType.INT64: "s64", DType.UINT8: "u8",
    DType.UINT16: "u16", DType.UINT32: "u32", DType.UINT64: "u64", DType.BOOL: "b8",
    DType.BFLOAT16: "bf16", DType.FLOAT8E4M3FN: "e4m3fn", DType.FLOAT8E4M3FNUZ: "e4m3fnuz",
    DType.FLOAT8E5M2: "e5m2", DType.FLOAT8E5M2FNUZ: "e5m2fnuz", DType.FLOAT8E8M0: "e8m0",
    DType.FLOAT4E2M1: "e2m1", DType.INT4: "s4", DType.UINT4: "u4", DType.INT2: "s2", DType.UINT2: "u2",
}
_STORAGE_FLOATS = frozenset({DType.BFLOAT16, DType.FLOAT8E4M3FN, DType.FLOAT8E4M3FNUZ, DType.FLOAT8E5M2,
                             DType.FLOAT8E5M2FNUZ, DType.FLOAT8E8M0, DType.FLOAT4E2M1})
_STORAGE_INTS = frozenset({DType.INT4, DType.UINT4, DType.INT2, DType.UINT2})
_BITS = {DType.FLOAT4E2M1: 4, DType.INT4: 4, DType.UINT4: 4, DType.INT2: 2, DType.UINT2: 2}


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization: real = scale * (q - zero_point); per-tensor, or per-channel along `axis`."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[int, ...]
    quant: QuantParams | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(self.dtype, tuple(int(s) for s in shape), self.quant)

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"
