"""`ember compile` writes and replaces only its own bundle's files; the network name is checked up front."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ember.codegen.bundle import network_name
from ember.codegen.cwriter import network_name_problem
from tests.cli.helpers import add_model, ember, one_error_line, snapshot, user_files

BUNDLE = {"m.c", "m.h", "m.o", "m.weights.bin", "m.weights.txt", "m.json"}


def _without(snap: dict[str, str], names: set[str]) -> dict[str, str]:
    return {k: v for k, v in snap.items() if k not in names}


def test_user_files_in_the_output_directory_survive(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    before = user_files(out)
    outside = snapshot(tmp_path)
    res = ember("compile", str(model), "-o", str(out))
    assert res.returncode == 0, res.stderr
    after = snapshot(out)
    assert BUNDLE <= set(after)
    assert _without(after, BUNDLE) == before  # byte-identical, nothing else added (no temporary folder left)
    assert _without(snapshot(tmp_path), {f"out/{f}" for f in BUNDLE}) == outside
    res = ember("compile", str(model), "-o", str(out))  # replacing its own previous bundle: still nothing else
    assert res.returncode == 0, res.stderr
    assert _without(snapshot(out), BUNDLE) == before


def test_output_dot_keeps_the_current_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    before = user_files(work)
    add_model(work / "m.onnx")
    before = snapshot(work)
    parent = snapshot(tmp_path)
    res = ember("compile", "m.onnx", "-o", ".", cwd=work)
    assert res.returncode == 0, res.stderr
    assert _without(snapshot(work), BUNDLE) == before
    assert _without(snapshot(tmp_path), {f"work/{f}" for f in BUNDLE}) == parent
    res = ember("run", ".", "--input", f"x={_npy(work, np.ones((2, 3), np.float32))}", cwd=work)
    assert res.returncode == 0, res.stderr  # config.json next to the bundle is not mistaken for its manifest


def test_empty_output_is_refused(tmp_path: Path) -> None:
    before = user_files(tmp_path)
    add_model(tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    line = one_error_line(ember("compile", "m.onnx", "-o", "", cwd=tmp_path))
    assert "output directory must not be empty" in line
    assert snapshot(tmp_path) == before


def test_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    (tmp_path / "f").write_text("mine")
    line = one_error_line(ember("compile", str(model), "-o", str(tmp_path / "f")))
    assert "not a directory" in line and (tmp_path / "f").read_text() == "mine"


def test_files_named_like_the_bundle_but_not_ours_are_not_overwritten(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    out.mkdir()
    (out / "m.c").write_text("my own m.c\n")
    before = snapshot(out)
    line = one_error_line(ember("compile", str(model), "-o", str(out)))
    assert "m.c" in line and "not part of an ember bundle" in line
    assert snapshot(out) == before
    (out / "m.json").write_text('{"name": "m"}\n')  # a JSON file, but not an ember manifest
    before = snapshot(out)
    one_error_line(ember("compile", str(model), "-o", str(out)))
    assert snapshot(out) == before


def test_two_bundles_share_a_directory(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    assert ember("compile", str(model), "-o", str(out)).returncode == 0
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    assert ember("run", str(out), "--input", f"x={x}").returncode == 0  # links m.<hash>.so into out
    libs = sorted(p.name for p in out.glob("m.*.so"))
    assert len(libs) == 1
    first = snapshot(out)
    res = ember("compile", str(model), "-o", str(out), "--name", "other")
    assert res.returncode == 0, res.stderr
    assert _without(snapshot(out), {f"other{s}" for s in (".c", ".h", ".o", ".weights.bin", ".weights.txt",
                                                           ".json")}) == first
    line = one_error_line(ember("run", str(out), "--input", f"x={x}"))
    assert "2 bundles" in line and "m" in line and "other" in line
    res = ember("run", str(out / "other.json"), "--input", f"x={x}")
    assert res.returncode == 0, res.stderr
    # Recompiling m with another input shape replaces m's files and drops its stale library, not other's.
    add_model(tmp_path / "m.onnx", (1, 3))
    res = ember("compile", str(model), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert json.loads((out / "m.json").read_text())["inputs"][0]["shape"] == [1, 3]
    assert not (out / libs[0]).exists()
    assert any(p.name.startswith("other.") and p.suffix == ".so" for p in out.iterdir())


@pytest.mark.parametrize("name", ["../x", "/tmp/ember_abs_name", "x*/y", "n" * 300, "main", "int", "a b", "9lives",
                                  "", "_x", "size_t", "ember_net", "GLOW", "while"])
def test_bad_network_names_are_refused_before_anything_is_written(tmp_path: Path, name: str) -> None:
    model = add_model(tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    line = one_error_line(ember("compile", str(model), "-o", str(tmp_path / "out"), "--name", name))
    assert "--name" in line
    assert snapshot(tmp_path) == before
    assert not Path("/tmp/ember_abs_name.c").exists()


def test_network_name_rules() -> None:
    for good in ("lenet", "net_9", "Model2", "x" * 64):
        assert network_name_problem(good) is None, good
    assert network_name_problem("x" * 65)
    for stem in ("9lives", "main", "int", "a b", "../x", "x*/y", "n" * 300, "", "ember", "size_t", "-", "lenet-5"):
        derived = network_name(stem)
        assert network_name_problem(derived) is None, (stem, derived)
    assert network_name("lenet-5") == "lenet_5"


def test_default_name_from_an_awkward_file_name(tmp_path: Path) -> None:
    model = add_model(tmp_path / "9 lives.onnx")
    res = ember("compile", str(model), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "out" / "net_9_lives.json").read_text())["name"] == "net_9_lives"


def test_failed_compile_leaves_no_output_directory(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    one_error_line(ember("compile", str(model), "-o", str(tmp_path / "a" / "b"), "--cc", "false"))
    assert snapshot(tmp_path) == before


def test_dump_graph_into_a_missing_directory(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    line = one_error_line(ember("compile", str(model), "-o", str(tmp_path / "out"), "--dump-graph",
                               str(tmp_path / "nope" / "g.dot")))
    assert "--dump-graph" in line and "no such directory" in line
    assert snapshot(tmp_path) == before


def _npy(folder: Path, arr: np.ndarray, name: str = "x.npy") -> Path:
    np.save(folder / name, arr)
    return folder / name
