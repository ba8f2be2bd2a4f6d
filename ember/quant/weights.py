"""Weight-only compression (MACE's option): weights stored small, computed in float.

- fp16: each large float32 weight of a weighted op (OpDef.weights: Conv, ConvTranspose, Gemm, MatMul) is
  stored as float16 and widened by a Cast node.
- bf16: stored as bfloat16 bits (uint16, rounded to nearest even), widened by the internal
  BFloat16ToFloat node (a 16-bit shift, ember/ops/misc.py). Same size as fp16, float32's exponent range
  (no overflow to inf, no flush of tiny weights), 8 significant bits instead of 11.
- int8: stored as int8 with one symmetric scale per output channel, widened by DequantizeLinear.

The widened weight is computed into the activation region on every run: NAME.weights.bin (flash)
shrinks 2x / ~4x, at the cost of RAM for the largest widened weight and the time to widen it.
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.quant import schema as qs

_MIN_ELEMENTS = 64  # smaller tensors cost more in nodes than they save in bytes


def compress_weights(graph: Graph, kind: str) -> None:
    widened: dict[int, Value] = {}  # a weight shared by several nodes is widened once
    nodes: list[Node] = []
    for n in graph.nodes:
        layout = registry.get(n.op).weights
        w = n.input(layout.input) if layout is not None else None
        if (layout is not None and w is not None and w.is_const and w.dtype is DType.FLOAT32
                and w.type.numel >= _MIN_ELEMENTS and w.type.rank >= 2):
            if id(w) not in widened:
                out = graph.value(f"{w.name}_widened", TensorType(DType.FLOAT32, w.shape))
                nodes.append(_widen(graph, w, out, kind, layout.out_axis(n, w)))
                widened[id(w)] = out
            n.inputs[layout.input] = widened[id(w)]
        nodes.append(n)
    graph.nodes = nodes


def _widen(graph: Graph, w: Value, out: Value, kind: str, axis: int) -> Node:
    a = np.asarray(w.const, np.float32)
    if kind == "fp16":
        stored = graph.constant(f"{w.name}_fp16", a.astype(np.float16))
        node = Node("Cast", graph.unique_name(f"{w.name}_Cast"), [stored], [out], {"to": DType.FLOAT32})
    elif kind == "bf16":
        stored = graph.constant(f"{w.name}_bf16", to_bfloat16_bits(a))
        node = Node("BFloat16ToFloat", graph.unique_name(f"{w.name}_BFloat16ToFloat"), [stored], [out], {})
    else:
        p = qs.weight_params(a, axis, "symmetric", "int8")
        stored = graph.constant(f"{w.name}_int8", qs.quantize(a, p))
        stored.type = TensorType(stored.type.dtype, stored.type.shape, p.quant())
        scale = graph.constant(f"{w.name}_int8_scale", p.scale)
        zero = graph.constant(f"{w.name}_int8_zero_point", p.zero_point)
        node = Node("DequantizeLinear", graph.unique_name(f"{w.name}_DequantizeLinear"), [stored, scale, zero],
                    [out], {"axis": axis})
    out.producer = node
    return node


def to_bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest, ties to even; NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    # Adding 0x7fff plus the lowest kept bit rounds the dropped half: up above 0x8000, to even at it.
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(a)
    return np.where(nan, (bits >> 16) | 0x0040, rounded).astype(np.uint16)
