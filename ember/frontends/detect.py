"""Which frontend reads a model file, decided by its content (not its suffix)."""

from __future__ import annotations

import os

from ember.errors import ModelFormatError

TFLITE_IDENTIFIER = b"TFL3"  # a TFLite flatbuffer's file identifier, at bytes 4..8

CONVERT_HINT = ("export it to ONNX (tf2onnx for TensorFlow/Keras, torch.onnx.export for PyTorch) or convert it "
                "with tf.lite.TFLiteConverter")


def model_format(path: str) -> str:
    """'tflite' for a TFLite flatbuffer, 'onnx' otherwise (the ONNX reader then decides whether it is one)."""
    if not os.path.exists(path):
        raise ModelFormatError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ModelFormatError(f"{path}: is a directory, expected a model file (.onnx or .tflite)")
    with open(path, "rb") as f:
        head = f.read(8)
    return "tflite" if head[4:8] == TFLITE_IDENTIFIER else "onnx"


def neither(path: str, onnx_reason: str = "") -> ModelFormatError:
    """The error for a file of neither format; `onnx_reason`: why the ONNX reader refused it (a truncated
    ONNX file says so)."""
    why = f" (as ONNX: {onnx_reason})" if onnx_reason else ""
    return ModelFormatError(f"{path}: neither an ONNX nor a TFLite model{why}; {CONVERT_HINT}")
