"""passes/fuse_residual.py: which residual Adds go into the convolution before them (graph structure only;
the numerics are tests/ops/test_conv_residual.py's)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.ops.conv import RESIDUAL
from ember.ops.epilogue import epilogue_of
from ember.passes.fold_constants import fold_constants
from ember.passes.fuse_activation import fuse_activation
from ember.passes.fuse_residual import fuse_residual

F = TensorProto.FLOAT
RNG = np.random.default_rng(3)


def _conv(name: str, x: str, y: str, c: int, m: int, inits: list, k: int = 1, stride: int = 1,
          group: int = 1) -> onnx.NodeProto:
    inits.append(numpy_helper.from_array(RNG.standard_normal((m, c // group, k, k)).astype(np.float32), f"{name}_w"))
    return helper.make_node("Conv", [x, f"{name}_w"], [y], kernel_shape=[k, k], strides=[stride, stride],
                            pads=[k // 2] * 4, group=group)


def _graph(nodes: list, inputs: dict[str, list[int]], inits: list, outputs: tuple[str, ...] = ("y",)) -> Graph:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs], inits)
    graph = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), LoadOptions(),
                      "net")
    fold_constants(graph)
    fuse_activation(graph)
    fuse_residual(graph)
    return graph


def _ops(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def test_add_and_relu_go_into_the_conv() -> None:
    inits: list = []
    graph = _graph([_conv("c", "x", "c", 8, 8, inits, k=3), helper.make_node("Add", ["r", "c"], ["s"]),
                    helper.make_node("Relu", ["s"], ["y"])], {"x": [1, 8, 6, 6], "r": [1, 8, 6, 6]}, inits)
    assert _ops(graph) == ["Conv"]
    conv = graph.nodes[0]
    residual = conv.input(RESIDUAL)
    assert residual is not None and residual.name == "r" and conv.input(2) is None
    assert epilogue_of(conv) is not None and epilogue_of(conv).kind == "Relu"
    assert conv.outputs[0] is graph.outputs[0]


def test_downsampling_shortcut_fuses_the_conv_with_the_smaller_input() -> None:
    inits: list = []
    nodes = [_conv("body", "h", "b", 4, 16, inits, k=3), _conv("short", "x", "s", 8, 16, inits, stride=2),
             helper.make_node("Add", ["b", "s"], ["y"])]
    graph = _graph(nodes, {"h": [1, 4, 5, 5], "x": [1, 8, 10, 10]}, inits)
    assert _ops(graph) == ["Conv", "Conv"]
    fused = [n for n in graph.nodes if n.input(RESIDUAL) is not None]
    assert len(fused) == 1 and fused[0].input(0).name == "h"  # 4 x 25 floats of input against 8 x 100
    assert graph.nodes[-1] is fused[0]  # at the Add's place, after the shortcut's producer


def test_left_alone() -> None:
    inits: list = []
    shapes = {"x": [1, 8, 6, 6], "r": [1, 8, 6, 6], "row": [1, 8, 1, 1], "d": [1, 8, 6, 6]}
    nodes = [
        # An activation before the Add: Relu(conv) + r is another function.
        _conv("a", "x", "a", 8, 8, inits), helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("Add", ["ar", "r"], ["y1"]),
        # A shortcut that broadcasts.
        _conv("b", "x", "b", 8, 8, inits), helper.make_node("Add", ["b", "row"], ["y2"]),
        # The conv's output read twice.
        _conv("c", "x", "c", 8, 8, inits), helper.make_node("Add", ["c", "r"], ["y3"]),
        helper.make_node("Mul", ["c", "r"], ["y4"]),
        # A projection after a depthwise conv: the inverted-residual block's.
        _conv("dw", "d", "dw", 8, 8, inits, k=3, group=8), _conv("p", "dw", "p", 8, 8, inits),
        helper.make_node("Add", ["p", "r"], ["y5"]),
    ]
    graph = _graph(nodes, shapes, inits, outputs=("y1", "y2", "y3", "y4", "y5"))
    assert _ops(graph).count("Add") == 4
    assert all(n.input(RESIDUAL) is None for n in graph.nodes if n.op == "Conv")
