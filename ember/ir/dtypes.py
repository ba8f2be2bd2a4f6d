"""Element types and tensor types. Quantization parameters live in the type so int8 needs no redesign."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np


class DType(Enum):
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
        return self in (DType.FLOAT32, DType.FLOAT64, DType.FLOAT16)

    @property
    def is_signed(self) -> bool:
        return self in (DType.INT8, DType.INT16, DType.INT32, DType.INT64) or self.is_float

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
        alias = {"float": "float32", "f32": "float32", "double": "float64", "half": "float16", "long": "int64"}
        t = alias.get(t, t)
        for d in DType:
            if d.short == t:
                return d
        raise KeyError(f"unknown dtype '{text}'")


_SUFFIX = {
    DType.FLOAT32: "f32", DType.FLOAT64: "f64", DType.FLOAT16: "f16", DType.INT8: "s8",
    DType.INT16: "s16", DType.INT32: "s32", DType.INT64: "s64", DType.UINT8: "u8",
    DType.UINT16: "u16", DType.UINT32: "u32", DType.UINT64: "u64", DType.BOOL: "b8",
}


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
