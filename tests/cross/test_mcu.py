"""Bundles compiled for microcontroller targets, run bare metal on emulated boards (QEMU).

Each bundle is built by `ember.compile(model, out, target=T)`; its NAME.o is linked, unchanged, into
a minimal firmware (ember/runtime/targets/firmware, mcu.py) that runs one inference and prints
the outputs through semihosting. Criterion: the outputs match the host bundle's (same C, another
compiler and CPU: only the rounding of fused multiply-adds and of soft-float helpers may differ) with
max abs error <= 1e-4 x the output's range (tests.support.models.assert_close).

Boards, memory maps and run times: tests/cross/README.md. Select them with `pytest tests/cross/test_mcu.py`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cross import require_tools
from tests.support import mcu
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close, random_inputs

MODELS = ["lenet", "mobilenet_v2_small"]
# (target, float ABI): None is the target's default (hard float where the core has an FPU).
CASES = [
    pytest.param("cortex-m0", None, id="cortex-m0"),
    pytest.param("cortex-m3", None, id="cortex-m3"),
    pytest.param("cortex-m4", None, id="cortex-m4"),
    pytest.param("cortex-m7", None, id="cortex-m7"),
    pytest.param("cortex-m33", None, id="cortex-m33"),
    pytest.param("cortex-m55", None, id="cortex-m55"),
    pytest.param("riscv32", None, id="riscv32-soft"),
    pytest.param("riscv32", "hard", id="riscv32-hard"),
]
REL = 1e-4  # of the output's range, as for every model test

# Helpers a compiler may call from freestanding code: libgcc / compiler-rt integer and float routines.
# Not the C library, and not __aeabi_memcpy & co. (they are libc in disguise).
_HELPER = re.compile(r"^__(aeabi_(?!mem)\w+|(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord)[sd]f[23]"
                     r"|fix(uns)?[sd]f[sd]i|float(un)?[sd]i[sd]f|extendsfdf2|truncdfsf2"
                     r"|u?(div|mod)[sd]i3|mul[sd]i3|ashl[sd]i3|ashr[sd]i3|lshr[sd]i3)$")
_DOUBLE = re.compile(r"^__(aeabi_(d\w+|\w+2d)|\w*df\w*)$")  # any double-precision soft float
_SINGLE = re.compile(r"^__(aeabi_(f\w+|\w+2f)|\w*sf\w*)$")  # any single-precision soft float


def _options(target: str, float_abi: str | None) -> dict[str, str]:
    return {"target": target} | ({"float_abi": float_abi} if float_abi else {})


def _require(target: str) -> None:
    require_tools(target, mcu.missing_tools(target))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("target", "float_abi"), CASES)
def test_bundle_on_qemu_matches_host(artifacts: ArtifactCache, tmp_path: Path, target: str,
                                     float_abi: str | None, model: str) -> None:
    _require(target)
    path = artifacts.model(model)
    x = random_inputs(path, None, seed=5)
    ref = artifacts.bundle(model).run(x)
    bundle = artifacts.bundle(model, **_options(target, float_abi))
    run = mcu.run_firmware(bundle.path, target, x, tmp_path)
    # Shown with -rP / -s: how long the emulated inference took and what the firmware costs.
    print(f"{model} on {target} ({run.board.machine}): {run.seconds:.2f} s, text {run.sizes['text']} "
          f"data {run.sizes['data']} bss {run.sizes['bss']} (incl. stack), peak stack {run.stack} B")
    assert sorted(run.outputs) == sorted(ref)
    for k in ref:
        assert_close(run.outputs[k], ref[k], f"{model} on {target}/{run.board.machine}: output '{k}'", rel=REL)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("target", "float_abi"), CASES)
def test_object_needs_only_compiler_helpers(artifacts: ArtifactCache, target: str, float_abi: str | None,
                                            model: str) -> None:
    """NAME.o may call libgcc/compiler-rt helpers only; no double-precision soft float on any of these
    float32 models; none at all where the core has an FPU (a soft-float call there means the FPU flags
    did not reach the compiler)."""
    nm = "arm-none-eabi-nm" if target.startswith("cortex") else "nm"
    if shutil.which(nm) is None:
        pytest.skip(f"{nm} not found (binutils)")
    bundle = artifacts.bundle(model, **_options(target, float_abi))
    res = subprocess.run([nm, "-u", str(bundle.path / f"{bundle.name}.o")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    undefined = [ln.split()[-1] for ln in res.stdout.splitlines() if ln.strip()]
    foreign = [s for s in undefined if not _HELPER.match(s)]
    assert not foreign, f"{model} for {target}: NAME.o needs more than compiler helpers: {foreign}"
    doubles = [s for s in undefined if _DOUBLE.match(s)]
    assert not doubles, f"{model} for {target}: double-precision soft float in a float32 model: {doubles}"
    if bundle.manifest["target_info"]["fpu"] != "none":
        singles = [s for s in undefined if _SINGLE.match(s)]
        assert not singles, f"{model} for {target}: soft float on a core with an FPU: {singles}"


@pytest.mark.parametrize(("target", "float_abi", "expected"), [
    pytest.param("cortex-m4", None, "CFSR=0x00080000", id="cortex-m4"),  # UsageFault NOCP: no coprocessor
    pytest.param("cortex-m55", None, "CFSR=0x00080000", id="cortex-m55"),
    pytest.param("riscv32", "hard", "mcause=0x00000002", id="riscv32-hard"),  # illegal instruction
])
def test_hard_float_bundle_faults_with_fpu_off(artifacts: ArtifactCache, tmp_path: Path, target: str,
                                               float_abi: str | None, expected: str) -> None:
    """The harness can fail: with the start-up code's FPU enable left out, a hard-float bundle must stop
    at its first floating-point (M55: Helium) instruction, inside the bundle's own code, and the runner
    must say so with the fault registers."""
    _require(target)
    path = artifacts.model("lenet")
    bundle = artifacts.bundle("lenet", **_options(target, float_abi))
    with pytest.raises(mcu.McuError) as err:
        mcu.run_firmware(bundle.path, target, random_inputs(path, None, 0), tmp_path, defines=("LEAVE_FPU_OFF",))
    msg = str(err.value)
    assert "exit status 3" in msg and expected in msg, msg
    pc = re.search(r"\b(?:pc|mepc)=0x([0-9a-f]+)", msg)
    assert pc is not None, msg
    where = mcu.function_at(tmp_path / "firmware.elf", int(pc.group(1), 16))
    own = mcu.function_symbols(bundle.path / f"{bundle.name}.o")
    assert where in own, f"the fault is in {where}, not in a function of {bundle.name}.o ({sorted(own)})\n{msg}"


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m3", "cortex-m4", "cortex-m33", "cortex-m55", "riscv32"])
def test_mcu_plan_is_no_larger_than_the_hosts(artifacts: ArtifactCache, target: str) -> None:
    """Kernel scratch on a microcontroller is RAM the plan holds, sized for RAM (passes/scratch_budget.py),
    not for a desktop L2: LeNet's activation region for a Cortex-M is at most the host's. It was 97,216 B
    against the host's 44,352 B while float im2col took blocks of up to 1 MiB (78,400 B for the first conv)."""
    host = artifacts.bundle("lenet").manifest["memory"]
    small = artifacts.bundle("lenet", target=target).manifest["memory"]
    assert small["activations"] <= host["activations"], (target, small, host)
    # Not smaller than possible: the first pooling's input and output (6x28x28 and 6x14x14 floats) live together.
    assert small["activations"] >= small["activations_lower_bound"] >= 4 * 6 * (28 * 28 + 14 * 14), small
