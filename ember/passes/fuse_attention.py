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

Where Q, K and V are head-split views of [batch, tokens, heads x head size] rows (Reshape / Transpose chains
that only move the heads axis: BERT's `transpose_for_scores`, ViT's in_proj split) and the output goes back
to that layout through one Transpose, the node takes Attention's 3-D form on those rows instead: the kernel
reads each head at its stride and writes its rows in place, and the copies of the Transposes go away.

Only the exact pattern: the scores and probabilities read by nothing else, float32, no broadcasting
between the batch dims (a Softmax over another axis, an additive mask, or shared K across batches keep
their nodes). Runs on bundles only, before elementwise fusion would take the Muls into loops.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class _Found:
    q: Value  # [B, H, S, D]
    k: Value | None  # [B, H, T, D]; None where only a K^T of another layout exists (BERT's): 3-D form only
    v: Value  # [B, H, T, DV]
    scale: float
    second: Node  # the MatMul by V
    kt: tuple[Value, list[str]]  # K^T (or K below a scaling Mul) and its axes' names, for _find_rows


def _match(softmax: Node, uses: dict[int, list[Node]], graph: Graph) -> _Found | None:
    """The attention around this Softmax, or None."""
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
    k, c_k = _unscale(k_scaled) if k_scaled is not None else (None, 1.0)  # Transpose(K * c)
    trace = (k, ["b", "h", "s", "d"]) if k is not None and k is not k_scaled else (kt, ["b", "h", "d", "s"])
    v = second.inputs[1]
    if v is None or any(t.type.rank != 4 or t.dtype is not DType.FLOAT32 for t in (q, kt, v)):
        return None
    (b, h, _, d), (kb, kh, kd, t), (vb, vh, vt, _) = q.shape, kt.shape, v.shape
    if (kb, kh, kd) != (b, h, d) or (vb, vh, vt) != (b, h, t):
        return None
    return _Found(q, k, v, c_s * c_q * c_k * c_kt, second, trace)


def _nonunit(names: list[str | None], sizes: dict[str, int]) -> list[str]:
    return [n for n in names if n is not None and sizes[n] != 1]


def _find_rows(v: Value, names: list[str], sizes: dict[str, int]) -> Value | None:
    """A value holding v's elements in the memory order batch, tokens, heads, head size ("b", "s", "h", "d":
    unit axes aside) that v is a view of through Transposes and Reshapes that only add or drop unit axes;
    `names` names v's axes. None when the chain leads elsewhere."""
    want = _nonunit(["b", "s", "h", "d"], sizes)
    cur, axes = v, list(names)
    for _ in range(8):
        if _nonunit(axes, sizes) == want:
            return cur
        node = cur.producer
        if node is None or node.outputs[0] is not cur or node.input(0) is None:
            return None
        src = node.inputs[0]
        if node.op == "Transpose":
            perm = list(node.attrs.get("perm", []))
            moved: list[str | None] = [None] * len(perm)
            for i, p in enumerate(perm):
                moved[p] = axes[i]
            axes = moved
        elif node.op == "Reshape" and [d for d in src.shape if d != 1] == [d for d in cur.shape if d != 1]:
            named = iter([a for a, d in zip(axes, cur.shape, strict=True) if d != 1])
            axes = [next(named) if d != 1 else None for d in src.shape]
        else:
            return None
        cur = src
    return None


def _reshaped(graph: Graph, v: Value, shape: tuple[int, ...], at: int) -> Value:
    """A Reshape of v to `shape` inserted before node index `at` (a view: no copy)."""
    out = graph.value(f"{v.name}_rows", v.type.with_shape(shape))
    dims = graph.constant(f"{out.name}_shape", np.array(shape, np.int64))
    graph.add_node(Node("Reshape", graph.unique_name(f"{v.name}_rows"), [v, dims], [out], {}), at)
    return out


def _rows_plan(f: _Found, uses: dict[int, list[Node]], graph: Graph) -> tuple[Value, Value, Value, Node] | None:
    """(Q, K, V rows, the output's Transpose) when Q, K and V are head-split views of [B, tokens, heads x
    size] rows and the output's one reader (a Transpose) lays it out as such rows; else None."""
    b, h, s, d = f.q.shape
    t, dv = f.v.shape[2], f.v.shape[3]
    reader = _only_reader(f.second.outputs[0], uses, graph) if f.second.outputs[0] is not None else None
    if reader is None or reader.op != "Transpose" or reader.outputs[0] is None:
        return None
    perm = list(reader.attrs.get("perm", []))
    out_sizes = {"b": b, "h": h, "s": s, "d": dv}
    if _nonunit([["b", "h", "s", "d"][p] for p in perm], out_sizes) != _nonunit(["b", "s", "h", "d"], out_sizes):
        return None
    qr = _find_rows(f.q, ["b", "h", "s", "d"], {"b": b, "h": h, "s": s, "d": d})
    kr = _find_rows(f.kt[0], f.kt[1], {"b": b, "h": h, "s": t, "d": d})
    vr = _find_rows(f.v, ["b", "h", "s", "d"], {"b": b, "h": h, "s": t, "d": dv})
    if qr is None or kr is None or vr is None:
        return None
    return qr, kr, vr, reader


def _attention_on_rows(graph: Graph, f: _Found, plan: tuple[Value, Value, Value, Node], node_name: str) -> None:
    """The Attention node in its 3-D form on the rows; the output's Transpose becomes a view of its rows."""
    qr, kr, vr, reader = plan
    b, h, s, d = f.q.shape
    t, dv = f.v.shape[2], f.v.shape[3]
    at = graph.nodes.index(f.second)
    rows = [_reshaped(graph, x, (b, n, h * size), at) for x, n, size in ((qr, s, d), (kr, t, d), (vr, t, dv))]
    out = reader.outputs[0]
    assert out is not None
    y_rows = graph.value(f"{out.name}_rows", out.type.with_shape((b, s, h * dv)))
    attention = Node("Attention", node_name, rows, [y_rows],
                     {"scale": float(np.float32(f.scale)), "q_num_heads": h, "kv_num_heads": h})
    graph.add_node(attention, graph.nodes.index(f.second))
    graph.remove_node(f.second)
    dims = graph.constant(f"{out.name}_shape", np.array(out.shape, np.int64))
    k = graph.nodes.index(reader)
    graph.nodes[k] = Node("Reshape", reader.name, [y_rows, dims], [out], {})
    out.producer = graph.nodes[k]


def fuse_attention(graph: Graph) -> None:
    uses = graph.consumers()
    fused = False
    for node in list(graph.nodes):
        if node.op != "Softmax":
            continue
        found = _match(node, uses, graph)
        if found is None:
            continue
        name = graph.unique_name(f"{found.second.name}_attention")
        plan = _rows_plan(found, uses, graph)
        if plan is not None:
            _attention_on_rows(graph, found, plan, name)
        elif found.k is not None:
            out = found.second.outputs[0]
            attention = Node("Attention", name, [found.q, found.k, found.v], [out],
                             {"scale": float(np.float32(found.scale))})
            graph.add_node(attention, graph.nodes.index(found.second))
            graph.remove_node(found.second)
        else:
            continue
        fused = True
    if fused:  # the scores' MatMul, the Softmax, the scaling Muls and the Transposes, now unread
        remove_dead_nodes(graph)
