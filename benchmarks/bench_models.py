"""ember vs onnxruntime, float32, batch 1, one CPU core: the five models of issue 4 and an LSTM.

For each model: export it (fixed seeds), compile it with ember (timed, .onnx -> NAME.o), then time
ember and onnxruntime (intra_op_num_threads=1, sequential execution, all graph optimizations) in
the same process, interleaved round by round, pinned to one core, after warm-up. Prints a table
and writes JSON.

    python benchmarks/bench_models.py [--models lenet5,resnet50] [--rounds 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.models import MODELS, build  # noqa: E402
from benchmarks.timing import EmberTimer, OrtTimer, interleave  # noqa: E402
from ember.runtime.inputs import random_inputs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds per model (default: ~3 s worth)")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs first (default: ~0.5 s worth)")
    ap.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    ap.add_argument("--cpu", default=None, help="ember --cpu (default: the host's, -march=native)")
    ap.add_argument("--work", default="benchmarks/.work", help="models and bundles go here")
    ap.add_argument("--json", default="benchmarks/results/float32.json", help="write results here")
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.core})
    work = Path(args.work)
    rows = []
    for name in args.models.split(","):
        model = build(name, work / "models")
        out = work / "bundles" / name
        t0 = time.perf_counter()
        bundle = ember.compile(model, out, cpu=args.cpu)
        compile_s = time.perf_counter() - t0
        feeds = random_inputs(bundle, 0)  # float inputs: standard normal; integer ones (token ids): 0..9
        ours, theirs = EmberTimer(bundle, feeds), OrtTimer(model, feeds)
        err = max(float(np.max(np.abs(ours.outputs()[k] - theirs.outputs()[k]))) for k in theirs.outputs())
        t_e, t_o = interleave(ours, theirs, args.rounds, args.warmup)
        flops = bundle.manifest.get("flops", 0)
        row = {
            "model": name, "note": MODELS[name][1], "gflop": flops / 1e9,
            "ember_min_ms": min(t_e) * 1e3, "ember_median_ms": statistics.median(t_e) * 1e3,
            "ort_min_ms": min(t_o) * 1e3, "ort_median_ms": statistics.median(t_o) * 1e3,
            "rounds": len(t_e), "compile_s": compile_s, "max_abs_diff": err,
            "ember_activations": bundle.memory["activations"], "ember_constant": bundle.memory["constant"],
        }
        row["ratio"] = row["ember_median_ms"] / row["ort_median_ms"]
        row["ember_gflops"] = flops / (row["ember_median_ms"] * 1e6)
        row["ort_gflops"] = flops / (row["ort_median_ms"] * 1e6)
        rows.append(row)
        _print_row(row, header=len(rows) == 1)
    ratios = [r["ratio"] for r in rows]
    geomean = float(np.exp(np.mean(np.log(ratios))))
    print(f"geometric mean ember/ORT (median latency): {geomean:.3f}; worst {max(ratios):.3f}")
    import onnxruntime as ort

    result = {"machine": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
              "onnxruntime": ort.__version__, "ember": ember.__version__, "core": args.core,
              "geomean_ratio": geomean, "models": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


def _print_row(r: dict, header: bool) -> None:
    if header:
        print(f"{'model':<13} {'GFLOP':>6} {'ember min':>10} {'ember med':>10} {'ORT min':>9} {'ORT med':>9} "
              f"{'ratio':>6} {'ember GF/s':>10} {'ORT GF/s':>9} {'compile s':>9}")
    print(f"{r['model']:<13} {r['gflop']:>6.3f} {r['ember_min_ms']:>10.3f} {r['ember_median_ms']:>10.3f} "
          f"{r['ort_min_ms']:>9.3f} {r['ort_median_ms']:>9.3f} {r['ratio']:>6.2f} {r['ember_gflops']:>10.1f} "
          f"{r['ort_gflops']:>9.1f} {r['compile_s']:>9.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
