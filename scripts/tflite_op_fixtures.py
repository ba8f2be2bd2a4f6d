"""One-operator full-integer TFLite models for the bit-exactness tests (tests/frontends/test_tflite_int8.py):
each int8 input is [1, 4, 8, 8], 256 elements, so that a unary operator can be fed every int8 value at once.
make_tflite_fixtures.py converts them (int8 I/O, its seeded calibration data) as op_NAME_int8.tflite, and
those of INT16_OPS in 16x8 mode (int16 activations and I/O, int8 weights) as op_NAME_int16.tflite."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

SHAPE = [1, 4, 8, 8]


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> tf.Tensor:
    return tf.constant(rng.normal(0, scale, shape).astype(np.float32))


def op_models() -> dict[str, tuple[Callable, int]]:
    """name -> (a tf function of its inputs, the number of [1, 4, 8, 8] inputs)."""
    r = np.random.default_rng(60)
    w, dw, b, fc, wt = _w(r, 3, 3, 8, 6), _w(r, 3, 3, 8, 1), _w(r, 8), _w(r, 8, 5), _w(r, 3, 3, 6, 8)
    return {
        "add": (lambda a, c: a + c, 2),
        "add_relu": (lambda a, c: tf.nn.relu(a + c * 2.0), 2),
        "sub": (lambda a, c: a - c, 2),
        "mul": (lambda a, c: a * c, 2),
        "concat": (lambda a, c: tf.concat([a, c * 3.0], -1), 2),
        "conv_relu6": (lambda a: tf.nn.relu6(tf.nn.conv2d(a, w, 1, "SAME") + b[:6]), 1),
        "depthwise": (lambda a: tf.nn.depthwise_conv2d(a, dw, [1, 1, 1, 1], "SAME") + b, 1),
        "fully_connected": (lambda a: tf.einsum("bhwc,cd->bhwd", a, fc), 1),
        "avgpool": (lambda a: tf.nn.avg_pool2d(a, 3, 2, "SAME"), 1),
        "maxpool": (lambda a: tf.nn.max_pool2d(a, 2, 2, "VALID"), 1),
        "leaky_relu": (lambda a: tf.nn.leaky_relu(a, 0.1), 1),
        "logistic": (lambda a: tf.nn.sigmoid(a * 4.0), 1),
        "tanh": (lambda a: tf.nn.tanh(a * 3.0), 1),
        "logistic_alone": (tf.nn.sigmoid, 1),  # the model's input is the operator's: rescale_input
        "tanh_alone": (tf.nn.tanh, 1),
        "hard_swish_alone": (lambda a: a * tf.nn.relu6(a + 3.0) / 6.0, 1),  # one HARD_SWISH operator
        "hard_swish": (lambda a: a * tf.nn.relu6(a * 4.0 + 3.0) / 6.0, 1),
        "softmax": (lambda a: tf.nn.softmax(a * 2.0), 1),
        "mean": (lambda a: tf.reduce_mean(a, [1, 2], keepdims=True), 1),
        "transpose_conv": (lambda a: tf.nn.conv2d_transpose(a, wt, [1, 8, 16, 6], 2, "SAME"), 1),
        "relu": (tf.nn.relu, 1),  # a RELU of its own (none to fuse it into)
        "resize_bilinear": (lambda a: tf.compat.v1.image.resize_bilinear(a, [7, 13], half_pixel_centers=True), 1),
        # LiteRT runs these on int8 (TFLite Micro has no int8 kernel for them); RSQRT of a negative fails it
        "sqrt": (lambda a: tf.sqrt(tf.abs(a * 3.0)), 1),
        "rsqrt": (lambda a: tf.math.rsqrt(tf.abs(a) + 0.25), 1),
    }


# The op_models converted in 16x8 mode as well (op_NAME_int16.tflite: int16 activations, int8 weights).
def int16_op_models() -> dict[str, tuple[Callable, int]]:
    """Models made in 16x8 mode only (op_NAME_int16.tflite; no int8 twin)."""
    # (numpy, not a tf.constant: INT16_OPS calls this at import, and a TensorFlow object made then would shift
    # the names in the control-flow fixtures converted after it)
    bmm = np.random.default_rng(62).normal(0, 0.3, (4, 8, 5)).astype(np.float32)
    return {
        # a RELU6 of its own, over [-8, 8] (CONCATENATION fuses no activation): both bounds clamp, and its
        # output scale differs from its input's (LiteRT rescales, TFLite Micro does not)
        "relu6": (lambda a, c: tf.nn.relu6(tf.concat([a, c * 8.0], -1)), 2),
        "max_min": (lambda a, c: tf.minimum(tf.maximum(a, c * 2.0), 0.5), 2),  # MAXIMUM, MINIMUM (a constant)
        "pad": (lambda a: tf.pad(a * 2.0, [[0, 0], [1, 2], [0, 1], [0, 0]]), 1),
        "slice_split": (lambda a: tuple(tf.split(a[:, 1:4, ::2, :], [2, 6], axis=-1)), 1),  # STRIDED_SLICE, SPLIT_V
        "gather": (lambda a: tf.gather(a, [3, 0, 2, 2], axis=-1), 1),  # LiteRT only: Micro has no int16 GATHER
        "pack": (lambda a, c: tf.stack([a, c * 2.0], axis=1), 2),  # a QUANTIZE brings a to the output's scale
        "unpack": (lambda a: tuple(tf.unstack(a * 2.0, axis=1)), 1),
        "abs": (lambda a: tf.abs(a * 3.0), 1),
        # REDUCE_MAX / REDUCE_MIN: LiteRT only (TFLite Micro's take float32 and int8 only)
        "reduce_max_min": (lambda a: (tf.reduce_max(a, [1, 2], keepdims=True), tf.reduce_min(a, -1)), 1),
        "sum": (lambda a: (tf.reduce_sum(a, [1, 2], keepdims=True), tf.reduce_sum(a, -1)), 1),
        "mean_axes": (lambda a: tf.reduce_mean(a, [1, 3]), 1),  # not H and W: QuantizedMeanOrSum's general path
        "batch_matmul": (lambda a, c: tf.matmul(a, c, transpose_b=True), 2),  # adj_y
        "batch_matmul_const": (lambda a: tf.matmul(a, bmm), 1),  # an int16 constant right-hand side
        "reduce_prod": (lambda a: tf.reduce_prod(a, -1), 1),  # LiteRT only: Micro has no REDUCE_PROD
        "resize_nearest": (lambda a: tf.compat.v1.image.resize_nearest_neighbor(a * 2.0, [7, 13],
                                                                                 half_pixel_centers=True), 1),
        "broadcast_to": (lambda a: tf.broadcast_to(a[:, :1] * 2.0, [1, 4, 8, 8]), 1),
        # LiteRT only (TFLite Micro has no int16 MIRROR_PAD, GATHER_ND, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND)
        "mirror_pad": (lambda a: (tf.pad(a * 2.0, [[0, 0], [1, 2], [2, 1], [0, 0]], "REFLECT"),
                                  tf.pad(a * 2.0, [[0, 0], [1, 1], [0, 2], [0, 0]], "SYMMETRIC")), 1),
        "gather_nd": (lambda a: tf.gather_nd(a * 2.0, [[0, 1], [0, 3], [0, 1]]), 1),
        # RESHAPE (also SQUEEZE, EXPAND_DIMS), TRANSPOSE: the stored integers
        "reshapes": (lambda a: (tf.transpose(tf.reshape(a * 2.0, [1, 32, 8]), [0, 2, 1]),
                                tf.expand_dims(tf.squeeze(a[:, 1:2], 1), 1)), 1),
        "space_batch": (lambda a: (tf.space_to_batch_nd(a * 2.0, [2, 2], [[0, 0], [0, 0]]),
                                   tf.compat.v1.batch_to_space_nd(tf.concat([a, a * 0.5, a, a], 0), [2, 2],
                                                                  [[0, 0], [1, 0]])), 1),
    }


INT16_OPS = ["add", "add_relu", "sub", "mul", "concat", "conv_relu6", "depthwise", "fully_connected", "avgpool",
             "maxpool", "relu", "leaky_relu", "softmax", "mean", "transpose_conv", "resize_bilinear", "logistic",
             *int16_op_models()]


# 16x8 models added later (op_NAME_int16.tflite, converted after every other fixture): TANH, LOGISTIC / TANH
# whose input is the model's (the tests give it scales of their own), EXP, GELU (exact and tanh), LOG, RSQRT.
INT16_LATE = ["tanh", "logistic_alone", "tanh_alone", "exp", "gelu", "gelu_tanh", "log", "rsqrt"]


def late_int16_models() -> dict[str, tuple[Callable, int]]:
    """INT16_LATE's models that op_models has not."""
    return {"exp": (tf.exp, 1), "gelu": (tf.nn.gelu, 1),
            "gelu_tanh": (lambda a: tf.nn.gelu(a * 2.0, approximate=True), 1),
            "log": (lambda a: tf.math.log(tf.abs(a) + 0.1), 1)}


def op_specs(n: int) -> list[tf.TensorSpec]:
    return [tf.TensorSpec(SHAPE, tf.float32)] * n


# Input scales at which TFLite Micro's fixed-point LOGISTIC / TANH and LiteRT's float table disagree on some
# int8 input (found by comparing ember/frontends/tflite/exact.py's two tables, input zero point 0), and one
# at which HARD_SWISH's integer kernel and a float table do: the op_ models with their input scale rewritten.
RESCALED = {"logistic_rescaled": ("logistic_alone", 0.011914488859474659),
            "tanh_rescaled": ("tanh_alone", 0.02025909163057804),
            "hard_swish_rescaled": ("hard_swish_alone", 0.0328582301735878)}


def rescale_input(model: bytes, scale: float) -> bytes:
    """The model with its input's float32 scale (whose bytes must occur once in the file) replaced."""
    import tflite

    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    old = np.float32(sg.Tensors(sg.Inputs(0)).Quantization().Scale(0)).tobytes()
    assert model.count(old) == 1, "the input scale's bytes are not unique"
    return model.replace(old, np.float32(scale).tobytes())
