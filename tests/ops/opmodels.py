"""Small ONNX models of a few nodes for operator tests: built from numpy inputs, compiled by ember and run in
the C driver under ASan+UBSan, and the ONNX reference implementation's outputs for them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

import ember
from tests.support import cdriver


def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray], outputs: dict[str, np.dtype],
               opset: int = 28) -> onnx.ModelProto:
    def info(name: str, dt: np.dtype, shape: list[int] | None) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape)

    g = helper.make_graph(nodes, "g", [info(k, v.dtype, list(v.shape)) for k, v in inputs.items()],
                          [info(k, dt, None) for k, dt in outputs.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def sanitized_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp_path: Path) -> dict[str, np.ndarray]:
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=1)
    return cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = [o.name for o in model.graph.output]
    with np.errstate(all="ignore"):
        return dict(zip(names, ReferenceEvaluator(model).run(None, feeds), strict=True))
