"""Write the small TFLite models the TFLite frontend's tests run (tests/fixtures/tflite/*.tflite).

Needs tensorflow-cpu (`pip install -e '.[tflite-fixtures]'`); the tests themselves need only the committed
files. Weights and calibration data come from fixed seeds, so running this again rewrites the same bytes
(`--check` verifies that without writing).

    python scripts/make_tflite_fixtures.py [--out tests/fixtures/tflite] [--check]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tflite_handmade import clear_unused_buffers, handmade, int8_lstm_cifg_peephole  # noqa: E402
from tflite_op_fixtures import (  # noqa: E402
    INT16_LATE,
    INT16_OPS,
    RESCALED,
    int16_op_models,
    late_int16_models,
    op_models,
    op_specs,
    rescale_input,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tflite"


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> tf.Tensor:
    return tf.constant(rng.normal(0, scale, shape).astype(np.float32))


# ---- tiny per-family models (tf.function, so each TF op maps onto one TFLite builtin) ----------------------

def conv_pool() -> tuple[Callable, list[tf.TensorSpec]]:
    r = _rng(1)
    w1, b1 = _w(r, 3, 3, 3, 8), _w(r, 8)
    dw, db = _w(r, 3, 3, 8, 2), _w(r, 16)
    w3, b3 = _w(r, 1, 1, 16, 12), _w(r, 12)
    fc, fb = _w(r, 12 * 3 * 3, 10), _w(r, 10)

    def f(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "SAME") + b1)
        y = tf.nn.relu6(tf.nn.depthwise_conv2d(y, dw, [1, 2, 2, 1], "SAME") + db)
        y = tf.nn.max_pool2d(y, 2, 1, "SAME")
        y = tf.nn.conv2d(y, w3, 1, "VALID") + b3
        y = tf.nn.avg_pool2d(y, 3, 2, "SAME")
        y = tf.reshape(y, [1, -1])
        return tf.nn.softmax(tf.matmul(y, fc) + fb)

    return f, [tf.TensorSpec([1, 11, 11, 3], tf.float32)]


def conv_variants() -> tuple[Callable, list[tf.TensorSpec]]:
    r = _rng(2)
    w1 = _w(r, 3, 3, 4, 6)
    wt = _w(r, 3, 3, 5, 6)  # conv2d_transpose: [H, W, out, in]
    w2, b2 = _w(r, 2, 2, 5, 4), _w(r, 4)
    fc, fb = _w(r, 4, 7), _w(r, 7)

    def f(x):
        y = tf.nn.tanh(tf.nn.conv2d(x, w1, 2, "VALID", dilations=1))
        y = tf.nn.conv2d_transpose(y, wt, [1, 10, 10, 5], 2, "SAME")
        y = tf.nn.conv2d(y, w2, 1, "SAME", dilations=2) + b2
        y = tf.nn.avg_pool2d(y, [3, 2], [2, 1], "VALID")
        y = tf.nn.leaky_relu(y, 0.1)
        return tf.nn.max_pool2d(y, 2, 2, "VALID"), tf.einsum("bhwc,cd->bhwd", y, fc) + fb  # FC keep_num_dims

    return f, [tf.TensorSpec([1, 11, 11, 4], tf.float32)]


def elementwise() -> tuple[Callable, list[tf.TensorSpec]]:
    r = _rng(3)
    alpha = tf.constant(r.uniform(0.05, 0.3, (6,)).astype(np.float32))

    def f(a, b):
        pos = tf.abs(b) + 0.5
        y = a + b
        y = (y - a * 0.5) * b / pos
        y = tf.maximum(y, -2.0) + tf.minimum(a, b) + tf.math.squared_difference(a, b) * 0.1
        y = y + tf.exp(-tf.abs(a)) + tf.math.log(pos) + tf.sqrt(pos) + tf.math.rsqrt(pos)
        y = y - tf.floor(a) + tf.math.ceil(b)
        y = y + tf.nn.relu(-y) + tf.nn.sigmoid(a) + tf.nn.tanh(b) + tf.negative(tf.nn.relu6(a * 4.0))
        y = y + tf.clip_by_value(a, -1.0, 1.0) + a * tf.nn.relu6(a + 3.0) / 6.0 + tf.nn.gelu(b, approximate=False)
        y = y + tf.pow(pos, 1.5) + (tf.nn.relu(a) - alpha * tf.nn.relu(-a))  # PRELU
        return tf.nn.softmax(y * 1.5), tf.nn.gelu(a, approximate=True)

    spec = tf.TensorSpec([1, 4, 5, 6], tf.float32)
    return f, [spec, spec]


def reduce_misc() -> tuple[Callable, list[tf.TensorSpec]]:
    def f(x):
        m = tf.reduce_mean(x, [1, 2], keepdims=True)
        s = tf.reduce_sum(x, -1)
        mx = tf.reduce_max(x, [0, 3])
        am = tf.argmax(x, -1, output_type=tf.int32)
        return x - m, s, mx, am, tf.argmin(x, 1, output_type=tf.int32)

    return f, [tf.TensorSpec([1, 4, 5, 6], tf.float32)]


def shape_ops() -> tuple[Callable, list[tf.TensorSpec]]:
    idx = tf.constant([3, 0, 2], tf.int32)

    def f(x):  # x: [1, 6, 4, 8]
        a = tf.reshape(x, [6, 32])
        a = tf.transpose(a)  # [32, 6]
        b = tf.squeeze(tf.expand_dims(a, 0), 0)
        parts = tf.split(x, 2, axis=3)
        v1, v2, v3 = tf.split(x, [1, 2, -1], axis=1)
        st = tf.stack([v1, v1], axis=2)
        u0, u1 = tf.unstack(parts[0][:, :2], axis=1)
        c = tf.concat([parts[1], parts[0] * 2.0], axis=-1)
        s = tf.slice(x, [0, 1, 0, 2], [1, 3, -1, 4])
        ss = x[:, 1::2, ::-1, 3]  # shrink + negative stride
        se = x[..., None, 2:7:2]  # ellipsis + new axis
        g = tf.gather(x, idx, axis=3)
        p = tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]])
        p2 = tf.pad(x, [[0, 0], [1, 1], [0, 2], [0, 0]], constant_values=-1.5)
        mp = tf.pad(x, [[0, 0], [2, 1], [1, 1], [0, 0]], mode="REFLECT")
        sp = tf.pad(x, [[0, 0], [1, 2], [2, 0], [0, 0]], mode="SYMMETRIC")
        return b, c, s, ss, se, g, p, p2, mp, st, u0 + u1, v2, v3, sp

    return f, [tf.TensorSpec([1, 6, 4, 8], tf.float32)]


def resize_space() -> tuple[Callable, list[tf.TensorSpec]]:
    def f(x):  # [1, 4, 6, 8]
        outs = [tf.compat.v1.image.resize_bilinear(x, [7, 9], align_corners=a, half_pixel_centers=h)
                for a, h in ((False, False), (True, False), (False, True))]
        outs += [tf.compat.v1.image.resize_nearest_neighbor(x, [8, 13], align_corners=a, half_pixel_centers=h)
                 for a, h in ((False, False), (True, False), (False, True))]
        d2s = tf.nn.depth_to_space(x, 2)
        s2d = tf.nn.space_to_depth(x, 2)
        return (*outs, d2s, s2d, tf.cast(tf.cast(x * 3.0, tf.int32), tf.float32))

    return f, [tf.TensorSpec([1, 4, 6, 8], tf.float32)]


def matmul_ops() -> tuple[Callable, list[tf.TensorSpec]]:
    def f(a, b):  # [2, 3, 4], [2, 5, 4]
        return tf.matmul(a, b, transpose_b=True), tf.matmul(tf.transpose(a, [0, 2, 1]), a)

    return f, [tf.TensorSpec([2, 3, 4], tf.float32), tf.TensorSpec([2, 5, 4], tf.float32)]


def refused_ops() -> tuple[Callable, list[tf.TensorSpec]]:
    """For the error tests: MATRIX_DIAG (a builtin this frontend does not convert) and a custom op (Igamma,
    which TFLite has no builtin for)."""
    def f(x):
        return tf.linalg.diag(x), tf.math.igamma(tf.abs(x) + 1.0, tf.abs(x) + 2.0)

    return f, [tf.TensorSpec([1, 4], tf.float32)]


def math_more() -> tuple[Callable, list[tf.TensorSpec]]:
    """The second batch of elementwise, comparison, scan and normalization builtins."""
    idx = tf.constant([[0, 1], [0, 3], [0, 2]], tf.int32)

    def f(x, y):  # [1, 4, 6, 3] each
        c = tf.math.cumsum(x, 1) + tf.math.cumsum(x, 2, exclusive=True, reverse=True)
        vals, ind = tf.math.top_k(x, 2)
        r = tf.round(x * 3.0) + tf.math.floordiv(x, 0.3) + tf.math.floormod(x, 0.3) + tf.math.floormod(-x, 0.7)
        red = tf.reduce_min(x, [1, 2]) + tf.reduce_prod(y + 1.0, 1)[0, 0]
        sel = tf.where(x > y, x, y * 2.0) + tf.where(tf.logical_or(x <= 0.0, y >= 0.5), 1.0, 0.0)
        sel2 = tf.where(tf.logical_and(tf.not_equal(x, y), tf.logical_not(tf.equal(x, 0.5))), x, -y)
        sel3 = tf.where(tf.less(x, 0.1) | tf.greater_equal(y, 0.2), x, y)
        n = tf.nn.l2_normalize(x, -1) + tf.nn.local_response_normalization(x, 1, 0.5, 0.2, 0.75)
        t = tf.tile(x, [1, 1, 2, 1]) + tf.broadcast_to(y[:, :1, :1], [1, 4, 12, 3])
        a = tf.cast(x * 20.0, tf.int32)
        d = tf.where(y > 0.0, 1, -1) * (tf.cast(tf.abs(y) * 6.0, tf.int32) + 1)  # never zero
        ints = tf.math.floordiv(a, d) * 100 + tf.math.floormod(a, d)
        return (c, vals, ind, r, red, sel + sel2 + sel3, n, t, tf.nn.elu(x * 2.0), tf.nn.log_softmax(x),
                tf.gather_nd(x, idx), ints)

    spec = tf.TensorSpec([1, 4, 6, 3], tf.float32)
    return f, [spec, spec]


def math_more_int8() -> tuple[Callable, list[tf.TensorSpec]]:
    """The builtins of math_more that TFLite runs on int8."""
    idx = tf.constant([[0, 1], [0, 3], [0, 2]], tf.int32)

    def f(x, y):
        sel = tf.where(x > y, x, y)
        n = tf.nn.l2_normalize(x, -1)
        t = tf.tile(x, [1, 1, 2, 1]) + tf.broadcast_to(y[:, :1, :1], [1, 4, 12, 3])
        return (tf.reduce_min(x, [1, 2]), sel, n, t, tf.nn.elu(x * 2.0), tf.nn.log_softmax(x),
                tf.gather_nd(x, idx))

    spec = tf.TensorSpec([1, 4, 6, 3], tf.float32)
    return f, [spec, spec]


def space_batch() -> tuple[Callable, list[tf.TensorSpec]]:
    """SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on their own, with paddings and crops."""
    def f(x):  # [1, 5, 6, 3]
        s = tf.space_to_batch_nd(x, [2, 3], [[1, 0], [0, 0]])  # [6, 3, 2, 3]
        b = tf.compat.v1.batch_to_space_nd(s * 2.0, [2, 3], [[0, 1], [1, 2]])
        return s, b

    return f, [tf.TensorSpec([1, 5, 6, 3], tf.float32)]


def control_flow() -> tuple[Callable, list[tf.TensorSpec]]:
    """WHILE (a condition computed from the values: a run-time exit) and IF, each over their own subgraphs."""
    def f(x):
        i, v = tf.while_loop(lambda i, v: tf.reduce_sum(tf.abs(v)) < 20.0, lambda i, v: (i + 1, v * 1.5 + 0.25),
                             [tf.constant(0), x])
        c = tf.cond(tf.reduce_sum(x) > 0.0, lambda: tf.nn.relu(x) * 3.0, lambda: x - 1.0)
        return v, i, c

    return f, [tf.TensorSpec([1, 4], tf.float32)]


def sparse_fc() -> tf.keras.Model:
    """A Dense layer whose weights are 80% zeros in 1x4 blocks: the converter stores them sparse, read through
    DENSIFY or directly by FULLY_CONNECTED."""
    tf.keras.utils.set_random_seed(8)
    L = tf.keras.layers
    x = inp = L.Input((16,), batch_size=1)
    x = L.Dense(12, activation="relu")(x)
    model = tf.keras.Model(inp, L.Dense(8)(x))
    r = _rng(8)
    for layer in model.layers[1:]:
        w, b = layer.get_weights()
        keep = np.repeat(r.uniform(size=(w.shape[0], w.shape[1] // 4)) < 0.2, 4, axis=1)
        layer.set_weights([(w * keep).astype(np.float32), b])
    return model


# ---- small networks (Keras, fixed seeds) ----------------------------------------------------------------

def kws_cnn() -> tf.keras.Model:
    """A depthwise-separable keyword-spotting CNN (DS-CNN-like) on 49x10 MFCC frames."""
    tf.keras.utils.set_random_seed(4)
    L = tf.keras.layers
    x = inp = L.Input((49, 10, 1), batch_size=1)
    x = L.Conv2D(16, (10, 4), strides=2, padding="same", activation="relu")(x)
    for _ in range(2):
        x = L.DepthwiseConv2D(3, padding="same")(x)
        x = L.BatchNormalization()(x)
        x = L.ReLU()(x)
        x = L.Conv2D(16, 1, activation="relu")(x)
    x = L.AveragePooling2D((25, 5))(x)
    x = L.Flatten()(x)
    return tf.keras.Model(inp, L.Dense(12, activation="softmax")(x))


def mobilenet_like() -> tf.keras.Model:
    """MobileNetV2's structure at width 0.35 (stem, inverted residual blocks with ReLU6, 1x1 head), cut
    down to 32x32 inputs and four blocks so that the fixture stays small."""
    tf.keras.utils.set_random_seed(5)
    L = tf.keras.layers

    def block(x, expand: int, out: int, stride: int):
        c = x.shape[-1]
        y = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(c * expand, 1, use_bias=False)(x)))
        if stride == 2:
            y = L.ZeroPadding2D(((0, 1), (0, 1)))(y)
        y = L.DepthwiseConv2D(3, stride, padding="same" if stride == 1 else "valid", use_bias=False)(y)
        y = L.ReLU(6.0)(L.BatchNormalization()(y))
        y = L.BatchNormalization()(L.Conv2D(out, 1, use_bias=False)(y))
        return L.Add()([x, y]) if stride == 1 and c == out else y

    x = inp = L.Input((32, 32, 3), batch_size=1)
    x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, 2, padding="same", use_bias=False)(x)))
    x = block(x, 1, 8, 1)
    x = block(x, 6, 8, 2)
    x = block(x, 6, 8, 1)
    x = block(x, 6, 16, 2)
    x = L.ReLU(6.0)(L.Conv2D(64, 1)(x))
    x = L.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inp, L.Dense(10)(x))


def prelu_net() -> tf.keras.Model:
    """Keras' PReLU (one TFLite PRELU) and a ReLU6 the converter fuses into the MUL before it."""
    tf.keras.utils.set_random_seed(7)
    L = tf.keras.layers
    x = inp = L.Input((4, 5, 6), batch_size=1)
    y = L.PReLU(alpha_initializer=tf.keras.initializers.RandomUniform(0.05, 0.3), shared_axes=[1, 2])(x)
    return tf.keras.Model(inp, L.ReLU(6.0)(y * 3.0))


