"""Quantized bundles for microcontroller targets, run bare metal on emulated boards (QEMU): issue 5's criterion.

Each model goes through the user's workflow once: `ember profile` on four fixed-seed inputs, then
`ember.compile(..., quantize="int8", profile=P, target=T)` for the host and for each Cortex-M target from
that same profile. The integer kernels promise exact int32 sums and integer requantisation on every path,
so the criterion is equality of the output bytes with the host int8 bundle (float I/O: the float input is
quantized and the output dequantized inside the bundle, so those steps are compared too; int8 I/O: the
integer pipeline alone). The Cortex-M4/M7/M33 objects must use the DSP (SMLAD) path of the int8 matrix
product, and an object whose SMLAD path is deliberately broken must be caught. The four MLPerf Tiny models
(benchmarks/mlperf_tiny.py, issue 23) run int8 with int8 I/O on the Cortex-M4, bit-exact with the host. Last, a
float bundle with bfloat16 weights (--weights bf16) runs on a core without FPU and on one with.

Numbers (flash/RAM of int8 vs float bundles): tests/cross/README.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import ember
from benchmarks import mlperf_tiny
from ember.cli import main
from tests.cross import copy_bundle, require_tools
from tests.support import mcu
from tests.support.cache import ArtifactCache, locked
from tests.support.models import assert_close, build, input_specs, random_inputs

CALIBRATION_SAMPLES = 4
DSP_TARGETS = ("cortex-m4", "cortex-m7", "cortex-m33")
# (model, target, io): both models with float I/O on the DSP cores; LeNet also with int8 I/O, and on the
# cores without DSP (kernels/qarm_mul.c: no SMLAD, and on the M0 no unaligned access).
CASES = [
    *(pytest.param(m, t, "float", id=f"{m}-{t}") for m in ("lenet", "mobilenet_v2_small") for t in DSP_TARGETS),
    *(pytest.param("lenet", t, "int8", id=f"lenet-{t}-io-int8") for t in DSP_TARGETS),
    pytest.param("lenet", "cortex-m0", "float", id="lenet-cortex-m0"),
    pytest.param("lenet", "riscv32", "float", id="lenet-riscv32"),
]


def _profile(artifacts: ArtifactCache, model: str) -> Path:
    """`ember profile MODEL calib.npy -o P` once per run (shared by the xdist workers)."""
    folder = artifacts.root / "int8-profiles"
    path = folder / f"{model}.yaml"
    with locked(folder, f"{model}-profile"):
        if not path.exists():
            shape = next(iter(input_specs(artifacts.model(model)).values()))[0]
            data = folder / f"{model}.calib.npy"
            rng = np.random.default_rng(11)
            np.save(data, rng.standard_normal((CALIBRATION_SAMPLES, *shape[1:])).astype(np.float32))
            tmp = folder / f"{model}.yaml.part"
            assert main(["profile", str(artifacts.model(model)), str(data), "-o", str(tmp)]) == 0
            tmp.replace(path)
    return path


def _bundle(artifacts: ArtifactCache, model: str, target: str, io: str = "float"):
    return artifacts.bundle(model, quantize="int8", profile=str(_profile(artifacts, model)), io=io, target=target)


def _inputs(bundle, model_path: Path) -> dict[str, np.ndarray]:
    """Fixed-seed inputs in the bundle's own input dtype (int8 I/O: random bytes over the whole range)."""
    x = random_inputs(model_path, None, seed=5)
    rng = np.random.default_rng(6)
    for e in bundle.manifest["inputs"]:
        if e["dtype"] == "int8":
            x[e["name"]] = rng.integers(-128, 128, e["shape"]).astype(np.int8)
    return x


