"""The Cortex-M DSP variants of the integer convolution, depthwise 3x3 and matrix product (kernels/qarm*.c), and
Cortex-M55's Helium int8 convolution and depthwise 3x3 (kernels/qarm_mve.c, nodes marked `_mve8`), and the
Cortex-M0/M3 ones without the DSP extension (kernels/qarm_mul.c, nodes marked `_mul8`).

passes/mcu_kernels.py marks a QConv/QMatMul with `_isa = "dsp"` when its target has the DSP extension
(Target.int8_isa) and the layer is one these kernels compute exactly (`admits`), and stores its weights
as they read them (`dsp_weights`); qlinear.py's lowerings hand marked nodes to this module.
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node
from ember.ops.conv import ConvGeometry
from ember.ops.matmul import present
from ember.ops.shape import nhwc_bits, writes_nhwc

DSP = "dsp"
MVE = "mve"  # Helium: ember_qarm_conv_mve(8), ember_qarm_dw3_mve(8); fully-connected layers stay portable
MUL = "mul"  # a core without DSP (Cortex-M0/M3): kernels/qarm_mul.c (on qarm*.c's columns, planes, requantisation)
MUL8 = "_mul8"  # node attribute (passes/mcu_kernels.py): qarm_mul.c's kernels (a convolution's int8 weights)


def rq_table(requant: object, bias: tuple[int, ...] | None, fast: bool, zp: int = 0,
             exact: frozenset[int] = frozenset()) -> list[int]:
    """Per channel [mult, sh, ra, bias] for qarm.c's ember_qa_requant: with `fast`, sh = shift - 32 and
    ra = 2^(sh-1) + zp * 2^sh (`zp`: the zero point folded in, see `fold_zp`); otherwise sh = shift and ra
    unused. A multiplier of 0 (zero scale) gives 0 (plus zp) either way. `exact`: channels in the exact form
    all the same (a mixed layer, see `_tables`)."""
    out: list[int] = []
    for i, (m, s) in enumerate(zip(requant.mult, requant.shift, strict=True)):  # type: ignore[attr-defined]
        b = 0 if bias is None else int(bias[i])
        if m == 0:
            out += [0, 1, 1 + 2 * zp, b]
        elif fast and i not in exact:
            out += [int(m), int(s) - 32, (1 << (s - 33)) + (zp << (s - 32)), b]
        else:  # TFLite's roundings marked as quant.c's ember_q_scale reads them
            out += [int(m), int(s) + 64 * int(getattr(requant, "rounding", 0)), 0, b]
    return out


def fold_zp(requant: object) -> bool:
    """Whether the fast form may add the zero point inside SMMLA's rounding constant: floor((p + zp * 2^sh) /
    2^sh) = floor(p / 2^sh) + zp for the integer p = acc * mult + ra * 2^32, so ra + zp * 2^sh (SMMLA adds it
    in 64 bits) replaces the separate add when it fits 32 bits (ember_qa_gemm42s has no register for zp)."""
    zp = int(requant.zp)  # type: ignore[attr-defined]
    for m, s in zip(requant.mult, requant.shift, strict=True):  # type: ignore[attr-defined]
        sh = int(s) - 32 if m else 1
        if sh < 1 or not -(1 << 31) <= (1 << (sh - 1)) + (zp << sh) < 1 << 31:
            return False
    return True


def fast_requant(requant: object, bound: np.ndarray) -> bool:
    """Whether qarm.c may requantise by SMMLA (its `fast`): every shift above 32, and no tie, so that
    rounding half up equals quant.c's half to even. A tie needs acc * mult to be an odd multiple of
    2^(shift-1), so 2^(shift-1) must divide it: impossible when the powers of 2 in mult and in the
    largest |acc| (`bound`, per channel) stay below that. LiteRT's rounding is half up itself (any tie is
    fine); TFLite Micro's rounds twice, which SMMLA does not."""
    ok = tie_free(requant, bound)
    return ok is not None and all(ok)


