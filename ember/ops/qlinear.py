"""Integer convolution and matrix product on kernels/qconv.c: int8/uint8 operands, int32 sums, integer
requantisation. Two internal ops do the work, made from ONNX's operator-format ops (ConvInteger,
QLinearConv, MatMulInteger, QLinearMatMul, in ember/ops/quantize.py) and from QDQ patterns
(ember/passes/fold_qdq.py):

- QConv: inputs [x, x zero point (run time) or None, packed weights]; the Conv attributes; `_q`: QSpec.
- QMatMul: inputs [a, a zero point (run time) or None, packed weights or a run-time B]; `_q`: QSpec.

Weights are packed at compile time (`pack_weights`): the real integer weight w - w_zero_point is
stored as int8 plus a per-row offset `wofs` when it does not fit, with the row sums the kernels need to
apply the activations' zero point after the int8 dot products (qconv.c explains the algebra).
Requantisation uses `fixed_point`: the float32 multiplier (x_scale * w_scale / y_scale, computed in
float32 as ONNX's reference and onnxruntime do) as mult * 2^-shift, exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import qarm
from ember.ops.conv import ConvGeometry, conv_geometry
from ember.ops.infer import conv_out
from ember.ops.matmul import matmul_shape, present
from ember.ops.opdef import OpDef
from ember.ops.overlap import MCU, qconv_overlap
from ember.ops.registry import register
from ember.ops.shape import nhwc_bits, stored_nhwc, writes_nhwc

QPB = 64  # EMBER_QPB of qgemm.c: pixels per packed activation block
# On microcontrollers (NAME.c defines EMBER_QPB so, driver.py; passes/scratch_budget.py marks the nodes with
# QPB_ATTR): the packed block is RAM the plan holds, 64 pixels of a 64-channel 3x3 layer 36,864 B. The
# tiles' reads per product are the same; only the per-block work (corrections, packing set-up) repeats.
MCU_QPB = 16
QPB_ATTR = "_qpb"
QTAIL = 8  # EMBER_QTAIL of qblock.c: a block's last pixels done as matrix-vector products (Kp bytes each)
BYTE_TYPES = (DType.INT8, DType.UINT8)


@dataclass(frozen=True)
class Requant:
    """Per output channel fixed-point multipliers, and the output's zero point and clamp range."""

    mult: tuple[int, ...]
    shift: tuple[int, ...]
    zp: int
    lo: int
    hi: int
    rounding: int = 0  # ONNX (0) or TFLite's (LITERT, MICRO: `tflite_multiplier`), quant.c ember_q_scale_tfl

    def shift_codes(self) -> tuple[int, ...]:
        """The shifts as the kernels read them: TFLite's roundings are marked by quant.c's EMBER_Q_TFL."""
        return tuple(s + 64 * self.rounding for s in self.shift) if self.rounding else self.shift


@dataclass(frozen=True)
class QSpec:
    x_zp: int  # the activations' zero point when it is a compile-time constant (input 1 absent)
    bias: tuple[int, ...] | None  # int32 per output channel, added to the sums
    rowsum: tuple[int, ...] | None  # per row of the packed weights (None: computed at run time)
    wofs: tuple[int, ...] | None  # per row weight offsets (None: all 0)
    requant: Requant | None  # None: int32 sums are the output
    depthwise: bool = False
    channels_last: bool = False  # packed K order (kernel taps, channels): channels % 4 == 0


def fixed_point(m: float) -> tuple[int, int]:
    """(mult, shift), mult < 2^31 and 1 <= shift <= 62, with mult * 2^-shift == float32(m) (or its
    nearest representable value for multipliers outside about [2^-31, 2^30])."""
    m = float(np.float32(m))
    if not m > 0.0 or not math.isfinite(m):
        return 0, 1
    mant, exp = math.frexp(m)
    mult, shift = int(mant * (1 << 31)), 31 - exp  # exact: a float32 has a 24-bit mantissa
    if shift < 1:
        return (1 << 31) - 1, 1  # |result| >= 2^30 * |acc|: saturates for any acc != 0
    if shift > 62:
        mult, shift = (mult + (1 << (shift - 63))) >> (shift - 62), 62
    return mult, shift


# TFLite's requantisations (a TFLite model's ops carry one, ember/frontends/tflite): SINGLE, acc * M rounded
# half up once (TFLITE_SINGLE_ROUNDING, and ruy's); DOUBLE, a doubling high multiply, then a rounding divide by
# a power of two, each half away from zero. Measured: LiteRT 2.x's reference kernels round twice except its
# FULLY_CONNECTED (once); TFLite Micro's round twice everywhere.
SINGLE, DOUBLE = 1, 2
TFL_DIVIDE = 3 * 64 + 1  # a shift code: acc / mult rounded half away from zero (TFLite's int8 AVERAGE_POOL_2D)


