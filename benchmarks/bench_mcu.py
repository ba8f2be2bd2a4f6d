"""The MLPerf Tiny models, int8, on Cortex-M cores under QEMU: instructions, flash and RAM per inference (issue 23).

For each model of benchmarks/mlperf_tiny.py (fixed-seed random weights): `ember profile` on 8 fixed-seed
standard-normal inputs, then `ember.compile(..., quantize="int8", io="int8", target=CORE)` for the host and
each core. Each core's bundle is linked into ember's bare-metal firmware (ember/runtime/targets/mcu.py) and run
once on its QEMU board with a fixed-seed int8 input:

- instructions: executed by the entry-point call alone, counted with QEMU `-icount` and SysTick read around
  the call (docs/targets.md). Instructions, not cycles: QEMU models no pipeline, so on a real Cortex-M4
  cycles are somewhat more.
- flash: the bundle's code and read-only tables as linked into the firmware (the sizes of the symbols of
  NAME.o in the linked ELF) plus the constant weights.
- RAM: the bundle's mutable region (inputs, outputs) + activation region + the firmware's measured stack
  high-water mark right after the call (painted at reset; main's frame included).
- TFLM: TFLite Micro's arena for the same architecture as a full-int8 TFLite file, MEASURED by allocating it in
  tflite-micro's interpreter (benchmarks/tflm_arena.py): the total by which users size `tensor_arena`
  (planned tensors, the model's input and output included, plus persistent data); `TFLM head` is its planned
  tensors alone. RAM/TFLM compares ember's RAM with the total. It runs in a child process: where TFLM's C
  code aborts, that model's TFLM columns are "-" with a one-line reason, and the benchmark goes on.
- What both count: ember's RAM includes its input and output buffers (the mutable region) as TFLM's arena
  includes its input and output tensors; ember's also includes the stack, TFLM's figure does not.
- exact: the core's outputs are byte-identical to the host int8 bundle's.

With --reuse-inputs the bundles are compiled so (ember compile --reuse-inputs): the input's bytes take
intermediates once read, as TFLM's arena does; everything is then in the mutable region (act = 0).

    python benchmarks/bench_mcu.py [--models kws,vww,ic,ad] [--cores cortex-m0,...] [--no-tflm] [--reuse-inputs]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks import mlperf_tiny, tflm_arena  # noqa: E402
from benchmarks.machine import write_json  # noqa: E402
from ember import cli  # noqa: E402
from tests.support import mcu  # noqa: E402

CORES = ("cortex-m0", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
# Issue 23's bar on Cortex-M4: instructions per inference below the cycles of the fastest published
# Cortex-M4 engine; RAM at most 0.75x TFLM's arena; the M55 (Helium) path 2x fewer instructions than the M4's.
M4_INSTRUCTIONS_GOAL = {"kws": 4.0e6, "vww": 8.0e6, "ic": 15e6, "ad": 0.45e6}
RAM_OVER_TFLM_GOAL = 0.75
M55_SPEEDUP_GOAL = {"kws": 2.0, "vww": 2.0}
CALIBRATION_SAMPLES = 8


def int8_bundle(name: str, work: Path, target: str, reuse_inputs: bool = False) -> ember.Bundle:
    """The model's int8 bundle (int8 I/O) for `target`, profiling once per work folder."""
    model = work / "models" / f"{name}.onnx"
    profile = work / "models" / f"{name}.yaml"
    if not profile.exists():
        mlperf_tiny.export(name, model)
        data = work / "models" / f"{name}.calib.npy"
        np.save(data, mlperf_tiny.calibration(name, CALIBRATION_SAMPLES))
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main(["profile", str(model), str(data), "-o", str(profile)]) == 0
    folder = work / ("bundles-reuse" if reuse_inputs else "bundles") / name / target
    return ember.compile(str(model), folder, quantize="int8", profile=str(profile), io="int8", target=target,
                         reuse_inputs=reuse_inputs)


