"""An ember IR graph (before elementwise fusion) written back as an ONNX model, for onnxruntime to run.

The quantizer's QDQ rewrite is checked by running its result in onnxruntime: the same ONNX semantics
of QuantizeLinear/DequantizeLinear that the bundle implements. A fused activation (`_act`, not an
ONNX attribute) becomes its own node again.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ember.frontends.onnx.dtypes import dtype_to_onnx
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops.epilogue import Epilogue, epilogue_of

# The IR's canonical forms are those of the newest ONNX opsets: written back at this one.
OPSET = 21


def _act_node(act: Epilogue, src: str, dst: str) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    op = act.kind
    if op == "Clip":
        lo = numpy_helper.from_array(np.float32(act.alpha), f"{dst}_min")
        hi = numpy_helper.from_array(np.float32(act.beta), f"{dst}_max")
        return helper.make_node("Clip", [src, lo.name, hi.name], [dst]), [lo, hi]
    attrs = {"LeakyRelu": {"alpha": act.alpha}, "Elu": {"alpha": act.alpha},
             "HardSigmoid": {"alpha": act.alpha, "beta": act.beta}}.get(op, {})
    return helper.make_node(op, [src], [dst], **attrs), []


def to_onnx(graph: Graph) -> onnx.ModelProto:
    names: dict[int, str] = {}
    inits: dict[int, onnx.TensorProto] = {}
    # A model output name held by another value inside (the float twin of a quantized output) is renamed.
    taken = {o: v for v, o in zip(graph.outputs, graph.output_names, strict=True)}

    def name(v: Value) -> str:
        if id(v) not in names:
            clash = v.name in taken and taken[v.name] is not v
            names[id(v)] = f"{v.name}_inner" if clash else v.name
            if v.is_const:
                inits[id(v)] = numpy_helper.from_array(np.asarray(v.const), v.name)
        return names[id(v)]

    protos: list[onnx.NodeProto] = []
    extra: list[onnx.TensorProto] = []
    for v in graph.inputs:
        name(v)
    for n in graph.nodes:
        protos += _node(n, name, extra)
    inputs = [helper.make_tensor_value_info(v.name, dtype_to_onnx(v.dtype), list(v.shape)) for v in graph.inputs]
    outputs = []
    for v, out_name in zip(graph.outputs, graph.output_names, strict=True):
        if name(v) != out_name:
            protos.append(helper.make_node("Identity", [name(v)], [out_name]))
        outputs.append(helper.make_tensor_value_info(out_name, dtype_to_onnx(v.dtype), list(v.shape)))
    g = helper.make_graph(protos, graph.name, inputs, outputs, list(inits.values()) + extra)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def _attr(v: object) -> object:
    if isinstance(v, np.ndarray):
        return numpy_helper.from_array(v)
    return dtype_to_onnx(v) if isinstance(v, DType) else v


def _node(n: Node, name, extra: list[onnx.TensorProto]) -> list[onnx.NodeProto]:
    assert n.op != "FusedElementwise", "export the graph before elementwise fusion"
    ins = [name(v) if v is not None else "" for v in n.inputs]
    outs = [name(v) if v is not None else "" for v in n.outputs]
    attrs = {k: _attr(v) for k, v in n.attrs.items() if not k.startswith("_")}
    op = "Identity" if n.op == "Copy" else n.op
    act = epilogue_of(n)
    if act is None:
        return [helper.make_node(op, ins, outs, name=n.name, **attrs)]
    pre = f"{outs[0]}_before_{act.kind}"
    act_proto, consts = _act_node(act, pre, outs[0])
    extra += consts
    return [helper.make_node(op, ins, [pre, *outs[1:]], name=n.name, **attrs), act_proto]
