"""Fold QDQ-format models into integer kernels.

A QDQ model (onnxruntime.quantization.quantize_static, or ember's own quantizer) keeps float ops and
marks their int8 inputs and outputs: DequantizeLinear(int8 x) -> Conv -> QuantizeLinear, with weights
DequantizeLinear(int8 constant, per-channel scales) and biases DequantizeLinear(int32 constant, scale
x_scale * w_scale). This pass replaces each float op whose int8 inputs and single quantized output it
recognises by an integer kernel reading the int8 tensors directly:

- Conv / Gemm / MatMul (+ a fused Relu or Clip, absorbed into the requantisation clamp) -> QConv / QMatMul
- Reshape, Flatten, Transpose, Squeeze, Unsqueeze, MaxPool with unchanged scale -> the same op on int8
- unary ops (Sigmoid, Tanh, HardSwish, Relu, Clip, LeakyRelu, ...) -> QLut, a compile-time table
- Add, Sub, Mul -> QAdd / QMul; Concat -> Concat of int8 inputs (rescaled by QLut where needed)
- AveragePool -> QAvgPool, GlobalAveragePool -> QMean

Everything else stays a float op between DequantizeLinear and QuantizeLinear (still correct; Softmax
does so on purpose). DequantizeLinear nodes of constants that no integer kernel took become float
constants here (the loader and fold_constants leave them to this pass: `fold_late`). Runs after
fuse_activation (so that Conv + Relu arrives as one node) and before remove_dead_nodes, which drops the
DequantizeLinear nodes nobody reads any more.
"""

from __future__ import annotations

import math

import numpy as np

from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.epilogue import EPILOGUE_ATTR, epilogue_of
from ember.ops.opdef import Int8
from ember.ops.qlinear import BYTE_TYPES, make_requant, qconv_inputs, qmatmul_inputs, tflite_requant
from ember.passes.fold_qdq_ops import DQ, Q, dq_of, fold_pointwise, q_of, replace


def fold_qdq(graph: Graph) -> None:
    for node in list(graph.nodes):
        if not any(n is node for n in graph.nodes):
            continue
        uses = graph.consumers()
        if registry.get(node.op).int8 is Int8.LINEAR:
            _fold_linear(graph, node, uses)
        else:
            fold_pointwise(graph, node, uses)
    _materialize_constant_dequantize(graph)


# Conv / Gemm / MatMul ------------------------------------------------------------------------------

def _act_bounds(node: Node) -> tuple[float, float] | None:
    """The real-valued clamp of the node's fused activation (None: one a clamp cannot express)."""
    act = epilogue_of(node)
    return (-math.inf, math.inf) if act is None else act.clamp


_NARROW_BIAS = (DType.INT8, DType.UINT8, DType.INT16)


def _bias(v: Value | None, target: np.ndarray, as_stored: bool = False) -> np.ndarray | None | bool:
    """The bias as int32 at scale `target` (x_scale * w_scale per channel); False if it cannot be.
    `as_stored`: an int32 bias is added as it is, whatever its scale says (TFLite's kernels do)."""
    if v is None:
        return None
    d = dq_of(v)
    if as_stored and d is not None and d.q.is_const and d.q.dtype is DType.INT32 and not d.zp.any():
        bq = np.asarray(d.q.const, np.int64).reshape(-1)
        return np.broadcast_to(bq, target.shape) if bq.size in (1, target.size) else False
    if d is not None and d.q.is_const and d.q.dtype is DType.INT32 and not d.zp.any():
        bq = np.asarray(d.q.const, np.int64).reshape(-1)
        if bq.size not in (1, target.size):
            return False
        if np.array_equal(np.broadcast_to(d.scale, target.shape), target):
            return np.broadcast_to(bq, target.shape)  # quantize_static's bias: already at that scale
        real = bq * np.broadcast_to(d.scale, target.shape).astype(np.float64)
    elif d is not None and d.q.is_const and d.q.dtype in _NARROW_BIAS and d.q.type.numel in (1, target.size):
        # An int8/int16 bias (Glow's -quantization-precision-bias=Int8): its real values, re-expressed at the
        # accumulator's scale, so the layer still runs on the integer kernels.
        zp = np.broadcast_to(np.asarray(d.zp, np.int64).reshape(-1), target.shape)
        q = np.broadcast_to(np.asarray(d.q.const, np.int64).reshape(-1), target.shape)
        real = (q - zp) * np.broadcast_to(d.scale, target.shape).astype(np.float64)
    elif v.is_const and v.dtype is DType.FLOAT32 and v.type.numel in (1, target.size):
        real = np.broadcast_to(np.asarray(v.const, np.float64).reshape(-1), target.shape)
    else:
        return False
    with np.errstate(divide="ignore", invalid="ignore"):
        ints = np.rint(real / target.astype(np.float64))
    if not np.isfinite(ints).all():
        return False
    return np.clip(ints, -(2**31), 2**31 - 1).astype(np.int64)


