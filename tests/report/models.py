"""The report tests' model: a residual block (a branch and a join, so the layout has two columns), with a
node named like markup so escaping is exercised, compiled once per test module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tests.cli.helpers import save_model

NASTY = 'conv<b>&"2'


def residual_model(path: Path) -> Path:
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.2, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name=NASTY, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["r1", "w3"], ["c3"], name="conv3", strides=[1, 1]),
        helper.make_node("Add", ["c2", "c3"], ["s"], name="join"),
        helper.make_node("MaxPool", ["s"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    return save_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 12, 12])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
                      [w("w1", 8, 4, 3, 3), w("w2", 8, 8, 3, 3), w("w3", 8, 8, 1, 1)])


def compiled(folder: Path) -> tuple[Path, Path, dict[str, Any]]:
    """(model, bundle folder, NAME.json) of the residual model compiled in-process."""
    from ember.api import write_bundle
    from ember.config import CompileOptions

    model = residual_model(folder / "res.onnx")
    manifest = write_bundle(str(model), folder / "res", CompileOptions())
    assert json.loads((folder / "res" / "res.json").read_text()) == manifest
    return model, folder / "res", manifest


def bench_doc(manifest: dict[str, Any]) -> dict[str, Any]:
    """An `ember bench --json` document for the bundle (times made up: the report only draws them)."""
    prof = [{"index": i, "name": n["name"], "op": n["op"], "ms": 0.01 * (i + 1)} for i, n in
            enumerate(manifest["nodes"])]
    return {"name": manifest["name"], "rounds": 10, "warmup": 1, "min_ms": 0.1, "median_ms": 0.12, "p90_ms": 0.2,
            "flops": manifest["flops"], "memory": manifest["memory"], "footprint": manifest["footprint"],
            "profile": prof}


VALIDATION = {"ok": True, "outputs": [{"output": "y", "max_abs_error": 2e-7, "relative_error": 1e-7,
                                       "cosine": 1.0, "top1_agree": True, "pass": True}]}
