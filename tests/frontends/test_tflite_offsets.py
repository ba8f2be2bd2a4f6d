"""Buffers stored after the flatbuffer at (offset, size), the form of TFLite models over 2 GB: a one-ADD
model written with the `tflite` package's builder, its constant placed after the flatbuffer."""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import numpy as np
import tflite

import ember
from tests.frontends.tflite_support import litert, run_litert

CONST = np.arange(6, dtype=np.float32).reshape(1, 2, 3) * 0.5 - 1.0


def _ints(b: flatbuffers.Builder, start, values: list[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def _tensor(b: flatbuffers.Builder, name: str, buffer: int) -> int:
    n = b.CreateString(name)
    shape = _ints(b, tflite.TensorStartShapeVector, [1, 2, 3])
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, tflite.TensorType.FLOAT32)
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, n)
    return tflite.TensorEnd(b)


def _model(offset_of_const: int) -> bytes:
    b = flatbuffers.Builder(1024)
    tensors = [_tensor(b, "x", 0), _tensor(b, "c", 1), _tensor(b, "y", 0)]
    tflite.SubGraphStartTensorsVector(b, 3)
    for t in reversed(tensors):
        b.PrependUOffsetTRelative(t)
    tensor_vec = b.EndVector()
    ins, outs = _ints(b, tflite.OperatorStartInputsVector, [0, 1]), _ints(b, tflite.OperatorStartOutputsVector, [2])
    tflite.AddOptionsStart(b)
    options = tflite.AddOptionsEnd(b)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, ins)
    tflite.OperatorAddOutputs(b, outs)
    tflite.OperatorAddBuiltinOptionsType(b, tflite.BuiltinOptions.AddOptions)
    tflite.OperatorAddBuiltinOptions(b, options)
    op = tflite.OperatorEnd(b)
    tflite.SubGraphStartOperatorsVector(b, 1)
    b.PrependUOffsetTRelative(op)
    op_vec = b.EndVector()
    g_in, g_out = _ints(b, tflite.SubGraphStartInputsVector, [0]), _ints(b, tflite.SubGraphStartOutputsVector, [2])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vec)
    tflite.SubGraphAddInputs(b, g_in)
    tflite.SubGraphAddOutputs(b, g_out)
    tflite.SubGraphAddOperators(b, op_vec)
    sg = tflite.SubGraphEnd(b)
    tflite.ModelStartSubgraphsVector(b, 1)
    b.PrependUOffsetTRelative(sg)
    sg_vec = b.EndVector()
    buffers = []
    for k in range(2):
        tflite.BufferStart(b)
        if k == 1:
            tflite.BufferAddOffset(b, offset_of_const)
            tflite.BufferAddSize(b, CONST.nbytes)
        buffers.append(tflite.BufferEnd(b))
    tflite.ModelStartBuffersVector(b, 2)
    for buf in reversed(buffers):
        b.PrependUOffsetTRelative(buf)
    buf_vec = b.EndVector()
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddBuiltinCode(b, tflite.BuiltinOperator.ADD)
    tflite.OperatorCodeAddVersion(b, 1)
    code = tflite.OperatorCodeEnd(b)
    tflite.ModelStartOperatorCodesVector(b, 1)
    b.PrependUOffsetTRelative(code)
    code_vec = b.EndVector()
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, code_vec)
    tflite.ModelAddSubgraphs(b, sg_vec)
    tflite.ModelAddBuffers(b, buf_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_offset_buffer_is_read_from_after_the_flatbuffer(tmp_path: Path) -> None:
    size = len(_model(1 << 20))  # the same layout whatever the offset's value
    offset = (size + 63) // 64 * 64
    data = _model(offset)
    assert len(data) == size
    path = tmp_path / "offsets.tflite"
    path.write_bytes(data + bytes(offset - size) + CONST.tobytes())
    x = np.random.default_rng(0).uniform(-1, 1, (1, 2, 3)).astype(np.float32)
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    (got,) = bundle.run({"x": x}).values()
    np.testing.assert_array_equal(got, x + CONST)
    (ref,) = run_litert(litert(path), [x])
    np.testing.assert_array_equal(got, ref)
