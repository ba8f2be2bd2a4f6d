"""What the HTML report needs from a compile, recorded compactly in NAME.json (keys "graph", "memory_plan").

"graph" lists the optimized top-level nodes in the order of NAME.json's "nodes" (same index): where each
input comes from (a node index, or -1-k for graph input k; constants are weights and left out), each output's
element type and shape, multiply-accumulates, and the algorithm ember chose where it chose one.
"memory_plan" lists every activation buffer the planner placed: [first step, last step, offset, bytes, name].
"""

from __future__ import annotations

from typing import Any

from ember.ir.graph import Graph, Node
from ember.memory.plan import MemoryPlan
from ember.report.flops import node_flops

# Operators that passes/conv_algorithms.py (and int8_layout.py) pick, named as README's "Speed" describes them.
_ALGORITHMS = {
    "ConvWinograd4": "Winograd F(4x4,3x3)",
    "ConvWinograd": "Winograd F(2x2,3x3)",
    "ConvNarrow": "pixel-major matmul, packed panels",
    "ConvShifted": "matmul over shifted views",
    "QConvShifted": "int8, shifted word planes",
    "QConvWinograd": "int8, Winograd F(2x2,3x3) in int16",
    "MatMulPanels": "matmul, weights in packed panels",
}


def algorithm(node: Node) -> str:
    if node.op in _ALGORITHMS:
        return _ALGORITHMS[node.op]
    x = node.inputs[0] if node.inputs else None
    if node.op not in ("Conv", "QConv") or x is None or x.type.rank < 3:
        return ""
    prefix = "int8, " if node.op == "QConv" else ""  # QConv's inputs: [x, x zero point, packed weights]
    w = node.inputs[1] if node.op == "Conv" else None
    kernel = list(w.shape[2:]) if w is not None else list(node.attrs.get("kernel_shape") or [])
    group = node.attrs.get("group", 1)
    if group > 1 and group == x.shape[1]:
        return prefix + "depthwise"
    strides = node.attrs.get("strides") or [1]
    if kernel and set(kernel) | set(strides) == {1} and not any(node.attrs.get("pads") or [0]):
        return prefix + "direct 1x1 matmul"
    return prefix + "im2col + matmul"


def graph_record(graph: Graph) -> dict[str, Any]:
    source: dict[int, int] = {id(v): -1 - k for k, v in enumerate(graph.inputs)}
    nodes = []
    for i, n in enumerate(graph.nodes):
        entry: dict[str, Any] = {
            "in": [source[id(v)] for v in n.inputs if v is not None and id(v) in source],
            "out": [[v.type.dtype.short, list(v.shape)] for v in n.outputs if v is not None],
            "macs": node_flops(n) // 2,
        }
        algo = algorithm(n)
        if algo:
            entry["algorithm"] = algo
        nodes.append(entry)
        for v in n.outputs:
            if v is not None:
                source[id(v)] = i
    return {"nodes": nodes, "outputs": [source.get(id(v)) for v in graph.outputs]}  # None: a constant output


def memory_record(plan: MemoryPlan) -> dict[str, Any]:
    buffers = sorted(plan.lifetimes, key=lambda b: (b.start, b.offset))
    return {"steps": max((b.end for b in buffers), default=-1) + 1,
            "buffers": [[b.start, b.end, b.offset, b.size, b.label] for b in buffers]}
