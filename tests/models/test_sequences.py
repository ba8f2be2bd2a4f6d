"""Sequences and optionals resolved at compile time (ember/frontends/onnx/sequence.py): bundles against
onnxruntime, sequence inputs/outputs as Python lists, and one-line refusals of what is not static."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import EmberError, SymbolicDimensionError, UnsupportedOperatorError
from tests.support.models import assert_close, onnxruntime_outputs

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _seq_vi(name: str, elem: int = F) -> onnx.ValueInfoProto:
    return helper.make_tensor_sequence_value_info(name, elem, None)


def _save(tmp: Path, nodes, inputs, outputs, inits=(), name: str = "m") -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    p = tmp / f"{name}.onnx"
    onnx.save(m, p)
    return p


def _check(got: object, ref: object, what: str) -> None:
    if isinstance(ref, list):
        assert isinstance(got, list) and len(got) == len(ref), f"{what}: {got!r} is not a list of {len(ref)}"
        for k, (g, r) in enumerate(zip(got, ref, strict=True)):
            assert_close(g, r, f"{what}[{k}]", rel=1e-6)
    else:
        assert_close(got, ref, what, rel=1e-6)


def test_split_map_concat_matches_onnxruntime(tmp_path: Path) -> None:
    """SplitToSequence (uneven sizes) -> SequenceMap (a body reading an outer tensor) -> ConcatFromSequence,
    SequenceLength and the mapped sequence itself as outputs."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["e"], ["r"]), helper.make_node("Mul", ["r", "scale"], ["o"])], "body",
        [helper.make_tensor_value_info("e", F, [4, None])], [helper.make_tensor_value_info("o", F, [4, None])])
    nodes = [helper.make_node("SplitToSequence", ["x", "sizes"], ["s"], axis=1),
             helper.make_node("SequenceMap", ["s"], ["parts"], body=body),
             helper.make_node("ConcatFromSequence", ["parts"], ["y"], axis=1),
             helper.make_node("SequenceLength", ["parts"], ["n"])]
    path = _save(tmp_path, nodes, [helper.make_tensor_value_info("x", F, [4, 6]),
                                   helper.make_tensor_value_info("scale", F, [1])],
                 [helper.make_tensor_value_info("y", F, [4, 6]), _seq_vi("parts"),
                  helper.make_tensor_value_info("n", I64, [])],
                 [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "sizes")])
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((4, 6)).astype(np.float32), "scale": np.array([1.5], np.float32)}
    bundle = ember.compile(path, tmp_path / "b")
    got = bundle.run(feeds)
    ref = onnxruntime_outputs(path, feeds)
    for name in ("y", "parts", "n"):
        _check(got[name], ref[name], name)
    flat = bundle.by_element(got)  # what `ember run` prints: one array per element
    assert sorted(flat) == ["n", "parts_0", "parts_1", "parts_2", "y"]
    np.testing.assert_array_equal(flat["parts_2"], got["parts"][2])
    manifest = json.loads((tmp_path / "b" / "m.json").read_text())
    assert manifest["sequences"]["outputs"] == {"parts": ["parts_0", "parts_1", "parts_2"]}
    assert [o["shape"] for o in manifest["outputs"] if o["name"].startswith("parts_")] == [[4, 1], [4, 2], [4, 3]]