def _randomize_bn(model: tf.keras.Model, seed: int) -> None:
    """Untrained BatchNorm is the identity; give it statistics so that folding it is actually tested."""
    r = _rng(seed)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            g, b, m, v = layer.get_weights()
            stats = [r.uniform(0.5, 1.5, g.shape), r.normal(0, 0.1, b.shape), r.normal(0, 0.1, m.shape),
                     r.uniform(0.5, 2, v.shape)]
            layer.set_weights([s.astype(np.float32) for s in stats])


def int8_keras_lstm(time_major: bool, batch: int, steps: int, features: int, units: int, seed: int) -> bytes:
    """A Keras 2 LSTM (tf_keras: Keras 3's LSTM does not convert to the fused operator), return_sequences,
    converted to full int8: TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM. The converter leaves arbitrary
    bytes in unused buffers (the states' initial values), which are zeroed so that the file is reproducible."""
    import tf_keras as keras

    r = _rng(seed)
    shape = (batch, features) if time_major else (steps, features)
    inp = keras.Input(shape, batch_size=steps if time_major else batch)
    layer = keras.layers.LSTM(units, return_sequences=True, time_major=time_major)
    model = keras.Model(inp, layer(inp))
    layer.set_weights([r.normal(0, 0.4, w.shape).astype(np.float32) for w in layer.get_weights()])
    spec = tf.TensorSpec(model.inputs[0].shape, tf.float32)
    return clear_unused_buffers(_convert(lambda x: model(x, training=False), [spec], True, seed, trackable=model))


