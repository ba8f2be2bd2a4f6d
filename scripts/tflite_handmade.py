"""TFLite models no TensorFlow graph converts to (legacy builtins such as SVDF and L2_POOL_2D, a fused LSTM,
MediaPipe's custom Convolution2DTransposeBias, SHAPE/FILL/ZEROS_LIKE the converter would fold), written
directly with TensorFlow's flatbuffer object API. Used by make_tflite_fixtures.py; fixed seeds, so the bytes
are the same on every run."""

from __future__ import annotations

import struct

import flatbuffers
import numpy as np
from tensorflow.lite.python import schema_py_generated as fb

_TYPES = {np.dtype(np.float32): fb.TensorType.FLOAT32, np.dtype(np.int32): fb.TensorType.INT32,
          np.dtype(np.bool_): fb.TensorType.BOOL, np.dtype(np.int64): fb.TensorType.INT64,
          np.dtype(np.int8): fb.TensorType.INT8, np.dtype(np.int16): fb.TensorType.INT16}


class Model:
    """One subgraph built tensor by tensor, operator by operator."""

    def __init__(self) -> None:
        self.tensors: list[fb.TensorT] = []
        self.buffers: list[fb.BufferT] = [fb.BufferT()]  # buffer 0: the empty sentinel
        self.codes: list[tuple[int, str | None]] = []
        self.ops: list[fb.OperatorT] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def tensor(self, name: str, shape: list[int], dtype: type = np.float32, data: np.ndarray | None = None,
               variable: bool = False, quant: tuple[float, int] | None = None) -> int:
        t = fb.TensorT()
        t.name, t.shape, t.type = name.encode(), np.asarray(shape, np.int32), _TYPES[np.dtype(dtype)]
        t.isVariable = variable
        if quant is not None:  # per-tensor (scale, zero point)
            t.quantization = fb.QuantizationParametersT()
            t.quantization.scale, t.quantization.zeroPoint = [float(quant[0])], [int(quant[1])]
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data, dtype).tobytes(), np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, name: str, shape: list[int], dtype: type = np.float32) -> int:
        self.inputs.append(self.tensor(name, shape, dtype))
        return self.inputs[-1]

    def const(self, name: str, data: np.ndarray) -> int:
        return self.tensor(name, list(data.shape), data.dtype.type, data)

    def op(self, code: int | str, inputs: list[int], outputs: list[int], options_type: int = 0,
           options: object = None, custom: bytes | None = None) -> None:
        key = (fb.BuiltinOperator.CUSTOM, code) if isinstance(code, str) else (code, None)
        if key not in self.codes:
            self.codes.append(key)
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = self.codes.index(key), inputs, outputs
        o.builtinOptionsType, o.builtinOptions = options_type, options
        if custom is not None:
            o.customOptions = list(custom)
        self.ops.append(o)

    def finish(self, outputs: list[int]) -> bytes:
        sg = fb.SubGraphT()
        sg.tensors, sg.operators, sg.inputs, sg.outputs = self.tensors, self.ops, self.inputs, outputs
        m = fb.ModelT()
        m.version, m.subgraphs, m.buffers, m.description = 3, [sg], self.buffers, b"ember handmade"
        m.operatorCodes = []
        for code, custom in self.codes:
            c = fb.OperatorCodeT()
            c.builtinCode, c.deprecatedBuiltinCode = code, min(code, 127)
            c.customCode = custom.encode() if custom else None
            m.operatorCodes.append(c)
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def _options(cls: type, **fields: object) -> object:
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


def svdf(rank: int = 2) -> bytes:
    """SVDF on a [2, 6] input: 3 units x rank 2 = 6 filters, memory 4, RELU."""
    r = np.random.default_rng(60)
    m = Model()
    x = m.input("x", [2, 6])
    wf = m.const("w_feature", r.normal(0, 0.5, (6, 6)).astype(np.float32))
    wt = m.const("w_time", r.normal(0, 0.5, (6, 4)).astype(np.float32))
    bias = m.const("bias", r.normal(0, 0.2, (3,)).astype(np.float32))
    state = m.tensor("state", [2, 6 * 4], variable=True)
    y = m.tensor("y", [2, 3])
    m.op(fb.BuiltinOperator.SVDF, [x, wf, wt, bias, state], [y], fb.BuiltinOptions.SVDFOptions,
         _options(fb.SVDFOptionsT, rank=rank, fusedActivationFunction=fb.ActivationFunctionType.RELU))
    return m.finish([y])


