"""Run a bundle on its target: microcontrollers in bare-metal firmware under qemu-system (mcu.py),
Linux targets under qemu-user or natively (linux.py), wasm32 in wasmtime (wasm.py), or a Linux
device over ssh (ssh.py). `ember run/validate/bench --target T` and `--device NAME` come through here.

Each runner links the bundle's own NAME.o, unchanged, with a driver generated from NAME.json and
NAME.h, as a user would: the bundle must have been compiled for the target it runs on.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ember.runtime.loader import Bundle, dequantize_array, sequence_outputs, trim_to_counts
from ember.runtime.targets.common import TargetError

__all__ = ["TargetError", "TargetRun", "check_target", "missing_tools", "run_arrays", "run_bundle", "runner_kind"]


@dataclass
class TargetRun:
    """One run on a target: outputs by NAME.json's names (as the bundle wrote them), and what was measured."""

    outputs: dict[str, Any]
    seconds: float  # wall time of the run (emulator start + inference), not of building the driver
    where: str  # what ran it, in words: "qemu-system-arm -M mps2-an386", "qemu-aarch64", "wasmtime", "ssh pi"
    instructions: int | None = None  # MCU, with count_instructions: executed by the entry-point call
    stack: int | None = None  # MCU: stack high-water mark of the inference, bytes
    sizes: dict[str, int] = field(default_factory=dict)  # MCU firmware: text, data, bss, flash, ram


def runner_kind(target: str) -> str:
    """"mcu", "linux" or "wasm": how `target`'s bundles run here; a TargetError for host or an unknown one."""
    from ember.runtime.targets import linux, mcu

    if target in mcu.BOARDS:
        return "mcu"
    if target in linux.QEMU:
        return "linux"
    if target == "wasm32":
        return "wasm"
    have = ", ".join([*mcu.BOARDS, *linux.QEMU, "wasm32"])
    raise TargetError(f"--target {target}: no runner for it (runners: {have}; host bundles run without --target)")


def missing_tools(target: str) -> list[str]:
    """What must be installed to run `target`'s bundles here, as install hints (empty: all there)."""
    from ember.runtime.targets import linux, mcu

    return mcu.missing_tools(target) if runner_kind(target) == "mcu" else linux.missing_tools(target)


def run_arrays(bundle_dir: Path, target: str, arrays: dict[str, np.ndarray], work: Path,
               count_instructions: bool = False) -> TargetRun:
    """Run the bundle once on `target`; `arrays`: inputs in the bundle's dtypes and shapes, by name."""
    from ember.runtime.targets import linux, mcu, wasm

    kind = runner_kind(target)
    missing = missing_tools(target)
    if missing:
        raise TargetError(f"cannot run {target} bundles here: install {'; '.join(missing)}")
    if kind == "mcu":
        r = mcu.run_firmware(bundle_dir, target, arrays, work, count_instructions=count_instructions)
        return TargetRun(r.outputs, r.seconds, f"{r.board.qemu} -M {r.board.machine}", r.instructions,
                         r.stack, r.sizes)
    if kind == "linux":
        c = linux.run_linux_detailed(bundle_dir, target, arrays, work)
        return TargetRun(c.outputs, c.seconds, " ".join(c.runner) or "natively")
    c = wasm.run_wasm_detailed(bundle_dir, arrays, work)
    return TargetRun(c.outputs, c.seconds, "wasmtime")


def check_target(bundle: Bundle, target: str) -> None:
    """A runner links the bundle's NAME.o as it is: it must have been compiled for `target`."""
    if target != bundle.target:
        raise TargetError(f"{bundle.path}: the bundle was compiled for '{bundle.target}', not '{target}' "
                          f"(ember compile MODEL -o {bundle.path} --target {target})")


def run_bundle(bundle: Bundle, feeds: dict[str, Any], target: str | None = None, device: Any = None,
               cast: bool = False, dequantize: bool = False, count_instructions: bool = False,
               work: Path | None = None) -> TargetRun:
    """`Bundle.run` on the bundle's target (or a `device`, ssh.Device): the same input checks (dtypes,
    `cast`, float data quantized for an --io int8 input) and the same outputs (sequences, valid counts,
    `dequantize`). `work`: where the driver is built (default: a temporary folder, kept on failure)."""
    target = target or bundle.target
    check_target(bundle, target)
    arrays = bundle.check_inputs(feeds, cast)
    tmp = work is None
    work = Path(tempfile.mkdtemp(prefix="ember-target-")) if work is None else Path(work).resolve()
    try:
        if device is not None:
            from ember.runtime.targets.ssh import run_on_device

            run = run_on_device(bundle.path, device, arrays, work)
        else:
            run = run_arrays(bundle.path, target, arrays, work, count_instructions)
    except TargetError as e:
        # The tools' output (several lines) stays in the work folder; the error names it.
        lines = str(e).splitlines()
        (work / "error.log").write_text(str(e) + "\n")
        raise TargetError(f"{lines[0] if lines else 'failed'} (full output: {work / 'error.log'})") from None
    if tmp:
        shutil.rmtree(work, ignore_errors=True)
    outs = sequence_outputs(bundle.manifest, trim_to_counts(run.outputs, bundle.outputs))
    if dequantize:
        for e in bundle.outputs:
            if e.get("quantization") and e["name"] in outs:
                outs[e["name"]] = dequantize_array(outs[e["name"]], e["quantization"])
    run.outputs = outs
    return run
