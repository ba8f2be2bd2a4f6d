"""passes/gemv_panels.py: which Gemms become GemvPanels, and the panel layout of their weights."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.graph import Graph
from ember.passes.gemv_panels import gemv_panels, pack


def _gemm(rows: int = 1, bias: tuple[int, ...] | None = (5,), **attrs: float) -> Graph:
    """x [rows, 3] times a constant B^T [5, 3] (transB: the loader's normalize transposes it once)."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((5, 3)).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias is not None:
        inits.append(numpy_helper.from_array(rng.standard_normal(bias).astype(np.float32), "c"))
        ins.append("c")
    graph = helper.make_graph([helper.make_node("Gemm", ins, ["y"], transB=1, **attrs)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")


def test_pack_puts_columns_in_zero_padded_panels() -> None:
    b = np.arange(15, dtype=np.float32).reshape(3, 5)  # K 3, N 5
    p = pack(b, 4)
    assert p.shape == (2, 3, 4)
    assert p[0].tolist() == b[:, :4].tolist() and p[1, :, 0].tolist() == b[:, 4].tolist()
    assert not p[1, :, 1:].any()


@pytest.mark.parametrize(("kw", "rewritten"), [
    ({}, True), ({"bias": None}, True), ({"bias": (1, 5)}, True),
    ({"rows": 2}, False),          # two rows: the matmul
    ({"bias": (1, 1)}, False),     # a broadcast scalar bias
    ({"alpha": 2.0}, False), ({"beta": 0.5}, False),
])
def test_one_row_gemms_with_constant_weights_become_gemv_panels(kw: dict, rewritten: bool) -> None:
    g = _gemm(**kw)
    gemv_panels(g, 4)
    node = g.nodes[0]
    assert (node.op == "GemvPanels") == rewritten
    if rewritten:
        assert node.attrs["n"] == 5 and node.inputs[1].shape == (2, 3, 4)
