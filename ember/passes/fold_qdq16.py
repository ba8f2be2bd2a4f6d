"""Fold a TFLite 16x8 model's QDQ form into TFLite's int16 integer kernels (ops/q16.py).

The TFLite frontend states int16 activation tensors as DequantizeLinear / QuantizeLinear pairs around
float canonical ops, like int8 ones, and marks each QuantizeLinear with TFLite's rounding. fold_qdq's
integer kernels take bytes only; this pass takes the int16 patterns whose QuantizeLinear carries that
mark, so only TFLite models' int16 tensors change path:

- int16 <-> int8 requantisation (QUANTIZE) -> Q16Requant
- Conv / Gemm (+ a fused clamping activation) with constant int8 weights and an int64 (or int32) bias ->
  Q16Conv; AveragePool / MaxPool -> Q16AvgPool / Q16MaxPool; GlobalAveragePool (MEAN) -> Q16Mean;
  Add / Sub / Mul (+ a clamping activation) -> Q16Binary; int16 -> int16 requantisation, Relu, Clip (RELU6)
  -> Q16Binary (a MUL by 1, clamped)
- ReduceSum / ReduceMean / ReduceMax / ReduceMin over constant axes -> Q16Reduce; Abs -> Q16Binary (op 4);
  MatMul of two int16 tensors (BATCH_MATMUL) -> Q16MatMul
- Max / Min (MAXIMUM / MINIMUM), a zero-padding Pad, Slice and Split (SLICE, STRIDED_SLICE, SPLIT, SPLIT_V)
  whose inputs and outputs share one scale -> the same op on the int16 tensors (TFLite compares and
  copies the stored integers)
- movement ops (Reshape, Transpose, MaxPool, Concat, ...) whose inputs and output share one scale -> the
  same op on the int16 tensors

What is left stays a float op between DequantizeLinear and QuantizeLinear (correct, within a step of
TFLite). Runs before fold_qdq, which turns the constant DequantizeLinear nodes nobody took into floats.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops import q16, registry
from ember.ops.epilogue import EPILOGUE_ATTR, epilogue_of
from ember.ops.opdef import Int8
from ember.ops.pool import channels_last, layout_attrs, spatial_dims
from ember.ops.q16 import INT16_MAX, INT16_MIN, Q16Geometry, Q16Spec, broadcast_of, q15_multiplier
from ember.ops.qlinear import DOUBLE, SINGLE, tflite_multiplier
from ember.passes.fold_qdq_ops import DQ, Q, dq_of, q_of, replace

Uses = dict[int, list[Node]]  # value id -> the nodes that read it
Folder = Callable[[Graph, Node, Uses], None]


def fold_qdq16(graph: Graph, simd: bool = False) -> None:
    """`simd`: the convolutions run ember_q16_conv_v (a host or Linux target), else the portable kernel."""
    if not any(_tflite_int16(n) for n in graph.nodes):
        return  # no int16 tensor of a TFLite model: nothing to look at (the per-node scan below is quadratic)
    folders = _folders(simd)
    for node in list(graph.nodes):
        if not any(n is node for n in graph.nodes) or node.outputs[0] is None:
            continue
        fold = folders.get(node.op)
        if fold is None and registry.get(node.op).int8 in (Int8.MOVE, Int8.CONCAT):
            fold = _fold_move
        if fold is not None:
            fold(graph, node, graph.consumers())


def _tflite_int16(n: Node) -> bool:
    """A QuantizeLinear of TFLite's rounding to int16, or one from an int16 DequantizeLinear."""
    if n.op != "QuantizeLinear" or not n.attrs.get("_rounding") or n.outputs[0] is None:
        return False
    src = n.inputs[0].producer if n.inputs[0] is not None else None
    return n.outputs[0].dtype is DType.INT16 or (
        src is not None and src.op == "DequantizeLinear" and src.inputs[0] is not None
        and src.inputs[0].dtype is DType.INT16)


def _folders(simd: bool) -> dict[str, Folder]:
    """op -> the folder that looks at its int16 pattern (the movement ops without one of their own:
    _fold_move, by the registry's Int8.MOVE / Int8.CONCAT)."""
    linear = functools.partial(_fold_linear, simd=simd)
    table: dict[str, Folder] = {"Conv": linear, "Gemm": linear}
    for ops, fold in ((("AveragePool", "MaxPool"), _fold_pool), (("GlobalAveragePool",), _fold_mean),
                      (("Relu", "Clip"), _fold_relu), (("Max", "Min"), _fold_minmax), (("Pad",), _fold_pad),
                      (("Slice", "Split"), _fold_select), (("DequantizeLinear",), _fold_requantize),
                      (("Add", "Sub", "Mul"), _fold_binary), (tuple(_REDUCE_KINDS), _fold_reduce),
                      (("Abs",), _fold_abs), (("MatMul",), _fold_matmul)):
        table.update(dict.fromkeys(ops, fold))
    return table


