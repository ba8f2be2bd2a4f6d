"""Scaled dot-product attention written out by an exporter, as one Attention node.

torch.onnx writes `nn.MultiheadAttention` (torchvision's ViT) and hand-written attention as

    MatMul(Q [* c_q], Transpose(K)[* c_k]) [* c | / c] -> Softmax(axis -1) -> MatMul(., V)

on 4-D [batch, heads, tokens, head size] tensors, the c scalar constants (by then folded: sqrt(1/sqrt(d)) on
each of Q and K^T for torch's scaled_dot_product_attention). As separate nodes the whole score matrix
(heads x tokens x tokens: 3 x 197 x 197 floats in ViT-Tiny) is written, read by the Softmax, written again
and read by the second MatMul, and K^T is copied by the Transpose. The Attention kernel
(kernels/attention.c) computes the same per block of query rows with the scores in cache, K and V packed
once per head: on ViT-Tiny's heads 0.8x the time of the three nodes. The scale is the product of the
constants; Q, K and V are read where they are.

Only the exact pattern: the scores and probabilities read by nothing else, float32, no broadcasting
between the batch dims (a Softmax over another axis, an additive mask, or shared K across batches keep
their nodes). Runs on bundles only, before elementwise fusion would take the Muls into loops.
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.passes.dce import remove_dead_nodes


def _scalar(v: Value | None) -> float | None:
    """The value of a one-element float constant, else None."""
    if v is None or not v.is_const or v.dtype is not DType.FLOAT32 or v.type.numel != 1:
        return None
    return float(np.asarray(v.const).reshape(-1)[0])


def _only_reader(v: Value, uses: dict[int, list[Node]], graph: Graph) -> Node | None:
    readers = uses.get(id(v), [])
    if len(readers) != 1 or graph.is_output(v):
        return None
    return readers[0]


def _unscale(v: Value) -> tuple[Value, float]:
    """(x, c) when v = x * c or x / c for a scalar constant c (either operand of a Mul), else (v, 1)."""
    node = v.producer
    if node is None or node.op not in ("Mul", "Div") or len(node.inputs) != 2 or node.outputs[0] is not v:
        return v, 1.0
    a, b = node.inputs
    c = _scalar(b)
    if c is not None and a is not None and a.shape == v.shape and c != 0.0:
        return a, 1.0 / c if node.op == "Div" else c
    c = _scalar(a) if node.op == "Mul" else None
    if c is not None and b is not None and b.shape == v.shape:
        return b, c
    return v, 1.0


def _untranspose(v: Value) -> Value | None:
    """x when v = Transpose(x) swapping the last two axes, else None."""
    node = v.producer
    rank = v.type.rank
    if node is None or node.op != "Transpose" or node.outputs[0] is not v or node.input(0) is None:
        return None
    perm = list(node.attrs.get("perm", []))
    return node.inputs[0] if perm == [*range(rank - 2), rank - 1, rank - 2] else None


def _match(softmax: Node, uses: dict[int, list[Node]], graph: Graph) -> tuple[list[Value], float, Node] | None:
    """([Q, K, V], scale, the second MatMul) of an attention around this Softmax, or None."""
    x, p = softmax.input(0), softmax.outputs[0]
    if x is None or p is None or x.type.rank != 4 or x.dtype is not DType.FLOAT32:
        return None
    if int(softmax.attrs.get("axis", -1)) not in (-1, 3):
        return None
    second = _only_reader(p, uses, graph)
    if second is None or second.op != "MatMul" or second.inputs[0] is not p or second.attrs:
        return None
    scores, c_s = x, 1.0
    if x.producer is not None and x.producer.op in ("Mul", "Div"):
        scores, c_s = _unscale(x)
        if scores is x or _only_reader(scores, uses, graph) is not x.producer:
            return None
    first = scores.producer
    if first is None or first.op != "MatMul" or first.attrs or _only_reader(scores, uses, graph) is None:
        return None
    q, c_q = _unscale(first.inputs[0])
    kt, c_kt = _unscale(first.inputs[1])  # Transpose(K) * c, torch's order
    k_scaled = _untranspose(kt)
    if k_scaled is None:
        return None
    k, c_k = _unscale(k_scaled)  # Transpose(K * c)
    c_k *= c_kt
    v = second.inputs[1]
    if v is None or any(t.type.rank != 4 or t.dtype is not DType.FLOAT32 for t in (q, k, v)):
        return None
    (b, h, _, d), (kb, kh, t, kd), (vb, vh, vt, _) = q.shape, k.shape, v.shape
    if (kb, kh, kd) != (b, h, d) or (vb, vh, vt) != (b, h, t):
        return None
    return [q, k, v], c_s * c_q * c_k, second


def fuse_attention(graph: Graph) -> None:
    uses = graph.consumers()
    fused = False
    for node in list(graph.nodes):
        if node.op != "Softmax":
            continue
        found = _match(node, uses, graph)
        if found is None:
            continue
        qkv, scale, second = found
        out = second.outputs[0]
        attention = Node("Attention", graph.unique_name(f"{second.name}_attention"), list(qkv), [out],
                         {"scale": float(np.float32(scale))})
        graph.add_node(attention, graph.nodes.index(second))
        graph.remove_node(second)
        fused = True
    if fused:  # the scores' MatMul, the Softmax, the scaling Muls and K's Transpose, now unread
        remove_dead_nodes(graph)
