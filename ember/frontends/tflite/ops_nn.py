"""Weighted and windowed operators: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, pools, FULLY_CONNECTED,
BATCH_MATMUL. Convolutions and pools run as NCHW canonical ops between Transposes (the passes cancel them)."""

from __future__ import annotations

import struct

import numpy as np

from ember.frontends.tflite.context import OpContext
from ember.ir.dtypes import DType

_SAME = 0  # tflite.Padding.SAME; VALID is 1


def same_pads(padding: int, size: list[int], kernel: list[int], stride: list[int], dilation: list[int]) -> list[int]:
    """Explicit [begin..., end...] pads of TFLite's SAME/VALID, as its ComputePaddingHeightWidth makes them:
    output ceil(in / stride), the total padding split with the smaller half first."""
    if padding != _SAME:
        return [0] * (2 * len(size))
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, stride, dilation, strict=True):
        out = -(-n // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        begin.append(total // 2)
        end.append(total - total // 2)
    return begin + end


def _bias_scale(ctx: OpContext, x: int, w: int) -> np.ndarray | None:
    qx, qw = ctx.info(x).quant, ctx.info(w).quant
    if qx is None or qw is None:
        return None
    return (np.float64(qx.scale.reshape(-1)[0]) * qw.scale.astype(np.float64)).astype(np.float32)


def conv_2d(ctx: OpContext) -> None:
    o = ctx.options
    x = ctx.input(0, nchw=True)
    w = ctx.const_array(1, "filter")  # [O, H, W, I]
    group = x.shape[1] // w.shape[3]
    stride, dil = [o.StrideH(), o.StrideW()], [o.DilationHFactor(), o.DilationWFactor()]
    _conv(ctx, x, ctx.weight(w.transpose(0, 3, 1, 2), ctx.info(1).quant, 0, "w"), list(w.shape[1:3]),
          stride, dil, group, o.Padding(), o.FusedActivationFunction())


def depthwise_conv_2d(ctx: OpContext) -> None:
    o = ctx.options
    x = ctx.input(0, nchw=True)
    w = ctx.const_array(1, "filter")  # [1, H, W, C * depth_multiplier]
    channels = x.shape[1]
    if w.shape[3] != channels * max(o.DepthMultiplier(), 1) and o.DepthMultiplier() > 0:
        raise ctx.unsupported(f"filter of {w.shape[3]} channels for {channels} input channels x depth multiplier "
                              f"{o.DepthMultiplier()}")
    stride, dil = [o.StrideH(), o.StrideW()], [o.DilationHFactor(), o.DilationWFactor()]
    # Output channel c * multiplier + m reads input channel c: ONNX's grouped Conv with one group per channel.
    weight = ctx.weight(w.transpose(3, 0, 1, 2), ctx.info(1).quant, 0, "w")
    _conv(ctx, x, weight, list(w.shape[1:3]), stride, dil, channels, o.Padding(), o.FusedActivationFunction())


def _conv(ctx: OpContext, x, w, kernel: list[int], stride: list[int], dil: list[int], group: int, padding: int,
          act: int) -> None:
    b = ctx.bias(2, _bias_scale(ctx, 0, 1))
    pads = same_pads(padding, list(x.shape[2:]), kernel, stride, dil)
    fold = ctx.atrous
    if fold is not None:  # SPACE_TO_BATCH_ND -> this VALID convolution -> BATCH_TO_SPACE_ND: one dilated conv
        dil, pads = list(fold.block), list(fold.pads)
    y = ctx.emit("Conv", [x, w, b], {"kernel_shape": kernel, "strides": stride, "dilations": dil, "pads": pads,
                                     "group": group})
    y = ctx.activation(y, act)
    if fold is not None and any(fold.crops):
        ends = [y.shape[2] - fold.crops[2], y.shape[3] - fold.crops[3]]
        y = ctx.emit("Slice", [y, ctx.const(fold.crops[:2], what="starts"), ctx.const(ends, what="ends"),
                               ctx.const([2, 3], what="axes")])
    ctx.output(0, y, nchw=True)


def transpose_conv(ctx: OpContext) -> None:  # inputs: output shape, filter, x, bias
    o = ctx.options
    out_shape = [int(d) for d in ctx.const_array(0, "output shape")]  # NHWC
    act = o.FusedActivationFunction() if hasattr(o, "FusedActivationFunction") else 0
    _transpose_conv(ctx, 2, 1, 3, out_shape, [o.StrideH(), o.StrideW()], o.Padding(), act)


def _transpose_conv(ctx: OpContext, xi: int, wi: int, bi: int, out_shape: list[int], stride: list[int],
                    padding: int, act: int) -> None:
    w = ctx.const_array(wi, "filter")  # [O, H, W, I]
    x = ctx.input(xi, nchw=True)
    kernel = list(w.shape[1:3])
    weight = ctx.weight(w.transpose(3, 0, 1, 2), ctx.info(wi).quant, 1, "w")  # ConvTranspose: [I, O, H, W]
    pads, opad = [0, 0, 0, 0], [0, 0]
    for a in range(2):
        n_in, n_out, s, k = x.shape[2 + a], out_shape[1 + a], stride[a], kernel[a]
        # TFLite pads as the forward convolution from the output would: total = (in - 1) * s + k - out.
        total = max((n_in - 1) * s + k - n_out, 0) if padding == _SAME else 0
        begin = total // 2
        end = (n_in - 1) * s + k - n_out - begin
        pads[a], pads[2 + a] = begin, max(end, 0)
        opad[a] = max(-end, 0)
    b = ctx.bias(bi, _bias_scale(ctx, xi, wi)) if ctx.has_input(bi) else None
    if _integer_transpose_conv(ctx, xi, wi, w, b, kernel, stride, pads, opad, act):
        return
    y = ctx.emit("ConvTranspose", [x, weight, b], {"kernel_shape": kernel, "strides": stride, "pads": pads,
                                                    "output_padding": opad, "dilations": [1, 1], "group": 1})
    ctx.output(0, ctx.activation(y, act), nchw=True)


def _integer_transpose_conv(ctx: OpContext, xi: int, wi: int, w: np.ndarray, b, kernel: list[int],
                            stride: list[int], pads: list[int], opad: list[int], act: int) -> bool:
    """A quantized TRANSPOSE_CONV as the Conv it equals: the input with stride - 1 zero points inserted
    between its elements (real zeros, moved as stored bytes), convolved with the spatially flipped filter.
    TFLite's kernel accumulates the same integer products and requantises per output channel as CONV_2D
    does (int8, and int16 with int64 sums), so the Conv's integer kernel (passes/fold_qdq.py, fold_qdq16.py)
    gives its exact results. False (nothing
    emitted) where that form does not apply."""
    t, wq = ctx.info(xi), ctx.info(wi).quant
    ends = [pads[2 + a] - opad[a] for a in range(2)]  # TFLite's end padding (negative: output padding)
    conv_pads = [kernel[0] - 1 - pads[0], kernel[1] - 1 - pads[1], kernel[0] - 1 - ends[0], kernel[1] - 1 - ends[1]]
    if (t.quant is None or t.quant.axis is not None or t.dtype not in (DType.INT8, DType.UINT8, DType.INT16)
            or wq is None or w.dtype.kind == "f" or ctx.out_info().quant is None or min(conv_pads) < 0):
        return False
    x = ctx.raw(xi)  # NHWC, stored bytes: spread where they are, so the Conv's packing reads them in place
    n, h, wd, c = x.shape
    if stride != [1, 1]:
        zp = t.dtype.np.type(t.quant.zero_point.reshape(-1)[0])
        x = ctx.emit("Reshape", [x, ctx.const([n, h, 1, wd, 1, c], what="cells")])
        x = ctx.emit("Pad", [x, ctx.const([0, 0, 0, 0, 0, 0, 0, 0, stride[0] - 1, 0, stride[1] - 1, 0], what="gaps"),
                             ctx.const(zp, t.dtype.np, "zp_fill")], {"mode": "constant"})
        x = ctx.emit("Reshape", [x, ctx.const([n, h * stride[0], wd * stride[1], c], what="spread")])
        x = ctx.emit("Slice", [x, ctx.const([0, 0], what="starts"),
                               ctx.const([(h - 1) * stride[0] + 1, (wd - 1) * stride[1] + 1], what="ends"),
                               ctx.const([1, 2], what="axes")])
    x = ctx.transpose(x, (0, 3, 1, 2))
    x = ctx.dequantize(x, t.quant, None)
    flipped = np.ascontiguousarray(w.transpose(0, 3, 1, 2)[:, :, ::-1, ::-1])  # [O, I, H, W]
    weight = ctx.weight(flipped, wq, 0, "w")
    y = ctx.emit("Conv", [x, weight, b], {"kernel_shape": kernel, "strides": [1, 1], "dilations": [1, 1],
                                          "pads": conv_pads, "group": 1})
    ctx.output(0, ctx.activation(y, act), nchw=True)
    return True


def transpose_conv_bias(ctx: OpContext) -> None:
    """MediaPipe's custom Convolution2DTransposeBias (segmentation models): inputs x, filter [O, H, W, I],
    bias; its options are a TfLiteTransposeConvParams struct (int32 padding 1 SAME / 2 VALID, stride_w,
    stride_h), the output shape in/out x stride (SAME) or (in - 1) x stride + kernel (VALID)."""
    raw = ctx.options or b""
    if len(raw) < 12:
        raise ctx.unsupported(f"custom options of {len(raw)} bytes, expected TfLiteTransposeConvParams (12)")
    padding, stride_w, stride_h = struct.unpack_from("<3i", raw)
    if padding not in (1, 2) or stride_w < 1 or stride_h < 1:
        raise ctx.unsupported(f"padding {padding} and strides {stride_h}x{stride_w} in its custom options")
    _transpose_conv(ctx, 0, 1, 2, list(ctx.out_info().shape), [stride_h, stride_w], _SAME if padding == 1 else 1,
                    0)


def l2_pool(ctx: OpContext) -> None:
    """sqrt(mean of x^2 over the window's valid elements), as TFLite's L2Pool."""
    o = ctx.options
    x = ctx.input(0, nchw=True)
    kernel, stride = [o.FilterHeight(), o.FilterWidth()], [o.StrideH(), o.StrideW()]
    pads = same_pads(o.Padding(), list(x.shape[2:]), kernel, stride, [1, 1])
    sq = ctx.emit("AveragePool", [ctx.emit("Mul", [x, x])], {"kernel_shape": kernel, "strides": stride,
                                                             "pads": pads, "count_include_pad": 0})
    ctx.output(0, ctx.activation(ctx.emit("Sqrt", [sq]), o.FusedActivationFunction()), nchw=True)


def _pool(op: str):
    def convert(ctx: OpContext) -> None:
        o = ctx.options
        x = ctx.input(0, nchw=True)
        kernel, stride = [o.FilterHeight(), o.FilterWidth()], [o.StrideH(), o.StrideW()]
        attrs = {"kernel_shape": kernel, "strides": stride, "pads": same_pads(o.Padding(), list(x.shape[2:]),
                                                                               kernel, stride, [1, 1])}
        if op == "AveragePool":
            attrs["count_include_pad"] = 0  # TFLite averages over the valid elements only
        y = ctx.emit(op, [x], attrs)
        ctx.output(0, ctx.activation(y, o.FusedActivationFunction()), nchw=True)

    return convert


def fully_connected(ctx: OpContext) -> None:
    o = ctx.options
    x = ctx.input(0)
    w_data = ctx.b.const_data(ctx.inputs[1])
    w = (ctx.weight(w_data, ctx.info(1).quant, 0, "w") if w_data is not None else ctx.input(1))  # [N, K]
    k = ctx.info(1).shape[1]
    if x.type.rank != 2 or x.shape[1] != k:
        t = ctx.info(0)
        if t.quant is not None and t.dtype in (DType.INT8, DType.UINT8, DType.INT16) and t.quant.axis is None:
            # rows of int8 bytes, then dequantized: the integer kernel (passes/fold_qdq.py) takes them
            x = ctx.dequantize(ctx.emit("Reshape", [ctx.raw(0), ctx.const([-1, k], what="rows")]), t.quant, None)
        else:
            x = ctx.emit("Reshape", [x, ctx.const([-1, k], what="rows")])
    b = ctx.bias(2, _bias_scale(ctx, 0, 1))
    y = ctx.emit("Gemm", [x, w, b], {"transB": 1})
    y = ctx.activation(y, o.FusedActivationFunction() if o is not None else 0)
    want = ctx.out_info().shape
    if tuple(y.shape) != tuple(want):  # keep_num_dims: the input's leading dimensions
        t = ctx.out_info()
        if t.quant is not None and t.dtype in (DType.INT8, DType.UINT8, DType.INT16):
            y = ctx.quantize(y, t)  # reshaped as int8: the QuantizeLinear right after the Gemm folds with it
        y = ctx.emit("Reshape", [y, ctx.const(list(want), what="shape")])
    ctx.output(0, y)


def batch_matmul(ctx: OpContext) -> None:
    o = ctx.options
    ins = []
    for i, adj in enumerate((o is not None and o.AdjX(), o is not None and o.AdjY())):
        t = ctx.info(i)
        if adj and t.dtype is DType.INT16 and t.quant is not None and t.quant.axis is None:
            # int16 (16x8): the stored integers transposed, then dequantized, for fold_qdq16's Q16MatMul
            x = ctx.raw(i)
            x = ctx.dequantize(ctx.transpose(x, (*range(x.type.rank - 2), x.type.rank - 1, x.type.rank - 2)),
                               t.quant, None)
        else:
            x = ctx.input(i)
            if adj:
                x = ctx.transpose(x, (*range(x.type.rank - 2), x.type.rank - 1, x.type.rank - 2))
        ins.append(x)
    ctx.output(0, ctx.emit("MatMul", ins))


CONVERTERS = {
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "AVERAGE_POOL_2D": _pool("AveragePool"),
    "MAX_POOL_2D": _pool("MaxPool"),
    "FULLY_CONNECTED": fully_connected,
    "BATCH_MATMUL": batch_matmul,
    "L2_POOL_2D": l2_pool,
    "custom op 'Convolution2DTransposeBias'": transpose_conv_bias,
}
