"""MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool and LRN on kernels/pool.c.

The window geometry is a PoolGeometry, which the kernels read as a static int32 table (kernels/pool.c names
its entries EMBER_POOL_*).

A MaxPool (without Indices), AveragePool or GlobalAveragePool, float, int8 (QMaxPool, QAvgPool, QMean in
ops/qpointwise.py) or int16 (ops/q16.py), or an LRN may carry CHANNELS_LAST: its input and output are
[N, spatial..., C] (a TFLite model's NHWC tensors, where Transpose optimization moved the layout Transposes
through it: passes/transposes.py) and it runs on the channels-last kernels (kernels/pool.c EMBER_POOL_NHWC; LRN:
each pixel's run of channels).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.conv import CHANNELS_LAST, Dims, channels_last, dims3, same_pads_begin
from ember.ops.infer import conv_out, inp, same_as_input, typed
from ember.ops.matmul import present
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register

_MAXPOOL_TYPES = {DType.FLOAT32: "f32", DType.UINT8: "u8", DType.INT8: "s8"}


def layout_attrs(node: Node) -> dict[str, int]:
    """The attribute a node made of `node` keeps (fold_qdq's and fold_qdq16's integer pools): CHANNELS_LAST or none."""
    return {CHANNELS_LAST: 1} if channels_last(node) else {}


def spatial_dims(node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The dims a pool's window moves over: after N and C, or between them where the node is CHANNELS_LAST."""
    return tuple(shape[1:-1]) if channels_last(node) else tuple(shape[2:])


def infer_pool(node: Node) -> list[TensorType | None]:
    """[N, C, windows...] ([N, windows..., C] if CHANNELS_LAST; ceil_mode rounds the window count up); MaxPool's
    Indices (int64) alike."""
    x = inp(node, 0)
    if x.type.rank < 3:
        raise ShapeError(f"node '{node.name}' ({node.op}): input {list(x.shape)} has no spatial dims")
    spatial = conv_out(node, spatial_dims(node, x.shape), node.attrs["kernel_shape"],
                       bool(node.attrs.get("ceil_mode", 0)))
    shape = [x.shape[0], *spatial, x.shape[-1]] if channels_last(node) else [*x.shape[:2], *spatial]
    return [typed(x.dtype, shape), *[typed(DType.INT64, shape) if o is not None else None for o in node.outputs[1:2]]]


def infer_global(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    ones = [1] * (x.type.rank - 2)
    return [typed(x.dtype, [x.shape[0], *ones, x.shape[-1]] if channels_last(node) else [*x.shape[:2], *ones])]


@dataclass(frozen=True)
class PoolGeometry:
    """A pooling window's shape, 3-D (1-D and 2-D ones get leading unit dims). `table()` is the kernels'
    int32 table: the fields in this order, entry i named by pool.c's EMBER_POOL_* macros."""

    in_size: Dims
    kernel: Dims
    out_size: Dims
    strides: Dims
    dilations: Dims
    pads_begin: Dims
    pads_end: Dims

    def table(self) -> list[int]:
        return [v for dims in astuple(self) for v in dims]


def pool_geometry(node: Node) -> PoolGeometry:
    """`node`'s window geometry from its input and output shapes and its attributes (auto_pad resolved)."""
    x, y = present(node.input(0)), present(node.outputs[0])
    ins, outs = list(spatial_dims(node, x.shape)), list(spatial_dims(node, y.shape))
    r = len(ins)
    kernel = list(node.attrs["kernel_shape"])
    strides = list(node.attrs.get("strides", [1] * r))
    dil = list(node.attrs.get("dilations", [1] * r))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (o - 1) * s + (k - 1) * d + 1 - i)
                 for o, s, k, d, i in zip(outs, strides, kernel, dil, ins, strict=True)]
        begin = same_pads_begin(auto_pad, total)
        end = [t - b for t, b in zip(total, begin, strict=True)]
    elif auto_pad == "VALID":
        begin, end = [0] * r, [0] * r
    else:
        pads = list(node.attrs.get("pads", [0] * (2 * r)))
        begin, end = pads[:r], pads[r:]
    return PoolGeometry(dims3(ins, 1), dims3(kernel, 1), dims3(outs, 1), dims3(strides, 1), dims3(dil, 1),
                        dims3(begin, 0), dims3(end, 0))


def _check_rank(node: Node, types: tuple[DType, ...] = (DType.FLOAT32,)) -> None:
    x = present(node.input(0))
    if x.dtype not in types:
        raise UnsupportedOperatorError(node.op, node.name, f"element type {x.dtype.short}")
    if not 3 <= x.type.rank <= 5 and node.op in ("MaxPool", "AveragePool"):
        raise UnsupportedOperatorError(node.op, node.name, f"{x.type.rank - 2}-D input")


def _nc(node: Node) -> int:
    x = present(node.input(0))
    return x.shape[0] * x.shape[1]


def channels(node: Node) -> tuple[int, int]:
    """(N, C) of a CHANNELS_LAST pool's input."""
    x = present(node.input(0))
    return x.shape[0], x.shape[-1]


def _maxpool3s2(node: Node, geo: PoolGeometry) -> bool:
    """A float 2-D MaxPool over 3x3 windows at stride 2 without indices (kernels/pool.c ember_maxpool3s2_f32)."""
    indices = len(node.outputs) > 1 and node.outputs[1] is not None
    return (present(node.input(0)).dtype is DType.FLOAT32 and not indices and geo.in_size[0] == 1
            and geo.kernel == (1, 3, 3) and geo.strides[1:] == (2, 2) and geo.dilations == (1, 1, 1)
            and geo.pads_begin[0] == 0)


