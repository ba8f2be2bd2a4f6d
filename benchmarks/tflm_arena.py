"""The MLPerf Tiny models as full-int8 TFLite files, and TensorFlow Lite Micro's arena for them, measured.

The arena is measured with TFLite Micro itself (the `tflite-micro` package's Python interpreter, test extra):
the file is loaded into an interpreter, which allocates every tensor the way firmware does, and its recording
allocator reports what the allocation used (`print_allocations`, printed from C: read back from fd 2):

- head: the non-persistent tensors as TFLM's GreedyMemoryPlanner places them (every activation, the
  model's input and output tensors included) plus kernel scratch buffers;
- tail: the persistent allocations (TfLiteEvalTensor and node structures, per-channel requantization
  multipliers and shifts, the operators' user data);
- total: head + tail, the `arena_used_bytes()` by which TFLM users size `tensor_arena`. This is the figure
  bench_mcu.py compares ember's RAM with.

What the measured number is: the x86-64 build of TFLM with its reference kernels. On a Cortex-M, the tail's
structures hold 4-byte pointers instead of 8 (a few hundred bytes less), and CMSIS-NN kernels ask for scratch
buffers (im2col, depthwise) that the reference kernels do not: both differences are small, in opposite
directions, and the head (the tensors) is the same on every build.

The Keras models follow the MLPerf Tiny reference training code (the same architectures as
benchmarks/mlperf_tiny.py), random fixed-seed weights, full-int8 conversion with int8 input and output on
fixed-seed random representative data. Every BatchNormalization gets its input's mean and variance on that
data as its moving statistics (layer by layer, as data-dependent initialisation does), so each block's output
has unit spread: with Keras' default statistics the random 28-layer VWW network's features vanish (tensor
scales of 1e-8), and TFLM's int8 Softmax aborts the process on such an input scale
(QuantizeMultiplierGreaterThanOne). The arena depends on shapes, not on weights. The measurement itself runs in
a child process (`measure`): an abort inside TFLM's C code costs that one measurement, not the benchmark.

    python benchmarks/tflm_arena.py [--out benchmarks/.work/tflite]    # writes NAME.tflite, prints the arenas
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mlperf_tiny import MODELS, calibration  # noqa: E402


# ----------------------------------------------------------------------------- Keras models
def _keras_model(name: str) -> Any:
    import keras
    from keras import layers as L  # noqa: N812

    keras.utils.set_random_seed(MODELS[name].seed)

    def bn_relu(x: Any) -> Any:
        return L.ReLU()(L.BatchNormalization()(x))

    if name == "ad":
        inp = keras.Input((640,), batch_size=1)
        x = inp
        for width in (128, 128, 128, 128, 8, 128, 128, 128, 128):
            x = bn_relu(L.Dense(width)(x))
        return keras.Model(inp, L.Dense(640)(x))
    n, c, h, w = MODELS[name].shape
    inp = keras.Input((h, w, c), batch_size=1)
    if name == "kws":
        x = bn_relu(L.Conv2D(64, (10, 4), strides=2, padding="same")(inp))
        for _ in range(4):
            x = bn_relu(L.DepthwiseConv2D(3, padding="same")(x))
            x = bn_relu(L.Conv2D(64, 1)(x))
        x = L.AveragePooling2D((h // 2, w // 2))(x)
        return keras.Model(inp, L.Dense(12, activation="softmax")(L.Flatten()(x)))
    if name == "vww":
        x = bn_relu(L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(inp))
        plan = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), *[(128, 1)] * 5, (256, 2), (256, 1)]
        for cout, stride in plan:
            x = bn_relu(L.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False)(x))
            x = bn_relu(L.Conv2D(cout, 1, use_bias=False)(x))
        x = L.AveragePooling2D(x.shape[1:3])(x)
        return keras.Model(inp, L.Dense(2, activation="softmax")(L.Flatten()(x)))
    assert name == "ic"
    x = bn_relu(L.Conv2D(16, 3, padding="same")(inp))
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        y = bn_relu(L.Conv2D(cout, 3, strides=stride, padding="same")(x))
        y = L.BatchNormalization()(L.Conv2D(cout, 3, padding="same")(y))
        if stride != 1:
            x = L.Conv2D(cout, 1, strides=stride)(x)
        x = L.ReLU()(L.Add()([x, y]))
    x = L.AveragePooling2D(8)(x)
    return keras.Model(inp, L.Dense(10, activation="softmax")(L.Flatten()(x)))


def _normalize_batchnorm(model: Any, data: np.ndarray) -> None:
    """Sets each BatchNormalization's moving mean and variance to those of its input on `data`, in layer order
    (each layer sees its predecessors normalized already): unit-spread activations everywhere (docstring)."""
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            x = keras.Model(model.inputs, layer.input).predict(data, verbose=0)
            axes = tuple(range(x.ndim - 1))
            gamma, beta, _, _ = layer.get_weights()
            layer.set_weights([gamma, beta, x.mean(axes), x.var(axes)])


def write_tflite(name: str, path: Path, samples: int = 8) -> Path:
    """Convert the Keras model to a full-int8 TFLite file (int8 input and output); returns `path`."""
    import tensorflow as tf

    model = _keras_model(name)
    data = calibration(name, samples)
    if data.ndim == 4:
        data = data.transpose(0, 2, 3, 1)  # NCHW -> NHWC

    def representative() -> Any:
        for x in data:
            yield [x[None]]

    _normalize_batchnorm(model, data)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(conv.convert())
    return path


# ----------------------------------------------------------------------------- the measurement
@dataclass(frozen=True)
class Arena:
    """TFLite Micro's arena for one model, in bytes (see the module docstring)."""

    total: int
    head: int
    tail: int


