"""A small hand-built CNN (every op family the quantizer treats differently) and calibration data for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 3, 12, 12)


def build_cnn(path: Path, seed: int = 0) -> Path:
    """Conv+BN+Relu -> MaxPool -> depthwise Conv -> 1x1 Conv+Relu (+ residual Add) -> GAP -> Gemm -> Softmax."""
    rng = np.random.default_rng(seed)

    def w(name: str, *shape: int, scale: float = 0.4) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        w("w1", 8, 3, 3, 3), w("b1", 8, scale=0.1),
        numpy_helper.from_array((rng.random(8) + 0.5).astype(np.float32), "bn_s"), w("bn_b", 8, scale=0.1),
        w("bn_m", 8, scale=0.1), numpy_helper.from_array((rng.random(8) + 0.5).astype(np.float32), "bn_v"),
        w("w2", 8, 1, 3, 3), w("b2", 8, scale=0.1), w("w3", 8, 8, 1, 1), w("b3", 8, scale=0.1),
        w("wf", 10, 8), w("bf", 10, scale=0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Add", ["r3", "p1"], ["sum"]),
        helper.make_node("GlobalAveragePool", ["sum"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, INPUT_SHAPE)],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def calibration_data(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, *INPUT_SHAPE[1:])).astype(np.float32)


@pytest.fixture(scope="session")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cnn(tmp_path_factory.mktemp("cnn") / "cnn.onnx")


@pytest.fixture(scope="session")
def cnn_profile(cnn: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CNN's profile over 24 samples given as one stacked .npy file."""
    from ember.runtime.profile import profile_model

    folder = tmp_path_factory.mktemp("cnn_profile")
    np.save(folder / "calib.npy", calibration_data(24))
    profile_model(str(cnn), [str(folder / "calib.npy")], folder / "profile.yaml")
    return folder / "profile.yaml"
