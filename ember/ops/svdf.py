"""SvdfInteger: TFLite's full-integer SVDF step (the keyword-spotting layer), bit-exact with TFLite's
reference kernel and TFLite Micro's, on kernels/svdf.c.

Inputs: x int8 [B, I], feature weights int8 [F, I], time weights int16 (or int8) [F, M], bias int32 [F/rank]
(optional), state int16 (or int8) [B, F*M]. Outputs: y int8 [B, F/rank] and the next state (same type and
shape as the state). Attributes: rank; the zero points in_zp, state_zp, out_zp; out_scale (the output's
quantization, which its type carries); and the two fixed-point
rescales (m1, s1): features to state, (m2, s2): time-filtered sums to output, as TFLite's QuantizeMultiplier
makes them (`quantize_multiplier`).

The state keeps each filter's last M feature values, newest last, as TFLite Micro stores it: the step shifts
it left by one and appends this step's features. TFLite's integer kernel applies no fused activation (its
output is only clamped to int8), so neither does this op.
"""

from __future__ import annotations

import math

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError
from ember.ir.dtypes import DType, QuantParams, TensorType
from ember.ir.graph import Node
from ember.ops.infer import inp
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: m = q x 2^shift / 2^31 with q a 31-bit fixed-point fraction in
    [2^30, 2^31), rounded half away from zero."""
    if m == 0.0:
        return 0, 0
    frac, shift = math.frexp(m)
    q = math.floor(frac * (1 << 31) + 0.5)
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def _infer(node: Node) -> list[TensorType]:
    x, wf, wt, state = inp(node, 0), inp(node, 1), inp(node, 2), inp(node, 4)
    rank = int(node.attrs["rank"])
    if x.type.rank != 2 or wf.type.rank != 2 or wt.type.rank != 2 or wf.shape[1] != x.shape[1]:
        raise ShapeError(f"SvdfInteger {node.name}: input {list(x.shape)}, feature weights {list(wf.shape)}")
    filters, memory = wt.shape
    if wf.shape[0] != filters or rank <= 0 or filters % rank or state.shape != (x.shape[0], filters * memory):
        raise ShapeError(f"SvdfInteger {node.name}: {filters} filters, rank {rank}, state {list(state.shape)}")
    out_q = QuantParams((float(node.attrs["out_scale"]),), (int(node.attrs["out_zp"]),))
    return [TensorType(DType.INT8, (x.shape[0], filters // rank), out_q), TensorType(state.dtype, state.shape)]


def _lower(node: Node, k: KernelEmitter) -> None:
    x, wt, state = inp(node, 0), inp(node, 2), inp(node, 4)
    a = node.attrs
    wide = int(state.dtype is DType.INT16)
    st = "int16_t" if wide else "int8_t"
    k.call("ember_svdf_int", k.inp(0, "int8_t"), k.inp(1, "int8_t"), k.inp(2, "int16_t" if wt.dtype is DType.INT16
                                                                            else "int8_t"),
           k.inp(3, "int32_t"), k.inp(4, st), k.out(1, st), k.out(0, "int8_t"), x.shape[0], x.shape[1], wt.shape[0],
           wt.shape[1], int(a["rank"]), wide, int(wt.dtype is DType.INT16), int(a["in_zp"]), int(a["state_zp"]),
           int(a["m1"]), int(a["s1"]), int(a["m2"]), int(a["s2"]), int(a["out_zp"]))


def _flops(node: Node) -> int:
    x, wt = inp(node, 0), inp(node, 2)
    return 2 * x.shape[0] * wt.shape[0] * (x.shape[1] + wt.shape[1])


register(OpDef("SvdfInteger", infer=_infer, lower=_lower, kernels=("ember_svdf_int",), flops=_flops))