def _q16(graph: Graph, v: Value | None, uses: Uses) -> Q | None:
    """The int16 QuantizeLinear with TFLite's rounding (zero point 0) that alone reads v."""
    if v is None or graph.is_output(v):
        return None
    users = uses.get(id(v), [])
    if len(users) != 1 or users[0].op != "QuantizeLinear" or users[0].inputs[0] is not v:
        return None
    node = users[0]
    s, z, out = node.input(1), node.input(2), node.outputs[0]
    if (out is None or out.dtype is not DType.INT16 or not node.attrs.get("_rounding") or s is None
            or not s.is_const or s.type.numel != 1 or (z is not None and (not z.is_const or np.any(z.const)))):
        return None
    return Q(node, out, np.float32(np.asarray(s.const).reshape(-1)[0]), 0)


def _x16(v: Value | None, const: bool = False) -> DQ | None:
    """A run-time (`const`: or constant) int16 tensor with one scale and zero point 0, read through a
    DequantizeLinear."""
    d = dq_of(v)
    if d is None or d.q.dtype is not DType.INT16 or (d.q.is_const and not const) or not d.per_tensor or d.zp[0]:
        return None
    return d


def _bound(q: Q, real: float) -> int:
    """TFLite's quantized activation bound: round(real / scale) (float32, half away from zero), saturated."""
    v = float(np.float32(real) / q.scale)
    return int(np.clip(math.copysign(math.floor(abs(v) + 0.5), v), INT16_MIN, INT16_MAX))


def _clamp(q: Q, bounds: tuple[float, float] | None) -> tuple[int, int]:
    lo, hi = INT16_MIN, INT16_MAX
    if bounds is not None:
        lo = max(lo, _bound(q, bounds[0])) if bounds[0] > -math.inf else lo
        hi = min(hi, _bound(q, bounds[1])) if bounds[1] < math.inf else hi
    return lo, hi


def _bias(graph: Graph, node: Node, v: Value | None, m: int) -> Value | None | bool:
    """The bias as TFLite adds it (the stored integers): an int64 constant of m values; False if not one."""
    if v is None:
        return None
    d = dq_of(v)
    if d is None or not d.q.is_const or d.q.dtype not in (DType.INT64, DType.INT32) or d.zp.any():
        return False
    data = np.asarray(d.q.const, np.int64).reshape(-1)
    if data.size not in (1, m):
        return False
    return graph.constant(f"{node.name}_b64", np.ascontiguousarray(np.broadcast_to(data, (m,))))


