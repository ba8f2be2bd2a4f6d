"""passes/fuse_irblock.py: which inverted-residual blocks become one IRBlock node, and what it holds."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.ops.irblock import IR_ATTR, IRParams
from ember.passes.fold_constants import fold_constants
from ember.passes.fuse_activation import fuse_activation
from ember.passes.fuse_irblock import fuse_irblocks

RNG = np.random.default_rng(3)


def _graph(hw: int = 28, k: int = 3, stride: int = 1, cin: int = 8, cout: int = 8, expand: bool = True,
           se: bool = False, extra_reader: bool = False) -> Graph:
    """x -> [expand 1x1 + Relu] -> depthwise kxk + Relu -> [SE Mul] -> project 1x1 [-> Add x]."""
    inits, nodes, mid = [], [], cin * 4 if expand else cin

    def conv(x: str, ci: int, co: int, kk: int = 1, s: int = 1, group: int = 1) -> str:
        y = f"c{len(nodes)}"
        w = RNG.standard_normal((co, ci // group, kk, kk)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, y + "w"))
        nodes.append(helper.make_node("Conv", [x, y + "w"], [y], kernel_shape=[kk, kk], strides=[s, s],
                                      pads=[kk // 2] * 4, group=group))
        return y

    def relu(x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [x + "r"]))
        return x + "r"

    h = relu(conv("x", cin, mid)) if expand else "x"
    h = relu(conv(h, mid, mid, k, stride, group=mid))
    outs = []
    if se:
        nodes.append(helper.make_node("GlobalAveragePool", [h], ["pool"]))
        nodes.append(helper.make_node("Mul", [h, "pool"], ["scaled"]))
        h = "scaled"
    if extra_reader:
        outs.append(h)
    y = conv(h, mid, cout)
    if stride == 1 and cin == cout:
        nodes.append(helper.make_node("Add", ["x", y], ["sum"]))
        y = "sum"
    outs.append(y)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    g = load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")
    fold_constants(g)
    fuse_activation(g)
    fuse_irblocks(g, min_pixels=784)  # the size rule's value is the family's; here a fixed one
    return g


def test_block_with_residual_becomes_one_node() -> None:
    g = _graph()
    assert [n.op for n in g.nodes] == ["IRBlock"]
    node = g.nodes[0]
    params = node.attrs[IR_ATTR]
    assert isinstance(params, IRParams)
    assert params.expand_act is not None and params.dw_act is not None and params.project_act is None
    assert node.inputs[0] is node.inputs[7] is g.inputs[0]  # the residual is the block's input
    assert node.outputs[0] is g.outputs[0] and 1 <= params.band <= 28


def test_squeeze_excitation_block_fuses_expand_and_depthwise_only() -> None:
    """The SE's pool reads the whole depthwise output before the projection can start."""
    g = _graph(se=True)
    assert [n.op for n in g.nodes] == ["IRBlock", "GlobalAveragePool", "Mul", "Conv", "Add"]
    assert g.nodes[0].inputs[5] is None and g.nodes[0].outputs[0].shape == (1, 32, 28, 28)


def test_blocks_left_layer_by_layer() -> None:
    """Small planes (under the 784 pixels given here), 5x5 windows, stride 2, no expansion (expand ratio 1), and
    an intermediate that is a graph output stay as they were."""
    for g in (_graph(hw=14), _graph(k=5), _graph(stride=2, cout=16), _graph(expand=False)):
        assert "IRBlock" not in [n.op for n in g.nodes]
    g = _graph(extra_reader=True)  # the depthwise's output is also an output: expand + depthwise only
    assert [n.op for n in g.nodes] == ["IRBlock", "Conv", "Add"]
