"""passes/int4_matmul.py: which DequantizeLinear(int4) -> MatMul patterns become MatMulInt4, and the packing."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.ops import registry
from ember.ops.matmul import pack_nibbles, unpack_nibbles
from ember.passes.fold_constants import fold_constants
from ember.passes.int4_matmul import pack_int4_matmuls

RNG = np.random.default_rng(3)


def _graph(k: int, n: int, attrs: dict, s_shape: tuple[int, ...], second_reader: bool = False) -> Graph:
    q = helper.make_tensor("q", TensorProto.INT4, (k, n), RNG.integers(-8, 8, k * n).tolist())
    s = numpy_helper.from_array((RNG.random(s_shape) * 0.1 + 0.01).astype(np.float32), "s")
    nodes = [helper.make_node("DequantizeLinear", ["q", "s"], ["w"], **attrs),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if second_reader:  # the float weight is also a graph output: it must still be computed
        nodes.append(helper.make_node("Identity", ["w"], ["w_out"]))
        outs.append(helper.make_tensor_value_info("w_out", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])], outs, [q, s])
    graph = load_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), LoadOptions(), "net")
    fold_constants(graph)
    pack_int4_matmuls(graph)
    return graph


@pytest.mark.parametrize(("attrs", "s_shape", "packed"), [
    ({"axis": 0, "block_size": 16}, (4, 8), True),  # blocked along K
    ({"axis": 1}, (8,), True),  # per output column
    ({}, (), True),  # per tensor
    ({"axis": 1, "block_size": 4}, (64, 2), False),  # blocked along N: not a K-block layout
    ({"axis": 0}, (64,), False),  # per row of W (per K): not per output column
    ({"axis": 0, "block_size": 5}, (13, 8), False),  # odd blocks cannot start on a byte
])
def test_which_layouts_are_packed(attrs: dict, s_shape: tuple[int, ...], packed: bool) -> None:
    graph = _graph(64, 8, attrs, s_shape)
    ops = [nd.op for nd in graph.nodes]
    assert ("MatMulInt4" in ops) is packed and ("MatMul" in ops) is not packed
    if packed:  # the packed node computes what the DequantizeLinear -> MatMul did
        node = next(nd for nd in graph.nodes if nd.op == "MatMulInt4")
        dq = next(nd for nd in graph.nodes if nd.op == "DequantizeLinear")
        w = np.asarray(dq.inputs[0].const).astype(np.float32)
        scale = np.asarray(dq.inputs[1].const, np.float32)
        ref = w * (np.repeat(scale, 16, axis=0) if attrs.get("block_size") else scale)
        x = RNG.standard_normal((2, 64)).astype(np.float32)
        ins = [x, *(v.const if v is not None else None for v in node.inputs[1:])]
        got = registry.get("MatMulInt4").evaluate(node, ins)[0]  # type: ignore[misc]
        np.testing.assert_allclose(got, x @ ref, rtol=1e-5, atol=1e-5)


def test_a_weight_read_elsewhere_keeps_its_dequantize() -> None:
    graph = _graph(32, 8, {"axis": 1}, (8,), second_reader=True)
    assert sorted(nd.op for nd in graph.nodes) == ["DequantizeLinear", "Identity", "MatMulInt4"]


def test_nibble_order_is_onnx_low_first() -> None:
    codes = np.array([[1, 2, 3, 4, 5]], np.uint8)
    packed = pack_nibbles(codes)
    assert packed.tolist() == [[0x21, 0x43, 0x05]]
    assert unpack_nibbles(packed, 5).tolist() == codes.tolist()
    # ONNX's own packing of a uint4 tensor (TensorProto.int32_data holds one packed byte per entry): the same.
    assert list(helper.make_tensor("t", TensorProto.UINT4, (5,), [1, 2, 3, 4, 5]).int32_data) == packed[0].tolist()