def svdf_int8(state8: bool = False) -> bytes:
    """Full-integer SVDF as keyword spotters ship it (TFLite's integer kernel: int8 input, feature weights and
    output, int16 time weights and state, int32 bias at state x time-weight scale): batch 2, 8 inputs,
    4 units x rank 2, memory 5. Its RELU is in the options, which TFLite's integer kernel does not apply.
    `state8`: int8 time weights and an int8 state with a zero point (TFLite Micro's variant; LiteRT has none)."""
    r = np.random.default_rng(65)
    m = Model()
    s_x, s_wf, s_state, s_wt, s_y = 2 / 255, 1.5 / 127, 4 / 32767, 2 / 32767, 6 / 127
    small = np.int8 if state8 else np.int16
    state_zp = -7 if state8 else 0
    if state8:
        s_state, s_wt = 4 / 127, 2 / 127
    x = m.tensor("x", [2, 8], np.int8, quant=(s_x, -3))
    m.inputs.append(x)

    def q(name: str, real: np.ndarray, scale: float, dtype: type) -> int:
        info = np.iinfo(dtype)
        data = np.clip(np.round(real / scale), info.min, info.max).astype(dtype)
        return m.tensor(name, list(real.shape), dtype, data, quant=(scale, 0))

    wf = q("w_feature", r.normal(0, 0.5, (8, 8)), s_wf, np.int8)
    wt = q("w_time", r.normal(0, 0.5, (8, 5)), s_wt, small)
    bias = q("bias", r.normal(0, 0.2, (4,)), s_state * s_wt, np.int32)
    state = m.tensor("state", [2, 8 * 5], small, variable=True, quant=(s_state, state_zp))
    y = m.tensor("y", [2, 4], np.int8, quant=(s_y, 5))
    m.op(fb.BuiltinOperator.SVDF, [x, wf, wt, bias, state], [y], fb.BuiltinOptions.SVDFOptions,
         _options(fb.SVDFOptionsT, rank=2, fusedActivationFunction=fb.ActivationFunctionType.RELU))
    return m.finish([y])


def lstm(time_major: bool, cifg: bool, peephole: bool) -> bytes:
    """UNIDIRECTIONAL_SEQUENCE_LSTM: batch 2, 5 steps, 3 inputs, 4 cells (the form Keras 2 LSTMs converted to)."""
    r = np.random.default_rng(61 + 2 * cifg + peephole)
    m = Model()
    t, b, n_in, h = 5, 2, 3, 4
    x = m.input("x", [t, b, n_in] if time_major else [b, t, n_in])

    def w(name: str, *shape: int) -> int:
        return m.const(name, r.normal(0, 0.5, shape).astype(np.float32))

    slots = [x]
    slots += [-1 if cifg and g == "i" else w(f"w_{g}", h, n_in) for g in "ifco"]
    slots += [-1 if cifg and g == "i" else w(f"r_{g}", h, h) for g in "ifco"]
    slots += [w(f"p_{g}", h) if peephole and not (cifg and g == "i") else -1 for g in "ifo"]
    slots += [-1 if cifg and g == "i" else w(f"b_{g}", h) for g in "ifco"]
    slots += [-1, -1]  # projection
    slots += [m.tensor("h_state", [b, h], variable=True), m.tensor("c_state", [b, h], variable=True)]
    y = m.tensor("y", [t, b, h] if time_major else [b, t, h])
    opts = _options(fb.UnidirectionalSequenceLSTMOptionsT, fusedActivationFunction=fb.ActivationFunctionType.TANH,
                    timeMajor=time_major)
    m.op(fb.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, slots, [y],
         fb.BuiltinOptions.UnidirectionalSequenceLSTMOptions, opts)
    return m.finish([y])


def clear_unused_buffers(model: bytes) -> bytes:
    """The model with the buffers that no tensor or metadata entry names zeroed: the converter leaves the
    LSTM state's (uninitialized) initial values there, which differ from run to run. Patched in place."""
    out = bytearray(model)
    m = fb.Model.GetRootAs(model, 0)
    used = {m.Metadata(k).Buffer() for k in range(m.MetadataLength())}
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        used |= {sg.Tensors(i).Buffer() for i in range(sg.TensorsLength())}
    for j in range(m.BuffersLength()):
        buf = m.Buffers(j)
        if j not in used and buf.DataLength():
            start = buf._tab.Vector(buf._tab.Offset(4))  # the data vector's first byte
            out[start:start + buf.DataLength()] = bytes(buf.DataLength())
    return bytes(out)


