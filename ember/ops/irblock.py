"""IRBlock (internal): an inverted-residual block computed band by band (kernels/irblock.c).

passes/fuse_irblock.py replaces expand 1x1 Conv -> depthwise Conv [-> project 1x1 Conv [-> Add residual]]
by one IRBlock node; each Conv's fused activation comes along as an Epilogue. Inputs:
(X, W_expand, B_expand, W_dw, B_dw, W_project, B_project, residual); the biases, the projection and the
residual may be absent (None; no projection: the block ends at the depthwise, as where Squeeze-Excitation
follows). The output has the projection's channels (else the depthwise's) at the depthwise's plane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ember.codegen.emitter import KernelEmitter, literal
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.conv import ConvGeometry, _dw_blocked_floats, _dw_padded_floats
from ember.ops.epilogue import KIND_CODES, Epilogue
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.parallel import Split, with_part_scratch
from ember.ops.registry import register

IR_ATTR = "_irblock"
# Scratch floats are rounded to whole 64-byte lines between the regions.
_LINE = 16


@dataclass(frozen=True)
class IRParams:
    geometry: ConvGeometry  # the depthwise's, whole plane (channels: the expanded width)
    band: int  # output rows per band
    expand_act: Epilogue | None = None
    dw_act: Epilogue | None = None
    project_act: Epilogue | None = None

    @property
    def rows(self) -> bool:
        """Stride 1, undilated: kernels/irblock.c's own row kernel (ember_irb_dw)."""
        g = self.geometry
        return g.strides[1:] == (1, 1) and g.dilations[1:] == (1, 1)

    def band_geometry(self, nout: int) -> ConvGeometry:
        """The depthwise of a band of `nout` output rows, as kernels/irblock.c calls it: the window rows, no
        top padding (the band holds its zero rows)."""
        g, s = self.geometry, self.geometry.strides[1]
        rows = (nout - 1) * s + (g.kernel[1] - 1) * g.dilations[1] + 1
        return replace(g, in_size=(1, rows, g.in_size[2]), out_size=(1, nout, g.out_size[2]),
                       pads_begin=(0, 0, g.pads_begin[2]))


def params(node: Node) -> IRParams:
    p = node.attrs[IR_ATTR]
    assert isinstance(p, IRParams)
    return p


def _round(n: int) -> int:
    return -(-n // _LINE) * _LINE


def _regions(node: Node) -> tuple[int, int, int, int]:
    """(expanded band floats, depthwise band floats, depthwise scratch floats, the depthwise's path: 2 the row
    kernel, 1 channel-blocked, 0 ember_dwconv_f32)."""
    p = params(node)
    g, bg = p.geometry, p.band_geometry(p.band)
    e = _round(g.channels * bg.in_size[1] * g.in_size[2])
    d = _round(g.channels * bg.out_size[1] * g.out_size[2])
    if p.rows:  # the bordered copy of one channel's rows
        return e, d, _round(bg.in_size[1] * (g.out_size[2] + g.kernel[2] - 1)), 2
    blocked = _dw_blocked_floats(node, bg, g.channels) > 0
    # A last, shorter band may take another path of the depthwise. The channel-blocked one's size is counted
    # even where ops/conv.py would not choose it: once chosen for the band, C takes it wherever it fits.
    dws = 0
    for nout in range(1, p.band + 1):
        geo = p.band_geometry(nout)
        dws = max(dws, _dw_padded_floats(geo), _blocked_need(geo) if blocked else 0)
    return e, d, _round(dws), int(blocked)


def _blocked_need(geo: ConvGeometry) -> int:
    """kernels/dwblock.c's scratch for `geo` at the widest vectors (ops/conv.py's _dw_blocked_floats, always)."""
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = geo.out_size[1:], geo.kernel[1:], geo.strides[1:], geo.dilations[1:]
    gh, gw = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    return 16 * (gh * gw + oh * ow + kh * kw + 2)


def _scratch(node: Node) -> int:
    e, d, s, _ = _regions(node)
    return (e + d + s) * 4


def _infer(node: Node) -> list[TensorType | None]:
    x, g = inp(node, 0), params(node).geometry
    wp = node.input(5)
    c = wp.shape[0] if wp is not None else g.channels
    return [typed(x.dtype, [x.shape[0], c, g.out_size[1], g.out_size[2]])]


def _act(e: Epilogue | None) -> tuple[int, str, str]:
    if e is None:
        return 0, "0.0f", "0.0f"
    return KIND_CODES[e.kind], literal(e.alpha, DType.FLOAT32), literal(e.beta, DType.FLOAT32)


def _emit(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    p = params(node)
    e, d, _, path = _regions(node)
    x, wp = node.input(0), node.input(5)
    assert x is not None
    cout = wp.shape[0] if wp is not None else p.geometry.channels
    k.call("ember_irblock_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2), k.inp(3), k.inp(4), k.inp(5), k.inp(6),
           k.inp(7), k.scratch("float"), k.table(p.geometry.table(), DType.INT32), x.shape[1], cout, p.band, lo, hi,
           e, d, path, *_act(p.expand_act), *_act(p.dw_act), *_act(p.project_act))


def _lower(node: Node, k: KernelEmitter) -> None:
    _emit(node, k, 0, params(node).geometry.out_size[1])


def _split(node: Node) -> Split | None:
    """Ranges of output rows, on any row (each part cuts its own rows into bands from its first, the last one
    shorter; whole bands measured 15% apart in MobileNetV2's 56x56 blocks): each part expands its first
    band's halo again (the only work the parts repeat) and computes every element as the one call would."""
    return Split(params(node).geometry.out_size[1], 1, (), lower=_emit)


def _flops(node: Node) -> int:
    g, x = params(node).geometry, inp(node, 0)
    total = 2 * g.channels * g.taps * g.pixels + 2 * g.channels * x.shape[1] * math.prod(g.in_size)
    wp = node.input(5)
    if wp is not None:
        total += 2 * wp.shape[0] * g.channels * g.pixels
    return total


register(OpDef(
    "IRBlock", infer=_infer, lower=_lower, scratch=with_part_scratch(_scratch, _split), split=_split,
    kernels=("ember_irblock_f32",), flops=_flops,
))