# ---- conversion -------------------------------------------------------------------------------------------

def _convert(fn: Callable | tf.keras.Model, specs: list[tf.TensorSpec], int8: bool, seed: int,
             fp16: bool = False, signature: bool = False, custom: bool = False, int8_io: bool = True,
             sparse: bool = False, int16: bool = False, trackable: object = None) -> bytes:
    """int8: full-integer int8 (int16: 16x8, int16 activations with int8 weights, int16 I/O). trackable: the
    object the converter reads the function's variables from (a Keras model)."""
    if isinstance(fn, tf.keras.Model):
        specs = [tf.TensorSpec(t.shape, t.dtype) for t in fn.inputs]
        model = fn
        fn = tf.function(lambda *xs: model(*xs, training=False))
    concrete = tf.function(fn).get_concrete_function(*specs)
    # With a trackable object the converter writes a serving signature (names for the inputs and outputs).
    conv = tf.lite.TFLiteConverter.from_concrete_functions(
        [concrete], trackable if trackable is not None else tf.Module() if signature else None)
    conv.allow_custom_ops = custom
    if int8:
        def data():
            r = _rng(seed)
            for _ in range(16):
                yield [r.uniform(-1, 1, s.shape).astype(np.float32) for s in specs]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if int16:
            conv.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        if int8_io:  # else float I/O: QUANTIZE and DEQUANTIZE operators at the edges
            conv.inference_input_type = tf.int16 if int16 else tf.int8
            conv.inference_output_type = tf.int16 if int16 else tf.int8
    elif sparse:
        conv.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    elif fp16:  # float16 weights behind DEQUANTIZE operators
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def fixtures() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name, make in (("conv_pool", conv_pool), ("conv_variants", conv_variants), ("elementwise", elementwise),
                       ("reduce_misc", reduce_misc), ("shape_ops", shape_ops), ("resize_space", resize_space),
                       ("matmul_ops", matmul_ops), ("refused_ops", refused_ops)):
        fn, specs = make()
        out[f"{name}.tflite"] = _convert(fn, specs, False, 0, signature=name == "elementwise",
                                         custom=name == "refused_ops")
        if name != "refused_ops":
            out[f"{name}_int8.tflite"] = _convert(fn, specs, True, 40)
    for seed, (name, make) in enumerate((("kws_cnn", kws_cnn), ("mobilenet_like", mobilenet_like))):
        model = make()
        _randomize_bn(model, 10 + seed)
        out[f"{name}.tflite"] = _convert(model, [], False, 0)
        out[f"{name}_int8.tflite"] = _convert(model, [], True, 20 + seed)
    out["kws_cnn_int8_float_io.tflite"] = _convert(kws_cnn(), [], True, 50, int8_io=False)
    fn, specs = conv_pool()
    out["conv_pool_fp16.tflite"] = _convert(fn, specs, False, 0, fp16=True)
    out["prelu_net.tflite"] = _convert(prelu_net(), [], False, 0)
    for name, make, int8 in (("math_more", math_more, False), ("math_more_int8", math_more_int8, True),
                             ("space_batch", space_batch, False), ("control_flow", control_flow, False)):
        fn, specs = make()
        out[f"{name}.tflite"] = _convert(fn, specs, int8, 41)
    out["sparse_fc.tflite"] = _convert(sparse_fc(), [], False, 0, sparse=True)
    out.update(handmade())
    for name, (fn, n) in op_models().items():  # one operator each, for the bit-exactness tests
        out[f"op_{name}_int8.tflite"] = _convert(fn, op_specs(n), True, 61)
    for name, (base, scale) in RESCALED.items():
        out[f"op_{name}_int8.tflite"] = rescale_input(out[f"op_{base}_int8.tflite"], scale)
    models = {**op_models(), **int16_op_models()}
    for name in INT16_OPS:  # 16x8: int16 activations, int8 weights
        fn, n = models[name]
        out[f"op_{name}_int16.tflite"] = _convert(fn, op_specs(n), True, 61, int16=True)
    fn, n = models["add_relu"]  # float32 I/O: a QUANTIZE to int16 before, a DEQUANTIZE after
    out["op_add_relu_float_io_int16.tflite"] = _convert(fn, op_specs(n), True, 61, int16=True, int8_io=False)
    for seed, (name, make) in enumerate((("kws_cnn", kws_cnn), ("mobilenet_like", mobilenet_like))):
        model = make()
        _randomize_bn(model, 10 + seed)
        out[f"{name}_int16.tflite"] = _convert(model, [], True, 20 + seed, int16=True)
    models.update(late_int16_models())
    for name in INT16_LATE:  # converted last, so that the files above keep their bytes
        fn, n = models[name]
        out[f"op_{name}_int16.tflite"] = _convert(fn, op_specs(n), True, 61, int16=True)
    out["lstm_int8.tflite"] = int8_keras_lstm(False, 1, 8, 12, 16, 70)
    out["lstm_int8_time_major.tflite"] = int8_keras_lstm(True, 2, 5, 6, 8, 71)
    out["lstm_int8_cifg_peephole.tflite"] = int8_lstm_cifg_peephole(out["lstm_int8_time_major.tflite"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    differ = []
    for name, data in fixtures().items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                differ.append(name)
        else:
            path.write_bytes(data)
            print(f"{path}: {len(data)} bytes")
    if differ:
        print(f"differ from the committed files: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
