"""--ram-limit on Cortex-M4: the int8 bundle whose first stage runs in patches (passes/patch_ram.py) fits the
limit and gives on QEMU the host's unpatched outputs, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ember
from ember.cli import main
from tests.cross import require_tools
from tests.support import mcu
from tests.unit.test_patch_ram import SHAPE, _cnn


def test_patched_bundle_on_qemu_equals_host(tmp_path: Path) -> None:
    require_tools("cortex-m4", mcu.missing_tools("cortex-m4"))
    path = _cnn(tmp_path / "cnn.onnx")
    np.save(tmp_path / "calib.npy", np.random.default_rng(1).standard_normal((8, *SHAPE[1:])).astype(np.float32))
    assert main(["profile", str(path), str(tmp_path / "calib.npy"), "-o", str(tmp_path / "p.yaml")]) == 0
    opts = {"quantize": "int8", "profile": str(tmp_path / "p.yaml"), "io": "int8"}
    host = ember.compile(path, tmp_path / "host", **opts)
    whole = ember.compile(path, tmp_path / "whole", target="cortex-m4", **opts).manifest["memory"]
    limit = (whole["mutable"] + whole["activations"]) * 6 // 10
    bundle = ember.compile(path, tmp_path / "m4", target="cortex-m4", ram_limit=limit, **opts)
    mem = bundle.manifest["memory"]
    assert mem["mutable"] + mem["activations"] <= limit
    assert "_patched" in (bundle.path / f"{bundle.name}.c").read_text()
    x = {"x": np.random.default_rng(2).integers(-128, 128, SHAPE).astype(np.int8)}
    got = mcu.run_firmware(bundle.path, "cortex-m4", x, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, host.run(x)["y"])
