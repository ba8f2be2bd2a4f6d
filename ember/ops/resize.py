"""Resize: every mode, coordinate transformation and rounding rule, as compile-time weight tables.

Resize is separable: ONNX's reference resizes one axis at a time, and so does ember, in the same
axis order. For each resized axis the output->input mapping (the ONNX formulas for coordinates,
nearest rounding, linear/cubic filters, antialias, exclude_outside, tf_crop_and_resize
extrapolation) is evaluated here in float64 into a small table of (input index, weight) taps;
the C kernel only applies the taps. Nearest resizes without extrapolation are pure index maps and
go through the dtype-agnostic index copy, so they work for every element type.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node, Value
from ember.ops.movement import emit_index_copy
from ember.ops.opdef import OpDef
from ember.ops.registry import register

CoeffFn = Callable[[float, float], np.ndarray]


@dataclass
class AxisPlan:
    axis: int
    in_n: int
    out_n: int
    weights: np.ndarray  # (out_n, in_n) float64
    extrapolated: np.ndarray  # (out_n,) bool: row is the extrapolation value


def _nearest(mode: str) -> CoeffFn:
    def f(ratio: float, scale: float) -> np.ndarray:
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        lo = {"round_prefer_floor": ratio <= 0.5, "round_prefer_ceil": ratio < 0.5,
              "floor": True, "ceil": False}[mode]
        return np.array([float(lo), float(not lo)])
    return f


def _linear(antialias: bool) -> CoeffFn:
    def f(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([1 - ratio, ratio])
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, start + 2 - 2 * start) - ratio) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()
    return f


def _cubic(antialias: bool, a: float) -> CoeffFn:
    def kern(x: float) -> float:
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a if x < 2 else 0.0

    def f(ratio: float, scale: float) -> np.ndarray:
        if not antialias:
            return np.array([kern(ratio + 1), kern(ratio), kern(1 - ratio), kern(2 - ratio)])
        s = min(scale, 1.0)
        start = int(np.floor(-2 / s) + 1)
        c = np.array([kern(s * (i - ratio)) for i in range(start, 2 - start)])
        return c / c.sum()
    return f


def _source_coords(ctm: str, out_n: int, in_n: int, scale: float,
                   roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Input coordinate of each output index, and which ones fall outside a tf crop."""
    y = np.arange(out_n, dtype=np.float64)
    out_w = scale * in_n
    outside = np.zeros(out_n, dtype=bool)
    if ctm == "align_corners":
        x = np.zeros(out_n) if out_w == 1 else y * (in_n - 1) / (out_w - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":
        r0, r1 = roi
        x = np.full(out_n, (r1 - r0) * (in_n - 1) / 2) if out_w == 1 else y * (r1 - r0) * (in_n - 1) / (out_w - 1)
        x = x + r0 * (in_n - 1)
        outside = (x < 0) | (x > in_n - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(out_n, -0.5) if out_w == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric":
        offset = in_n / 2 * (1 - out_n / out_w)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        raise ValueError(ctm)
    return x, outside


def _axis_weights(in_n: int, out_n: int, scale: float, fn: CoeffFn, ctm: str, roi: tuple[float, float],
                  exclude_outside: bool) -> tuple[np.ndarray, np.ndarray]:
    x, outside = _source_coords(ctm, out_n, in_n, scale, roi)
    xi = np.floor(x).astype(np.int64)
    ratios = np.where(x == xi, 1.0, x - xi)  # prefer the left pixel: ratio in (0, 1]
    coeffs = np.stack([np.asarray(fn(float(r), scale), dtype=np.float64) for r in ratios])
    n = coeffs.shape[1]
    # The n input indices nearest x, ties to the smaller (the reference's edge-padded neighbourhood).
    pad = math.ceil(n / 2)
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        off = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        off = np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    nb = (p + off)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        coeffs = np.where((nb < 0) | (nb >= in_n), 0.0, coeffs)
        sums = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(sums == 0, 1.0, sums)
    w = np.zeros((out_n, in_n))
    rows = np.repeat(np.arange(out_n), n)
    np.add.at(w, (rows, np.clip(nb, 0, in_n - 1).reshape(-1)), coeffs.reshape(-1))
    w[outside] = 0.0
    return w, outside


def _consts(v: Value | None) -> np.ndarray | None:
    if v is None or v.const is None or v.const.size == 0:
        return None
    return np.asarray(v.const).reshape(-1)


def resize_plan(node: Node) -> tuple[list[AxisPlan], tuple[int, ...]]:
    """The resized axes in the reference's order, and the output shape."""
    x = node.inputs[0]
    assert x is not None
    r, shape = x.type.rank, x.shape
    a = node.attrs
    roi_in = _consts(node.input(1))
    scales_in = _consts(node.input(2))
    sizes_in = _consts(node.input(3))
    axes = [ax + r if ax < 0 else ax for ax in a.get("axes", range(r))]
    mode = a.get("mode", "nearest")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    antialias = bool(a.get("antialias", 0))
    if mode == "nearest":
        fn = _nearest(a.get("nearest_mode", "round_prefer_floor"))
    elif mode in ("linear", "bilinear", "trilinear"):
        fn = _linear(antialias)
    elif mode in ("cubic", "bicubic"):
        fn = _cubic(antialias, float(a.get("cubic_coeff_a", -0.75)))
    else:
        raise UnsupportedOperatorError("Resize", node.name, f"mode '{mode}'")
    roi = [0.0] * r + [1.0] * r
    if roi_in is not None:
        for i, ax in enumerate(axes):
            roi[ax], roi[r + ax] = float(roi_in[i]), float(roi_in[len(axes) + i])
    scale = [1.0] * r
    out = list(shape)
    if sizes_in is not None:
        for i, ax in enumerate(axes):
            out[ax] = int(sizes_in[i])
        scale = [out[i] / shape[i] for i in range(r)]
        policy = a.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(scale[ax] for ax in axes)
            scale = [s if i in axes else 1.0 for i in range(r)]
            out = [int(s * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
    elif scales_in is not None:
        for i, ax in enumerate(axes):
            scale[ax] = float(scales_in[i])
        out = [int(scale[i] * shape[i]) for i in range(r)]
    else:
        raise ShapeError(f"node '{node.name}' (Resize): needs constant scales or sizes")
    plans = []
    for ax in axes:
        if math.isclose(scale[ax], 1.0) and out[ax] == shape[ax] and (
                ctm != "tf_crop_and_resize" or (math.isclose(roi[ax], 0.0) and math.isclose(roi[r + ax], 1.0))):
            continue  # identity along this axis, skipped as the reference does
        w, outside = _axis_weights(shape[ax], out[ax], scale[ax], fn, ctm, (roi[ax], roi[r + ax]),
                                   bool(a.get("exclude_outside", 0)))
        plans.append(AxisPlan(ax, shape[ax], out[ax], w, outside))
    return plans, tuple(out)


def _is_index_map(plans: list[AxisPlan]) -> bool:
    return all(not p.extrapolated.any() and np.all(np.sort(p.weights, axis=1)[:, -1] == 1.0)
               and np.all((p.weights != 0).sum(axis=1) == 1) for p in plans)


def _passes(node: Node) -> list[tuple[AxisPlan, tuple[int, ...], tuple[int, ...]]]:
    """Each float pass with its input and output shapes."""
    x = node.inputs[0]
    assert x is not None
    plans, _ = resize_plan(node)
    cur, res = tuple(x.shape), []
    for p in plans:
        nxt = cur[:p.axis] + (p.out_n,) + cur[p.axis + 1:]
        res.append((p, cur, nxt))
        cur = nxt
    return res


# Resize of stored integers with TFLite's arithmetic (the TFLite frontend sets it on RESIZE_BILINEAR of a
# quantized tensor whose output has the input's scale and zero point: LiteRT and TFLite Micro interpolate the
# stored integers with 10-bit fixed-point weights, ResizeBilinearInteger).
TFLITE_INTEGER = "_tflite_integer"
_TFL_KERNELS = {DType.INT8: "ember_resize_tfl_s8", DType.INT16: "ember_resize_tfl_s16"}


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tflite_bilinear_taps(n_in: int, n_out: int, align: bool, half: bool) -> np.ndarray:
    """(n_out, 3) int32: per output row its two input rows and the second one's weight in 1/1024, computed as
    TFLite's ResizeBilinearInteger and ComputeInterpolationValuesInteger do."""
    scale = ((1 << 10) * n_in + n_out // 2) // n_out
    if align and n_out > 1:
        scale = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1)
    taps = []
    for v in range(n_out):
        pos = v * scale + scale // 2 - (1 << 9) if half else v * scale
        lo = max(_c_div(pos, 1 << 10), 0)
        hi = min(_c_div(pos + (1 << 10) - 1, 1 << 10), n_in - 1)
        taps.append((lo, hi, pos - (1 << 10) * lo))
    return np.asarray(taps, np.int32).reshape(n_out, 3)


def _lower_tflite(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    kernel = _TFL_KERNELS.get(x.dtype)
    axes = [a for a in range(x.type.rank) if x.shape[a] != y.shape[a]]
    ctm = node.attrs.get("coordinate_transformation_mode", "half_pixel")
    if kernel is None or node.attrs.get("mode") != "linear" or len(axes) > 2 or (
            len(axes) == 2 and axes[1] != axes[0] + 1) or ctm not in ("asymmetric", "align_corners", "half_pixel"):
        raise UnsupportedOperatorError("Resize", node.name, f"TFLite's integer bilinear resize of {x.dtype.short} "
                                       f"{list(x.shape)} -> {list(y.shape)} ({ctm})")
    h = axes[0] if axes else x.type.rank - 1
    w = h + 1 if len(axes) == 2 else None
    align, half = ctm == "align_corners", ctm == "half_pixel"
    in_w, out_w = (x.shape[w], y.shape[w]) if w is not None else (1, 1)
    k.call(kernel, k.out(0), k.inp(0), math.prod(x.shape[:h]), x.shape[h], in_w, y.shape[h], out_w,
           math.prod(x.shape[(w if w is not None else h) + 1:]),
           k.table(tflite_bilinear_taps(x.shape[h], y.shape[h], align, half).reshape(-1), DType.INT32),
           k.table(tflite_bilinear_taps(in_w, out_w, align, half).reshape(-1), DType.INT32))


def _scratch(node: Node) -> int:
    if node.attrs.get(TFLITE_INTEGER):
        return 0
    plans, _ = resize_plan(node)
    if _is_index_map(plans):
        return 0
    inter = [math.prod(o) for _, _, o in _passes(node)[:-1]]
    return 2 * 4 * max(inter, default=0)


def _lower(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    plans, out = resize_plan(node)
    if out != y.shape:
        raise ShapeError(f"node '{node.name}' (Resize): output shape {out} disagrees with inference {y.shape}")
    if y.type.numel == 0:
        return
    if node.attrs.get(TFLITE_INTEGER):
        _lower_tflite(node, k)
        return
    if _is_index_map(plans):
        maps = [np.arange(n) for n in x.shape]
        for p in plans:
            maps[p.axis] = np.argmax(p.weights, axis=1)
        emit_index_copy(k, y, x, maps)
        return
    if x.dtype is not DType.FLOAT32:
        raise UnsupportedOperatorError("Resize", node.name, f"interpolating {x.dtype.short} (float32 only)")
    passes = _passes(node)
    half = max((math.prod(o) for _, _, o in passes[:-1]), default=0)
    bufs = [k.scratch("float"), f"({k.scratch('float')} + {half})"] if len(passes) > 1 else []
    src = k.inp(0)
    extrap = float(node.attrs.get("extrapolation_value", 0.0))
    for i, (p, shp_in, _) in enumerate(passes):
        dst = k.out(0) if i == len(passes) - 1 else bufs[i % 2]
        taps = max(1, int((p.weights != 0).sum(axis=1).max()))
        idx = np.zeros((p.out_n, taps), dtype=np.int64)
        wts = np.zeros((p.out_n, taps), dtype=np.float32)
        for j in range(p.out_n):
            nz = np.nonzero(p.weights[j])[0]
            idx[j, :len(nz)], wts[j, :len(nz)] = nz, p.weights[j, nz]
        bias = np.where(p.extrapolated, extrap, 0.0).astype(np.float32)
        k.call("ember_resize_axis_f32", dst, src, math.prod(shp_in[:p.axis]), p.in_n, p.out_n,
               math.prod(shp_in[p.axis + 1:]), taps, k.table(idx, DType.INT32), k.table(wts, DType.FLOAT32),
               k.table(bias, DType.FLOAT32))
        src = dst


def _infer(node: Node) -> list[TensorType | None]:
    x = node.inputs[0]
    assert x is not None
    return [TensorType(x.dtype, resize_plan(node)[1])]


# Inputs: (X, roi (optional), scales (optional), sizes (optional)), one of scales/sizes given. Attributes:
# mode (nearest), coordinate_transformation_mode (half_pixel), nearest_mode (round_prefer_floor), axes,
# antialias, cubic_coeff_a, exclude_outside, extrapolation_value, keep_aspect_ratio_policy.
register(OpDef("Resize", lower=_lower, scratch=_scratch, shape_inputs=(1, 2, 3), infer=_infer,
               kernels=("ember_resize_axis_f32", "ember_index_copy", "ember_copy", *_TFL_KERNELS.values())))