def int8_lstm_cifg_peephole(model: bytes) -> bytes:
    """A converted full-integer LSTM made CIFG (no input gate: its weights and bias dropped) with peephole
    weights (int16, symmetric) on the forget and output gates, which no Keras layer converts to; LiteRT's
    integer kernel runs it (TFLite Micro's has neither form)."""
    r = np.random.default_rng(66)
    m = fb.ModelT.InitFromPackedBuf(model, 0)
    sg = m.subgraphs[0]
    op = sg.operators[0]
    inputs = list(op.inputs)
    n_cell = int(sg.tensors[inputs[2]].shape[0])
    for slot in (1, 5, 12):  # input-to-input and recurrent-to-input weights, input gate bias
        inputs[slot] = -1
    for slot, name in ((10, "cell_to_forget"), (11, "cell_to_output")):
        w = r.normal(0, 0.5, n_cell)
        scale = float(np.abs(w).max()) / 32767
        t = fb.TensorT()
        t.name, t.shape, t.type = name.encode(), np.array([n_cell], np.int32), fb.TensorType.INT16
        t.quantization = fb.QuantizationParametersT()
        t.quantization.scale, t.quantization.zeroPoint = [scale], [0]
        b = fb.BufferT()
        b.data = np.frombuffer(np.round(w / scale).astype(np.int16).tobytes(), np.uint8)
        m.buffers.append(b)
        t.buffer = len(m.buffers) - 1
        sg.tensors.append(t)
        inputs[slot] = len(sg.tensors) - 1
    op.inputs = inputs
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def legacy_ops() -> bytes:
    """L2_POOL_2D, EMBEDDING_LOOKUP, SHAPE, FILL and ZEROS_LIKE on tiny inputs."""
    r = np.random.default_rng(62)
    m = Model()
    x = m.input("x", [1, 5, 6, 3])
    ids = m.input("ids", [4], np.int32)
    pooled = m.tensor("l2pool", [1, 3, 3, 3])
    m.op(fb.BuiltinOperator.L2_POOL_2D, [x], [pooled], fb.BuiltinOptions.Pool2DOptions,
         _options(fb.Pool2DOptionsT, padding=fb.Padding.SAME, strideW=2, strideH=2, filterWidth=2, filterHeight=3))
    table = m.const("table", r.normal(0, 1, (7, 2, 3)).astype(np.float32))
    rows = m.tensor("rows", [4, 2, 3])
    m.op(fb.BuiltinOperator.EMBEDDING_LOOKUP, [ids, table], [rows])
    shape = m.tensor("shape", [4], np.int32)
    m.op(fb.BuiltinOperator.SHAPE, [x], [shape], fb.BuiltinOptions.ShapeOptions,
         _options(fb.ShapeOptionsT, outType=fb.TensorType.INT32))
    dims = m.const("dims", np.array([2, 3], np.int32))
    value = m.const("value", np.array(1.25, np.float32))
    filled = m.tensor("filled", [2, 3])
    m.op(fb.BuiltinOperator.FILL, [dims, value], [filled])
    zeros = m.tensor("zeros", [1, 5, 6, 3])
    m.op(fb.BuiltinOperator.ZEROS_LIKE, [x], [zeros])
    return m.finish([pooled, rows, shape, filled, zeros])


def transpose_conv_bias(custom: bool) -> bytes:
    """MediaPipe's Convolution2DTransposeBias (custom=True), or the same layer as a builtin TRANSPOSE_CONV
    with a bias input, which LiteRT runs (the reference for the custom one)."""
    r = np.random.default_rng(63)
    m = Model()
    x = m.input("x", [1, 3, 4, 5])
    w = m.const("w", r.normal(0, 0.4, (6, 3, 3, 5)).astype(np.float32))  # [O, H, W, I]
    bias = m.const("bias", r.normal(0, 0.3, (6,)).astype(np.float32))
    y = m.tensor("y", [1, 6, 8, 6])
    if custom:
        params = struct.pack("<3i", 1, 2, 2)  # TfLiteTransposeConvParams: SAME, stride_w 2, stride_h 2
        m.op("Convolution2DTransposeBias", [x, w, bias], [y], custom=params)
    else:
        shape = m.const("out_shape", np.array([1, 6, 8, 6], np.int32))
        m.op(fb.BuiltinOperator.TRANSPOSE_CONV, [shape, w, x, bias], [y], fb.BuiltinOptions.TransposeConvOptions,
             _options(fb.TransposeConvOptionsT, padding=fb.Padding.SAME, strideW=2, strideH=2))
    return m.finish([y])


