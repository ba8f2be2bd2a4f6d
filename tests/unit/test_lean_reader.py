"""lean.py reads a model with its initializers' bytes left in the file: the proto must be the one onnx.load
gives minus raw_data, and every initializer's array the one numpy_helper gives, whatever the storage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.lean import NotLean, read_lean


def _model(tmp_path: Path, external: bool = False) -> Path:
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(rng.standard_normal((64, 300)).astype(np.float32), "w"),  # raw_data, 2-byte len
        numpy_helper.from_array(np.arange(5, dtype=np.int64), "idx"),
        helper.make_tensor("typed", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]),  # float_data, no raw_data
        helper.make_tensor("half", TensorProto.FLOAT16, [2], np.array([1.5, -2], np.float16).view(np.uint16)),
        numpy_helper.from_array(np.zeros((0, 4), np.float32), "empty"),
    ]
    node = helper.make_node("Add", ["x", "x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="t" * 200)
    path = tmp_path / "m.onnx"
    if external:
        onnx.save(m, path, save_as_external_data=True, location="m.data", size_threshold=64)
    else:
        onnx.save(m, path)
    return path


@pytest.mark.parametrize("external", [False, True])
def test_lean_model_equals_onnx_load(tmp_path: Path, external: bool) -> None:
    path = _model(tmp_path, external)
    lean = read_lean(str(path))
    full = onnx.load(str(path), load_external_data=False)
    stripped = onnx.ModelProto()
    stripped.CopyFrom(full)
    for t in stripped.graph.initializer:
        t.ClearField("raw_data")
    assert lean.model.SerializeToString() == stripped.SerializeToString()
    for i, t in enumerate(full.graph.initializer):
        if i in lean.raw_spans:
            got, want = lean.initializer_array(i), numpy_helper.to_array(t)
            assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
        else:  # typed fields stay in the proto; external tensors keep their location (the loader reads them)
            assert not t.HasField("raw_data")
    expected = {4} if external else {0, 1, 4}  # the external form keeps only the empty tensor inline
    assert set(lean.raw_spans) == expected


def test_truncated_file_is_not_lean(tmp_path: Path) -> None:
    path = _model(tmp_path)
    data = path.read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(NotLean):
        read_lean(str(cut))
