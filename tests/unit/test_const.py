"""consts={...} of ember.compile: graph inputs frozen to constants, checked against the declared input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from ember.config import CompileOptions, parse_const
from ember.driver import build_graph
from ember.errors import OptionError, ShapeError
from tests.cli.test_const import SR, sample_rate_model


@pytest.mark.parametrize("rate", [SR, 44100])
def test_const_selects_the_branch(tmp_path: Path, rate: int) -> None:
    b = ember.compile(sample_rate_model(tmp_path), tmp_path / "b", consts={"sample_rate": rate})
    assert [e["name"] for e in b.inputs] == ["x"]
    x = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(b.run({"x": x})["y"], x + x if rate == SR else x * x)


def test_const_leaves_no_if_in_the_graph(tmp_path: Path) -> None:
    graph, _, _ = build_graph(str(sample_rate_model(tmp_path)), CompileOptions(consts={"sample_rate": SR}),
                              check=True)
    assert [v.name for v in graph.inputs] == ["x"]
    assert set(graph.op_counts()) <= {"Add", "Copy"}


def test_const_array_and_reshape(tmp_path: Path) -> None:
    b = ember.compile(sample_rate_model(tmp_path), tmp_path / "b",
                      consts={"x": np.array([[1, 2, 3]], np.float64).reshape(-1), "sample_rate": np.int32(8000)})
    assert b.inputs == []
    np.testing.assert_array_equal(b.run({})["y"], np.array([1, 4, 9], np.float32))


def test_const_takes_a_symbolic_dimension_from_the_value(tmp_path: Path) -> None:
    p = tmp_path / "sym.onnx"
    import onnx

    g = helper.make_graph([helper.make_node("Add", ["x", "k"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"]),
                           helper.make_tensor_value_info("k", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    b = ember.compile(p, tmp_path / "b", consts={"k": [1.0, 2.0]}, defines={"N": 2})
    np.testing.assert_array_equal(b.run({"x": np.ones(2, np.float32)})["y"], [2.0, 3.0])


@pytest.mark.parametrize(("consts", "words"), [
    ({"x": [1.0, 2.0]}, ("'x'", "float32[3]")),
    ({"sample_rate": 0.5}, ("'sample_rate'", "int64")),
    ({"sample_rate": [1, 2]}, ("'sample_rate'", "int64[]")),
    ({"nope": 1}, ("--const", "nope")),
])
def test_const_that_does_not_fit_is_refused(tmp_path: Path, consts: dict, words: tuple[str, ...]) -> None:
    with pytest.raises(ShapeError) as e:
        ember.compile(sample_rate_model(tmp_path), tmp_path / "b", consts=consts)
    assert all(w in str(e.value) for w in words) and "\n" not in str(e.value)


def test_const_values_parse() -> None:
    assert parse_const("a=3") == ("a", 3)
    assert parse_const("a=1,2.5") == ("a", [1, 2.5])
    assert parse_const("a=true") == ("a", True)
    assert parse_const("a=w.npy") == ("a", "w.npy")
    with pytest.raises(OptionError, match="'x' is not a number"):
        parse_const("a=1,x")
    with pytest.raises(OptionError, match="NAME=VALUE"):
        parse_const("a")
    with pytest.raises(OptionError, match="--const a"):
        CompileOptions(consts={"a": "missing.npy"})
