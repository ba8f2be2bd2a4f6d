"""Constant folding: a node whose inputs are all constants is evaluated now, by its OpDef's `evaluate`.

Except `fold_late` ops (OpDef.data; DequantizeLinear): their constant outputs would be float32 copies of
quantized weights. passes/int4_matmul.py first turns MatMul(DequantizeLinear(int4 W)) into MatMulInt4 on the
packed codes, fold_qdq then makes integer kernels of int8 ones and only afterwards folds what is left.
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph
from ember.ops import registry


def fold_constants(graph: Graph) -> None:
    for node in list(graph.nodes):
        op = registry.get(node.op)
        if (op.evaluate is None or op.data.get("fold_late")
                or any(v is not None and not v.is_const for v in node.inputs)):
            continue
        if any(v is not None and graph.is_output(v) for v in node.outputs):
            continue  # outputs are written at run time
        results = op.evaluate(node, [v.const if v is not None else None for v in node.inputs])
        for v, arr in zip(node.outputs, results, strict=False):
            if v is not None:
                v.const = np.array(arr, order="C")  # keeps 0-d scalars 0-d
                v.type = TensorType(DType.from_numpy(v.const.dtype), tuple(v.const.shape))
                v.producer = None
        graph.remove_node(node)
