"""End-to-end: real models compiled by ember, run, and compared with onnxruntime.

Criteria (from the issue): max abs error <= 1e-4 x (max - min) of each output; planned activation
memory within 2% of its lower bound; two runs and two compiles byte-identical; the generated C
warning-free as freestanding C99 and clean under AddressSanitizer + UBSan.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.codegen.bundle import write_weights_txt
from ember.config import CompileOptions
from ember.driver import lower
from ember.errors import EmberError
from tests.support import cdriver
from tests.support.cache import ArtifactCache
from tests.support.models import SPECS, assert_close, build, dynamo_builder, onnxruntime_outputs, random_inputs

MODELS = ["lenet", "lenet_batch", "lenet_external", "mobilenet_v2", "resnet18", "transformer", "mlp",
          "constant_nodes"]
# The sanitizer runs use the smaller variant of the big architectures (same layers, fewer channels).
SANITIZED = sorted({SPECS[m].small or m for m in MODELS})


def _compare(bundle: ember.Bundle, path: Path, name: str, seed: int = 0) -> dict[str, np.ndarray]:
    x = random_inputs(path, SPECS[name].defines if name in SPECS else None, seed)
    got = bundle.run(x)
    ref = onnxruntime_outputs(path, x)
    assert sorted(got) == sorted(ref), f"{name}: outputs {sorted(got)} != onnxruntime's {sorted(ref)}"
    for k in ref:
        assert_close(got[k], ref[k], f"{name}: output '{k}'")
    return got


@pytest.mark.parametrize("name", MODELS)
def test_matches_onnxruntime(artifacts: ArtifactCache, name: str) -> None:
    path = artifacts.model(name)
    bundle = artifacts.bundle(name)
    first = _compare(bundle, path, name, seed=0)
    # Same inputs again: byte-identical outputs (no state carried between runs).
    x = random_inputs(path, SPECS[name].defines, 0)
    again = bundle.run(x)
    for k, v in first.items():
        assert v.tobytes() == again[k].tobytes(), f"{name}: output '{k}' differs between two runs"
    _compare(bundle, path, name, seed=1)


@pytest.mark.parametrize("name", MODELS)
def test_activation_memory_near_lower_bound(artifacts: ArtifactCache, name: str) -> None:
    mem = artifacts.bundle(name).manifest["memory"]
    assert mem["activations_lower_bound"] <= mem["activations"]
    bound = -(-mem["activations_lower_bound"] // 64) * 64  # the region's size is a multiple of 64 bytes
    assert mem["activations"] <= 1.02 * bound, (
        f"{name}: activations {mem['activations']} B > 1.02 x lower bound {mem['activations_lower_bound']} B")


@pytest.mark.parametrize("name", MODELS)
def test_source_is_warning_free_freestanding_c99(artifacts: ArtifactCache, name: str, tmp_path: Path) -> None:
    bundle = artifacts.bundle(name)
    cdriver.compile_werror(bundle.path, tmp_path / "model.o")
    # The object ember built needs nothing from libc/libm (no memcpy/memset/expf behind our back).
    undefined = cdriver.run_cmd(["nm", "-u", str(bundle.path / f"{bundle.name}.o")]).stdout.strip()
    assert undefined == "", f"{name}: undefined symbols in {bundle.name}.o:\n{undefined}"


@pytest.mark.parametrize("name", SANITIZED)
def test_sanitized_c_driver_matches_onnxruntime(artifacts: ArtifactCache, name: str, tmp_path: Path) -> None:
    """Built from NAME.h alone with ASan + UBSan (bundle source instrumented too), no Python in the loop."""
    path = artifacts.model(name)
    bundle = artifacts.bundle(name)
    x = random_inputs(path, SPECS[name].defines, 3)
    got = cdriver.run(bundle.path, tmp_path, x, sanitize=True)
    ref = onnxruntime_outputs(path, x)
    for k in ref:
        assert_close(got[k], ref[k], f"{name} (sanitized C driver): output '{k}'")


def test_c_driver_reads_weights_txt_like_python(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """The #include'd NAME.weights.txt and NAME.weights.bin hold the same bytes: same outputs. (The
    driver builds NAME.c with plain `cc -O1`, no -march: against the bundle's own object, which may use
    fused multiply-adds, only rounding may differ.)"""
    path = artifacts.model("lenet")
    bundle = artifacts.bundle("lenet")
    x = random_inputs(path, None, 5)
    a = cdriver.run(bundle.path, tmp_path / "txt", x, weights_from_file=False)
    b = cdriver.run(bundle.path, tmp_path / "bin", x, weights_from_file=True)
    py = bundle.run(x)
    for k in py:
        np.testing.assert_array_equal(a[k], b[k])
        np.testing.assert_allclose(a[k], py[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["lenet", "transformer", "mobilenet_v2_small"])
def test_compile_is_deterministic(artifacts: ArtifactCache, name: str, tmp_path: Path) -> None:
    """A second lowering of the model (everything up to the C text, no C compiler: it adds nothing to compare)
    gives the bundle's files byte for byte."""
    path = artifacts.model(name)
    ember.compile(path, tmp_path / "a", name="net")
    again = lower(str(path), CompileOptions(name="net"))
    weights_bin, weights_txt = io.BytesIO(), io.BytesIO()
    again.plan.write_constants(weights_bin)
    write_weights_txt(again.plan, weights_txt)
    second = {"net.c": again.sources.c.encode(), "net.h": again.sources.h.encode(),
              "net.weights.bin": weights_bin.getvalue(), "net.weights.txt": weights_txt.getvalue()}
    for f, data in second.items():
        assert (tmp_path / "a" / f).read_bytes() == data, f"{name}: {f} differs"


def test_symbolic_batch_needs_a_value(artifacts: ArtifactCache, tmp_path: Path) -> None:
    """Without --define the symbolic batch cannot be planned: a clear error naming the symbol."""
    with pytest.raises(EmberError, match="batch"):
        ember.compile(artifacts.model("lenet_batch"), tmp_path / "b")
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_external_data_is_read(artifacts: ArtifactCache) -> None:
    path = artifacts.model("lenet_external")
    data = path.with_name("lenet_external.data")
    assert data.exists() and data.stat().st_size > 200_000, "the builder must put the weights outside"
    assert path.stat().st_size < 20_000
    inline = artifacts.bundle("lenet")
    ext = artifacts.bundle("lenet_external")
    assert (inline.path / "lenet.weights.bin").read_bytes() == \
        (ext.path / "lenet_external.weights.bin").read_bytes()


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None,
                    reason="torch.onnx.export(dynamo=True) needs the onnxscript package, not installed")
def test_dynamo_exported_lenet(artifacts: ArtifactCache, tmp_path: Path) -> None:
    path = build("lenet_dynamo", artifacts.root / "models", dynamo_builder)
    bundle = ember.compile(path, tmp_path / "b")
    x = random_inputs(path, None, 0)
    ref = onnxruntime_outputs(path, x)
    got = bundle.run(x)
    for k in ref:
        assert_close(got[k], ref[k], f"lenet (dynamo export): output '{k}'")
