"""ember int8 vs ember float32 vs onnxruntime (float and QDQ int8), batch 1, one CPU core: issue 5's speed bar.

For each model (benchmarks/models.py, fixed seeds): a calibration set of 16 fixed-seed standard-normal
inputs saved as .npy files; `ember profile` on them; `ember compile --profile P --quantize int8`
(default schema asymmetric, per-channel convolution weights, min-max calibration); onnxruntime's QDQ
model from `quantize_static` on the same 16 inputs (QDQ format, per-channel QInt8 weights, QUInt8
activations: the u8s8 form ORT's x86 kernels run fastest, min-max calibration). Then the four engines
are timed in one process, pinned to one core, interleaved round by round after warm-up (ORT: one
thread, sequential, all graph optimizations). Each round starts one engine later than the last, so each
engine runs after each other one equally often: a run pays for the caches its predecessor leaves (ember
int8 ResNet-50 measured 12.15 ms right after ember float32, 11.96 ms after ORT float32). Prints a table
and writes JSON.

`--threads 1,2`: for each thread count N > 1, ember int8 compiled with `threads=N` against the QDQ model in
onnxruntime with N intra-op threads (idle workers sleeping, as bench_models.py's default), the two
interleaved in one process pinned to N cores from --core; its outputs must be the single-thread bundle's
bytes. One more line per model.

    python benchmarks/bench_int8.py [--models mobilenet_v2,resnet18,resnet50] [--threads 1,2] [--rounds N]
                                    [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.machine import banner, describe, write_json  # noqa: E402
from benchmarks.models import MODELS, build  # noqa: E402
from benchmarks.timing import EmberTimer, OrtTimer  # noqa: E402
from ember import cli  # noqa: E402

DEFAULT_MODELS = ("mobilenet_v2", "resnet18", "resnet50")
ENGINES = ("ember_f32", "ember_int8", "ort_f32", "ort_qdq")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated subset of " + ",".join(MODELS))
    ap.add_argument("--samples", type=int, default=16, help="calibration inputs (fixed-seed standard normal)")
    ap.add_argument("--rounds", type=int, default=0, help="timed rounds per model (default: ~6 s worth)")
    ap.add_argument("--warmup", type=int, default=0, help="untimed runs of each engine first (default: ~0.5 s)")
    ap.add_argument("--core", type=int, default=0, help="CPU core to pin to (N threads: N cores from it)")
    ap.add_argument("--threads", default="1", help="thread counts: 1 (the table above), and for each N > 1 ember "
                    "int8 threads=N vs onnxruntime QDQ with N intra-op threads: 1,2")
    ap.add_argument("--cpu", default=None, help="ember --cpu (default: the host's, -march=native)")
    ap.add_argument("--cpu-param", action="append", default=[], metavar="KEY=VALUE",
                    help="ember --cpu-param for every ember build (a CPU family value, e.g. qwino_min_channels=32)")
    ap.add_argument("--work", default="benchmarks/.work", help="models, calibration data and bundles go here")
    ap.add_argument("--json", default="benchmarks/results/int8.json", help="write results here")
    args = ap.parse_args()
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # quantize_static's notes on unused initializers
    os.sched_setaffinity(0, {args.core})
    work = Path(args.work)
    machine = describe()
    print(banner(machine))
    args.thread_counts = [int(t) for t in args.threads.split(",")]
    rows = []
    for name in args.models.split(","):
        rows.append(bench_model(name, work, args))
        _print_row(rows[-1], header=len(rows) == 1)
        for n in args.thread_counts:
            if n > 1:
                _print_threads(rows[-1], n)
    for n in args.thread_counts:
        if n > 1:
            ratios = [r[f"threads_{n}"]["int8_vs_ort_qdq"] for r in rows]
            print(f"geomean ember int8 / ORT QDQ with {n} threads: {float(np.exp(np.mean(np.log(ratios)))):.3f}")

    result = {**machine, "machine": platform.processor() or platform.machine(),
              "onnxruntime": ort.__version__, "ember": ember.__version__, "core": args.core,
              "calibration": f"{args.samples} fixed-seed standard-normal inputs (.npy), min-max",
              "ort_qdq": "quantize_static QDQ, per-channel QInt8 weights, QUInt8 activations, MinMax",
              "models": rows}
    write_json(args.json, result)
    return 0


def bench_model(name: str, work: Path, args: argparse.Namespace) -> dict:
    model = build(name, work / "models")
    bundles = work / "bundles_int8" / name
    t0 = time.perf_counter()
    f32 = ember.compile(model, bundles / "float32", cpu=args.cpu, cpu_params=args.cpu_param, weights_txt=False)
    compile_f32 = time.perf_counter() - t0
    calib = calibration_set(work / "calib" / name, f32.inputs[0]["shape"], args.samples)
    profile = bundles / "profile.yaml"
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # `ember profile MODEL DATA -o P`, in this process
        if cli.main(["profile", str(model), str(calib), "-o", str(profile)]) != 0:
            raise SystemExit(f"ember profile failed on {model}")
    profile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    q8 = ember.compile(model, bundles / "int8", cpu=args.cpu, cpu_params=args.cpu_param, quantize="int8",
                       profile=str(profile), weights_txt=False)
    compile_q8 = time.perf_counter() - t0
    t0 = time.perf_counter()
    qdq = ort_qdq_model(model, calib, bundles / f"{model.stem}.qdq.onnx")
    qdq_s = time.perf_counter() - t0
    inputs = [np.load(f) for f in sorted(calib.glob("*.npy"))]
    in_name = f32.inputs[0]["name"]
    top1 = agreement(f32, q8, in_name, inputs)
    feeds = {in_name: inputs[0]}
    timers = {"ember_f32": EmberTimer(f32, feeds), "ember_int8": EmberTimer(q8, feeds),
              "ort_f32": OrtTimer(model, feeds), "ort_qdq": OrtTimer(qdq, feeds)}
    times = interleave_all(timers, args.rounds, args.warmup)
    row: dict = {"model": name, "note": MODELS[name][1], "rounds": len(times["ember_f32"])}
    for eng in ENGINES:
        q1, med, q3 = statistics.quantiles(times[eng], n=4)
        row[f"{eng}_min_ms"] = min(times[eng]) * 1e3
        row[f"{eng}_median_ms"] = med * 1e3
        row[f"{eng}_iqr_pct"] = (q3 - q1) / med * 100  # the spread of the rounds: the noise of this machine
    row["int8_speedup"] = row["ember_f32_median_ms"] / row["ember_int8_median_ms"]
    row["int8_vs_ort_qdq"] = row["ember_int8_median_ms"] / row["ort_qdq_median_ms"]
    row["weights_f32_bytes"] = weights_bytes(f32)
    row["weights_int8_bytes"] = weights_bytes(q8)
    row["top1_agreement"] = top1
    row["ort_qdq_top1_agreement"] = ort_agreement(model, qdq, in_name, inputs)
    row.update(compile_f32_s=compile_f32, profile_s=profile_s, compile_int8_s=compile_q8, ort_quantize_s=qdq_s)
    for n in args.thread_counts:
        if n > 1:
            row[f"threads_{n}"] = bench_threads(model, bundles, profile, qdq, q8, feeds, n, args)
    return row


def bench_threads(model: Path, bundles: Path, profile: Path, qdq: Path, q8: ember.Bundle,
                  feeds: dict[str, np.ndarray], n: int, args: argparse.Namespace) -> dict:
    """ember int8 with threads=n vs ORT QDQ with n intra-op threads, interleaved, pinned to n cores."""
    qn = ember.compile(model, bundles / f"int8_t{n}", cpu=args.cpu, cpu_params=args.cpu_param, quantize="int8",
                       profile=str(profile), threads=n, weights_txt=False)
    same = all(np.array_equal(a, b) for a, b in zip(qn.run(feeds).values(), q8.run(feeds).values(), strict=True))
    if not same:
        raise SystemExit(f"bench_int8: {qn.name} with {n} threads differs from its single-thread bundle")
    cores = sorted({(args.core + i) % (os.cpu_count() or 1) for i in range(n)})
    os.sched_setaffinity(0, cores)
    try:
        times = interleave_all({"ember_int8": EmberTimer(qn, feeds), "ort_qdq": OrtTimer(qdq, feeds, n, spin=False)},
                               args.rounds, args.warmup)
    finally:
        os.sched_setaffinity(0, {args.core})
    cell: dict = {"threads": n, "cores": cores, "rounds": len(times["ember_int8"]), "divided":
                  qn.manifest["threads"]["divided"]}
    for eng, t in times.items():
        cell[f"{eng}_median_ms"] = statistics.median(t) * 1e3
        cell[f"{eng}_min_ms"] = min(t) * 1e3
    cell["int8_vs_ort_qdq"] = cell["ember_int8_median_ms"] / cell["ort_qdq_median_ms"]
    return cell


def _print_threads(r: dict, n: int) -> None:
    """The row's N-thread cell: ember int8 and ORT QDQ on N cores (median ms), their ratio, ember's speedup."""
    c = r[f"threads_{n}"]
    print(f"  {n} threads: ember i8 {c['ember_int8_median_ms']:.3f}  ORT QDQ {c['ort_qdq_median_ms']:.3f}  "
          f"i8/QDQ {c['int8_vs_ort_qdq']:.2f}  ember i8 speedup over 1 thread "
          f"{r['ember_int8_median_ms'] / c['ember_int8_median_ms']:.2f}x  ({c['divided']} nodes divided, bytes "
          "equal to 1 thread's)", flush=True)


def calibration_set(folder: Path, shape: list[int], n: int) -> Path:
    """n inputs drawn from N(0, 1) with seeds 0 .. n-1, one .npy file each (kept between runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        path = folder / f"sample{i:03d}.npy"
        if not path.exists():
            np.save(path, np.random.default_rng(i).standard_normal(shape).astype(np.float32))
    for extra in sorted(folder.glob("*.npy"))[n:]:
        extra.unlink()
    return folder


def ort_qdq_model(model: Path, calib: Path, out: Path) -> Path:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            import onnx

            self.name = onnx.load(str(model), load_external_data=False).graph.input[0].name
            self.files = iter(sorted(calib.glob("*.npy")))

        def get_next(self) -> dict[str, np.ndarray] | None:
            f = next(self.files, None)
            return None if f is None else {self.name: np.load(f)}

    quantize_static(str(model), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    return out


def agreement(a: ember.Bundle, b: ember.Bundle, name: str, inputs: list[np.ndarray]) -> float:
    same = [np.argmax(_first(a.run({name: x}))) == np.argmax(_first(b.run({name: x}))) for x in inputs]
    return float(np.mean(same))


def ort_agreement(f32: Path, qdq: Path, name: str, inputs: list[np.ndarray]) -> float:
    import onnxruntime as ort

    sa = ort.InferenceSession(str(f32), providers=["CPUExecutionProvider"])
    sb = ort.InferenceSession(str(qdq), providers=["CPUExecutionProvider"])
    same = [np.argmax(sa.run(None, {name: x})[0]) == np.argmax(sb.run(None, {name: x})[0]) for x in inputs]
    return float(np.mean(same))


def _first(outputs: dict[str, np.ndarray]) -> np.ndarray:
    return next(iter(outputs.values()))


def weights_bytes(bundle: ember.Bundle) -> int:
    return (bundle.path / f"{bundle.name}.weights.bin").stat().st_size


def _once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleave_all(timers: dict, rounds: int, warmup: int, budget_s: float = 6.0) -> dict[str, list[float]]:
    """Warm every engine up, then run each once per round, in turn from a starting engine that moves by
    one each round; returns each one's seconds."""
    probe = max(sum(_once(t.run_once) for t in timers.values()), 1e-6)
    warmup = warmup or max(3, int(0.5 / probe))
    rounds = rounds or max(10, min(2000, int(budget_s / probe)))
    for _ in range(warmup):
        for t in timers.values():
            t.run_once()
    out: dict[str, list[float]] = {k: [] for k in timers}
    names = list(timers)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            out[k].append(_once(timers[k].run_once))
    return out


def _print_row(r: dict, header: bool) -> None:
    if header:
        print(f"{'model':<13} {'ember f32':>9} {'ember i8':>9} {'ORT f32':>8} {'ORT QDQ':>8} {'i8 speedup':>10} "
              f"{'i8/QDQ':>7} {'weights f32':>12} {'weights i8':>11} {'top1 agree':>10}  (median ms)")
    print(f"{r['model']:<13} {r['ember_f32_median_ms']:>9.3f} {r['ember_int8_median_ms']:>9.3f} "
          f"{r['ort_f32_median_ms']:>8.3f} {r['ort_qdq_median_ms']:>8.3f} {r['int8_speedup']:>9.2f}x "
          f"{r['int8_vs_ort_qdq']:>7.2f} {r['weights_f32_bytes']:>12,} {r['weights_int8_bytes']:>11,} "
          f"{r['top1_agreement']:>10.2f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
