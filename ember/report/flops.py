"""Floating-point work of a graph: 2 x multiply-accumulates of its convolutions and matrix products
(the convention GFLOP/s figures for CNNs and transformers use; elementwise work is not counted)."""

from __future__ import annotations

import math

from ember.ir.graph import Graph, Node


def node_flops(node: Node) -> int:
    if node.op in ("Conv", "ConvTranspose"):
        x, w = node.inputs[0], node.inputs[1]
        y = node.outputs[0]
        if x is None or w is None or y is None:
            return 0
        spatial = y.shape[2:] if node.op == "Conv" else x.shape[2:]
        # w: (M, C/G, k...) for Conv and (C, M/G, k...) for ConvTranspose: either way one output
        # (or input) element costs prod(w.shape[1:]) MACs per channel of w.shape[0].
        return 2 * x.shape[0] * w.shape[0] * math.prod(w.shape[1:]) * math.prod(spatial)
    # The algorithm variants count as the direct convolution they replace.
    if node.op in ("ConvWinograd", "ConvWinograd4", "ConvNarrow", "ConvShifted"):
        x, y = node.inputs[0], node.outputs[0]
        if x is None or y is None:
            return 0
        kernel = math.prod(node.attrs["kernel_shape"])
        return 2 * x.shape[0] * y.shape[1] * x.shape[1] * kernel * math.prod(y.shape[2:])
    if node.op in ("Gemm", "MatMul"):
        a, y = node.inputs[0], node.outputs[0]
        if a is None or y is None:
            return 0
        trans_a = node.op == "Gemm" and node.attrs.get("transA", 0)
        k = a.shape[-2] if trans_a else a.shape[-1]
        return 2 * math.prod(y.shape) * k
    return 0


def graph_flops(graph: Graph) -> int:
    return sum(node_flops(n) for n in graph.nodes)
