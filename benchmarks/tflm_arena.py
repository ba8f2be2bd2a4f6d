"""The MLPerf Tiny models as full-int8 TFLite files, and an estimate of TensorFlow Lite Micro's arena for them.

tflite-micro cannot be installed here, so its arena is estimated by re-implementing the sizing of its
default planner, GreedyMemoryPlanner (tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc, with
the lifetimes of micro_allocation_info.cc), on the TFLite file's tensors:

- every non-constant tensor of the subgraph is a buffer of its byte size rounded up to 16
  (MicroArenaBufferAlignment); its lifetime runs from the operator that writes it (graph inputs: 0) to the
  last operator that reads it (graph outputs: the last operator), both inclusive;
- buffers are placed largest first; each goes at the lowest offset, scanning the placed buffers whose
  lifetimes overlap its own in offset order, where it fits in the gap before the next one;
- the planned size is the highest end offset.

What this leaves out, and the real arena adds: the persistent tail (TfLiteEvalTensor and node structures,
per-channel requantization multipliers and shifts, the operators' user data) and kernel scratch buffers
(CMSIS-NN's im2col / depthwise buffers). So this estimate is a LOWER bound of TFLM's arena, which favours
TFLM in any comparison with it.

The Keras models follow the MLPerf Tiny reference training code (the same architectures as
benchmarks/mlperf_tiny.py), random fixed-seed weights, full-int8 conversion with int8 input and output on
fixed-seed random representative data.

    python benchmarks/tflm_arena.py [--out benchmarks/.work/tflite]    # writes NAME.tflite, prints estimates
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mlperf_tiny import MODELS, calibration  # noqa: E402

ALIGN = 16  # MicroArenaBufferAlignment()


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

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(conv.convert())
    return path


# ----------------------------------------------------------------------------- the planner
@dataclass(frozen=True)
class Buffer:
    size: int
    first: int
    last: int


_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1, 10: 8}  # schema TensorType -> bytes per element


def tflite_buffers(path: Path) -> list[Buffer]:
    """The planned buffers of the file's first subgraph, as TFLM's allocation info builds them."""
    import tflite

    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    g = model.Subgraphs(0)
    first: dict[int, int] = {i: 0 for i in g.InputsAsNumpy()}
    last: dict[int, int] = {}
    n_ops = g.OperatorsLength()
    for i in range(n_ops):
        op = g.Operators(i)
        for t in op.InputsAsNumpy():
            if t >= 0:
                last[int(t)] = i
        for t in op.OutputsAsNumpy():
            first.setdefault(int(t), i)
    for t in g.OutputsAsNumpy():
        last[int(t)] = n_ops - 1
    buffers = []
    for t in sorted(first):
        tensor = g.Tensors(t)
        if model.Buffers(tensor.Buffer()).DataLength() > 0:
            continue  # a constant: lives in the flatbuffer, not in the arena
        size = int(np.prod(tensor.ShapeAsNumpy())) * _BYTES[tensor.Type()]
        buffers.append(Buffer((size + ALIGN - 1) // ALIGN * ALIGN, first[t], last.get(t, first[t])))
    return buffers


def greedy_plan(buffers: list[Buffer]) -> int:
    """Bytes GreedyMemoryPlanner needs for `buffers`: largest first, each at the lowest gap that fits."""
    order = sorted(range(len(buffers)), key=lambda i: -buffers[i].size)  # stable: equal sizes keep their order
    placed: list[tuple[int, Buffer]] = []  # (offset, buffer), kept sorted by offset
    for i in order:
        b = buffers[i]
        offset = 0
        for off, other in placed:
            if other.first > b.last or other.last < b.first:
                continue  # lifetimes do not overlap
            if off >= offset + b.size:
                break  # the gap before this buffer holds b
            offset = max(offset, off + other.size)
        placed.append((offset, b))
        placed.sort(key=lambda e: e[0])
    return max((off + b.size for off, b in placed), default=0)


def arena_estimate(path: Path) -> int:
    return greedy_plan(tflite_buffers(path))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/.work/tflite", help="where NAME.tflite go")
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    for name in args.models.split(","):
        path = write_tflite(name, Path(args.out) / f"{name}.tflite")
        print(f"{name}: {path} ({path.stat().st_size} B), TFLM GreedyMemoryPlanner estimate {arena_estimate(path)} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
