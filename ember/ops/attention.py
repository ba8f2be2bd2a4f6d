"""The transformer operators (float32; float16 computed in float32): Attention, RMSNormalization,
RotaryEmbedding, SwiGLU, and TensorScatter (the KV cache update, any element type). Kernels in
ember/codegen/kernels/attention.c."""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass

import numpy as np

from ember.codegen.emitter import ExprHandler, KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import axis, inp, same_as_input, typed
from ember.ops.matmul import float16_via_f32, present, require_f32
from ember.ops.opdef import Int8, OpDef
from ember.ops.parallel import Split
from ember.ops.registry import register

F32 = DType.FLOAT32
_INT32_MAX = 2**31 - 1
# Query rows per block: the kernel keeps BQ x T scores in scratch instead of the whole Sq x T matrix. 48 is a
# multiple of every matmul register tile's rows (EMBER_MR 6, 8, 12: whole tiles; 32 left AVX2 two 4-row tiles,
# 1.13x the time of 48 on ViT-Tiny's 3 x 197 x 64 heads).
_QUERY_BLOCK = 48
# The kernel packs K (and V) in the matmul's compile-time panels, whose width is the CPU family's (16 or 32,
# toolchain/cpus.py): scratch is sized for keys rounded up to the widest.
_WIDEST_PANEL = 32