def _lower_maxpool(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    idx = k.out(1) if len(node.outputs) > 1 and node.outputs[1] is not None else "0"
    geo = pool_geometry(node)
    if channels_last(node):
        k.call(f"ember_maxpool_nhwc_{_MAXPOOL_TYPES[x.dtype]}", k.out(0), k.inp(0), k.table(geo.table(), DType.INT32),
               *channels(node))
        return
    if _maxpool3s2(node, geo):
        k.call("ember_maxpool3s2_f32", k.out(0), k.inp(0), k.table(geo.table(), DType.INT32), _nc(node))
        return
    k.call(f"ember_maxpool_{_MAXPOOL_TYPES[x.dtype]}", k.out(0), idx, k.inp(0),
           k.table(pool_geometry(node).table(), DType.INT32), _nc(node), node.attrs.get("storage_order", 0))


register(OpDef(
    "MaxPool", infer=infer_pool, lower=_lower_maxpool,
    normalize=lambda n, g: _check_rank(n, tuple(_MAXPOOL_TYPES)),
    kernels=(*(f"ember_maxpool{layout}_{s}" for s in _MAXPOOL_TYPES.values() for layout in ("", "_nhwc")),
             "ember_maxpool3s2_f32"), int8=Int8.MOVE,
))


def _whole_window(geo: PoolGeometry) -> bool:
    """One unpadded window over the whole input (TFLite's global pooling, written as AVERAGE_POOL_2D)."""
    return (geo.kernel == geo.in_size and set(geo.out_size) == {1} and set(geo.dilations) == {1}
            and not any(geo.pads_begin) and not any(geo.pads_end))


def _lower_avgpool(node: Node, k: KernelEmitter) -> None:
    geo = pool_geometry(node)
    if channels_last(node):
        k.call("ember_avgpool_nhwc_f32", k.out(0), k.inp(0), k.table(geo.table(), DType.INT32), *channels(node),
               node.attrs.get("count_include_pad", 0))
        return
    if _whole_window(geo):
        # The plane's mean in vector partial sums: the windowed kernel's bounds checks per tap and one
        # chain of dependent adds made a 25x5 window 10x slower.
        k.call("ember_global_pool_f32", k.out(0), k.inp(0), _nc(node), math.prod(geo.in_size), 0)
        return
    k.call("ember_avgpool_f32", k.out(0), k.inp(0), k.table(geo.table(), DType.INT32),
           _nc(node), node.attrs.get("count_include_pad", 0))


register(OpDef(
    "AveragePool", infer=infer_pool, lower=_lower_avgpool, normalize=lambda n, g: _check_rank(n),
    kernels=("ember_avgpool_f32", "ember_avgpool_nhwc_f32", "ember_global_pool_f32"), int8=Int8.AVERAGE,
))


def _lower_lppool(node: Node, k: KernelEmitter) -> None:
    k.call("ember_lppool_f32", k.out(0), k.inp(0), k.table(pool_geometry(node).table(), DType.INT32),
           _nc(node), literal(float(node.attrs.get("p", 2)), DType.FLOAT32))


register(OpDef(
    "LpPool", infer=infer_pool, lower=_lower_lppool, normalize=lambda n, g: _check_rank(n),
    kernels=("ember_lppool_f32",),
))


def _global(is_max: int):
    def lower(node: Node, k: KernelEmitter) -> None:
        x = present(node.input(0))
        if channels_last(node):  # only GlobalAveragePool takes CHANNELS_LAST
            n, c = channels(node)
            k.call("ember_gap_nhwc_f32", k.out(0), k.inp(0), n, math.prod(x.shape[1:-1]), c)
            return
        k.call("ember_global_pool_f32", k.out(0), k.inp(0), _nc(node), math.prod(x.shape[2:]), is_max)

    return lower


register(OpDef(
    "GlobalAveragePool", infer=infer_global, lower=_global(0), normalize=lambda n, g: _check_rank(n),
    kernels=("ember_global_pool_f32", "ember_gap_nhwc_f32"), int8=Int8.AVERAGE,
))
register(OpDef(
    "GlobalMaxPool", infer=infer_global, lower=_global(1), normalize=lambda n, g: _check_rank(n),
    kernels=("ember_global_pool_f32",), int8=Int8.SELECT,
))


def _lower_lrn(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    f32 = DType.FLOAT32
    # channels-last: every pixel a one-pixel image of C channels
    n, c, s = (math.prod(x.shape[:-1]), x.shape[-1], 1) if channels_last(node) else (
        x.shape[0], x.shape[1], math.prod(x.shape[2:]))
    k.call("ember_lrn_f32", k.out(0), k.inp(0), n, c, s,
           node.attrs["size"], literal(node.attrs.get("alpha", 1e-4), f32), literal(node.attrs.get("beta", 0.75), f32),
           literal(node.attrs.get("bias", 1.0), f32))


def _check_lrn(node: Node, graph: Graph) -> None:
    _check_rank(node)


register(OpDef(
    "LRN", infer=same_as_input, lower=_lower_lrn, normalize=_check_lrn, kernels=("ember_lrn_f32",),
))
