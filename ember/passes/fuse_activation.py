"""Fuse an activation into the epilogue of the Conv/ConvTranspose/Gemm/MatMul that produces its input.

The producer gets `attrs["_act"] = {"op": <ONNX name>, "alpha": float, "beta": float}` and takes over
the activation's output value; its kernel applies the activation to each output tile while it is
still in cache, saving a full pass over the tensor (and its buffer). Kinds: ember.ops.matmul.ACT_KINDS.
Run after constant folding: `_act` is not an ONNX attribute, so a folded node would drop it.
"""

from __future__ import annotations

import math

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node

PRODUCERS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def activation_spec(node: Node) -> dict[str, object] | None:
    """{"op", "alpha", "beta"} for an activation node the kernels can apply, else None."""
    a = node.attrs
    if node.op == "Relu":
        return {"op": "Relu", "alpha": 0.0, "beta": 0.0}
    if node.op == "LeakyRelu":
        return {"op": "LeakyRelu", "alpha": float(a.get("alpha", 0.01)), "beta": 0.0}
    if node.op == "Elu":
        return {"op": "Elu", "alpha": float(a.get("alpha", 1.0)), "beta": 0.0}
    if node.op in ("Sigmoid", "Tanh", "HardSwish"):
        return {"op": node.op, "alpha": 0.0, "beta": 0.0}
    if node.op == "HardSigmoid":
        return {"op": "HardSigmoid", "alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))}
    if node.op == "Clip":
        bounds = []
        for i, default in ((1, -math.inf), (2, math.inf)):
            v = node.input(i)
            if v is None:
                bounds.append(default)
            elif v.is_const and v.type.numel == 1:
                bounds.append(float(v.const.reshape(-1)[0]))
            else:
                return None  # run-time bounds
        lo, hi = bounds
        return {"op": "Clip", "alpha": float(lo), "beta": float(hi)}
    return None


def fuse_activation(graph: Graph) -> None:
    uses = graph.consumers()
    for node in list(graph.nodes):
        spec = activation_spec(node)
        x = node.input(0)
        if spec is None or x is None or x.producer is None or node.outputs[0] is None:
            continue
        prod = x.producer
        if (prod.op not in PRODUCERS or prod.attrs.get("_act") or prod.outputs[0] is not x
                or len(uses.get(id(x), [])) != 1 or graph.is_output(x)
                or x.dtype not in (DType.FLOAT32, DType.FLOAT16)
                or all(v is None or v.is_const for v in prod.inputs)):
            continue
        out = node.outputs[0]
        prod.attrs["_act"] = spec
        prod.outputs[0] = out
        out.producer = prod
        graph.remove_node(node)
