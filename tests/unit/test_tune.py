"""`--tune` and `--tune-file` (ember/tune.py, passes/choice_file.py): every candidate algorithm computes what
onnxruntime does, tuning records a choice per layer shape in NAME.json and the choice file, a second --tune
times nothing, the same choice file gives byte-identical bundles, and targets that cannot be timed here are
refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
import ember.tune
from ember.config import CompileOptions
from ember.errors import OptionError
from ember.passes.choice_file import context_key
from tests.support.models import assert_outputs_match, onnxruntime_outputs

BUNDLE_FILES = ("c", "h", "o", "weights.bin")


def _model(path: Path) -> Path:
    """A 3x3 conv (5 candidates: its 16x16 map has the 16 tiles F(4x4) needs with AVX-512), a strided 3x3 (3), a
    1x1 (2) and a MatMul with constant B (2); 64 output channels, whole ConvNarrow panels in every family."""
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["y1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["y1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["y2"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["y2", "w3"], ["y3"]),
             helper.make_node("Flatten", ["y3"], ["f"]),
             helper.make_node("MatMul", ["f", "wm"], ["out"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 64])],
                              [w("w1", 64, 16, 3, 3), w("b1", 64), w("w2", 64, 64, 3, 3), w("w3", 64, 64, 1, 1),
                               w("wm", 64 * 8 * 8, 64)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model(tmp_path_factory.mktemp("tune") / "tuned.onnx")


@pytest.fixture(scope="module")
def plain(model: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The thresholds' choices (NAME.json `algorithms`) of a compile without a choice file."""
    return ember.compile(str(model), tmp_path_factory.mktemp("plain")).manifest["algorithms"]


def _check_outputs(bundle: ember.Bundle, model: Path) -> None:
    x = {"x": np.random.default_rng(1).standard_normal((1, 16, 16, 16)).astype(np.float32)}
    assert_outputs_match(bundle.run(x), onnxruntime_outputs(model, x), rtol=1e-4, atol=1e-4)


def test_tune_records_the_fastest_candidate_of_each_shape(model: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ember.tune, "SECONDS_PER_SET", 0.2)  # enough rounds to time, not to rank well
    choices = tmp_path / "choices.json"
    bundle = ember.compile(str(model), tmp_path / "out", tune=True, tune_file=str(choices))
    _check_outputs(bundle, model)
    man = bundle.manifest
    algos = man["algorithms"]
    assert [len(a["candidates"]) for a in algos] == [5, 3, 2, 2]
    assert all(a["source"] == "tuned" for a in algos)
    assert man["tuning"]["timed_shapes"] == 4 and man["tuning"]["candidate_sets"] == 5
    layers = json.loads(choices.read_text())["contexts"][context_key(CompileOptions(tune=True))]
    for a in algos:
        entry = layers[a["key"]]
        # Every candidate was timed; the choice is the fastest of them, and is what the bundle compiled.
        assert sorted(entry["us"]) == sorted(a["candidates"]) and all(t > 0 for t in entry["us"].values())
        assert entry["choice"] == a["choice"] == min(entry["us"], key=entry["us"].get)
    # A second --tune finds every shape in the file: nothing timed, the same choices.
    again = ember.compile(str(model), tmp_path / "again", tune=True, tune_file=str(choices)).manifest
    assert again["tuning"]["timed_shapes"] == 0 and again["algorithms"] == algos


def _force(path: Path, options: CompileOptions, choices: dict[str, str]) -> None:
    doc = {"ember_choices": 1, "contexts": {context_key(options): {k: {"choice": c} for k, c in choices.items()}}}
    path.write_text(json.dumps(doc))


def test_every_candidate_matches_onnxruntime_and_one_file_gives_one_bundle(model: Path, plain: list[dict],
                                                                           tmp_path: Path) -> None:
    ops = set()
    for k in range(5):  # candidate set k, as tune.py builds them
        forced = {a["key"]: a["candidates"][min(k, len(a["candidates"]) - 1)] for a in plain}
        choices = tmp_path / f"set{k}.json"
        _force(choices, CompileOptions(), forced)
        bundle = ember.compile(str(model), tmp_path / f"set{k}", tune_file=str(choices))
        _check_outputs(bundle, model)
        assert {a["key"]: a["choice"] for a in bundle.manifest["algorithms"]} == forced
        ops |= set(bundle.manifest["ops"])
        if k == 1:
            twice = ember.compile(str(model), tmp_path / "twice", tune_file=str(choices))
            for ext in BUNDLE_FILES:
                a, b = (p / f"tuned.{ext}" for p in (bundle.path, twice.path))
                assert a.read_bytes() == b.read_bytes(), f"tuned.{ext} differs between two compiles"
            assert twice.manifest["tuning"]["file"] == str(choices)
    assert {"ConvWinograd4", "ConvWinograd", "ConvNarrow", "ConvShifted", "Conv", "MatMulPanels", "MatMul"} <= ops


def test_winograd4_needs_a_vector_of_tiles() -> None:
    """F(4x4)'s transforms run a vector of tiles at a time: a 12x12 map (9 tiles) is no candidate for it where
    vectors hold 16 floats (AVX-512: it computed garbage there), and is one with AVX2's 8, whatever --cpu-param
    asks of the thresholds."""
    import dataclasses

    from ember.frontends.onnx.loader import load_onnx
    from ember.passes.conv_algorithms import candidates, threshold_choice
    from ember.toolchain.cpus import FAMILIES

    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 12, 12])],
                              [numpy_helper.from_array(np.ones((16, 16, 3, 3), np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    node = next(n for n in load_onnx(model).nodes if n.op == "Conv")
    for name, takes in (("avx512", False), ("avx2", True)):
        family = dataclasses.replace(FAMILIES[name], winograd4_min_tiles=1)
        assert ("winograd4" in candidates(node, family)) is takes, name
        assert (threshold_choice(node, family) == "winograd4") is takes, name


def test_a_choice_that_does_not_fit_the_layer_falls_back_to_the_thresholds(model: Path, plain: list[dict],
                                                                             tmp_path: Path) -> None:
    assert all(a["source"] == "threshold" for a in plain)
    key_1x1 = next(a["key"] for a in plain if "x1x1" in a["key"])
    choices = tmp_path / "c.json"
    _force(choices, CompileOptions(), {key_1x1: "winograd4", "Conv x=9x9 w=9x9x3x3": "im2col"})
    got = ember.compile(str(model), tmp_path / "out", tune_file=str(choices)).manifest["algorithms"]
    assert got == plain  # an impossible choice and an unknown shape change nothing


@pytest.mark.parametrize(("target", "words"), [("cortex-m4", "microcontroller"), ("wasm32", "WebAssembly"),
                                               ("aarch64", "emulation")])
def test_tune_is_refused_where_it_cannot_time(model: Path, tmp_path: Path, target: str, words: str) -> None:
    with pytest.raises(OptionError) as e:
        ember.compile(str(model), tmp_path / "out", target=target, tune=True, tune_file=str(tmp_path / "c.json"))
    assert "\n" not in str(e.value) and words in str(e.value) and target in str(e.value)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "out").exists()


def test_bad_choice_files_are_one_line_errors(model: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    res = subprocess.run([sys.executable, "-m", "ember.cli", "compile", str(model), "-o", str(tmp_path / "out"),
                          "--tune-file", str(missing)], capture_output=True, text=True)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"ember: error: --tune-file {missing}")
    bad = tmp_path / "bad.json"
    bad.write_text('{"contexts": []}')
    with pytest.raises(OptionError, match="not an ember choice file"):
        ember.compile(str(model), tmp_path / "out", tune_file=str(bad))