def tie_free(requant: object, bound: np.ndarray) -> list[bool] | None:
    """Per channel, whether `fast_requant`'s proof holds for it; None where the layer cannot take the fast
    form at all (TFLite Micro's rounding, or a shift of 32 or less)."""
    rounding = int(getattr(requant, "rounding", 0))  # qlinear.py SINGLE (1) or DOUBLE (2)
    if rounding == 2:
        return None
    ok: list[bool] = []
    for m, s, b in zip(requant.mult, requant.shift, np.broadcast_to(bound, (len(requant.mult),)),  # type: ignore[attr-defined]
                       strict=True):
        if m == 0 or rounding == 1:
            if m and s <= 32:
                return None
            ok.append(True)
            continue
        if s <= 32:
            return None
        twos = (int(m) & -int(m)).bit_length() - 1
        ok.append(int(b).bit_length() - 1 + twos < s - 1)
    return ok


def dsp_weights(rows: np.ndarray) -> np.ndarray:
    """int8 rows M x K -> ceil(M/2)*2 x Kp (K rounded up to 4, rows and k zero padded): each group of 4 k
    stored k0 k2 k1 k3 (SXTB16 of the word gives the lanes (k0, k1), of the word rotated by 8 (k2, k3)),
    and the rows in pairs, a pair's two rows interleaved a word at a time (one LDRD reads both)."""
    m, k = rows.shape
    mp, kp = (m + 1) // 2 * 2, (k + 3) // 4 * 4
    padded = np.zeros((mp, kp), np.int8)
    padded[:m, :k] = rows
    words = padded.reshape(mp // 2, 2, kp // 4, 4)[:, :, :, [0, 2, 1, 3]]
    return np.ascontiguousarray(words.transpose(0, 2, 1, 3).reshape(mp, kp))


def dsp_weights16(rows: np.ndarray) -> np.ndarray:
    """int8 rows M x K -> int16 ceil(M/2)*2 x Kp (as dsp_weights' padding) for a convolution's int16 product
    loops, so that SMLAD reads them with no SXTB16 (twice dsp_weights' flash): the first M // 4 * 4 rows in
    quads, per quad and pair of k the words (k0, k1) of its four rows (qarm_gemm4.c ember_qa_gemm4); the last
    M % 4 in pairs, per pair and group of 4 k, (k0, k1) of both rows, then (k2, k3) of both, the words the
    columns pair with (ember_qa_dot22)."""
    m, k = rows.shape
    m4, mp, kp = m // 4 * 4, (m + 1) // 2 * 2, (k + 3) // 4 * 4
    padded = np.zeros((mp, kp), np.int16)
    padded[:m, :k] = rows
    # (quad, row, k pair, lane) -> (quad, k pair, row, lane)
    quads = padded[:m4].reshape(m4 // 4, 4, kp // 2, 2).transpose(0, 2, 1, 3).reshape(m4, kp)
    # (pair, row, group, half, lane) -> (pair, group, half, row, lane)
    pairs = padded[m4:].reshape((mp - m4) // 2, 2, kp // 4, 2, 2).transpose(0, 2, 3, 1, 4).reshape(mp - m4, kp)
    return np.ascontiguousarray(np.concatenate([quads, pairs]))


def mul_weights(rows: np.ndarray) -> np.ndarray:
    """int8 rows M x K -> ceil(M/2)*2 x Kp (K rounded up to 4; rows and k zero padded) for qarm_mul.c's
    ember_qarm_conv_mul: rows in pairs, per pair and pair of k the bytes (a0, a1, b0, b1) of its rows a, b."""
    m, k = rows.shape
    mp, kp = (m + 1) // 2 * 2, (k + 3) // 4 * 4
    padded = np.zeros((mp, kp), np.int8)
    padded[:m, :k] = rows
    return np.ascontiguousarray(padded.reshape(mp // 2, 2, kp // 2, 2).transpose(0, 2, 1, 3).reshape(mp, kp))


def _mul_rows(w: np.ndarray) -> np.ndarray:
    """mul_weights' rows back in row order."""
    mp, kp = w.shape
    return w.reshape(mp // 2, kp // 2, 2, 2).transpose(0, 2, 1, 3).reshape(mp, kp)


def mve_weights(rows: np.ndarray) -> np.ndarray:
    """int8 rows M x K -> ceil(M/2)*2 x K8 (K rounded up to 8; rows and k zero padded), as VLDRB reads them."""
    m, k = rows.shape
    out = np.zeros(((m + 1) // 2 * 2, (k + 7) // 8 * 8), np.int8)
    out[:m, :k] = rows
    return out


MVE8 = "_mve8"  # node attribute (passes/mcu_kernels.py): ember_qarm_conv_mve8's int8 columns (qarm_mve.c)


def mve8_weights(rows: np.ndarray) -> np.ndarray:
    """int8 rows M x K -> ceil(M/2)*2 x K16 (K rounded up to 16; rows and k zero padded), each pair of rows
    interleaved 16 bytes at a time, as ember_qarm_conv_mve8 reads them (two VLDRB from one pointer)."""
    m, k = rows.shape
    mp, kp = (m + 1) // 2 * 2, (k + 15) // 16 * 16
    padded = np.zeros((mp, kp), np.int8)
    padded[:m, :k] = rows
    return np.ascontiguousarray(padded.reshape(mp // 2, 2, kp // 16, 16).transpose(0, 2, 1, 3).reshape(mp, kp))


def _mve8_rows(w: np.ndarray) -> np.ndarray:
    """mve8_weights' rows back in row order."""
    mp, kp = w.shape
    return w.reshape(mp // 2, kp // 16, 2, 16).transpose(0, 2, 1, 3).reshape(mp, kp)


def folded_bias(bias: tuple[int, ...] | None, x_zp: int, x_int8: bool, w_rows: np.ndarray) -> tuple[int, ...]:
    """The bias less the input zero point's share, zs * (the row's weight sum), with zs the zero point as
    the int8 columns of ember_qarm_conv_mve8 hold it (a uint8 tensor's less 128): the kernel's sums of
    w * s (s: the byte as int8, a uint8 one's less 128) are then the sums of (x - zero point) * w that
    every other path computes."""
    zs = int(x_zp) - (0 if x_int8 else 128)
    b = np.zeros(w_rows.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64)
    return tuple(int(v) for v in b - zs * np.asarray(w_rows, np.int64).sum(axis=1))


def mve8_bias(node: Node, w_rows: np.ndarray) -> tuple[int, ...]:
    q = node.attrs["_q"]
    return folded_bias(q.bias, q.x_zp, present(node.input(0)).dtype is DType.INT8, w_rows)


def mve8_fits(node: Node, w_rows: np.ndarray) -> bool:
    """mve8_bias stays an int32 (it always does but for sums of millions of weights)."""
    return bool(np.abs(np.asarray(mve8_bias(node, w_rows), np.int64)).max(initial=0) < 2**31)


def dw8_weights(w: np.ndarray, stride_w: int, transposed: bool) -> np.ndarray:
    """Depthwise C x 9 integer weights -> C x 32 int8 for ember_qarm_dw3_mve8: per channel two 16-lane
    vectors over the gathered window (3 rows of 4 lanes, 5 at column stride 2), the 9 weights at the first
    output's lanes, then at the second's (`stride_w` lanes on); `transposed`: the plane's rows are the
    image's columns (ember_qa_dw3_geo's t)."""
    c = w.shape[0]
    k = np.asarray(w[:, :9], np.int64).reshape(c, 3, 3)
    if transposed:
        k = k.transpose(0, 2, 1)
    ww = 4 if stride_w == 1 else 5
    out = np.zeros((c, 2, 16), np.int8)
    for r in range(3):
        out[:, 0, r * ww:r * ww + 3] = k[:, r]
        out[:, 1, r * ww + stride_w:r * ww + stride_w + 3] = k[:, r]
    return out.reshape(c, 32)


def dw8_admits(node: Node, g: ConvGeometry, w: np.ndarray) -> bool:
    """ember_qarm_dw3_mve8 computes this depthwise layer: column stride 1 or 2, int8 weights, the fast
    requantisation (it has no exact form), a plane row short enough for byte gather offsets."""
    q = node.attrs["_q"]
    sh, sw = g.strides[1:]
    if sw not in (1, 2) or w.min(initial=0) < -128 or w.max(initial=0) > 127:
        return False
    if dw3_plane(*g.out_size[1:], sh, sw)[1] > 125:
        return False
    bound = np.abs(np.asarray(w, np.int64)).sum(axis=1) * 255
    if q.bias is not None:
        bound = bound + np.abs(np.asarray(q.bias, np.int64))
    return fast_requant(q.requant, bound)


def _pair_rows(w: np.ndarray, m: int) -> np.ndarray:
    """dsp_weights' (int8) or dsp_weights16's (int16) rows back in row order (each row's values still in
    lane order); m: the real rows."""
    mp, kp = w.shape
    if w.dtype == np.int16:
        m4 = m // 4 * 4
        quads = w[:m4].reshape(m4 // 4, kp // 2, 4, 2).transpose(0, 2, 1, 3).reshape(m4, kp)
        pairs = w[m4:].reshape((mp - m4) // 2, kp // 4, 2, 2, 2).transpose(0, 3, 1, 2, 4).reshape(mp - m4, kp)
        return np.concatenate([quads, pairs])
    return w.reshape(mp // 2, kp // 4, 2, 4).transpose(0, 2, 1, 3).reshape(mp, kp)


def conv_rows(packed: np.ndarray, k: int, channels_last: bool, taps: int) -> np.ndarray:
    """The real K weights per output channel in the order (channel, kernel row, kernel column), from
    qlinear.pack_weights' rows (whose order is (taps, channels) when `channels_last`)."""
    rows = np.asarray(packed[:, :k], np.int8)
    if channels_last:
        rows = rows.reshape(rows.shape[0], taps, k // taps).transpose(0, 2, 1).reshape(rows.shape[0], k)
    return rows


def dw3_admits(g: ConvGeometry) -> bool:
    """A 2-D 3x3 depthwise window of dilation 1 (ember_qarm_dw3)."""
    return g.planar and tuple(g.kernel[1:]) == (3, 3) and tuple(g.dilations[1:]) == (1, 1)


DW3_PITCH = 64  # qarm_dw3step.c EMBER_QA_DW3_PITCH: the int16 per plane row of the DSP depthwise rows where they fit


def dw3_plane(out_h: int, out_w: int, stride_h: int, stride_w: int, transpose: bool = True) -> tuple[int, int]:
    """Rows and row length (int16) of the zero-padded plane of one channel, as qarm_dw3.c's ember_qa_dw3_geo_tr
    lays it out: stride 1 transposes a map of more rows than columns (`transpose`: Helium's layout, not the
    DSP kernels'); column strides 1 and 2 round the row's outputs up to the 4 of a step (whose reads end 2
    past its last window); other strides read 2 past the last window."""
    if stride_h == stride_w == 1:
        rows, cols = sorted((out_h, out_w)) if transpose else (out_h, out_w)
        return rows + 2, (cols + 3) // 4 * 4 + 2
    if stride_w <= 2:  # steps of 4 outputs: ember_qa_dw3_quad2 reads 10 halfwords from column 2 * ow
        return (out_h - 1) * stride_h + 3, stride_w * ((out_w + 3) // 4 * 4) + 2
    return (out_h - 1) * stride_h + 3, ((out_w - 1) * stride_w + 5) // 2 * 2


def dw3_pitch(rows: int, cols: int) -> bool:
    """Whether qarm_dw3step.c's DSP depthwise rows take a plane of DW3_PITCH int16 per row (immediate offsets, 4
    instructions a step less): where a row fits, unless that more than doubles a plane of many short rows."""
    return cols <= DW3_PITCH and (cols > 16 or rows <= 16)


def _tables(node: Node, k: KernelEmitter, w_rows: np.ndarray, bias: tuple[int, ...] | None = None,
            mixed: bool = False, pairs: bool = False, fold: bool = False) -> tuple[str, str]:
    """rq (per channel [mult, s, ra, bias]) and out tables ([zero point, lo, hi, fast]); w_rows: the weights
    per output channel (any order), for the sums' bound; `bias`: the one the kernel adds, where not the node's
    (mve8_bias). The DSP kernels' fast form takes the zero point in ra where it fits (`fold_zp`; out's zero
    point is then 0); Helium's rounding shift has no ra. `mixed` (the DSP convolutions' channel quads,
    qarm_gemm4.c ember_qa_gemm4): where only some channels may tie, the others stay fast and out is [1, lo, hi, 3,
    zero point, count, the quads holding an exact channel...] (a multiplier with many factors of 2, as
    per-channel quantisation makes, puts a single channel of a layer out of the proof). `pairs` (the DSP
    convolutions): rq ends with each channel's bias twice, the words with which qarm_gemm4.c's ember_qa_gemm42b starts
    a tile's eight sums (one LDM), then 1 where `fold` (a 1x1 layer, ConvGeometry.direct, of a constant input
    zero point) put in those words the zero point's share, -zp * (the row's weight sum), so that its columns
    are the bytes' values as they are (qarm_cols.c ember_qa_direct2's `fz`), otherwise 0."""
    q = node.attrs["_q"]
    rq = q.requant
    if node.attrs["_isa"] == DSP and node.input(1) is None:
        bound = sum_bound(w_rows, q.bias, int(q.x_zp), present(node.input(0)).dtype is DType.INT8)
    else:
        bound = np.abs(np.asarray(w_rows, np.int64)).sum(axis=1) * 255
        if q.bias is not None:
            bound = bound + np.abs(np.asarray(q.bias, np.int64))
    ok = tie_free(rq, bound)
    fast = ok is not None and all(ok)
    if ok is not None and not fast and mixed and node.attrs["_isa"] == DSP and fold_zp(rq):
        quads = sorted({i // 4 for i, good in enumerate(ok) if not good})
        exact = frozenset(4 * j + r for j in quads for r in range(4))  # whole quads: ember_qa_gemm4_t's
        if len(quads) < len(ok) // 4:  # some quad stays fast
            t = rq_table(rq, q.bias if bias is None else bias, True, int(rq.zp), exact)
            return (k.table(_bias_pairs(t, None) if pairs else t, DType.INT32),
                    k.table([1, rq.lo, rq.hi, 3, int(rq.zp), len(quads), *quads], DType.INT32))
    zp = int(rq.zp) if fast and node.attrs["_isa"] == DSP and fold_zp(rq) else 0
    t = rq_table(rq, q.bias if bias is None else bias, fast, zp)
    share = None
    if fold and node.input(1) is None:
        share = -int(q.x_zp) * np.asarray(w_rows, np.int64).sum(axis=1)
    return (k.table(_bias_pairs(t, share) if pairs else t, DType.INT32),
            k.table([int(rq.zp) - zp, rq.lo, rq.hi, int(fast)], DType.INT32))


def _bias_pairs(table: list[int], share: np.ndarray | None) -> list[int]:
    """rq_table's `table`, then each channel's bias twice (plus its `share`), then whether shares were added."""
    b = np.asarray(table[3::4], np.int64) + (0 if share is None else share)
    if np.abs(b).max(initial=0) >= 2**31:  # an int32 no longer: the zero point stays in the columns
        b, share = np.asarray(table[3::4], np.int64), None
    return table + [int(v) for v in b for _ in range(2)] + [int(share is not None)]


def sum_bound(w_rows: np.ndarray, bias: tuple[int, ...] | None, x_zp: int, x_int8: bool) -> np.ndarray:
    """The largest |sum| per output channel of the DSP kernels, bias + sum_k w[k] * (x[k] - x_zp) with x in
    its type's range (padding adds 0), for `fast_requant`: positive and negative weights reach their extremes
    at opposite ends of that range, so this is about half of sum |w| * 255 and may prove one bit more."""
    w = np.asarray(w_rows, np.int64)
    xmin, xmax = (-128, 127) if x_int8 else (0, 255)
    ulo, uhi = min(xmin - x_zp, 0), max(xmax - x_zp, 0)
    pos, neg = np.clip(w, 0, None).sum(axis=1), np.clip(w, None, 0).sum(axis=1)
    b = 0 if bias is None else np.asarray(bias, np.int64)[:len(w)]
    return np.maximum(np.abs(pos * uhi + neg * ulo + b), np.abs(pos * ulo + neg * uhi + b))


def _zp(node: Node, k: KernelEmitter) -> str:
    return f"(int32_t){k.inp(1)}[0]" if node.input(1) is not None else str(node.attrs["_q"].x_zp)


def reads_nhwc(node: Node) -> bool:
    """Whether this family's kernel for QConv `node` gathers from a channels-last input (EMBER_QA_HWC_IN): the
    convolution's columns (qarm_cols.c ember_qa_col_hwc, qarm_mve.c ember_qm8_col_hwc, on `tap_major` weights) and
    the depthwise planes (ember_qa_dw3_t, ember_qm_dw3_t, ember_qm8_dw_t, ember_qa_dw3_mve_t): every kernel but
    Helium's int16 convolution (qarm_mve16.c ember_qarm_conv_mve, for a layer whose zero point is an input)."""
    return node.attrs["_isa"] == DSP or bool(node.attrs.get(MVE8)) or bool(node.attrs["_q"].depthwise)


def stores_nhwc(node: Node) -> bool:
    """Whether it can store its output channels-last (EMBER_QA_HWC_OUT): those kernels, each pixel pair's outputs
    through a stage of 2 * M bytes (a convolution's, ember_qa_hwc_store) or each output at the pixel stride."""
    return reads_nhwc(node)


def tap_major(node: Node, graph: Graph) -> None:
    """Store a convolution's weights in the order (kernel row, kernel column, channel) of ember_qa_col_hwc's
    columns (its input NHWC), from the (channel, kernel row, kernel column) of mcu_kernels' packing."""
    if node.attrs["_q"].depthwise or node.attrs.get("_tap_major"):
        return
    w = present(node.input(2)).const
    m, c = node.attrs["_rows"], present(node.input(0)).shape[1]
    k = c * math.prod(node.attrs["kernel_shape"])
    mul, mve8 = node.attrs.get(MUL8), node.attrs.get(MVE8)
    rows = (_mul_rows(w) if mul else _mve8_rows(w) if mve8 else _pair_rows(w, m))[:m, :k]
    rows = rows.reshape(m, c, k // c).transpose(0, 2, 1).reshape(m, k)
    pack = mul_weights if mul else mve8_weights if mve8 else dsp_weights16
    node.inputs[2] = graph.constant(f"{node.name}_w_hwc", pack(rows).astype(w.dtype))
    node.attrs["_tap_major"] = True


def geo_table(node: Node, g: ConvGeometry) -> list[int]:
    """The geometry, then the layouts (EMBER_QA_LAY: ops/shape.py nhwc_bits)."""
    return [*g.table(), nhwc_bits(node)]


def conv_scratch(node: Node, g: ConvGeometry) -> int:
    """Two interleaved int16 columns of Kp and the two plain ones they come from (conv), then an NHWC output's
    pixel pair (2 * M bytes), or one channel's zero-padded int16 plane (depthwise 3x3)."""
    if node.attrs["_q"].depthwise:
        dsp = node.attrs["_isa"] == DSP
        hp, wp = dw3_plane(*g.out_size[1:], *g.strides[1:], transpose=not dsp)
        if node.attrs.get(MVE8) or node.attrs.get(MUL8):  # byte planes (qarm_mve.c, qarm_mul.c)
            return hp * wp
        if dsp and dw3_pitch(hp, wp):  # qarm_dw3.c ember_qa_dw3_fast's rows of DW3_PITCH int16
            wp = DW3_PITCH
        return 2 * hp * wp
    stage = 2 * present(node.outputs[0]).shape[1] if writes_nhwc(node) else 0
    if node.attrs.get(MVE8):
        return 2 * ((g.channels * g.taps + 15) // 16 * 16) + stage
    return 8 * ((g.channels * g.taps + 7) // 8 * 8) + stage


def fc_scratch(k_dim: int, rows: int) -> int:
    """qarm.c ember_qarm_fc's: two plain int16 columns of Kp and their interleaved pair, or for one row of A
    its plain column alone."""
    return (8 if rows > 1 else 2) * ((k_dim + 3) // 4 * 4)


def lower_conv(node: Node, k: KernelEmitter, g: ConvGeometry, add: tuple[str, ...] = ()) -> None:
    """`add`: the residual, QAdd table and stage of a fused add (ops/qconv_add.py): the `_add` variant."""
    x, y = present(node.input(0)), present(node.outputs[0])
    w = present(node.input(2)).const
    mve = node.attrs["_isa"] == MVE
    # qarm_conv.c ember_qarm_conv_hwc, qarm_dw3.c ember_qarm_dw3_hwc, ... (never with a fused add: fuse_conv_add)
    hwc = "_hwc" if nhwc_bits(node) else ""
    if node.attrs.get(MVE8) and node.attrs["_q"].depthwise:
        rows = w[:y.shape[1], :16]  # the first output's lanes: the 9 weights (their sum, their bound)
        rq, out = _tables(node, k, rows, mve8_bias(node, rows))
        k.call("ember_qarm_dw3_mve8" + hwc, f"(uint8_t *){k.out(0)}", f"(const uint8_t *){k.inp(0)}",
               int(x.dtype is DType.INT8), node.attrs["_q"].x_zp, k.table(geo_table(node, g), DType.INT32), x.shape[0],
               k.inp(2), rq, out, k.scratch("int8_t"))
        return
    if node.attrs.get(MVE8):
        rows = _mve8_rows(w)[:y.shape[1]]
        rq, out = _tables(node, k, rows, mve8_bias(node, rows))
        k.call("ember_qarm_conv_mve8" + ("_add" if add else hwc), f"(uint8_t *){k.out(0)}",
               f"(const uint8_t *){k.inp(0)}", int(x.dtype is DType.INT8), node.attrs["_q"].x_zp,
               k.table(geo_table(node, g), DType.INT32), x.shape[0], y.shape[1], k.inp(2), rq, out, k.scratch("int8_t"),
               *add)
        return
    m = y.shape[1]
    if node.attrs.get(MUL8) and not node.attrs["_q"].depthwise:  # plain tables: no quads, no bias pairs
        rq, out = _tables(node, k, _mul_rows(w)[:m])
        k.call("ember_qarm_conv_mul" + ("_add" if add else hwc), f"(uint8_t *){k.out(0)}",
               f"(const uint8_t *){k.inp(0)}", int(x.dtype is DType.INT8), _zp(node, k),
               k.table(geo_table(node, g), DType.INT32), x.shape[0], m, k.inp(2), rq, out, k.scratch("int16_t"), *add)
        return
    quads = not node.attrs["_q"].depthwise and not mve and m % 4 == 0  # all rows in ember_qa_gemm4's quads
    conv = not node.attrs["_q"].depthwise and not mve
    rq, out = _tables(node, k, w[:m] if not conv else _pair_rows(w, m)[:m], mixed=quads, pairs=conv,
                      fold=conv and g.direct)
    geo = k.table(geo_table(node, g), DType.INT32)
    sgn = int(x.dtype is DType.INT8)
    if node.attrs["_q"].depthwise:
        name = "ember_qarm_dw3_mve" if mve else "ember_qarm_dw3_mul" if node.attrs.get(MUL8) else "ember_qarm_dw3"
        k.call(name + hwc, f"(uint8_t *){k.out(0)}",
               f"(const uint8_t *){k.inp(0)}", sgn, _zp(node, k), geo,
               x.shape[0], k.inp(2), rq, out, k.scratch("uint8_t" if node.attrs.get(MUL8) else "int16_t"))
        return
    k.call(("ember_qarm_conv_mve" if mve else "ember_qarm_conv") + ("_add" if add else hwc), f"(uint8_t *){k.out(0)}",
           f"(const uint8_t *){k.inp(0)}", sgn, _zp(node, k), geo,
           x.shape[0], y.shape[1], k.inp(2), rq, out, k.scratch("int16_t"), *add)


def lower_fc(node: Node, k: KernelEmitter) -> None:
    a, y = present(node.input(0)), present(node.outputs[0])
    w = present(node.input(2)).const
    mul = node.attrs.get(MUL8)
    rq, out = _tables(node, k, (_mul_rows(w) if mul else _pair_rows(w, y.shape[-1]))[:y.shape[-1]])
    rows, kk, n = math.prod(a.shape[:-1]), a.shape[-1], y.shape[-1]
    k.call("ember_qarm_fc_mul" if mul else "ember_qarm_fc", f"(uint8_t *){k.out(0)}", f"(const uint8_t *){k.inp(0)}",
           int(a.dtype is DType.INT8), _zp(node, k), rows, n, kk, k.inp(2), rq, out, k.scratch("int16_t"))
