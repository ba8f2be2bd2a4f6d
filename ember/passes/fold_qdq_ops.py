"""Pattern matching for passes/fold_qdq.py (the DequantizeLinear inputs and QuantizeLinear output of a
float op), and its element-wise, movement, pooling and concatenation patterns.

Each float op F reading DequantizeLinear outputs and read only by one QuantizeLinear becomes an op on
the int8/uint8 tensors: the same op when F only moves values and the scale does not change, a QLut
table for a unary function, QAdd/QMul/QAvgPool/QMean with fixed-point rescaling otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.opdef import Int8
from ember.ops.pool import layout_attrs, spatial_dims
from ember.ops.qlinear import BYTE_TYPES, DOUBLE, TFL_DIVIDE, fixed_point, tflite_multiplier
from ember.ops.qpointwise import QAddParams, QAvgPoolParams, QLutTable, QMeanParams, QMulParams, QOut


@dataclass
class DQ:
    """A DequantizeLinear input: the integer tensor and its compile-time scale / zero point."""

    q: Value
    scale: np.ndarray  # float32, one or per axis
    zp: np.ndarray  # int64, same size
    axis: int | None
    node: Node

    @property
    def per_tensor(self) -> bool:
        return self.scale.size == 1


@dataclass
class Q:
    """The QuantizeLinear that alone reads a float op's output."""

    node: Node
    out: Value
    scale: np.float32
    zp: int

    @property
    def dtype(self) -> DType:
        return self.out.dtype

    @property
    def rounding(self) -> int:
        """TFLite's requantisation where a TFLite model's converter marked this output (qlinear.ROUNDINGS)."""
        return int(self.node.attrs.get("_rounding", 0))

    def quantize_tflite(self, real: float) -> int:
        """TFLite's Quantize of an activation bound: zero point + round(real / scale), float32 division,
        half away from zero (CalculateActivationRangeQuantized), saturated."""
        lo, hi = (-128, 127) if self.dtype is DType.INT8 else (0, 255)
        v = float(np.float32(real) / self.scale)
        return int(np.clip(math.copysign(math.floor(abs(v) + 0.5), v) + self.zp, lo, hi))

    def quantize(self, real: np.ndarray | float) -> np.ndarray:
        """ONNX QuantizeLinear of float values with these parameters (float32 division, rint, saturate)."""
        lo, hi = (-128, 127) if self.dtype is DType.INT8 else (0, 255)
        v = np.rint(np.asarray(real, np.float32) / self.scale)
        return np.clip(np.nan_to_num(v, nan=0.0, posinf=hi + 1.0, neginf=lo - 1.0) + self.zp, lo, hi).astype(np.int64)


def dq_of(v: Value | None, activation: bool = False) -> DQ | None:
    """The DequantizeLinear producing v, if its scale and zero point are compile-time constants.
    `activation`: also require an int8/uint8 run-time tensor with one scale."""
    if v is None or v.producer is None or v.producer.op != "DequantizeLinear":
        return None
    d = v.producer
    x, s, z = d.inputs[0], d.input(1), d.input(2)
    if x is None or s is None or not s.is_const or (z is not None and not z.is_const) or d.attrs.get("block_size"):
        return None
    scale = np.asarray(s.const, np.float32).reshape(-1)
    zp = np.zeros(scale.size, np.int64) if z is None else np.asarray(z.const).astype(np.int64).reshape(-1)
    axis = None
    if scale.size > 1:
        axis = int(d.attrs.get("axis", 1))
        axis = axis + x.type.rank if axis < 0 else axis
    dq = DQ(x, scale, zp, axis, d)
    if activation and (x.dtype not in BYTE_TYPES or x.is_const or not dq.per_tensor):
        return None
    return dq


def q_of(graph: Graph, v: Value | None, uses: dict[int, list[Node]]) -> Q | None:
    """The QuantizeLinear (int8/uint8, one compile-time scale) that is the only reader of v."""
    if v is None or graph.is_output(v):
        return None
    users = uses.get(id(v), [])
    if len(users) != 1 or users[0].op != "QuantizeLinear" or users[0].inputs[0] is not v:
        return None
    q = users[0]
    s, z, out = q.input(1), q.input(2), q.outputs[0]
    if (out is None or out.dtype not in BYTE_TYPES or s is None or not s.is_const or s.type.numel != 1
            or (z is not None and not z.is_const)):
        return None
    zp = 0 if z is None else int(np.asarray(z.const).reshape(-1)[0])
    return Q(q, out, np.float32(np.asarray(s.const).reshape(-1)[0]), zp)


