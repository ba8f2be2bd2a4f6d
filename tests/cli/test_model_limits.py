"""Generated names never collide, sizes fit the C types, and invalid models are refused with one line."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper

import ember
from tests.cli.helpers import add_model, one_error_line, save_model, snapshot
from tests.cli.helpers import ember as run_ember


def _vi(name: str, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_header_macros_never_collide(tmp_path: Path) -> None:
    # Input `a`, outputs named like a's derived macros: each family must stay distinct.
    nodes = [helper.make_node("Relu", ["a"], ["a_SIZE"]), helper.make_node("Neg", ["a"], ["a_TYPE"]),
             helper.make_node("Abs", ["a"], ["CONSTANT_MEM_SIZE"]), helper.make_node("Sigmoid", ["a"], ["a-SIZE"])]
    outs = ["a_SIZE", "a_TYPE", "CONSTANT_MEM_SIZE", "a-SIZE"]
    model = save_model(tmp_path / "m.onnx", nodes, [_vi("a", [2, 3])], [_vi(o, [2, 3]) for o in outs])
    b = ember.compile(model, tmp_path / "b")
    h = (tmp_path / "b" / "m.h").read_text()
    defined = Counter(re.findall(r"^#define (\w+)", h, re.M))
    assert not [m for m, k in defined.items() if k > 1 and m not in ("GLOW_MEM_ALIGN", "GLOW_GET_ADDR")]
    entries = b.inputs + b.outputs
    assert len({e["c_name"] for e in entries}) == len(entries)
    for e in entries:  # each offset macro holds that tensor's offset
        assert re.search(rf"^#define M_{e['c_name']} {e['offset']}$", h, re.M), e
    # The header compiles warning-free with every macro used.
    uses = "\n".join(f"long v{i} = M_{e['c_name']} + M_{e['c_name']}_SIZE + sizeof(M_{e['c_name']}_TYPE);"
                     for i, e in enumerate(entries))
    src = tmp_path / "use.c"
    src.write_text(f'#include "m.h"\n{uses}\nlong total = M_CONSTANT_MEM_SIZE;\n')
    res = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-c", str(src), "-I", str(tmp_path / "b"),
                          "-o", str(tmp_path / "use.o")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    got = b.run({"a": x})
    np.testing.assert_array_equal(got["a_SIZE"], np.maximum(x, 0))
    np.testing.assert_array_equal(got["a_TYPE"], -x)


def test_define_out_of_range(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 3])],
                       [_vi("y", ["batch", 3])])
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--define", "batch=99999999999"))
    assert "batch" in line and "at most" in line
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--define", "batch=2",
                                    "--define", "batch=3"))
    assert "batch" in line and "twice" in line
    # Each dimension fits, but the element count does not fit a C int.
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--define", "batch=2000000000"))
    assert "'x'" in line and "elements" in line
    assert not (tmp_path / "b").exists()


def test_max_memory(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx", (1000, 3))
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--max-memory", "10K"))
    assert "--max-memory" in line and "24,012" in line or "bytes" in line
    assert not (tmp_path / "b").exists()
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--max-memory", "lots"))
    assert "--max-memory lots" in line
    res = run_ember("compile", str(model), "-o", str(tmp_path / "b"), "--max-memory", "1M")
    assert res.returncode == 0, res.stderr


def test_default_memory_limit_for_the_host(tmp_path: Path) -> None:
    # 2 x 600M floats: 4.8 GB of mutable memory, over the 4 GiB default; every count fits an int.
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [600_000_000])],
                       [_vi("y", [600_000_000])])
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b")))
    assert "4,294,967,296" in line and "--max-memory" in line


def _compile_error(tmp_path: Path, model: Path) -> str:
    before = snapshot(tmp_path)
    line = one_error_line(run_ember("compile", str(model), "-o", str(tmp_path / "b")))
    assert snapshot(tmp_path) == before
    return line


def test_two_nodes_write_one_tensor(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], name="r1"),
                                             helper.make_node("Neg", ["x"], ["y"], name="n1")],
                       [_vi("x", [2])], [_vi("y", [2])])
    line = _compile_error(tmp_path, model)
    assert "'y'" in line and "n1" in line


def test_no_graph_outputs(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [])
    assert "no outputs" in _compile_error(tmp_path, model)


def test_output_nobody_produces(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])],
                       [_vi("z", [2])])
    assert "'z'" in _compile_error(tmp_path, model)


def test_unknown_opset(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])],
                       [_vi("y", [2])], opset=99)
    assert "opset 99" in _compile_error(tmp_path, model)


def test_declared_output_type_disagrees(tmp_path: Path) -> None:
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Softmax", ["x"], ["y"])], [_vi("x", [1, 4])],
                       [_vi("y", [1, 4], TensorProto.INT8)])
    line = _compile_error(tmp_path, model)
    assert "'y'" in line and "int8" in line and "float32" in line


def test_tensor_attribute_of_undefined_type(tmp_path: Path) -> None:
    t = onnx.TensorProto(name="v", dims=[2], data_type=TensorProto.UNDEFINED)
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Constant", [], ["c"], value=t, name="k"),
                                             helper.make_node("Add", ["x", "c"], ["y"])],
                       [_vi("x", [2])], [_vi("y", [2])])
    line = _compile_error(tmp_path, model)
    assert "'k'" in line and "'value'" in line and "undefined" in line


@pytest.mark.parametrize("attr", ["perm", "axes"])
def test_empty_ints_attribute(tmp_path: Path, attr: str) -> None:
    # node_to_proto used to fail on an empty INTS attribute (no element type to infer from an empty list).
    op = "Transpose" if attr == "perm" else "Squeeze"
    node = helper.make_node(op, ["x"], ["y"], name="t")
    node.attribute.append(AttributeProto(name=attr, type=AttributeProto.INTS))
    shape = [2, 3] if op == "Transpose" else [1, 3]
    out = [3, 2] if op == "Transpose" else [3]
    model = save_model(tmp_path / "m.onnx", [node], [_vi("x", shape)], [_vi("y", out)], opset=11)
    res = run_ember("compile", str(model), "-o", str(tmp_path / "b"))
    if res.returncode != 0:
        one_error_line(res)
    else:
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        got = ember.runtime.loader.load(tmp_path / "b").run({"x": x})["y"]
        if op == "Transpose":  # an empty perm reverses the axes, like no perm
            np.testing.assert_array_equal(got, x.T)


def test_operator_newer_than_the_models_opset(tmp_path: Path) -> None:
    # Found by scripts/fuzz.py: Where (opset 9) in an opset-8 model reached onnx's schema lookup unguarded.
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Where", ["c", "x", "x"], ["y"], name="w")],
                       [_vi("c", [2], TensorProto.BOOL), _vi("x", [2])], [_vi("y", [2])], opset=8)
    line = _compile_error(tmp_path, model)
    assert "'Where'" in line and "'w'" in line and "opset 8" in line


@pytest.mark.parametrize("axis", [1 << 62, 1 << 40])
def test_impossible_axis(tmp_path: Path, axis: int) -> None:
    # Found by scripts/fuzz.py: onnx's inference reads axis as int32 (2**40 passes as 0), ember's lowering did not.
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Softmax", ["x"], ["y"], axis=axis, name="s")],
                       [_vi("x", [1, 10])], [_vi("y", [1, 10])])
    line = _compile_error(tmp_path, model)
    assert "'s'" in line and "'axis'" in line and str(axis) in line


def test_macros_never_rename_the_entry_points_symbols(tmp_path: Path) -> None:
    # Network NET, dynamic API: NET_config and NET_symbols are C symbols; outputs named config/symbols
    # must get other macros, or `BundleConfig NET_config` would expand to a number.
    model = save_model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["config"]),
                                             helper.make_node("Neg", ["x"], ["symbols"])],
                       [_vi("x", [2])], [_vi("config", [2]), _vi("symbols", [2])])
    b = ember.compile(model, tmp_path / "b", name="NET", api="dynamic")
    assert {e["c_name"] for e in b.outputs}.isdisjoint({"config", "symbols"})
    np.testing.assert_array_equal(b.run({"x": np.array([-1, 2], np.float32)})["symbols"], [1, -2])
