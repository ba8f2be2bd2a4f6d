"""End-to-end CLI: compile/run/info/validate, and each user error as one line with exit code 1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import ModelFormatError, ShapeError, SymbolicDimensionError, UnsupportedOperatorError


def _ember(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ember.cli", *args], capture_output=True, text=True)


def _save(tmp: Path, nodes, inputs, outputs, inits=(), name: str = "m.onnx", opset: int = 17) -> Path:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    p = tmp / name
    onnx.save(m, p)
    return p


def _add_model(tmp: Path, shape=(2, 3), name: str = "m.onnx") -> Path:
    c = numpy_helper.from_array(np.arange(3, dtype=np.float32), "c")
    return _save(tmp, [helper.make_node("Add", ["x", "c"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [c], name)


def _one_error_line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ember: error: ")
    return lines[0]


def test_compile_run_info_validate(tmp_path: Path) -> None:
    model = _add_model(tmp_path)
    res = _ember("compile", str(model), "-o", str(tmp_path / "b"))
    assert res.returncode == 0, res.stderr
    assert "activations" in res.stdout and "lower bound" in res.stdout
    for f in ("m.c", "m.h", "m.o", "m.weights.bin", "m.weights.txt", "m.json"):
        assert (tmp_path / "b" / f).exists(), f
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    res = _ember("run", str(tmp_path / "b"), "--input", f"x={tmp_path / 'x.npy'}", "--output", str(tmp_path / "o.npz"))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["y"], x + np.arange(3, dtype=np.float32))
    res = _ember("compile", str(model), "-o", str(tmp_path / "b86"), "--cpu", "x86-64")
    assert res.returncode == 0, res.stderr
    assert "-march=x86-64" in json.loads((tmp_path / "b86" / "m.json").read_text())["compiler"]
    res = _ember("info", str(tmp_path / "b"))
    assert res.returncode == 0 and "float32[2, 3]" in res.stdout and "Add" in res.stdout
    res = _ember("validate", str(model), str(tmp_path / "b"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "PASS" in res.stdout


def test_missing_file(tmp_path: Path) -> None:
    line = _one_error_line(_ember("compile", str(tmp_path / "nope.onnx"), "-o", str(tmp_path / "b")))
    assert "nope.onnx" in line and "no such file" in line
    assert not (tmp_path / "b").exists()


def test_not_onnx_and_truncated(tmp_path: Path) -> None:
    (tmp_path / "junk.onnx").write_text("this is not a model\n" * 10)
    line = _one_error_line(_ember("compile", str(tmp_path / "junk.onnx"), "-o", str(tmp_path / "b")))
    assert "junk.onnx" in line
    good = _add_model(tmp_path).read_bytes()
    (tmp_path / "trunc.onnx").write_bytes(good[: len(good) // 2])
    line = _one_error_line(_ember("compile", str(tmp_path / "trunc.onnx"), "-o", str(tmp_path / "b")))
    assert "trunc.onnx" in line
    assert not (tmp_path / "b").exists()
    with pytest.raises(ModelFormatError):
        ember.compile(tmp_path / "trunc.onnx", tmp_path / "b")


def test_unsupported_operator_names_op_node_domain(tmp_path: Path) -> None:
    # ImageDecoder decodes JPEG/PNG bytes: a C image decoder is no part of a bundle, so ember does not compile it.
    p = _save(tmp_path, [helper.make_node("ImageDecoder", ["x"], ["y"], name="my_decode")],
              [helper.make_tensor_value_info("x", TensorProto.UINT8, [100])],
              [helper.make_tensor_value_info("y", TensorProto.UINT8, [])], opset=20)
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b")))
    assert "'ImageDecoder'" in line and "my_decode" in line and "ai.onnx" in line
    with pytest.raises(UnsupportedOperatorError):
        ember.compile(p, tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_custom_domain_is_named(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("Fancy", ["x"], ["y"], domain="com.acme", name="f0")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "c.onnx")
    line = _one_error_line(_ember("compile", str(tmp_path / "c.onnx"), "-o", str(tmp_path / "b")))
    assert "'Fancy'" in line and "com.acme" in line and "f0" in line


def test_unset_symbolic_dimension_suggests_define(tmp_path: Path) -> None:
    p = _add_model(tmp_path, shape=("batch", 3))
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b")))
    assert "'batch'" in line and "--define batch=" in line
    with pytest.raises(SymbolicDimensionError):
        ember.compile(p, tmp_path / "b")
    res = _ember("compile", str(p), "-o", str(tmp_path / "b"), "--define", "batch=2")
    assert res.returncode == 0, res.stderr
    res = _ember("compile", str(p), "-o", str(tmp_path / "b2"), "--input", "x:float32:2x3")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "b2" / "m.json").read_text())["inputs"][0]["shape"] == [2, 3]


def test_shape_mismatch(tmp_path: Path) -> None:
    p = _save(tmp_path, [helper.make_node("Add", ["x", "z"], ["y"], name="bad_add")],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b")))
    assert "bad_add" in line
    with pytest.raises(ShapeError):
        ember.compile(p, tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_bad_options(tmp_path: Path) -> None:
    p = _add_model(tmp_path)
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b"), "--define", "batch"))
    assert "--define" in line
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b"), "--target", "pdp11"))
    assert "pdp11" in line
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b"), "--float-abi", "soft"))
    assert "--float-abi" in line and "host" in line
    line = _one_error_line(_ember("compile", str(p), "-o", str(tmp_path / "b"), "--cpu", "no-such-cpu"))
    assert "no-such-cpu" in line
    assert not (tmp_path / "b").exists()
    line = _one_error_line(_ember("run", str(tmp_path / "nobundle")))
    assert "nobundle" in line


def test_hostile_names_never_reach_c_unsanitized(tmp_path: Path) -> None:
    evil_in = 'x */ #include <stdio.h> /* "'
    evil_out = "y\n#define int float\n"
    p = _save(tmp_path, [helper.make_node("Add", [evil_in, evil_in], [evil_out],
                                          name="n */ system(\"rm\"); /*")],
              [helper.make_tensor_value_info(evil_in, TensorProto.FLOAT, [4])],
              [helper.make_tensor_value_info(evil_out, TensorProto.FLOAT, [4])], name="1 bad-name.onnx")
    b = ember.compile(p, tmp_path / "b", api="dynamic")
    src = (tmp_path / "b" / f"{b.name}.c").read_text() + (tmp_path / "b" / f"{b.name}.h").read_text()
    # Model names may appear only inside escaped string literals and comments; strip those, then look.
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', src)
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    code = re.sub(r"//[^\n]*", "", code)
    assert "<stdio.h>" not in code and "#define int" not in code and "system(" not in code
    assert b.name.isidentifier()
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(b.run({evil_in: x})[evil_out], 2 * x)


def test_bench_reports_latency_and_a_profile_of_every_node(artifacts, tmp_path: Path) -> None:
    out = tmp_path / "b"
    ember.compile(artifacts.model("lenet"), out)
    man = json.loads((out / "lenet.json").read_text())
    res = _ember("bench", str(out), "--rounds", "5", "--warmup", "1", "--json", str(tmp_path / "r.json"))
    assert res.returncode == 0, res.stderr
    assert re.search(r"latency  min [0-9.]+ ms  median [0-9.]+ ms  p90 [0-9.]+ ms", res.stdout)
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["rounds"] == 5 and r["min_ms"] <= r["median_ms"] <= r["p90_ms"]
    assert [p["op"] for p in r["profile"]] == [n["op"] for n in man["nodes"]]
    # Fused activations are named in the profile (LeNet's convs: ConvShifted+Relu on the host).
    assert any(n["op"].startswith("Conv") and n["op"].endswith("+Relu") for n in man["nodes"])
    conv = sum(p["ms"] for p in r["profile"] if p["op"].startswith("Conv"))
    # LeNet's two convolutions are most of its work: a profile that timed nothing would fail this.
    assert conv > 0.3 * sum(p["ms"] for p in r["profile"]) > 0
    assert r["memory"] == man["memory"]
    fp = man["footprint"]  # the same code size as `ember compile` prints for this bundle
    assert f"code + tables {fp['code'] + fp['rodata'] + fp['data']:,} B" in res.stdout


def test_operators_lists_every_domain_and_refuses_an_unknown_one() -> None:
    from tests.cli.helpers import ember as run_ember

    listing = run_ember("operators")
    assert listing.returncode == 0, listing.stderr
    for expected in ("ai.onnx (", "LayerNormalization[17]", "ai.onnx.ml (", "TreeEnsembleClassifier",
                     "com.microsoft (", "SkipLayerNormalization"):
        assert expected in listing.stdout, expected
    assert "ZipMap" not in listing.stdout  # refused with a hint, not compiled
    only_ml = run_ember("operators", "--domain", "ai.onnx.ml")
    assert "com.microsoft" not in only_ml.stdout and "TreeEnsemble[5]" in only_ml.stdout
    bad = run_ember("operators", "--domain", "ai.onnx.bogus")
    assert bad.returncode == 1 and "ai.onnx.ml" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    tflite = run_ember("ops", "--domain", "tflite")  # `ops` is the short spelling
    assert tflite.returncode == 0 and tflite.stdout.startswith("tflite (") and " DEPTHWISE_CONV_2D " in tflite.stdout
    sixteen = tflite.stdout.split("tflite 16x8 (")[1]  # the int16 ones: BATCH_MATMUL, LOGISTIC; not HARD_SWISH, SVDF
    assert " BATCH_MATMUL " in sixteen and " LOGISTIC " in sixteen, sixteen
    assert " HARD_SWISH " not in sixteen and " SVDF " not in sixteen, sixteen