def tflite_multiplier(real: float, rounding: int) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier of the double-precision real multiplier as (M, k): M a Q31 significand
    (below 2^31), k = 31 - TFLite's exponent, the total right shift (1..62 as ember's kernels take it)."""
    if not real > 0.0 or not math.isfinite(real):
        return 0, 1
    q, e = math.frexp(real)
    m = math.floor(q * (1 << 31) + 0.5)  # TfLiteRound: half away from zero
    if m == 1 << 31:
        m, e = m // 2, e + 1
    if e < -31:
        return 0, 1
    if e > 30:  # LiteRT saturates the multiplier; Micro's int32 left shift would overflow as well
        return (1 << 31) - 1, 1
    return m, 31 - e


def tflite_requant(reals: np.ndarray, rounding: int, out_dtype: DType, zp: int, lo: int | None = None,
                   hi: int | None = None) -> Requant:
    """make_requant with TFLite's multipliers (double precision) and rounding."""
    qlo, qhi = (-128, 127) if out_dtype is DType.INT8 else (0, 255)
    pairs = [tflite_multiplier(float(m), rounding) for m in np.asarray(reals, np.float64).reshape(-1)]
    return Requant(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), int(zp),
                   qlo if lo is None else max(qlo, lo), qhi if hi is None else min(qhi, hi), rounding)


def make_requant(multipliers: np.ndarray, out_dtype: DType, zp: int, lo: int | None = None,
                 hi: int | None = None) -> Requant:
    qlo, qhi = (-128, 127) if out_dtype is DType.INT8 else (0, 255)
    pairs = [fixed_point(m) for m in np.asarray(multipliers, np.float32).reshape(-1)]
    return Requant(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), int(zp),
                   qlo if lo is None else max(qlo, lo), qhi if hi is None else min(qhi, hi))


