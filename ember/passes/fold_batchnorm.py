"""Fold inference BatchNormalization (and per-channel constant Mul/Add) into the preceding weighted op.

BN(y) = a * y + b per channel with a = scale / sqrt(var + eps), b = bias - mean * a. When y is the
single-use output of a Conv / ConvTranspose / Gemm (or a 2-D MatMul with constant weights, which
becomes a Gemm), a rescales the weights and b joins the bias: the BN node and its pass over the
tensor disappear. Constant per-channel Mul / Add after such a producer fold the same way.
Run after fold_constants and before fuse_activation (a fused activation blocks folding).
"""

from __future__ import annotations

import numpy as np

from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.epilogue import epilogue_of


def _per_channel(c: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """`c` as a vector over axis 1 of `out_shape` if it broadcasts as one value per channel."""
    rank = len(out_shape)
    if c.ndim > rank:
        return None
    shape = (1,) * (rank - c.ndim) + tuple(c.shape)
    if any(s != 1 for i, s in enumerate(shape) if i != 1) or shape[1] not in (1, out_shape[1]):
        return None
    return np.broadcast_to(c.reshape(-1).astype(np.float64), (out_shape[1],))


def _foldable_producer(graph: Graph, x: Value | None, uses: dict[int, list[Node]]) -> Node | None:
    if x is None or x.producer is None or graph.is_output(x) or len(uses.get(id(x), [])) != 1:
        return None
    p = x.producer
    layout = registry.get(p.op).weights
    if layout is None or p.outputs[0] is not x or epilogue_of(p) is not None:
        return None
    w = p.input(layout.input)
    if w is None or not w.is_const or not p.inputs[0] or p.inputs[0].is_const:
        return None
    bias = p.input(layout.bias) if layout.bias is not None else None
    if bias is not None and not bias.is_const:
        return None  # the folded bias must be a constant
    if p.op == "MatMul" and (x.type.rank != 2 or w.type.rank != 2 or p.inputs[0].type.rank != 2):
        return None  # only a 2-D MatMul has its channels on axis 1 and can become a Gemm
    if p.op == "Gemm" and len(x.shape) != 2:
        return None
    return p


def _apply(graph: Graph, p: Node, a: np.ndarray, b: np.ndarray) -> None:
    """Make producer p compute a * y + b per output channel (a, b float64 vectors)."""
    w = p.input(1)
    assert w is not None and w.const is not None
    dt = w.const.dtype
    wc = w.const.astype(np.float64)
    m = a.shape[0]
    if p.op == "MatMul":  # -> Gemm(A, B, C): Y = A @ B + C
        p.op = "Gemm"
        p.attrs = {k: v for k, v in p.attrs.items() if k.startswith("_")}
        p.inputs = [p.inputs[0], w, None]
    if p.op == "Conv":
        wc = wc * a.reshape((m,) + (1,) * (wc.ndim - 1))
        old = p.input(2)
        bias = old.const.astype(np.float64) if old is not None else np.zeros(m)
        new_bias = bias * a + b
    elif p.op == "ConvTranspose":
        group = p.attrs.get("group", 1)
        mg = wc.shape[1]
        # W is (C, M/group, k...): input channel c belongs to group c // (C/group).
        scale = a.reshape(group, 1, mg).repeat(wc.shape[0] // group, axis=1).reshape(wc.shape[0], mg)
        wc = wc * scale.reshape(scale.shape + (1,) * (wc.ndim - 2))
        old = p.input(2)
        bias = old.const.astype(np.float64) if old is not None else np.zeros(m)
        new_bias = bias * a + b
    else:  # Gemm: channels are Y's columns, the columns of op(B)
        if p.attrs.get("transB", 0):
            wc = wc * a[:, None]
        else:
            wc = wc * a[None, :]
        beta = float(p.attrs.get("beta", 1.0))
        c = p.input(2)
        cc = beta * c.const.astype(np.float64) if c is not None and beta != 0.0 else np.zeros(1)
        new_bias = cc * a + b  # broadcasts like C: (N,), (1, N), (M, N) or a scalar -> (N,)
        p.attrs["beta"] = 1.0
    while len(p.inputs) < 3:
        p.inputs.append(None)
    p.inputs[1] = graph.constant(f"{p.name}_w_folded", wc.astype(dt))
    p.inputs[2] = graph.constant(f"{p.name}_b_folded", np.asarray(new_bias).astype(dt))


def _take_output(graph: Graph, p: Node, node: Node) -> None:
    """p now produces `node`'s output directly; `node` goes away."""
    out = node.outputs[0]
    assert out is not None
    p.outputs[0] = out
    out.producer = p
    graph.remove_node(node)


def _bn_params(node: Node) -> tuple[np.ndarray, np.ndarray] | None:
    if node.attrs.get("training_mode", 0) or any(o is not None for o in node.outputs[1:]):
        return None
    params = node.inputs[1:5]
    if len(params) != 4 or any(v is None or not v.is_const for v in params):
        return None
    scale, bias, mean, var = (v.const.astype(np.float64).reshape(-1) for v in params if v is not None)
    a = scale / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
    return a, bias - mean * a


def fold_batchnorm(graph: Graph) -> None:
    uses = graph.consumers()
    for node in list(graph.nodes):
        if node.op not in ("BatchNormalization", "Add", "Mul") or node.outputs[0] is None:
            continue
        if node.op == "BatchNormalization":
            p = _foldable_producer(graph, node.input(0), uses)
            ab = _bn_params(node) if p is not None else None
            if p is None or ab is None:
                continue
            a, b = ab
        else:
            if len(node.inputs) != 2:
                continue
            x, c = node.inputs
            if x is not None and x.is_const:
                x, c = c, x
            if x is None or c is None or not c.is_const or node.outputs[0].shape != x.shape:
                continue
            p = _foldable_producer(graph, x, uses)
            vec = _per_channel(c.const, x.shape) if p is not None else None
            if p is None or vec is None:
                continue
            a, b = (np.ones_like(vec), vec) if node.op == "Add" else (vec, np.zeros_like(vec))
        _apply(graph, p, np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        _take_output(graph, p, node)
        uses = graph.consumers()
