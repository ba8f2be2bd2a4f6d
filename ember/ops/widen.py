"""Computing an op in the widened type of an ML storage type (bfloat16, float8, float4, int4/uint4,
int2/uint2): float32 (int8/uint8 for the sub-byte integers) copies of its inputs, a widened result that a
Cast rounds back. ONNX's reference computes such ops the same way (ml_dtypes arithmetic is float32
arithmetic, rounded once).

Only Cast, QuantizeLinear/DequantizeLinear and the ops that move bytes (OpDef.data["storage_types"]) have C
for the bits themselves. The ONNX frontend widens a node before its OpDef's normalize sees it (MatMul's
refuses anything but float32/float16); passes/widen_dtypes.py widens whatever a pass creates later.
"""

from __future__ import annotations

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry


def _stored(v: Value | None) -> bool:
    return v is not None and v.dtype.is_storage_only


def needs_widening(node: Node) -> bool:
    """A node without C for the storage types among its (typed) inputs and outputs."""
    if registry.get(node.op).data.get("storage_types"):
        return False
    return any(_stored(v) for v in [*node.inputs, *node.outputs])


def widen(graph: Graph, node: Node, cache: dict[int, Value] | None = None) -> tuple[list[Node], list[Node]]:
    """Rewire `node` to compute in the widened types; returns the Casts to put before it and after it.

    Its storage-typed output Values stay where they are, as the outputs of the narrowing Casts, so every
    reader keeps reading them. `cache` shares one widened copy of a value among its readers."""
    cache = {} if cache is None else cache
    node.inputs, node.outputs = list(node.inputs), list(node.outputs)  # callers may hold the old lists
    before: list[Node] = []
    for i, v in enumerate(node.inputs):
        if v is None or not _stored(v):
            continue
        if id(v) not in cache:
            wide_type = TensorType(v.dtype.widened, v.shape)
            if v.is_const:
                cache[id(v)] = graph.constant(f"{v.name}_wide", v.const.astype(wide_type.dtype.np))
            else:
                wide = graph.value(f"{v.name}_wide", wide_type)
                cast = Node("Cast", graph.unique_name(f"{v.name}_widen"), [v], [wide], {"to": wide_type.dtype})
                wide.producer = cast
                before.append(cast)
                cache[id(v)] = wide
        node.inputs[i] = cache[id(v)]
    for name, attr in node.attrs.items():  # e.g. an output dtype attribute
        if isinstance(attr, DType) and attr.is_storage_only:
            node.attrs[name] = attr.widened
    after: list[Node] = []
    for i, v in enumerate(node.outputs):
        if v is None or not _stored(v):
            continue
        wide = graph.value(f"{v.name}_wide", TensorType(v.dtype.widened, v.shape))
        wide.producer = node
        node.outputs[i] = wide
        cast = Node("Cast", graph.unique_name(f"{v.name}_narrow"), [wide], [v], {"to": v.dtype, "saturate": 1})
        v.producer = cast
        after.append(cast)
    return before, after
