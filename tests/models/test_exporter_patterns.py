"""Graph shapes that tf2onnx and PaddlePaddle exporters produce, built with onnx.helper.

tf2onnx keeps TensorFlow's NHWC layout at the edges (Transpose around every Conv block) and
spells flatten as Shape -> Slice -> Concat -> Reshape; Paddle2ONNX emits opset-11 Resize with
scales, Clip with min/max inputs and Reshape with a 0 (copy) dimension. Both must fold to static
shapes and match onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support.models import assert_close, onnxruntime_outputs


def _c(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(arr, name)


def _tf2onnx_style(opset: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        _c("w", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
        _c("b", rng.standard_normal(8).astype(np.float32)),
        _c("fc", (rng.standard_normal((8 * 4 * 4, 6)) * 0.1).astype(np.float32)),
        _c("start", np.array([0], np.int64)), _c("end", np.array([1], np.int64)),
        _c("minus1", np.array([-1], np.int64)),
    ]
    nodes = [
        helper.make_node("Transpose", ["images"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "w", "b"], ["conv"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("Transpose", ["relu"], ["nhwc"], perm=[0, 2, 3, 1]),
        helper.make_node("Shape", ["nhwc"], ["shape"]),
        helper.make_node("Slice", ["shape", "start", "end"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus1"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["nhwc", "flat_shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1 if opset >= 13 else 1),
    ]
    g = helper.make_graph(nodes, "tf2onnx", [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                           ["unk__0", 8, 8, 3])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["unk__1", 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tf2onnx")
    m.ir_version = 7
    return m


def _paddle_style() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    inits = [
        _c("w", (rng.standard_normal((4, 4, 1, 1)) * 0.5).astype(np.float32)),
        _c("roi", np.array([], np.float32)), _c("scales", np.array([1, 1, 2, 2], np.float32)),
        _c("lo", np.array(0.0, np.float32)), _c("hi", np.array(6.0, np.float32)),
        _c("shape", np.array([0, 4, -1], np.int64)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Clip", ["c", "lo", "hi"], ["r6"]),
        helper.make_node("Resize", ["r6", "roi", "scales"], ["up"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Reshape", ["up", "shape"], ["y"]),
    ]
    g = helper.make_graph(nodes, "paddle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 4, 5, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4, 100])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)], producer_name="PaddlePaddle")
    m.ir_version = 6
    return m


def _check(model: onnx.ModelProto, tmp: Path, name: str, shape: str, feed: np.ndarray) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"{model.graph.name}.onnx"
    onnx.save(model, path)
    bundle = ember.compile(path, tmp / "b", inputs={name: shape})
    out = model.graph.output[0].name
    assert_close(bundle.run({name: feed})[out], onnxruntime_outputs(path, {name: feed})[out], model.graph.name)


def test_tf2onnx_nhwc_graph(tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((2, 8, 8, 3)).astype(np.float32)
    for opset in (11, 13, 15):
        _check(_tf2onnx_style(opset), tmp_path / str(opset), "images", "float32:2x8x8x3", x)


def test_paddle_style_graph(tmp_path: Path) -> None:
    x = np.random.default_rng(3).standard_normal((1, 4, 5, 5)).astype(np.float32) * 4
    _check(_paddle_style(), tmp_path, "x", "float32:1x4x5x5", x)
