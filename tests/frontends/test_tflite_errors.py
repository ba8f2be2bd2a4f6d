"""Format detection by content and the TFLite frontend's one-line errors."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import tflite

from ember.config import CompileOptions
from ember.driver import load_graph
from ember.errors import ModelFormatError, UnsupportedOperatorError
from tests.frontends.tflite_support import FIXTURES


def _load(path: Path):
    return load_graph(str(path), CompileOptions())


def test_detected_by_content_not_suffix(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"  # a TFLite file under an ONNX name
    model.write_bytes((FIXTURES / "matmul_ops.tflite").read_bytes())
    graph, _ = _load(model)
    assert graph.op_counts()["MatMul"] == 2 and [v.shape for v in graph.inputs] == [(2, 3, 4), (2, 5, 4)]


@pytest.mark.parametrize("content", [b"", b"hello, world\n" * 10, b"\x00\x00\x00\x00TFL2" + b"\x00" * 64])
def test_other_files_are_neither_format(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "model.tflite"
    bad.write_bytes(content)
    with pytest.raises(ModelFormatError) as e:
        _load(bad)
    msg = str(e.value)
    assert msg.startswith(f"{bad}: neither an ONNX nor a TFLite model") and "\n" not in msg
    assert "tf2onnx" in msg and "torch.onnx.export" in msg and "TFLiteConverter" in msg


def test_deployment_file_is_named_as_one(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy.yml"
    deploy.write_text("library_name: kit\ntarget_abis: [host]\nmodels:\n  net:\n    model_file_path: net.onnx\n")
    with pytest.raises(ModelFormatError) as e:
        _load(deploy)
    assert str(e.value) == f"{deploy}: a deployment file, not a model; build it with `ember deploy {deploy}`"


def test_truncated_flatbuffer(tmp_path: Path) -> None:
    data = (FIXTURES / "conv_pool.tflite").read_bytes()
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelFormatError, match=r"cut\.tflite: malformed or truncated TFLite flatbuffer"):
        _load(cut)


def test_custom_and_unsupported_builtins_are_named() -> None:
    with pytest.raises(UnsupportedOperatorError) as e:
        _load(FIXTURES / "refused_ops.tflite")
    msg = str(e.value)
    assert "'Igamma'" in msg and "custom operator" in msg and "MATRIX_DIAG (operator" in msg and "\n" not in msg


def _tensor_field_pos(data: bytes, tensor: int, slot: int) -> int:
    """Byte position of field `slot` (a vtable offset) of subgraph 0's tensor `tensor`."""
    t = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Tensors(tensor)
    off = t._tab.Offset(slot)
    assert off, "field not stored"
    return t._tab.Pos + off


def test_buffer_index_out_of_range(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / "matmul_ops.tflite").read_bytes())
    sg = tflite.Model.GetRootAs(bytes(data), 0).Subgraphs(0)
    index = sg.InputsAsNumpy()[0]
    pos = _tensor_field_pos(bytes(data), int(index), 8)  # Tensor.buffer
    data[pos:pos + 4] = struct.pack("<I", 4000)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match=r"tensor \d+ \('[^']+'\) names buffer 4000, but the model has \d+"):
        _load(bad)


def test_unsupported_builtin_named_with_index(tmp_path: Path) -> None:
    """An operator code rewritten to MATRIX_DIAG, which this frontend does not convert."""
    data = bytearray((FIXTURES / "matmul_ops.tflite").read_bytes())
    code = tflite.Model.GetRootAs(bytes(data), 0).OperatorCodes(0)
    for slot, fmt in ((4, "<b"), (10, "<i")):  # deprecated_builtin_code (int8), builtin_code (int32)
        off = code._tab.Offset(slot)
        if off:
            data[code._tab.Pos + off:code._tab.Pos + off + struct.calcsize(fmt)] = struct.pack(fmt, 113)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(bytes(data))
    with pytest.raises(UnsupportedOperatorError, match=r"unsupported operator 'MATRIX_DIAG' \(domain 'tflite'\) "
                                                       r"at node 'operator 0'"):
        _load(bad)
