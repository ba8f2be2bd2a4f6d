"""QConvShifted: an integer 2-D convolution that reads the input's zero-point-padded word planes, split
by stride phase, instead of an im2col copy (kernels/qshift.c explains the layout). The
conv_algorithms pass picks it for QConv nodes where `qconv_shifted_fits` and reorders their weights
with `shifted_weights`; it lowers through qlinear.py's QConv lowering.
"""

from __future__ import annotations

import numpy as np

from ember.ir.graph import Node
from ember.ops.conv import ConvGeometry
from ember.ops.matmul import present
from ember.ops.opdef import OpDef
from ember.ops.qlinear import QSpec, infer_qconv, lower_qconv, qconv_geometry, qpb
from ember.ops.registry import register

SHIFTED_MAX_TAPS = 64  # qshift.c EMBER_QSH_TAPS
# The planes' extra columns, and the idle lanes of the last vector, are computed and dropped: at most
# 1/SHIFTED_MAX_WASTE of the work (a 28-wide 3x3 wastes 2/30 and runs 8% faster than im2col; a 14-wide
# wastes 2/16 and gains nothing; a 1x1 of stride 2 onto 7x7 computes 64 lanes for 49 pixels and runs
# 46% slower, one onto 28x28 or 14x14 7% faster). Strided convolutions with more than one tap keep
# im2col: ResNet's 3x3 ones of stride 2 ran no faster, and their planes take more memory.
SHIFTED_MAX_WASTE = 10


def _phases(taps: int, dilation: int, stride: int) -> int:
    """How many of a dimension's stride phases some tap reads (qshift.c ember_qsh_rank)."""
    return len({t * dilation % stride for t in range(taps)})


def _plane_shape(g: ConvGeometry) -> tuple[int, int]:
    """Rows and columns of one phase plane (qshift.c ember_qsh_rows, ember_qsh_cols)."""
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = g.out_size[1:], g.kernel[1:], g.strides[1:], g.dilations[1:]
    return oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw


def qconv_shifted_takes(node: Node) -> bool:
    """Whether qshift.c can compute QConv `node`: 2-D, one group, at most SHIFTED_MAX_TAPS taps,
    requantised output without weight offsets. Channels not in fours are padded to fours (with weights of
    0). Any requantisation: where qgemm.c's float one does not hold (TFLite's rounding, sums too big), the
    kernel gathers each block from the planes for ember_qgemm_block, as it does on every ISA but AVX-512
    VNNI; a TFLite RGB stem then still skips im2col's byte-by-byte packing (0.6x its time on Zen 3)."""
    q: QSpec = node.attrs["_q"]
    if node.op != "QConv" or q.depthwise or q.requant is None or q.wofs is not None:
        return False
    g = qconv_geometry(node)
    return g.planar and int(node.attrs.get("group", 1)) == 1 and g.taps <= SHIFTED_MAX_TAPS


def qconv_shifted_fits(node: Node) -> bool:
    """Whether QConv `node` should become QConvShifted: qshift.c takes it, and it is a stride-1
    convolution with several taps and channels in fours (a 1x1's im2col is a plain copy), a strided 1x1,
    or a strided convolution whose channels are not in fours (im2col then packs byte by byte: a CNN's
    RGB stem), wasting little work (SHIFTED_MAX_WASTE)."""
    if not qconv_shifted_takes(node):
        return False
    g = qconv_geometry(node)
    taps, strided, quads = g.taps, g.strides[1:] != (1, 1), g.channels % 4 == 0
    if not (taps > 1 and not strided and quads or taps == 1 and strided and quads or strided and not quads):
        return False
    oh, ow = g.out_size[1:]
    computed = -(-oh * _plane_shape(g)[1] // 16) * 16  # positions: whole vectors over the planes' rows
    return SHIFTED_MAX_WASTE * (computed - oh * ow) <= computed


def shifted_weights(node: Node, packed: np.ndarray) -> np.ndarray:
    """QConv `node`'s packed weights (M x Kp, K in the (kh, kw, c) order for channels in fours, else
    (c, kh, kw)) -> qshift.c's (c/4, kh, kw, c%4) order, channels padded to fours with zeros."""
    q: QSpec = node.attrs["_q"]
    g = qconv_geometry(node)
    m, c, taps = packed.shape[0], g.channels, g.taps
    k = packed[:, :c * taps]
    by_channel = k.reshape(m, taps, c).transpose(0, 2, 1) if q.channels_last else k.reshape(m, c, taps)
    padded = np.zeros((m, -(-c // 4) * 4, taps), packed.dtype)
    padded[:, :c] = by_channel
    return np.ascontiguousarray(padded.reshape(m, -1, 4, taps).transpose(0, 1, 3, 2).reshape(m, -1))


def _scratch(node: Node) -> int:
    """ember_qconv_shifted: a packed block, its sums and corrections, then (64-byte aligned) the input's
    word planes (qshift.c ember_qsh_plane words, ember_qsh_planes of them per channel quad), then four
    rows of plane columns for strided fills."""
    g = qconv_geometry(node)
    quads, m = -(-g.channels // 4), present(node.outputs[0]).shape[1]
    (kh, kw), (sh, sw), (dh, dw) = g.kernel[1:], g.strides[1:], g.dilations[1:]
    kp = quads * 4 * g.taps
    rows, cols = _plane_shape(g)
    plane = rows * cols + 64 + (kw - 1) * dw // sw
    planes = _phases(kh, dh, sh) * _phases(kw, dw, sw)
    return (kp * qpb(node) + 4 * qpb(node) + 4 * m + 63) // 64 * 64 + 4 * quads * planes * plane + 4 * cols


register(OpDef("QConvShifted", lower=lower_qconv, scratch=_scratch, kernels=("ember_qconv_shifted",),
               infer=infer_qconv))
