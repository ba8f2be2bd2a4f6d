"""fold_batchnorm and fuse_activation: graph structure after the passes, and numerics vs onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.ops.epilogue import Epilogue
from ember.passes.fold_batchnorm import fold_batchnorm
from ember.passes.fold_constants import fold_constants
from ember.passes.fuse_activation import fuse_activation
from ember.reference import onnxruntime_session

RNG = np.random.default_rng(7)
F = TensorProto.FLOAT


def _w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _bn(name: str, x: str, y: str, c: int, inits: list) -> onnx.NodeProto:
    inits += [numpy_helper.from_array(_w(c), f"{name}_s"), numpy_helper.from_array(_w(c), f"{name}_b"),
              numpy_helper.from_array(_w(c), f"{name}_m"),
              numpy_helper.from_array(RNG.uniform(0.5, 2.0, c).astype(np.float32), f"{name}_v")]
    return helper.make_node("BatchNormalization", [x, f"{name}_s", f"{name}_b", f"{name}_m", f"{name}_v"], [y],
                            epsilon=1e-3)


def _model(nodes, inputs, inits, opset: int = 17, outputs=("y",)) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(o, F, None) for o in outputs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _optimized(model: onnx.ModelProto) -> Graph:
    graph = load_onnx(model, LoadOptions(), "net")
    fold_constants(graph)
    fold_batchnorm(graph)
    fuse_activation(graph)
    return graph


def _check_numerics(model: onnx.ModelProto, tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    feeds = {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    ref = onnxruntime_session(str(path)).run(None, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    for o, r in zip(model.graph.output, ref, strict=True):
        np.testing.assert_allclose(got[o.name], r, rtol=1e-4, atol=1e-4)


def test_conv_bn_relu_becomes_one_conv(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(8, 3, 3, 3), "w"), numpy_helper.from_array(_w(8), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             _bn("bn", "c", "n", 8, inits), helper.make_node("Relu", ["n"], ["y"])]
    model = _model(nodes, [("x", [2, 3, 9, 9])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"Conv": 1}
    conv = g.nodes[0]
    assert conv.attrs["_act"] == Epilogue("Relu") and conv.outputs[0].name == "y"
    _check_numerics(model, tmp_path)


def test_conv_without_bias_bn_mul_add_leakyrelu(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(6, 4, 3, 3), "w"), numpy_helper.from_array(_w(6, 1, 1), "mul"),
             numpy_helper.from_array(_w(1, 6, 1, 1), "add")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER"), _bn("bn", "c", "n", 6, inits),
             helper.make_node("Mul", ["n", "mul"], ["m"]), helper.make_node("Add", ["add", "m"], ["a"]),
             helper.make_node("LeakyRelu", ["a"], ["y"], alpha=0.2)]
    model = _model(nodes, [("x", [1, 4, 7, 7])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"Conv": 1}
    assert g.nodes[0].attrs["_act"].kind == "LeakyRelu" and g.nodes[0].attrs["_act"].alpha == pytest.approx(0.2)
    _check_numerics(model, tmp_path)


def test_depthwise_bn_clip6(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(8, 1, 3, 3), "w"), numpy_helper.from_array(np.float32(0.0), "lo"),
             numpy_helper.from_array(np.float32(6.0), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], group=8, pads=[1, 1, 1, 1]),
             _bn("bn", "c", "n", 8, inits), helper.make_node("Clip", ["n", "lo", "hi"], ["y"])]
    model = _model(nodes, [("x", [1, 8, 6, 6])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"Conv": 1}
    assert g.nodes[0].attrs["_act"] == Epilogue("Clip", 0.0, 6.0)
    _check_numerics(model, tmp_path)


@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_bias_bn_sigmoid(tmp_path, monkeypatch, trans_b: int) -> None:
    inits = [numpy_helper.from_array(_w(5, 7) if trans_b else _w(7, 5), "w"), numpy_helper.from_array(_w(5), "c")]
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["g"], transB=trans_b, alpha=0.5, beta=2.0),
             _bn("bn", "g", "n", 5, inits), helper.make_node("Sigmoid", ["n"], ["y"])]
    model = _model(nodes, [("x", [3, 7])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"Gemm": 1}
    assert g.nodes[0].attrs["_act"] == Epilogue("Sigmoid")
    _check_numerics(model, tmp_path)


def test_matmul_bn_becomes_gemm_tanh(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(6, 4), "w")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["g"]), _bn("bn", "g", "n", 4, inits),
             helper.make_node("Tanh", ["n"], ["y"])]
    model = _model(nodes, [("x", [3, 6])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"Gemm": 1}
    _check_numerics(model, tmp_path)


def test_convtranspose_group_bn_hardsigmoid(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(4, 3, 3, 3), "w"), numpy_helper.from_array(_w(6), "b")]
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["c"], group=2, strides=[2, 2]),
             _bn("bn", "c", "n", 6, inits), helper.make_node("HardSigmoid", ["n"], ["y"])]
    model = _model(nodes, [("x", [1, 4, 5, 5])], inits)
    g = _optimized(model)
    assert g.op_counts() == {"ConvTranspose": 1}
    _check_numerics(model, tmp_path)


def test_batched_matmul_hardswish_elu(tmp_path) -> None:
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]), helper.make_node("HardSwish", ["m"], ["h"]),
             helper.make_node("MatMul", ["h", "w"], ["m2"]), helper.make_node("Elu", ["m2"], ["y"], alpha=0.7)]
    model = _model(nodes, [("a", [2, 3, 4, 5]), ("b", [3, 5, 6])], [numpy_helper.from_array(_w(6, 2), "w")])
    g = _optimized(model)
    assert g.op_counts() == {"MatMul": 2}
    assert [n.attrs["_act"].kind for n in g.nodes] == ["HardSwish", "Elu"]
    _check_numerics(model, tmp_path)


def test_shared_or_output_values_are_not_fused(tmp_path) -> None:
    inits = [numpy_helper.from_array(_w(4, 2, 1, 1), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), _bn("bn", "c", "n", 4, inits),
             helper.make_node("Relu", ["c"], ["r"]),  # c has two readers: BN cannot fold into the Conv
             helper.make_node("Relu", ["n"], ["y"])]   # n is a graph output: its Relu cannot fuse into BN
    model = _model(nodes, [("x", [1, 2, 3, 3])], inits, outputs=("y", "r", "n"))
    g = _optimized(model)
    assert g.op_counts() == {"BatchNormalization": 1, "Conv": 1, "Relu": 2}
    assert all("_act" not in n.attrs for n in g.nodes)
    _check_numerics(model, tmp_path)


def test_training_mode_bn_is_kept() -> None:
    inits: list = []
    inits.append(numpy_helper.from_array(_w(3, 3, 1, 1), "w"))
    bn = _bn("bn", "c", "y", 3, inits)
    bn.attribute.append(helper.make_attribute("training_mode", 1))
    bn.output.extend(["rm", "rv"])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), bn]
    g = _optimized(_model(nodes, [("x", [2, 3, 4, 4])], inits, opset=15, outputs=("y", "rm", "rv")))
    assert g.op_counts() == {"BatchNormalization": 1, "Conv": 1}


def test_float16_conv_relu_and_matmul(tmp_path) -> None:
    """float16 nodes compute in float32 (converted weights, run-time halves converted in scratch)."""
    h = TensorProto.FLOAT16
    inits = [numpy_helper.from_array(_w(4, 3, 3, 3).astype(np.float16), "w"),
             numpy_helper.from_array(_w(5, 2).astype(np.float16), "b")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"]),
             helper.make_node("MatMul", ["m", "b"], ["z"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", h, [1, 3, 5, 5]),
                                       helper.make_tensor_value_info("m", h, [2, 3, 5])],
                          [helper.make_tensor_value_info("y", h, None), helper.make_tensor_value_info("z", h, None)],
                          inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert _optimized(model).op_counts() == {"Conv": 1, "MatMul": 1}
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    feeds = {"x": _w(1, 3, 5, 5).astype(np.float16), "m": _w(2, 3, 5).astype(np.float16)}
    ref = onnxruntime_session(str(path)).run(None, feeds)
    got = ember.compile(path, tmp_path / "out").run(feeds)
    for name, r in zip(("y", "z"), ref, strict=True):
        assert got[name].dtype == np.float16
        np.testing.assert_allclose(got[name].astype(np.float32), r.astype(np.float32), rtol=2e-3, atol=2e-3)
