"""ember vs LiteRT on TFLite models, batch 1, one thread: issue 20's speed bar (done means ember <= 1.0x).

LiteRT runs its default CPU path, XNNPACK (float and int8), with `num_threads=1`; ember the bundle built at
the default optimization level for the host. Models: the float and int8 fixtures of tests/fixtures/tflite
(the DS-CNN keyword spotter, a MobileNet-like net, conv_pool) and Keras' MobileNetV2 (alpha 0.35, 96x96,
weights=None, fixed seed), float and full-int8 (16 fixed-seed calibration inputs), converted with tensorflow
once and kept in --cache (skipped without either, or with --no-keras). Both engines get the same inputs bound
once and are timed interleaved round by round after warm-up (benchmarks/timing.py). Prints a table and writes JSON.

    python benchmarks/bench_tflite.py [--models kws_cnn,mobilenet_v2_035] [--rounds N] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.machine import describe, write_json  # noqa: E402
from benchmarks.timing import EmberTimer, interleave  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tflite"
FIXTURE_MODELS = ("conv_pool", "conv_pool_int8", "kws_cnn", "kws_cnn_int8", "mobilenet_like", "mobilenet_like_int8",
                  "kws_cnn_int16", "mobilenet_like_int16")
KERAS_MODELS = ("mobilenet_v2_035", "mobilenet_v2_035_int8")


class LiteRTTimer:
    """LiteRT's interpreter with its default delegate (XNNPACK) on one thread, inputs set once."""

    def __init__(self, path: Path, xs: list[np.ndarray]) -> None:
        from ai_edge_litert import interpreter as lite

        self.interp = lite.Interpreter(model_path=str(path), num_threads=1)
        self.interp.allocate_tensors()
        for d, x in zip(self.interp.get_input_details(), xs, strict=True):
            self.interp.set_tensor(d["index"], x)
        self.run_once = self.interp.invoke

    def outputs(self) -> list[np.ndarray]:
        self.run_once()
        return [self.interp.get_tensor(d["index"]) for d in self.interp.get_output_details()]


def keras_mobilenet(work: Path, int8: bool) -> Path | None:
    """The converted model in `work` (converted there once); None without it and without tensorflow."""
    path = work / f"mobilenet_v2_035{'_int8' if int8 else ''}.tflite"
    if path.exists():
        return path
    if importlib.util.find_spec("tensorflow") is None:
        return None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.applications.MobileNetV2((96, 96, 3), alpha=0.35, weights=None)
    spec = tf.TensorSpec([1, 96, 96, 3], tf.float32)
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn])
    if int8:
        rng = np.random.default_rng(1)

        def data():
            for _ in range(16):
                yield [rng.uniform(-1, 1, (1, 96, 96, 3)).astype(np.float32)]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    path.write_bytes(conv.convert())
    return path


def inputs(path: Path) -> list[np.ndarray]:
    from ai_edge_litert import interpreter as lite

    interp = lite.Interpreter(model_path=str(path))
    rng = np.random.default_rng(0)
    out = []
    for d in interp.get_input_details():
        dtype = np.dtype(d["dtype"])
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, d["shape"]).astype(dtype))
        else:
            out.append(rng.integers(-100, 100, d["shape"]).astype(dtype))
    return out


def bench(name: str, path: Path, work: Path, rounds: int, cpu: str | None = None) -> dict:
    bundle = ember.compile(path, work / name, name=name, cpu=cpu)
    xs = inputs(path)
    em = EmberTimer(bundle, dict(zip([e["name"] for e in bundle.manifest["inputs"]], xs, strict=True)))
    lt = LiteRTTimer(path, xs)
    t_em, t_lt = interleave(em, lt, rounds, 0)
    ms_em, ms_lt = statistics.median(t_em) * 1e3, statistics.median(t_lt) * 1e3
    return {"model": name, "ember_ms": round(ms_em, 4), "litert_ms": round(ms_lt, 4),
            "ratio": round(ms_em / ms_lt, 3), "rounds": len(t_em)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="comma-separated (default: all)")
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds (default: about 3 s per model)")
    ap.add_argument("--no-keras", action="store_true", help="skip the models converted with tensorflow")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--cpu", default=None, help="ember --cpu (default: the host's), e.g. x86-64-v3 for the AVX2 "
                    "build against the same LiteRT")
    ap.add_argument("--cache", type=Path, default=Path("benchmarks/results/cache/tflite"),
                    help="the Keras models converted with tensorflow are kept here (converted once)")
    args = ap.parse_args(argv)
    names = [m for m in args.models.split(",") if m] or [*FIXTURE_MODELS, *([] if args.no_keras else KERAS_MODELS)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-tflite-") as tmp:
        work = Path(tmp)
        for name in names:
            if name in KERAS_MODELS:
                args.cache.mkdir(parents=True, exist_ok=True)
                path = keras_mobilenet(args.cache, name.endswith("_int8"))
                if path is None:
                    print(f"{name:<24} skipped: needs tensorflow once, to convert it into {args.cache}", flush=True)
                    continue
            else:
                path = FIXTURES / f"{name}.tflite"
            rows.append(bench(name, path, work, args.rounds, args.cpu))
            r = rows[-1]
            print(f"{r['model']:<24} ember {r['ember_ms']:9.4f} ms   LiteRT {r['litert_ms']:9.4f} ms   "
                  f"{r['ratio']:5.2f}x", flush=True)
    result = {"cpu": describe()["cpu_model"], "machine": platform.machine(), "threads": 1, "ember_cpu": args.cpu,
              "litert": "ai-edge-litert, XNNPACK delegate, num_threads=1", "models": rows}
    print(f"CPU: {result['cpu']}")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
