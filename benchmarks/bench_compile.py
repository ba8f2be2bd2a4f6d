"""What compiling costs: wall time (.onnx -> NAME.o, per phase) and peak memory, beside onnxruntime's
session creation for the same model (its load-and-optimize step), each in a fresh process.

Peak memory is the compiling process's own peak resident set (VmHWM; the C compiler runs in a child
process and is not counted), compared with the model's weight bytes (its initializers).

    python benchmarks/bench_compile.py [--models resnet50,mobilenet_v2] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.machine import banner, describe, write_json  # noqa: E402
from benchmarks.models import MODELS, build  # noqa: E402

# The child's own peak resident set: VmHWM, which starts afresh at exec. Not getrusage's ru_maxrss, which
# Linux carries over from the process before exec: the forked copy of this one, which has read the model.
_PEAK = """
def PEAK_KB():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:"))
"""
# Run in a child interpreter, so imports and peak memory are the compile's alone.
_EMBER_CHILD = _PEAK + """
import json, sys, time
t0 = time.perf_counter()
from ember.api import write_bundle
from ember.config import CompileOptions
m = write_bundle(sys.argv[1], sys.argv[2], CompileOptions(weights_txt=sys.argv[3] == "1"))
print(json.dumps({"wall": time.perf_counter() - t0, "peak_kb": PEAK_KB(), "seconds": m["seconds"],
                  "c_parts": m["c_parts"]}))
"""
_ORT_CHILD = _PEAK + """
import json, sys, time
t0 = time.perf_counter()
import onnxruntime as ort
o = ort.SessionOptions()
o.intra_op_num_threads = 1
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
print(json.dumps({"wall": time.perf_counter() - t0, "peak_kb": PEAK_KB()}))
"""


def weight_bytes(model: Path) -> int:
    m = onnx.load(str(model))
    return sum(onnx.numpy_helper.to_array(t).nbytes for t in m.graph.initializer)


def _child(code: str, *args: str) -> dict:
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _best(runs: list[dict]) -> dict:
    """The median run by wall time (its phases and peak come with it)."""
    return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50", help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (the median is reported)")
    ap.add_argument("--work", default="benchmarks/.work", help="models go here")
    ap.add_argument("--json", default="benchmarks/results/compile.json", help="write results here")
    args = ap.parse_args()
    rows = []
    machine = describe()
    print(banner(machine))
    print(f"{'model':<14}{'weights MB':>11}{'variant':>18}{'wall s':>8}{'peak MB':>9}{'peak/weights':>13}  phases (s)")
    for name in args.models.split(","):
        model = build(name, Path(args.work) / "models")
        wb = weight_bytes(model)
        with tempfile.TemporaryDirectory(prefix="ember-bench-compile-") as tmp:
            variants = {
                "ember": (_EMBER_CHILD, str(model), tmp, "1"),
                "ember no txt": (_EMBER_CHILD, str(model), tmp, "0"),
                "onnxruntime": (_ORT_CHILD, str(model)),
            }
            for variant, child_args in variants.items():
                r = _best([_child(*child_args) for _ in range(args.repeat)])
                row = {"model": name, "variant": variant, "weight_bytes": wb, "wall_s": r["wall"],
                       "peak_bytes": r["peak_kb"] * 1024, "peak_over_weights": r["peak_kb"] * 1024 / wb,
                       "phases_s": r.get("seconds", {}), "c_parts": r.get("c_parts")}
                rows.append(row)
                phases = ", ".join(f"{k} {v:.2f}" for k, v in row["phases_s"].items())
                if row["c_parts"]:
                    phases += f" ({row['c_parts']} C part{'s' if row['c_parts'] > 1 else ''})"
                print(f"{name:<14}{wb / 1e6:>11.1f}{variant:>18}{row['wall_s']:>8.2f}{row['peak_bytes'] / 1e6:>9.0f}"
                      f"{row['peak_over_weights']:>13.2f}  {phases}")
    result = {"cpu": machine["cpu_model"], "cpu_count": machine["cpu_count"], "median_of": args.repeat, "rows": rows}
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
