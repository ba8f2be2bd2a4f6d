"""The state-carrying sequence mixers of recent transformer variants (float32; float16 computed in float32):
LinearAttention and CausalConvWithState. Kernels in ember/codegen/kernels/attention.c."""

from __future__ import annotations

import math

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import inp, typed
from ember.ops.matmul import float16_via_f32, require_f32
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def _shape_error(node: Node, why: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' ({node.op}): {why}")


def _has_output(node: Node, i: int) -> bool:
    return i < len(node.outputs) and node.outputs[i] is not None


# CausalConvWithState ---------------------------------------------------------------------------
#
# Inputs: (input [B, C, L], weight [C, 1, K], bias [C] (optional), past_state [B, C, K - 1] (optional)).
# Outputs: (output like input, present_state [B, C, K - 1]). Attribute: activation ("none", "silu", "swish").

def _conv_dims(node: Node) -> tuple[int, int, int, int]:
    x, w = inp(node, 0), inp(node, 1)
    if x.type.rank != 3 or w.type.rank != 3:
        raise _shape_error(node, f"input {list(x.shape)} and weight {list(w.shape)} must be 3-D")
    b, c, length = x.shape
    taps = w.shape[2]
    if w.shape[:2] != (c, 1) or taps < 1:
        raise _shape_error(node, f"weight {list(w.shape)} must be [{c}, 1, k] (depthwise, k >= 1)")
    bias, past = node.input(2), node.input(3)
    if bias is not None and bias.shape != (c,):
        raise _shape_error(node, f"bias {list(bias.shape)} must be [{c}]")
    if past is not None and past.shape != (b, c, taps - 1):
        raise _shape_error(node, f"past_state {list(past.shape)} must be [{b}, {c}, {taps - 1}]")
    return b, c, length, taps


def _infer_conv_state(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    b, c, _, taps = _conv_dims(node)
    return [typed(x.dtype, x.shape), typed(x.dtype, (b, c, taps - 1)) if _has_output(node, 1) else None]


def _normalize_conv_state(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, *node.outputs)
    if node.attrs.get("activation", "none") not in ("none", "silu", "swish"):
        raise UnsupportedOperatorError(node.op, node.name, f"activation '{node.attrs['activation']}' "
                                                           "(none, silu or swish)")


def _lower_conv_state(node: Node, k: KernelEmitter) -> None:
    b, c, length, taps = _conv_dims(node)
    present = k.out(1) if _has_output(node, 1) and taps > 1 else "0"
    k.call("ember_causal_conv_state_f32", k.out(0), present, k.inp(0), k.inp(1),
           k.inp(2) if node.input(2) is not None else "0", k.inp(3) if node.input(3) is not None else "0",
           b, c, length, taps, int(node.attrs.get("activation", "none") != "none"))


register(float16_via_f32(OpDef(
    "CausalConvWithState", infer=_infer_conv_state, normalize=_normalize_conv_state, lower=_lower_conv_state,
    kernels=("ember_causal_conv_state_f32",), flops=lambda n: 2 * inp(n, 0).type.numel * inp(n, 1).shape[-1],
)))


# LinearAttention -------------------------------------------------------------------------------
#
# Inputs: (query [B, T, HQ * DK], key [B, T, HKV * DK], value [B, T, HKV * DV], past_state [B, HKV, DK, DV],
# decay [B, T, HKV] or [B, T, HKV * DK], beta [B, T, HKV] or [B, T, 1]), the last three optional.
# Outputs: (output [B, T, HQ * DV], present_state [B, HKV, DK, DV]). Attributes: q_num_heads, kv_num_heads,
# scale (0: 1 / sqrt(DK)), update_rule ("linear", "gated", "delta", "gated_delta"), chunk_size (a tuning
# hint of the chunked algorithm; the kernel runs the recurrence step by step, which gives the same result).

_RULES = {"linear": (False, False), "gated": (True, False), "delta": (False, True), "gated_delta": (True, True)}


class _LinearDims:
    def __init__(self, node: Node) -> None:
        q, k, v = inp(node, 0), inp(node, 1), inp(node, 2)
        self.hq, self.hkv = node.attrs.get("q_num_heads", 0), node.attrs.get("kv_num_heads", 0)
        if self.hq <= 0 or self.hkv <= 0 or self.hq % self.hkv:
            raise _shape_error(node, f"q_num_heads {self.hq} must be a positive multiple of kv_num_heads {self.hkv}")
        if q.type.rank != 3 or k.type.rank != 3 or v.type.rank != 3:
            raise _shape_error(node, "query, key and value must be 3-D [batch, steps, heads * size]")
        self.batch, self.steps = q.shape[:2]
        if q.shape[2] % self.hq or v.shape[2] % self.hkv:
            raise _shape_error(node, "the hidden sizes of query and value are not multiples of their heads")
        self.dk, self.dv = q.shape[2] // self.hq, v.shape[2] // self.hkv
        lead = (self.batch, self.steps)
        if k.shape != (*lead, self.hkv * self.dk) or v.shape[:2] != lead:
            raise _shape_error(node, f"key {list(k.shape)} / value {list(v.shape)} do not match query {list(q.shape)}")
        past = node.input(3)
        if past is not None and past.shape != (self.batch, self.hkv, self.dk, self.dv):
            raise _shape_error(node, f"past_state {list(past.shape)} must be "
                                     f"[{self.batch}, {self.hkv}, {self.dk}, {self.dv}]")
        decay, beta = node.input(4), node.input(5)
        self.decay_per_dim = decay is not None and decay.shape == (*lead, self.hkv * self.dk)
        if decay is not None and not self.decay_per_dim and decay.shape != (*lead, self.hkv):
            raise _shape_error(node, f"decay {list(decay.shape)} must be [{self.batch}, {self.steps}, "
                                     f"{self.hkv}] or [..., {self.hkv * self.dk}]")
        self.beta_per_head = beta is not None and beta.shape == (*lead, self.hkv)
        if beta is not None and not self.beta_per_head and beta.shape != (*lead, 1):
            raise _shape_error(node, f"beta {list(beta.shape)} must be [{self.batch}, {self.steps}, {self.hkv}] "
                                     "or [..., 1]")
        self.state_numel = self.batch * self.hkv * self.dk * self.dv


def _infer_linear(node: Node) -> list[TensorType | None]:
    q, past = inp(node, 0), node.input(3)
    d = _LinearDims(node)
    state_dtype = past.dtype if past is not None else q.dtype
    return [typed(q.dtype, (d.batch, d.steps, d.hq * d.dv)),
            typed(state_dtype, (d.batch, d.hkv, d.dk, d.dv)) if _has_output(node, 1) else None]


def _normalize_linear(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, *node.outputs)
    rule = node.attrs.get("update_rule", "gated_delta")
    if rule not in _RULES:
        raise UnsupportedOperatorError(node.op, node.name, f"update_rule '{rule}' (linear, gated, delta or "
                                                           "gated_delta)")
    gated, delta = _RULES[rule]
    for slot, needed, what in ((4, gated, "decay"), (5, delta, "beta")):
        if (node.input(slot) is not None) != needed:
            raise _shape_error(node, f"update_rule '{rule}' {'requires' if needed else 'forbids'} the {what} input")
    _LinearDims(node)


def _linear_scratch(node: Node) -> int:
    d = _LinearDims(node)
    return 4 * (d.dv + (0 if _has_output(node, 1) else d.state_numel))


def _lower_linear(node: Node, k: KernelEmitter) -> None:
    d = _LinearDims(node)
    scratch = k.scratch("float")
    state = k.out(1) if _has_output(node, 1) else f"({scratch} + {d.dv})"
    scale = node.attrs.get("scale", 0.0) or 1.0 / math.sqrt(d.dk)
    k.call("ember_linear_attention_f32", k.out(0), state, k.inp(0), k.inp(1), k.inp(2),
           k.inp(3) if node.input(3) is not None else "0", k.inp(4) if node.input(4) is not None else "0",
           int(d.decay_per_dim), k.inp(5) if node.input(5) is not None else "0", int(d.beta_per_head), d.batch,
           d.steps, d.hq, d.hkv, d.dk, d.dv, literal(scale, DType.FLOAT32), scratch)


def _linear_flops(node: Node) -> int:
    d = _LinearDims(node)
    # Per step and key/value head: decay, retrieval, update (3 x DK x DV) and a read per query head.
    return 2 * d.batch * d.steps * d.dk * d.dv * (3 * d.hkv + d.hq)


register(float16_via_f32(OpDef(
    "LinearAttention", infer=_infer_linear, normalize=_normalize_linear, lower=_lower_linear,
    scratch=_linear_scratch, kernels=("ember_linear_attention_f32",), flops=_linear_flops,
)))
