"""Spatial sampling and scattering: CenterCropPad, GridSample, AffineGrid, Col2Im, RoiAlign, MaxUnpool,
DeformConv.

CenterCropPad is a strided copy (the movement helpers); the others call kernels/spatial.c, float32 (float16
through float32 copies). Sizes that set shapes (CenterCropPad's shape, AffineGrid's size, Col2Im's image and
block shapes, MaxUnpool's output_shape) are compile-time inputs; grids, boxes, offsets and indices are run-time
data, which the kernels clamp or check before any use as an address.
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import const_ints, inp, typed
from ember.ops.matmul import float16_via_f32, require_f32
from ember.ops.movement import contiguous_strides, emit_fill, emit_strided
from ember.ops.opdef import OpDef
from ember.ops.registry import register

F32 = DType.FLOAT32


def _fail(node: Node, why: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' ({node.op}): {why}")


def _shape_input(node: Node, i: int, what: str) -> list[int]:
    values = const_ints(node, i)
    if values is None:
        raise _fail(node, f"input {i} ({what}) is required")
    return values


def _check_f32(node: Node, graph: Graph) -> None:
    del graph
    require_f32(node, *[v for v in node.inputs if v is not None and v.dtype.is_float], *node.outputs)


# CenterCropPad ------------------------------------------------------------------------------------

def _crop_geometry(node: Node) -> list[tuple[int, int, int, int]]:
    """Per dim of the input: (output size, input start, output start, extent copied)."""
    x = inp(node, 0)
    rank = x.type.rank
    shape = _shape_input(node, 1, "shape")
    axes = [norm_axis(node, int(a), rank) for a in node.attrs.get("axes", range(rank))]
    if len(axes) != len(shape) or len(set(axes)) != len(axes):
        raise _fail(node, f"shape {shape} does not match the axes {axes} one to one")
    if any(s < 0 for s in shape):
        raise _fail(node, f"negative target size in {shape}")
    geo = [(d, 0, 0, d) for d in x.shape]
    for a, s in zip(axes, shape, strict=True):
        d = x.shape[a]
        if s < d:  # crop: centred, the extra element (odd difference) taken from the end
            geo[a] = (s, (d - s) // 2, 0, s)
        elif s > d:  # pad with zeros, centred the same way
            geo[a] = (s, 0, (s - d) // 2, d)
    return geo


def _infer_crop(node: Node) -> list[TensorType | None]:
    return [typed(inp(node, 0).dtype, [g[0] for g in _crop_geometry(node)])]


def _lower_crop(node: Node, k: KernelEmitter) -> None:
    x, y = inp(node, 0), node.outputs[0]
    assert y is not None
    geo = _crop_geometry(node)
    if any(g[3] != g[0] for g in geo):
        emit_fill(k, y, 0)
    xs, ys = contiguous_strides(x.shape), contiguous_strides(y.shape)
    src_off = sum(g[1] * s for g, s in zip(geo, xs, strict=True))
    dst_off = sum(g[2] * s for g, s in zip(geo, ys, strict=True))
    emit_strided(k, y, dst_off, x, src_off, [g[3] for g in geo], ys, xs)


def _eval_crop(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    geo = _crop_geometry(node)
    y = np.zeros([g[0] for g in geo], x.dtype)
    y[tuple(slice(g[2], g[2] + g[3]) for g in geo)] = x[tuple(slice(g[1], g[1] + g[3]) for g in geo)]
    return [y]


# Inputs: (input_data, shape (compile-time int64)). Attribute: axes (all).
register(OpDef("CenterCropPad", lower=_lower_crop, infer=_infer_crop, evaluate=_eval_crop, shape_inputs=(1,),
               kernels=("ember_strided_copy", "ember_copy", "ember_fill")))


# GridSample ---------------------------------------------------------------------------------------

_GS_MODES = {"nearest": 0, "linear": 1, "bilinear": 1, "cubic": 2, "bicubic": 2}
_GS_PADDING = {"zeros": 0, "border": 1, "reflection": 2}
_GS_MAX_DIMS = 3  # EMBER_GS_MAX_DIMS


def _gs_params(node: Node) -> tuple[int, int, int]:
    mode = str(node.attrs.get("mode", "linear"))
    padding = str(node.attrs.get("padding_mode", "zeros"))
    if mode not in _GS_MODES:
        raise UnsupportedOperatorError(node.op, node.name, f"mode '{mode}'")
    if padding not in _GS_PADDING:
        raise UnsupportedOperatorError(node.op, node.name, f"padding_mode '{padding}'")
    return _GS_MODES[mode], _GS_PADDING[padding], int(bool(node.attrs.get("align_corners", 0)))


def _infer_gs(node: Node) -> list[TensorType | None]:
    x, grid = inp(node, 0), inp(node, 1)
    nd = x.type.rank - 2
    if nd < 1 or grid.type.rank != nd + 2 or grid.shape[-1] != nd or grid.shape[0] != x.shape[0]:
        raise _fail(node, f"grid {list(grid.shape)} does not fit X {list(x.shape)} (N, D1.., {nd})")
    if nd > _GS_MAX_DIMS:
        raise UnsupportedOperatorError(node.op, node.name, f"{nd} spatial dims (at most {_GS_MAX_DIMS})")
    _gs_params(node)
    return [typed(x.dtype, (*x.shape[:2], *grid.shape[1:-1]))]


def _lower_gs(node: Node, k: KernelEmitter) -> None:
    x, grid = inp(node, 0), inp(node, 1)
    mode, padding, align = _gs_params(node)
    if node.outputs[0] is None or node.outputs[0].type.numel == 0:
        return
    k.call("ember_gridsample_f32", k.out(0), k.inp(0), k.inp(1), x.shape[0], x.shape[1], x.type.rank - 2,
           k.table(x.shape[2:]), math.prod(grid.shape[1:-1]), mode, padding, align)


# Inputs: (X, grid). Attributes: align_corners (0), mode (linear | nearest | cubic; opset 16's bilinear and
# bicubic too), padding_mode (zeros | border | reflection).
register(float16_via_f32(OpDef("GridSample", lower=_lower_gs, infer=_infer_gs, normalize=_check_f32,
                               kernels=("ember_gridsample_f32",))))


# AffineGrid ---------------------------------------------------------------------------------------

def _infer_affine(node: Node) -> list[TensorType | None]:
    theta = inp(node, 0)
    size = _shape_input(node, 1, "size")
    if len(size) not in (4, 5):
        raise _fail(node, f"size {size} is neither (N, C, H, W) nor (N, C, D, H, W)")
    nd = len(size) - 2
    if theta.shape != (size[0], nd, nd + 1):
        raise _fail(node, f"theta {list(theta.shape)} is not ({size[0]}, {nd}, {nd + 1})")
    if any(s < 0 for s in size):
        raise _fail(node, f"negative size {size}")
    return [typed(theta.dtype, (size[0], *size[2:], nd))]


def _lower_affine(node: Node, k: KernelEmitter) -> None:
    size = _shape_input(node, 1, "size")
    spatial = [1] * (5 - len(size)) + size[2:]
    if size[0] * math.prod(spatial) == 0:  # an empty grid (C, which the grid does not have, may be 0)
        return
    k.call("ember_affine_grid_f32", k.out(0), k.inp(0), size[0], len(size) - 2, *spatial,
           int(bool(node.attrs.get("align_corners", 0))))


# Inputs: (theta (N, 2, 3) or (N, 3, 4), size (compile-time)). Attribute: align_corners (0).
register(float16_via_f32(OpDef("AffineGrid", lower=_lower_affine, infer=_infer_affine, normalize=_check_f32,
                               shape_inputs=(1,), kernels=("ember_affine_grid_f32",))))


# Col2Im -------------------------------------------------------------------------------------------

def _col2im_geometry(node: Node) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
    """(image shape, block shape, block positions per dim, strides, leading pads, dilations)."""
    img = _shape_input(node, 1, "image_shape")
    blk = _shape_input(node, 2, "block_shape")
    nd = len(img)
    if len(blk) != nd or nd == 0:
        raise _fail(node, f"image_shape {img} and block_shape {blk} differ in length")
    strides = list(node.attrs.get("strides", [1] * nd))
    dil = list(node.attrs.get("dilations", [1] * nd))
    pads = list(node.attrs.get("pads", [0] * 2 * nd))
    if len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd:
        raise _fail(node, f"strides/dilations/pads do not fit {nd} spatial dims")
    if min(strides) < 1 or min(dil) < 1 or min(blk) < 1 or min(img) < 0 or min(pads) < 0:
        raise _fail(node, "strides, dilations and block sizes must be positive, pads and image sizes not negative")
    cols = [(img[d] + pads[d] + pads[nd + d] - dil[d] * (blk[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    if min(cols) < 1:
        raise _fail(node, f"the block {blk} does not fit the padded image {img}")
    return img, blk, cols, strides, pads[:nd], dil


def _infer_col2im(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    img, blk, cols, *_ = _col2im_geometry(node)
    if x.type.rank != 3 or x.shape[1] % math.prod(blk) or x.shape[2] != math.prod(cols):
        raise _fail(node, f"input {list(x.shape)} is not (N, C * {math.prod(blk)}, {math.prod(cols)})")
    return [typed(x.dtype, (x.shape[0], x.shape[1] // math.prod(blk), *img))]


def _lower_col2im(node: Node, k: KernelEmitter) -> None:
    y = node.outputs[0]
    assert y is not None
    if y.type.numel == 0:
        return
    img, blk, cols, strides, pads, dil = _col2im_geometry(node)
    k.call("ember_col2im_f32", k.out(0), k.inp(0), y.shape[0], y.shape[1], len(img), k.table(img), k.table(blk),
           k.table(cols), k.table(strides), k.table(pads), k.table(dil))


# Inputs: (input (N, C * prod(block), L), image_shape, block_shape (both compile-time)). Attributes:
# dilations, pads, strides.
register(float16_via_f32(OpDef("Col2Im", lower=_lower_col2im, infer=_infer_col2im, normalize=_check_f32,
                               shape_inputs=(1, 2), kernels=("ember_col2im_f32",))))


# RoiAlign -----------------------------------------------------------------------------------------

def _roi_params(node: Node) -> tuple[int, int, int, int, int]:
    mode = str(node.attrs.get("mode", "avg"))
    ctm = str(node.attrs.get("coordinate_transformation_mode", "half_pixel"))
    if mode not in ("avg", "max"):
        raise UnsupportedOperatorError(node.op, node.name, f"mode '{mode}'")
    if ctm not in ("half_pixel", "output_half_pixel"):
        raise UnsupportedOperatorError(node.op, node.name, f"coordinate_transformation_mode '{ctm}'")
    oh, ow = int(node.attrs.get("output_height", 1)), int(node.attrs.get("output_width", 1))
    sampling = int(node.attrs.get("sampling_ratio", 0))
    if oh < 1 or ow < 1 or sampling < 0:
        raise _fail(node, "output_height/width must be positive and sampling_ratio not negative")
    return oh, ow, sampling, int(ctm == "half_pixel"), int(mode == "max")


def _infer_roi(node: Node) -> list[TensorType | None]:
    x, rois, idx = inp(node, 0), inp(node, 1), inp(node, 2)
    oh, ow, *_ = _roi_params(node)
    if x.type.rank != 4 or rois.type.rank != 2 or rois.shape[1] != 4 or idx.shape != (rois.shape[0],):
        raise _fail(node, f"X {list(x.shape)}, rois {list(rois.shape)}, batch_indices {list(idx.shape)} do not "
                    "fit (N, C, H, W), (R, 4), (R)")
    if idx.dtype not in (DType.INT64, DType.INT32):
        raise _fail(node, "batch_indices must be integers")
    return [typed(x.dtype, (rois.shape[0], x.shape[1], oh, ow))]


def _normalize_roi(node: Node, graph: Graph) -> None:
    _check_f32(node, graph)
    idx = inp(node, 2)
    if idx.dtype is DType.INT32:  # the kernel reads int64; a constant int32 index list converts once, here
        if not idx.is_const:
            raise UnsupportedOperatorError(node.op, node.name, "run-time int32 batch_indices (int64 only)")
        node.inputs[2] = graph.constant(f"{idx.name}_i64", np.asarray(idx.const, np.int64))


def _lower_roi(node: Node, k: KernelEmitter) -> None:
    x, rois = inp(node, 0), inp(node, 1)
    oh, ow, sampling, half_pixel, max_mode = _roi_params(node)
    if node.outputs[0] is None or node.outputs[0].type.numel == 0:
        return
    k.call("ember_roialign_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2, "int64_t"), rois.shape[0], *x.shape,
           oh, ow, sampling, literal(float(node.attrs.get("spatial_scale", 1.0)), F32), half_pixel, max_mode)


# Inputs: (X, rois (R, 4) as x1, y1, x2, y2, batch_indices (R)). Attributes: coordinate_transformation_mode
# (half_pixel; the frontend writes output_half_pixel for opsets before 16), mode (avg | max), output_height,
# output_width (1), sampling_ratio (0: adaptive), spatial_scale (1.0).
register(float16_via_f32(OpDef("RoiAlign", lower=_lower_roi, infer=_infer_roi, normalize=_normalize_roi,
                               kernels=("ember_roialign_f32",))))


# MaxUnpool ----------------------------------------------------------------------------------------

def _unpool_shapes(node: Node) -> tuple[list[int], list[int]]:
    """(the unpooled shape the indices address, the output shape)."""
    x = inp(node, 0)
    nd = x.type.rank - 2
    kernel = list(node.attrs.get("kernel_shape", []))
    strides = list(node.attrs.get("strides", [1] * nd))
    pads = list(node.attrs.get("pads", [0] * 2 * nd))
    if nd < 1 or len(kernel) != nd or len(strides) != nd or len(pads) != 2 * nd:
        raise _fail(node, f"kernel_shape/strides/pads do not fit {nd} spatial dims")
    inferred = [*x.shape[:2], *((x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[nd + d] + kernel[d]
                                for d in range(nd))]
    out = const_ints(node, 2) if node.input(2) is not None else None
    if out is None:
        return inferred, inferred
    if len(out) != len(inferred) or any(o < i for o, i in zip(out, inferred, strict=True)):
        raise _fail(node, f"output_shape {out} is smaller than the unpooled shape {inferred}")
    return inferred, out


def _infer_unpool(node: Node) -> list[TensorType | None]:
    x, idx = inp(node, 0), inp(node, 1)
    if idx.shape != x.shape or idx.dtype is not DType.INT64:
        raise _fail(node, f"indices must be int64 of X's shape {list(x.shape)}")
    return [typed(x.dtype, _unpool_shapes(node)[1])]


def _lower_unpool(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    inferred, out = _unpool_shapes(node)
    if math.prod(out) == 0:
        return
    k.call("ember_maxunpool", k.out(0), k.inp(0), k.inp(1, "int64_t"), x.type.numel, len(inferred),
           k.table(inferred), k.table(contiguous_strides(out)), math.prod(out), x.dtype.itemsize)


def _eval_unpool(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, idx = np.asarray(xs[0]), np.asarray(xs[1]).reshape(-1)
    inferred, out = _unpool_shapes(node)
    flat = np.zeros(math.prod(inferred), x.dtype)
    keep = (idx >= 0) & (idx < flat.size)
    flat[idx[keep]] = x.reshape(-1)[keep]
    y = np.zeros(out, x.dtype)
    y[tuple(slice(0, d) for d in inferred)] = flat.reshape(inferred)
    return [y]


# Inputs: (X, I (int64 flat indices into the unpooled tensor, as MaxPool writes them), output_shape (optional,
# compile-time: the unpooled tensor sits in its leading corner)). Attributes: kernel_shape, pads, strides.
register(OpDef("MaxUnpool", lower=_lower_unpool, infer=_infer_unpool, evaluate=_eval_unpool, shape_inputs=(2,),
               kernels=("ember_maxunpool",)))


# DeformConv ---------------------------------------------------------------------------------------

def _deform_geometry(node: Node) -> tuple[list[int], list[int], list[int], list[int], int, int]:
    """(kernel, strides, leading pads, dilations, group, offset_group); checks the 2-D shapes."""
    x, w, offset = inp(node, 0), inp(node, 1), inp(node, 2)
    if x.type.rank != 4 or w.type.rank != 4:
        raise UnsupportedOperatorError(node.op, node.name, "only 2-D DeformConv (X of rank 4) is implemented")
    kernel = list(node.attrs.get("kernel_shape", w.shape[2:]))
    strides = list(node.attrs.get("strides", [1, 1]))
    pads = list(node.attrs.get("pads", [0, 0, 0, 0]))
    dil = list(node.attrs.get("dilations", [1, 1]))
    group, og = int(node.attrs.get("group", 1)), int(node.attrs.get("offset_group", 1))
    if len(kernel) != 2 or len(strides) != 2 or len(pads) != 4 or len(dil) != 2:
        raise _fail(node, "kernel_shape/strides/dilations need 2 values, pads 4")
    if list(w.shape[2:]) != kernel or min(strides) < 1 or min(dil) < 1 or min(pads) < 0:
        raise _fail(node, f"kernel_shape {kernel}, strides, dilations or pads do not fit W {list(w.shape)}")
    c, oc = x.shape[1], w.shape[0]
    if group < 1 or og < 1 or c != w.shape[1] * group or oc % group or c % og:
        raise _fail(node, f"channels: X {c}, W {list(w.shape)}, group {group}, offset_group {og} do not fit")
    oh = (x.shape[2] + pads[0] + pads[2] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    ow = (x.shape[3] + pads[1] + pads[3] - dil[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    k = kernel[0] * kernel[1]
    if offset.shape != (x.shape[0], og * k * 2, oh, ow):
        raise _fail(node, f"offset {list(offset.shape)} is not {[x.shape[0], og * k * 2, oh, ow]}")
    mask, bias = node.input(4), node.input(3)
    if mask is not None and mask.shape != (x.shape[0], og * k, oh, ow):
        raise _fail(node, f"mask {list(mask.shape)} is not {[x.shape[0], og * k, oh, ow]}")
    if bias is not None and bias.shape != (oc,):
        raise _fail(node, f"B {list(bias.shape)} is not ({oc})")
    return kernel, strides, pads[:2], dil, group, og


def _infer_deform(node: Node) -> list[TensorType | None]:
    x, w, offset = inp(node, 0), inp(node, 1), inp(node, 2)
    _deform_geometry(node)
    return [typed(x.dtype, (x.shape[0], w.shape[0], *offset.shape[2:]))]


def _lower_deform(node: Node, k: KernelEmitter) -> None:
    x, w, y = inp(node, 0), inp(node, 1), node.outputs[0]
    assert y is not None
    kernel, strides, pads, dil, group, og = _deform_geometry(node)
    if y.type.numel == 0:
        return
    geo = k.table([*strides, *pads, *dil])
    k.call("ember_deform_conv2d_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2), k.inp(3), k.inp(4), *x.shape,
           w.shape[0], *y.shape[2:], *kernel, geo, group, og)


# Inputs: (X, W, offset, B (optional), mask (optional)). Attributes: dilations, group, kernel_shape,
# offset_group, pads, strides.
register(float16_via_f32(OpDef("DeformConv", lower=_lower_deform, infer=_infer_deform, normalize=_check_f32,
                               kernels=("ember_deform_conv2d_f32",))))
