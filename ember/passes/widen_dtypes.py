"""Ops without a kernel for an ML storage type (bfloat16, float8, float4, int4/uint4, int2/uint2) compute in
its widened type (float32; int8/uint8 for the sub-byte integers) between Casts.

Only Cast, QuantizeLinear/DequantizeLinear and the ops that move bytes (OpDef.data["storage_types"]) work
on the bits themselves; an Add, Celu or Range on bfloat16 reads float32 copies of its inputs and writes a
float32 result that a Cast rounds back, which is how ONNX's reference computes them too (ml_dtypes
arithmetic is float32 arithmetic, rounded once). Constant inputs are widened here, at compile time.
"""

from __future__ import annotations

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry


def _native(node: Node) -> bool:
    return bool(registry.get(node.op).data.get("storage_types"))


def _stored(v: Value | None) -> bool:
    return v is not None and v.dtype.is_storage_only


def widen_storage_types(graph: Graph) -> None:
    widened: dict[int, Value] = {}  # id(storage value) -> its widened copy, shared by every reader
    for node in list(graph.nodes):
        if _native(node) or not any(_stored(v) for v in [*node.inputs, *node.outputs]):
            continue
        for i, v in enumerate(node.inputs):
            if v is None or not _stored(v):
                continue
            if id(v) not in widened:
                wide_type = TensorType(v.dtype.widened, v.shape)
                if v.is_const:
                    widened[id(v)] = graph.constant(f"{v.name}_wide", v.const.astype(wide_type.dtype.np))
                else:
                    wide = graph.value(f"{v.name}_wide", wide_type)
                    cast = Node("Cast", graph.unique_name(f"{v.name}_widen"), [v], [wide], {"to": wide_type.dtype})
                    graph.add_node(cast, graph.nodes.index(node))
                    widened[id(v)] = wide
            node.inputs[i] = widened[id(v)]
        for name, attr in node.attrs.items():  # e.g. an output dtype attribute
            if isinstance(attr, DType) and attr.is_storage_only:
                node.attrs[name] = attr.widened
        at = graph.nodes.index(node) + 1
        for v in node.outputs:
            if v is None or not _stored(v):
                continue
            narrow = graph.value(v.name, v.type)
            graph.replace_uses(v, narrow)
            v.type = TensorType(v.dtype.widened, v.shape)
            graph.add_node(Node("Cast", graph.unique_name(f"{v.name}_narrow"), [v], [narrow],
                                {"to": narrow.dtype, "saturate": 1}), at)
            at += 1