def _refuse(node: Node, why: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(node.op, node.name, why)


def _shape_error(node: Node, why: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' ({node.op}): {why}")


# Attention -------------------------------------------------------------------------------------
#
# Inputs: (Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen), the last four optional.
# Outputs: (Y, present_key, present_value, qk_matmul_output), the last three optional.
# Attributes: is_causal, scale, softcap, q_num_heads / kv_num_heads (3-D inputs), qk_matmul_output_mode,
# softmax_precision (a DType; the softmax runs in float32 whatever it says), left/right_window_size.

@dataclass(frozen=True)
class AttentionGeometry:
    """The attention kernel's int32 table: these fields in this order, entry i named by attention.c's
    EMBER_ATT_* macros (the field name in capitals). Strides are in elements: batch, head, row."""

    b: int
    hq: int
    hkv: int
    sq: int
    t: int  # keys: past + new
    d: int
    dv: int
    q_sb: int
    q_sh: int
    q_ss: int
    k_sb: int
    k_sh: int
    k_ss: int
    v_sb: int
    v_sh: int
    v_ss: int
    y_sb: int
    y_sh: int
    y_ss: int
    m_sb: int  # mask strides, 0 where it broadcasts
    m_sh: int
    m_sq: int
    m_len: int  # mask columns (0: no mask)
    causal: int
    past: int
    left: int  # window bounds, -1: unbounded
    right: int
    qk_mode: int
    bq: int  # query rows per block

    def table(self) -> list[int]:
        return list(astuple(self))


class _Dims:
    """Attention's sizes and the strides of Q, K, V and Y (3-D [B, S, H * D] or 4-D [B, H, S, D])."""

    def __init__(self, node: Node) -> None:
        q, k, v = inp(node, 0), inp(node, 1), inp(node, 2)
        ranks = {q.type.rank, k.type.rank, v.type.rank}
        if ranks not in ({3}, {4}):
            raise _shape_error(node, f"Q, K and V must all be 3-D or all 4-D, not of ranks "
                                     f"{q.type.rank}, {k.type.rank}, {v.type.rank}")
        self.rank = q.type.rank
        self.batch = q.shape[0]
        if self.rank == 4:
            _, self.hq, self.sq, self.d = q.shape
            _, self.hkv, self.skv, dk = k.shape
            _, hv, sv, self.dv = v.shape
            for name in ("q_num_heads", "kv_num_heads"):
                want = self.hq if name == "q_num_heads" else self.hkv
                if node.attrs.get(name, want) != want:
                    raise _shape_error(node, f"{name}={node.attrs[name]} contradicts the 4-D inputs ({want})")
        else:
            self.hq, self.hkv = node.attrs.get("q_num_heads", 0), node.attrs.get("kv_num_heads", 0)
            if self.hq <= 0 or self.hkv <= 0:
                raise _shape_error(node, "3-D inputs need positive q_num_heads and kv_num_heads attributes")
            for val, heads in ((q, self.hq), (k, self.hkv), (v, self.hkv)):
                if val.shape[2] % heads:
                    raise _shape_error(node, f"hidden size {val.shape[2]} of '{val.name}' is not a multiple "
                                             f"of its {heads} heads")
            self.sq, self.d = q.shape[1], q.shape[2] // self.hq
            self.skv, dk = k.shape[1], k.shape[2] // self.hkv
            hv, sv, self.dv = self.hkv, v.shape[1], v.shape[2] // self.hkv
        if k.shape[0] != self.batch or v.shape[0] != self.batch:
            raise _shape_error(node, "Q, K and V have different batch sizes")
        if dk != self.d or hv != self.hkv or sv != self.skv:
            raise _shape_error(node, f"K {list(k.shape)} and V {list(v.shape)} do not match Q {list(q.shape)}")
        if self.hq % self.hkv:
            raise _shape_error(node, f"{self.hkv} key/value heads do not divide {self.hq} query heads")
        past = node.input(4)
        self.past = past.shape[2] if past is not None else 0
        self.total = self.past + self.skv
        if min(self.sq, self.total, self.d, self.dv) <= 0:
            raise _shape_error(node, "empty query, key or head dimension")

    def strides(self, heads: int, rows: int, size: int) -> tuple[int, int, int]:
        """(batch, head, row) element strides of a tensor of this node's rank."""
        if self.rank == 4:
            return heads * rows * size, rows * size, size
        return rows * heads * size, size, heads * size


def _infer_attention(node: Node) -> list[TensorType | None]:
    q, k, v = inp(node, 0), inp(node, 1), inp(node, 2)
    dims = _Dims(node)
    past_k, past_v = node.input(4), node.input(5)
    if (past_k is None) != (past_v is None):
        raise _shape_error(node, "past_key and past_value must be given together")
    if past_k is not None and past_v is not None:
        want_k = (dims.batch, dims.hkv, past_k.shape[2] if past_k.type.rank == 4 else -1, dims.d)
        want_v = (dims.batch, dims.hkv, want_k[2], dims.dv)
        if past_k.shape != want_k or past_v.shape != want_v:
            raise _shape_error(node, f"past_key {list(past_k.shape)} / past_value {list(past_v.shape)} do not "
                                     f"match [batch, kv heads, past, head size] of K and V")
    y_shape = ((dims.batch, dims.hq, dims.sq, dims.dv) if dims.rank == 4
               else (dims.batch, dims.sq, dims.hq * dims.dv))
    outs: list[TensorType | None] = [typed(q.dtype, y_shape)]
    cache = [(dims.batch, dims.hkv, dims.total, dims.d), (dims.batch, dims.hkv, dims.total, dims.dv)]
    for i, (shape, src) in enumerate(zip(cache, (k, v), strict=True), start=1):
        outs.append(typed(src.dtype, shape) if i < len(node.outputs) and node.outputs[i] is not None else None)
    has_qk = len(node.outputs) > 3 and node.outputs[3] is not None
    outs.append(typed(q.dtype, (dims.batch, dims.hq, dims.sq, dims.total)) if has_qk else None)
    return outs[:max(len(node.outputs), 1)]


def _normalize_attention(node: Node, graph: Graph) -> None:
    mask, nonpad = node.input(3), node.input(6)
    require_f32(node, *node.inputs[:3], *node.inputs[4:6], *node.outputs)
    dims = _Dims(node)
    if mask is not None:
        if mask.dtype is not DType.BOOL:
            require_f32(node, mask)
        if mask.type.rank == 0 or mask.type.rank > 4:
            raise _shape_error(node, f"attn_mask of rank {mask.type.rank} (1 to 4 dims broadcast to "
                                     f"[batch, heads, q, keys])")
        if mask.shape[-1] > dims.total:
            raise _shape_error(node, f"attn_mask has {mask.shape[-1]} key columns, more than the {dims.total} keys")
        lead = (1,) * (4 - mask.type.rank) + tuple(mask.shape[:-1])
        for size, full in zip(lead[:3], (dims.batch, dims.hq, dims.sq), strict=True):
            if size not in (1, full):
                raise _shape_error(node, f"attn_mask {list(mask.shape)} does not broadcast to "
                                         f"[{dims.batch}, {dims.hq}, {dims.sq}, {dims.total}]")
    if nonpad is not None:
        if nonpad.dtype not in (DType.INT64,) or nonpad.shape != (dims.batch,):
            raise _shape_error(node, f"nonpad_kv_seqlen must be int64 of shape [{dims.batch}]")
        if node.input(4) is not None:
            raise _shape_error(node, "nonpad_kv_seqlen cannot be combined with past_key/past_value")
    if node.attrs.get("qk_matmul_output_mode", 0) not in (0, 1, 2, 3):
        raise _refuse(node, f"qk_matmul_output_mode {node.attrs['qk_matmul_output_mode']} (0 to 3 are defined)")
    precision = node.attrs.get("softmax_precision")
    if precision is not None and precision not in (DType.FLOAT32, DType.FLOAT16, DType.FLOAT64):
        raise _refuse(node, f"softmax_precision {precision} (float, float16 or double)")
    for name in ("left_window_size", "right_window_size"):
        if node.attrs.get(name, -1) < -1:
            raise _shape_error(node, f"{name} must be -1 or nonnegative, not {node.attrs[name]}")
    if node.attrs.get("softcap", 0.0) < 0:
        raise _shape_error(node, "softcap must not be negative")
    if dims.batch * dims.hq * dims.sq * max(dims.total, dims.dv) * max(dims.d, 1) > _INT32_MAX:
        raise _refuse(node, "tensors past 2^31 elements (the kernel's geometry table is int32)")


def _cache_buffers(node: Node) -> list[int]:
    """Floats of scratch for the concatenated K and V when there is a past but no present output."""
    if node.input(4) is None:
        return []
    dims = _Dims(node)
    sizes = [dims.batch * dims.hkv * dims.total * dims.d, dims.batch * dims.hkv * dims.total * dims.dv]
    return [0 if i < len(node.outputs) and node.outputs[i] is not None else size for i, size in ((1, sizes[0]),
                                                                                               (2, sizes[1]))]


def _kernel_scratch(dims: _Dims) -> int:
    """Floats of ember_attention_f32's scratch (attention.c): K packed, a block of scores, a row's bias, the
    rows' softmax factors, and V packed when its head size fills whole panels."""
    keys = -(-dims.total // _WIDEST_PANEL) * _WIDEST_PANEL
    block = min(dims.sq, _QUERY_BLOCK)
    v_packed = dims.total * dims.dv if dims.dv % 16 == 0 else 0
    return dims.d * keys + block * keys + keys + block + v_packed


def _attention_scratch(node: Node) -> int:
    return (_kernel_scratch(_Dims(node)) + sum(_cache_buffers(node))) * 4


def _lower_attention(node: Node, k: KernelEmitter, lo: int = 0, hi: int | None = None,
                      heads: tuple[int, int] | None = None) -> None:
    """The whole node, or only its query rows [lo, hi) of its query heads `heads` [h0, h1) (whole groups of the
    heads that share a key/value head; a part of a node divided among threads, split_rows): pointer offsets along
    the head and row strides, the same keys."""
    dims = _Dims(node)
    rows = (hi if hi is not None else dims.sq) - lo
    h0, h1 = heads if heads is not None else (0, dims.hq)
    group = dims.hq // dims.hkv
    mask, nonpad = node.input(3), node.input(6)
    block = min(rows, _QUERY_BLOCK)
    scratch = k.scratch("float")
    offset = _kernel_scratch(dims)
    k_ptr, v_ptr = k.inp(1), k.inp(2)
    k_strides, v_strides = dims.strides(dims.hkv, dims.skv, dims.d), dims.strides(dims.hkv, dims.skv, dims.dv)
    cache_scratch = _cache_buffers(node) or [0, 0]
    for i, (size, src, heads) in enumerate(((dims.d, 1, k_strides), (dims.dv, 2, v_strides)), start=1):
        out = node.outputs[i] if i < len(node.outputs) else None
        if out is None and node.input(4) is None:
            continue  # K / V are read where they are
        dst = k.out(i) if out is not None else f"({scratch} + {offset})"
        offset += cache_scratch[i - 1]
        past = k.inp(src + 3) if node.input(4) is not None else "0"
        k.call("ember_attention_kv_f32", dst, past, k.inp(src), dims.batch, dims.hkv, dims.past, dims.skv, size,
               *heads)
        if node.input(4) is not None:  # the attention reads the concatenated cache
            cache_strides = (dims.hkv * dims.total * size, dims.total * size, size)
            if i == 1:
                k_ptr, k_strides = dst, cache_strides
            else:
                v_ptr, v_strides = dst, cache_strides
    mask_strides, mask_len = (0, 0, 0), 0
    if mask is not None:
        mshape = (1,) * (4 - mask.type.rank) + tuple(mask.shape)
        mask_len = mshape[3]
        head_stride = mshape[2] * mask_len
        mask_strides = (mshape[1] * head_stride if mshape[0] > 1 else 0, head_stride if mshape[1] > 1 else 0,
                        mask_len if mshape[2] > 1 else 0)
    geo = AttentionGeometry(
        dims.batch, h1 - h0, (h1 - h0) // group, rows, dims.total, dims.d, dims.dv,
        *dims.strides(dims.hq, dims.sq, dims.d), *k_strides, *v_strides, *dims.strides(dims.hq, dims.sq, dims.dv),
        *mask_strides, mask_len, int(bool(node.attrs.get("is_causal", 0))), dims.past,
        node.attrs.get("left_window_size", -1), node.attrs.get("right_window_size", -1),
        node.attrs.get("qk_matmul_output_mode", 0), block)
    scale = node.attrs.get("scale")
    scale = 1.0 / math.sqrt(dims.d) if scale is None else scale
    has_qk = len(node.outputs) > 3 and node.outputs[3] is not None
    is_bool = mask is not None and mask.dtype is DType.BOOL
    # A part's heads and rows: pointer offsets along the head and row strides (the mask's 0 where it broadcasts);
    # K and V: the first key/value head of the part's (no cache then: split_rows).
    q_ptr, y_ptr = f"({k.inp(0)} + {h0 * geo.q_sh + lo * geo.q_ss})", f"({k.out(0)} + {h0 * geo.y_sh + lo * geo.y_ss})"
    if h0:
        k_ptr, v_ptr = f"({k_ptr} + {h0 // group * geo.k_sh})", f"({v_ptr} + {h0 // group * geo.v_sh})"
    mask_off = h0 * geo.m_sh + lo * geo.m_sq
    k.call("ember_attention_f32", y_ptr, q_ptr, k_ptr, v_ptr, k.table(geo.table()), literal(scale, F32),
           literal(node.attrs.get("softcap", 0.0), F32),
           f"({k.inp(3)} + {mask_off})" if mask is not None and not is_bool else "0",
           f"({k.inp(3, 'uint8_t')} + {mask_off})" if is_bool else "0",
           k.inp(6, "int64_t") if nonpad is not None else "0", k.out(3) if has_qk else "0", scratch)


# Query rows per part boundary of a node divided among threads: whole register tiles (EMBER_MR 6 and 12).
_ROW_ALIGN = 12


def split_rows(node: Node) -> Split | None:
    """Attention divided among threads (ops/split.py): its units are the row blocks (_ROW_ALIGN query rows) of
    each key/value head, head after head, so a part is whole heads where it can be: every part packs K and V
    (attention.c, once per head) only for the heads it touches, at most one of them shared with the next part,
    where parts of the query rows each packed every head's (BERT's 4 heads on 2 threads: 2 + 2 heads, nothing
    packed twice), and the parts still balance whatever the head count (ViT-Tiny's 3 heads: 1.5 each). Only
    where a row's result does not depend on its position: no causal mask or window (the offsets count from the
    first row), no KV cache, no extra outputs."""
    dims = _Dims(node)
    if (any(node.input(i) is not None for i in (4, 5, 6)) or any(o is not None for o in node.outputs[1:])
            or node.attrs.get("is_causal", 0) or node.attrs.get("left_window_size", -1) >= 0
            or node.attrs.get("right_window_size", -1) >= 0 or inp(node, 0).dtype is not F32):
        return None
    return Split(dims.hkv * -(-dims.sq // _ROW_ALIGN), 1, (), lower=_lower_attention_part)


def _lower_attention_part(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Units [lo, hi) of split_rows: a call for each key/value head the range cuts (its query rows in the range,
    of all its query heads), and one for each run of whole heads between."""
    dims = _Dims(node)
    blocks, group = -(-dims.sq // _ROW_ALIGN), dims.hq // dims.hkv
    run: list[int] = []  # whole heads [run[0], run[-1]] not yet emitted
    for hk in range(lo // blocks, -(-hi // blocks)):
        r0, r1 = max(lo - hk * blocks, 0), min(hi - hk * blocks, blocks)
        if (r0, r1) == (0, blocks):
            run.append(hk)
            continue
        if run:
            _lower_attention(node, k, heads=(run[0] * group, (run[-1] + 1) * group))
            run = []
        _lower_attention(node, k, r0 * _ROW_ALIGN, min(r1 * _ROW_ALIGN, dims.sq), (hk * group, (hk + 1) * group))
    if run:
        _lower_attention(node, k, heads=(run[0] * group, (run[-1] + 1) * group))


def _attention_flops(node: Node) -> int:
    dims = _Dims(node)
    return 2 * dims.batch * dims.hq * dims.sq * dims.total * (dims.d + dims.dv)


register(float16_via_f32(OpDef(
    "Attention", infer=_infer_attention, normalize=_normalize_attention, lower=_lower_attention,
    scratch=_attention_scratch, kernels=("ember_attention_f32", "ember_attention_kv_f32"),
    flops=_attention_flops,
)))


# RMSNormalization ------------------------------------------------------------------------------
#
# Inputs: (X, scale). Attributes: axis (-1, the first normalized axis), epsilon (1e-5), stash_type (a DType;
# the statistics are float32 whatever it says).

def _rms_axis(node: Node) -> int:
    return axis(node, node.attrs.get("axis", -1), inp(node, 0).type.rank)


def _normalize_rms(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, *node.outputs)
    x, scale = inp(node, 0), inp(node, 1)
    inner = x.shape[_rms_axis(node):]
    if scale.type.rank > len(inner) or any(s not in (1, d) for s, d in zip(scale.shape[::-1], inner[::-1],
                                                                           strict=False)):
        raise _shape_error(node, f"scale {list(scale.shape)} does not broadcast to the normalized shape "
                                 f"{list(inner)}")
    if scale.type.numel in (1, math.prod(inner)):
        return
    if not scale.is_const:
        raise _refuse(node, "a run-time scale that broadcasts over the normalized axes")
    # The kernel indexes the scale per normalized element: broadcast a constant once, here.
    node.inputs[1] = graph.constant(f"{scale.name}_bcast", np.broadcast_to(scale.const, inner).copy())


def _lower_rms(node: Node, k: KernelEmitter) -> None:
    x, scale = present(node.input(0)), present(node.input(1))
    ax = _rms_axis(node)
    outer, inner = math.prod(x.shape[:ax]), math.prod(x.shape[ax:])
    k.call("ember_rmsnorm_rows_f32", k.out(0), k.inp(0), outer, inner, literal(node.attrs.get("epsilon", 1e-5), F32),
           k.inp(1), int(scale.type.numel != 1))


def _eval_rms(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, scale = np.asarray(xs[0]), np.asarray(xs[1])
    axes = tuple(range(_rms_axis(node), x.ndim))
    rms = np.sqrt(np.mean(x.astype(np.float32) ** 2, axis=axes, keepdims=True) + node.attrs.get("epsilon", 1e-5))
    return [(x / rms * scale).astype(x.dtype)]


register(float16_via_f32(OpDef(
    "RMSNormalization", infer=same_as_input, normalize=_normalize_rms, lower=_lower_rms, evaluate=_eval_rms,
    kernels=("ember_rmsnorm_rows_f32",), int8=Int8.FLOAT,
)))


# RotaryEmbedding -------------------------------------------------------------------------------
#
# Inputs: (X, cos_cache, sin_cache, position_ids (optional)). X is [B, H, S, D] or [B, S, H * D]
# (num_heads attribute). Attributes: interleaved, rotary_embedding_dim (0: the head size), num_heads.
# Position ids past the caches' rows are clamped to the last row (the kernel never reads outside them).

class _RotaryDims:
    def __init__(self, node: Node) -> None:
        x, cos = inp(node, 0), inp(node, 1)
        if x.type.rank == 4:
            self.batch, self.heads, self.seq, self.head = x.shape
            self.strides = (self.heads * self.seq * self.head, self.seq * self.head, self.head)
        elif x.type.rank == 3:
            self.heads = node.attrs.get("num_heads", 0)
            if self.heads <= 0 or x.shape[2] % self.heads:
                raise _shape_error(node, f"a 3-D input needs num_heads dividing its hidden size {x.shape[2]}")
            self.batch, self.seq, hidden = x.shape
            self.head = hidden // self.heads
            self.strides = (self.seq * hidden, self.head, hidden)
        else:
            raise _shape_error(node, f"input of rank {x.type.rank} (3-D or 4-D)")
        self.rotary = node.attrs.get("rotary_embedding_dim", 0) or self.head
        if self.rotary % 2 or self.rotary > self.head:
            raise _shape_error(node, f"rotary_embedding_dim {self.rotary} must be even and at most the head "
                                     f"size {self.head}")
        half = self.rotary // 2
        sin = inp(node, 2)
        with_ids = node.input(3) is not None
        want = (cos.shape[0], half) if with_ids else (self.batch, self.seq, half)
        if cos.shape != want or sin.shape != cos.shape or (with_ids and cos.shape[0] < 1):
            raise _shape_error(node, f"cos_cache {list(cos.shape)} / sin_cache {list(sin.shape)} must be "
                                     f"{'[positions, ' if with_ids else f'[{self.batch}, {self.seq}, '}{half}]")
        ids = node.input(3)
        if ids is not None and (ids.shape != (self.batch, self.seq) or ids.dtype is not DType.INT64):
            raise _shape_error(node, f"position_ids must be int64 of shape [{self.batch}, {self.seq}]")
        self.positions = cos.shape[0]


def _normalize_rotary(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs[:3], *node.outputs)
    _RotaryDims(node)


def _lower_rotary(node: Node, k: KernelEmitter) -> None:
    d = _RotaryDims(node)
    k.call("ember_rotary_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2),
           k.inp(3, "int64_t") if node.input(3) is not None else "0", d.positions, d.batch, d.seq, d.heads,
           d.head, d.rotary, int(bool(node.attrs.get("interleaved", 0))), *d.strides)


register(float16_via_f32(OpDef(
    "RotaryEmbedding", infer=same_as_input, normalize=_normalize_rotary, lower=_lower_rotary,
    kernels=("ember_rotary_f32",),
)))


# SwiGLU ----------------------------------------------------------------------------------------
#
# Inputs: (A, B) of one shape. Attribute: alpha (1.0). Y = A * sigmoid(alpha * A) * B.

def _infer_swiglu(node: Node) -> list[TensorType | None]:
    a, b = inp(node, 0), inp(node, 1)
    if a.shape != b.shape or a.dtype is not b.dtype:
        raise _shape_error(node, f"A {list(a.shape)} and B {list(b.shape)} must have one shape and type")
    if a.dtype not in (DType.FLOAT32, DType.FLOAT16, DType.FLOAT64):
        raise _refuse(node, f"element type {a.dtype.short} (float types only)")
    return [TensorType(a.dtype, a.shape)]


def _expr_swiglu(h: ExprHandler, xs: list[str], node: Node) -> str:
    a = h.let(xs[0])
    alpha = h.lit(node.attrs.get("alpha", 1.0))
    gate = h.fn("sigmoid", f"{alpha} * {a}")
    return f"({a} * {gate} * ({xs[1]}))"


def _eval_swiglu(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = np.asarray(xs[0]), np.asarray(xs[1])
    alpha = node.attrs.get("alpha", 1.0)
    return [(a / (1 + np.exp(-alpha * a)) * b).astype(a.dtype)]


register(OpDef("SwiGLU", infer=_infer_swiglu, expr=_expr_swiglu, evaluate=_eval_swiglu))


# TensorScatter ---------------------------------------------------------------------------------
#
# Inputs: (past_cache, update, write_indices [batch] int64 (optional: zeros)). Attributes: axis (-2, the
# sequence axis; not the batch axis 0), mode ("linear" or "circular"). The update's rows along `axis` are
# written into the cache from each batch's write index on (modulo the cache length when circular). Linear
# writes past either end of the cache are dropped (the reference rejects them; a bundle cannot raise).

def _scatter_axis(node: Node) -> int:
    return axis(node, node.attrs.get("axis", -2), inp(node, 0).type.rank)


def _infer_scatter(node: Node) -> list[TensorType | None]:
    cache, update, idx = inp(node, 0), inp(node, 1), node.input(2)
    ax = _scatter_axis(node)
    if ax == 0:
        raise _shape_error(node, "axis 0 is the batch axis; the cache's sequence axis comes after it")
    if (update.type.rank != cache.type.rank or update.dtype is not cache.dtype
            or any(u != c for i, (u, c) in enumerate(zip(update.shape, cache.shape, strict=True)) if i != ax)
            or update.shape[ax] > cache.shape[ax]):
        raise _shape_error(node, f"update {list(update.shape)} does not fit the cache {list(cache.shape)} "
                                 f"along axis {ax}")
    if idx is not None and (idx.dtype is not DType.INT64 or idx.shape != (cache.shape[0],)):
        raise _shape_error(node, f"write_indices must be int64 of shape [{cache.shape[0]}]")
    if node.attrs.get("mode", "linear") not in ("linear", "circular"):
        raise _refuse(node, f"mode '{node.attrs['mode']}' (linear or circular)")
    return [TensorType(cache.dtype, cache.shape)]


def _lower_scatter(node: Node, k: KernelEmitter) -> None:
    cache, update = present(node.input(0)), present(node.input(1))
    ax = _scatter_axis(node)
    row_bytes = math.prod(cache.shape[ax + 1:]) * cache.dtype.itemsize
    k.call("ember_tensor_scatter", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), k.inp(1, "uint8_t"),
           k.inp(2, "int64_t") if node.input(2) is not None else "0", cache.shape[0],
           math.prod(cache.shape[1:ax]), cache.shape[ax], update.shape[ax], row_bytes,
           int(node.attrs.get("mode", "linear") == "circular"))


# The output may take the cache's buffer (the usual in-place KV cache update): no copy then.
register(OpDef("TensorScatter", infer=_infer_scatter, lower=_lower_scatter, kernels=("ember_tensor_scatter",),
               inplace=True))
