"""Control flow compiled, not folded: If on a run-time condition, Loop, Scan; bundles against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph, load_graph
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.passes.manager import PassManager
from ember.passes.pipeline import build_pipeline
from ember.passes.verify import verify
from tests.support.models import assert_close, onnxruntime_outputs

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def _vi(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _save(tmp: Path, nodes, inputs, outputs, inits=(), opset: int = 17, name: str = "m") -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    p = tmp / f"{name}.onnx"
    onnx.save(m, p)
    return p


def _compare(path: Path, tmp: Path, feeds: dict[str, np.ndarray], **options) -> dict[str, np.ndarray]:
    """The bundle's outputs against onnxruntime's (which is fed the --const inputs too)."""
    bundle = ember.compile(path, tmp / f"b_{path.stem}", **options)
    got = bundle.run(feeds)
    frozen = {k: np.asarray(v, np.int64 if isinstance(v, int) else None) for k, v in options.get("consts", {}).items()}
    ref = onnxruntime_outputs(path, {**feeds, **frozen})
    for name, r in ref.items():
        assert_close(got[name], r, name, rel=1e-5)
    return got


def _branch(name: str, nodes, out: str, shape: list, elem: int = F) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [_vi(out, elem, shape)])


# ----------------------------------------------------------------------------- If
def _if_model(tmp: Path) -> Path:
    """y = If(c) { relu(x @ w) + bias } else { sigmoid(x) * x - 1 }: different ops, a branch constant, both
    branches reading the outer x (captured)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.float32(0.25), "bias")
    then_g = _branch("then", [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Relu", ["mm"], ["r"]),
                              helper.make_node("Add", ["r", "bias"], ["t"])], "t", [2, 4])
    one = numpy_helper.from_array(np.float32(1.0), "one")
    else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["sx"]),
                                helper.make_node("Sub", ["sx", "one"], ["e"])], "else", [], [_vi("e", F, [2, 4])],
                               [one])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="choose")]
    return _save(tmp, nodes, [_vi("x", F, [2, 4]), _vi("c", B, [])], [_vi("y", F, [2, 4])], [w, bias])


@pytest.mark.parametrize("cond", [True, False])
def test_if_on_a_runtime_condition_runs_the_branch_it_selects(tmp_path: Path, cond: bool) -> None:
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    _compare(_if_model(tmp_path), tmp_path, {"x": x, "c": np.array(cond)})


def test_if_keeps_both_branches_in_the_c_and_overlaps_their_memory(tmp_path: Path) -> None:
    path = _if_model(tmp_path)
    graph, _, _ = build_graph(str(path), CompileOptions(), check=True)
    assert [n.op for n in graph.nodes] == ["If"]
    node = graph.nodes[0]
    assert [v.name for v in node.inputs] == ["c", "x"]  # the outer x is captured explicitly
    bundle = ember.compile(path, tmp_path / "b")
    code = (tmp_path / "b" / f"{bundle.name}.c").read_text()
    assert "if (((uint8_t *)(mutableWeight + " in code and "else {" in code
    # then: MatMul 32 B + Relu in place; else: Sigmoid and Mul 32 B each: both fit the same 64 B, not 96.
    assert bundle.manifest["memory"]["activations"] <= 64


def _nested_if_model(tmp: Path) -> Path:
    """y = c1 ? (c2 ? x + k : x * k) : -x, the inner If inside the then branch reading x and k from outside."""
    inner_then = _branch("inner_then", [helper.make_node("Add", ["x", "k"], ["it"])], "it", [3])
    inner_else = _branch("inner_else", [helper.make_node("Mul", ["x", "k"], ["ie"])], "ie", [3])
    outer_then = _branch("outer_then", [helper.make_node("If", ["c2"], ["ot"], then_branch=inner_then,
                                                          else_branch=inner_else, name="inner")], "ot", [3])
    outer_else = _branch("outer_else", [helper.make_node("Neg", ["x"], ["oe"])], "oe", [3])
    nodes = [helper.make_node("If", ["c1"], ["y"], then_branch=outer_then, else_branch=outer_else, name="outer")]
    return _save(tmp, nodes, [_vi("x", F, [3]), _vi("k", F, [3]), _vi("c1", B, []), _vi("c2", B, [1])],
                 [_vi("y", F, [3])], name="nested")


@pytest.mark.parametrize(("c1", "c2"), [(True, True), (True, False), (False, True)])
def test_nested_if(tmp_path: Path, c1: bool, c2: bool) -> None:
    feeds = {"x": np.array([1.0, -2.0, 3.0], np.float32), "k": np.array([0.5, 2.0, -1.0], np.float32),
             "c1": np.array(c1), "c2": np.array([c2])}
    _compare(_nested_if_model(tmp_path), tmp_path, feeds)


