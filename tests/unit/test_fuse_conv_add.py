"""passes/fuse_conv_add.py on microcontroller pipelines (the graph only; tests/cross/test_conv_add_mcu.py runs the
fused kernels): which convolution of a residual block takes the Add, and which Adds stay apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ember.cli import main
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ops.matmul import present
from ember.ops.qconv_add import QADD_ATTR
from tests.cross.test_conv_add_mcu import residual_model


def _int8_graph(model: onnx.ModelProto, tmp_path: Path, target_kind: str, shape: tuple[int, ...]):
    onnx.save(model, tmp_path / "m.onnx")
    np.save(tmp_path / "calib.npy", np.random.default_rng(3).normal(0, 1, (4, *shape[1:])).astype(np.float32))
    assert main(["profile", str(tmp_path / "m.onnx"), str(tmp_path / "calib.npy"), "-o", str(tmp_path / "p.yaml")]) == 0
    opts = CompileOptions(quantize="int8", profile=str(tmp_path / "p.yaml"), io="int8")
    graph, _, _ = build_graph(str(tmp_path / "m.onnx"), opts, target_kind=target_kind, check=True)
    return graph


def test_body_convolution_takes_the_add_on_mcu_only(tmp_path: Path) -> None:
    graph = _int8_graph(residual_model(), tmp_path, "mcu", (1, 3, 9, 11))
    fused = [n for n in graph.nodes if n.op == "QConvAdd"]
    # the identity block's second convolution (reading the first's output), and of the strided block's two
    # the body's (its input, b1r, is smaller than the 1x1 shortcut's), its residual the shortcut's output
    assert [present(n.input(0)).name for n in fused] == ["a1r_quantized", "b1r_quantized"]
    assert not any(n.op == "QAdd" for n in graph.nodes)
    short = fused[1].inputs[3]
    assert short is not None and short.producer is not None and short.producer.attrs["kernel_shape"] == [1, 1]
    assert fused[0].inputs[3] is not None and fused[0].inputs[3].name == "c0r_quantized"
    # operand b is the residual in both (the shortcut was the Add's first operand in the second: swapped)
    for n in fused:
        p, res = n.attrs[QADD_ATTR], n.inputs[3]
        assert res is not None and res.type.quant is not None
        assert p.zb == int(res.type.quant.zero_point[0]) != p.za, (p, res.type.quant)
    host = _int8_graph(residual_model(), tmp_path, "host", (1, 3, 9, 11))
    assert sum(n.op == "QAdd" for n in host.nodes) == 2 and not any(n.op == "QConvAdd" for n in host.nodes)


def test_add_of_the_convolutions_own_input_stays_apart(tmp_path: Path) -> None:
    """conv(h) + h: the convolution reads h around each pixel while it would write over it."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (4, 4, 3, 3)).astype(np.float32), w) for w in ("w0", "w1")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["h"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["hr"]),
             helper.make_node("Conv", ["hr", "w1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "hr"], ["y"])]
    graph = helper.make_graph(nodes, "self", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    g = _int8_graph(model, tmp_path, "mcu", (1, 4, 6, 6))
    assert any(n.op == "QAdd" for n in g.nodes) and not any(n.op == "QConvAdd" for n in g.nodes)
