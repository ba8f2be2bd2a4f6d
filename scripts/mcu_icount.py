"""Instructions per inference of an int8 bundle on an emulated Cortex-M board (QEMU `-icount shift=0`).

    python scripts/mcu_icount.py model.onnx calib.npy --target cortex-m4 [--target cortex-m55 ...]

Profiles the model on the calibration file (`ember profile`), compiles it with `--quantize int8 --io int8`
for each target, links the test firmware of tests/support/mcu.py around it with the call timed by SysTick
(counting the core clock), and runs it under QEMU with `-icount shift=0`: one instruction advances the
virtual clock by 1 ns, so instructions = ticks * 1e9 / the board's SYSCLK (resolution: 1e9 / SYSCLK
instructions, 40 on the 25 MHz MPS2 boards). Prints one line per target; `--check` also runs the host
bundle and compares the output bytes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ember.cli import main as ember_main  # noqa: E402
from tests.support import mcu  # noqa: E402

# SYSCLK of each board as QEMU models it (hw/arm/mps2.c, mps2-tz.c).
SYSCLK = {"cortex-m0": 25e6, "cortex-m4": 25e6, "cortex-m7": 25e6, "cortex-m33": 20e6, "cortex-m55": 32e6}
TIMER = """
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static uint32_t ticks_hi;
"""


def _timed_main(src: str) -> str:
    """The test firmware's main.c with the entry point's call between two SysTick reads (24-bit down
    counter from the core clock; COUNTFLAG polled after the call catches at most one wrap, so runs must
    stay under 2^24 ticks: 670 M instructions at 25 MHz)."""
    src = src.replace("int main(void) {", TIMER + "int main(void) {\n    uint32_t t0, t1;", 1)
    call = re.search(r"^    rc = .*;$", src, re.M)
    assert call is not None
    start = ("    SYST_RVR = 0xFFFFFFu; SYST_CVR = 0u; SYST_CSR = 5u;\n"
             "    while (SYST_CVR == 0u) {} /* the first tick loads RVR */\n    t0 = SYST_CVR;\n")
    stop = ("\n    t1 = SYST_CVR; ticks_hi = (SYST_CSR >> 16) & 1u;\n"
            '    fw_puts("TICKS "); fw_put_dec(ticks_hi ? t0 + 0x1000000u - t1 : t0 - t1); fw_puts("\\n");')
    return src[:call.start()] + start + call.group(0) + stop + src[call.end():]


def count(bundle: Path, target: str, x: np.ndarray, work: Path) -> tuple[int, np.ndarray]:
    man = mcu._manifest(bundle)
    board = mcu.BOARDS[target]
    work.mkdir(parents=True, exist_ok=True)
    name = man["inputs"][0]["name"]  # one-input models
    (work / "main.c").write_text(_timed_main(mcu.main_source(man, {name: x})))
    elf = work / "firmware.elf"
    mcu._link(bundle, man, board, work, elf, ())
    cmd = [board.qemu, "-M", board.machine, "-icount", "shift=0", "-display", "none", "-serial", "null",
           "-monitor", "none", "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log = res.stdout + res.stderr
    m = re.search(r"^TICKS (\d+)$", log, re.M)
    if res.returncode != 0 or m is None:
        raise SystemExit(f"{target}: run failed (exit {res.returncode})\n{log[-2000:]}")
    out = mcu._parse_outputs(man, log, board)
    return round(int(m.group(1)) * 1e9 / SYSCLK[target]), next(iter(out.values()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("calib", help=".npy of calibration inputs (first axis: samples)")
    ap.add_argument("--target", action="append", default=None)
    ap.add_argument("--check", action="store_true", help="compare the output bytes with the host bundle")
    ap.add_argument("--work", default=None, help="folder for bundles and firmware (default: a temporary one)")
    args = ap.parse_args()
    targets = args.target or ["cortex-m4"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        prof = work / "profile.yaml"
        assert ember_main(["profile", args.model, args.calib, "-o", str(prof)]) == 0
        calib = np.load(args.calib)
        flags = ["--quantize", "int8", "--profile", str(prof), "--io", "int8"]
        host = None
        if args.check:
            assert ember_main(["compile", args.model, "-o", str(work / "host"), *flags]) == 0
            from ember.api import load

            host = load(work / "host")
        for target in targets:
            out = work / target
            assert ember_main(["compile", args.model, "-o", str(out), "--target", target, *flags]) == 0
            scale_x = _input_int8(out, calib[:1])
            n, y = count(out, target, scale_x, work / f"fw-{target}")
            same = ""
            if host is not None:
                ref = next(iter(host.run({mcu._manifest(out)["inputs"][0]["name"]: scale_x}).values()))
                same = " bit-exact" if np.array_equal(np.asarray(ref).reshape(-1), y.reshape(-1)) else " MISMATCH"
            print(f"{Path(args.model).stem} {target}: {n:,} instructions{same}", flush=True)


def _input_int8(bundle: Path, x: np.ndarray) -> np.ndarray:
    """x quantized with the scale and zero point the bundle states for its int8 input."""
    inp = mcu._manifest(bundle)["inputs"][0]
    q = inp["quantization"]
    scale, zp = float(q["scale"][0]), int(q["zero_point"][0])
    return np.clip(np.round(x / scale) + zp, -128, 127).astype(np.int8).reshape(inp["shape"])


if __name__ == "__main__":
    main()