def test_if_branch_outputs_outer_values_and_constants(tmp_path: Path) -> None:
    """A branch that returns an outer value and a constant as they are: copied into the If's outputs."""
    k = numpy_helper.from_array(np.array([7.0, 8.0, 9.0], np.float32), "k")
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["xa"]),
                                helper.make_node("Constant", [], ["kc"], value=numpy_helper.from_array(
                                    np.array([7.0, 8.0, 9.0], np.float32)))],
                               "then", [], [_vi("xa", F, [3]), _vi("kc", F, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["x", "k"], ["s"]), helper.make_node("Identity", ["x"], ["i"])],
                               "else", [], [_vi("s", F, [3]), _vi("i", F, [3])])
    nodes = [helper.make_node("If", ["c"], ["y", "z"], then_branch=then_g, else_branch=else_g)]
    p = _save(tmp_path, nodes, [_vi("x", F, [3]), _vi("c", B, [])], [_vi("y", F, [3]), _vi("z", F, [3])], [k])
    for c in (True, False):
        _compare(p, tmp_path, {"x": np.array([1.0, 2.0, 3.0], np.float32), "c": np.array(c)})


@pytest.mark.parametrize("cond", [True, False])
def test_if_whose_condition_becomes_constant_in_a_pass_is_inlined(tmp_path: Path, cond: bool) -> None:
    graph, _ = load_graph(str(_if_model(tmp_path)), CompileOptions())
    node = graph.nodes[0]
    node.inputs[0] = graph.constant("c_now", np.array(cond))
    graph.inputs = [v for v in graph.inputs if v.name != "c"]
    PassManager(build_pipeline(CompileOptions()), verify=verify).run(graph)
    assert "If" not in graph.op_counts()
    assert ("MatMul" in graph.op_counts()) == cond
    graph, _, _ = build_graph(str(_if_model(tmp_path)), CompileOptions(consts={"c": cond}), check=True)
    assert "If" not in graph.op_counts()


def test_if_branches_of_different_shapes_are_refused(tmp_path: Path) -> None:
    then_g = _branch("then", [helper.make_node("Add", ["x", "x"], ["t"])], "t", [3])
    else_g = _branch("else", [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)], "e", [])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="odd_if")]
    p = _save(tmp_path, nodes, [_vi("x", F, [3]), _vi("c", B, [])], [_vi("y", F, None)])
    with pytest.raises(ShapeError, match=r"node 'odd_if' \(If\): output 0 is float32\[3\] in the then branch but "
                                         r"float32\[\] in the else branch"):
        ember.compile(p, tmp_path / "b")


# ----------------------------------------------------------------------------- Loop
def _cumulative_loop(tmp: Path, trips: int) -> Path:
    """acc_{i+1} = acc_i * 0.5 + x[i] + i; scan output: every acc (a running, decaying sum)."""
    half = numpy_helper.from_array(np.float32(0.5), "half")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["acc", "half"], ["decayed"]),
         helper.make_node("Add", ["decayed", "xi"], ["plus"]),
         helper.make_node("Add", ["plus", "fi"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("acc", F, [4])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [4]), _vi("scan", F, [4])], [half])
    m = numpy_helper.from_array(np.array(trips, np.int64), "M")
    nodes = [helper.make_node("Loop", ["M", "", "acc0"], ["final", "history"], body=body, name="cumulative")]
    return _save(tmp, nodes, [_vi("acc0", F, [4]), _vi("x", F, [max(trips, 1), 4])],
                 [_vi("final", F, [4]), _vi("history", F, [trips, 4])], [m], name=f"loop{trips}")


@pytest.mark.parametrize("trips", [1, 6])
def test_loop_with_static_trip_count_carried_value_and_scan_output(tmp_path: Path, trips: int) -> None:
    rng = np.random.default_rng(2)
    feeds = {"acc0": rng.standard_normal(4).astype(np.float32),
             "x": rng.standard_normal((trips, 4)).astype(np.float32)}
    got = _compare(_cumulative_loop(tmp_path, trips), tmp_path, feeds)
    assert got["history"].shape == (trips, 4)


