"""Operators that move, select or convert values: reshapes, transposes, concatenation, splits, slices,
gathers, pads, resizes, depth/space rearrangements, casts and (de)quantization."""

from __future__ import annotations

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.ir.dtypes import DType
from ember.ir.graph import Value
from ember.ops.resize import TFLITE_INTEGER

_MIN, _MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _to_output_shape(ctx: OpContext, v: Value, i: int = 0) -> Value:
    """A zero-copy Reshape to output i's shape (the model states it; RESHAPE's -1 already resolved)."""
    want = list(ctx.out_info(i).shape)
    if list(v.shape) == want:
        return v
    return ctx.emit("Reshape", [v, ctx.const(want, what="shape")])


def reshape(ctx: OpContext) -> None:  # also SQUEEZE, EXPAND_DIMS: the output shape says it all
    ctx.output(0, _to_output_shape(ctx, ctx.raw(0)))


def transpose(ctx: OpContext) -> None:
    perm = [int(p) for p in np.asarray(ctx.const_array(1, "permutation")).reshape(-1)]
    ctx.output(0, ctx.transpose(ctx.raw(0), tuple(perm)))


def _axis(ctx: OpContext, axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _int16_copies(ctx: OpContext, inputs: int | None = None) -> bool:
    """Every input (the first `inputs`) and the output int16 with one scale each: TFLite's int16 CONCATENATION,
    PACK and MIRROR_PAD copy the stored integers whatever the scales (no requantisation; the converter puts a
    QUANTIZE before an input whose scale differs)."""
    n = len(ctx.inputs) if inputs is None else inputs
    infos = [ctx.info(i) for i in range(n)] + [ctx.out_info()]
    return all(t.dtype is DType.INT16 and t.quant is not None and t.quant.axis is None for t in infos)


def concatenation(ctx: OpContext) -> None:
    o = ctx.options
    if _int16_copies(ctx) and o.FusedActivationFunction() == 0:
        axis = _axis(ctx, o.Axis(), ctx.raw(0).type.rank)
        ctx.output(0, ctx.emit("Concat", [ctx.raw(i) for i in range(len(ctx.inputs))], {"axis": axis}))
        return
    xs = [ctx.input(i) for i in range(len(ctx.inputs))]
    y = ctx.emit("Concat", xs, {"axis": _axis(ctx, o.Axis(), xs[0].type.rank)})
    ctx.output(0, ctx.activation(y, o.FusedActivationFunction()))


def pack(ctx: OpContext) -> None:
    out_rank = len(ctx.out_info().shape)
    axis = _axis(ctx, ctx.options.Axis(), out_rank)
    xs = []
    int16 = _int16_copies(ctx)
    for i in range(len(ctx.inputs)):
        x = ctx.raw(i) if int16 else ctx.input(i)
        shape = list(x.shape)
        xs.append(ctx.emit("Reshape", [x, ctx.const([*shape[:axis], 1, *shape[axis:]], what="unsqueeze")]))
    ctx.output(0, ctx.emit("Concat", xs, {"axis": axis}) if len(xs) > 1 else xs[0])


def unpack(ctx: OpContext) -> None:
    x = ctx.raw(0)
    axis = _axis(ctx, ctx.options.Axis(), x.type.rank)
    n = len(ctx.outputs)
    parts = ctx.emit("Split", [x, ctx.const([1] * n, what="split")], {"axis": axis}, n_out=n) if n > 1 else [x]
    for i, p in enumerate(parts):
        ctx.output(i, _to_output_shape(ctx, p, i))


def _split_outputs(ctx: OpContext, x: Value, axis: int, sizes: list[int]) -> None:
    if len(sizes) == 1:
        ctx.output(0, x)
        return
    parts = ctx.emit("Split", [x, ctx.const(sizes, what="split")], {"axis": axis}, n_out=len(sizes))
    for i, p in enumerate(parts):
        ctx.output(i, p)


def split(ctx: OpContext) -> None:  # inputs: axis, x
    x = ctx.raw(1)
    axis = _axis(ctx, int(np.asarray(ctx.const_array(0, "axis")).reshape(-1)[0]), x.type.rank)
    n = len(ctx.outputs)
    _split_outputs(ctx, x, axis, [x.shape[axis] // n] * n)


def split_v(ctx: OpContext) -> None:  # inputs: x, size_splits, axis
    x = ctx.raw(0)
    axis = _axis(ctx, int(np.asarray(ctx.const_array(2, "axis")).reshape(-1)[0]), x.type.rank)
    sizes = [int(s) for s in np.asarray(ctx.const_array(1, "size_splits")).reshape(-1)]
    if -1 in sizes:  # one size may be inferred
        sizes[sizes.index(-1)] = x.shape[axis] - sum(s for s in sizes if s != -1)
    _split_outputs(ctx, x, axis, sizes)


def slice_(ctx: OpContext) -> None:
    x = ctx.raw(0)
    begin = [int(b) for b in np.asarray(ctx.const_array(1, "begin")).reshape(-1)]
    size = [int(s) for s in np.asarray(ctx.const_array(2, "size")).reshape(-1)]
    end = [x.shape[a] if s < 0 else b + s for a, (b, s) in enumerate(zip(begin, size, strict=True))]
    y = ctx.emit("Slice", [x, ctx.const(begin, what="starts"), ctx.const(end, what="ends"),
                           ctx.const(list(range(len(begin))), what="axes")])
    ctx.output(0, y)


def strided_slice(ctx: OpContext) -> None:
    """TensorFlow's dense slice spec: the ellipsis covers the dimensions no other entry names, new axes
    consume none, shrunk axes take one element; a Slice over the input's dimensions, then a Reshape to the
    output shape (new and shrunk axes are size 1)."""
    o = ctx.options
    if hasattr(o, "Offset") and o.Offset():
        raise ctx.unsupported("the 'offset' form of STRIDED_SLICE is not supported")
    x = ctx.raw(0)
    rank = x.type.rank
    begin, end, strides = (np.asarray(ctx.const_array(i, w)).reshape(-1).tolist()
                           for i, w in ((1, "begin"), (2, "end"), (3, "strides")))
    bm, em, ellipsis, new_axis, shrink = (o.BeginMask(), o.EndMask(), o.EllipsisMask(), o.NewAxisMask(),
                                          o.ShrinkAxisMask())
    n_spec = len(begin)
    consuming = sum(1 for i in range(n_spec) if not (new_axis >> i) & 1 and not (ellipsis >> i) & 1)
    starts, ends, steps = [0] * rank, list(x.shape), [1] * rank
    dim = 0
    for i in range(n_spec):
        if (ellipsis >> i) & 1:
            dim += rank - consuming  # these dimensions stay whole
            continue
        if (new_axis >> i) & 1:
            continue
        if dim >= rank:
            raise ctx.unsupported(f"slice spec names {n_spec} entries for a rank-{rank} input")
        s = int(strides[i])
        if (shrink >> i) & 1:
            b = int(begin[i]) + (x.shape[dim] if int(begin[i]) < 0 else 0)
            starts[dim], ends[dim], steps[dim] = b, b + 1, 1
        else:
            starts[dim] = (0 if s > 0 else _MAX) if (bm >> i) & 1 else int(begin[i])
            ends[dim] = (_MAX if s > 0 else _MIN) if (em >> i) & 1 else int(end[i])
            steps[dim] = s
        dim += 1
    y = ctx.emit("Slice", [x, ctx.const(starts, what="starts"), ctx.const(ends, what="ends"),
                           ctx.const(list(range(rank)), what="axes"), ctx.const(steps, what="steps")])
    ctx.output(0, _to_output_shape(ctx, y))


def gather(ctx: OpContext) -> None:
    x = ctx.raw(0)
    o = ctx.options
    if o is not None and o.BatchDims():
        raise ctx.unsupported("GATHER with batch_dims is not supported")
    axis = _axis(ctx, o.Axis() if o is not None else 0, x.type.rank)
    ctx.output(0, ctx.emit("Gather", [x, ctx.raw(1)], {"axis": axis}))


def _pads(ctx: OpContext) -> list[int]:
    p = np.asarray(ctx.const_array(1, "paddings")).reshape(-1, 2)
    return [int(v) for v in p[:, 0]] + [int(v) for v in p[:, 1]]


def pad(ctx: OpContext) -> None:  # PAD and PADV2 (a constant value input)
    x = ctx.input(0)
    value = ctx.input(2) if ctx.has_input(2) else ctx.const(0, x.dtype.np, "value")
    ctx.output(0, ctx.emit("Pad", [x, ctx.const(_pads(ctx), what="pads"), value], {"mode": "constant"}))


def mirror_pad(ctx: OpContext) -> None:
    if ctx.options.Mode() == 0:  # REFLECT: ONNX's reflect mode (of the stored int16 integers: TFLite copies them)
        x = ctx.raw(0) if _int16_copies(ctx, inputs=1) else ctx.input(0)
        ctx.output(0, ctx.emit("Pad", [x, ctx.const(_pads(ctx), what="pads")], {"mode": "reflect"}))
        return
    # SYMMETRIC mirrors the edge element too, which Pad has no mode for: per padded axis, the reversed
    # first/last rows (Slices with step -1) concatenated around the tensor.
    y = ctx.raw(0)
    pads = _pads(ctx)
    rank = y.type.rank
    for axis in range(rank):
        begin, end, n = pads[axis], pads[rank + axis], y.shape[axis]
        if begin > n or end > n:
            raise ctx.unsupported(f"SYMMETRIC padding of {max(begin, end)} on an axis of {n}")
        parts = []
        if begin:
            parts.append(_reversed(ctx, y, axis, begin - 1, _MIN))
        parts.append(y)
        if end:
            parts.append(_reversed(ctx, y, axis, n - 1, n - 1 - end))
        if len(parts) > 1:
            y = ctx.emit("Concat", parts, {"axis": axis})
    ctx.output(0, y)


def _reversed(ctx: OpContext, v: Value, axis: int, start: int, end: int) -> Value:
    return ctx.emit("Slice", [v, ctx.const([start], what="starts"), ctx.const([end], what="ends"),
                              ctx.const([axis], what="axes"), ctx.const([-1], what="steps")])


def _same_quant(ctx: OpContext) -> bool:
    """Input 0 and the output quantized alike, one scale each (int8 or int16): the stored integers can be moved
    or interpolated as they are."""
    t, out = ctx.info(0), ctx.out_info()
    return (t.quant is not None and t.dtype in (DType.INT8, DType.INT16) and t.quant.axis is None
            and out.dtype is t.dtype and out.quant is not None and out.quant.axis is None
            and np.array_equal(t.quant.scale, out.quant.scale)
            and np.array_equal(t.quant.zero_point, out.quant.zero_point))


def _resize_bilinear(ctx: OpContext) -> None:
    """Resized along H and W of the NHWC tensor as it is (no layout Transposes)."""
    o = ctx.options
    size = [int(s) for s in np.asarray(ctx.const_array(1, "size")).reshape(-1)]
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    ctm = "align_corners" if align else "half_pixel" if half else "asymmetric"
    attrs: dict = {"mode": "linear", "coordinate_transformation_mode": ctm}
    # TFLite interpolates the stored integers (ResizeBilinearInteger) where the quantization stays
    integer = _same_quant(ctx)
    x = ctx.raw(0) if integer else ctx.input(0)
    if integer:
        attrs[TFLITE_INTEGER] = 1
    sizes = ctx.const([x.shape[0], *size, x.shape[3]], what="sizes")
    ctx.output(0, ctx.emit("Resize", [x, None, None, sizes], attrs))


def nearest_indices(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """The input row each output row of TFLite's RESIZE_NEAREST_NEIGHBOR reads (its float32 arithmetic)."""
    scale = np.float32((n_in - 1) / (n_out - 1) if align and n_out > 1 else n_in / n_out)
    pos = (np.arange(n_out, dtype=np.float32) + np.float32(0.5 if half else 0.0)) * scale
    # TfLiteRound rounds half away from zero, which for pos >= 0 is floor(pos + 0.5).
    idx = np.floor(pos + np.float32(0.5)) if align else np.floor(pos)
    return np.minimum(idx.astype(np.int64), n_in - 1)


def _resize_nearest(ctx: OpContext) -> None:
    """Nearest-neighbour resizing is a selection: one Gather of the rows, one of the columns, with TFLite's
    own index arithmetic (ONNX Resize has no mode for half_pixel_centers' rounding)."""
    o = ctx.options
    x = ctx.raw(0)  # NHWC, int8 stays int8
    size = [int(s) for s in np.asarray(ctx.const_array(1, "size")).reshape(-1)]
    align, half = bool(o.AlignCorners()), bool(o.HalfPixelCenters())
    y = x
    for axis in (1, 2):
        idx = nearest_indices(x.shape[axis], size[axis - 1], align, half)
        if not np.array_equal(idx, np.arange(x.shape[axis])):
            y = ctx.emit("Gather", [y, ctx.const(idx, what=f"rows{axis}")], {"axis": axis})
    ctx.output(0, y)


def _depth_space(op: str):
    """DEPTH_TO_SPACE / SPACE_TO_DEPTH on the NHWC tensor as it is: a Reshape that splits the block offsets out, the
    one Transpose the operator is, and a Reshape back (no layout Transposes around an NCHW DepthToSpace). TensorFlow's
    order: the block offset (i, j) is the outer part of the channel, (i * b + j) * C' + c. The stored integers move
    as they are where the quantization stays."""
    def convert(ctx: OpContext) -> None:
        b = ctx.options.BlockSize()
        x = ctx.raw(0) if _same_quant(ctx) else ctx.input(0)
        n, h, w, c = x.shape
        split = [n, h, w, b, b, c // (b * b)] if op == "DepthToSpace" else [n, h // b, b, w // b, b, c]
        y = ctx.emit("Reshape", [x, ctx.const(split, what="split")])
        y = ctx.transpose(y, (0, 1, 3, 2, 4, 5))
        ctx.output(0, ctx.emit("Reshape", [y, ctx.const(list(ctx.out_info().shape), what="shape")]))

    return convert


def cast(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Cast", [ctx.raw(0)], {"to": ctx.out_info().dtype}))


def quantize(ctx: OpContext) -> None:
    ctx.output(0, ctx.input(0))  # input() dequantizes an integer input (a requantization), output() quantizes


def dequantize(ctx: OpContext) -> None:
    t = ctx.info(0)
    data = ctx.b.const_data(ctx.inputs[0])
    if data is not None:  # float16 or int8 weights: float32 now, at compile time
        if t.quant is not None and data.dtype.kind in "iu":
            q = t.quant
            shape = [1] * data.ndim
            if q.axis is not None:
                shape[q.axis] = -1
            f = (data.astype(np.float32) - q.zero_point.reshape(shape)) * q.scale.reshape(shape)
        else:
            f = data.astype(np.float32)
        ctx.output(0, ctx.graph.constant(f"{ctx.label}_f32", f.astype(np.float32)))
        return
    v = ctx.input(0)
    ctx.output(0, v if v.dtype is DType.FLOAT32 else ctx.emit("Cast", [v], {"to": DType.FLOAT32}))


def tile(ctx: OpContext) -> None:
    reps = [int(r) for r in np.asarray(ctx.const_array(1, "multiples")).reshape(-1)]
    ctx.output(0, ctx.emit("Tile", [ctx.raw(0), ctx.const(reps, what="repeats")]))


def broadcast_to(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Expand", [ctx.raw(0), ctx.const(list(ctx.out_info().shape), what="shape")]))


def gather_nd(ctx: OpContext) -> None:
    idx = ctx.emit("Cast", [ctx.raw(1)], {"to": DType.INT64})  # GatherND's indices are int64
    ctx.output(0, ctx.emit("GatherND", [ctx.raw(0), idx], {"batch_dims": 0}))


def embedding_lookup(ctx: OpContext) -> None:  # inputs: ids, params; rows of params
    ctx.output(0, ctx.emit("Gather", [ctx.input(1), ctx.raw(0)], {"axis": 0}))


def shape(ctx: OpContext) -> None:  # shapes are static: a constant
    ctx.output(0, ctx.const(list(ctx.shape(0)), ctx.out_info().dtype.np, "shape"))


def fill(ctx: OpContext) -> None:
    ctx.output(0, ctx.emit("Expand", [ctx.input(1), ctx.const(list(ctx.out_info().shape), what="shape")]))


def zeros_like(ctx: OpContext) -> None:
    t = ctx.out_info()
    zero = int(t.quant.zero_point.reshape(-1)[0]) if t.quant is not None else 0  # real 0 of a quantized tensor
    ctx.output(0, ctx.const(np.full(t.shape, zero), t.dtype.np, "zeros"))


def densify(ctx: OpContext) -> None:
    """The loader already densified the sparse constant (loader._densify): this operator only passes it on."""
    ctx.output(0, ctx.raw(0))


def space_to_batch_nd(ctx: OpContext) -> None:
    """[N, H, W, C] padded, then each bh x bw block offset becomes a batch: Pad, Reshape to
    [N, H/bh, bh, W/bw, bw, C], Transpose to [bh, bw, N, H/bh, W/bw, C], Reshape."""
    x = ctx.raw(0)
    block = [int(b) for b in np.asarray(ctx.const_array(1, "block_shape")).reshape(-1)]
    pads = np.asarray(ctx.const_array(2, "paddings")).reshape(-1, 2)
    m, rank = len(block), x.type.rank
    if int(pads.sum()):
        full = [0] * rank * 2
        for a in range(m):
            full[1 + a], full[rank + 1 + a] = int(pads[a, 0]), int(pads[a, 1])
        x = ctx.emit("Pad", [x, ctx.const(full, what="pads"), _zero_of(ctx, 0)], {"mode": "constant"})
    n, spatial, rest = x.shape[0], x.shape[1:1 + m], list(x.shape[1 + m:])
    split = [n]
    for s, b in zip(spatial, block, strict=True):
        split += [s // b, b]
    y = ctx.emit("Reshape", [x, ctx.const(split + rest, what="split")])
    perm = [2 + 2 * a for a in range(m)] + [0] + [1 + 2 * a for a in range(m)] + list(range(1 + 2 * m, y.type.rank))
    y = ctx.transpose(y, tuple(perm))
    ctx.output(0, _to_output_shape(ctx, y))


def batch_to_space_nd(ctx: OpContext) -> None:
    """The inverse: Reshape to [bh, bw, N, H, W, C], Transpose to [N, H, bh, W, bw, C], Reshape, crop."""
    x = ctx.raw(0)
    block = [int(b) for b in np.asarray(ctx.const_array(1, "block_shape")).reshape(-1)]
    crops = np.asarray(ctx.const_array(2, "crops")).reshape(-1, 2)
    m = len(block)
    n = x.shape[0] // int(np.prod(block))
    spatial, rest = list(x.shape[1:1 + m]), list(x.shape[1 + m:])
    y = ctx.emit("Reshape", [x, ctx.const(block + [n] + spatial + rest, what="split")])
    perm = [m]
    for a in range(m):
        perm += [m + 1 + a, a]
    y = ctx.transpose(y, tuple(perm + list(range(2 * m + 1, y.type.rank))))
    y = ctx.emit("Reshape", [y, ctx.const([n] + [s * b for s, b in zip(spatial, block, strict=True)] + rest,
                                          what="merge")])
    if int(crops.sum()):
        ends = [y.shape[1 + a] - int(crops[a, 1]) for a in range(m)]
        y = ctx.emit("Slice", [y, ctx.const([int(c) for c in crops[:, 0]], what="starts"),
                               ctx.const(ends, what="ends"), ctx.const(list(range(1, 1 + m)), what="axes")])
    ctx.output(0, y)


def _zero_of(ctx: OpContext, i: int) -> Value:
    """The stored value of real 0 for input i (its zero point when quantized): what padding fills with."""
    t = ctx.info(i)
    zp = int(t.quant.zero_point.reshape(-1)[0]) if t.quant is not None else 0
    return ctx.const(zp, t.dtype.np, "zero")


CONVERTERS = {
    "RESHAPE": reshape, "SQUEEZE": reshape, "EXPAND_DIMS": reshape, "TRANSPOSE": transpose,
    "CONCATENATION": concatenation, "PACK": pack, "UNPACK": unpack, "SPLIT": split, "SPLIT_V": split_v,
    "SLICE": slice_, "STRIDED_SLICE": strided_slice, "GATHER": gather,
    "PAD": pad, "PADV2": pad, "MIRROR_PAD": mirror_pad,
    "RESIZE_BILINEAR": _resize_bilinear, "RESIZE_NEAREST_NEIGHBOR": _resize_nearest,
    "DEPTH_TO_SPACE": _depth_space("DepthToSpace"), "SPACE_TO_DEPTH": _depth_space("SpaceToDepth"),
    "CAST": cast, "QUANTIZE": quantize, "DEQUANTIZE": dequantize,
    "TILE": tile, "BROADCAST_TO": broadcast_to, "GATHER_ND": gather_nd, "EMBEDDING_LOOKUP": embedding_lookup,
    "SHAPE": shape, "FILL": fill, "ZEROS_LIKE": zeros_like, "DENSIFY": densify,
    "SPACE_TO_BATCH_ND": space_to_batch_nd, "BATCH_TO_SPACE_ND": batch_to_space_nd,
}