def replace(graph: Graph, old: list[Node], new: list[Node]) -> None:
    """Put `new` where the first of `old` was, and drop `old`."""
    at = min(graph.nodes.index(n) for n in old)
    for n in old:
        graph.remove_node(n)
    for i, n in enumerate(new):
        graph.add_node(n, at + i)


# Int8 kinds folded here (Int8.LINEAR is fold_qdq's own; SELECT and FLOAT ops stay float between DQ and Q).
# MOVE ops on int8 give what dequantize -> op -> quantize gives; table ops are computed once per int8 code.
_FOLDED = (Int8.MOVE, Int8.ACTIVATION, Int8.LUT, Int8.ARITH, Int8.CONCAT, Int8.AVERAGE)


def fold_pointwise(graph: Graph, node: Node, uses: dict[int, list[Node]]) -> None:
    kind = registry.get(node.op).int8
    if kind not in _FOLDED:
        return
    if node.op != "MaxPool" and len([o for o in node.outputs if o is not None]) != 1:
        return
    if node.op == "MaxPool" and any(o is not None for o in node.outputs[1:]):
        return
    q = q_of(graph, node.outputs[0], uses)
    if q is None:
        if node.op in ("Add", "Sub"):
            _fold_binary_activation(graph, node, uses)
        return
    data = [i for i, v in enumerate(node.inputs) if v is not None and not v.is_const]
    if kind is Int8.CONCAT:
        _fold_concat(graph, node, q, [dq_of(v, activation=True) for v in node.inputs])
        return
    if kind is Int8.ARITH:
        a, b = dq_of(node.input(0)), dq_of(node.input(1))
        if a is not None and b is not None:
            _fold_binary(graph, node, q, a, b)
        return
    x = dq_of(node.input(0), activation=True)
    if x is None or data != [0] or x.q.dtype is not q.dtype:
        return
    same = x.scale[0] == q.scale and int(x.zp[0]) == q.zp
    if kind is Int8.MOVE and same:
        # 2-D MaxPool: QMaxPool (qpointwise.py); other movements: the same op on the bytes
        op = "QMaxPool" if node.op == "MaxPool" and x.q.type.rank == 4 else node.op
        new = Node(op, graph.unique_name(f"{node.name}_int8"), [x.q, *node.inputs[1:]], [q.out],
                   dict(node.attrs))
    elif kind in (Int8.ACTIVATION, Int8.LUT):
        new = _lut_node(graph, f"{node.name}_int8", x, q, node)
        new.outputs = [q.out]
    elif node.op == "AveragePool" and 3 <= x.q.type.rank <= 5:
        new = _avgpool(graph, node, x, q)
    elif node.op == "GlobalAveragePool" and q.rounding:
        new = _tflite_mean(graph, node, x, q)
    elif node.op == "GlobalAveragePool":
        s = math.prod(spatial_dims(node, x.q.shape))
        mult, shift = fixed_point(float(x.scale[0]) / (float(q.scale) * s))
        new = Node("QMean", graph.unique_name(f"{node.name}_int8"), [x.q], [q.out],
                   {"_qmean": QMeanParams(int(x.zp[0]), mult, shift, _out(q)), **layout_attrs(node)})
    else:
        return
    _swap(graph, node, q, new)


