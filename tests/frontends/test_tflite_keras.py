"""`ember.compile` on a Keras model and on a SavedModel directory (converted in-process by TFLiteConverter),
float and with `representative_data` (full-integer int8, float I/O). Skipped without tensorflow."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.errors import OptionError


@pytest.fixture(scope="module")
def keras_model():
    tf = pytest.importorskip("tensorflow")
    tf.keras.utils.set_random_seed(3)
    L = tf.keras.layers
    x = inp = L.Input((8, 8, 3))  # batch unset: traced with batch 1
    x = L.Conv2D(4, 3, padding="same", activation="relu")(x)
    x = L.MaxPooling2D()(x)
    x = L.Flatten()(x)
    return tf.keras.Model(inp, L.Dense(5)(x), name="tiny_net")


def _x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)


def _run(bundle, x: np.ndarray) -> np.ndarray:
    return next(iter(bundle.run({bundle.manifest["inputs"][0]["name"]: x}).values()))


def test_keras_model_float(keras_model, tmp_path: Path) -> None:
    bundle = ember.compile(keras_model, tmp_path, opt_level=1)
    assert bundle.manifest["name"] == "tiny_net"
    for seed in (0, 1):
        x = _x(seed)
        ref = keras_model(x, training=False).numpy()
        np.testing.assert_allclose(_run(bundle, x), ref, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref).max()))


def test_keras_model_int8(keras_model, tmp_path: Path) -> None:
    """Integer kernels inside, float at the edges: within a few output quantization steps of the float model
    (the int8 rounding of each layer, not a bound on ember's arithmetic, which the fixture tests pin down)."""
    data = [[_x(100 + i)] for i in range(8)]
    bundle = ember.compile(keras_model, tmp_path, representative_data=data, opt_level=1)
    x = _x(0)
    ref = keras_model(x, training=False).numpy()
    np.testing.assert_allclose(_run(bundle, x), ref, atol=0.1 * max(1.0, np.abs(ref).max()))


def test_saved_model_directory(keras_model, tmp_path: Path) -> None:
    import tensorflow as tf

    class Net(tf.Module):
        def __init__(self) -> None:
            self.model = keras_model

        @tf.function(input_signature=[tf.TensorSpec([1, 8, 8, 3], tf.float32)])
        def serve(self, x):
            return {"y": self.model(x, training=False)}

    net = Net()
    tf.saved_model.save(net, str(tmp_path / "sm"), signatures={"serving_default": net.serve})
    bundle = ember.compile(tmp_path / "sm", tmp_path / "out", opt_level=1)
    x = _x(2)
    ref = keras_model(x, training=False).numpy()
    np.testing.assert_allclose(_run(bundle, x), ref, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(ref).max()))


def test_missing_tensorflow_names_the_extra(keras_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # import tensorflow raises ImportError
    with pytest.raises(OptionError, match=r"needs tensorflow: pip install 'ember\[tf\]'$"):
        ember.compile(keras_model, tmp_path)


def test_representative_data_only_for_tensorflow_models(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="representative_data: only for a Keras model"):
        ember.compile(Path(__file__).parent.parent / "fixtures" / "tflite" / "svdf.tflite", tmp_path,
                      representative_data=[])
