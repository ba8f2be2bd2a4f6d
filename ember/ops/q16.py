"""TFLite's 16x8 integer operators (int16 activations with zero point 0, int8 weights, int64 bias), made by
passes/fold_qdq16.py from a TFLite model's QDQ form, with TFLite's arithmetic (kernels/q16.c):

- Q16Conv: CONV_2D / DEPTHWISE_CONV_2D (groups) / FULLY_CONNECTED (a 1x1 convolution of [N, K]) with int64
  accumulators and TFLite's int64 MultiplyByQuantizedMultiplier (the multiplier rounded to Q15).
- Q16AvgPool / Q16MaxPool: the valid elements' sum divided by their count, half away from zero / their
  maximum.
- Q16Mean: MEAN over H and W (a global average), TFLite's QuantizedMeanOrSum.
- Q16Softmax: SOFTMAX over the last axis with TFLite's exp and 1/(1 + x) tables (gen_lut).
- Q16Binary: ADD / SUB (TFLite's general int16 path: inputs shifted left by 15, each rescaled) and MUL
  (also QUANTIZE from int16 to int16: a MUL by 1), LEAKY_RELU and ABS.
- Q16MatMul: BATCH_MATMUL of two int16 tensors (int64 sums, the multiplier rounded to Q15 as in Q16Conv).
- Q16Requant: QUANTIZE from int16 to int8 and from int8 to int16 (TFLite's Requantize).
- Q16Reduce: REDUCE_MAX / REDUCE_MIN (the stored integers), SUM / MEAN over any axes (QuantizedMeanOrSum) and
  REDUCE_PROD (QuantizedReduceProd: each product requantised).
- Q16Sigmoid: LOGISTIC and TANH (TFLite's int16 kernels: a 256-entry sigmoid table read with interpolation).
- Q16Lookup: EXP, GELU, LOG, RSQRT (LiteRT's LUTLookup of a 513-entry table, filled as LUTPopulate does).
- Q16Rsqrt: TFLite Micro's int16 RSQRT (fixed-point Newton-Raphson, attribute `_q16rs`: its output multiplier).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.matmul import present
from ember.ops.opdef import OpDef
from ember.ops.pool import channels_last
from ember.ops.qlinear import tflite_multiplier
from ember.ops.registry import register
from ember.ops.shape import nhwc_bits, stored_nhwc

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def q15_multiplier(real: float, rounding: int) -> tuple[int, int] | None:
    """TFLite's int64 MultiplyByQuantizedMultiplier constants for `real`: (Q15 multiplier, right shift);
    None where its shift would not be a right shift (TFLite asserts the exponent below 8)."""
    m, k = tflite_multiplier(real, rounding)
    if m == 0:
        return 0, 1
    m15 = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
    return (m15, k - 16) if k - 16 >= 1 else None


@dataclass(frozen=True)
class Q16Geometry:
    """NCHW sizes and window of a Q16Conv / Q16AvgPool (q16.c's EMBER_Q16_* entries, in this order)."""

    n: int
    c: int
    h: int
    w: int
    m: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    ph: int
    pw: int
    group: int

    def table(self) -> list[int]:
        return [self.n, self.c, self.h, self.w, self.m, self.oh, self.ow, self.kh, self.kw, self.sh, self.sw,
                self.dh, self.dw, self.ph, self.pw, self.group]

    def out_shape(self, flat: bool) -> tuple[int, ...]:
        return (self.n, self.m) if flat else (self.n, self.m, self.oh, self.ow)


@dataclass(frozen=True)
class Q16Spec:
    """Attribute `_q16` of a Q16Conv / Q16AvgPool / Q16MaxPool / Q16Mean / Q16Binary: geometry (None for
    Q16Mean and Q16Binary, which state their output `shape`), per-channel (multiplier, shift) pairs, the output
    clamp, whether the output is [N, M] (fully connected), and Q16Binary's parameter row (q16.c
    ember_q16_binary's p)."""

    geometry: Q16Geometry | None
    m15: tuple[int, ...]
    shift: tuple[int, ...]
    lo: int
    hi: int
    flat: bool = False
    binary: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    full: bool = False  # Q16Conv: Q31 multipliers with ember_q_scale_tfl's shift codes (LiteRT's FC)
    simd: bool = False  # Q16Conv: ember_q16_conv_v (a host target: AVX2 where the C compiler has it)


def _spec(node: Node) -> Q16Spec:
    return node.attrs["_q16"]


def _infer(node: Node) -> list[TensorType | None]:
    s = _spec(node)
    if s.geometry is None:
        return [TensorType(DType.INT16, s.shape)]
    if channels_last(node):  # a Q16AvgPool / Q16MaxPool on NHWC (ops/conv.py CHANNELS_LAST)
        g = s.geometry
        return [TensorType(DType.INT16, (g.n, g.oh, g.ow, g.m))]
    return [TensorType(DType.INT16, s.geometry.out_shape(s.flat))]


INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class Q16VecTables:
    """ember_q16_conv_v's tables (kernels/q16.c): v = [mode, steps, blk, Hp, Wp, scratch elements, fits], the
    offsets of each step's two taps and each channel's weight pairs (int16 halves of an int32)."""

    v: list[int]
    off: np.ndarray
    wp: np.ndarray


def int32_block(weight_sums: np.ndarray, step_max: int, steps: int) -> int:
    """How many steps the int32 partial sums may take before they are added into int64: a step adds at most
    32768 * step_max in magnitude (int16 inputs times weights whose absolute values sum to step_max), so
    (2^31 - 1) // (32768 * step_max) steps cannot overflow; all `steps` where no channel's whole sum of
    absolute weights (`weight_sums`) can reach 2^31 (the common case: K below 512)."""
    if step_max == 0 or int(np.max(weight_sums, initial=0)) * 32768 <= INT32_MAX:
        return max(steps, 1)
    return INT32_MAX // (32768 * step_max)


def vec_tables(spec: Q16Spec, weights: np.ndarray, bias: np.ndarray | None = None,
               copy: bool = False) -> Q16VecTables | None:
    """The tables of ember_q16_conv_v for a Q16Conv with int8 weights [M, C / G, KH, KW] ([M, K] fully
    connected) and its int64 bias; None where it has no vector path (a stride above 2 along W). `fits`: no
    channel's bias plus sum of products can leave int32 for any int16 input, so the accumulators stay
    int32 lanes to the end. `copy`: the input is read through the zero-padded copy even where the convolution
    could read it as it is (a channels-last input)."""
    g = spec.geometry
    assert g is not None
    w = np.asarray(weights, np.int64).reshape(g.m, -1)
    if g.h == g.w == g.kh == g.kw == g.oh == g.ow == 1 and g.group == 1:  # fully connected: K along VPMADDWD
        chunk = np.abs(w[:, : g.c // 16 * 16]).reshape(g.m, -1, 16).sum(axis=2) if g.c >= 16 else np.zeros((g.m, 1))
        blk = int32_block(np.abs(w).sum(axis=1), int(chunk.max(initial=0)), g.c // 16)
        return Q16VecTables([0, 0, blk, 1, 1, 0, 0], np.zeros(1, np.int64), np.zeros(1, np.int64))
    if g.sw > 2 or spec.full:
        return None
    flat = g.kh == g.kw == g.sh == g.sw == 1 and g.ph == g.pw == 0 and not copy
    if flat:
        hp, wd, size = g.h, g.w, 0
    else:
        hp = max(g.h + g.ph, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1)
        wd = max(g.w + g.pw, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1)
    cg = g.c // g.group
    taps = np.array([c * hp * wd + ky * g.dh * wd + kx * g.dw
                     for c in range(cg) for ky in range(g.kh) for kx in range(g.kw)], np.int64)
    if taps.size % 2:  # the last step's second tap: the first again, times a zero weight
        taps, w = np.append(taps, taps[-1]), np.pad(w, ((0, 0), (0, 1)))
    steps = taps.size // 2
    pairs = (w[:, 0::2] & 0xFFFF) | ((w[:, 1::2] & 0xFFFF) << 16)
    blk = int32_block(np.abs(w).sum(axis=1), int((np.abs(w[:, 0::2]) + np.abs(w[:, 1::2])).max()), steps)
    if not flat:  # the copy's planes, and the reads of the last block's lanes past OW (8 pixels, 16 words at stride 2)
        last = (g.group - 1) * cg * hp * wd + int(taps.max()) + (g.oh - 1) * g.sh * wd
        size = max(g.c * hp * wd, last + (g.ow + 7) // 8 * 8 * g.sw + (1 if g.sw == 2 else 0))
    b = np.zeros(g.m, np.int64) if bias is None else np.abs(np.asarray(bias, np.int64).reshape(-1))
    fits = int(np.max(b + 32768 * np.abs(w).sum(axis=1))) <= INT32_MAX
    v = [1 if flat else 2, steps, blk, hp, wd, size, int(fits)]
    return Q16VecTables(v, taps, pairs.astype(np.uint32).view(np.int32))


def _weights(node: Node) -> np.ndarray:
    return np.asarray(present(node.input(1)).const)


def _bias(node: Node) -> np.ndarray | None:
    b = node.input(2)
    return None if b is None else np.asarray(b.const)


def _vec_tables(node: Node) -> Q16VecTables | None:
    s = _spec(node)
    return vec_tables(s, _weights(node), _bias(node), copy=stored_nhwc(node.input(0))) if s.simd else None


def _conv_scratch(node: Node) -> int:
    t = _vec_tables(node)
    return 0 if t is None else 2 * t.v[5]


def q16_conv_nhwc(node: Node) -> bool:
    """Whether `node` is a Q16Conv that can read and store channels-last values (q16.c's `lay`: the scalar kernel at
    the strides, the AVX2 one through its padded copy and pixel-strided stores; passes/nhwc_views.py): a 2-D
    convolution, not a fully connected layer."""
    return node.op == "Q16Conv" and not _spec(node).flat and not _spec(node).full


def _lower_conv(node: Node, k: KernelEmitter) -> None:
    s = _spec(node)
    assert s.geometry is not None
    bias = k.inp(2) if node.input(2) is not None else "(const int64_t *)0"
    args = [k.out(0), k.inp(0), k.inp(1), bias, k.table(s.m15, DType.INT32), k.table(s.shift, DType.INT32),
            k.table(s.geometry.table(), DType.INT32), s.lo, s.hi, int(s.full), nhwc_bits(node)]
    t = _vec_tables(node)
    if t is None:
        k.call("ember_q16_conv", *args)
        return
    scratch = k.scratch("int16_t") if t.v[5] else "(int16_t *)0"
    k.call("ember_q16_conv_v", *args, scratch, k.table(t.v, DType.INT32), k.table(t.off, DType.INT32),
           k.table(t.wp, DType.INT32))


def _lower_pool(node: Node, k: KernelEmitter) -> None:
    s = _spec(node)
    assert s.geometry is not None
    k.call("ember_q16_pool", k.out(0), k.inp(0), k.table(s.geometry.table(), DType.INT32), s.lo, s.hi,
           int(node.op == "Q16MaxPool"), int(channels_last(node)))


def broadcast_of(b_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> tuple[int, int] | None:
    """(b_n, b_inner) of ember_q16_binary for b broadcast to y: the same shape, one value, or one axis."""
    if tuple(b_shape) == tuple(y_shape):
        return math.prod(y_shape), 1
    if math.prod(b_shape) == 1:
        return 1, 1
    shape = (1,) * (len(y_shape) - len(b_shape)) + tuple(b_shape)
    big = [i for i, d in enumerate(shape) if d != 1]
    if len(shape) != len(y_shape) or len(big) != 1 or shape[big[0]] != y_shape[big[0]]:
        return None
    return shape[big[0]], math.prod(y_shape[big[0] + 1:])


def _lower_binary(node: Node, k: KernelEmitter) -> None:
    s = _spec(node)
    bc = broadcast_of(present(node.input(1)).shape, s.shape)
    assert bc is not None
    k.call("ember_q16_binary", k.out(0), k.inp(0), k.inp(1), math.prod(s.shape), bc[0], bc[1],
           k.table(np.asarray(s.binary, np.int64), DType.INT32))


def gen_lut(fn: Callable[[float], Any], lo: float, hi: float, single: bool = False) -> np.ndarray:
    """TFLite's gen_lut for int16 in and out over outputs [-1, 1]: 512 steps plus the end point, each sample
    biased by half the interpolation error at its step's midpoint, std::round. `single`: in float32, as
    TFLite Micro builds its tables (LiteRT: double)."""
    f = np.float32 if single else float

    def rnd(v):
        return f(math.copysign(math.floor(abs(v) + 0.5), v))

    lo, hi = f(lo), f(hi)
    step = f((hi - lo) / f(512))
    half = f(step / f(2))
    scale = f(f(65536) / f(2))
    lut = []
    for i in range(512):
        at = f(lo + f(i) * step)
        val, mid, nxt = f(fn(at)), f(fn(f(at + half))), f(fn(f(lo + f(i + 1) * step)))
        err = rnd(f(f(f(nxt * scale) + rnd(f(val * scale))) / f(2))) - rnd(f(mid * scale))
        lut.append(min(max(rnd(f(val * scale)) - rnd(f(f(err) / f(2))), INT16_MIN), INT16_MAX))
    lut.append(min(max(rnd(f(f(fn(hi)) * scale)), INT16_MIN), INT16_MAX))
    return np.asarray(lut, np.int16)


@dataclass(frozen=True)
class Q16Softmax:
    """Attribute `_q16sm` of a Q16Softmax: the input multiplier (ember_q_scale_tfl's mult, shift code), and
    whether its tables are TFLite Micro's (float32) rather than LiteRT's (double)."""

    mult: int
    shift: int
    single: bool = False


def _infer_same(node: Node) -> list[TensorType | None]:
    return [TensorType(DType.INT16, present(node.input(0)).shape)]


def _lower_mean(node: Node, k: KernelEmitter) -> None:
    s, x = _spec(node), present(node.input(0))
    last = channels_last(node)
    k.call("ember_q16_mean", k.out(0), k.inp(0), x.shape[0] * (1 if last else x.shape[1]),
           math.prod(x.shape[1:-1] if last else x.shape[2:]), x.shape[-1] if last else 0, s.m15[0], s.shift[0], s.lo,
           s.hi)


def _lower_softmax(node: Node, k: KernelEmitter) -> None:
    x, s = present(node.input(0)), node.attrs["_q16sm"]
    depth = x.shape[-1] if x.shape else 1
    if s.single:  # float32 functions too (std::exp of a float)
        exp_lut = gen_lut(lambda v: np.exp(np.float32(v)), -10.0, 0.0, True)
        recip_lut = gen_lut(lambda v: np.float32(1.0) / (np.float32(1.0) + np.float32(v)), 0.0, 1.0, True)
    else:
        exp_lut = gen_lut(math.exp, -10.0, 0.0)
        recip_lut = gen_lut(lambda v: 1.0 / (1.0 + v), 0.0, 1.0)
    k.call("ember_q16_softmax", k.out(0), k.inp(0), math.prod(x.shape) // max(depth, 1), depth, s.mult, s.shift,
           k.table(exp_lut, DType.INT16), k.table(recip_lut, DType.INT16))


@dataclass(frozen=True)
class Q16ReduceSpec:
    """Attribute `_q16r` of a Q16Reduce (kernels/q16.c ember_q16_reduce): kind 0 (SUM / MEAN: the sum
    requantised by mult and ember_q_scale_tfl's shift code), 2 (max), 3 (min) or 4 (PROD: each product and the
    result requantised by ember_q16_scale's Q15 mult and right shift); the reduced axes of the input and the
    output's shape."""

    kind: int
    mult: int
    shift: int
    axes: tuple[int, ...]
    shape: tuple[int, ...]


def reduce_tables(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(base, off): each output's first input element, and each reduced position's offset from it (row-major
    input), in the order TFLite visits them (both row-major)."""
    strides = np.cumprod((1, *shape[:0:-1]))[::-1].astype(np.int64)
    kept = [i for i in range(len(shape)) if i not in axes]

    def offsets(dims: list[int]) -> np.ndarray:
        grid = np.zeros([shape[i] for i in dims] or [1], np.int64)
        for j, i in enumerate(dims):
            view = [1] * max(len(dims), 1)
            view[j] = shape[i]
            grid = grid + (np.arange(shape[i]) * strides[i]).reshape(view)
        return grid.reshape(-1)

    return offsets(kept), offsets(sorted(axes))


def _infer_reduce(node: Node) -> list[TensorType | None]:
    return [TensorType(DType.INT16, node.attrs["_q16r"].shape)]


def _lower_reduce(node: Node, k: KernelEmitter) -> None:
    s = node.attrs["_q16r"]
    base, off = reduce_tables(present(node.input(0)).shape, s.axes)
    k.call("ember_q16_reduce", k.out(0), k.inp(0), k.table(base, DType.INT32), base.size, k.table(off, DType.INT32),
           off.size, s.kind, s.mult, s.shift)


@dataclass(frozen=True)
class Q16MatMulSpec:
    """Attribute `_q16mm` of a Q16MatMul: the Q15 multiplier and right shift (q15_multiplier) and the output
    shape (batches broadcast, then [M, N])."""

    m15: int
    shift: int
    shape: tuple[int, ...]


def matmul_batches(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Each output batch's first element of a [..., M, K] and of b [..., K, N] (broadcast batch dims repeat)."""
    batch = out[:-2]

    def starts(shape: tuple[int, ...]) -> np.ndarray:
        lead = (1,) * (len(batch) - len(shape[:-2])) + tuple(shape[:-2])
        index = np.arange(math.prod(lead), dtype=np.int64).reshape(lead) * math.prod(shape[-2:])
        return np.broadcast_to(index, batch).reshape(-1)

    return starts(a), starts(b)


def _infer_matmul(node: Node) -> list[TensorType | None]:
    return [TensorType(DType.INT16, node.attrs["_q16mm"].shape)]


def _lower_matmul(node: Node, k: KernelEmitter) -> None:
    s, a, b = node.attrs["_q16mm"], present(node.input(0)).shape, present(node.input(1)).shape
    abase, bbase = matmul_batches(a, b, s.shape)
    k.call("ember_q16_matmul", k.out(0), k.inp(0), k.inp(1), k.table(abase, DType.INT32), k.table(bbase, DType.INT32),
           abase.size, a[-2], a[-1], b[-1], s.m15, s.shift)


@dataclass(frozen=True)
class Q16RequantSpec:
    """Attribute `_q16q` of a Q16Requant (kernels/q16.c ember_q16_requant): the output type, the multiplier and
    ember_q_scale_tfl's shift code, and the input's and output's zero points."""

    out: DType
    mult: int
    shift: int
    zin: int
    zout: int


def _infer_requant(node: Node) -> list[TensorType | None]:
    return [TensorType(node.attrs["_q16q"].out, present(node.input(0)).shape)]


def _lower_requant(node: Node, k: KernelEmitter) -> None:
    s = node.attrs["_q16q"]
    k.call("ember_q16_requant", k.out(0), k.inp(0), present(node.input(0)).type.numel, int(s.out is DType.INT8),
           s.mult, s.shift, s.zin, s.zout)


# Where TFLite's sigmoid table stands one step above sigmoid(i / 24) rounded to nearest (its entries are not
# plain roundings; read off LiteRT's int16 TANH at inputs that land exactly on each entry, fraction 0).
_SIGMOID_UP = (4, 8, 12, 14, 15, 16, 17, 19, 20, 21, 22, 25, 27, 28, 29, 30, 31, 33, 34, 35, 37, 39, 40, 41, 43,
               44, 45, 46, 49, 50, 54, 62, 63, 64, 66, 82, 86, 93, 100, 103, 112, 116, 135, 255)


def sigmoid_table() -> np.ndarray:
    """The table TFLite's int16 LOGISTIC and TANH interpolate: sigmoid(i / 24) for i < 256 in unsigned 0.16
    fixed point, rounded to nearest, one step higher at _SIGMOID_UP (the last entry: 65535)."""
    v = np.floor(65536.0 / (1.0 + np.exp(-np.arange(256) / 24.0)) + 0.5).astype(np.int64)
    v[list(_SIGMOID_UP)] += 1
    return v.astype(np.uint16)


@dataclass(frozen=True)
class Q16SigmoidSpec:
    """Attribute `_q16s` of a Q16Sigmoid (kernels/q16.c ember_q16_sigmoid): TANH (else LOGISTIC), and the input
    multiplier and rounding right shift of TFLite's Prepare (its power-of-two case already as 3 << shift)."""

    tanh: bool
    mult: int
    shift: int


def _lower_sigmoid(node: Node, k: KernelEmitter) -> None:
    s, x = node.attrs["_q16s"], present(node.input(0))
    k.call("ember_q16_sigmoid", k.out(0), k.inp(0), math.prod(x.shape), int(s.tanh), s.mult, s.shift,
           k.table(sigmoid_table(), DType.UINT16))


def _lower_lookup(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    k.call("ember_q16_lookup", k.out(0), k.inp(0), math.prod(x.shape), k.table(node.attrs["_q16lut"], DType.INT16))


def _lower_rsqrt(node: Node, k: KernelEmitter) -> None:
    mult, shift = node.attrs["_q16rs"]
    k.call("ember_q16_rsqrt", k.out(0), k.inp(0), math.prod(present(node.input(0)).shape), mult, shift)


register(OpDef("Q16Conv", infer=_infer, lower=_lower_conv, scratch=_conv_scratch,
              kernels=("ember_q16_conv", "ember_q16_conv_v")))
register(OpDef("Q16AvgPool", infer=_infer, lower=_lower_pool, kernels=("ember_q16_pool",)))
register(OpDef("Q16MaxPool", infer=_infer, lower=_lower_pool, kernels=("ember_q16_pool",)))
register(OpDef("Q16Binary", infer=_infer, lower=_lower_binary, kernels=("ember_q16_binary",)))
register(OpDef("Q16Mean", infer=_infer, lower=_lower_mean, kernels=("ember_q16_mean",)))
register(OpDef("Q16Softmax", infer=_infer_same, lower=_lower_softmax, kernels=("ember_q16_softmax",)))
register(OpDef("Q16Reduce", infer=_infer_reduce, lower=_lower_reduce, kernels=("ember_q16_reduce",)))
register(OpDef("Q16MatMul", infer=_infer_matmul, lower=_lower_matmul, kernels=("ember_q16_matmul",)))
register(OpDef("Q16Requant", infer=_infer_requant, lower=_lower_requant, kernels=("ember_q16_requant",)))
register(OpDef("Q16Sigmoid", infer=_infer_same, lower=_lower_sigmoid, kernels=("ember_q16_sigmoid",)))
register(OpDef("Q16Lookup", infer=_infer_same, lower=_lower_lookup, kernels=("ember_q16_lookup",)))
register(OpDef("Q16Rsqrt", infer=_infer_same, lower=_lower_rsqrt, kernels=("ember_q16_rsqrt",)))
