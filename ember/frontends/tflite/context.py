"""What an operator converter works with: the TFLite operator's tensors as IR values, in float or NCHW views.

Converters are written once, in float: `ctx.input(i)` is a float value (a quantized tensor is read through a
DequantizeLinear, a constant is dequantized at compile time where that is exact), and `ctx.output(i, v)`
binds the TFLite output to `v` (through a QuantizeLinear when the TFLite tensor is quantized). That is the
QDQ form ember's ONNX path already turns into integer kernels (passes/fold_qdq.py). Layout moves
(`nchw=True`) are applied on the stored side of the (De)QuantizeLinear, so Transposes move bytes and the
passes can cancel them (passes/transposes.py) before fold_qdq meets the QDQ pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.errors import ModelFormatError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.qlinear import DOUBLE, SINGLE

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


@dataclass
class Quant:
    """A TFLite tensor's affine quantization (per-tensor when `axis` is None)."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None


@dataclass
class TensorInfo:
    name: str
    dtype: DType
    shape: tuple[int, ...]
    quant: Quant | None
    data: np.ndarray | None  # a constant's contents (buffer), None for run-time tensors


class OpContext:
    """One TFLite operator being converted: its input/output tensor indices, options and the shared state."""

    def __init__(self, builder: Any, index: int, opname: str, inputs: list[int], outputs: list[int],
                 options: Any) -> None:
        self.b, self.index, self.opname = builder, index, opname
        self.inputs, self.outputs, self.options = inputs, outputs, options
        self.label = f"{opname}_{index}"
        self.graph: Graph = builder.graph
        self.atrous: Any = None  # a convolution folded with the space/batch moves around it (atrous.py)
        self.intermediates: list[int] = []  # the operator's intermediate tensors (an integer LSTM's scales)

    # ---- errors -------------------------------------------------------------------------------------
    def unsupported(self, detail: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(self.opname, f"operator {self.index}", detail, domain="tflite")

    # ---- inputs -------------------------------------------------------------------------------------
    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] >= 0

    def info(self, i: int) -> TensorInfo:
        return self.b.tensors[self.inputs[i]]

    def intermediate(self, i: int) -> TensorInfo | None:
        """Intermediate tensor i of the operator (TFLite records an integer LSTM's internal scales so)."""
        if i >= len(self.intermediates) or self.intermediates[i] < 0:
            return None
        return self.b.tensors[self.intermediates[i]]

    def out_info(self, i: int = 0) -> TensorInfo:
        return self.b.tensors[self.outputs[i]]

    def const_array(self, i: int, what: str) -> np.ndarray:
        """Input i's contents as stored (a shape, an axis list): it must be a constant."""
        t = self.info(i)
        data = self.b.const_data(self.inputs[i])
        if data is None:
            raise self.unsupported(f"input {i} ('{t.name}', the {what}) must be a constant")
        return data

    def shape(self, i: int) -> tuple[int, ...]:
        return self.b.tensors[self.inputs[i]].shape

    def raw(self, i: int) -> Value:
        """Input i as stored (int8 stays int8): for operators that only move bytes, whose output has the
        input's quantization."""
        return self.b.value_of(self.inputs[i])

    def input(self, i: int, nchw: bool = False) -> Value:
        """Input i as a float32 value (or its own integer type when not quantized), NCHW if asked."""
        t = self.info(i)
        stored = self.b.value_of(self.inputs[i])
        if nchw:
            stored = self.transpose(stored, TO_NCHW)
        if t.quant is None or t.dtype in (DType.FLOAT32,):
            return stored
        axis = t.quant.axis
        if axis is not None and nchw:
            axis = TO_NCHW.index(axis)
        return self.dequantize(stored, t.quant, axis)

    def weight(self, array: np.ndarray, quant: Quant | None, axis: int | None, what: str) -> Value:
        """A constant laid out by the converter (a conv weight as OIHW): float32, or int8 behind a
        DequantizeLinear with per-axis scales along `axis` (the new position of TFLite's quantized dim)."""
        if quant is None or array.dtype.kind == "f":
            return self.graph.constant(f"{self.label}_{what}", np.ascontiguousarray(array.astype(np.float32)))
        raw = self.graph.constant(f"{self.label}_{what}_q", np.ascontiguousarray(array))
        return self.dequantize(raw, quant, axis if quant.axis is not None else None)

    def bias(self, i: int, scale: np.ndarray | None) -> Value | None:
        """The bias of a weighted op: float32, or int32 with scale = input scale x weight scale(s)."""
        if not self.has_input(i):
            return None
        t = self.info(i)
        data = self.b.const_data(self.inputs[i])
        if data is None:
            return self.input(i)
        if t.quant is None or data.dtype.kind == "f":
            return self.graph.constant(f"{self.label}_bias", data.astype(np.float32))
        s = t.quant.scale if scale is None else scale
        q = Quant(np.asarray(s, np.float32), np.zeros(np.size(s), np.int32), 0 if np.size(s) > 1 else None)
        if data.dtype == np.int64 and np.abs(data).max(initial=0) >= 2**31:
            # a 16x8 model's int64 bias beyond int32 (DequantizeLinear reads up to int32): float, the float op's
            return self.graph.constant(f"{self.label}_bias", (data * s.astype(np.float64)).astype(np.float32))
        raw = self.graph.constant(f"{self.label}_bias_q", data.astype(np.int32))
        return self.dequantize(raw, q, q.axis)

    # ---- outputs ------------------------------------------------------------------------------------
    def output(self, i: int, v: Value, nchw: bool = False) -> None:
        """Binds TFLite output i to the float (or integer) value v, quantized to the tensor's type."""
        t = self.out_info(i)
        if t.quant is not None and t.dtype in (DType.INT8, DType.UINT8, DType.INT16) and v.dtype is DType.FLOAT32:
            v = self.quantize(v, t)
        elif v.dtype is not t.dtype:
            v = self.emit("Cast", [v], {"to": t.dtype})
        if nchw:
            v = self.transpose(v, TO_NHWC)
        want = t.shape
        if v.shape != want:
            raise ModelFormatError(f"operator {self.index} ({self.opname}): output '{t.name}' has shape "
                                   f"{list(want)} in the model but computes to {list(v.shape)}")
        self.b.bind(self.outputs[i], v)

    # ---- building -----------------------------------------------------------------------------------
    def const(self, array: Any, dtype: Any = np.int64, what: str = "c") -> Value:
        return self.graph.constant(f"{self.label}_{what}", np.asarray(array, dtype))

    def emit(self, op: str, inputs: list[Value | None], attrs: dict[str, Any] | None = None,
             n_out: int = 1) -> Any:
        """Adds one canonical IR node (types from its OpDef) and returns its output (a list if n_out > 1)."""
        outs = [self.graph.value(f"{self.label}_{op.lower()}", TensorType(DType.FLOAT32, ())) for _ in range(n_out)]
        node = Node(op, self.graph.unique_name(f"{self.label}_{op}"), list(inputs), list(outs), dict(attrs or {}))
        add_node(self.graph, node)
        return outs[0] if n_out == 1 else outs

    def transpose(self, v: Value, perm: tuple[int, ...]) -> Value:
        return self.emit("Transpose", [v], {"perm": list(perm)})

    def dequantize(self, v: Value, q: Quant, axis: int | None) -> Value:
        scale = q.scale.astype(np.float32) if axis is not None else np.float32(q.scale.reshape(-1)[0])
        zp = q.zero_point.astype(v.dtype.np) if axis is not None else v.dtype.np.type(q.zero_point.reshape(-1)[0])
        attrs = {"axis": axis} if axis is not None else {}
        return self.emit("DequantizeLinear", [v, self.const(scale, np.float32, "scale"),
                                              self.const(zp, v.dtype.np, "zp")], attrs)

    def quantize(self, v: Value, t: TensorInfo) -> Value:
        assert t.quant is not None
        scale = np.float32(t.quant.scale.reshape(-1)[0])
        zp = t.dtype.np.type(t.quant.zero_point.reshape(-1)[0])
        out = self.emit("QuantizeLinear", [v, self.const(scale, np.float32, "scale"),
                                           self.const(zp, t.dtype.np, "zp")])
        # TFLite's integer arithmetic for the kernel fold_qdq makes of this output (ops/qlinear.py)
        out.producer.attrs["_rounding"] = self.rounding()
        if self.b.rounding == "micro":  # whose kernel, where the two interpreters differ beyond rounding (RELU6)
            out.producer.attrs["_micro"] = True
        return out

    def rounding(self) -> int:
        """How this operator's kernel requantises (ops/qlinear.py SINGLE, DOUBLE): TFLite Micro rounds twice
        everywhere; LiteRT too, except in FULLY_CONNECTED (measured against both interpreters)."""
        return SINGLE if self.b.rounding == "litert" and self.opname == "FULLY_CONNECTED" else DOUBLE

    def activation(self, v: Value, fused: int) -> Value:
        """TFLite's fused activation (ActivationFunctionType) applied to v."""
        if fused == 0:
            return v
        if fused == 1:
            return self.emit("Relu", [v])
        if fused in (2, 3):
            lo, hi = (-1.0, 1.0) if fused == 2 else (0.0, 6.0)
            return self.emit("Clip", [v, self.const(lo, np.float32, "lo"), self.const(hi, np.float32, "hi")])
        if fused == 4:
            return self.emit("Tanh", [v])
        raise self.unsupported(f"fused activation {fused} (SIGN_BIT) is not supported")


def add_node(graph: Graph, node: Node) -> None:
    """Types a canonical node's outputs with its OpDef's `infer`, normalizes it, and appends it."""
    opdef = registry.get(node.op)
    assert opdef.infer is not None, f"{node.op} has no infer"
    for v, t in zip(node.outputs, opdef.infer(node), strict=False):
        if v is not None and t is not None:
            v.type = t
            v.producer = node
    if opdef.normalize is not None:
        opdef.normalize(node, graph)
    graph.add_node(node)
