"""ember opens models with onnxruntime for `ember validate` and `ember deploy --validate`: a model stamped with
an IR version newer than the installed onnxruntime reads (onnx writes its newest) still opens, restamped with
the lowest IR version its opsets need; any other load error still reaches the user."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ember.reference import onnxruntime_session


def _relu_model(ir_version: int) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ir_version
    return model


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_newer_ir_version_than_onnxruntime_reads_is_restamped(tmp_path: Path, as_bytes: bool) -> None:
    model = _relu_model(ir_version=999)
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    sess = onnxruntime_session(model.SerializeToString() if as_bytes else str(path))
    (y,) = sess.run(None, {"x": np.array([-1, 0, 2, -3], np.float32)})
    np.testing.assert_array_equal(y, [0, 0, 2, 0])


def test_other_load_errors_still_raise(tmp_path: Path) -> None:
    model = _relu_model(ir_version=8)
    model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(Exception, match="NoSuchOp"):
        onnxruntime_session(model.SerializeToString())
