"""Older-opset forms the ONNX frontend rewrites into the IR's canonical ones (ember/frontends/onnx/ops.py):
each compiled bundle must give what onnxruntime gives for the model at its own opset (ONNX's reference
where onnxruntime has no kernel for that opset; the reference's Softmax knows only the opset-13 meaning)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.reference import onnxruntime_session

F = TensorProto.FLOAT
X = np.random.default_rng(7).standard_normal((2, 3, 4, 4)).astype(np.float32)

# name: (opset, nodes reading x [2, 3, 4, 4] and writing y, extra inputs {name: array})
CASES = {
    "clip_attrs": (6, [helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.25)], {}),
    "pad_attrs": (2, [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 0, 0, 0, 2, 1], value=1.5)], {}),
    "pad_reflect_attrs": (2, [helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 2, 1], mode="reflect")],
                          {}),
    "slice_attrs": (9, [helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[3, 100], axes=[1, 3])], {}),
    "squeeze_unsqueeze_attrs": (11, [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]),
                                     helper.make_node("Squeeze", ["u"], ["y"], axes=[0])], {}),
    "reduce_axes_attr": (13, [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1, -1], keepdims=0)], {}),
    "reducesum_axes_attr": (11, [helper.make_node("ReduceSum", ["x"], ["y"], axes=[2])], {}),
    "split_attr": (11, [helper.make_node("Split", ["x"], ["y", "z"], axis=1, split=[1, 2])], {}),
    "split_equal": (11, [helper.make_node("Split", ["x"], ["y", "z"], axis=2)], {}),
    "split_num_outputs": (18, [helper.make_node("Split", ["x"], ["y", "z"], axis=1, num_outputs=2)], {}),
    "softmax_coerced_2d": (11, [helper.make_node("Softmax", ["x"], ["y"], axis=1)], {}),
    "logsoftmax_default_axis": (9, [helper.make_node("LogSoftmax", ["x"], ["y"])], {}),
    "dropout_ratio_attr": (10, [helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)], {}),
    "reshape_shape_attr": (4, [helper.make_node("Reshape", ["x"], ["y"], shape=[6, -1])], {}),
    "concat_default_axis": (1, [helper.make_node("Concat", ["x", "x"], ["y"])], {}),
    "legacy_broadcast_axis": (6, [helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=1)],
                              {"b": np.arange(3, dtype=np.float32)}),
    "legacy_broadcast_tail": (6, [helper.make_node("Mul", ["x", "b"], ["y"], broadcast=1)],
                              {"b": np.arange(4, dtype=np.float32)}),
    "upsample_scales_input": (9, [helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")],
                              {"s": np.array([1, 1, 2, 1.5], np.float32)}),
    "resize_v10": (10, [helper.make_node("Resize", ["x", "s"], ["y"], mode="linear")],
                   {"s": np.array([1, 1, 2, 2], np.float32)}),
    "cast_to_name": (5, [helper.make_node("Cast", ["x"], ["y"], to="INT32")], {}),
    "clip_default_bounds": (6, [helper.make_node("Clip", ["x"], ["y"], max=0.5)], {}),
    "batchnorm_v9": (9, [helper.make_node("BatchNormalization", ["x", "sc", "bi", "me", "va"], ["y"])],
                     {"sc": np.ones(3, np.float32) * 2, "bi": np.arange(3, dtype=np.float32),
                      "me": np.full(3, 0.5, np.float32), "va": np.full(3, 4.0, np.float32)}),
}

# Forms neither onnxruntime nor ONNX's reference runs any more (opsets 1-6): their meaning by hand.
MANUAL = {
    "concat_default_axis": lambda: [np.concatenate([X, X], axis=1)],
    "legacy_broadcast_axis": lambda: [X + np.arange(3, dtype=np.float32).reshape(3, 1, 1)],
    "legacy_broadcast_tail": lambda: [X * np.arange(4, dtype=np.float32)],
    "cast_to_name": lambda: [X.astype(np.int32)],
}


def _model(opset: int, nodes: list[onnx.NodeProto], extra: dict[str, np.ndarray]) -> onnx.ModelProto:
    out_type = TensorProto.INT32 if nodes[-1].op_type == "Cast" else F
    outs = [o for n in nodes for o in n.output if o in ("y", "z")]
    inits = [onnx.numpy_helper.from_array(a, k) for k, a in extra.items()]
    inputs = [helper.make_tensor_value_info("x", F, list(X.shape))]
    if opset < 8:  # IR version 3 lists every initializer among the graph inputs
        inputs += [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, out_type, None) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 3 if opset < 8 else 7
    return m


def _reference(model: onnx.ModelProto) -> list[np.ndarray]:

    try:
        sess = onnxruntime_session(model.SerializeToString())
    except Exception:  # no kernel for this opset in onnxruntime
        return ReferenceEvaluator(model).run(None, {"x": X})
    return sess.run(None, {"x": X})


@pytest.mark.parametrize("case", list(CASES))
def test_old_opset_form_matches_reference(case: str, tmp_path: Path) -> None:
    opset, nodes, extra = CASES[case]
    model = _model(opset, nodes, extra)
    expected = MANUAL[case]() if case in MANUAL else _reference(model)
    onnx.save(model, tmp_path / "m.onnx")
    got = ember.compile(tmp_path / "m.onnx", tmp_path / "out", opt_level=1).run({"x": X})
    for name, ref in zip([o.name for o in model.graph.output], expected, strict=True):
        assert got[name].shape == ref.shape, f"{name}: {got[name].shape} != {ref.shape}"
        assert got[name].dtype == ref.dtype
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-6)
