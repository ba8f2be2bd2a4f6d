"""QConvWinograd: an integer 3x3, stride-1 2-D convolution computed as Winograd F(2x2, 3x3), exactly in integers
(kernels/qwino.c). The conv_algorithms pass picks it for QConv nodes where `qconv_wino_fits` (the CPU family's
threshold) and `wino_weights` proves the sums fit; the weights become U' = (2G) g (2G)^T, 16 x M x C int16.

Exactness. The kernel transforms d = x - x_zp (|d| <= 255; padding is the zero point, so d = 0) into
V = B^T d B (|V| <= 4 * 255, int16), multiplies int16 pairs into int32 (VPMADDWD: a pair's sum is at most
2 * 1020 * |U'| < 2^31, never wrapping), and sums over channels and the output transform A^T Z A modulo 2^32.
All of that is ring arithmetic, so its result is 4 y mod 2^32, y the convolution's exact sum: where
|4 y| < 2^31 for every input, the int32 read of the result is 4 y itself and the shift by 2 is exact. The proof
is per output channel: 4 * 255 * sum |w| < 2^31 (`sums_fit`); a layer that fails it keeps QConv's kernels.
Bias and requantisation then go through qgemm.c's ember_qstore, as QConv's sums do, so the outputs are
QConv's bit for bit (the float requantisation's bound is QConv's: the sums are the same numbers).
"""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops.matmul import present
from ember.ops.opdef import OpDef
from ember.ops.qlinear import QSpec, _out_args, _table, _zp_arg, blocked_part, infer_qconv, qconv_geometry
from ember.ops.registry import register

G2 = np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]], np.int64)  # 2G: integer
BOUND_ATTR = "_wino_bound"  # per output channel: the largest |sum + bias| (QConv's packed_bound)
# Tiles per band (kernels/qwino.c): the band's transformed input, 64 * C bytes per tile, stays in a 512 KiB L2
# (about 256 KiB: at most 8192 / C tiles), at least 16 tiles (two vectors) and at most 128.
BAND_BYTES = 8192


def qconv_wino_takes(node: Node) -> bool:
    """Whether qwino.c can compute QConv `node`: 2-D, one group, not depthwise, a 3x3 kernel of stride 1 and
    dilation 1, on a host (no microcontroller kernel chosen)."""
    if node.op != "QConv" or node.attrs.get("_isa"):
        return False
    q: QSpec = node.attrs["_q"]
    x = present(node.input(0))
    if q.depthwise or int(node.attrs.get("group", 1)) != 1 or x.type.rank != 4 or x.blocked:
        return False
    g = qconv_geometry(node)
    return g.kernel[1:] == (3, 3) and g.strides[1:] == (1, 1) and g.dilations[1:] == (1, 1)


def real_weights(node: Node) -> np.ndarray:
    """QConv `node`'s integer weights w - w_zp as (M, C, 3, 3) int64, from its packed rows and offsets."""
    q: QSpec = node.attrs["_q"]
    packed = np.asarray(present(node.input(2)).const, np.int64)
    c, m = qconv_geometry(node).channels, packed.shape[0]
    k = packed[:, :c * 9]
    w = k.reshape(m, 9, c).transpose(0, 2, 1) if q.channels_last else k.reshape(m, c, 9)
    if q.wofs is not None:
        w = w + np.asarray(q.wofs, np.int64)[:, None, None]
    return w.reshape(m, c, 3, 3)


def sums_fit(w: np.ndarray) -> bool:
    """The compile-time proof (module docstring): |4 y| < 2^31 for every output channel and any 8-bit input."""
    return bool(np.all(4 * 255 * np.abs(w).reshape(w.shape[0], -1).sum(axis=1) < 2**31))


def wino_weights(w: np.ndarray) -> np.ndarray:
    """(M, C, 3, 3) integer weights -> qwino.c's U[M/4][16][4][Cp] int16 (M padded to 4, C to 2, with 0s)."""
    m, c = w.shape[:2]
    u = np.einsum("ik,mckl,jl->ijmc", G2, w.astype(np.int64), G2).reshape(16, m, c)
    assert np.abs(u).max(initial=0) <= 32767  # |U'| <= 9 * 255
    mp, cp = -(-m // 4) * 4, -(-c // 2) * 2
    padded = np.zeros((16, mp, cp), np.int64)
    padded[:, :m, :c] = u
    return np.ascontiguousarray(padded.reshape(16, mp // 4, 4, cp).transpose(1, 0, 2, 3).astype(np.int16))


def band_rows(node: Node) -> int:
    """R, the tile rows of one band."""
    g = qconv_geometry(node)
    (oh, ow), c = g.out_size[1:], g.channels
    th, tw = (oh + 1) // 2, (ow + 1) // 2
    nt = min(128, max(16, BAND_BYTES // max(c, 1)))
    return max(1, min(th, nt // tw))


def scratch_bytes(node: Node) -> int:
    """qwino.c's scratch: the band's Vb and Zb, a channel pair's padded rows, output rows, M corrections."""
    g = qconv_geometry(node)
    ow, c = g.out_size[2], g.channels
    tw, r, m = (ow + 1) // 2, band_rows(node), present(node.outputs[0]).shape[1]
    ntp = (r * tw + 7) // 8 * 8
    return 64 * ((c + 1) // 2) * ntp + 256 * ntp + 8 * (2 * r + 2) * (tw + 1) + 64 * ntp + 32 * (2 * tw + 16) + 4 * m


def tile_rows(node: Node) -> int:
    """TH, the rows of 2x2 output tiles."""
    return (qconv_geometry(node).out_size[1] + 1) // 2


def lower_qwino(node: Node, k: KernelEmitter, rows: tuple[int, int] | None = None) -> None:
    """`rows`: only the tile rows [t0, t1) (a thread's part, ops/split.py), in bands of band_rows from t0."""
    q: QSpec = node.attrs["_q"]
    x, y = present(node.input(0)), present(node.outputs[0])
    t0, t1 = rows if rows is not None else (0, tile_rows(node))
    geo = k.table(qconv_geometry(node).table(), DType.INT32)
    mult, shift, out = _out_args(k, q, np.asarray(node.attrs[BOUND_ATTR], np.float64), None)
    y_ptr, m, my = blocked_part(node, k)
    k.call("ember_qconv_wino", y_ptr, "0" if q.requant is None else "1", k.inp(0), int(x.dtype is DType.INT8),
           _zp_arg(node, k, q), geo, x.shape[0], m, k.inp(2), _table(k, q.bias), mult, shift, out,
           band_rows(node), int(x.blocked) | 2 * int(y.blocked), k.scratch(), my, t0, t1)


register(OpDef("QConvWinograd", lower=lower_qwino, scratch=scratch_bytes, kernels=("ember_qconv_wino",),
               infer=infer_qconv))
