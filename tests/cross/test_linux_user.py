"""Bundles compiled for the Linux cross targets, run as static programs under qemu-user.

Each bundle is built by `ember.compile(model, out, target=T)`; its NAME.o is linked, unchanged, with a
freestanding driver (ember/runtime/targets/linux.py: raw system calls, no C library) and run natively
(x86_64, i386 on an x86-64 host) or under qemu-aarch64 / qemu-arm / qemu-riscv64. Criterion: the
outputs match the host bundle's with max abs error <= 1e-4 x the output's range (other compiler, CPU
and fused multiply-adds: the rounding may differ, nothing else).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cross import copy_bundle, require_tools, understate_activations
from tests.support import crossrun
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close, random_inputs

MODELS = ["lenet", "mobilenet_v2_small"]
REL = 1e-4  # of the output's range, as for every model test


def _require(target: str) -> None:
    require_tools(target, crossrun.missing_tools(target))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("target", crossrun.LINUX_TARGETS)
def test_bundle_under_qemu_user_matches_host(artifacts: ArtifactCache, tmp_path: Path, target: str,
                                             model: str) -> None:
    _require(target)
    path = artifacts.model(model)
    x = random_inputs(path, None, seed=5)
    ref = artifacts.bundle(model).run(x)
    bundle = artifacts.bundle(model, target=target)
    run = crossrun.run_linux_detailed(bundle.path, target, x, tmp_path)
    # Shown with -rP / -s.
    how = " ".join(Path(r).name for r in run.runner) or "natively"
    print(f"{model} on {target} ({how}): build {run.build_seconds:.2f} s, run {run.seconds:.2f} s")
    assert sorted(run.outputs) == sorted(ref)
    for k in ref:
        assert_close(run.outputs[k], ref[k], f"{model} on {target}: output '{k}'", rel=REL)


def test_harness_sees_wrong_weights(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The comparison can fail: the same bundle with one weight changed gives other outputs on the target."""
    target = "riscv64"
    _require(target)
    path = artifacts.model("lenet")
    x = random_inputs(path, None, seed=5)
    ref = artifacts.bundle("lenet").run(x)
    bundle = copy_bundle(artifacts.bundle("lenet", target=target).path, tmp_path / "bundle")
    weights = bundle / "lenet.weights.bin"
    w = np.frombuffer(weights.read_bytes(), np.float32).copy()
    w[: w.size // 2] *= 1.5  # the first half of the constants: certainly some that every output depends on
    weights.write_bytes(w.tobytes())
    got = crossrun.run_linux(bundle, target, x, tmp_path / "run")
    with pytest.raises(AssertionError, match="max abs error"):
        assert_close(got["output"], ref["output"], "lenet with changed weights", rel=REL)


def test_driver_catches_writes_past_a_region(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The driver's guard bytes work: told (through NAME.h) that the activation region is 32 bytes smaller
    than the bundle uses, it must report the bundle's writes past its end."""
    target = "armv7"
    _require(target)
    path = artifacts.model("lenet")
    bundle = copy_bundle(artifacts.bundle("lenet", target=target).path, tmp_path / "bundle")
    understate_activations(bundle, "lenet")
    with pytest.raises(crossrun.CrossRunError, match="exit status 5"):
        crossrun.run_linux(bundle, target, random_inputs(path, None, seed=5), tmp_path / "run")