def atrous() -> bytes:
    """TensorFlow 1's atrous convolutions: SPACE_TO_BATCH_ND -> VALID CONV_2D / DEPTHWISE_CONV_2D ->
    BATCH_TO_SPACE_ND, with paddings and crops (the TF2 converter would fuse them itself)."""
    r = np.random.default_rng(64)
    m = Model()
    x = m.input("x", [1, 9, 10, 3])

    def i32(name: str, v: list) -> int:
        return m.const(name, np.array(v, np.int32))

    s1 = m.tensor("s2b_1", [4, 6, 7, 3])
    m.op(fb.BuiltinOperator.SPACE_TO_BATCH_ND, [x, i32("block_1", [2, 2]), i32("pads_1", [[1, 2], [2, 2]])], [s1])
    c1 = m.tensor("conv_1", [4, 4, 5, 4])
    m.op(fb.BuiltinOperator.CONV_2D, [s1, m.const("w1", r.normal(0, 0.4, (4, 3, 3, 3)).astype(np.float32)),
                                      m.const("b1", r.normal(0, 0.2, (4,)).astype(np.float32))], [c1],
         fb.BuiltinOptions.Conv2DOptions,
         _options(fb.Conv2DOptionsT, padding=fb.Padding.VALID, strideW=1, strideH=1, dilationWFactor=1,
                  dilationHFactor=1, fusedActivationFunction=fb.ActivationFunctionType.RELU))
    y1 = m.tensor("atrous_conv", [1, 7, 9, 4])
    m.op(fb.BuiltinOperator.BATCH_TO_SPACE_ND, [c1, i32("block_1b", [2, 2]), i32("crops_1", [[0, 1], [1, 0]])], [y1])
    s2 = m.tensor("s2b_2", [9, 3, 4, 3])
    m.op(fb.BuiltinOperator.SPACE_TO_BATCH_ND, [x, i32("block_2", [3, 3]), i32("pads_2", [[0, 0], [1, 1]])], [s2])
    c2 = m.tensor("dw_2", [9, 2, 3, 3])
    m.op(fb.BuiltinOperator.DEPTHWISE_CONV_2D,
         [s2, m.const("w2", r.normal(0, 0.4, (1, 2, 2, 3)).astype(np.float32)),
          m.const("b2", r.normal(0, 0.2, (3,)).astype(np.float32))], [c2],
         fb.BuiltinOptions.DepthwiseConv2DOptions,
         _options(fb.DepthwiseConv2DOptionsT, padding=fb.Padding.VALID, strideW=1, strideH=1, depthMultiplier=1,
                  dilationWFactor=1, dilationHFactor=1))
    y2 = m.tensor("atrous_dw", [1, 6, 9, 3])
    m.op(fb.BuiltinOperator.BATCH_TO_SPACE_ND, [c2, i32("block_2b", [3, 3]), i32("crops_2", [[0, 0], [0, 0]])], [y2])
    return m.finish([y1, y2])


def quantize_int16_int8() -> bytes:
    """QUANTIZE from int16 to int8 and back to int16 (TFLite's Requantize; the 16x8 converter writes neither: its
    I/O is float32 or int16), each to a scale other than its input's."""
    m = Model()
    x = m.tensor("x", [1, 4, 8, 8], np.int16, quant=(1.0 / 32768, 0))
    m.inputs.append(x)
    y8 = m.tensor("y8", [1, 4, 8, 8], np.int8, quant=(0.0071, 3))
    y16 = m.tensor("y16", [1, 4, 8, 8], np.int16, quant=(0.6 / 32768, 0))
    m.op(fb.BuiltinOperator.QUANTIZE, [x], [y8])
    m.op(fb.BuiltinOperator.QUANTIZE, [y8], [y16])
    return m.finish([y8, y16])


def hard_swish_int16() -> bytes:
    """An int16 HARD_SWISH, which the 16x8 converter does not write (ember refuses it: the error test)."""
    m = Model()
    x = m.tensor("x", [1, 8], np.int16, quant=(1.0 / 8192, 0))
    m.inputs.append(x)
    y = m.tensor("y", [1, 8], np.int16, quant=(1.0 / 8192, 0))
    m.op(fb.BuiltinOperator.HARD_SWISH, [x], [y])
    return m.finish([y])


def handmade() -> dict[str, bytes]:
    return {
        "svdf.tflite": svdf(),
        "svdf_int8.tflite": svdf_int8(),
        "svdf_int8_state8.tflite": svdf_int8(True),
        "lstm_batch_major.tflite": lstm(False, False, False),
        "lstm_time_major_cifg_peephole.tflite": lstm(True, True, True),
        "legacy_ops.tflite": legacy_ops(),
        "transpose_conv_bias.tflite": transpose_conv_bias(True),
        "transpose_conv_bias_ref.tflite": transpose_conv_bias(False),
        "atrous.tflite": atrous(),
        "quantize_int16_int8.tflite": quantize_int16_int8(),
        "hard_swish_int16.tflite": hard_swish_int16(),
    }
