"""Integer element-wise and pooling kernels of folded QDQ models (made by ember/passes/fold_qdq.py), on
kernels/quant.c and kernels/qpointwise.c. All take and give int8 or uint8 tensors with compile-time
scales and zero points:

- QLut: y = table[x], 256 entries computed at compile time (sigmoid, tanh, hard-swish, relu, any
  change of scale), so it is exactly the float op between dequantize and quantize.
- QAdd / QMul: each input rescaled to the output's scale in 64-bit fixed point (QAdd computes it in
  int32 pieces, kernels/qpointwise.c).
- QAvgPool / QMean: window (or whole-plane) sums requantised with the divisor folded in.
- QMaxPool: 2-D MaxPool on the bytes (the scale unchanged), over rows then columns.

Each op's parameters (made by fold_qdq_ops.py) are one of the dataclasses below, in its own attribute;
those the kernels read as an int32 table name its entries as the C macros there do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType
from ember.ir.graph import Node
from ember.ops.infer import broadcast_infer, same_as_input
from ember.ops.matmul import present
from ember.ops.opdef import OpDef
from ember.ops.pool import channels, channels_last, infer_global, infer_pool, pool_geometry
from ember.ops.registry import register


@dataclass(frozen=True)
class QOut:
    """An integer result's zero point and clamp [lo, hi] (the byte type's range, or narrower where an
    activation was folded in): quant.c's `out` tables, entries EMBER_QOUT_ZP, _LO, _HI."""

    zp: int
    lo: int
    hi: int

    def table(self) -> list[int]:
        return [self.zp, self.lo, self.hi]


@dataclass(frozen=True)
class QAddParams:
    """QAdd (attribute `_qadd`): y = out.zp + round_half_even(((a - za) * ma + (b - zb) * mb) * 2^-shift),
    clamped to [out.lo, out.hi]; Sub has mb < 0. Table: qpointwise.c's EMBER_QADD_* entries."""

    za: int
    zb: int
    ma: int
    mb: int
    shift: int
    out: QOut
    # TFLite's ADD/SUB instead (shift = 64, quant.c EMBER_Q_TFL): [Ma, ka, Mb, kb, My, ky, sub], each input
    # minus its zero point times 2^20 requantised by (M, k), the sum (difference) by (My, ky)
    tflite: tuple[int, ...] = ()

    def table(self) -> list[int]:
        return [self.za, self.zb, self.ma, self.mb, self.shift, *self.out.table(), *self.tflite]


@dataclass(frozen=True)
class QMulParams:
    """QMul (attribute `_qmul`): y = out.zp + round_half_even((a - za) * (b - zb) * mult * 2^-shift),
    clamped. Table: quant.c's EMBER_QMUL_* entries."""

    za: int
    zb: int
    mult: int
    shift: int
    out: QOut

    def table(self) -> list[int]:
        return [self.za, self.zb, self.mult, self.shift, *self.out.table()]


@dataclass(frozen=True)
class QAvgPoolParams:
    """QAvgPool (attribute `_qpool`): the window sum of x - zx times mult[n] * 2^-shift[n], n the window's
    divisor (entry 0 unused), so each count of taps has its own multiplier."""

    zx: int
    mult: tuple[int, ...]
    shift: tuple[int, ...]
    out: QOut


@dataclass(frozen=True)
class QMeanParams:
    """QMean (attribute `_qmean`): the plane's sum of x - zx times mult * 2^-shift (the size folded in)."""

    zx: int
    mult: int
    shift: int
    out: QOut


@dataclass(frozen=True)
class QLutTable:
    """QLut (attribute `_lut`): y = values[x], indexed by x's byte (int8 -1 is entry 255)."""

    values: tuple[int, ...]  # 256 bytes


def _sgn(node: Node) -> int:
    return int(present(node.input(0)).dtype is DType.INT8)


def _bytes(k: KernelEmitter, i: int) -> str:
    return k.inp(i, "uint8_t")


def _lower_lut(node: Node, k: KernelEmitter) -> None:
    lut: QLutTable = node.attrs["_lut"]
    tab = k.table(np.asarray(lut.values, np.uint8), DType.UINT8)
    k.call("ember_qlut", k.out(0, "uint8_t"), _bytes(k, 0), present(node.outputs[0]).type.numel, tab)


register(OpDef("QLut", infer=same_as_input, lower=_lower_lut, inplace=True, kernels=("ember_qlut",)))


