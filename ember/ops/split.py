"""How the big kernel calls divide among threads (`--threads N`; the mechanism: ember/ops/parallel.py).

Loaded after every family (registry.FAMILIES), it sets `OpDef.split` on the operators whose one kernel
call can be cut into independent calls by pointer offsets alone, and gives their scratch one region per
part. Convolutions divide along output channels (their weights' rows, bias, output planes; a depthwise
one also its input planes); matrix products along the rows of A and of the output (or, for a batch
of products with per-batch B, along the batch; a constant B in panels bigger than A, along whole panels of its
columns). Everything is for one image (N = 1), since the output channels of several images are not one
contiguous range. A 1x1 convolution over many pixels divides along its output pixels instead (matmul columns:
pointer offsets with the whole row stride).

Winograd convolutions' transformed weights interleave the output channels with the 16 or 36 tile
positions; once divided they are stored part by part (parallel.relayout), so each part's are contiguous.
Int8 convolutions divide with their per-channel tables (QSpec) cut alike, when their input and output are
plain; those into or from channel-blocked tensors (passes/int8_layout.py) and shifted ones (ops/qshifted.py)
along their output pixels, in whole 64-pixel blocks (a range the kernels take), or on maps of few blocks
along their output channels, each part writing its channels of every block; int8 depthwise ones into or from
channel-blocked tensors along channel quads, at the whole block stride; an integer Winograd one (ops/qwino.py)
along its rows of output tiles where the map has more than one band of them, else along whole quads of output
channels, as its transformed weights are stored.
Not divided (they run on one thread): grouped non-depthwise convolutions, ConvTranspose, float16 nodes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ember.codegen.elementwise import emit_chain
from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType
from ember.ir.graph import Node, Value
from ember.ops import qwino, registry
from ember.ops.attention import split_rows
from ember.ops.conv import (
    RESIDUAL,
    ROW_PANELS,
    _conv_parts,
    _im2col_block,
    blocked_pointwise,
    conv_lay,
    lower_conv_nhwc,
    nchw_sides,
    residual_arg,
    store_nchw_output,
    winograd_parts,
)
from ember.ops.epilogue import epilogue_args
from ember.ops.matmul import _panels_dims
from ember.ops.parallel import Slice, Split, contiguous_axis, cuttable, with_part_scratch
from ember.ops.pool import channels_last
from ember.ops.qlinear import YCUT_ATTR, QSpec, lower_qconv, lower_qdwconv
from ember.ops.qwino import BOUND_ATTR
from ember.ops.shape import stored_nhwc, writes_nhwc

_NO_ACT = (0, "0.0f", "0.0f")  # kernel activation arguments: none (applied after the residual)
# Output channels per part boundary: whole row tiles of the matmul kernels and whole vectors of the
# depthwise kernels, so each part runs the code paths the whole call would.
CHANNEL_ALIGN = 8
# A convolution's fused residual (input 3, shaped as its output) is cut as its output is.
_RES = Slice(RESIDUAL, 1)
ROW_ALIGN = 4
DEPTHWISE_INT8_ALIGN = 16
# Output pixels per part boundary of a 1x1 conv divided by columns: whole strips of the widest vectors.
PIXEL_ALIGN = 32
# An im2col conv divides along its output pixels from this many on (and at least as many as its output
# channels; else along its channels); part boundaries on whole 64-pixel strips, as ember_conv_f32's blocks.
IM2COL_MIN_PIXELS = 256
IM2COL_ALIGN = 64
# An int8 convolution divided along its output pixels: whole packed blocks (qgemm.c EMBER_QPB), which are
# also a channel-blocked tensor's blocks (passes/int8_layout.py).
QPIXEL_ALIGN = 64
# ... from this many blocks on (7 of 8 threads' parts even); fewer: along its output channels.
QPIXEL_MIN_BLOCKS = 8


def _float_image(node: Node) -> bool:
    x, y = node.input(0), node.outputs[0]
    return (x is not None and y is not None and x.dtype is DType.FLOAT32 and y.dtype is DType.FLOAT32
            and x.shape[0] == 1 and cuttable(y, 1))


def _split_conv(node: Node) -> Split | None:
    if not _float_image(node) or node.input(1) is None:
        return None
    geo, group, m, depthwise, direct = _conv_parts(node)
    bias, out = Slice(2, 0), Slice(0, 1, out=True)
    lay = conv_lay(node)
    if depthwise and m == geo.channels and not lay:  # (a channels-last side's channels are no run of planes)
        return Split(m, CHANNEL_ALIGN, (Slice(0, 1), Slice(1, 0), bias, out, _RES),
                     attrs=lambda lo, hi: {"group": hi - lo})
    if group != 1 or depthwise:
        return None
    direct = direct and not lay & 1  # a channels-last input: im2col gathers it, a 1x1's too
    if lay & 2:  # a channels-last output: only a part's pixels are one run of it
        least = max(m, PIXEL_ALIGN * 4) if direct else max(m, IM2COL_MIN_PIXELS)
        if geo.pixels < least:
            return None
        return Split(geo.pixels, PIXEL_ALIGN if direct else IM2COL_ALIGN, (),
                     lower=lower_conv_nhwc)
    if direct and geo.pixels >= max(m, PIXEL_ALIGN * 4):
        # A 1x1 conv is one matmul y (M x P) = w (M x C) * x (C x P): parts of the P columns share nothing,
        # where parts of the M rows would each pack all of x for the kernel again.
        return Split(geo.pixels, PIXEL_ALIGN, (), lower=_lower_direct_columns)
    if not direct and geo.pixels >= max(m, IM2COL_MIN_PIXELS):
        # Parts of the output channels would each build the whole im2col matrix (K x P); parts of the pixels
        # build only their own columns of it, but each packs all of the weights (K x M) for the matmul:
        # pixels where they are the bigger operand.
        return Split(geo.pixels, IM2COL_ALIGN, (), lower=_lower_im2col_columns)
    return Split(m, CHANNEL_ALIGN, (Slice(1, 0), bias, out, _RES))


def _lower_im2col_columns(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Output pixels [lo, hi) of an ungrouped conv of one image: ember_conv_f32's loop over im2col blocks,
    on this part's pixels only, into this part's scratch."""
    geo, _, m, _, _ = _conv_parts(node)
    qb, kk = _im2col_block(node, geo, 1), geo.channels * geo.taps
    x, ps, _, col = nchw_sides(node, k)  # (each part copies a channels-last input it would gather tap by tap)
    tab = k.table(geo.table(), DType.INT32)
    bias = k.inp(2) if node.input(2) is not None else "0"
    k.need("ember_im2col_f32")
    q, nq = k.fresh("q0"), k.fresh("nq")
    with k.w.block(f"for (ptrdiff_t {q} = {lo}; {q} < {hi}; {q} += {qb})"):
        k.line(f"const int {nq} = {hi} - {q} < {qb} ? (int)({hi} - {q}) : {qb};")
        k.call("ember_im2col_f32", col, nq, x, geo.channels, ps, tab, q, nq)
        _matmul(node, k, f"{k.out(0)} + {q}", geo.pixels, kk, col, nq, m, nq, bias,
                _NO_ACT if node.input(RESIDUAL) is not None else epilogue_args(node))
    _residual_columns(node, k, geo.pixels, m, lo, hi)