def int8_input(bundle: ember.Bundle, seed: int = 6) -> dict[str, np.ndarray]:
    e = bundle.manifest["inputs"][0]
    return {e["name"]: np.random.default_rng(seed).integers(-128, 128, e["shape"]).astype(np.int8)}


def bundle_flash(elf: Path, obj: Path, constant: int) -> int:
    """Bytes of flash the bundle takes in the linked firmware: its code and tables, plus the weights."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    def symbols(path: Path) -> list:
        with open(path, "rb") as f:
            elf_file = ELFFile(f)
            tab = elf_file.get_section_by_name(".symtab")
            out = []
            for s in tab.iter_symbols() if tab is not None else ():
                if s["st_shndx"] in ("SHN_UNDEF", "SHN_ABS", "SHN_COMMON") or not s.name:
                    continue
                sec = elf_file.get_section(s["st_shndx"])
                ro = sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and not sec["sh_flags"] & SH_FLAGS.SHF_WRITE
                out.append((s.name, s["st_info"]["type"], s["st_size"], bool(ro)))
            return out

    own = {name for name, kind, _, _ in symbols(obj) if kind in ("STT_FUNC", "STT_OBJECT")}
    return constant + sum(size for name, kind, size, ro in symbols(elf) if ro and name in own)


def bench(name: str, work: Path, cores: list[str], tflm: tflm_arena.Arena | None,
          reuse_inputs: bool = False) -> list[dict]:
    host = int8_bundle(name, work, "host")
    x = int8_input(host)
    ref = host.run(x)
    macs = mlperf_tiny.macs(name)
    rows = []
    for core in cores:
        bundle = int8_bundle(name, work, core, reuse_inputs)
        run = mcu.run_firmware(bundle.path, core, x, work / "runs" / name / core, count_instructions=True)
        mem = bundle.manifest["memory"]
        exact = all(run.outputs[k].tobytes() == v.tobytes() for k, v in ref.items())
        ram = mem["mutable"] + mem["activations"] + run.stack
        rows.append({
            "model": name, "core": core, "board": run.board.machine, "emulated": run.board.core,
            "instructions": run.instructions, "macs": macs, "macs_per_instruction": macs / run.instructions,
            "flash": bundle_flash(work / "runs" / name / core / "firmware.elf", bundle.path / f"{bundle.name}.o",
                                  mem["constant"]),
            "ram": ram, "mutable": mem["mutable"], "activations": mem["activations"], "stack": run.stack,
            "tflm_arena": tflm.total if tflm else None, "tflm_head": tflm.head if tflm else None,
            "ram_over_tflm": ram / tflm.total if tflm else None, "bit_exact": exact,
        })
        _print_row(rows[-1])
    return rows


_HEAD = (f"{'model':5} {'core':10} {'board':10} {'instr':>12} {'MAC/ins':>7} {'flash B':>9} {'RAM B':>8} "
         f"{'(mut+act+stack)':>22} {'TFLM arena':>10} {'TFLM head':>9} {'RAM/TFLM':>8} exact")


def _print_row(r: dict) -> None:
    tflm = (f"{r['tflm_arena']:>10,} {r['tflm_head']:>9,}" if r["tflm_arena"] else f"{'-':>10} {'-':>9}")
    ratio = f"{r['ram_over_tflm']:>7.2f}x" if r["ram_over_tflm"] else f"{'-':>8}"
    parts = f"{r['mutable']}+{r['activations']}+{r['stack']}"
    print(f"{r['model']:5} {r['core']:10} {r['board']:10} {r['instructions']:>12,} {r['macs_per_instruction']:>7.3f} "
          f"{r['flash']:>9,} {r['ram']:>8,} {parts:>22} {tflm} {ratio} {'yes' if r['bit_exact'] else 'NO'}",
          flush=True)


def goals(rows: list[dict]) -> list[dict]:
    """Issue 23's criteria, each with the measured value and whether it is met."""
    at = {(r["model"], r["core"]): r for r in rows}
    out = []
    for model, goal in M4_INSTRUCTIONS_GOAL.items():
        r = at.get((model, "cortex-m4"))
        if r is None:
            continue
        out.append({"what": f"{model} cortex-m4 instructions <= {goal:,.0f}", "value": r["instructions"],
                    "met": r["instructions"] <= goal})
        if r["ram_over_tflm"] is not None:
            out.append({"what": f"{model} cortex-m4 RAM <= {RAM_OVER_TFLM_GOAL} x TFLM arena",
                        "value": round(r["ram_over_tflm"], 3), "met": r["ram_over_tflm"] <= RAM_OVER_TFLM_GOAL})
        m55 = at.get((model, "cortex-m55"))
        if model in M55_SPEEDUP_GOAL and m55 is not None:
            speedup = r["instructions"] / m55["instructions"]
            out.append({"what": f"{model} cortex-m55 >= {M55_SPEEDUP_GOAL[model]}x fewer instructions than m4",
                        "value": round(speedup, 2), "met": speedup >= M55_SPEEDUP_GOAL[model]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(mlperf_tiny.MODELS))
    ap.add_argument("--cores", default=",".join(CORES))
    ap.add_argument("--work", default="benchmarks/.work/mcu", help="models, profiles, bundles, firmware go here")
    ap.add_argument("--no-tflm", action="store_true", help="skip the TFLite conversion and the TFLM arena")
    ap.add_argument("--reuse-inputs", action="store_true", help="compile with --reuse-inputs (module docstring)")
    ap.add_argument("--json", default="benchmarks/results/mcu.json")
    args = ap.parse_args()
    work = Path(args.work).resolve()  # the firmware build runs in its own folder
    cores = args.cores.split(",")
    for core in cores:
        missing = mcu.missing_tools(core)
        if missing:
            print(f"bench_mcu: {core} needs {', '.join(missing)}", file=sys.stderr)
            return 2
    print("Cores and QEMU boards (qemu-system-arm -icount; instructions of the entry-point call):")
    for core in cores:
        print(f"  {core:10} {mcu.BOARDS[core].machine:10} {mcu.BOARDS[core].core}")
    print("TFLM arena: measured in tflite-micro's interpreter on the full-int8 .tflite (x86-64 build, reference "
          "kernels): total = head (planned tensors, I/O included) + tail (persistent); RAM/TFLM = RAM / total. "
          "ember's RAM counts its I/O buffers (mut) and its stack.")
    print(_HEAD, flush=True)
    start, rows, tflm_errors = time.perf_counter(), [], {}
    for name in args.models.split(","):
        tflm = None
        if not args.no_tflm:
            path = work / "tflite" / f"{name}.tflite"
            if not path.exists():
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    tflm_arena.write_tflite(name, path)
            measured = tflm_arena.measure(path)  # in a child process: TFLM's C code may abort
            if isinstance(measured, str):
                print(f"{name}: TFLM arena -: {measured}", flush=True)
                tflm_errors[name] = measured
            else:
                tflm = measured
        rows += bench(name, work, cores, tflm, args.reuse_inputs)
    checks = goals(rows)
    if checks:
        print("Issue 23 criteria:")
        for c in checks:
            print(f"  {'met    ' if c['met'] else 'NOT met'}  {c['what']}: {c['value']:,}")
    result = {
        "ember": ember.__version__, "qemu": "qemu-system-arm -icount, SysTick around the entry point",
        "weights": "random, fixed seeds (benchmarks/mlperf_tiny.py); int8 via ember profile, int8 I/O",
        "reuse_inputs": args.reuse_inputs,
        "tflm": "arena measured by tflite-micro's interpreter on the full-int8 TFLite file (benchmarks/tflm_arena.py)",
        "boards": {c: {"machine": mcu.BOARDS[c].machine, "core": mcu.BOARDS[c].core} for c in cores},
        "rows": rows, "criteria": checks, "tflm_errors": tflm_errors,
    }
    write_json(args.json, result, f" ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
