"""QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (int8/uint8/int16/uint16, and through
kernels/convert.c int4/uint4/int2/uint2, float8 and float4 e2m1; per tensor, per axis and blocked) on
kernels/quant.c, with ONNX's semantics: x / scale rounded half to even, then saturated; (x - zero_point) *
scale. And ONNX's integer ops ConvInteger, QLinearConv, MatMulInteger and
QLinearMatMul, which their normalization turns into the integer kernels of ember/ops/qlinear.py.

DequantizeLinear is `fold_late`: with constant inputs (the int8 weights and int32 biases of a QDQ model)
it stays a node until passes/int4_matmul.py (int4/uint4 weights of a MatMul: MatMulInt4, packed) and
passes/fold_qdq.py have turned the patterns they recognise into kernels on the quantized bytes; fold_qdq
folds the rest into float constants.
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, QuantParams, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.conv import conv_infer
from ember.ops.infer import inp, typed
from ember.ops.matmul import matmul_shape, present
from ember.ops.opdef import OpDef
from ember.ops.qlinear import make_requant, qconv_inputs, qmatmul_inputs
from ember.ops.registry import register

# Integer element types of quantized tensors: (kernel suffix, lowest, highest).
QTYPES = {
    DType.INT8: ("s8", -128, 127), DType.UINT8: ("u8", 0, 255),
    DType.INT16: ("s16", -32768, 32767), DType.UINT16: ("u16", 0, 65535),
}
_DEQUANT_IN = (*QTYPES, DType.INT32)
# The storage types (kernels/convert.c ember_quantize_lowbit): (bits, signed) of the sub-byte integers, the
# float formats (bits 0) by their convert.c format number.
LOWBIT_INTS = {DType.INT4: (4, 1), DType.UINT4: (4, 0), DType.INT2: (2, 1), DType.UINT2: (2, 0)}
LOWBIT_FLOATS = {DType.FLOAT8E4M3FN: "EMBER_FP_E4M3FN", DType.FLOAT8E4M3FNUZ: "EMBER_FP_E4M3FNUZ",
                 DType.FLOAT8E5M2: "EMBER_FP_E5M2", DType.FLOAT8E5M2FNUZ: "EMBER_FP_E5M2FNUZ",
                 DType.FLOAT4E2M1: "EMBER_FP_E2M1"}
_LOWBIT = (*LOWBIT_INTS, *LOWBIT_FLOATS)


def _lowbit_args(dtype: DType) -> list[object]:
    """ember_(de)quantize_lowbit's (bits, sgn, fmt) of a storage type."""
    if dtype in LOWBIT_INTS:
        return [*LOWBIT_INTS[dtype], 0]
    return [0, 0, LOWBIT_FLOATS[dtype]]


def qrange(dtype: DType) -> tuple[int, int]:
    return QTYPES[dtype][1], QTYPES[dtype][2]


