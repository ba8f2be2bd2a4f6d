"""Which frontend reads a model file, decided by its content (not its suffix)."""

from __future__ import annotations

import os

from ember.errors import ModelFormatError

TFLITE_IDENTIFIER = b"TFL3"  # a TFLite flatbuffer's file identifier, at bytes 4..8
_MAX_YAML_BYTES = 1 << 20

CONVERT_HINT = ("export it to ONNX (tf2onnx for TensorFlow/Keras, torch.onnx.export for PyTorch) or convert it "
                "with tf.lite.TFLiteConverter")


def model_format(path: str) -> str:
    """'tflite' for a TFLite flatbuffer, 'onnx' otherwise (the ONNX reader then decides whether it is one).
    A deployment file (YAML with `models:`) is refused here with the command that builds it."""
    if not os.path.exists(path):
        raise ModelFormatError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ModelFormatError(f"{path}: is a directory, expected a model file (.onnx or .tflite) or a "
                               "TensorFlow SavedModel directory (one holding saved_model.pb)")
    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] == TFLITE_IDENTIFIER:
        return "tflite"
    if _is_deployment_file(path):
        raise ModelFormatError(f"{path}: a deployment file, not a model; build it with `ember deploy {path}`")
    return "onnx"


def _is_deployment_file(path: str) -> bool:
    """Small UTF-8 text that is a YAML mapping with a `models` key (MACE's and ember deploy's format)."""
    if os.path.getsize(path) > _MAX_YAML_BYTES:
        return False
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (UnicodeDecodeError, yaml.YAMLError, ValueError):
        return False
    return isinstance(doc, dict) and "models" in doc


def neither(path: str, onnx_reason: str = "") -> ModelFormatError:
    """The error for a file of neither format; `onnx_reason`: why the ONNX reader refused it (a truncated
    ONNX file says so)."""
    why = f" (as ONNX: {onnx_reason})" if onnx_reason else ""
    return ModelFormatError(f"{path}: neither an ONNX nor a TFLite model{why}; {CONVERT_HINT}")
