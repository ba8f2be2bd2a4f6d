"""ember vs onnxruntime, float32, batch 1: the models of issue 4, an LSTM, and real architectures from torchvision
and transformers with random weights (benchmarks/models.py).

For each model: export it (fixed seeds; kept in --cache), compile it with ember (timed, .onnx -> NAME.o), check
its outputs against onnxruntime's, then time four calls in the same process, interleaved round by round, pinned
to as many cores as threads, after warm-up: ember's entry point through one ctypes call (inputs in place: "C"),
ember's Bundle.run (inputs copied in, outputs out: "py"), onnxruntime with inputs and outputs bound once
(run_with_iobinding: "C") and its session.run ("py"); onnxruntime runs sequentially with all graph
optimizations and `--threads` intra-op threads. Prints a table naming the CPU and writes JSON.

    python benchmarks/bench_models.py [--models lenet5,resnet50] [--threads 1,2] [--rounds 50] [--json out.json]
                                      [--tune]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.bench_int8 import interleave_all  # noqa: E402
from benchmarks.machine import banner, describe, write_json  # noqa: E402
from benchmarks.models import MODELS, build  # noqa: E402
from benchmarks.timing import EmberTimer, OrtTimer  # noqa: E402
from ember.config import CompileOptions  # noqa: E402
from ember.runtime.inputs import random_inputs  # noqa: E402


class CallTimer:
    """Any call as a timer (interleave_all runs `run_once`)."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.run_once = call


def compile_takes_threads() -> bool:
    """Whether this ember has `ember.compile(..., threads=N)` (a CompileOptions field behind its **options)."""
    return ("threads" in inspect.signature(ember.compile).parameters
            or "threads" in {f.name for f in dataclasses.fields(CompileOptions)})


