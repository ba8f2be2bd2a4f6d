"""Instructions per inference of an int8 model on emulated Cortex-M boards, optionally checked bit-exact.

    python scripts/mcu_icount.py model.onnx calib.npy --target cortex-m4 [--target cortex-m55 ...] [--check]
                                 [--functions N]

Profiles the model on the calibration file (`ember profile`; first axis: samples), compiles it with
`--quantize int8 --io int8` for each target, and runs the first calibration sample, quantized with the
input's scale and zero point, in the bare-metal firmware of ember/runtime/targets/mcu.py under QEMU, which
counts the entry point's instructions (`-icount` and SysTick). `--check` also compiles the host bundle and
compares the output bytes. One line per target. `--functions N` reruns the firmware under QEMU's execution
log (`-d in_asm,exec,nochain`: every translation block's length, then every block executed) and prints the N
functions that executed the most instructions (the whole run: boot and output included), which is where a
kernel's time goes (ember_qa_gemm2: the SMLAD products; ember_qarm_dw3: depthwise; ember_qa_col: im2col).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ember.api import load  # noqa: E402
from ember.cli import main as ember_main  # noqa: E402
from ember.runtime.targets.mcu import BOARDS, function_symbols, run_firmware  # noqa: E402


def function_counts(elf: Path, target: str, log: Path) -> collections.Counter:
    """Instructions executed per function of the firmware `elf`, from QEMU's execution log."""
    b = BOARDS[target]
    subprocess.run([b.qemu, "-M", b.machine, *b.qemu_args, "-display", "none", "-serial", "null", "-monitor", "none",
                    "-semihosting-config", "enable=on,target=native", "-kernel", str(elf),
                    "-d", "in_asm,exec,nochain", "-D", str(log)], capture_output=True, timeout=900, check=True)
    length: dict[int, int] = {}  # translation block start -> instructions
    runs: collections.Counter = collections.Counter()
    start, translating = None, False
    with open(log) as f:
        for line in f:
            if line.startswith("IN:"):
                start, translating = None, True
            elif translating and (m := re.match(r"0x([0-9a-f]+):", line)):
                start = int(m.group(1), 16) if start is None else start
                length[start] = length.get(start, 0) + 1
            elif m := re.match(r"Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/", line):
                translating = False
                runs[int(m.group(1), 16)] += 1
    funcs = sorted((a, a + n, name) for name, (a, n) in function_symbols(elf).items())
    starts = [a for a, _, _ in funcs]
    out: collections.Counter = collections.Counter()
    for pc, times in runs.items():
        i = bisect.bisect_right(starts, pc) - 1
        out[funcs[i][2] if i >= 0 and pc < funcs[i][1] else hex(pc)] += times * length.get(pc, 0)
    return out


def _input_int8(bundle: Path, x: np.ndarray) -> tuple[str, np.ndarray]:
    """The (one) input's name and x quantized with the scale and zero point the bundle states for it."""
    import json

    man = json.loads(next(bundle.glob("*.json")).read_text())
    inp = man["inputs"][0]
    q = inp["quantization"]
    scale, zp = float(q["scale"][0]), int(q["zero_point"][0])
    return inp["name"], np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8).reshape(inp["shape"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("calib", help=".npy of calibration inputs (first axis: samples)")
    ap.add_argument("--target", action="append", default=None, help="repeatable (default: cortex-m4)")
    ap.add_argument("--check", action="store_true", help="compare the output bytes with the host bundle")
    ap.add_argument("--functions", type=int, default=0, metavar="N",
                    help="also print the N functions that executed the most instructions (QEMU's execution log)")
    ap.add_argument("--work", default=None, help="folder for bundles and firmware (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        prof = work / "profile.yaml"
        if ember_main(["profile", args.model, args.calib, "-o", str(prof)]) != 0:
            raise SystemExit(1)
        flags = ["--quantize", "int8", "--profile", str(prof), "--io", "int8"]
        host = None
        if args.check:
            if ember_main(["compile", args.model, "-o", str(work / "host"), *flags]) != 0:
                raise SystemExit(1)
            host = load(work / "host")
        sample = np.load(args.calib)[:1]
        for target in args.target or ["cortex-m4"]:
            out = work / target
            if ember_main(["compile", args.model, "-o", str(out), "--target", target, *flags]) != 0:
                raise SystemExit(1)
            name, x = _input_int8(out, sample)
            run = run_firmware(out, target, {name: x}, work / f"fw-{target}")
            same = ""
            if host is not None:
                ref = host.run({name: x})
                same = " bit-exact" if all(np.array_equal(ref[k], run.outputs[k]) for k in ref) else " MISMATCH"
            print(f"{Path(args.model).stem} {target}: {run.instructions:,} instructions{same}", flush=True)
            if args.functions:
                counts = function_counts(work / f"fw-{target}" / "firmware.elf", target, work / f"exec-{target}.log")
                total = sum(counts.values())
                for name, n in counts.most_common(args.functions):
                    print(f"  {n:>12,} {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