def _requant(q: Q, x: DQ, wscale: np.ndarray, node: Node):
    bounds = _act_bounds(node)
    if bounds is None:
        return None
    if q.rounding:  # a TFLite model's: its multipliers in double precision, its clamp's rounding
        lo = None if bounds[0] == -math.inf else q.quantize_tflite(bounds[0])
        hi = None if bounds[1] == math.inf else q.quantize_tflite(bounds[1])
        reals = float(np.float32(x.scale[0])) * wscale.astype(np.float64) / float(q.scale)
        return tflite_requant(reals, q.rounding, q.dtype, q.zp, lo, hi)
    lo = None if bounds[0] == -math.inf else int(q.quantize(bounds[0]))
    hi = None if bounds[1] == math.inf else int(q.quantize(bounds[1]))
    mults = (np.float32(x.scale[0]) * wscale / q.scale).astype(np.float32)
    return make_requant(mults, q.dtype, q.zp, lo, hi)


def _weights(w: DQ, channels: int, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(real integer weights, per-channel scale) of a constant int8/uint8 weight, channels on `axis`."""
    if not w.q.is_const or w.q.dtype not in BYTE_TYPES or (not w.per_tensor and w.axis != axis):
        return None
    shape = [1] * w.q.type.rank
    shape[axis] = -1
    zp = w.zp.reshape(shape) if not w.per_tensor else w.zp[0]
    real = np.asarray(w.q.const, np.int64) - zp
    return real, np.broadcast_to(w.scale, (channels,)).astype(np.float32)


def _fold_linear(graph: Graph, node: Node, uses: dict[int, list[Node]]) -> None:
    x, w = dq_of(node.input(0), activation=True), dq_of(node.input(1))
    q = q_of(graph, node.outputs[0], uses)
    if x is None or w is None or q is None:
        return
    name = graph.unique_name(f"{node.name}_int8")
    if node.op == "Conv":
        got = _weights(w, w.q.shape[0], 0)
        if got is None:
            return
        real, wscale = got
        attrs = {k: v for k, v in node.attrs.items() if k != EPILOGUE_ATTR}
        new = Node("QConv", name, [], [q.out], attrs)
    else:
        a = node.attrs
        trans_b = node.op == "Gemm" and a.get("transB", 0)
        if (node.op == "Gemm" and (a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0)
                or w.q.type.rank != 2):
            return
        got = _weights(w, w.q.shape[0 if trans_b else 1], 0 if trans_b else 1)
        if got is None:
            return
        real, wscale = got
        real = real.T if trans_b else real
        new = Node("QMatMul", name, [], [q.out], {})
    bias = _bias(node.input(2), (np.float32(x.scale[0]) * wscale).astype(np.float32), as_stored=q.rounding > 0)
    rq = _requant(q, x, wscale, node)
    if bias is False or rq is None:
        return
    assert not isinstance(bias, bool)
    try:
        if node.op == "Conv":
            new.inputs, spec = qconv_inputs(graph, new, x.q, int(x.zp[0]), real, bias, rq)
        else:
            new.inputs, spec = qmatmul_inputs(graph, new, x.q, int(x.zp[0]), real, None, bias, rq)
    except UnsupportedOperatorError:
        return  # a shape the integer kernels do not take: the float op stays, still correct
    new.attrs["_q"] = spec
    new.attrs["_dtype"] = q.out.dtype
    replace(graph, [node, q.node], [new])


# Leftover constant DequantizeLinear nodes -> float constants ---------------------------------------

def _dequantize(node: Node) -> np.ndarray:
    """ONNX DequantizeLinear of constants (numpy: ONNX's evaluator lacks the opset 10-18 versions)."""
    x, s, z = (np.asarray(v.const) if v is not None else None for v in (node.inputs[0], node.input(1), node.input(2)))
    assert x is not None and s is not None
    shape = [1] * x.ndim
    if s.size > 1:
        block = int(node.attrs.get("block_size", 0))
        axis = int(node.attrs.get("axis", 1)) % x.ndim
        if block:
            s = np.repeat(s, block, axis=axis).take(range(x.shape[axis]), axis=axis)
            z = None if z is None else np.repeat(z, block, axis=axis).take(range(x.shape[axis]), axis=axis)
        else:
            shape[axis] = -1
            s = s.reshape(shape)
            z = None if z is None else z.reshape(shape)
    if z is not None and DType.from_numpy(x.dtype).is_float:
        z = None  # float8/float4 zero points are not read (ONNX's reference)
    dx = x.astype(np.float32) - (0 if z is None else z.astype(np.float32))
    return (dx * s.astype(np.float32)).astype(np.float32)


def _materialize_constant_dequantize(graph: Graph) -> None:
    uses = graph.consumers()
    for node in list(graph.nodes):
        out = node.outputs[0]
        if node.op != "DequantizeLinear" or out is None or any(v is not None and not v.is_const for v in node.inputs):
            continue
        value = _dequantize(node)
        const = graph.constant(f"{out.name}_f32", value)
        const.type = TensorType(const.dtype, const.shape, None)
        graph.replace_uses(out, const)
        graph.remove_node(node)
        for user in uses.get(id(out), []):
            op = registry.get(user.op)
            # A weighted op's normalization depends on which inputs are constant: redone now a weight is one.
            if op.weights is not None and op.normalize is not None:
                op.normalize(user, graph)
