"""The TFLite operator table: builtin name -> converter (one family module each), and operator options.

A converter takes an OpContext (context.py) and emits canonical IR nodes (the forms ember/ops documents,
which the ONNX frontend produces too) for one TFLite operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tflite

from ember.frontends.tflite import ops_control, ops_math, ops_nn, ops_seq, ops_shape
from ember.frontends.tflite.context import OpContext

Converter = Callable[[OpContext], None]

CONVERTERS: dict[str, Converter] = {**ops_nn.CONVERTERS, **ops_math.CONVERTERS, **ops_shape.CONVERTERS,
                                    **ops_seq.CONVERTERS, **ops_control.CONVERTERS}

# Operators whose int16 activations (16x8 models) run on TFLite's exact int16 arithmetic (ops/q16.py,
# passes/fold_qdq16.py) or only move the stored values; an int16 tensor at any other operator is refused by
# name rather than computed approximately in float (loader.py, INT16_EXACT: these, and the int8 SVDF and LSTM,
# which keep int16 state of their own).
INT16_OPS = frozenset({
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D",
    "CONCATENATION", "QUANTIZE", "DEQUANTIZE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "SOFTMAX",
    "RESIZE_BILINEAR", "MEAN", "TRANSPOSE_CONV", "RELU", "LEAKY_RELU", "RELU6", "MAXIMUM", "MINIMUM", "PAD",
    "PADV2", "SLICE", "STRIDED_SLICE", "SPLIT", "SPLIT_V", "GATHER", "PACK", "UNPACK", "SUM", "REDUCE_MAX",
    "REDUCE_MIN", "ABS", "BATCH_MATMUL", "RESIZE_NEAREST_NEIGHBOR", "MIRROR_PAD", "GATHER_ND", "BROADCAST_TO",
    "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "LOGISTIC", "TANH", "REDUCE_PROD", "EXP", "GELU",
    "LOG", "RSQRT"})
INT16_EXACT = INT16_OPS | {"SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"}

_CUSTOM = tflite.BuiltinOperator.CUSTOM
# BuiltinOptions union tag -> the name of its table class in the `tflite` package.
_OPTION_CLASSES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if isinstance(v, int) and k != "NONE"}


def builtin_name(code: Any) -> str:
    """An OperatorCode's name: TFLite's builtin name (ADD, CONV_2D), or "custom op 'NAME'"."""
    # Codes above 127 live only in builtin_code; older files keep the deprecated 8-bit field.
    number = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
    if number == _CUSTOM:
        custom = code.CustomCode()
        return f"custom op '{custom.decode('utf-8', 'replace') if custom else '?'}'"
    return tflite.utils.BUILTIN_OPCODE2NAME.get(number, f"builtin operator {number}")


def options_of(op: Any, name: str) -> Any:
    """The operator's BuiltinOptions table as its typed class (None when it has none); a custom operator's
    custom_options bytes."""
    if name.startswith("custom op "):
        return op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
    tag = op.BuiltinOptionsType()
    cls_name = _OPTION_CLASSES.get(tag)
    table = op.BuiltinOptions()
    if cls_name is None or table is None:
        return None
    options = getattr(tflite, cls_name)()
    options.Init(table.Bytes, table.Pos)
    return options

