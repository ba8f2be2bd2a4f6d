"""Activation memory: the plan against its lower bound (the most bytes live at once) for every benchmark model
and the MLPerf-Tiny-like shapes, with the planner's own time, beside what the former placement (greedy by
size, first fit) makes of the same lifetimes. No C compiler is run.

    python benchmarks/bench_plan.py [--models resnet50,kws_dscnn] [--target cortex-m4] [--int8] [--json out.json]

--int8 plans the int8 bundle (`ember profile` on 4 random inputs first, as benchmarks/bench_int8.py does).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import models, tiny_models  # noqa: E402
from benchmarks.bench_int8 import calibration_set  # noqa: E402
from benchmarks.machine import write_json  # noqa: E402
from ember import cli  # noqa: E402
from ember.config import CompileOptions  # noqa: E402
from ember.driver import build_graph  # noqa: E402
from ember.memory import offsets  # noqa: E402
from ember.memory.plan import ALIGN  # noqa: E402
from ember.memory.planner import inlined_constants, plan_memory  # noqa: E402
from ember.toolchain.targets import get_target  # noqa: E402

ALL = [*models.MODELS, *tiny_models.TINY]


def _build(name: str, folder: Path) -> Path:
    return models.build(name, folder) if name in models.MODELS else tiny_models.build(name, folder)


def _options(name: str, path: Path, work: Path, target: str, int8: bool) -> CompileOptions:
    if not int8:
        return CompileOptions(target=target)
    dims = onnx.load(str(path), load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    calib = calibration_set(work / "calib" / name, [d.dim_value for d in dims], 4)
    profile = work / "profiles" / f"{name}.yaml"
    profile.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.redirect_stdout(io.StringIO()):
        if cli.main(["profile", str(path), str(calib), "-o", str(profile)]) != 0:
            raise SystemExit(f"ember profile failed on {path}")
    return CompileOptions(target=target, quantize="int8", profile=str(profile))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL))
    ap.add_argument("--work", default="benchmarks/.work", help="models go here")
    ap.add_argument("--target", default="host", help="plan as for this target (its passes and kernels' scratch)")
    ap.add_argument("--int8", action="store_true", help="the int8 bundle (profiled on random inputs)")
    ap.add_argument("--json", default="benchmarks/results/plan.json", help="write results here")
    args = ap.parse_args()
    rows = []
    kind = get_target(args.target).kind
    print(f"{'model':<16}{'nodes':>6}{'bound B':>13}{'plan B':>13}{'plan/bound':>11}{'plan s':>8}"
          f"{'greedy B':>13}{'greedy/bound':>13}")
    for name in args.models.split(","):
        path = _build(name, Path(args.work) / "models")
        opts = _options(name, path, Path(args.work), args.target, args.int8)
        graph, _, _ = build_graph(str(path), opts, target_kind=kind)
        t0 = time.perf_counter()
        plan = plan_memory(graph, inlined_constants(graph))
        seconds = time.perf_counter() - t0
        bound = max(plan.lower_bound, 1)
        spans = [offsets.Span(life.start, life.end, life.size) for life in plan.lifetimes]
        by_size = sorted(range(len(spans)), key=lambda i: (-spans[i].size, spans[i].start))
        greedy = offsets._greedy(spans, by_size, ALIGN, best_fit=False)[1] if spans else 0
        rows.append({"model": name, "nodes": len(graph.nodes), "lower_bound": plan.lower_bound,
                     "activations": plan.activations_size, "ratio": plan.activations_size / bound,
                     "plan_s": seconds, "greedy_by_size": greedy})
        print(f"{name:<16}{len(graph.nodes):>6}{plan.lower_bound:>13,}{plan.activations_size:>13,}"
              f"{plan.activations_size / bound:>11.3f}{seconds:>8.3f}{greedy:>13,}{greedy / bound:>13.3f}", flush=True)
    write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
