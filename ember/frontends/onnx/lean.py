"""Read an .onnx file without holding its weights twice.

Parsing a model with protobuf keeps every initializer's bytes inside the proto, and converting them to
arrays copies them again, so a 100 MB model costs 200 MB before any compiling (and protobuf keeps its
memory until the whole proto is gone). Here the file is walked at the protobuf wire level instead: the
initializers' `raw_data` fields are skipped and only their place in the file is kept, the rest of the
model is parsed as usual, and each initializer's bytes are read from the file straight when it becomes
an array. Only ModelProto.graph (field 7), GraphProto.initializer (5) and TensorProto.raw_data (9) are
looked into; everything else is copied through byte for byte.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import onnx
from onnx import numpy_helper

_MODEL_GRAPH, _GRAPH_INITIALIZER, _TENSOR_RAW_DATA = 7, 5, 9
_LENGTH_DELIMITED = 2
_DROP = object()  # what a visit returns for a field left out of the re-encoded message


class NotLean(Exception):
    """The file is not in a form this reader takes (the caller parses it the usual way)."""


@dataclass
class LeanModel:
    model: onnx.ModelProto
    path: str
    raw_spans: dict[int, tuple[int, int]]  # initializer index -> (file offset, length) of its raw_data

    def initializer_array(self, index: int) -> np.ndarray:
        """Initializer `index` as an array; its bytes are read from the file only now."""
        init = self.model.graph.initializer[index]
        span = self.raw_spans.get(index)
        if span is None:
            return numpy_helper.to_array(init)
        tensor = onnx.TensorProto()
        tensor.CopyFrom(init)
        with open(self.path, "rb") as f:
            f.seek(span[0])
            tensor.raw_data = f.read(span[1])
        return numpy_helper.to_array(tensor)


def read_lean(path: str) -> LeanModel:
    """The model with its initializers' raw bytes left in the file; NotLean if the file is not plain
    protobuf of the expected shape (then nothing is lost: the caller reads it the usual way)."""
    spans: dict[int, tuple[int, int]] = {}
    with open(path, "rb") as f:
        size = f.seek(0, io.SEEK_END)
        f.seek(0)
        stripped = _message(f, size, lambda field, f, end: _graph(f, end, spans) if field == _MODEL_GRAPH else None)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(stripped)
    except Exception as e:  # noqa: BLE001 - any parse failure: the usual reader names it
        raise NotLean(str(e)) from None
    return LeanModel(model, path, spans)


def _graph(f: BinaryIO, end: int, spans: dict[int, tuple[int, int]]) -> bytes:
    count = 0

    def visit(field: int, f: BinaryIO, end: int) -> bytes | None:
        nonlocal count
        if field != _GRAPH_INITIALIZER:
            return None
        index, count = count, count + 1
        return _message(f, end, lambda fld, f, e: _skip_raw(fld, f, e, index, spans))

    return _message(f, end, visit)


def _skip_raw(field: int, f: BinaryIO, end: int, index: int, spans: dict[int, tuple[int, int]]) -> bytes | None:
    if field != _TENSOR_RAW_DATA:
        return None
    start = f.tell()
    spans[index] = (start, end - start)
    f.seek(end)
    return _DROP


def _message(f: BinaryIO, end: int, visit) -> bytes:
    """Re-encode the message in f up to `end`; `visit(field, f, field_end)` may replace a length-delimited
    field's payload (bytes), drop the field (_DROP) or return None to copy it as it is."""
    out = bytearray()
    while f.tell() < end:
        tag = _varint(f)
        field, wire = tag >> 3, tag & 7
        if wire == _LENGTH_DELIMITED:
            length = _varint(f)
            field_end = f.tell() + length
            if field_end > end:
                raise NotLean("a field runs past its message")
            payload = visit(field, f, field_end)
            if payload is None:
                payload = f.read(length)
                if len(payload) != length:
                    raise NotLean("truncated file")
            elif f.tell() != field_end:
                f.seek(field_end)
            if payload is not _DROP:
                out += _encode_varint(tag) + _encode_varint(len(payload)) + payload
        elif wire == 0:
            out += _encode_varint(tag) + _encode_varint(_varint(f))
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            data = f.read(n)
            if len(data) != n:
                raise NotLean("truncated file")
            out += _encode_varint(tag) + data
        else:
            raise NotLean(f"wire type {wire}")
    if f.tell() != end:
        raise NotLean("a field runs past its message")
    return bytes(out)


def _varint(f: BinaryIO) -> int:
    result = shift = 0
    while True:
        b = f.read(1)
        if not b:
            raise NotLean("truncated file")
        result |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return result
        shift += 7
        if shift > 63:
            raise NotLean("varint too long")


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
