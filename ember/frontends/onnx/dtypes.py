"""ONNX element types <-> ember DTypes: the only place that knows ONNX's TensorProto numbering."""

from __future__ import annotations

from onnx import TensorProto

from ember.ir.dtypes import DType

_TO_ONNX: dict[DType, int] = {
    DType.FLOAT32: TensorProto.FLOAT, DType.FLOAT64: TensorProto.DOUBLE, DType.FLOAT16: TensorProto.FLOAT16,
    DType.INT8: TensorProto.INT8, DType.INT16: TensorProto.INT16, DType.INT32: TensorProto.INT32,
    DType.INT64: TensorProto.INT64, DType.UINT8: TensorProto.UINT8, DType.UINT16: TensorProto.UINT16,
    DType.UINT32: TensorProto.UINT32, DType.UINT64: TensorProto.UINT64, DType.BOOL: TensorProto.BOOL,
    DType.BFLOAT16: TensorProto.BFLOAT16, DType.FLOAT8E4M3FN: TensorProto.FLOAT8E4M3FN,
    DType.FLOAT8E4M3FNUZ: TensorProto.FLOAT8E4M3FNUZ, DType.FLOAT8E5M2: TensorProto.FLOAT8E5M2,
    DType.FLOAT8E5M2FNUZ: TensorProto.FLOAT8E5M2FNUZ, DType.FLOAT8E8M0: TensorProto.FLOAT8E8M0,
    DType.FLOAT4E2M1: TensorProto.FLOAT4E2M1, DType.INT4: TensorProto.INT4, DType.UINT4: TensorProto.UINT4,
    DType.INT2: TensorProto.INT2, DType.UINT2: TensorProto.UINT2,
}
_FROM_ONNX = {v: k for k, v in _TO_ONNX.items()}


def dtype_from_onnx(elem_type: int) -> DType:
    """The DType of an ONNX element type; KeyError naming the type when ember does not support it."""
    if elem_type in _FROM_ONNX:
        return _FROM_ONNX[elem_type]
    name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else elem_type
    raise KeyError(f"element type {name} is not supported")


def dtype_from_onnx_name(name: str) -> DType:
    """Cast-1's `to` is a type name (FLOAT, INT64, ...) instead of a number."""
    if name.upper() not in TensorProto.DataType.keys():
        raise KeyError(f"element type {name} is not supported")
    return dtype_from_onnx(TensorProto.DataType.Value(name.upper()))


def dtype_to_onnx(dtype: DType) -> int:
    return _TO_ONNX[dtype]
