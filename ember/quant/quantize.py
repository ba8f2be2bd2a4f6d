"""The quantization rewrite: a float graph plus a profile become a graph in standard ONNX QDQ form.

What onnxruntime.quantization.quantize_static makes, and what ember.passes.fold_qdq folds into
integer kernels (without it the QDQ graph still runs, as simulated quantization):
- every float activation that a quantized op reads or writes: T -> QuantizeLinear -> DequantizeLinear,
  with scale and zero point from the profile (calibrate.py, schema.py); readers take the dequantized T;
- weights of Conv/Gemm/MatMul: an int8 constant -> DequantizeLinear (per channel along the output
  channel axis where enabled); biases: an int32 constant, scale = input scale * weight scale, ->
  DequantizeLinear; constant operands of Add/Sub/Mul/Concat: quantized with their own range;
- ops that only move or select values (Reshape, MaxPool, ...) give their output the input's parameters,
  so requantising them is exact;
- `--io int8`: graph inputs become int8 tensors read by a DequantizeLinear, graph outputs the int8
  QuantizeLinear results; their scale and zero point sit in the type (header and manifest state them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ember.errors import EmberError, warn
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.opdef import Int8, WeightLayout
from ember.quant import schema as qs
from ember.quant.calibrate import clip_range
from ember.quant.histogram import Histogram

# The ops the quantizer wraps in QDQ, by their OpDef.int8 kind: those with integer kernels (planned or
# present) and the activations; every other op (Int8.LUT, None) stays float between DQ and Q.
QUANTIZED_KINDS = frozenset({Int8.LINEAR, Int8.MOVE, Int8.SELECT, Int8.ACTIVATION, Int8.ARITH, Int8.CONCAT,
                             Int8.AVERAGE, Int8.FLOAT})
# Outputs are some of the input's values: they keep the input's parameters.
SAME_PARAMS_KINDS = frozenset({Int8.MOVE, Int8.SELECT})
# Constant float operands are quantized with their own range.
CONST_OPERAND_KINDS = frozenset({Int8.ARITH, Int8.CONCAT})


class ProfileError(EmberError):
    """profile.yaml is missing, malformed, or does not describe the model's tensors."""


@dataclass(frozen=True)
class QuantConfig:
    schema: str = "asymmetric"
    precision: str = "int8"
    bias: str = "int32"
    per_channel: bool | None = None
    calibration: str = "minmax"
    percentile: float = 99.99
    keep_float: frozenset[str] = frozenset()
    io: str = "float"


@dataclass
class Profile:
    path: str
    sha: str
    tensors: dict[str, Histogram]