def _differences(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> list[str]:
    """Outputs whose bytes differ from the reference, described; empty when every byte is equal."""
    bad = []
    for k, want in ref.items():
        have = got.get(k)
        if have is None or have.dtype != want.dtype or have.shape != want.shape:
            bad.append(f"'{k}': {None if have is None else (have.dtype, have.shape)} vs {(want.dtype, want.shape)}")
        elif have.tobytes() != want.tobytes():
            n = int(np.count_nonzero(have != want))
            err = float(np.max(np.abs(have.astype(np.float64) - want.astype(np.float64))))
            bad.append(f"'{k}': {n} of {want.size} elements differ (max abs {err:.4g})")
    return bad


def _smlad_count(obj: Path) -> int:
    res = subprocess.run(["arm-none-eabi-objdump", "-d", str(obj)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return len(re.findall(r"\tsmlad\s", res.stdout))


@pytest.mark.parametrize(("model", "target", "io"), CASES)
def test_int8_bundle_on_qemu_is_bit_identical_to_host(artifacts: ArtifactCache, tmp_path: Path, model: str,
                                                      target: str, io: str) -> None:
    require_tools(target, mcu.missing_tools(target))
    host = _bundle(artifacts, model, "host", io)
    ops = host.manifest["ops"]
    assert ops.get("QConv", 0) > 0 and "Conv" not in ops, f"{model}: not an integer bundle: {ops}"
    x = _inputs(host, artifacts.model(model))
    ref = host.run(x)
    bundle = _bundle(artifacts, model, target, io)
    run = mcu.run_firmware(bundle.path, target, x, tmp_path)
    fp = bundle.manifest["footprint"]
    print(f"int8 {model} ({io} I/O) on {target} ({run.board.machine}): {run.seconds:.2f} s, flash {fp['flash']} "
          f"RAM {fp['ram']}; firmware text {run.sizes['text']} bss {run.sizes['bss']}, peak stack {run.stack} B")
    bad = _differences(run.outputs, ref)
    assert not bad, f"int8 {model} on {target}/{run.board.machine} differs from the host int8 bundle: {bad}"


def _mlperf_bundle(artifacts: ArtifactCache, name: str, target: str) -> ember.Bundle:
    """An MLPerf Tiny model (benchmarks/mlperf_tiny.py) int8 with int8 I/O, profiled on its fixed-seed
    calibration data, built once per run (shared by the xdist workers)."""
    folder = artifacts.root / "mlperf-tiny"
    model = build(name, folder, lambda path: mlperf_tiny.export(name, path))
    profile, out = folder / f"{name}.yaml", folder / "bundles" / f"{name}-{target}"
    with locked(folder, f"{name}-{target}"):
        with locked(folder, f"{name}-profile"):
            if not profile.exists():
                data = folder / f"{name}.calib.npy"
                np.save(data, mlperf_tiny.calibration(name, CALIBRATION_SAMPLES))
                tmp = folder / f"{name}.yaml.part"
                assert main(["profile", str(model), str(data), "-o", str(tmp)]) == 0
                tmp.replace(profile)
        if not (out / ".complete").exists():
            ember.compile(model, out, quantize="int8", profile=str(profile), io="int8", target=target)
            (out / ".complete").touch()
        return ember.load(out)


@pytest.mark.parametrize("model", list(mlperf_tiny.MODELS))
def test_mlperf_tiny_int8_on_cortex_m4_is_bit_identical_to_host(artifacts: ArtifactCache, tmp_path: Path,
                                                                model: str) -> None:
    """Issue 23's models (DS-CNN, MobileNetV1 0.25, ResNet-8, the FC autoencoder), int8 with int8 I/O: the
    Cortex-M4 firmware's output bytes equal the host bundle's, on a fixed-seed input over the whole int8 range.
    The run also counts the inference's instructions as benchmarks/bench_mcu.py does: no Cortex-M4 instruction
    does more than two multiply-accumulates (SMLAD), so fewer than MACs / 2 means a broken counter."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    host = _mlperf_bundle(artifacts, model, "host")
    ops = host.manifest["ops"]
    assert ops.get("QConv", 0) + ops.get("QMatMul", 0) > 0 and not {"Conv", "Gemm", "MatMul"} & set(ops), ops
    e = host.manifest["inputs"][0]
    assert e["dtype"] == "int8", e
    x = {e["name"]: np.random.default_rng(6).integers(-128, 128, e["shape"]).astype(np.int8)}
    ref = host.run(x)
    run = mcu.run_firmware(_mlperf_bundle(artifacts, model, target).path, target, x, tmp_path, count_instructions=True)
    macs = mlperf_tiny.macs(model)
    print(f"MLPerf Tiny {model} int8 on {target}: {run.instructions} instructions ({macs} MACs), "
          f"{run.seconds:.2f} s, peak stack {run.stack} B")
    assert run.instructions is not None and macs / 2 <= run.instructions <= 20 * macs, (run.instructions, macs)
    bad = _differences(run.outputs, ref)
    assert not bad, f"MLPerf Tiny {model} on {target}/{run.board.machine} differs from the host int8 bundle: {bad}"


@pytest.mark.parametrize("model", ["lenet", "mobilenet_v2_small"])
@pytest.mark.parametrize("target", DSP_TARGETS)
def test_dsp_cores_use_smlad(artifacts: ArtifactCache, model: str, target: str) -> None:
    """The int8 kernels' Cortex-M DSP path (SXTB16 + SMLAD, qarm.c and qgemm.c) is what the object holds."""
    if shutil.which("arm-none-eabi-objdump") is None:
        require_tools(target, ["arm-none-eabi-objdump (apt-get install binutils-arm-none-eabi)"])
    bundle = _bundle(artifacts, model, target)
    assert _smlad_count(bundle.path / f"{bundle.name}.o") > 0, f"{model} for {target}: no SMLAD in {bundle.name}.o"


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m3"])
def test_no_dsp_core_holds_no_smlad(artifacts: ArtifactCache, target: str) -> None:
    """Cortex-M0 (ARMv6-M) and Cortex-M3 (ARMv7-M) have no DSP instructions: their objects must hold none (an
    SMLAD there is an undefined-instruction fault); their convolutions take qarm_mul.c's kernel."""
    if shutil.which("arm-none-eabi-objdump") is None:
        require_tools(target, ["arm-none-eabi-objdump (apt-get install binutils-arm-none-eabi)"])
    bundle = _bundle(artifacts, "lenet", target)
    assert "ember_qarm_conv_mul((uint8_t *)" in (bundle.path / f"{bundle.name}.c").read_text()
    assert _smlad_count(bundle.path / f"{bundle.name}.o") == 0


def test_broken_smlad_path_is_caught(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The comparison can fail, and the SMLAD path is what runs on the board: NAME.c rebuilt with SMLADX
    (halfwords of one operand swapped: w0*x2 + w2*x0 instead of w0*x0 + w2*x2) for every SMLAD of its asm
    statements (qgemm.c, qarm.c) must give other bytes."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    model = "lenet"
    host = _bundle(artifacts, model, "host")
    x = _inputs(host, artifacts.model(model))
    good = _bundle(artifacts, model, target)
    broken = copy_bundle(good.path, tmp_path / "broken")
    source = broken / f"{good.name}.c"
    text, n = re.subn(r'"smlad ([%r])', r'"smladx \1', source.read_text())  # operands, or naked asm's registers
    assert n >= 1, f"expected smlad asm statements in {source.name}, found none"
    source.write_text(text)
    obj = broken / f"{good.name}.o"
    cmd = [str(source) if a == str(good.path / source.name) else str(obj) if a == str(good.path / obj.name) else a
           for a in good.manifest["compiler"]]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert _smlad_count(obj) == 0
    run = mcu.run_firmware(broken, target, x, tmp_path / "run")
    assert _differences(run.outputs, host.run(x)), "a build with a broken SMLAD path gave the host's bytes"


@pytest.mark.parametrize("target", ["cortex-m0", "cortex-m4"])
def test_bf16_weights_on_qemu_match_host(artifacts: ArtifactCache, tmp_path: Path, target: str) -> None:
    """--weights bf16: the widening kernel (integer shifts) and the float model after it, as test_mcu.py checks
    float bundles: max abs error <= 1e-4 x the output's range of the host bundle with the same option."""
    require_tools(target, mcu.missing_tools(target))
    x = random_inputs(artifacts.model("mlp"), None, seed=5)
    ref = artifacts.bundle("mlp", weights="bf16").run(x)
    bundle = artifacts.bundle("mlp", weights="bf16", target=target)
    assert bundle.manifest["ops"].get("BFloat16ToFloat", 0) > 0
    run = mcu.run_firmware(bundle.path, target, x, tmp_path)
    for k in ref:
        assert_close(run.outputs[k], ref[k], f"mlp --weights bf16 on {target}: output '{k}'")