def _captured_stderr(fn: Any) -> str:
    """What `fn()` writes to file descriptor 2 (TFLM's MicroPrintf, which sys.stderr does not see)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            fn()
        finally:
            ctypes.CDLL(None).fflush(None)
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return f.read().decode(errors="replace")


def tflm_arena(path: Path, arena_size: int = 4 << 20) -> Arena:
    """Allocates the model in a TFLite Micro interpreter (with an arena of `arena_size`, more than enough)
    and returns what its allocation used."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(path), arena_size=arena_size)
    text = _captured_stderr(interpreter.print_allocations)
    found = dict(re.findall(r"Arena allocation (total|head|tail) (\d+) bytes", text))
    if set(found) != {"total", "head", "tail"}:
        raise RuntimeError(f"tflite-micro printed no arena allocation for {path}: {text[:200]!r}")
    return Arena(int(found["total"]), int(found["head"]), int(found["tail"]))


def measure(path: Path, timeout: float = 600) -> Arena | str:
    """`tflm_arena(path)` in a child process: TFLM's C code aborts the whole process when a check on the file
    fails (a Softmax input scale under 2^-26, say), and that must cost one measurement, not its caller.
    Returns the arena, or one line saying why there is none."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(path)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"tflite-micro ran over {timeout:.0f} s on {path.name}"
    lines = [line.strip() for line in r.stderr.splitlines() if line.strip()]
    last = f": {lines[-1][:160]}" if lines else ""
    if r.returncode < 0:
        return f"tflite-micro died of {signal.Signals(-r.returncode).name} on {path.name}{last}"
    if r.returncode != 0:
        return f"tflite-micro failed on {path.name}{last}"
    try:
        return Arena(**json.loads(r.stdout.splitlines()[-1]))
    except (IndexError, TypeError, ValueError):
        return f"tflite-micro printed no arena for {path.name}: {r.stdout[-160:]!r}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/.work/tflite", help="where NAME.tflite go")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--measure", metavar="FILE", help="only print FILE's arena as JSON (what `measure` runs)")
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(dataclasses.asdict(tflm_arena(Path(args.measure)))))
        return 0
    for name in args.models.split(","):
        path = write_tflite(name, Path(args.out) / f"{name}.tflite")
        a = measure(path)
        if isinstance(a, str):
            print(f"{name}: {path} ({path.stat().st_size} B), no TFLM arena: {a}")
        else:
            print(f"{name}: {path} ({path.stat().st_size} B), TFLM arena {a.total} B (head {a.head}, tail {a.tail})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