def _early_exit_loop(tmp: Path, scan: bool = False) -> Path:
    """Doubles v until its sum passes `limit` (at most M times): a data-dependent number of iterations."""
    body_nodes = [helper.make_node("Add", ["v", "v"], ["v_out"]),
                  helper.make_node("ReduceSum", ["v_out"], ["total"], keepdims=0),
                  helper.make_node("Less", ["total", "limit"], ["cond_out"]),
                  helper.make_node("Add", ["count", "one"], ["count_out"])]
    outs = [_vi("cond_out", B, []), _vi("v_out", F, [3]), _vi("count_out", I64, [])]
    if scan:
        outs.append(_vi("v_out", F, [3]))
    body = helper.make_graph(body_nodes, "body", [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v", F, [3]),
                                                  _vi("count", I64, [])], outs,
                             [numpy_helper.from_array(np.int64(1), "one")])
    inits = [numpy_helper.from_array(np.array(50, np.int64), "M"), numpy_helper.from_array(np.int64(0), "zero")]
    outputs = ["v_final", "count"] + (["history"] if scan else [])
    nodes = [helper.make_node("Loop", ["M", "go", "v0", "zero"], outputs, body=body, name="until")]
    graph_outs = [_vi("v_final", F, [3]), _vi("count", I64, [])] + ([_vi("history", F, None)] if scan else [])
    return _save(tmp, nodes, [_vi("v0", F, [3]), _vi("go", B, []), _vi("limit", F, [])], graph_outs, inits,
                 name="early" + ("_scan" if scan else ""))


@pytest.mark.parametrize(("v0", "go", "limit"), [([1.0, 2.0, 0.5], True, 100.0), ([1.0, 1.0, 1.0], True, 1.0),
                                                 ([1.0, 1.0, 1.0], False, 100.0), ([0.0, 0.0, 0.0], True, 1.0)])
def test_loop_exits_early_on_its_condition(tmp_path: Path, v0: list[float], go: bool, limit: float) -> None:
    feeds = {"v0": np.array(v0, np.float32), "go": np.array(go), "limit": np.array(limit, np.float32)}
    got = _compare(_early_exit_loop(tmp_path), tmp_path, feeds)
    if v0[0] == 0.0:
        assert got["count"] == 50  # never reaches the limit: all M iterations


def test_loop_with_runtime_trip_count_and_no_scan_outputs(tmp_path: Path) -> None:
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Mul", ["v", "v"], ["v_out"])], "body",
                             [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v", F, [2])],
                             [_vi("cond_out", B, []), _vi("v_out", F, [2])])
    nodes = [helper.make_node("Loop", ["n", "", "v0"], ["v"], body=body)]
    p = _save(tmp_path, nodes, [_vi("n", I64, []), _vi("v0", F, [2])], [_vi("v", F, [2])], name="runtime_m")
    for n in (0, 1, 3, -2):
        _compare(p, tmp_path, {"n": np.array(n, np.int64), "v0": np.array([1.1, 0.9], np.float32)})


def test_loop_early_exit_with_scan_outputs_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedOperatorError, match="'until'.*early exit.*scan outputs"):
        ember.compile(_early_exit_loop(tmp_path, scan=True), tmp_path / "b")


def test_loop_scan_outputs_without_static_trip_count_are_refused(tmp_path: Path) -> None:
    p = _cumulative_loop(tmp_path, 3)
    m = onnx.load(p)
    del m.graph.initializer[:]
    m.graph.input.append(_vi("M", I64, []))
    onnx.save(m, p)
    with pytest.raises(UnsupportedOperatorError, match="'cumulative'.*compile-time trip count"):
        ember.compile(p, tmp_path / "b")
    _compare(p, tmp_path, {"acc0": np.ones(4, np.float32), "x": np.ones((3, 4), np.float32)}, consts={"M": 3})


def test_loop_carried_value_that_changes_shape_is_refused(tmp_path: Path) -> None:
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Concat", ["v", "v"], ["v_out"], axis=0)], "body",
                             [_vi("i", I64, []), _vi("cond_in", B, []), _vi("v", F, [2])],
                             [_vi("cond_out", B, []), _vi("v_out", F, None)])
    m = numpy_helper.from_array(np.array(2, np.int64), "M")
    nodes = [helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body, name="grow")]
    p = _save(tmp_path, nodes, [_vi("v0", F, [2])], [_vi("v", F, None)], [m])
    with pytest.raises(ShapeError, match="'grow'.*loop-carried value 0.*float32\\[2\\] going in but float32\\[4\\]"):
        ember.compile(p, tmp_path / "b")


