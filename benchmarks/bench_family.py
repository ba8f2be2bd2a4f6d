"""Which values of the CPU family suit this machine: ember's family as detected against variants of it, one
thread, with onnxruntime timed in the same rounds.

Each `--variant` is a set of `--cpu-param` values (ember/toolchain/cpus.py), e.g. "nhwc_min_convs=5
nhwc_small_k=32" or "row_panels_min_k=64". For each model (benchmarks/models.py, kept in --cache): compile the
family as it is and each variant, check every bundle against onnxruntime, then time them all and onnxruntime
in one process pinned to one core, interleaved round by round, each round starting one engine later. Prints,
per model, each build's median against onnxruntime's and each variant's against the family's own, with the
geomean of every column, and writes JSON: the measurements a CPU family's values in cpus.py are set from.
Two builds of the same C differ by a few percent (where the code lands in memory): `--variant ""` times the
family's build twice, as a control.

    python benchmarks/bench_family.py --models mobilenet_v2,resnet50 --variant "nhwc_min_convs=5" \\
                                      --variant "mm_strip_prefetch=true row_panels_min_k=64" [--cpu native]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.bench_int8 import interleave_all  # noqa: E402
from benchmarks.bench_models import _max_error  # noqa: E402
from benchmarks.machine import banner, describe, write_json  # noqa: E402
from benchmarks.models import MODELS, build  # noqa: E402
from benchmarks.timing import EmberTimer, OrtTimer  # noqa: E402
from ember.runtime.inputs import random_inputs  # noqa: E402

# A float32 model through ember and onnxruntime: what bench_models.py accepts (max rel of its runs: 1.6e-6).
MAX_REL_DIFF = 1e-4


def bench_model(name: str, variants: dict[str, tuple[str, ...]], args: argparse.Namespace) -> dict[str, Any]:
    model = build(name, Path(args.cache))
    bundles = {label: ember.compile(model, Path(args.work) / "family" / name / f"v{i}", weights_txt=False,
                                    cpu=args.cpu, cpu_params=params)
               for i, (label, params) in enumerate(variants.items())}
    os.sched_setaffinity(0, {args.core})
    feeds = random_inputs(next(iter(bundles.values())), 0)
    ort = OrtTimer(model, feeds)
    want = ort.outputs()
    row: dict[str, Any] = {"model": name, "builds": {}}
    for label, bundle in list(bundles.items()):
        _, rel = _max_error(bundle.run(feeds), want)
        row["builds"][label] = {"cpu_params": list(variants[label]), "max_rel_diff": rel,
                                "family": bundle.manifest["target_info"]["cpu_choice"]["family"]["name"]}
        if rel > MAX_REL_DIFF and label != "family":  # reported and left out; the other variants still run
            print(f"bench_family: WRONG: {name} with '{label}' differs from onnxruntime by {rel:.1e} (relative)")
            del bundles[label]
        elif rel > MAX_REL_DIFF:
            raise SystemExit(f"bench_family: {name} differs from onnxruntime by {rel:.1e} (relative)")
    timers: dict[str, Any] = {label: EmberTimer(b, feeds) for label, b in bundles.items()}
    timers["onnxruntime"] = ort
    times = interleave_all(timers, args.rounds, 0, budget_s=args.budget)
    row["rounds"] = len(times["onnxruntime"])
    row["ort_median_ms"] = statistics.median(times["onnxruntime"]) * 1e3
    base = "family"
    for label in bundles:
        cell = row["builds"][label]
        cell["median_ms"] = statistics.median(times[label]) * 1e3
        cell["min_ms"] = min(times[label]) * 1e3
        cell["vs_ort"] = cell["median_ms"] / row["ort_median_ms"]
        # Paired: each round's time over the family's own in the same round, then the median.
        cell["vs_family"] = statistics.median(t / b for t, b in zip(times[label], times[base], strict=True))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="mobilenet_v2,resnet50,efficientnet_b0,mobilenet_v3_large,resnet50_tv",
                    help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--variant", action="append", default=[], metavar="'KEY=VALUE ...'",
                    help="a set of --cpu-param values, space-separated; repeat for more variants")
    ap.add_argument("--cpu", default=None, help="ember --cpu (default: the host's, -march=native)")
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds per model (default: ~--budget s worth)")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds of timed rounds per model")
    ap.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    ap.add_argument("--work", default="benchmarks/.work", help="bundles go here")
    ap.add_argument("--cache", default="benchmarks/results/cache", help="exported models are kept here")
    ap.add_argument("--json", default="benchmarks/results/family.json", help="write results here")
    args = ap.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"bench_family: unknown model(s) {unknown}; choose from {','.join(MODELS)}")
    variants: dict[str, tuple[str, ...]] = {"family": ()}
    for v in args.variant:  # an empty one builds the family again: a control for the noise between builds
        variants[v.strip() or "family again"] = tuple(v.split())
    machine = describe()
    print(banner(machine), flush=True)
    rows = []
    for name in names:
        rows.append(bench_model(name, variants, args))
        if len(rows) == 1:
            print(f"family: {rows[0]['builds']['family']['family']}")
            print(f"{'model (median ms)':<19} {'ORT':>8} | " + " | ".join(f"{label[:34]:>34}" for label in variants))
        r = rows[-1]
        cells = [("WRONG" if "median_ms" not in c else f"{c['median_ms']:>8.3f} {c['vs_ort']:>5.2f}x ORT"
                  + (f" {c['vs_family']:>5.3f}x" if label != "family" else "")) for label, c in r["builds"].items()]
        print(f"{name:<19} {r['ort_median_ms']:>8.3f} | " + " | ".join(f"{c:>34}" for c in cells), flush=True)
    summary = {label: {key: float(np.exp(np.mean(np.log(values)))) if (values := [
        r["builds"][label][key] for r in rows if key in r["builds"][label]]) else None
        for key in ("vs_ort", "vs_family")} for label in variants}
    print("geomean vs onnxruntime: " + ", ".join(f"{k} {v['vs_ort']:.3f}" for k, v in summary.items()
                                                 if v["vs_ort"] is not None))
    print("geomean vs the family (paired): " + ", ".join(f"{k} {v['vs_family']:.3f}" for k, v in summary.items()
                                                         if k != "family" and v["vs_family"] is not None))
    import onnxruntime

    result = {**machine, "onnxruntime": onnxruntime.__version__, "ember": ember.__version__, "core": args.core,
              "cpu_option": args.cpu, "variants": {k: list(v) for k, v in variants.items()}, "summary": summary,
              "models": rows}
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