def _tflite_mean(graph: Graph, node: Node, x: DQ, q: Q) -> Node:
    """TFLite's int8 MEAN (QuantizedMeanOrSum): the multiplier of x_scale / y_scale with 1/n folded into
    it in integers, (M << s) / n for s = floor(log2 n) (at most 32), and the shift raised by s."""
    n = math.prod(spatial_dims(node, x.q.shape))
    mult, k = tflite_multiplier(float(x.scale[0]) / float(q.scale), q.rounding)
    s = min(n.bit_length() - 1, 32, 31 + (31 - k))
    mult, k = ((mult << s) // n, k + s) if k + s <= 62 else (0, 1)  # past 2^-62: every mean is 0
    return Node("QMean", graph.unique_name(f"{node.name}_int8"), [x.q], [q.out],
                {"_qmean": QMeanParams(int(x.zp[0]), mult, k + 64 * q.rounding, _out(q)), **layout_attrs(node)})


def _swap(graph: Graph, node: Node, q: Q, new: Node, before: list[Node] | None = None) -> None:
    replace(graph, [node, q.node], [*(before or []), new])


def _out(q: Q) -> QOut:
    lo, hi = (-128, 127) if q.dtype is DType.INT8 else (0, 255)
    return QOut(q.zp, lo, hi)


def _codes(dtype: DType) -> np.ndarray:
    """The 256 values of a byte type, indexed by the byte (so int8 -1 is entry 255)."""
    b = np.arange(256, dtype=np.int64)
    return b - 256 * (b >= 128) if dtype is DType.INT8 else b


def _lut_node(graph: Graph, name: str, x: DQ, q: Q, fn: Node | None) -> Node:
    """QLut y = quantize(fn(dequantize(x))), fn None for a change of scale only."""
    real = ((_codes(x.q.dtype).astype(np.float32) - np.float32(x.zp[0])) * x.scale[0]).astype(np.float32)
    if fn is not None:
        consts = [real] + [v.const if v is not None else None for v in fn.inputs[1:]]
        evaluate = registry.get(fn.op).evaluate
        assert evaluate is not None, f"{fn.op} has no evaluate"
        real = np.asarray(evaluate(fn, consts)[0], np.float32)
    table = (q.quantize(real) & 0xFF).astype(np.uint8)
    out = graph.value(name, TensorType(q.dtype, x.q.shape))
    return Node("QLut", graph.unique_name(name), [x.q], [out], {"_lut": QLutTable(tuple(table.tolist()))})


def _fold_concat(graph: Graph, node: Node, q: Q, xs: list[DQ | None]) -> None:
    if any(x is None or x.q.dtype is not q.dtype for x in xs):
        return
    luts, ins = [], []
    for x in xs:
        if x.scale[0] == q.scale and int(x.zp[0]) == q.zp:
            ins.append(x.q)
        else:
            luts.append(_lut_node(graph, f"{node.name}_rescale", x, q, None))
            ins.append(luts[-1].outputs[0])
    new = Node("Concat", graph.unique_name(f"{node.name}_int8"), ins, [q.out], dict(node.attrs))
    _swap(graph, node, q, new, luts)


def _broadcastable(b: Value, y: Value) -> bool:
    """b is y's shape, a single value, or spans exactly one axis of y (see QAdd's broadcast)."""
    if b.shape == y.shape or b.type.numel == 1:
        return True
    shape = (1,) * (y.type.rank - b.type.rank) + b.shape
    if len(shape) != y.type.rank:
        return False
    big = [i for i, s in enumerate(shape) if s != 1]
    return len(big) == 1 and shape[big[0]] == y.shape[big[0]]


def _fold_binary_activation(graph: Graph, node: Node, uses: dict[int, list[Node]]) -> None:
    """Add/Sub -> a clamping activation (Relu, Clip with constant bounds) -> QuantizeLinear: one QAdd whose
    clamp is the activation."""
    readers = uses.get(id(node.outputs[0]), []) if node.outputs[0] is not None else []
    if len(readers) != 1 or graph.is_output(node.outputs[0]):
        return
    act = readers[0]
    bounds = registry.activation_clamp(act)
    if bounds is None:
        return
    q = q_of(graph, act.outputs[0], uses)
    a, b = dq_of(node.input(0), activation=True), dq_of(node.input(1), activation=True)
    # two run-time tensors (a residual connection); a bias Add stays float, as onnxruntime runs it
    if q is None or a is None or b is None or act.inputs[0] is not node.outputs[0]:
        return
    _fold_binary(graph, node, q, a, b, bounds, act)


def _fold_binary(graph: Graph, node: Node, q: Q, a: DQ, b: DQ, bounds: tuple[float, float] | None = None,
                 act: Node | None = None) -> None:
    """QAdd/QMul for node (then `act`, an activation clamping to real `bounds`) -> q."""
    y = node.outputs[0]
    assert y is not None
    if not (a.per_tensor and b.per_tensor and a.q.dtype is q.dtype and b.q.dtype is q.dtype):
        return
    if a.q.shape != y.shape and node.op != "Sub":
        a, b = b, a
    if a.q.shape != y.shape or not _broadcastable(b.q, y):
        return
    za, zb = int(a.zp[0]), int(b.zp[0])
    lo, hi = _out(q).lo, _out(q).hi
    if bounds is not None:  # clamping the real value commutes with the monotone quantization
        quantize = q.quantize_tflite if q.rounding else (lambda r: int(q.quantize(r)))
        lo = max(lo, quantize(bounds[0])) if bounds[0] > -math.inf else lo
        hi = min(hi, quantize(bounds[1])) if bounds[1] < math.inf else hi
    if node.op == "Mul" and q.rounding:  # TFLite's MUL: (a - za) * (b - zb) requantised by its multiplier
        real = float(np.float32(np.float32(a.scale[0]) * np.float32(b.scale[0])) / q.scale)
        mult, k = tflite_multiplier(real, q.rounding)
        attr, params = "_qmul", QMulParams(za, zb, mult, k + 64 * q.rounding, QOut(q.zp, lo, hi))
    elif q.rounding:  # TFLite's ADD/SUB: both inputs at 2^20 / (2 max scale), then the output's multiplier
        twice = 2.0 * float(max(np.float32(a.scale[0]), np.float32(b.scale[0])))
        reals = (float(a.scale[0]) / twice, float(b.scale[0]) / twice, twice / (2.0**20 * float(q.scale)))
        codes = [(m, k + 64 * DOUBLE) for m, k in (tflite_multiplier(r, DOUBLE) for r in reals)]
        tfl = (*codes[0], *codes[1], *codes[2], int(node.op == "Sub"))
        attr, params = "_qadd", QAddParams(za, zb, 0, 0, 64, QOut(q.zp, lo, hi), tfl)
    elif node.op == "Mul":
        mult, shift = fixed_point(float(np.float32(a.scale[0]) * np.float32(b.scale[0]) / q.scale))
        attr, params = "_qmul", QMulParams(za, zb, mult, shift, QOut(q.zp, lo, hi))
    else:
        ra, rb = float(a.scale[0]) / float(q.scale), float(b.scale[0]) / float(q.scale)
        big = max(ra, rb)
        if not 0 < big < 2.0**20:
            return
        shift = min(62, 30 - math.ceil(math.log2(big)))
        ma, mb = round(ra * 2.0**shift), round(rb * 2.0**shift)
        attr, params = "_qadd", QAddParams(za, zb, ma, -mb if node.op == "Sub" else mb, shift, QOut(q.zp, lo, hi))
    op = "QMul" if attr == "_qmul" else "QAdd"
    new = Node(op, graph.unique_name(f"{node.name}_int8"), [a.q, b.q], [q.out], {attr: params})
    replace(graph, [node, *([act] if act is not None else []), q.node], [new])


def _avgpool(graph: Graph, node: Node, x: DQ, q: Q) -> Node:
    kvol = math.prod(node.attrs["kernel_shape"])
    if q.rounding and x.scale[0] == q.scale and int(x.zp[0]) == q.zp and not node.attrs.get("count_include_pad"):
        # TFLite's: the raw bytes' sum divided by the count, half away from zero (quant.c TFL_DIVIDE)
        counts = (1, *range(1, kvol + 1))
        spec = QAvgPoolParams(0, counts, (TFL_DIVIDE,) * (kvol + 1), QOut(0, _out(q).lo, _out(q).hi))
        return Node("QAvgPool", graph.unique_name(f"{node.name}_int8"), [x.q], [q.out], {**node.attrs, "_qpool": spec})
    pairs = [(0, 1)] + [fixed_point(float(x.scale[0]) / (float(q.scale) * c)) for c in range(1, kvol + 1)]
    spec = QAvgPoolParams(int(x.zp[0]), tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), _out(q))
    return Node("QAvgPool", graph.unique_name(f"{node.name}_int8"), [x.q], [q.out], {**node.attrs, "_qpool": spec})
