"""Bundles compiled for wasm32, linked into a WebAssembly module and run with wasmtime.

Each bundle is built by `ember.compile(model, out, target="wasm32")`; its NAME.o (a wasm32 object) is
linked by wasm-ld with a freestanding driver that exports the regions' addresses and a run function
(ember/runtime/targets/wasm.py); the module imports nothing. Criterion: the outputs match the host bundle's
with max abs error <= 1e-4 x the output's range.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cross import copy_bundle, require_tools, understate_activations
from tests.support import crossrun
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close, random_inputs

MODELS = ["lenet", "mobilenet_v2_small"]
REL = 1e-4  # of the output's range, as for every model test


@pytest.fixture(autouse=True)
def _require() -> None:
    require_tools("wasm32", crossrun.missing_tools("wasm32"))


@pytest.mark.parametrize("model", MODELS)
def test_bundle_in_wasmtime_matches_host(artifacts: ArtifactCache, tmp_path: Path, model: str) -> None:
    path = artifacts.model(model)
    x = random_inputs(path, None, seed=5)
    ref = artifacts.bundle(model).run(x)
    bundle = artifacts.bundle(model, target="wasm32")
    run = crossrun.run_wasm_detailed(bundle.path, x, tmp_path)
    print(f"{model} on wasm32 (wasmtime): build {run.build_seconds:.2f} s, run {run.seconds:.2f} s")  # -rP / -s
    assert sorted(run.outputs) == sorted(ref)
    for k in ref:
        assert_close(run.outputs[k], ref[k], f"{model} on wasm32: output '{k}'", rel=REL)


def test_driver_catches_writes_past_a_region(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """Told (through NAME.h) that the activation region is 32 bytes smaller than the bundle uses, the
    driver must report the bundle's writes past its end."""
    path = artifacts.model("lenet")
    bundle = copy_bundle(artifacts.bundle("lenet", target="wasm32").path, tmp_path / "bundle")
    understate_activations(bundle, "lenet")
    with pytest.raises(crossrun.CrossRunError, match="returned 5"):
        crossrun.run_wasm(bundle, random_inputs(path, None, seed=5), tmp_path / "run")
