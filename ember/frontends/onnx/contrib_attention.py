"""onnxruntime's com.microsoft Attention and MultiHeadAttention, as canonical IR ops.

The transformer optimizer (`onnxruntime.transformers.optimizer`) fuses a BERT-style self-attention into
one Attention node: a packed QKV projection (input · weights + bias), a padding mask given as per-row
lengths (mask_index) or as a 0/1 mask, and an optional causal (unidirectional) mask. Both become the
projection as MatMul + Add, a Split into Q, K and V, and one standard Attention node (its fused kernel
splits the heads) whose additive mask holds the padding mask and any attention bias.
"""

from __future__ import annotations

import math

import numpy as np

from ember.errors import ShapeError
from ember.frontends.onnx.contrib import MS
from ember.frontends.onnx.rewrite import Rewrite, register
from ember.ir.dtypes import DType
from ember.ir.graph import Value

# onnxruntime's default mask_filter_value: what a masked score becomes before the softmax.
_MASK_FILTER = -10000.0


def _padding_mask(r: Rewrite, mask: Value, batch: int, seq: int, total: int, fill: float) -> Value:
    """The additive mask (0 where attended, `fill` where masked), broadcastable to [B, N, S, T]."""
    if mask.type.rank == 1 and mask.shape[0] == batch:  # valid lengths: tokens at or past the length are padding
        lengths = r.op("Reshape", [mask, r.const("len_shape", np.asarray([batch, 1], np.int64))], "lengths")
        positions = r.const("positions", np.arange(total, dtype=mask.dtype.np).reshape(1, total))
        keep = r.op("Less", [positions, lengths], "keep")
        shape = [batch, 1, 1, total]
    elif mask.type.rank in (2, 3):  # 1 attends, 0 is masked: [B, T] or [B, S, T]
        keep = r.op("Cast", [mask], "keep", {"to": DType.BOOL})
        shape = [batch, 1, 1, total] if mask.type.rank == 2 else [batch, 1, seq, total]
    else:
        raise r.refuse(f"a mask_index of shape {list(mask.shape)} (supported: [batch] lengths, [batch, total] "
                       "and [batch, sequence, total] masks)")
    zero, masked = r.const("zero", np.asarray(0.0, np.float32)), r.const("fill", np.asarray(fill, np.float32))
    additive = r.op("Where", [keep, zero, masked], "mask_add")
    return r.op("Reshape", [additive, r.const("mask_shape", np.asarray(shape, np.int64))], "mask_4d")


def _attend(r: Rewrite, qkv: tuple[Value, Value, Value], dims: tuple[int, int, int], sizes: list[int], heads: int,
            mask: Value | None, attrs: dict) -> None:
    """Scaled dot-product attention of projections q [B, S, Dq], k [B, T, Dk], v [B, T, Dv] (dims: B, S, T;
    sizes: Dq, Dk, Dv; adapters build nodes before types are inferred, so sizes come from the caller) into
    the node's output 0 ([B, S, Dv]): one standard Attention node (3-D form, the heads split inside its
    kernel) with the padding mask and the additive attention bias (input 5) as its additive mask."""
    batch, seq, total = dims
    if any(s % heads for s in sizes):
        raise ShapeError(f"node '{r.node.name}' ({r.op_type}): sizes {sizes} do not divide into {heads} heads")
    fill = float(attrs.get("mask_filter_value", _MASK_FILTER))
    additive = None if mask is None else _padding_mask(r, mask, batch, seq, total, fill)
    bias = r.input(5)
    if bias is not None:
        additive = bias if additive is None else r.op("Add", [additive, bias], "mask_and_bias")
    causal = int(bool(attrs.get("unidirectional", 0)))
    if causal and total != seq:
        raise r.refuse("unidirectional attention over keys of another length than the queries")
    scale = float(attrs.get("scale", 0.0)) or 1.0 / math.sqrt(sizes[0] // heads)
    r.op("Attention", [*qkv, additive], "attention",
         {"q_num_heads": heads, "kv_num_heads": heads, "scale": scale, "is_causal": causal}, out=r.output(0))


def _check_3d(r: Rewrite, x: Value, what: str) -> tuple[int, int]:
    if x.type.rank != 3:
        raise ShapeError(f"node '{r.node.name}' ({r.op_type}): {what} must be [batch, sequence, hidden], "
                         f"not {list(x.shape)}")
    return x.shape[0], x.shape[1]


def _attention(r: Rewrite, attrs: dict) -> None:
    # (input, weights, bias, mask_index, past, attention_bias, past_sequence_length) -> (output, present)
    for i, what in ((4, "past"), (6, "past_sequence_length")):
        if r.input(i) is not None:
            raise r.refuse(f"the {what} input (key/value caches)")
    if r.output(1) is not None:
        raise r.refuse("the present output (key/value caches)")
    if attrs.get("do_rotary", 0):
        raise r.refuse("do_rotary=1")
    x, weights = r.need(0, "input"), r.need(1, "weights")
    batch, seq = _check_3d(r, x, "input")
    hidden = weights.shape[-1] // 3
    sizes = [int(s) for s in attrs.get("qkv_hidden_sizes", [hidden] * 3)]
    packed = r.op("MatMul", [x, weights], "qkv")
    if r.input(2) is not None:
        packed = r.op("Add", [packed, r.input(2)], "qkv_bias")
    q, k, v = (r.ctx.value(r.node, w) for w in ("q", "k", "v"))
    r.op("Split", [packed, r.const("qkv_sizes", np.asarray(sizes, np.int64))], "q", {"axis": -1}, out=q,
         extra_outputs=[k, v])
    _attend(r, (q, k, v), (batch, seq, seq), sizes, int(attrs["num_heads"]), r.input(3), attrs)


def _multi_head_attention(r: Rewrite, attrs: dict) -> None:
    # (query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, ...) -> (output, ...)
    for i in range(6, len(r.node.inputs)):
        if r.input(i) is not None:
            raise r.refuse(f"input {i} (key/value caches)")
    if any(o is not None for o in r.node.outputs[1:]):
        raise r.refuse("the present_key/present_value outputs (key/value caches)")
    q, k, v = r.need(0, "query"), r.need(1, "key"), r.need(2, "value")
    batch, seq = _check_3d(r, q, "query")
    total = _check_3d(r, k, "key")[1]
    _check_3d(r, v, "value")
    sizes = [q.shape[-1], k.shape[-1], v.shape[-1]]
    bias = r.input(3)
    if bias is not None:  # one packed [D_q + D_k + D_v] bias
        qb, kb, vb = (r.ctx.value(r.node, w) for w in ("q_bias", "k_bias", "v_bias"))
        r.op("Split", [bias, r.const("bias_sizes", np.asarray(sizes, np.int64))], "q_bias", {"axis": 0}, out=qb,
             extra_outputs=[kb, vb])
        q, k, v = (r.op("Add", [t, b], f"{w}_biased") for t, b, w in ((q, qb, "q"), (k, kb, "k"), (v, vb, "v")))
    _attend(r, (q, k, v), (batch, seq, total), sizes, int(attrs["num_heads"]), r.input(4), attrs)


register(MS, "Attention", _attention)
register(MS, "MultiHeadAttention", _multi_head_attention)
