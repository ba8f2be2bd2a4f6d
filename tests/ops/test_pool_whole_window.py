"""AveragePool whose one window covers the whole unpadded input (how TFLite writes a global average pool):
lowered to the global pool kernel, with onnxruntime's results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from tests.support.models import assert_close, onnxruntime_outputs


def _avgpool(path: Path, shape: list[int], kernel: list[int], **attrs) -> Path:
    g = helper.make_graph([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=kernel, **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(("shape", "kernel", "attrs", "global_kernel"), [
    ([1, 16, 25, 5], [25, 5], {}, True),            # the keyword spotter's pool: 125 values per plane
    ([2, 3, 7, 7], [7, 7], {"strides": [2, 2]}, True),  # one window whatever the stride
    ([1, 4, 6, 6], [6, 6], {"pads": [1, 1, 1, 1]}, False),  # padded: windows past the edge, not global
    ([1, 4, 6, 6], [5, 5], {}, False),
])
def test_whole_window_average_pool(tmp_path: Path, shape: list[int], kernel: list[int], attrs: dict,
                                   global_kernel: bool) -> None:
    path = _avgpool(tmp_path / "p.onnx", shape, kernel, **attrs)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    bundle = ember.compile(path, tmp_path / "out", name="p")
    source = (tmp_path / "out" / "p.c").read_text()
    assert ("ember_global_pool_f32(" in source) == global_kernel
    assert_close(bundle.run({"x": x})["y"], onnxruntime_outputs(path, {"x": x})["y"], "AveragePool")
