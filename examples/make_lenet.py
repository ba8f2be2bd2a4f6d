"""Write a LeNet-5 ONNX model (28x28 grayscale -> 10 classes) with seeded random weights.

Usage: python examples/make_lenet.py [OUT.onnx]   (default: examples/lenet.onnx)
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def lenet(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name)

    inits = [w("c1_w", 6, 1, 5, 5), w("c1_b", 6), w("c2_w", 16, 6, 5, 5), w("c2_b", 16),
             w("f1_w", 120, 400), w("f1_b", 120), w("f2_w", 84, 120), w("f2_b", 84), w("f3_w", 10, 84), w("f3_b", 10)]
    nodes = [
        helper.make_node("Conv", ["data", "c1_w", "c1_b"], ["c1"], pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2_w", "c2_b"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["flat"]),
        helper.make_node("Gemm", ["flat", "f1_w", "f1_b"], ["f1"], transB=1),
        helper.make_node("Relu", ["f1"], ["r3"]),
        helper.make_node("Gemm", ["r3", "f2_w", "f2_b"], ["f2"], transB=1),
        helper.make_node("Relu", ["f2"], ["r4"]),
        helper.make_node("Gemm", ["r4", "f3_w", "f3_b"], ["f3"], transB=1),
        helper.make_node("Softmax", ["f3"], ["prob"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "lenet", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ember-example")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/lenet.onnx"
    onnx.save(lenet(), out)
    print(f"wrote {out}")
