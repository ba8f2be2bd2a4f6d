"""In-place normalization kernels: the planner puts Y over X when X dies at the node (and only then), and the
bundle's outputs still match onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ir.graph import Graph, Value
from ember.memory.plan import MemoryPlan, Region
from ember.memory.planner import inlined_constants, plan_memory
from tests.support import cdriver
from tests.support.models import assert_outputs_match, onnxruntime_outputs

C, HW = 8, 24


def _model(tmp: Path, keep_alive: bool) -> Path:
    """x -> Relu -> LayerNorm -> InstanceNorm -> BatchNorm -> GroupNorm -> Neg -> y; with `keep_alive` each
    norm's input is also read by a final Sum, so none may be overwritten."""
    rng = np.random.default_rng(0)

    def t(name: str, *shape: int, lo: float = -1.0) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.uniform(lo, 1.0, shape).astype(np.float32), name)

    inits = [t("ln_s", HW), t("ln_b", HW), t("in_s", C), t("in_b", C), t("bn_s", C), t("bn_b", C), t("bn_m", C),
             t("bn_v", C, lo=0.5), t("gn_s", C), t("gn_b", C)]
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("LayerNormalization", ["a", "ln_s", "ln_b"], ["b"], axis=-1),
        helper.make_node("InstanceNormalization", ["b", "in_s", "in_b"], ["c"]),
        helper.make_node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], ["d"]),
        helper.make_node("GroupNormalization", ["d", "gn_s", "gn_b"], ["e"], num_groups=2),
        helper.make_node("Neg", ["e"], ["f"] if keep_alive else ["y"]),
    ]
    if keep_alive:
        nodes.append(helper.make_node("Sum", ["a", "b", "c", "d", "f"], ["y"]))
    g = helper.make_graph(nodes, "norms", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, C, HW])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, C, HW])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    path = tmp / ("alive.onnx" if keep_alive else "chain.onnx")
    onnx.save(m, path)
    return path


def _plan(path: Path) -> tuple[Graph, MemoryPlan]:
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    return graph, plan_memory(graph, inlined_constants(graph))


def _norm_io(graph: Graph) -> list[tuple[str, Value, Value]]:
    return [(n.op, n.inputs[0], n.outputs[0]) for n in graph.nodes if n.op.endswith("Normalization")]


def test_norms_write_over_their_dying_input(tmp_path: Path) -> None:
    graph, plan = _plan(_model(tmp_path, keep_alive=False))
    norms = _norm_io(graph)
    assert {op for op, _, _ in norms} == {"LayerNormalization", "InstanceNormalization", "BatchNormalization",
                                          "GroupNormalization"}
    for op, x, y in norms:
        if plan.where(y)[0] is Region.ACTIVATIONS:
            assert plan.where(y) == plan.where(x), op
    # One activation buffer for the whole chain.
    assert plan.activations_size == 2 * C * HW * 4


def test_norms_keep_an_input_that_is_read_later(tmp_path: Path) -> None:
    graph, plan = _plan(_model(tmp_path, keep_alive=True))
    for op, x, y in _norm_io(graph):
        assert plan.where(y) != plan.where(x), op


def test_in_place_norms_match_onnxruntime(tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((2, C, HW)).astype(np.float32)
    for keep_alive in (False, True):
        path = _model(tmp_path, keep_alive)
        bundle = ember.compile(path, tmp_path / f"out{int(keep_alive)}", opt_level=1)
        got = cdriver.run(bundle.path, tmp_path / f"drv{int(keep_alive)}", {"x": x}, sanitize=True)
        assert_outputs_match(got, onnxruntime_outputs(path, {"x": x}), rtol=1e-4)
