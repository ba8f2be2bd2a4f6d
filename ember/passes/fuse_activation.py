"""Fuse an activation into the epilogue of the weighted op that produces its input.

Any op whose OpDef `takes_epilogue` (Conv, ConvTranspose, Gemm, MatMul) can absorb any activation whose
OpDef says what it is as an epilogue (ember/ops/epilogue.py). The producer gets `attrs["_act"]`, an
`Epilogue`, and takes over the activation's output value; its kernel applies the activation to each
output tile while it is still in cache, saving a full pass over the tensor (and its buffer).
"""

from __future__ import annotations

from ember.ir.dtypes import DType
from ember.ir.graph import Graph
from ember.ops import registry
from ember.ops.epilogue import EPILOGUE_ATTR, epilogue_of


def fuse_activation(graph: Graph) -> None:
    uses = graph.consumers()
    for node in list(graph.nodes):
        spec = registry.as_epilogue(node)
        x = node.input(0)
        if spec is None or x is None or x.producer is None or node.outputs[0] is None:
            continue
        prod = x.producer
        if (not registry.get(prod.op).takes_epilogue or epilogue_of(prod) is not None or prod.outputs[0] is not x
                or len(uses.get(id(x), [])) != 1 or graph.is_output(x)
                or x.dtype not in (DType.FLOAT32, DType.FLOAT16)
                or all(v is None or v.is_const for v in prod.inputs)):
            continue
        out = node.outputs[0]
        prod.attrs[EPILOGUE_ATTR] = spec
        prod.outputs[0] = out
        out.producer = prod
        graph.remove_node(node)