def test_sequence_input_insert_erase_at(tmp_path: Path) -> None:
    """A sequence input (element shapes from --input x_0/x_1, fed as a list), SequenceInsert at a constant
    position, SequenceErase, SequenceAt(-1) and ConcatFromSequence with new_axis."""
    nodes = [helper.make_node("SequenceInsert", ["x", "t", "one"], ["s1"]),
             helper.make_node("SequenceErase", ["s1", "zero"], ["s2"]),
             helper.make_node("SequenceAt", ["s2", "minus_one"], ["last"]),
             helper.make_node("ConcatFromSequence", ["s2"], ["stacked"], axis=-1, new_axis=1)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("one", 1), ("zero", 0),
                                                                             ("minus_one", -1))]
    path = _save(tmp_path, nodes, [_seq_vi("x"), helper.make_tensor_value_info("t", F, [2, 3])],
                 [helper.make_tensor_value_info("last", F, [2, 3]), helper.make_tensor_value_info("stacked", F, None),
                  _seq_vi("s2")], inits)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    t = rng.standard_normal((2, 3)).astype(np.float32)
    bundle = ember.compile(path, tmp_path / "b", inputs={"x_0": "f32:2x3", "x_1": "f32:2x3"})
    got = bundle.run({"x": xs, "t": t})
    ref = onnxruntime_outputs(path, {"x": xs, "t": t})
    for name in ("last", "stacked", "s2"):
        _check(got[name], ref[name], name)
    with pytest.raises(EmberError, match=r"input 'x': a sequence of 2 arrays expected, got 3 elements"):
        bundle.run({"x": [*xs, t], "t": t})


def test_if_on_run_time_condition_gives_a_sequence(tmp_path: Path) -> None:
    """An If whose branches both give a sequence of two tensors: one If node with two outputs."""
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["x", "x"], [f"{name}_a"]),
                                  helper.make_node("Neg", ["x"], [f"{name}_b"]),
                                  helper.make_node("SequenceConstruct", [f"{name}_a", f"{name}_b"], [f"{name}_s"])],
                                 name, [], [_seq_vi(f"{name}_s")])
    nodes = [helper.make_node("If", ["c"], ["s"], then_branch=branch("then", "Add"), else_branch=branch("else", "Mul")),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    inputs = [helper.make_tensor_value_info("c", B, []), helper.make_tensor_value_info("x", F, [3])]
    path = _save(tmp_path, nodes, inputs, [helper.make_tensor_value_info("y", F, [6])])
    bundle = ember.compile(path, tmp_path / "b")
    x = np.array([1.0, -2.0, 3.0], np.float32)
    for c in (True, False):
        feeds = {"c": np.array(c), "x": x}
        _check(bundle.run(feeds)["y"], onnxruntime_outputs(path, feeds)["y"], f"y (c={c})")


def test_what_is_not_static_is_refused(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", F, [4])
    at = _save(tmp_path, [helper.make_node("SplitToSequence", ["x"], ["s"]),
                          helper.make_node("SequenceAt", ["s", "p"], ["y"], name="pick")],
               [x, helper.make_tensor_value_info("p", I64, [])], [helper.make_tensor_value_info("y", F, [])], name="at")
    with pytest.raises(UnsupportedOperatorError, match=r"'pick'.*position is computed at run time") as e:
        ember.compile(at, tmp_path / "b1")
    assert "\n" not in str(e.value)
    seq_in = _save(tmp_path, [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], [_seq_vi("s")],
                   [helper.make_tensor_value_info("y", F, None)], name="seq_in")
    with pytest.raises(SymbolicDimensionError, match=r"input 's' is a sequence: .*--input s_0:float32"):
        ember.compile(seq_in, tmp_path / "b2")
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])], "body",
                             [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c_in", B, []),
                              _seq_vi("s_in")], [helper.make_tensor_value_info("c_out", B, []), _seq_vi("s_out")])
    loop = _save(tmp_path, [helper.make_node("SequenceEmpty", [], ["e"]),
                            helper.make_node("Loop", ["m", "", "e"], ["s"], body=body, name="grow"),
                            helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
                 [x, helper.make_tensor_value_info("m", I64, [])], [helper.make_tensor_value_info("y", F, None)],
                 name="loop")
    with pytest.raises(EmberError, match=r"'grow'.*carries a sequence.*constant trip count"):
        ember.compile(loop, tmp_path / "b3")
    empty = _save(tmp_path, [helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(F, [4]))],
                  [], [helper.make_value_info("o", helper.make_optional_type_proto(
                      helper.make_tensor_type_proto(F, [4])))], name="empty")
    with pytest.raises(UnsupportedOperatorError, match=r"'o'.*empty optional"):
        ember.compile(empty, tmp_path / "b4")