def _fail(node: Node, detail: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(node.op, node.name, detail)


def _axis(node: Node, rank: int) -> int:
    axis = int(node.attrs.get("axis", 1))
    return axis + rank if axis < 0 else axis


def quant_layout(node: Node, x_shape: tuple[int, ...], p_shape: tuple[int, ...]) -> list[int]:
    """The kernels' parameter layout [outer, A, inner, block, s_o, s_a, s_i] (see quant.c)."""
    n = math.prod(x_shape)
    if math.prod(p_shape) == 1:
        return [1, 1, n, 1, 0, 0, 0]
    rank = len(x_shape)
    axis = _axis(node, rank)
    if not 0 <= axis < rank:
        raise _fail(node, f"axis {node.attrs.get('axis')} is out of range for rank {rank}")
    outer, a, inner = math.prod(x_shape[:axis]), x_shape[axis], math.prod(x_shape[axis + 1:])
    block = int(node.attrs.get("block_size", 0))
    if block <= 0:
        if p_shape != (a,):
            raise _fail(node, f"scale shape {list(p_shape)} does not match axis {axis} of {list(x_shape)}")
        return [outer, a, inner, 1, 0, 1, 0]
    expect = (*x_shape[:axis], -(-a // block), *x_shape[axis + 1:])
    if p_shape != expect:
        raise _fail(node, f"blocked scale shape {list(p_shape)} should be {list(expect)}")
    return [outer, a, inner, block, expect[axis] * inner, inner, 1]


def _scale_as_f32(node: Node, graph: Graph, i: int) -> None:
    """Constant float16 scales become float32 (x / scale promotes to float32 in ONNX's reference too)."""
    s = present(node.input(i))
    if s.dtype is DType.FLOAT32:
        return
    if s.dtype is DType.FLOAT16 and s.is_const:
        node.inputs[i] = graph.constant(f"{s.name}_f32", s.const.astype(np.float32))
        return
    raise _fail(node, f"{'constant ' if s.is_const else 'run-time '}{s.dtype.short} scale (float32 is implemented)")


def const_quant(scale: Value | None, zp: Value | None, axis: int | None) -> QuantParams | None:
    """QuantParams of compile-time scale / zero point (None when either is known only at run time)."""
    if scale is None or not scale.is_const or (zp is not None and not zp.is_const):
        return None
    s = np.asarray(scale.const, np.float32).reshape(-1)
    z = np.zeros(s.shape, np.int64) if zp is None else np.asarray(zp.const).astype(np.int64).reshape(-1)
    return QuantParams(tuple(float(v) for v in s), tuple(int(v) for v in z), None if s.size == 1 else axis)


# QuantizeLinear --------------------------------------------------------------------------------

def _normalize_q(node: Node, graph: Graph) -> None:
    x, y = present(node.input(0)), present(node.outputs[0])
    if x.dtype is not DType.FLOAT32:
        raise _fail(node, f"{x.dtype.short} input (float32 is implemented)")
    if y.dtype not in QTYPES and y.dtype not in _LOWBIT:
        raise _fail(node, f"output type {y.dtype.short} (int8, uint8, int16, uint16, int4, uint4, int2, uint2, "
                          "float8 and float4e2m1 are implemented)")
    _scale_as_f32(node, graph, 1)
    quant_layout(node, x.shape, present(node.input(1)).shape)
    if y.dtype in _LOWBIT:
        return  # no QuantParams: fold_qdq's integer kernels are int8/uint8 only
    axis = _axis(node, x.type.rank) if x.type.rank else None
    y.type = TensorType(y.dtype, y.shape, const_quant(node.input(1), node.input(2), axis))


def _lower_q(node: Node, k: KernelEmitter) -> None:
    x, y = present(node.input(0)), present(node.outputs[0])
    tab = k.table(quant_layout(node, x.shape, present(node.input(1)).shape), DType.INT32)
    if y.dtype in _LOWBIT:
        k.call("ember_quantize_lowbit", k.out(0), k.inp(0), k.inp(1), k.inp(2), tab, *_lowbit_args(y.dtype),
               int(node.attrs.get("saturate", 1)))
        return
    k.call(f"ember_quantize_{QTYPES[y.dtype][0]}", k.out(0), k.inp(0), k.inp(1), k.inp(2), tab)


def _infer_q(node: Node) -> list[TensorType | None]:
    zp = node.input(2)
    dtype = zp.dtype if zp is not None else node.attrs.get("output_dtype", DType.UINT8)
    return [typed(dtype, inp(node, 0).shape)]


# Inputs: (X, scale, zero_point (optional; its type is the output's)). Attributes: axis (1), block_size (0),
# output_dtype (a DType; used when there is no zero point, default uint8), saturate (1: float8 outputs clamp
# to their largest finite value; 0: out of range becomes inf/NaN).
register(OpDef(
    "QuantizeLinear", normalize=_normalize_q, lower=_lower_q, infer=_infer_q,
    kernels=(*(f"ember_quantize_{s}" for s, _, _ in QTYPES.values()), "ember_quantize_lowbit"),
    data={"storage_types": True},
))


# DequantizeLinear ------------------------------------------------------------------------------

def _normalize_dq(node: Node, graph: Graph) -> None:
    x, y = present(node.input(0)), present(node.outputs[0])
    if x.dtype not in _DEQUANT_IN and x.dtype not in _LOWBIT:
        raise _fail(node, f"input type {x.dtype.short} (int8, uint8, int16, uint16, int32, int4, uint4, int2, "
                          "uint2, float8 and float4e2m1 are implemented)")
    if y.dtype is not DType.FLOAT32:
        raise _fail(node, f"output type {y.dtype.short} (float32 is implemented)")
    _scale_as_f32(node, graph, 1)
    quant_layout(node, x.shape, present(node.input(1)).shape)
    zp = node.input(2)
    if zp is not None and zp.dtype is not x.dtype:
        raise _fail(node, f"zero point type {zp.dtype.short} differs from the input's {x.dtype.short}")
    if x.dtype in _LOWBIT:
        return
    if graph.is_input(x) and x.type.quant is None:  # an int8 model input: its scale goes into NAME.h
        axis = _axis(node, x.type.rank) if x.type.rank else None
        x.type = TensorType(x.dtype, x.shape, const_quant(node.input(1), zp, axis))


def _lower_dq(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    tab = k.table(quant_layout(node, x.shape, present(node.input(1)).shape), DType.INT32)
    if x.dtype in _LOWBIT:
        k.call("ember_dequantize_lowbit", k.out(0), k.inp(0), k.inp(1), k.inp(2), tab, *_lowbit_args(x.dtype))
        return
    sfx = "s32" if x.dtype is DType.INT32 else QTYPES[x.dtype][0]
    k.call(f"ember_dequantize_{sfx}", k.out(0), k.inp(0), k.inp(1), k.inp(2), tab)


def _infer_dq(node: Node) -> list[TensorType | None]:
    return [typed(node.attrs.get("output_dtype", inp(node, 1).dtype), inp(node, 0).shape)]


# Inputs: (X, scale, zero_point (optional)); output typed like the scale (or attribute output_dtype).
register(OpDef(
    "DequantizeLinear", normalize=_normalize_dq, lower=_lower_dq, infer=_infer_dq,
    kernels=(*(f"ember_dequantize_{s}" for s in ("s8", "u8", "s16", "u16", "s32")), "ember_dequantize_lowbit"),
    data={"fold_late": True, "storage_types": True},
))


# DynamicQuantizeLinear -------------------------------------------------------------------------

def _normalize_dynq(node: Node, graph: Graph) -> None:
    if present(node.input(0)).dtype is not DType.FLOAT32:
        raise _fail(node, f"{present(node.input(0)).dtype.short} input (float32 is implemented)")


def _lower_dynq(node: Node, k: KernelEmitter) -> None:
    # Optional outputs may be absent: the kernel still needs somewhere to put them.
    scale = k.out(1) if node.outputs[1] is not None else f"(float *)({k.scratch()})"
    zp = k.out(2) if len(node.outputs) > 2 and node.outputs[2] is not None else f"({k.scratch()} + 4)"
    k.call("ember_dynquant_u8", k.out(0), scale, zp, k.inp(0), present(node.input(0)).type.numel)


def _infer_dynq(node: Node) -> list[TensorType | None]:
    types = [typed(DType.UINT8, inp(node, 0).shape), typed(DType.FLOAT32, ()), typed(DType.UINT8, ())]
    return [t if o is not None else None for t, o in zip(types, node.outputs, strict=False)]


# Outputs: (Y uint8, scale float32 scalar, zero point uint8 scalar).
register(OpDef(
    "DynamicQuantizeLinear", normalize=_normalize_dynq, infer=_infer_dynq,
    lower=_lower_dynq, scratch=lambda n: 8, kernels=("ember_dynquant_u8",),
))


# Integer ops: compile-time weights (and scales) become packed int8 and fixed-point tables ------------

def _const(node: Node, i: int) -> np.ndarray | None:
    v = node.input(i)
    return None if v is None else np.asarray(v.const)


def _zp_operand(node: Node, i: int) -> Value | int:
    """A zero point input: its value when constant, else the run-time value."""
    v = node.input(i)
    if v is None:
        return 0
    if v.type.numel != 1:
        raise _fail(node, f"input {i} ('{v.name}'): a per-row zero point (one zero point is implemented)")
    return int(np.asarray(v.const).reshape(-1)[0]) if v.is_const else v


def _per_row(z: np.ndarray | None, rank: int) -> np.ndarray | int:
    """A scalar or per-output-channel zero point, shaped to broadcast over weights of this rank."""
    if z is None:
        return 0
    z = z.astype(np.int64).reshape(-1)
    return int(z[0]) if z.size == 1 else z.reshape(-1, *([1] * (rank - 1)))


def _become(node: Node, op: str, inputs: list[Value | None], spec: object) -> None:
    node.op, node.inputs = op, inputs
    node.attrs["_q"] = spec
    node.attrs["_dtype"] = present(node.outputs[0]).dtype  # the requantised output's type


def _multipliers(node: Node, first: int, second: int, out: int) -> np.ndarray:
    """first_scale * second_scale / out_scale in the scales' own type, as ONNX's reference computes it."""
    s1, s2, s3 = (np.asarray(_const(node, i)) for i in (first, second, out))
    return np.asarray(s1 * s2 / s3).reshape(-1)


def _out_zp(node: Node, i: int) -> int:
    z = _const(node, i)
    return 0 if z is None else int(z.reshape(-1)[0])


def _normalize_convinteger(node: Node, graph: Graph) -> None:
    w = np.asarray(present(node.input(1)).const, np.int64)
    w = w - _per_row(_const(node, 3), w.ndim)
    inputs, spec = qconv_inputs(graph, node, present(node.input(0)), _zp_operand(node, 2), w, None, None)
    _become(node, "QConv", inputs, spec)


def _normalize_qlinearconv(node: Node, graph: Graph) -> None:
    w = np.asarray(present(node.input(3)).const, np.int64)
    w = w - _per_row(_const(node, 5), w.ndim)
    y = present(node.outputs[0])
    mults = np.broadcast_to(_multipliers(node, 1, 4, 6), (w.shape[0],))
    rq = make_requant(mults, y.dtype, _out_zp(node, 7))
    inputs, spec = qconv_inputs(graph, node, present(node.input(0)), _zp_operand(node, 2), w, _const(node, 8), rq)
    _become(node, "QConv", inputs, spec)


def _b_operand(node: Node, i: int, zp: np.ndarray | None) -> Value | np.ndarray:
    """A compile-time 2-D B as its real integer values; otherwise the run-time value."""
    b = present(node.input(i))
    if not b.is_const or b.type.rank != 2:
        return b
    return np.asarray(b.const, np.int64) - (0 if zp is None else zp.astype(np.int64).reshape(1, -1))


def _normalize_matmulinteger(node: Node, graph: Graph) -> None:
    bz = _const(node, 3)
    inputs, spec = qmatmul_inputs(graph, node, present(node.input(0)), _zp_operand(node, 2), _b_operand(node, 1, bz),
                                  bz, None, None)
    _become(node, "QMatMul", inputs, spec)


def _normalize_qlinearmatmul(node: Node, graph: Graph) -> None:
    bz = _const(node, 5)
    y = present(node.outputs[0])
    n = y.shape[-1]
    rq = make_requant(np.broadcast_to(_multipliers(node, 1, 4, 6), (n,)), y.dtype, _out_zp(node, 7))
    inputs, spec = qmatmul_inputs(graph, node, present(node.input(0)), _zp_operand(node, 2), _b_operand(node, 3, bz),
                                  bz, None, rq)
    _become(node, "QMatMul", inputs, spec)


def _converted(node: Node, k: KernelEmitter) -> None:
    raise AssertionError(f"{node.op} is turned into QConv/QMatMul by its normalization")


# Scales and zero points (and convolution weights) are compile-time inputs: the requantisation
# multipliers and packed weights are made from them here, once.
def _qconv_infer(w: int, out_dtype):
    infer = conv_infer(lambda n: inp(n, 1).shape[0])  # on the (x, weights) view below

    def run(node: Node) -> list[TensorType | None]:
        x = inp(node, 0)
        view = Node(node.op, node.name, [x, inp(node, w)], node.outputs, node.attrs)
        return [typed(out_dtype(node), infer(view)[0].shape)]

    return run


def _qmatmul_infer(b: int, out_dtype):
    def run(node: Node) -> list[TensorType | None]:
        return [typed(out_dtype(node), matmul_shape(node, inp(node, 0).shape, inp(node, b).shape))]

    return run


def _int32(node: Node) -> DType:
    return DType.INT32


def _zp_type(i: int):
    def dtype(node: Node) -> DType:
        zp = node.input(i)
        return zp.dtype if zp is not None else DType.UINT8

    return dtype


# ConvInteger: (x, w, x_zero_point, w_zero_point) -> int32. QLinearConv: (x, x_scale, x_zp, w, w_scale, w_zp,
# y_scale, y_zp, B) -> y_zp's type. MatMulInteger: (a, b, a_zp, b_zp) -> int32. QLinearMatMul: (a, a_scale,
# a_zp, b, b_scale, b_zp, y_scale, y_zp) -> y_zp's type. Conv attributes as Conv's.
register(OpDef("ConvInteger", normalize=_normalize_convinteger, lower=_converted,
               shape_inputs=(1, 3), infer=_qconv_infer(1, _int32)))
register(OpDef("QLinearConv", normalize=_normalize_qlinearconv, lower=_converted,
               shape_inputs=(1, 2, 3, 4, 5, 6, 7, 8), infer=_qconv_infer(3, _zp_type(7))))
register(OpDef("MatMulInteger", normalize=_normalize_matmulinteger,
               lower=_converted, shape_inputs=(3,), infer=_qmatmul_infer(1, _int32)))
register(OpDef("QLinearMatMul", normalize=_normalize_qlinearmatmul,
               lower=_converted, shape_inputs=(1, 2, 4, 5, 6, 7), infer=_qmatmul_infer(3, _zp_type(7))))