def broadcast_args(node: Node) -> tuple[int, int]:
    """(b_div, b_mod): element i of the output reads b[(i / b_div) % b_mod] (see ember_qadd)."""
    y, b = present(node.outputs[0]), present(node.input(1))
    n = y.type.numel
    if b.type.numel == n:
        return 1, n
    if b.type.numel == 1:
        return 1, 1
    # b is one axis of y (per-channel constants): its extent and the product of the dims after it.
    shape = (1,) * (y.type.rank - b.type.rank) + b.shape
    axis = next(i for i, s in enumerate(shape) if s != 1)
    return math.prod(y.shape[axis + 1:]), shape[axis]


def _lower_binary(fn: str, attr: str):
    def lower(node: Node, k: KernelEmitter) -> None:
        y = present(node.outputs[0])
        params: QAddParams | QMulParams = node.attrs[attr]
        # blocked: inputs and output alike (passes/int8_layout.py), elementwise over the padded blocks
        div, mod = (1, y.storage_bytes) if y.blocked else broadcast_args(node)
        k.call(fn, k.out(0, "uint8_t"), _bytes(k, 0), _bytes(k, 1), y.storage_bytes, div, mod, _sgn(node),
               k.table(params.table(), DType.INT32))

    return lower


register(OpDef("QAdd", infer=broadcast_infer(0), lower=_lower_binary("ember_qadd", "_qadd"), inplace=True,
               kernels=("ember_qadd",)))
register(OpDef("QMul", infer=broadcast_infer(0), lower=_lower_binary("ember_qmul", "_qmul"), inplace=True,
               kernels=("ember_qmul",)))


def _lower_maxpool(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    if channels_last(node):  # the max of the bytes as their type orders them
        k.call(f"ember_maxpool_nhwc_{'s8' if x.dtype is DType.INT8 else 'u8'}", k.out(0), k.inp(0),
               k.table(pool_geometry(node).table(), DType.INT32), *channels(node))
        return
    k.call("ember_qmaxpool", k.out(0, "uint8_t"), _bytes(k, 0), k.table(pool_geometry(node).table(), DType.INT32),
           x.shape[0] * x.shape[1], _sgn(node), k.scratch())


def _maxpool_row(node: Node) -> int:
    """ember_qmaxpool's scratch: the padded row and its stride phases (2 * sw * ember_qmaxpool_phase
    bytes), or on AVX-512 (strides 1 and 2) EMBER_QMP_ROWS = 8 rows in whole vectors (ember_qmaxpool_vrow)."""
    g = pool_geometry(node)
    ow, kw, sw, dw = g.out_size[2], g.kernel[2], g.strides[2], g.dilations[2]
    phases = 2 * sw * (((ow - 1) * sw + (kw - 1) * dw + sw) // sw)
    vectors = 8 * (((ow - 1) // (64 // sw) * 64 + (kw - 1) * dw + 127) // 64 * 64) if sw <= 2 else 0
    return max(phases, vectors)


register(OpDef("QMaxPool", infer=infer_pool, lower=_lower_maxpool, scratch=_maxpool_row,
               kernels=("ember_qmaxpool", "ember_maxpool_nhwc_s8", "ember_maxpool_nhwc_u8")))


def _lower_avgpool(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    q: QAvgPoolParams = node.attrs["_qpool"]
    tables = (k.table(q.mult, DType.INT32), k.table(q.shift, DType.INT32), k.table(q.out.table(), DType.INT32))
    if channels_last(node):
        k.call("ember_qavgpool_nhwc", k.out(0, "uint8_t"), _bytes(k, 0), k.table(pool_geometry(node).table(),
               DType.INT32), *channels(node), _sgn(node), q.zx, int(node.attrs.get("count_include_pad", 0)), *tables)
        return
    k.call("ember_qavgpool", k.out(0, "uint8_t"), _bytes(k, 0), k.table(pool_geometry(node).table(), DType.INT32),
           x.shape[0] * x.shape[1], _sgn(node), q.zx, int(node.attrs.get("count_include_pad", 0)), *tables)


register(OpDef("QAvgPool", infer=infer_pool, lower=_lower_avgpool, kernels=("ember_qavgpool", "ember_qavgpool_nhwc")))


def _lower_mean(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    q: QMeanParams = node.attrs["_qmean"]
    if channels_last(node):
        n, c = channels(node)
        k.call("ember_qmean_nhwc", k.out(0, "uint8_t"), _bytes(k, 0), n, math.prod(x.shape[1:-1]), c, _sgn(node),
               q.zx, q.mult, q.shift, k.table(q.out.table(), DType.INT32))
        return
    k.call("ember_qmean", k.out(0, "uint8_t"), _bytes(k, 0), x.shape[0] * x.shape[1], math.prod(x.shape[2:]),
           _sgn(node), q.zx, q.mult, q.shift, k.table(q.out.table(), DType.INT32))


register(OpDef("QMean", infer=infer_global, lower=_lower_mean, kernels=("ember_qmean", "ember_qmean_nhwc")))