def _max_error(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> tuple[float, float]:
    """Largest absolute difference, and the same relative to the largest magnitude of onnxruntime's output."""
    worst_abs = worst_rel = 0.0
    for k, w in want.items():
        diff = float(np.max(np.abs(got[k].astype(np.float64) - w))) if w.size else 0.0
        worst_abs = max(worst_abs, diff)
        worst_rel = max(worst_rel, diff / max(float(np.max(np.abs(w))) if w.size else 0.0, 1e-30))
    return worst_abs, worst_rel


def measure(bundle: ember.Bundle, model: Path, feeds: dict[str, np.ndarray], threads: int, args: Any) -> dict:
    cores = sorted({(args.core + i) % (os.cpu_count() or 1) for i in range(threads)})
    os.sched_setaffinity(0, cores)
    ort_c = OrtTimer(model, feeds, threads, spin=args.ort_spin or threads == 1)
    want = ort_c.outputs()
    abs_err, rel_err = _max_error(bundle.run(feeds), want)
    timers = {"ember": EmberTimer(bundle, feeds), "ember_py": CallTimer(lambda: bundle.run(feeds)),
              "ort": ort_c, "ort_py": CallTimer(lambda: ort_c.sess.run(None, feeds))}
    times = interleave_all(timers, args.rounds, args.warmup, budget_s=args.budget)
    cell: dict[str, Any] = {"threads": threads, "cores": cores, "rounds": len(times["ember"]),
                            "max_abs_diff": abs_err, "max_rel_diff": rel_err}
    for k, t in times.items():
        cell[f"{k}_median_ms"] = statistics.median(t) * 1e3
        cell[f"{k}_min_ms"] = min(t) * 1e3
    cell["ratio"] = cell["ember_median_ms"] / cell["ort_median_ms"]
    cell["ratio_py"] = cell["ember_py_median_ms"] / cell["ort_py_median_ms"]
    return cell


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--threads", default="1", help="thread counts, one column set each (ember.compile(threads=N), "
                    "onnxruntime intra_op_num_threads=N): 1,2")
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds per model (default: ~--budget s worth)")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs first (default: ~0.5 s worth)")
    ap.add_argument("--budget", type=float, default=6.0, help="seconds of timed rounds per model and thread count")
    ap.add_argument("--core", type=int, default=0, help="first CPU core to pin to (N threads: N cores from it)")
    ap.add_argument("--cpu", default=None, help="ember --cpu (default: the host's, -march=native)")
    ap.add_argument("--ort-spin", action="store_true",
                    help="let onnxruntime's idle workers spin with several threads (default: they sleep, leaving "
                    "the cores to the ember run timed next)")
    ap.add_argument("--tune", action="store_true",
                    help="compile with ember --tune (choices kept in WORK/choices.json, so a rerun times nothing)")
    ap.add_argument("--work", default="benchmarks/.work", help="bundles go here")
    ap.add_argument("--cache", default="benchmarks/results/cache", help="exported models are kept here")
    ap.add_argument("--json", default="benchmarks/results/float32.json", help="write results here")
    args = ap.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"bench_models: unknown model(s) {unknown}; choose from {','.join(MODELS)}")
    thread_counts = [int(t) for t in args.threads.split(",")]
    takes_threads = compile_takes_threads()
    if not takes_threads and any(t != 1 for t in thread_counts):
        print("note: this ember.compile has no threads= option: ember's columns are its single-thread bundle "
              "against onnxruntime with N threads")
    machine = describe()
    print(banner(machine), flush=True)
    rows = []
    for name in names:
        model = build(name, Path(args.cache))
        row: dict[str, Any] = {"model": name, "note": MODELS[name][1], "by_threads": {}}
        for n in thread_counts:
            opts = {"cpu": args.cpu, **({"threads": n} if takes_threads else {})}
            if args.tune:
                opts.update(tune=True, tune_file=str(Path(args.work) / "choices.json"))
            t0 = time.perf_counter()
            bundle = ember.compile(model, Path(args.work) / "bundles" / name / f"t{n if takes_threads else 1}",
                                   weights_txt=False, **opts)
            if takes_threads and hasattr(bundle, "set_threads"):
                bundle.set_threads(n)
            if n == thread_counts[0]:
                row["compile_s"] = time.perf_counter() - t0
                row["gflop"] = bundle.manifest.get("flops", 0) / 1e9
                row["ember_activations"] = bundle.memory["activations"]
                feeds = random_inputs(bundle, 0)  # float inputs: standard normal; integer ones (token ids): 0..9
            cell = measure(bundle, model, feeds, n, args)
            cell["ember_threads"] = n if takes_threads else 1
            row["by_threads"][str(n)] = cell
        rows.append(row)
        _print_row(row, thread_counts, header=len(rows) == 1)
    summary = {}
    for n in thread_counts:
        for key in ("ratio", "ratio_py"):
            ratios = [r["by_threads"][str(n)][key] for r in rows]
            summary[f"{key}_t{n}"] = {"geomean": float(np.exp(np.mean(np.log(ratios)))), "worst": max(ratios)}
        c, py = summary[f"ratio_t{n}"], summary[f"ratio_py_t{n}"]
        print(f"{n} thread(s): geomean ember/ORT {c['geomean']:.3f} (worst {c['worst']:.3f}) through C, "
              f"{py['geomean']:.3f} (worst {py['worst']:.3f}) through Python")
    import onnxruntime as ort

    result = {**machine, "onnxruntime": ort.__version__, "ember": ember.__version__, "core": args.core,
              "cpu_option": args.cpu, "threads": thread_counts, "ember_compile_takes_threads": takes_threads,
              "geomean_ratio": summary[f"ratio_t{thread_counts[0]}"]["geomean"], "summary": summary, "models": rows}
    write_json(args.json, result)
    return 0


def _print_row(r: dict, thread_counts: list[int], header: bool) -> None:
    if header:
        cols = "".join(f" | {f'ember@{n}':>9} {'py':>9} {f'ORT@{n}':>9} {'py':>9} {'ratio':>6} {'py':>5}"
                       for n in thread_counts)
        print(f"{'model (median ms)':<19} {'GFLOP':>6} {'max rel':>8}{cols} | {'compile s':>9}")
    cells = [r["by_threads"][str(n)] for n in thread_counts]
    cols = "".join(f" | {c['ember_median_ms']:>9.3f} {c['ember_py_median_ms']:>9.3f} {c['ort_median_ms']:>9.3f} "
                   f"{c['ort_py_median_ms']:>9.3f} {c['ratio']:>6.2f} {c['ratio_py']:>5.2f}" for c in cells)
    rel = max(c["max_rel_diff"] for c in cells)
    print(f"{r['model']:<19} {r['gflop']:>6.3f} {rel:>8.1e}{cols} | {r['compile_s']:>9.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