def _fold_linear(graph: Graph, node: Node, uses: Uses, simd: bool) -> None:
    x, w, q = _x16(node.input(0)), dq_of(node.input(1)), _q16(graph, node.outputs[0], uses)
    act = epilogue_of(node)
    bounds = None if act is None else act.clamp
    if x is None or w is None or q is None or (act is not None and bounds is None):
        return
    if not w.q.is_const or w.q.dtype is not DType.INT8 or w.zp.any() or (node.op == "Conv" and w.q.shape[-1] > 256):
        return  # (q16.c sums a kernel row's products in int32: at most 256 of them)
    a = node.attrs
    if node.op == "Conv":
        if x.q.type.rank != 4 or w.q.type.rank != 4 or (not w.per_tensor and w.axis != 0):
            return
        (n, c, h, wd), (m, _, kh, kw) = x.q.shape, w.q.shape
        y = node.outputs[0].shape
        pads = list(a.get("pads", [0, 0, 0, 0]))
        st, dil = list(a.get("strides", [1, 1])), list(a.get("dilations", [1, 1]))
        geo = Q16Geometry(n, c, h, wd, m, y[2], y[3], kh, kw, st[0], st[1], dil[0], dil[1], pads[0], pads[1],
                          int(a.get("group", 1)))
        flat = False
    else:
        if (a.get("transA", 0) or not a.get("transB", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0
                or x.q.type.rank != 2 or w.q.type.rank != 2 or (not w.per_tensor and w.axis != 0)):
            return
        (n, c), m = x.q.shape, w.q.shape[0]
        geo, flat = Q16Geometry(n, c, 1, 1, m, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1), True
    bias = _bias(graph, node, node.input(2), m)
    if bias is False:
        return
    wscale = np.broadcast_to(w.scale, (m,)).astype(np.float64)
    if node.op == "Gemm" and w.per_tensor:  # GetQuantizedConvolutionMultipler: a float32 product of the scales
        reals = [float(np.float32(x.scale[0]) * np.float32(wscale[0])) / float(q.scale)] * m
    else:  # per channel: input scale x each channel's, in double
        reals = [float(np.float32(x.scale[0])) * float(s) / float(q.scale) for s in wscale]
    full = flat and q.rounding == SINGLE
    if full:  # LiteRT's int16 FULLY_CONNECTED keeps the Q31 multiplier (measured; TFLite Micro's rounds it to Q15)
        pairs: list[tuple[int, int] | None] = [
            (m_, k + 64 * q.rounding) for m_, k in (tflite_multiplier(r, q.rounding) for r in reals)]
    else:
        pairs = [q15_multiplier(r, q.rounding) for r in reals]
    if any(p is None for p in pairs):
        return
    lo, hi = _clamp(q, bounds)
    spec = Q16Spec(geo, tuple(p[0] for p in pairs if p), tuple(p[1] for p in pairs if p), lo, hi, flat,
                   full=full, simd=simd)
    inputs = [x.q, w.q, bias if isinstance(bias, Value) else None]
    new = Node("Q16Conv", graph.unique_name(f"{node.name}_int16"), inputs, [q.out],
               {k: v for k, v in a.items() if k != EPILOGUE_ATTR} | {"_q16": spec})
    replace(graph, [node, q.node], [new])


def _fold_pool(graph: Graph, node: Node, uses: Uses) -> None:
    x, q = _x16(node.input(0)), _q16(graph, node.outputs[0], uses)
    a = node.attrs
    if (x is None or q is None or x.scale[0] != q.scale or x.q.type.rank != 4 or a.get("count_include_pad")
            or any(o is not None for o in node.outputs[1:])):
        return
    last = channels_last(node)  # NHWC in and out (ops/conv.py CHANNELS_LAST)
    (n, h, wd, c), y = (x.q.shape, node.outputs[0].shape) if last else (_nhwc(x.q.shape), _nhwc(node.outputs[0].shape))
    k, st, pads = list(a["kernel_shape"]), list(a.get("strides", [1, 1])), list(a.get("pads", [0, 0, 0, 0]))
    if a.get("ceil_mode") or list(a.get("dilations", [1, 1])) != [1, 1]:
        return
    geo = Q16Geometry(n, c, h, wd, c, y[1], y[2], k[0], k[1], st[0], st[1], 1, 1, pads[0], pads[1], c)
    op = "Q16AvgPool" if node.op == "AveragePool" else "Q16MaxPool"
    new = Node(op, graph.unique_name(f"{node.name}_int16"), [x.q], [q.out],
               {"_q16": Q16Spec(geo, (), (), INT16_MIN, INT16_MAX), **layout_attrs(node)})
    replace(graph, [node, q.node], [new])


def _fold_mean(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's MEAN over H and W (QuantizedMeanOrSum): x_scale / y_scale as QuantizeMultiplier, with 1/n
    folded into the multiplier in integers ((M << s) / n for s = floor(log2 n), at most 32) and the shift."""
    x, q = _x16(node.input(0)), _q16(graph, node.outputs[0], uses)
    if x is None or q is None or x.q.type.rank != 4:
        return
    last = channels_last(node)
    mult, k = _mean_multiplier(x, q, math.prod(spatial_dims(node, x.q.shape)))
    n, c = (x.q.shape[0], x.q.shape[-1]) if last else x.q.shape[:2]
    spec = Q16Spec(None, (mult,), (k,), INT16_MIN, INT16_MAX, shape=(n, 1, 1, c) if last else (n, c, 1, 1))
    new = Node("Q16Mean", graph.unique_name(f"{node.name}_int16"), [x.q], [q.out],
               {"_q16": spec, **layout_attrs(node)})
    replace(graph, [node, q.node], [new])


def _nhwc(shape: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = shape
    return n, h, w, c


def _mean_multiplier(x: DQ, q: Q, n: int) -> tuple[int, int]:
    """QuantizedMeanOrSum's requantisation of a sum of n: x_scale / y_scale as QuantizeMultiplier with 1/n folded
    in, in integers ((M << s) / n for s = floor(log2 n), at most 32): (multiplier, ember_q_scale_tfl's code)."""
    mult, k = tflite_multiplier(float(x.scale[0]) / float(q.scale), q.rounding)
    s = min(n.bit_length() - 1, 32, 31 + (31 - k))
    mult, k = ((mult << s) // n, k + s) if k + s <= 62 else (0, 1)
    return mult, k + 64 * q.rounding


_REDUCE_KINDS = {"ReduceSum": 0, "ReduceMean": 0, "ReduceMax": 2, "ReduceMin": 3}


def _fold_reduce(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 SUM / MEAN (the int64 sum requantised, QuantizedMeanOrSum; a SUM at one scale saturates)
    and REDUCE_MAX / REDUCE_MIN (the stored integers, input and output of one scale) over constant axes."""
    x, q, axes = _x16(node.input(0)), _q16(graph, node.outputs[0], uses), node.input(1)
    kind = _REDUCE_KINDS[node.op]
    if x is None or q is None or axes is None or not axes.is_const or (kind and x.scale[0] != q.scale):
        return
    rank = x.q.type.rank
    red = tuple(sorted({int(a) % rank for a in np.asarray(axes.const).reshape(-1)}))
    n = math.prod(x.q.shape[a] for a in red)
    if not red or n == 0:
        return
    mult, k = _mean_multiplier(x, q, n if node.op == "ReduceMean" else 1)
    spec = q16.Q16ReduceSpec(kind, mult, k, red, tuple(node.outputs[0].shape))
    new = Node("Q16Reduce", graph.unique_name(f"{node.name}_int16"), [x.q], [q.out], {"_q16r": spec})
    replace(graph, [node, q.node], [new])


def _fold_abs(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 ABS (AbsEvalQuantized): |x|, rescaled by the float32 ratio input / output scale where the
    two differ, saturated: a Q16Binary of op 4."""
    x, q = _x16(node.input(0)), _q16(graph, node.outputs[0], uses)
    if x is None or q is None:
        return
    rescale = int(np.float32(x.scale[0]) != q.scale)
    mult, k = tflite_multiplier(float(np.float32(x.scale[0]) / q.scale), q.rounding) if rescale else (0, 1)
    one = graph.constant(f"{node.name}_one", np.ones(1, np.int16))
    params = (4, rescale, 0, 1, 0, 1, mult, k + 64 * q.rounding, INT16_MIN, INT16_MAX)
    spec = Q16Spec(None, (), (), INT16_MIN, INT16_MAX, binary=params, shape=tuple(x.q.shape))
    new = Node("Q16Binary", graph.unique_name(f"{node.name}_int16"), [x.q, one], [q.out], {"_q16": spec})
    replace(graph, [node, q.node], [new])


def _fold_matmul(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 BATCH_MATMUL (reference BatchMatMul<int16_t, int64_t>, zero points 0): int64 sums, the
    multiplier of the float32 product of the input scales over the output scale rounded to Q15."""
    a, b, q = _x16(node.input(0), const=True), _x16(node.input(1), const=True), _q16(graph, node.outputs[0], uses)
    if a is None or b is None or q is None or a.q.type.rank < 2 or b.q.type.rank < 2 or (a.q.is_const and b.q.is_const):
        return
    pair = q15_multiplier(float(np.float32(a.scale[0]) * np.float32(b.scale[0])) / float(q.scale), q.rounding)
    if pair is None:
        return
    spec = q16.Q16MatMulSpec(pair[0], pair[1], tuple(node.outputs[0].shape))
    new = Node("Q16MatMul", graph.unique_name(f"{node.name}_int16"), [a.q, b.q], [q.out], {"_q16mm": spec})
    replace(graph, [node, q.node], [new])


def _fold_binary(graph: Graph, node: Node, uses: Uses) -> None:
    y = node.outputs[0]
    assert y is not None
    act, bounds, out = None, None, y
    readers = uses.get(id(y), [])
    if len(readers) == 1 and not graph.is_output(y) and readers[0].op != "QuantizeLinear":
        act, bounds = readers[0], registry.activation_clamp(readers[0])
        if bounds is None or act.inputs[0] is not y:
            return
        out = act.outputs[0]
    q = _q16(graph, out, uses)
    a, b = _x16(node.input(0), const=True), _x16(node.input(1), const=True)
    if q is None or a is None or b is None or (a.q.is_const and b.q.is_const):
        return
    if a.q.shape != y.shape and node.op != "Sub":
        a, b = b, a
    if a.q.shape != y.shape or broadcast_of(b.q.shape, y.shape) is None:
        return
    sa, sb = np.float32(a.scale[0]), np.float32(b.scale[0])
    if node.op == "Mul":  # TFLite's MUL: a * b requantised by its multiplier
        mult, k = tflite_multiplier(float(np.float32(sa * sb) / q.scale), q.rounding)
        params = [2, 0, 0, 1, 0, 1, mult, k + 64 * q.rounding]
    else:  # TFLite's general int16 ADD / SUB: inputs << 15 at 1 / (2 max scale), then the output's multiplier
        twice = 2.0 * float(max(sa, sb))
        reals = (float(sa) / twice, float(sb) / twice, twice / (2.0**15 * float(q.scale)))
        codes = [(m, k + 64 * DOUBLE) for m, k in (tflite_multiplier(r, DOUBLE) for r in reals)]
        params = [int(node.op == "Sub"), 15, *codes[0], *codes[1], *codes[2]]
    lo, hi = _clamp(q, bounds)
    spec = Q16Spec(None, (), (), lo, hi, binary=(*params, lo, hi), shape=tuple(y.shape))
    new = Node("Q16Binary", graph.unique_name(f"{node.name}_int16"), [a.q, b.q], [q.out], {"_q16": spec})
    replace(graph, [node, *([act] if act is not None else []), q.node], [new])


def _fold_requantize(graph: Graph, node: Node, uses: Uses) -> None:
    """int16 -> DequantizeLinear -> QuantizeLinear -> int16 (TFLite's QUANTIZE between int16 scales,
    Requantize: MultiplyByQuantizedMultiplier by input / output scale): a Q16Binary MUL by 1; int16 to int8 and
    int8 to int16 (the same Requantize, zero points around it): a Q16Requant."""
    d, q, src = _x16(node.outputs[0]), _q16(graph, node.outputs[0], uses), node.inputs[0]
    if q is None or d is None:
        _fold_requantize_bytes(graph, node, uses)
    if d is None or q is None or src is None:
        return
    mult, k = tflite_multiplier(float(d.scale[0]) / float(q.scale), q.rounding)
    one = graph.constant(f"{node.name}_one", np.ones(1, np.int16))
    params = (2, 0, 0, 1, 0, 1, mult, k + 64 * q.rounding, INT16_MIN, INT16_MAX)
    spec = Q16Spec(None, (), (), INT16_MIN, INT16_MAX, binary=params, shape=tuple(src.shape))
    new = Node("Q16Binary", graph.unique_name(f"{node.name}_int16"), [src, one], [q.out], {"_q16": spec})
    replace(graph, [node, q.node], [new])


def _fold_requantize_bytes(graph: Graph, node: Node, uses: Uses) -> None:
    d = dq_of(node.outputs[0])
    if d is None or d.q.is_const or not d.per_tensor or d.q.dtype not in (DType.INT16, DType.INT8):
        return
    q = _q16(graph, node.outputs[0], uses) if d.q.dtype is DType.INT8 else q_of(graph, node.outputs[0], uses)
    if q is None or q.dtype is not (DType.INT8 if d.q.dtype is DType.INT16 else DType.INT16) or not q.rounding:
        return
    mult, k = tflite_multiplier(float(d.scale[0]) / float(q.scale), q.rounding)
    spec = q16.Q16RequantSpec(q.dtype, mult, k + 64 * q.rounding, int(d.zp[0]), q.zp)
    new = Node("Q16Requant", graph.unique_name(f"{node.name}_requant"), [d.q], [q.out], {"_q16q": spec})
    replace(graph, [node, q.node], [new])


def _fold_relu(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 RELU and RELU6 (LiteRT's QuantizedReluX): MultiplyByQuantizedMultiplier by the float32
    ratio input / output scale, then the clamp to the bounds quantized at the output scale: a Q16Binary MUL
    by 1. TFLite Micro's RELU6 (Relu6Quantized) clamps the input's integers to [0, round(6 / input scale)]
    and does not rescale: its output keeps the input's integers whatever the output scale."""
    bounds = registry.activation_clamp(node)
    x, q = _x16(node.input(0)), _q16(graph, node.outputs[0], uses)
    if bounds is None or x is None or q is None:
        return
    micro_clip = node.op == "Clip" and bool(q.node.attrs.get("_micro"))
    if micro_clip:
        if bounds[0] != 0.0:
            return  # (TFLite Micro has no other int16 clipping activation)
        mult, k = 1 << 30, 30 + 64 * SINGLE  # the identity: (x * 2^30 + 2^29) >> 30
        lo, hi = 0, _bound(Q(q.node, q.out, np.float32(x.scale[0]), q.rounding), bounds[1])
    else:
        mult, k = tflite_multiplier(float(np.float32(x.scale[0]) / q.scale), q.rounding)
        k += 64 * q.rounding
        lo, hi = _clamp(q, bounds)
    one = graph.constant(f"{node.name}_one", np.ones(1, np.int16))
    spec = Q16Spec(None, (), (), lo, hi, binary=(2, 0, 0, 1, 0, 1, mult, k, lo, hi), shape=tuple(x.q.shape))
    new = Node("Q16Binary", graph.unique_name(f"{node.name}_int16"), [x.q, one], [q.out], {"_q16": spec})
    replace(graph, [node, q.node], [new])


def _fold_minmax(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 MAXIMUM / MINIMUM compare the stored integers (the converter gives the inputs the
    output's scale): the same op on the int16 tensors where every scale is the output's."""
    q = _q16(graph, node.outputs[0], uses)
    xs = [_x16(v, const=True) for v in node.inputs]
    if q is None or any(x is None or x.scale[0] != q.scale for x in xs) or all(x.q.is_const for x in xs if x):
        return
    new = Node(node.op, graph.unique_name(f"{node.name}_int16"), [x.q for x in xs if x is not None], [q.out],
               dict(node.attrs))
    replace(graph, [node, q.node], [new])


def _fold_pad(graph: Graph, node: Node, uses: Uses) -> None:
    """TFLite's int16 PAD (and PADV2 with a value of 0): the stored integers, the output zero point (0) around
    them. Input and output share their scale."""
    x, q = _x16(node.input(0)), _q16(graph, node.outputs[0], uses)
    value, pads = node.input(2), node.input(1)
    if (x is None or q is None or x.scale[0] != q.scale or node.attrs.get("mode", "constant") != "constant"
            or pads is None or not pads.is_const or any(v is not None for v in node.inputs[3:])):
        return
    if value is not None:
        d = dq_of(value)
        const = d.q if d is not None else value
        if not const.is_const or np.any(np.asarray(const.const)):
            return
    zero = graph.constant(f"{node.name}_zero", np.zeros((), np.int16))
    new = Node("Pad", graph.unique_name(f"{node.name}_int16"), [x.q, pads, zero], [q.out], dict(node.attrs))
    replace(graph, [node, q.node], [new])


def _fold_select(graph: Graph, node: Node, uses: Uses) -> None:
    """Slice / Split of one int16 tensor (other inputs constant) into outputs of its scale: the same op on the
    stored integers, as TFLite's int16 SLICE, STRIDED_SLICE and SPLIT copy them."""
    x = _x16(node.input(0))
    outs = [(i, _q16(graph, o, uses)) for i, o in enumerate(node.outputs) if o is not None]
    if (x is None or not outs or any(q is None or q.scale != x.scale[0] for _, q in outs)
            or any(v is not None and not v.is_const for v in node.inputs[1:])):
        return
    outputs: list[Value | None] = [None] * len(node.outputs)
    for i, q in outs:
        assert q is not None
        outputs[i] = q.out
    new = Node(node.op, graph.unique_name(f"{node.name}_int16"), [x.q, *node.inputs[1:]], outputs,
               dict(node.attrs))
    replace(graph, [node, *(q.node for _, q in outs if q is not None)], [new])


def _fold_move(graph: Graph, node: Node, uses: Uses) -> None:
    q = _q16(graph, node.outputs[0], uses)
    if q is None or len([o for o in node.outputs if o is not None]) != 1:
        return
    data = [i for i, v in enumerate(node.inputs) if v is not None and not v.is_const]
    xs = [_x16(node.inputs[i]) for i in data]
    if not data or any(x is None or x.scale[0] != q.scale for x in xs):
        return
    if registry.get(node.op).int8 is Int8.MOVE and data != [0]:
        return
    inputs = list(node.inputs)
    for i, x in zip(data, xs, strict=True):
        assert x is not None
        inputs[i] = x.q
    new = Node(node.op, graph.unique_name(f"{node.name}_int16"), inputs, [q.out], dict(node.attrs))
    replace(graph, [node, q.node], [new])
