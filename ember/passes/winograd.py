"""Choose Winograd F(2x2, 3x3) for the 3x3 convolutions where it wins, and transform their weights.

A 3x3, stride-1, undilated, ungrouped 2-D float32 Conv with constant weights becomes a
`ConvWinograd` node whose weight input is U[e][m][c] = (G g_mc G^T)[e] (16 x M x C), computed here
once instead of on every inference; its kernel (kernels/winograd.c) does 16 multiplies per 2x2 output
tile and channel pair instead of 36. The transformed weights are 16/9 the size of the originals, so
the pipeline runs this pass only for targets with memory to spare (host and Linux, see pipeline.py),
and only for layers with enough channels for the 16 small matmuls to run at full speed.
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node

# Below these sizes the transforms cost more than the multiplies they save (measured, issue 4).
MIN_CHANNELS = 16
MIN_OUTPUT_PIXELS = 64

# F(2x2, 3x3) weight transform: U = G g G^T.
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def transform_weights(w: np.ndarray) -> np.ndarray:
    """(M, C, 3, 3) weights -> (16, M, C) transformed weights, computed in float64."""
    u = np.einsum("ik,mckl,jl->ijmc", _G, w.astype(np.float64), _G)
    return u.reshape(16, w.shape[0], w.shape[1]).astype(w.dtype)


def _eligible(node: Node) -> bool:
    if node.op != "Conv" or len(node.inputs) < 2:
        return False
    x, w, y = node.input(0), node.input(1), node.outputs[0]
    if x is None or w is None or y is None or not w.is_const or x.dtype is not DType.FLOAT32:
        return False
    if x.type.rank != 4 or w.shape[2:] != (3, 3) or node.attrs.get("group", 1) != 1:
        return False
    strides, dilations = node.attrs.get("strides", [1, 1]), node.attrs.get("dilations", [1, 1])
    if any(s != 1 for s in strides) or any(d != 1 for d in dilations):
        return False
    m, c = w.shape[0], w.shape[1]
    return m >= MIN_CHANNELS and c >= MIN_CHANNELS and y.shape[2] * y.shape[3] >= MIN_OUTPUT_PIXELS


def winograd_convs(graph: Graph) -> None:
    for node in graph.nodes:
        if not _eligible(node):
            continue
        w = node.inputs[1]
        assert w is not None and w.const is not None
        node.op = "ConvWinograd"
        node.inputs[1] = graph.constant(f"{node.name}_w_winograd", transform_weights(w.const))
        node.attrs["_direct_weight_shape"] = list(w.shape)