def _matmul(node: Node, k: KernelEmitter, y: str, y_stride: int | str, kk: int, b: str, b_stride: int | str, m: int,
            n: int | str, bias: str, act: tuple[object, ...]) -> None:
    """y (m x n, rows y_stride apart) = the conv's weights (m x kk) times b (kk x n, rows b_stride apart) + bias
    (per row), then `act`: ember_matmul_f32, or its core on weights in row panels (ROW_PANELS: a conv divided
    along its pixels reads all of its weights, so they keep the layout the whole call reads)."""
    if not node.attrs.get(ROW_PANELS):
        k.call("ember_matmul_f32", y, y_stride, k.inp(1), kk, 1, b, b_stride, m, n, kk, "1.0f", bias, 1, 0, "1.0f",
               *act)
        return
    k.need("ember_matmul_core")
    args = (y, y_stride, k.inp(1), kk, 1, b, b_stride, 0, 0, m, n, kk, "1.0f", bias, 1, 0, "1.0f", 0, *act, 1)
    k.line(f"ember_matmul_core_ap({', '.join(str(a) for a in args)});")



def _lower_direct_columns(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Output pixels [lo, hi) of a 1x1, stride-1 conv: the matmul kernel on column offsets, whole row strides."""
    x, y, b = node.input(0), node.outputs[0], node.input(2)
    assert x is not None and y is not None
    c, m, p = x.shape[1], y.shape[1], hi - lo
    pixels = y.type.numel // m
    bias = k.inp(2) if b is not None else "0"
    if node.input(RESIDUAL) is not None:  # a pixel-divided conv's map is big: the residual in a pass after
        _matmul(node, k, f"{k.out(0)} + {lo}", pixels, c, f"{k.inp(0)} + {lo}", pixels, m, p, bias, _NO_ACT)
        _residual_columns(node, k, pixels, m, lo, hi)
        return
    if blocked_pointwise(node, m):  # Swish, HardSwish, ...: as the whole call runs them (conv.py)
        k.call("ember_pointwise_act_f32", f"{k.out(0)} + {lo}", pixels, f"{k.inp(0)} + {lo}", pixels, k.inp(1),
               k.inp(2) if b is not None else "0", m, c, p, *epilogue_args(node))
        return
    _matmul(node, k, f"{k.out(0)} + {lo}", pixels, c, f"{k.inp(0)} + {lo}", pixels, m, p, bias, epilogue_args(node))


def _residual_columns(node: Node, k: KernelEmitter, pixels: int, m: int, lo: int, hi: int) -> None:
    """y = act(y + residual) on columns [lo, hi) of every output channel (conv.py residual_in_tiles: the big maps
    that pixel parts are for add their residual in a pass after the product)."""
    if node.input(RESIDUAL) is None:
        return
    c = k.fresh("c")
    with k.w.block(f"for (ptrdiff_t {c} = 0; {c} < {m}; ++{c})"):
        k.call("ember_residual_act_f32", f"{k.out(0)} + {c} * {pixels} + {lo}",
               f"{k.inp(RESIDUAL)} + {c} * {pixels} + {lo}", hi - lo, *epilogue_args(node))


def _split_shifted(node: Node) -> Split | None:
    if not _float_image(node) or writes_nhwc(node):  # a channels-last output is not cut along its channels
        return None
    y = node.outputs[0]
    assert y is not None
    return Split(y.shape[1], CHANNEL_ALIGN, (Slice(1, 0), Slice(2, 0), Slice(0, 1, out=True), _RES))


def _split_narrow(node: Node) -> Split | None:
    """Weights (M/P, K, P): whole panels of P output channels (P = 32, passes/conv_algorithms.py)."""
    w = node.input(1)
    if not _float_image(node) or w is None or w.type.rank != 3 or writes_nhwc(node):  # (its output's channels cut)
        return None
    y, panel = node.outputs[0], w.shape[2]
    assert y is not None
    return Split(y.shape[1] // panel, 1,
                 (Slice(1, 0), Slice(2, 0, per_unit=panel), Slice(0, 1, out=True, per_unit=panel),
                  Slice(RESIDUAL, 1, per_unit=panel)))


# F(4x4) Winograd on maps of at least this many tiles divides into bands of tile rows.
WINOGRAD_BAND_MIN_TILES = 96
# Tiles a band holds at least: the kernel's vectors run across tiles (16 floats with AVX-512).
WINOGRAD_BAND_MIN_BAND = 16


def _split_winograd(node: Node) -> Split | None:
    """Along output channels, weights U [position][M][C] stored part by part once divided (parallel.relayout).
    But every part of the channels transforms the whole input (V, C x T x 36) again: on big maps with few
    channels (ResNet's 56x56 stage: 64 channels, 196 tiles) that is a fifth of the work, done by each thread.
    There F(4x4) divides into bands of tile rows instead: each part transforms only its band's input (and a
    2-row halo) and multiplies its band's tiles, all weights read by both."""
    u = node.input(1)
    if not _float_image(node) or u is None or not u.is_const:
        return None
    y = node.outputs[0]
    assert y is not None
    geo, _, size, tiles = winograd_parts(node)
    if size == 4 and tiles >= WINOGRAD_BAND_MIN_TILES:
        tw = -(-geo.out_size[2] // 4)
        return Split(-(-geo.out_size[1] // 4), -(-WINOGRAD_BAND_MIN_BAND // tw), (), lower=_lower_winograd4_band)
    if writes_nhwc(node):  # a channels-last output is not cut along its channels
        return None
    return Split(y.shape[1], CHANNEL_ALIGN, (Slice(1, 1, part_major=True), Slice(2, 0), Slice(0, 1, out=True), _RES))


def _lower_winograd4_band(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Tile rows [lo, hi) of an F(4x4) Winograd conv: output rows 4 lo .. 4 hi as a map of their own, read from
    the input row of their first window on (the leading pad only where that lies above the input)."""
    geo, m, _, _ = winograd_parts(node)
    (h, w), (oh, ow), pt = geo.in_size[1:], geo.out_size[1:], geo.pads_begin[1]
    r0, r1 = 4 * lo, min(4 * hi, oh)
    first = max(r0 - pt, 0)  # the band's first input row
    band = replace(geo, in_size=(1, max(h - first, 0), w), out_size=(1, r1 - r0, ow),
                   pads_begin=(0, max(pt - r0, 0), geo.pads_begin[2]))
    bias = k.inp(2) if node.input(2) is not None else "0"
    res = residual_arg(node, k)
    # A channels-last side: each band copies all of the input to NCHW (a part's scratch is its own) and stores its rows
    # NCHW in its own output copy, then transposed into its pixels of the output (one run of it)
    x, _, y, scratch = nchw_sides(node, k)
    nhwc = writes_nhwc(node)
    k.call("ember_conv_winograd4_f32", y if nhwc else f"{y} + {r0 * ow}", f"{x} + {min(first, h) * w}", k.inp(1),
           bias, res if res == "0" else f"{res} + {r0 * ow}", scratch, k.table(band.table(), DType.INT32), 1, m,
           h * w, (r1 - r0) * ow if nhwc else oh * ow, *epilogue_args(node), int(bool(node.attrs.get(ROW_PANELS))))
    store_nchw_output(node, k, y, r0 * ow, (r1 - r0) * ow)


def _split_qconv(node: Node) -> Split | None:
    """An ungrouped or depthwise int8 convolution between plain (not channel-blocked) tensors: packed weight
    rows and the per-channel tables of its spec (bias, row sums, offsets, requantisation) cut alike. One
    into or from channel-blocked tensors, or a shifted one (QConvShifted), on a big map: along its output
    pixels (_split_qpixels)."""
    x, y, q = node.input(0), node.outputs[0], node.attrs.get("_q")
    if x is None or y is None or q is None or node.attrs.get("_isa"):
        return None  # the microcontroller kernels (qarm.py): no threads there
    if q.depthwise and x.shape[1] != y.shape[1]:
        return None  # a channel multiplier: output channel m reads input channel m / multiplier
    if q.depthwise and (stored_nhwc(x) or writes_nhwc(node)):
        return None  # a channels-last side: its channels are not a part's run of planes
    if q.depthwise and (x.blocked or y.blocked):
        return _split_qdw_blocked(node)
    if writes_nhwc(node):  # channels-last output (passes/nhwc_views.py): a part's pixels are one run of it
        return _split_qpixels(node)
    blocked = not q.depthwise and (x.blocked or y.blocked)
    if (blocked or node.op == "QConvShifted") and math.prod(y.shape[2:]) >= QPIXEL_MIN_BLOCKS * QPIXEL_ALIGN:
        return _split_qpixels(node)
    if x.shape[0] != 1 or not (cuttable(y, 1) or blocked) or not cuttable(node.input(2), 0):
        return None
    if q.depthwise and not cuttable(x, 1):
        return None
    if not q.depthwise and node.attrs.get("group", 1) != 1:
        return None
    m = y.shape[1]

    def spec(lo: int, hi: int) -> dict[str, Any]:
        attrs: dict[str, Any] = {"_q": _qspec_part(q, m, lo, hi)}
        if q.depthwise:
            attrs["group"] = hi - lo
        if y.blocked:  # the part's view keeps the whole output (qlinear.py blocked_part)
            attrs.update({YCUT_ATTR: (lo, m), "_rows": hi - lo})
        return attrs

    if q.depthwise:
        # Input planes, weight rows and tables of its channels; whole 16-channel groups (qdwvnni.c's vectors).
        return Split(m, DEPTHWISE_INT8_ALIGN, (Slice(0, 1), Slice(2, 0), Slice(0, 1, out=True)), attrs=spec)
    return Split(m, CHANNEL_ALIGN, (Slice(2, 0), *_qout_slice(y)), attrs=spec)


def _split_qdw_blocked(node: Node) -> Split | None:
    """A depthwise int8 convolution into or from channel-blocked tensors (MobileNet's): along its channels in
    whole quads, each part reading and writing its quads of every block at the whole block stride (qdwconv.c's
    mb), its weight rows and per-channel tables cut. Its three code paths (qdwvnni.c's 16-channel groups,
    the AVX2 quads, the general path's channel planes) each loop over channels outermost, every channel's
    work its own: parts of the channels run those loops as they are, and read no input twice. Parts of the
    output rows would each need a row range in all three (the general path computes whole planes) and
    transform their halo rows twice. Quads, not 16-channel groups: 144 channels divide 72 + 72 where groups
    give 64 + 80 (qdwvnni.c's part of a group costs it a whole group, no more than the larger part's)."""
    x, y = node.input(0), node.outputs[0]
    assert x is not None and y is not None
    if x.shape[0] != 1 and not (x.blocked and y.blocked):
        return None  # a plain side's part is a range of one image's planes
    if not (x.blocked or cuttable(x, 1)) or not (y.blocked or cuttable(y, 1)):
        return None
    return Split(y.shape[1], 4, (), lower=_lower_qdw_channels)


def _lower_qdw_channels(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    y = node.outputs[0]
    assert y is not None
    lower_qdwconv(node, k, _qspec_part(node.attrs["_q"], y.shape[1], lo, hi), (lo, hi))


def _qout_slice(y: Value, per_unit: int = 1) -> tuple[Slice, ...]:
    """A plain int8 output's cut along its channels; none for a channel-blocked one, whose parts write into the
    whole value, each at its first channel quad with the whole block stride (qlinear.py blocked_part)."""
    return () if y.blocked else (Slice(0, 1, out=True, per_unit=per_unit),)


def _split_qpixels(node: Node) -> Split | None:
    """An int8 convolution (ember_qconv, ember_qconv_shifted) along its output pixels, in whole blocks of 64
    (EMBER_QPB): the kernel's own loop over blocks on a range of them, every block computed as the whole call
    computes it. Channel-blocked tensors hold each block's pixels of all channels together (64 * M bytes), so
    a range of blocks is one contiguous run of the output, and the loops inside a block (the packing or
    gather of its input, the tiles over all M channels of the weights) stay as they are, all weights read
    by every part. Parts of the output channels would each pack every block of the input again (and write
    with the whole block stride); but maps of few blocks divide unevenly (14x14: 196 pixels, parts of 128
    and 68), so below QPIXEL_MIN_BLOCKS blocks (and for a map of one block, 7x7) _split_qconv divides the
    channels instead."""
    y = node.outputs[0]
    assert y is not None
    pixels = math.prod(y.shape[2:])
    if pixels <= 2:
        return None  # ember_qconv's matrix-vector path
    return Split(-(-pixels // QPIXEL_ALIGN), 1, (), lower=_lower_qpixels)


def _lower_qpixels(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    y = node.outputs[0]
    assert y is not None
    pixels = math.prod(y.shape[2:])
    lower_qconv(node, k, pixels=(lo * QPIXEL_ALIGN, min(hi * QPIXEL_ALIGN, pixels)))


def _qspec_part(q: QSpec, m: int, lo: int, hi: int) -> QSpec:
    """An int8 convolution's spec for its output channels [lo, hi) of m: the per-channel tables cut alike."""

    def cut(values: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return values[lo:hi] if values is not None and len(values) == m else values

    rq = q.requant
    if rq is not None:
        rq = replace(rq, mult=cut(rq.mult), shift=cut(rq.shift))
    return replace(q, bias=cut(q.bias), rowsum=cut(q.rowsum), wofs=cut(q.wofs), requant=rq)


def _split_qwino(node: Node) -> Split | None:
    """An integer Winograd convolution (ops/qwino.py) on a map of more than one band (qwino.band_rows): along
    its rows of 2x2 output tiles (_lower_qwino_rows). On a map of one band: parts of whole output-channel quads,
    its transformed weights U[M/4][16][4][C] cut along their quads, the per-channel tables and bounds alike; a
    plain output cut alike, a channel-blocked one written by each part at its quads (qlinear.py blocked_part).
    Every channel part transforms the whole input again (ResNet-18's 2-thread bundles on one core took 1.09x
    the time of undivided ones); on one band there is no other way to divide it."""
    x, y, q = node.input(0), node.outputs[0], node.attrs.get("_q")
    if x is None or y is None or q is None:
        return None
    work = 2 * y.type.numel * 9 * x.shape[1]
    rows = qwino.tile_rows(node)
    if rows > qwino.band_rows(node):
        return Split(rows, 1, (), lower=_lower_qwino_rows, work=work)
    if x.shape[0] != 1 or not (cuttable(y, 1) or y.blocked):
        return None
    m, bound = y.shape[1], node.attrs[BOUND_ATTR]

    def spec(lo: int, hi: int) -> dict[str, Any]:
        a, b = 4 * lo, min(4 * hi, m)
        attrs = {"_q": _qspec_part(q, m, a, b), "_rows": b - a, BOUND_ATTR: bound[a:b]}
        return {**attrs, YCUT_ATTR: (a, m)} if y.blocked else attrs

    return Split(-(-m // 4), CHANNEL_ALIGN // 4, (Slice(2, 0), *_qout_slice(y, 4)), attrs=spec, work=work)


def _lower_qwino_rows(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Tile rows [lo, hi) of every image, in bands of qwino.band_rows from lo: each part transforms only its
    bands' input (and their halo rows) and reads all the weights; every tile is computed as the whole call
    computes it (exact integers, its own 2x2 outputs), so part boundaries may fall inside a band."""
    qwino.lower_qwino(node, k, (lo, hi))


# A same-shape QAdd or QMul divides into runs of whole 64-byte lines of its bytes.
QBYTES_ALIGN = 64


def _split_qbinary(node: Node) -> Split | None:
    """QAdd / QMul of two same-shape operands (or channel-blocked ones, elementwise over the padded blocks):
    the kernel on a byte range of the output and both inputs, each byte computed as the whole call does."""
    a, b, y = node.input(0), node.input(1), node.outputs[0]
    if a is None or b is None or y is None or node.attrs.get("_isa"):
        return None
    if not y.blocked and not (a.type.numel == b.type.numel == y.type.numel):
        return None
    n = y.storage_bytes
    return Split(-(-n // QBYTES_ALIGN), 1, (), lower=_lower_qbinary, work=ELEMENT_WORK * n)


def _lower_qbinary(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    y = node.outputs[0]
    assert y is not None
    a, b = lo * QBYTES_ALIGN, min(hi * QBYTES_ALIGN, y.storage_bytes)
    fn, params = ("ember_qadd", node.attrs["_qadd"]) if node.op == "QAdd" else ("ember_qmul", node.attrs["_qmul"])
    x0, x1 = node.input(0), node.input(1)
    assert x0 is not None and x1 is not None
    k.call(fn, f"{k.out(0, 'uint8_t')} + {a}", f"{k.inp(0, 'uint8_t')} + {a}", f"{k.inp(1, 'uint8_t')} + {a}", b - a,
           1, b - a, int(x0.dtype is DType.INT8), k.table(params.table(), DType.INT32))


def _split_gemm(node: Node) -> Split | None:
    a, c, y = node.input(0), node.input(2), node.outputs[0]
    if a is None or y is None or y.dtype is not DType.FLOAT32 or node.attrs.get("transA", 0):
        return None
    b = node.input(1)
    if b is None or (node.attrs.get("transB", 0) and not b.is_const):
        return None  # B transposed into scratch first: every part would do it again
    slices = [Slice(0, 0), Slice(0, 0, out=True)]
    if c is not None and c.type.rank == 2 and c.shape[0] == y.shape[0] > 1:
        slices.append(Slice(2, 0))
    return Split(y.shape[0], ROW_ALIGN, tuple(slices))


def _rows_split(node: Node, b_index: int, dtypes: tuple[DType, ...], folded: bool = False) -> Split | None:
    """A product whose B is shared by every row of A (its batch dims fold into rows): cut A's and the
    output's first non-unit axis before the last (`folded`: B is packed weights, always shared); with
    per-batch B of A's batch shape, cut the batch."""
    a, b, y = node.input(0), node.input(b_index), node.outputs[0]
    if a is None or b is None or y is None or a.dtype not in dtypes or a.type.rank < 2 or a.type.rank != y.type.rank:
        return None
    if b.type.rank < 2:
        return None
    shared = all(d == 1 for d in b.shape[:-2]) and a.shape[:-2] == y.shape[:-2]
    if folded or shared:
        axis = contiguous_axis(a.shape[:-1])
        if axis is None or not (cuttable(a, axis) and cuttable(y, axis)):
            return None
        align = ROW_ALIGN if axis == a.type.rank - 2 else 1
        return Split(a.shape[axis], align, (Slice(0, axis), Slice(0, axis, out=True)))
    if a.shape[:-2] == b.shape[:-2] == y.shape[:-2]:
        axis = contiguous_axis(a.shape[:-2])
        if axis is None or not (cuttable(a, axis) and cuttable(b, axis) and cuttable(y, axis)):
            return None
        return Split(a.shape[axis], 1, (Slice(0, axis), Slice(b_index, axis), Slice(0, axis, out=True)))
    return None


def _split_matmul(node: Node) -> Split | None:
    y = node.outputs[0]
    if y is None or y.dtype is not DType.FLOAT32:
        return None
    return _rows_split(node, 1, (DType.FLOAT32,))


def _split_matmul_panels(node: Node) -> Split | None:
    """A times constant B packed in panels (MatMulPanels): A's batch dims fold into rows. Where B is the bigger
    operand (N > M: a transformer's projections at sequence 128, B 256 x 768 to 1024 x 256 floats), along whole
    panels of its columns: each part reads its panels of B (contiguous) and all of A, where parts of the rows each
    read all of B (twice the weights' traffic, from L3, with 2 threads). Else along A's rows."""
    y, bp = node.outputs[0], node.input(1)
    if y is None or y.dtype is not DType.FLOAT32 or bp is None:
        return None
    m, n, _ = _panels_dims(node)
    if n > m and bp.shape[0] > 1:
        return Split(bp.shape[0], 1, (), lower=_lower_panel_columns)
    return _rows_split(node, 1, (DType.FLOAT32,), folded=True)


def _lower_panel_columns(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Panels [lo, hi) of B: the output's columns from lo * P on (the whole row stride), B from panel lo on."""
    m, n, kk = _panels_dims(node)
    bp = node.input(1)
    assert bp is not None
    p = bp.shape[2]
    k.need("ember_matmul_panels_f32")
    k.call("ember_matmul_panels_f32", f"{k.out(0)} + {lo * p}", n, k.inp(0), kk, 1, f"{k.inp(1)} + {lo * kk * p}", p,
           m, (hi - lo) * p, kk, "0", 0, 0, *epilogue_args(node))


def _split_qmatmul(node: Node) -> Split | None:
    b = node.input(2)
    if b is None or not b.is_const:
        return None  # a run-time B is packed per batch entry into the one scratch
    return _rows_split(node, 2, (DType.INT8, DType.UINT8), folded=True)


# An elementwise step costs about what this many matmul FLOPs do (a load, a store, a few operations where
# a matmul's FLOP is half an FMA on data in registers): 1M FLOP-equivalents = 64K element-steps.
ELEMENT_WORK = 16


def _split_elementwise(node: Node) -> Split | None:
    """An elementwise op or fused chain: along the output's first non-unit axis, by pointer offsets (inputs
    that broadcast along it are read whole); each element is computed by the same expression either way."""
    y = node.outputs[0]
    if y is None or len(node.outputs) != 1:
        return None
    if any(v is not None and v.dtype.is_storage_only for v in (*node.inputs, y)):
        return None  # sub-byte and float8 types: element offsets are not byte offsets of their own
    axis = contiguous_axis(y.shape)
    if axis is None:
        return None
    steps = len(node.attrs.get("_steps", ())) or 1
    return Split(y.shape[axis], 1, (), lower=_lower_elementwise_part, work=ELEMENT_WORK * steps * y.type.numel)


def _lower_elementwise_part(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    y = node.outputs[0]
    assert y is not None
    axis = contiguous_axis(y.shape)
    assert axis is not None
    if node.op == "FusedElementwise":
        steps = [(step, registry.get(step.op).expr) for step in node.attrs["_steps"]]
    else:
        steps = [(node, registry.get(node.op).expr)]
    emit_chain(k.ctx, [(n, e) for n, e in steps if e is not None], node.inputs, y, (axis, lo, hi))


def _rows(node: Node, before: int, ins: tuple[int, ...], outs: tuple[int, ...], work: int) -> Split | None:
    """Rows of a row-wise kernel (softmax, normalization): the first non-unit axis of input 0 before axis
    `before` (the first normalized one), cut alike in inputs `ins` and outputs `outs` where present."""
    x = node.input(0)
    if x is None or x.dtype is not DType.FLOAT32:
        return None
    axis = contiguous_axis(x.shape)
    if axis is None or axis >= before:
        return None
    slices = [Slice(i, axis) for i in ins if node.input(i) is not None]
    slices += [Slice(i, axis, out=True) for i in outs if i < len(node.outputs) and node.outputs[i] is not None]
    values = [node.input(s.index) if not s.out else node.outputs[s.index] for s in slices]
    if not all(cuttable(v, axis) and v is not None and v.shape[:axis + 1] == x.shape[:axis + 1] for v in values):
        return None
    return Split(x.shape[axis], 1, tuple(slices), work=work)


def _split_softmax(node: Node) -> Split | None:
    x = node.input(0)
    if x is None or x.type.rank == 0:
        return None
    axis = node.attrs.get("axis", -1)
    return _rows(node, axis + x.type.rank if axis < 0 else axis, (0,), (0,), ELEMENT_WORK * 4 * x.type.numel)


def _split_layernorm(node: Node) -> Split | None:
    """LayerNormalization (X, scale, bias -> Y, Mean, InvStdDev) and SkipLayerNormalization (X, skip, scale,
    bias, add_bias -> Y, Mean, InvStdDev, sum): rows of X (and skip) and of every output; scale and bias
    are per normalized element, shared."""
    x = node.input(0)
    if x is None or x.type.rank == 0:
        return None
    axis = node.attrs.get("axis", -1)
    skip = node.op == "SkipLayerNormalization"
    return _rows(node, axis + x.type.rank if axis < 0 else axis, (0, 1) if skip else (0,),
                 (0, 1, 2, 3) if skip else (0, 1, 2), ELEMENT_WORK * 4 * x.type.numel)


def _split_pool(node: Node) -> Split | None:
    """Pooling is plane by plane: whole channels of one image (not MaxPool's Indices output, whose values
    count from the whole input's start); int8 pooling (QMaxPool, QAvgPool) alike. Channels-last pools stay whole
    (their channels are not planes)."""
    x, y = node.input(0), node.outputs[0]
    ok = (DType.UINT8, DType.INT8) if node.op.startswith("Q") else (DType.FLOAT32,)
    if (x is None or y is None or x.dtype not in ok or x.shape[0] != 1 or channels_last(node) or not cuttable(x, 1)
            or not cuttable(y, 1) or any(o is not None for o in node.outputs[1:])):
        return None
    window = math.prod(node.attrs.get("kernel_shape") or x.shape[2:])
    return Split(x.shape[1], 1, (Slice(0, 1), Slice(0, 1, out=True)), work=4 * y.type.numel * window)


SPLITS = {
    "Attention": split_rows,
    "Conv": _split_conv,
    "ConvShifted": _split_shifted,
    "ConvNarrow": _split_narrow,
    "ConvWinograd": _split_winograd,
    "ConvWinograd4": _split_winograd,
    "QConv": _split_qconv,
    "QConvWinograd": _split_qwino,
    "QConvShifted": _split_qconv,
    "Gemm": _split_gemm,
    "MatMul": _split_matmul,
    "MatMulPanels": _split_matmul_panels,
    "QMatMul": _split_qmatmul,
    "Softmax": _split_softmax,
    "LogSoftmax": _split_softmax,
    "LayerNormalization": _split_layernorm,
    "SkipLayerNormalization": _split_layernorm,
    "MaxPool": _split_pool,
    "AveragePool": _split_pool,
    "LpPool": _split_pool,
    "GlobalAveragePool": _split_pool,
    "GlobalMaxPool": _split_pool,
    "QMaxPool": _split_pool,
    "QAvgPool": _split_pool,
    "QAdd": _split_qbinary,
    "QMul": _split_qbinary,
}

SPLITS.update({name: _split_elementwise for name, op in registry.OPS.items() if op.expr is not None})
SPLITS["FusedElementwise"] = _split_elementwise

for _name, _fn in SPLITS.items():
    _op = registry.OPS[_name]
    _op.split = _fn
    if _op.scratch is not None:
        _op.scratch = with_part_scratch(_op.scratch, _fn)
