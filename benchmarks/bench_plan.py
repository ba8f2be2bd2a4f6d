"""Activation memory: the plan against its lower bound (the most bytes live at once) for every benchmark model
and the MLPerf-Tiny-like shapes, with the planner's own time. No C compiler is run.

    python benchmarks/bench_plan.py [--models resnet50,kws_dscnn] [--target cortex-m4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import models, tiny_models  # noqa: E402
from ember.config import CompileOptions  # noqa: E402
from ember.driver import build_graph  # noqa: E402
from ember.memory.planner import inlined_constants, plan_memory  # noqa: E402
from ember.toolchain.targets import get_target  # noqa: E402

ALL = [*models.MODELS, *tiny_models.TINY]


def _build(name: str, folder: Path) -> Path:
    return models.build(name, folder) if name in models.MODELS else tiny_models.build(name, folder)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL))
    ap.add_argument("--work", default="benchmarks/.work", help="models go here")
    ap.add_argument("--target", default="host", help="plan as for this target (its passes and kernels' scratch)")
    ap.add_argument("--json", default="benchmarks/results/plan.json", help="write results here")
    args = ap.parse_args()
    rows = []
    kind = get_target(args.target).kind
    print(f"{'model':<16}{'nodes':>6}{'bound B':>13}{'plan B':>13}{'plan/bound':>11}{'plan s':>8}")
    for name in args.models.split(","):
        path = _build(name, Path(args.work) / "models")
        graph, _, _ = build_graph(str(path), CompileOptions(target=args.target), target_kind=kind)
        t0 = time.perf_counter()
        plan = plan_memory(graph, inlined_constants(graph))
        seconds = time.perf_counter() - t0
        ratio = plan.activations_size / plan.lower_bound if plan.lower_bound else 1.0
        rows.append({"model": name, "nodes": len(graph.nodes), "lower_bound": plan.lower_bound,
                     "activations": plan.activations_size, "ratio": ratio, "plan_s": seconds})
        print(f"{name:<16}{len(graph.nodes):>6}{plan.lower_bound:>13,}{plan.activations_size:>13,}{ratio:>11.3f}"
              f"{seconds:>8.3f}", flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