# ----------------------------------------------------------------------------- Scan
def _scan_model(tmp: Path, in_axis: int, in_dir: int, out_axis: int, out_dir: int) -> Path:
    """Running sum and product over the scan axis of x, plus a per-step output (state * element)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "e"], ["s_out"]), helper.make_node("Mul", ["p", "e"], ["p_out"]),
         helper.make_node("Mul", ["s_out", "p_out"], ["step"])],
        "body", [_vi("s", F, [3]), _vi("p", F, [3]), _vi("e", F, [3])],
        [_vi("s_out", F, [3]), _vi("p_out", F, [3]), _vi("step", F, [3])])
    shape = [3, 3]
    shape.insert(in_axis, 5)
    node = helper.make_node("Scan", ["s0", "p0", "x"], ["s", "p", "steps"], body=body, num_scan_inputs=1,
                            scan_input_axes=[in_axis], scan_input_directions=[in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
    x_shape = [5, 3] if in_axis == 0 else [3, 5]
    return _save(tmp, [node], [_vi("s0", F, [3]), _vi("p0", F, [3]), _vi("x", F, x_shape)],
                 [_vi("s", F, [3]), _vi("p", F, [3]), _vi("steps", F, None)], opset=16,
                 name=f"scan{in_axis}{in_dir}{out_axis}{out_dir}")


@pytest.mark.parametrize(("in_axis", "in_dir", "out_axis", "out_dir"),
                         [(0, 0, 0, 0), (1, 1, 0, 0), (0, 0, 1, 1), (1, 0, -1, 0)])
def test_scan(tmp_path: Path, in_axis: int, in_dir: int, out_axis: int, out_dir: int) -> None:
    rng = np.random.default_rng(3)
    x_shape = (5, 3) if in_axis == 0 else (3, 5)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32), "p0": np.ones(3, np.float32),
             "x": (rng.random(x_shape) + 0.5).astype(np.float32)}
    _compare(_scan_model(tmp_path, in_axis, in_dir, out_axis, out_dir), tmp_path, feeds)


# ----------------------------------------------------------------------------- PyTorch
def test_pytorch_scripted_data_dependent_if(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    class Gate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if bool(x.sum() > 0):
                y = torch.relu(self.fc(x))
            else:
                y = torch.sigmoid(x) * 2.0
            return y

    torch.manual_seed(0)
    scripted = torch.jit.script(Gate().eval())
    path = tmp_path / "gate.onnx"
    try:
        torch.onnx.export(scripted, (torch.ones(1, 4),), str(path), dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
    except Exception as e:  # the TorchScript exporter may be unavailable in this torch build
        pytest.skip(f"torch.onnx.export of a scripted module failed: {type(e).__name__}")
    assert any(n.op_type == "If" for n in onnx.load(path).graph.node)
    for sign in (1.0, -1.0):
        x = (np.abs(np.random.default_rng(4).standard_normal((1, 4))) * sign).astype(np.float32)
        _compare(path, tmp_path, {"x": x})


# ----------------------------------------------------------------------------- C: sanitizers, Cortex-M
def _all_models(tmp: Path) -> list[tuple[Path, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(5)
    x24 = rng.standard_normal((2, 4)).astype(np.float32)
    return [
        (_if_model(tmp), {"x": x24, "c": np.array(False)}),
        (_nested_if_model(tmp), {"x": np.ones(3, np.float32), "k": np.full(3, 2.0, np.float32),
                                 "c1": np.array(True), "c2": np.array([False])}),
        (_cumulative_loop(tmp, 6), {"acc0": np.ones(4, np.float32),
                                    "x": rng.standard_normal((6, 4)).astype(np.float32)}),
        (_early_exit_loop(tmp), {"v0": np.array([1.0, 2.0, 0.5], np.float32), "go": np.array(True),
                                 "limit": np.array(40.0, np.float32)}),
        (_scan_model(tmp, 1, 1, 1, 1), {"s0": np.zeros(3, np.float32), "p0": np.ones(3, np.float32),
                                        "x": rng.random((3, 5)).astype(np.float32)}),
    ]


def test_control_flow_c_is_sanitizer_clean(tmp_path: Path) -> None:
    from tests.support import cdriver

    for path, feeds in _all_models(tmp_path):
        out = tmp_path / f"c_{path.stem}"
        ember.compile(path, out)
        got = cdriver.run(out, tmp_path / f"w_{path.stem}", feeds, sanitize=True)
        for name, ref in onnxruntime_outputs(path, feeds).items():
            assert_close(got[name], ref, f"{path.stem}:{name}", rel=1e-5)


def test_control_flow_builds_for_cortex_m4(tmp_path: Path) -> None:
    from ember.api import write_bundle

    for path, _ in _all_models(tmp_path):
        # write_bundle checks the object: freestanding, no double precision on the single-precision FPU.
        man = write_bundle(str(path), tmp_path / f"m4_{path.stem}", CompileOptions(target="cortex-m4"))
        assert all(s.startswith("__aeabi_") for s in man["footprint"]["undefined_symbols"])  # EABI helpers only