def pack_weights(w: np.ndarray) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...] | None]:
    """Integer weights M x K (real values, minus their zero point) -> (int8 M x Kp, rowsum, wofs)."""
    w = np.asarray(w, np.int64)
    m, k = w.shape
    lo, hi = (w.min(axis=1), w.max(axis=1)) if k else (np.zeros(m, np.int64), np.zeros(m, np.int64))
    ofs = np.where((lo >= -128) & (hi <= 127), 0, hi - 127)  # rows of 8-bit range [lo, hi] fit after this
    packed = np.zeros((m, (k + 3) // 4 * 4), np.int8)
    packed[:, :k] = (w - ofs[:, None]).astype(np.int8)
    rowsum = tuple(int(v) for v in packed.astype(np.int64).sum(axis=1))
    return packed, rowsum, (tuple(int(v) for v in ofs) if ofs.any() else None)


def check_sums(node: Node, k: int, bias: tuple[int, ...] | None) -> None:
    """The kernels add in int32: every sum of k products of 8-bit values (each at most 255 * 255 in
    magnitude) plus the bias must fit, as it does for any reduction under about 33,000 terms."""
    if k * 255 * 255 + max((abs(b) for b in bias or ()), default=0) >= 2**31:
        raise _fail(node, f"a reduction over {k} values (int32 sums are implemented up to about 33,000)")


def _table(k: KernelEmitter, values: tuple[int, ...] | None) -> str:
    return "0" if values is None else k.table(list(values), DType.INT32)


def _mults_exact_in_float(mult: np.ndarray) -> bool:
    """Whether every multiplier has at most 24 significant bits (exact as a float)."""
    odd = mult // (mult & -mult).clip(min=1)  # mult without its trailing zero bits
    return bool(np.all(odd < 2**24))


def exact_in_float(rq: Requant, bound: np.ndarray) -> bool:
    """Whether sums v with |v| <= bound (per row) take qvec.c's float requantisation, which equals the
    integer one there: |v| < 2^24 (exact as floats), multipliers of at most 24 significant bits, and
    |v| * mult * 2^-shift < 2^22 (rounded by adding 1.5 * 2^23)."""
    if rq.rounding:  # TFLite's roundings are integer only
        return False
    mult, shift = np.asarray(rq.mult, np.int64), np.asarray(rq.shift, np.float64)
    bound = np.broadcast_to(np.asarray(bound, np.float64), mult.shape)
    return bool(np.all(bound < 2.0**24) and _mults_exact_in_float(mult)
                and np.all(bound * mult * np.exp2(-shift) < 2.0**22))


def sum_bound(w_abs_rowsum: np.ndarray, bias: tuple[int, ...] | None) -> np.ndarray:
    """The largest |sum_k w (x - x_zp) + bias| per row: |x - x_zp| <= 255 for 8-bit x and zero point."""
    b = np.abs(np.asarray(bias, np.float64)) if bias is not None else 0.0
    return np.asarray(w_abs_rowsum, np.float64) * 255.0 + b


def float_limit(rq: Requant, bound: np.ndarray | None) -> tuple[int, int]:
    """(ok, L): whether qgemm.c's tiles may requantise sums v with |v| <= bound (None: any int32) in
    float, after clamping them to [-L, L] where L > 0. Sums past L_r, where L_r times row r's multiplier
    reaches past [lo, hi] from the zero point, all saturate: so sums past 2^24 (inexact as floats, but
    in order) may go through unclamped where L_r < 2^24, and where |v| * m may pass 2^22 a clamp to the
    largest L_r changes no output."""
    mult, shift = np.asarray(rq.mult, np.int64), np.asarray(rq.shift, np.int64)
    t = max(rq.hi - rq.zp, rq.zp - rq.lo) + 1
    if rq.rounding or not len(mult) or not _mults_exact_in_float(mult):
        return 0, 0
    live = mult > 0  # rows of multiplier 0 give the zero point in float too
    # L_r * m_r >= t, exactly (in integers)
    lims = [-(-(t << int(s)) // int(m)) for m, s in zip(mult[live], shift[live], strict=True)]
    lim_r = np.asarray(lims, np.float64)
    m = mult[live] * np.exp2(-shift[live].astype(np.float64))
    b = np.full(len(m), 2.0**31) if bound is None else np.broadcast_to(np.asarray(bound, np.float64),
                                                                        mult.shape)[live]
    if np.all((b < 2.0**24) | (lim_r < 2.0**24)) and np.all(b * m < 2.0**22):
        return 1, 0
    lim = max(lims, default=0)
    return (1, lim) if 0 < lim < 2**24 and np.all(lim * m < 2.0**22) else (0, 0)


def one_rounding(rq: Requant, bound: np.ndarray | None) -> bool:
    """Whether gemmlowp's two roundings (DOUBLE) of every sum v with |v| <= bound (per row) are the one rounding
    sign(v) floor((|v| M + 2^(k-1) + 2^30) / 2^k) of quant.c's ember_qt8_rqa: for k >= 32 they are
    floor((v M + 2^(k-1) + 2^30 - [v < 0] 2^31) / 2^k) exactly, which the |v| form gives except for negative v
    where |v| M + 2^(k-1) + 2^30 is a multiple of 2^k; that needs |v| M to have exactly 30 trailing zero bits, so
    |v| >= 2^(30 - tz(M)), past the bound of every row checked here."""
    if rq.rounding != DOUBLE or bound is None or not len(rq.mult):
        return False
    bound = np.broadcast_to(np.asarray(bound, np.float64), (len(rq.mult),))
    for m, k, b in zip(rq.mult, rq.shift, bound, strict=True):
        if k < 32 or k > 62:
            return False
        if m and b >= 2.0 ** (30 - ((m & -m).bit_length() - 1)):
            return False
    return True


def _out_args(k: KernelEmitter, q: QSpec, bound: np.ndarray | None = None,
              packed: np.ndarray | None = None) -> list[str]:
    """kind, then (after the caller's own arguments) mult, shift, out tables; out = [zp, lo, hi, f, ok, L, w, o]
    with f = exact_in_float for sums within `bound` (None: unknown, f = 0), (ok, L) float_limit's, w
    whether no byte of the `packed` weights is -128 (qgemm.c's VPMADDUBSW tiles are exact then; -1: weights
    known only at run time, which the kernel checks), and o whether TFLite's two roundings are one there
    (`one_rounding`)."""
    w127 = -1 if packed is None else int(not np.any(np.asarray(packed) == -128))
    rq = q.requant
    if rq is None:
        return ["0", "0", k.table([0, 0, 0, 0, 0, 0, w127, 0], DType.INT32)]
    f = int(bound is not None and exact_in_float(rq, bound))
    ok, lim = (1, 0) if f else float_limit(rq, bound)
    return [_table(k, rq.mult), _table(k, rq.shift_codes()),
            k.table([rq.zp, rq.lo, rq.hi, f, ok, lim, w127, int(one_rounding(rq, bound))], DType.INT32)]


def packed_bound(q: QSpec, packed: np.ndarray) -> np.ndarray:
    """sum_bound of packed weight rows (int8 plus the row's offset wofs)."""
    w = np.asarray(packed, np.int64)
    if q.wofs is not None:
        w = w + np.asarray(q.wofs, np.int64)[:, None]
    return sum_bound(np.abs(w).sum(axis=1), q.bias)


def _zp_arg(node: Node, k: KernelEmitter, q: QSpec) -> str:
    return f"(int32_t){k.inp(1)}[0]" if node.input(1) is not None else str(q.x_zp)


def _fail(node: Node, detail: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(node.op, node.name, detail)


# QConv -----------------------------------------------------------------------------------------

def qconv_inputs(graph: Graph, node: Node, x: Value, x_zp: Value | int | None, w: np.ndarray,
                 bias: np.ndarray | None, requant: Requant | None) -> tuple[list[Value | None], QSpec]:
    """Inputs and spec of a QConv computing conv(x - x_zp, w) + bias (w: the real integer weights,
    M x C/group x kernel); `node` holds the Conv attributes."""
    if x.dtype not in BYTE_TYPES:
        raise _fail(node, f"input type {x.dtype.short} (int8 and uint8 are implemented)")
    if not 3 <= x.type.rank <= 5:
        raise _fail(node, f"{x.type.rank - 2}-D input (1-D to 3-D are implemented)")
    group = int(node.attrs.get("group", 1))
    m = w.shape[0]
    node.attrs["kernel_shape"] = list(w.shape[2:])
    bias_t = None if bias is None else tuple(int(v) for v in np.asarray(bias).reshape(-1))
    zp_value = x_zp if isinstance(x_zp, Value) else None
    zp_int = x_zp if isinstance(x_zp, int) else 0
    if zp_value is not None and zp_value.type.numel != 1:
        raise _fail(node, "a per-channel activation zero point (one zero point is implemented)")
    check_sums(node, math.prod(w.shape[1:]), bias_t)
    if group == x.shape[1] and group > 1 and w.shape[1] == 1:
        wq = graph.constant(f"{node.name}_wq", np.asarray(w, np.int16).reshape(m, -1))
        return [x, zp_value, wq], QSpec(zp_int, bias_t, None, None, requant, depthwise=True)
    # Four channels at one tap make one packed word when the group's channels come in fours: the
    # activations then pack straight from four input planes (qconv.c ember_qpack_conv_cl).
    cl = w.shape[1] % 4 == 0 and math.prod(w.shape[2:]) > 1
    rows = np.asarray(w).reshape(m, w.shape[1], -1)
    packed, rowsum, wofs = pack_weights((rows.transpose(0, 2, 1) if cl else rows).reshape(m, -1))
    wq = graph.constant(f"{node.name}_wq", packed)
    return [x, zp_value, wq], QSpec(zp_int, bias_t, rowsum, wofs, requant, channels_last=cl)


def qconv_geometry(node: Node) -> ConvGeometry:
    x, y = present(node.input(0)), present(node.outputs[0])
    return conv_geometry(node, list(x.shape[2:]), list(node.attrs["kernel_shape"]), list(y.shape[2:]))


def qpb(node: Node) -> int:
    """EMBER_QPB as the kernels of `node` are compiled with."""
    return int(node.attrs.get(QPB_ATTR, QPB))


def _qconv_scratch(node: Node) -> int:
    q: QSpec = node.attrs["_q"]
    y = present(node.outputs[0])
    if node.attrs.get("_isa") in (qarm.DSP, qarm.MVE):
        return qarm.conv_scratch(node, qconv_geometry(node))
    if q.depthwise:
        return 4 * _dw_work(node)
    kp, pb = present(node.input(2)).shape[1], qpb(node)
    # qblock.c EMBER_QTAIL_ROWS: the tail pixels are AVX-512 and AVX2 hosts'; a microcontroller's is P <= 2's one row
    tail = 1 if QPB_ATTR in node.attrs else QTAIL
    base = kp * pb + 4 * pb + 4 * y.shape[1] + tail * kp
    g = qconv_geometry(node)
    if g.direct or not g.planar:
        return base
    # qpack.c ember_qrows_geometry: the block's input rows as words split by column phase, and one more row
    # (channels in fours); otherwise each (channel, kernel row)'s input row split by phase (bytes)
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = g.kernel[1:], g.out_size[1:], g.strides[1:], g.dilations[1:]
    rows = (min((pb - 1) // ow + 2, oh) - 1) * sh + (kh - 1) * dh + 1
    wq = ((ow - 1) * sw + (kw - 1) * dw + sw) // sw
    cg = g.channels // int(node.attrs.get("group", 1))
    words = 4 * (rows + 1) * sw * wq if cg % 4 == 0 else cg * kh * sw * wq
    return (base + 63) // 64 * 64 + words


_QDX_WHOLE = 16384  # bytes: at most a small image's worth, so the peak scratch stays the early layers'


def _dw_work(node: Node) -> int:
    """4-byte values of ember_qdwconv's scratch: stride-phase planes and sums (2-D), or the input
    channel and one output row (3-D), and a channel-blocked input's plane and output's row in bytes;
    at least a band of 8 output rows of qdwvnni.c's pixel-major input block where the image has them
    (one band when it is all of the image); then NCHW copies of a channels-last input and output, or on a
    microcontroller (`_dw_per_channel`) a plane and a row of them as a blocked one's."""
    g = qconv_geometry(node)
    if not g.planar:
        return math.prod(g.in_size) + g.out_size[2]
    (kh, kw), (oh, ow), (sh, sw), (dh, dw) = g.kernel[1:], g.out_size[1:], g.strides[1:], g.dilations[1:]
    hh = ((oh - 1) * sh + (kh - 1) * dh + sh) // sh
    wh = ((ow - 1) * sw + (kw - 1) * dw + sw) // sw
    planes = sh * sw * hh * wh + (oh - 1) * wh + ow
    x, y = present(node.input(0)), present(node.outputs[0])
    per_channel = _dw_per_channel(node)
    x_plane, y_row = x.blocked or (per_channel and stored_nhwc(x)), y.blocked or (per_channel and writes_nhwc(node))
    if x_plane or y_row:  # then also a channel plane of the input and a row of the output, in bytes
        planes += (x_plane * g.in_size[1] * g.in_size[2] + y_row * ow + 3) // 4
    band_row = ((ow - 1) * sw + 4 * ((kw + 3) // 4)) * 16  # ember_qdv_conv: Wp pixels of 16 bytes
    band = ((min(oh, 8) - 1) * sh + (kh - 1) * dh + 1) * band_row
    if x.blocked and y.blocked and g.channels % 4 == 0:
        # qdwconv.c ember_qdx_conv (AVX2, blocked in and out): the whole image's padded rows in one band,
        # where they take at most _QDX_WHOLE bytes; a smaller room splits it into bands that each fill
        # their halo rows again (a 3x3 map's band of one output row filled three input rows per row)
        wq = (ow + 7) // 8 * 8 + (kw - 1) * dw // sw
        whole = ((oh - 1) * sh + (kh - 1) * dh + 1) * sw * wq * 16
        if whole <= _QDX_WHOLE:
            band = max(band, whole)
    # a channels-last side outside qdwvnni.c: the NCHW copies the other paths run on, at the end
    copies = 0 if per_channel else stored_nhwc(x) * x.type.numel + writes_nhwc(node) * y.type.numel
    return max(planes, (band + 3) // 4) + (copies + 3) // 4


def _dw_per_channel(node: Node) -> bool:
    """ember_qdwconv's channels-last sides a plane and a row at a time (lay bit 4), not through NCHW copies of the
    tensors: on a microcontroller, whose scratch is RAM beside them (its SRAM has no cache lines that a strided
    gather per channel would waste)."""
    return bool(node.attrs.get(MCU)) and bool(nhwc_bits(node))


def qconv_reads_nhwc(node: Node) -> bool:
    """Whether QConv `node` can pack its input from channels-last bytes (an NhwcView: passes/nhwc_views.py): 2-D, on
    the host's kernels; one group, by rows (qpack.c ember_qpack_rows, words for channels in fours, else
    ember_qpack_rows1), or for a direct 1x1 each pixel's channels as a row of the product (ember_qpack_pixels); or
    depthwise of multiplier 1 (qdwvnni.c: a pixel's 16 channels in one load; qdwconv.c: a channel's plane gathered).
    The Cortex-M kernels: where ops/qarm.py reads_nhwc."""
    if node.op != "QConv" or not qconv_geometry(node).planar:
        return False
    if node.attrs.get("_isa") in (qarm.DSP, qarm.MVE):
        return qarm.reads_nhwc(node)
    q: QSpec = node.attrs["_q"]
    if q.depthwise:
        return present(node.input(0)).shape[1] == present(node.outputs[0]).shape[1]
    return int(node.attrs.get("group", 1)) == 1


def qconv_stores_nhwc(node: Node) -> bool:
    """Whether QConv `node` can store its output channels-last (lay bit 3: qconv.c stores each sum at its channel
    and pixel stride, qdwvnni.c a pixel's channels in one store, qdwconv.c a channel's row at the pixel stride):
    not fused with an add, on the host's kernels, its output not channel-blocked; a depthwise one 2-D, requantised
    (passes/nhwc_views.py). The Cortex-M kernels: where ops/qarm.py stores_nhwc, 2-D."""
    if node.op != "QConv":
        return False
    if node.attrs.get("_isa") in (qarm.DSP, qarm.MVE):
        return qarm.stores_nhwc(node) and qconv_geometry(node).planar
    q: QSpec = node.attrs["_q"]
    y = present(node.outputs[0])
    if q.depthwise:
        return not y.blocked and q.requant is not None and qconv_geometry(node).planar
    return not y.blocked and y.type.rank >= 3


def _layout_bits(node: Node) -> int:
    """The kernels' `lay`: bit 0, x is channel-blocked (passes/int8_layout.py), bit 1, y; bit 2, x is stored
    channels-last, bit 3, y (passes/nhwc_views.py)."""
    x, y = present(node.input(0)), present(node.outputs[0])
    return int(x.blocked) | 2 * int(y.blocked) | nhwc_bits(node)


def lower_qconv(node: Node, k: KernelEmitter, add: tuple[str, ...] = (), pixels: tuple[int, int] | None = None) -> None:
    """`add`: the residual, QAdd table and stage of a fused add (ops/qconv_add.py): the kernels' `_add` variants.
    `pixels`: only output pixels [lo, hi) of ember_qconv and ember_qconv_shifted (a thread's part, ops/split.py)."""
    if node.attrs.get("_isa") in (qarm.DSP, qarm.MVE):  # passes/mcu_kernels.py
        qarm.lower_conv(node, k, qconv_geometry(node), add)
        return
    q: QSpec = node.attrs["_q"]
    if q.depthwise:
        lower_qdwconv(node, k, q)
        return
    x, y = present(node.input(0)), present(node.outputs[0])
    geo = k.table(qconv_geometry(node).table(), DType.INT32)
    kind = "0" if q.requant is None else "1"
    wq = present(node.input(2))
    mult, shift, out = _out_args(k, q, packed_bound(q, wq.const), wq.const)
    y_ptr, m, my = blocked_part(node, k)
    head = [y_ptr, kind, k.inp(0), int(x.dtype is DType.INT8), _zp_arg(node, k, q), geo, x.shape[0]]
    # passes/int8_layout.py; passes/nhwc_views.py
    lay = _layout_bits(node)
    lo, hi = pixels if pixels is not None else (0, math.prod(y.shape[2:]))
    if node.op == "QConvShifted":
        k.call("ember_qconv_shifted", *head, m, k.inp(2), _table(k, q.bias), _table(k, q.rowsum), mult,
               shift, out, lay, k.scratch(), lo, hi, my)
        return
    assert not (add and (pixels or m != my or lay & 8)), "ember_qconv_add is never divided, nor stores channels-last"
    k.call("ember_qconv_add" if add else "ember_qconv", *head, int(node.attrs.get("group", 1)), m,
           int(q.channels_last), k.inp(2), _table(k, q.bias), _table(k, q.rowsum), _table(k, q.wofs), mult, shift, out,
           lay, k.scratch(), *(add or (lo, hi, my)))


# A depthwise QConv whose weight words qdwvnni.c reads from a table made here (passes/int8_layout.py).
DW_WORDS_ATTR = "_dw_words"


def dw_words(w: np.ndarray, kh: int, kw: int, bias: tuple[int, ...] | None, zv: int) -> np.ndarray:
    """qdwvnni.c's constants of each block of 16 channels (ember_qdv_blk's wv and c), as int32: per kernel row, its
    groups of four taps as one word per channel (the taps' bytes; a missing fourth tap 0), then bias - zv * sum(w)
    per channel (zv: the input's zero point in the uint8 view). A last block's lanes past M hold zero weights and its
    first channel's bias, as the kernel's own setup made them. w: M x (kh * kw) weights that fit int8."""
    m, groups = w.shape[0], (kw + 3) // 4
    blocks = []
    for m0 in range(0, m, 16):
        live = np.arange(m0, m0 + 16) < m
        lanes = np.where(live, np.arange(m0, m0 + 16), m0)
        taps = np.zeros((16, kh, 4 * groups), np.int64)
        taps[:, :, :kw] = w[lanes].reshape(16, kh, kw) * live[:, None, None]
        words = ((taps & 0xFF).reshape(16, kh, groups, 4) << np.array([0, 8, 16, 24])).sum(axis=3)
        corr = (np.asarray(bias, np.int64)[lanes] if bias is not None else 0) - zv * taps.sum(axis=(1, 2))
        blocks += [words.reshape(16, kh * groups).T.ravel(), corr]
    return np.concatenate(blocks).astype(np.uint32).view(np.int32) if blocks else np.zeros(0, np.int32)


def lower_qdwconv(node: Node, k: KernelEmitter, q: QSpec, channels: tuple[int, int] | None = None) -> None:
    """ember_qdwconv for the output channels [lo, hi) (`channels`; q: their spec, its per-channel tables cut so;
    a thread's part of a depthwise convolution of multiplier 1, ops/split.py), else all of them. A part's
    channels are at its first channel quad of a channel-blocked input and output, their blocks keeping the whole
    call's stride (the kernel's mb), at its first channel plane of a plain one (one image)."""
    x, y, wq = present(node.input(0)), present(node.outputs[0]), present(node.input(2))
    m = y.shape[1]
    lo, hi = channels if channels is not None else (0, m)
    g = qconv_geometry(node)
    s_in, s_out, kvol = math.prod(x.shape[2:]), math.prod(y.shape[2:]), wq.shape[1]
    x_ptr, y_ptr, w_ptr = k.inp(0), k.out(0), k.inp(2)
    if (lo, hi) != (0, m):
        assert x.shape[1] == m and lo % 4 == 0 and (x.shape[0] == 1 or x.blocked and y.blocked)
        g = replace(g, channels=hi - lo)
        x_ptr = f"({x_ptr} + {lo // 4 * 256 if x.blocked else lo * s_in})"
        y_ptr = f"({y_ptr} + {lo // 4 * 256 if y.blocked else lo * s_out})"
        w_ptr = f"({w_ptr} + {lo * kvol})"
    # Bit 0: sums of kvol products of |w| <= max|w| and |x - x_zp| <= 255 below 2^24 are exact in
    # float. Bit 1: the weights fit int8 (the byte dot-product path, qdwvnni.c).
    w = wq.const[lo:hi].astype(np.int64)
    exact = int(kvol * int(np.abs(w).max(initial=0)) * 255 < 2**24)
    exact |= 2 * int(w.size == 0 or (w.min() >= -128 and w.max() <= 127))
    mult, shift, out = _out_args(k, q, sum_bound(np.abs(w).sum(axis=1), q.bias))
    words = "0"
    if node.attrs.get(DW_WORDS_ATTR) and exact & 2 and q.requant is not None and g.planar:
        zv = (q.x_zp + (128 if x.dtype is DType.INT8 else 0)) & 0xFF
        words = k.table(list(dw_words(w, g.kernel[1], g.kernel[2], q.bias, zv)), DType.INT32)
    k.call("ember_qdwconv", y_ptr, "0" if q.requant is None else "1", x_ptr, int(x.dtype is DType.INT8),
           _zp_arg(node, k, q), k.table(g.table(), DType.INT32), x.shape[0], hi - lo, w_ptr, _table(k, q.bias), mult,
           shift, out, exact, _layout_bits(node) | 16 * _dw_per_channel(node), k.scratch(), 4 * _dw_work(node), m,
           words)


# A thread's part of the output channels [c0, c0 + rows) of a channel-blocked output of M channels (ops/split.py):
# attribute (c0, M), the part's view keeping the whole output value.
YCUT_ATTR = "_ycut"


def blocked_part(node: Node, k: KernelEmitter) -> tuple[str, int, int]:
    """(output pointer, output channels computed, channels of the output's blocks): the part's first channel
    quad inside each 64-pixel block (blocks stay 64 * M bytes apart) where the node is a thread's part of a
    channel-blocked output's channels, else the output, its channels twice."""
    y = present(node.outputs[0])
    cut = node.attrs.get(YCUT_ATTR)
    if cut is None:
        return k.out(0), y.shape[1], y.shape[1]
    c0, m = cut
    assert y.blocked and c0 % 4 == 0
    return f"({k.out(0, 'uint8_t')} + {c0 // 4 * 256})", node.attrs["_rows"], m


def _out_dtype(node: Node) -> DType:
    """int32 sums, or the requantised type its creator recorded in `_dtype`."""
    return DType.INT32 if node.attrs["_q"].requant is None else node.attrs["_dtype"]


def infer_qconv(node: Node) -> list[TensorType | None]:
    """[N, M, windows...]: M rows of packed weights (input 2), windows from the Conv attributes."""
    x, w = present(node.input(0)), present(node.input(2))
    return [TensorType(_out_dtype(node), (x.shape[0], node.attrs.get("_rows", w.shape[0]),
                                          *conv_out(node, x.shape[2:], node.attrs["kernel_shape"])))]


register(OpDef("QConv", lower=lower_qconv, scratch=_qconv_scratch, overlap=qconv_overlap,
               kernels=("ember_qconv", "ember_qdwconv", "ember_qarm_conv", "ember_qarm_dw3",
                        "ember_qarm_conv_mve", "ember_qarm_dw3_mve", "ember_qarm_conv_mve8",
                        "ember_qarm_dw3_mve8", "ember_qarm_conv_mul", "ember_qarm_dw3_mul", "ember_qarm_conv_hwc",
                        "ember_qarm_dw3_hwc", "ember_qarm_conv_mul_hwc", "ember_qarm_dw3_mul_hwc",
                        "ember_qarm_conv_mve8_hwc", "ember_qarm_dw3_mve8_hwc", "ember_qarm_dw3_mve_hwc"),
               infer=infer_qconv))


# QMatMul ---------------------------------------------------------------------------------------

def qmatmul_inputs(graph: Graph, node: Node, a: Value, a_zp: Value | int | None, b: Value | np.ndarray,
                   b_zp: np.ndarray | None, bias: np.ndarray | None,
                   requant: Requant | None) -> tuple[list[Value | None], QSpec]:
    """Inputs and spec of a QMatMul computing (a - a_zp) @ (b - b_zp) + bias. b: the real integer
    weights K x N (compile time), or a run-time int8/uint8 Value with b_zp its zero points."""
    if a.dtype not in BYTE_TYPES:
        raise _fail(node, f"input type {a.dtype.short} (int8 and uint8 are implemented)")
    if a.type.rank < 2:
        raise _fail(node, "a 1-D first operand (2-D and higher are implemented)")
    zp_value = a_zp if isinstance(a_zp, Value) else None
    zp_int = a_zp if isinstance(a_zp, int) else 0
    if zp_value is not None and zp_value.type.numel != 1:
        raise _fail(node, "a per-row zero point of A (one zero point is implemented)")
    bias_t = None if bias is None else tuple(int(v) for v in np.asarray(bias).reshape(-1))
    check_sums(node, a.shape[-1], bias_t)
    if isinstance(b, np.ndarray):
        packed, rowsum, wofs = pack_weights(np.asarray(b).T)
        return [a, zp_value, graph.constant(f"{node.name}_wq", packed)], QSpec(zp_int, bias_t, rowsum, wofs, requant)
    if b.dtype not in BYTE_TYPES or b.type.rank < 2:
        raise _fail(node, f"second operand {b.dtype.short}[{b.type.rank}-D] (int8/uint8, 2-D or more)")
    n = b.shape[-1]
    bz = np.zeros(n, np.int64) if b_zp is None else np.broadcast_to(np.asarray(b_zp, np.int64).reshape(-1), (n,))
    # ember_qpack_b stores uint8 B minus 128: that and the zero point are the offset back to B - b_zp.
    wofs = tuple(int(v) for v in ((0 if b.dtype is DType.INT8 else 128) - bz))
    return [a, zp_value, b], QSpec(zp_int, bias_t, None, wofs, requant)


def _kp(k_dim: int) -> int:
    return (k_dim + 3) // 4 * 4


def qmatmul_x_bytes(rows: int, k_dim: int, pb: int = QPB) -> int:
    """Bytes of ember_qmatmul's packed activations: one row of Kp for at most 2 rows (its matrix-vector
    path), else a block of EMBER_QPB rows."""
    return _kp(k_dim) * (1 if rows <= 2 else pb)


def _qmatmul_base(node: Node) -> int:
    """ember_qmatmul's scratch: packed rows, then EMBER_QPB column sums and N row corrections (int32)."""
    a, w, y = present(node.input(0)), present(node.input(2)), present(node.outputs[0])
    rows = math.prod(a.shape[:-1]) if w.is_const else a.shape[-2]  # what one ember_qmatmul call gets as M
    return qmatmul_x_bytes(rows, a.shape[-1], qpb(node)) + 4 * qpb(node) + 4 * y.shape[-1]


def _qmatmul_scratch(node: Node) -> int:
    a, w, y = present(node.input(0)), present(node.input(2)), present(node.outputs[0])
    kk, n = a.shape[-1], y.shape[-1]
    if node.attrs.get("_isa") == qarm.DSP:
        return qarm.fc_scratch(kk, math.prod(a.shape[:-1]))
    base = _qmatmul_base(node)
    return base if w.is_const else (base + 63) // 64 * 64 + (n * _kp(kk) + 63) // 64 * 64 + 4 * n


def _lower_qmatmul(node: Node, k: KernelEmitter) -> None:
    if node.attrs.get("_isa") == qarm.DSP:  # passes/mcu_kernels.py
        qarm.lower_fc(node, k)
        return
    q: QSpec = node.attrs["_q"]
    a, b, y = present(node.input(0)), present(node.input(2)), present(node.outputs[0])
    m, kk, n = a.shape[-2], a.shape[-1], y.shape[-1]
    kind = "0" if q.requant is None else "1"
    # Run-time B: any 8-bit values, offsets up to 255 (wofs) included.
    bound = packed_bound(q, b.const) if b.is_const else sum_bound(np.full(n, 255.0 * kk), q.bias)
    mult, shift, out = _out_args(k, q, bound, b.const if b.is_const else None)
    sgn, zp, bias = int(a.dtype is DType.INT8), _zp_arg(node, k, q), _table(k, q.bias)
    ysize = 4 if q.requant is None else 1
    if b.is_const:  # one weight matrix: A's batch dimensions fold into M
        rows = math.prod(a.shape[:-1])
        k.call("ember_qmatmul", k.out(0), kind, k.inp(0), sgn, zp, rows, n, kk, k.inp(2), bias, _table(k, q.rowsum),
               _table(k, q.wofs), mult, shift, out, k.scratch())
        return
    a_batch, b_batch = a.shape[:-2], b.shape[:-2]
    out_batch = np.broadcast_shapes(a_batch, b_batch)
    nb = math.prod(out_batch)
    idx_a = np.broadcast_to(np.arange(math.prod(a_batch)).reshape(a_batch), out_batch).reshape(-1) * (m * kk)
    idx_b = np.broadcast_to(np.arange(math.prod(b_batch)).reshape(b_batch), out_batch).reshape(-1) * (kk * n)
    ta, tb = k.table(idx_a, DType.INT32), k.table(idx_b, DType.INT32)
    base = (_qmatmul_base(node) + 63) // 64 * 64
    wbuf = f"(int8_t *)({k.scratch()} + {base})"
    rowsum = f"(int32_t *)(void *)({k.scratch()} + {base + (n * _kp(kk) + 63) // 64 * 64})"
    k.need("ember_qmatmul", "ember_qpack_b")
    with k.w.block(f"for (int ember_b = 0; ember_b < {nb}; ++ember_b)"):
        k.line(f"ember_qpack_b({wbuf}, {rowsum}, (const uint8_t *){k.inp(2)} + {tb}[ember_b], "
               f"{int(b.dtype is DType.INT8)}, {kk}, {n});")
        k.call("ember_qmatmul", f"(uint8_t *){k.out(0)} + (ptrdiff_t)ember_b * {m * n * ysize}", kind,
               f"(const uint8_t *){k.inp(0)} + {ta}[ember_b]", sgn, zp, m, n, kk, wbuf, bias, rowsum,
               _table(k, q.wofs), mult, shift, out, k.scratch())


def _infer_qmatmul(node: Node) -> list[TensorType | None]:
    """A's rows times N: the rows of packed weights (constant input 2), else a run-time B's columns."""
    a, b = present(node.input(0)), present(node.input(2))
    if b.is_const:  # _rows: passes/mcu_kernels.py's weights have an even number of rows
        return [TensorType(_out_dtype(node), (*a.shape[:-1], node.attrs.get("_rows", b.shape[0])))]
    return [TensorType(_out_dtype(node), matmul_shape(node, a.shape, b.shape))]


register(OpDef("QMatMul", lower=_lower_qmatmul, scratch=_qmatmul_scratch,
               kernels=("ember_qmatmul", "ember_qpack_b", "ember_qarm_fc"),
               infer=_infer_qmatmul))


def retype(v: Value, dtype: DType) -> None:
    """Gives an output value the element type its integer kernel writes."""
    v.type = TensorType(dtype, v.shape, v.type.quant)
