"""What a Python call costs on top of the model: ember's Bundle.run against onnxruntime's session.run.

For each small model (where the call, not the arithmetic, is most of the time): the entry point timed in a C
loop (no Python), one ctypes call (Runner.run_once: inputs already in place), Bundle.run (inputs in, new
output arrays out), Bundle.run(out=) (into preallocated arrays), and onnxruntime's session.run with one
intra-op thread. Measured in the same process, interleaved round by round, pinned to one core. Prints a table
and writes JSON.

    python benchmarks/bench_python.py [--models lenet5,mlp] [--rounds 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.machine import banner, describe, write_json  # noqa: E402
from benchmarks.models import MODELS  # noqa: E402
from ember.runtime.inputs import random_inputs  # noqa: E402
from tests.support import models as zoo  # noqa: E402

# Small models only: on a large one the call's cost disappears in the arithmetic.
SMALL: dict[str, tuple[Callable[[Path], None] | None, str]] = {
    "lenet5": (MODELS["lenet5"][0], "LeNet-5 28x28"),
    "mlp": (None, "Gemm-Relu-Gemm-Softmax, 64 -> 128 -> 10"),
    "mobilenet_v2_small": (None, "MobileNetV2 x0.35, 64x64, 16 classes"),
    "transformer": (None, "transformer encoder, 2 layers, d=128, seq 32"),
}

_LOOP_C = """#include <stdint.h>
#include <time.h>
typedef int (*entry_fn)(uint8_t *, uint8_t *, uint8_t *);
/* Nanoseconds per call of the bundle's entry point over n calls: the model's own time, no Python. */
double ember_loop_ns(entry_fn fn, uint8_t *w, uint8_t *m, uint8_t *a, long n) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) fn(w, m, a);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
}
"""


def _c_loop(work: Path) -> Callable[..., float]:
    src, so = work / "loop.c", work / "loop.so"
    src.write_text(_LOOP_C)
    res = subprocess.run(["cc", "-O2", "-fPIC", "-shared", str(src), "-o", str(so)], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"compiling the C timing loop failed: {res.stderr.strip()[:300]}")
    fn = ctypes.CDLL(str(so)).ember_loop_ns
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long]
    return fn


def _per_call(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def measure(name: str, model: Path, bundle: ember.Bundle, loop: Callable[..., float], rounds: int) -> dict:
    import onnxruntime as ort

    feeds = random_inputs(bundle, 0)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    out = [np.empty(p.shape, p.dtype) for p in bundle.ports_out]
    runner = bundle.runner(feeds)
    regions = runner.args
    fn_ptr = ctypes.cast(bundle._fn, ctypes.c_void_p).value
    want = sess.run(None, feeds)
    got = bundle.run(feeds)
    err = max(float(np.max(np.abs(got[o.name] - w))) for o, w in zip(sess.get_outputs(), want, strict=True))
    calls: dict[str, Callable[[], object]] = {
        "ctypes": runner.run_once,
        "run": lambda: bundle.run(feeds),
        "run_out": lambda: bundle.run(feeds, out=out),
        "ort_run": lambda: sess.run(None, feeds),
    }
    probe = max(_per_call(calls["run"], 3), 1e-7)
    batch = max(1, int(2e-3 / probe))  # ~2 ms of calls a sample: perf_counter's cost disappears
    for call in calls.values():
        _per_call(call, batch * 5)  # warm-up: caches, branch predictors, ember's regions
    samples: dict[str, list[float]] = {k: [] for k in ("c", *calls)}
    for _ in range(rounds):
        samples["c"].append(loop(fn_ptr, *regions, batch) * 1e-9)
        for key, call in calls.items():
            samples[key].append(_per_call(call, batch))
    row = {"model": name, "note": SMALL[name][1], "max_abs_diff": err, "rounds": rounds, "batch": batch}
    for key, s in samples.items():
        row[f"{key}_median_ms"] = statistics.median(s) * 1e3
        row[f"{key}_min_ms"] = min(s) * 1e3
    for stat in ("median", "min"):
        row[f"run_over_c_{stat}_us"] = (row[f"run_{stat}_ms"] - row[f"c_{stat}_ms"]) * 1e3
        row[f"ort_over_c_{stat}_us"] = (row[f"ort_run_{stat}_ms"] - row[f"c_{stat}_ms"]) * 1e3
        row[f"run_vs_ort_{stat}"] = row[f"run_{stat}_ms"] / row[f"ort_run_{stat}_ms"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(SMALL), help="comma-separated subset of " + ",".join(SMALL))
    ap.add_argument("--rounds", type=int, default=200, help="timed samples per engine and model")
    ap.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    ap.add_argument("--work", default="benchmarks/.work", help="bundles go here")
    # Not bench_models.py's cache: "transformer" names another (smaller) model here.
    ap.add_argument("--cache", default="benchmarks/results/cache/small", help="exported models are kept here")
    ap.add_argument("--json", default="benchmarks/results/python.json", help="write results here")
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.core})
    machine = describe()
    print(banner(machine))
    rows = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-python-") as tmp:
        loop = _c_loop(Path(tmp))
        for name in args.models.split(","):
            if name not in SMALL:
                raise SystemExit(f"unknown model '{name}'; choose from {','.join(SMALL)}")
            model = zoo.build(name, Path(args.cache), SMALL[name][0], f"{name} {SMALL[name][1]}")
            bundle = ember.compile(model, Path(args.work) / "python" / name)
            rows.append(measure(name, model, bundle, loop, args.rounds))
            _print_row(rows[-1], "median", header=len(rows) == 1)
    print("the same, fastest sample (on a busy machine the better estimate of a call's own cost):")
    for i, row in enumerate(rows):
        _print_row(row, "min", header=i == 0)
    import onnxruntime as ort

    result = {**machine, "onnxruntime": ort.__version__, "ember": ember.__version__, "core": args.core,
              "unit": "median milliseconds per call", "models": rows}
    write_json(args.json, result)
    return 0


def _print_row(r: dict, stat: str, header: bool) -> None:
    if header:
        print(f"{f'model ({stat} ms)':<20} {'C loop':>8} {'ctypes':>8} {'run':>8} {'run out=':>8} {'ORT run':>8} "
              f"{'run-C us':>8} {'ORT-C us':>8} {'run/ORT':>7}")
    print(f"{r['model']:<20} {r[f'c_{stat}_ms']:>8.4f} {r[f'ctypes_{stat}_ms']:>8.4f} {r[f'run_{stat}_ms']:>8.4f} "
          f"{r[f'run_out_{stat}_ms']:>8.4f} {r[f'ort_run_{stat}_ms']:>8.4f} {r[f'run_over_c_{stat}_us']:>8.2f} "
          f"{r[f'ort_over_c_{stat}_us']:>8.2f} {r[f'run_vs_ort_{stat}']:>7.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