def read_profile(path: str, model_sha: str) -> Profile:
    p = Path(path)
    if not p.is_file():
        raise ProfileError(f"{path}: no such profile file")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(p.read_text(), Loader=loader)
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ProfileError(f"{path}: not a YAML file ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict) or "ember_profile" not in doc or not isinstance(doc.get("tensors"), dict):
        raise ProfileError(f"{path}: not an ember profile (make one with `ember profile MODEL DATA... -o {p.name}`)")
    sha = str(doc.get("model_sha256", ""))
    if sha != model_sha:
        warn(f"{path} was made from another model file (sha256 {sha[:12]}..., this one {model_sha[:12]}...); "
             "using its ranges for the tensors of the same name")
    tensors = {}
    for name, entry in doc["tensors"].items():
        try:
            tensors[str(name)] = Histogram.from_yaml(entry, entry["histogram"])
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            raise ProfileError(f"{path}: tensor '{name}': missing or malformed field ({e})") from None
    return Profile(str(path), sha, tensors)


class _Rewriter:
    def __init__(self, graph: Graph, profile: Profile, config: QuantConfig) -> None:
        self.g, self.profile, self.cfg = graph, profile, config
        self.params: dict[int, qs.Params] = {}  # id(float value) -> its activation parameters
        self.dq: dict[int, Value] = {}  # id(float value) -> its dequantized stand-in
        self.q: dict[int, Value] = {}  # id(float value) -> its quantized form
        self.inserted: set[int] = set()  # ids of the nodes that read the original float (or int) value

    def quantized(self, n: Node) -> bool:
        return registry.get(n.op).int8 in QUANTIZED_KINDS and n.op not in self.cfg.keep_float

    # parameters ----------------------------------------------------------------------------------
    def activation(self, v: Value) -> qs.Params:
        if id(v) in self.params:
            return self.params[id(v)]
        p = v.producer
        keeps = p is not None and registry.get(p.op).int8 in SAME_PARAMS_KINDS and self.quantized(p)
        src = p.input(0) if keeps and p is not None else None
        if src is not None and id(src) in self.params:
            params = self.params[id(src)]
        else:
            h = self.profile.tensors.get(v.name)
            if h is None:
                where = f"output of node '{p.name}' ({p.op})" if p is not None else "a graph input"
                raise ProfileError(f"{self.profile.path}: no range for tensor '{v.name}' ({where}); make the profile "
                                   "from this model, with the same --define/--input")
            lo, hi = clip_range(h, self.cfg.calibration, qs.levels(h.min, h.max, self.cfg.schema, self.cfg.precision),
                                self.cfg.percentile)
            params = qs.activation_params(lo, hi, self.cfg.schema, self.cfg.precision)
        self.params[id(v)] = params
        return params

    # node building -------------------------------------------------------------------------------
    def _consts(self, base: str, p: qs.Params) -> list[Value]:
        scale = self.g.constant(f"{base}_scale", p.scale.astype(np.float32))
        zp = self.g.constant(f"{base}_zero_point", p.zero_point.astype(p.dtype.np))
        return [scale, zp]

    def _node(self, op: str, base: str, inputs: list[Value], out: Value, axis: int | None) -> Node:
        attrs = {"axis": axis} if axis is not None else {}
        node = Node(op, self.g.unique_name(f"{base}_{op}"), list(inputs), [out], attrs)
        out.producer = node
        return node

    def dequantized_const(self, v: Value, p: qs.Params, suffix: str) -> tuple[Value, Node]:
        """An int constant holding `v` quantized, and the DequantizeLinear node that reads it."""
        q = self.g.constant(f"{v.name}_{suffix}", qs.quantize(np.asarray(v.const, np.float32), p))
        q.type = TensorType(q.type.dtype, q.type.shape, p.quant())
        out = self.g.value(f"{v.name}_{suffix}_dequantized", TensorType(DType.FLOAT32, v.shape))
        return out, self._node("DequantizeLinear", v.name, [q, *self._consts(q.name, p)], out, p.axis)

    def qdq(self, v: Value) -> list[Node]:
        """T -> QuantizeLinear -> DequantizeLinear; readers of T switch to the dequantized value later."""
        p = self.activation(v)
        q = self.g.value(f"{v.name}_quantized", TensorType(p.dtype, v.shape, p.quant()))
        consts = self._consts(q.name, p)
        qnode = self._node("QuantizeLinear", v.name, [v, *consts], q, None)
        dq = self.g.value(f"{v.name}_dequantized", TensorType(DType.FLOAT32, v.shape))
        dqnode = self._node("DequantizeLinear", v.name, [q, *consts], dq, None)
        self.q[id(v)], self.dq[id(v)] = q, dq
        self.inserted.add(id(qnode))
        return [qnode, dqnode]

    def int_input(self, v: Value) -> list[Node]:
        """--io int8: the graph input itself becomes the int8 tensor; a DequantizeLinear reads it."""
        p = self.activation(v)
        v.type = TensorType(p.dtype, v.shape, p.quant())
        dq = self.g.value(f"{v.name}_dequantized", TensorType(DType.FLOAT32, v.shape))
        self.q[id(v)], self.dq[id(v)] = v, dq
        node = self._node("DequantizeLinear", v.name, [v, *self._consts(v.name, p)], dq, None)
        self.inserted.add(id(node))
        return [node]

    # weights -------------------------------------------------------------------------------------
    def weight_axis(self, n: Node, w: Value, layout: WeightLayout) -> int | None:
        """The weight's output-channel axis where its scales are per channel (--per-channel, or by default
        for ops whose layout says so: convolutions), else None."""
        per_channel = self.cfg.per_channel
        if per_channel is None:
            per_channel = layout.per_channel_default
        if not per_channel or w.type.rank < 2:
            return None
        return layout.out_axis(n, w)

    def weights(self, n: Node) -> list[Node]:
        """Quantized weight (and bias) constants with their DequantizeLinear nodes, for node `n`."""
        op = registry.get(n.op)
        layout = op.weights
        if op.int8 is not Int8.LINEAR or layout is None:
            return self.const_operands(n)
        w, x = n.input(layout.input), n.input(0)
        if w is None or x is None or not w.is_const or w.dtype is not DType.FLOAT32:
            return self.const_operands(n)
        axis = self.weight_axis(n, w, layout)
        wp = qs.weight_params(np.asarray(w.const, np.float32), axis, self.cfg.schema, self.cfg.precision)
        w_dq, w_node = self.dequantized_const(w, wp, "quantized")
        n.inputs[layout.input] = w_dq
        nodes = [w_node]
        b = n.input(layout.bias) if layout.bias is not None else None
        plain_gemm = n.op != "Gemm" or (n.attrs.get("alpha", 1.0) == 1.0 and n.attrs.get("beta", 1.0) == 1.0)
        channels = w.shape[layout.out_axis(n, w)]
        if (b is not None and b.is_const and b.dtype is DType.FLOAT32 and plain_gemm and not x.is_const
                and b.type.rank >= 1 and b.type.numel == b.shape[-1] == channels):
            bp = qs.bias_params(np.asarray(b.const, np.float32), self.activation(x).scale, wp, self.cfg.bias,
                                self.cfg.schema)
            if bp.axis is not None:
                bp = qs.Params(bp.dtype, bp.scale, bp.zero_point, b.type.rank - 1)
            b_dq, b_node = self.dequantized_const(b, bp, "quantized")
            n.inputs[layout.bias] = b_dq
            nodes.append(b_node)
        return nodes

    def const_operands(self, n: Node) -> list[Node]:
        if registry.get(n.op).int8 not in CONST_OPERAND_KINDS:
            return []
        nodes = []
        for i, v in enumerate(n.inputs):
            if v is not None and v.is_const and v.dtype is DType.FLOAT32:
                a = np.asarray(v.const, np.float32)
                p = qs.activation_params(float(a.min(initial=0.0)), float(a.max(initial=0.0)), self.cfg.schema,
                                         self.cfg.precision)
                n.inputs[i], node = self.dequantized_const(v, p, "quantized")
                nodes.append(node)
        return nodes

    # the rewrite ---------------------------------------------------------------------------------
    def wanted(self, v: Value, uses: dict[int, list[Node]]) -> bool:
        if v.dtype is not DType.FLOAT32 or v.is_const:
            return False
        io = self.cfg.io == "int8" and (self.g.is_input(v) or self.g.is_output(v))
        p = v.producer
        if not io and self.fused_activation(v, uses):
            return False
        return io or (p is not None and self.quantized(p)) or any(self.quantized(c) for c in uses.get(id(v), []))

    def fused_activation(self, v: Value, uses: dict[int, list[Node]]) -> bool:
        """An Add/Sub output read only by a Relu or Clip: quantized after the activation only, as
        onnxruntime's quantizer does (fold_qdq makes the pair one QAdd with a clamp)."""
        p, readers = v.producer, uses.get(id(v), [])
        return (p is not None and p.op in ("Add", "Sub") and self.quantized(p) and len(readers) == 1
                and registry.activation_clamp(readers[0]) is not None and self.quantized(readers[0])
                and not self.g.is_output(v))

    def run(self) -> None:
        g = self.g
        uses = g.consumers()
        nodes: list[Node] = []
        for v in g.inputs:
            if self.wanted(v, uses):
                nodes += self.int_input(v) if self.cfg.io == "int8" else self.qdq(v)
        for n in g.nodes:
            if self.quantized(n):
                nodes += self.weights(n)
            nodes.append(n)
            for v in n.outputs:
                if v is not None and self.wanted(v, uses):
                    nodes += self.qdq(v)
        for n in nodes:
            if id(n) not in self.inserted:
                n.inputs = [self.dq.get(id(v), v) if v is not None else None for v in n.inputs]
        table = self.q if self.cfg.io == "int8" else self.dq
        g.outputs = [table.get(id(v), v) for v in g.outputs]
        g.nodes = _without_dead_dequantize(nodes, g)


def _without_dead_dequantize(nodes: list[Node], g: Graph) -> list[Node]:
    """DequantizeLinear nodes nobody reads (an --io int8 output's float twin)."""
    read = {id(v) for n in nodes for v in n.inputs if v is not None} | {id(v) for v in g.outputs}
    return [n for n in nodes if n.op != "DequantizeLinear" or id(n.outputs[0]) in read]


def quantize_graph(graph: Graph, profile: Profile, config: QuantConfig) -> None:
    _Rewriter(graph, profile, config).run()
