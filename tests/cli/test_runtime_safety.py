"""`ember run`/`info` and the Python runtime: damaged bundles and bad inputs are one-line errors, found
before anything is allocated; dtypes are never converted silently; threads get their own right answers."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from ember.errors import BundleError
from ember.runtime.loader import load
from tests.cli.helpers import add_model, one_error_line, save_model
from tests.cli.helpers import ember as run_ember

OFFSET = np.arange(3, dtype=np.float32)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rt")
    ember.compile(add_model(root / "m.onnx"), root / "b")
    return root / "b"


@pytest.fixture
def bundle(built: Path, tmp_path: Path) -> Path:
    """A private copy to damage."""
    return Path(shutil.copytree(built, tmp_path / "b"))


def _npy(tmp_path: Path, arr: np.ndarray, name: str = "x.npy") -> str:
    np.save(tmp_path / name, arr)
    return str(tmp_path / name)


def test_empty_npy_and_dev_null(bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "empty.npy").write_bytes(b"")
    for path in (str(tmp_path / "empty.npy"), "/dev/null"):
        line = one_error_line(run_ember("run", str(bundle), "--input", f"x={path}"))
        assert path in line and ".npy" in line


def test_output_into_a_missing_directory(bundle: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    missing = str(tmp_path / "no" / "o.npz")
    line = one_error_line(run_ember("run", str(bundle), "--input", f"x={x}", "--output", missing))
    assert "--output" in line and "no such directory" in line


def test_huge_planned_buffers_fail_cleanly_after_the_inputs_are_checked(bundle: Path, tmp_path: Path) -> None:
    m = json.loads((bundle / "m.json").read_text())
    m["memory"]["activations"] = 1 << 48  # 256 TiB
    (bundle / "m.json").write_text(json.dumps(m))
    x = _npy(tmp_path, np.ones((2, 4), np.float32))
    line = one_error_line(run_ember("run", str(bundle), "--input", f"x={x}"))
    assert "shape [2, 4]" in line  # the input is wrong: said before any allocation is tried
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    line = one_error_line(run_ember("run", str(bundle), "--input", f"x={x}"))
    assert "cannot allocate the activations region" in line


def test_truncated_manifest(bundle: Path, tmp_path: Path) -> None:
    text = (bundle / "m.json").read_text()
    (bundle / "m.json").write_text(text[: len(text) // 2])
    for cmd in ("info", "run"):
        line = one_error_line(run_ember(cmd, str(bundle), "--input", "x=/dev/null") if cmd == "run"
                              else run_ember(cmd, str(bundle)))
        assert "m.json" in line and "manifest" in line


def test_manifest_missing_a_field(bundle: Path) -> None:
    m = json.loads((bundle / "m.json").read_text())
    del m["outputs"][0]["offset"]
    (bundle / "m.json").write_text(json.dumps(m))
    line = one_error_line(run_ember("info", str(bundle)))
    assert "offset" in line


def test_short_weights(bundle: Path, tmp_path: Path) -> None:
    w = bundle / "m.weights.bin"
    w.write_bytes(w.read_bytes()[:5])
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    line = one_error_line(run_ember("run", str(bundle), "--input", f"x={x}"))
    assert "m.weights.bin" in line and "truncated" in line


def test_out_of_range_offset(bundle: Path, tmp_path: Path) -> None:
    m = json.loads((bundle / "m.json").read_text())
    m["outputs"][0]["offset"] = m["memory"]["mutable"]
    (bundle / "m.json").write_text(json.dumps(m))
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    line = one_error_line(run_ember("run", str(bundle), "--input", f"x={x}"))
    assert "outputs 'y'" in line and "outside the mutable region" in line


def test_run_with_none_or_wrong_types(built: Path) -> None:
    b = load(built)
    with pytest.raises(BundleError, match="dict of arrays"):
        b.run(None)  # type: ignore[arg-type]
    with pytest.raises(BundleError, match="dtype int32, the bundle expects float32"):
        b.run({"x": np.ones((2, 3), np.int32)})
    with pytest.raises(BundleError, match="dtype float64"):
        b.run({"x": np.ones((2, 3))})
    got = b.run({"x": np.ones((2, 3), np.int32)}, cast=True)["y"]
    np.testing.assert_array_equal(got, 1 + OFFSET + np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_cli_refuses_other_dtypes_unless_cast(built: Path, tmp_path: Path, dtype) -> None:
    x = _npy(tmp_path, np.ones((2, 3), dtype))
    line = one_error_line(run_ember("run", str(built), "--input", f"x={x}"))
    assert "'x'" in line and np.dtype(dtype).name in line and "float32" in line and "--cast" in line
    res = run_ember("run", str(built), "--input", f"x={x}", "--cast", "--output", str(tmp_path / "o.npz"))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["y"], np.ones((2, 3), np.float32) + OFFSET)


def test_repeated_input_and_bad_numbers(built: Path, tmp_path: Path) -> None:
    x = _npy(tmp_path, np.ones((2, 3), np.float32))
    line = one_error_line(run_ember("run", str(built), "--input", f"x={x}", "--input", f"x={x}"))
    assert "--input x given twice" in line
    line = one_error_line(run_ember("run", str(built), "--input", f"x={x}", "--top-k", "-3"))
    assert "--top-k -3" in line
    res = run_ember("run", str(built), "--input", f"x={x}", "--top-k", "2")
    assert res.returncode == 0 and "top-2" in res.stdout and "top--" not in res.stdout
    line = one_error_line(run_ember("bench", str(built), "--rounds", "-1"))
    assert "--rounds -1" in line
    line = one_error_line(run_ember("validate", str(built / ".." / "m.onnx"), str(built), "--max-error", "-1"))
    assert "--max-error" in line


def test_debug_shows_the_traceback(built: Path) -> None:
    res = run_ember("--debug", "run", str(built), "--input", "x=/dev/null")
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_threads_share_a_bundle_and_a_runner(tmp_path: Path) -> None:
    # Softmax/Transpose chain: the planner reuses activation slots, so two unsynchronised runs on one set of
    # regions overwrite each other's intermediates (this test fails without Runner's lock).
    nodes = [helper.make_node("Softmax", ["x"], ["a"], axis=1), helper.make_node("Transpose", ["a"], ["b"]),
             helper.make_node("Softmax", ["b"], ["c"], axis=1), helper.make_node("Transpose", ["c"], ["d"]),
             helper.make_node("Softmax", ["d"], ["y"], axis=1)]
    shape = [256, 512]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("x", "y")]
    b = ember.compile(save_model(tmp_path / "chain.onnx", nodes, vi[:1], vi[1:]), tmp_path / "b")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(6)]
    refs = [b.run({"x": x})["y"] for x in xs]
    errors: list[str] = []

    def by_run(i: int) -> None:  # Bundle.run: each call its own regions
        for _ in range(20):
            if not np.array_equal(b.run({"x": xs[i]})["y"], refs[i]):
                errors.append("run")

    runner = b.runner({"x": xs[0]})

    def by_runner() -> None:  # one Runner shared: calls take turns
        for _ in range(40):
            if not np.array_equal(runner()["y"], refs[0]):
                errors.append("runner")

    threads = [threading.Thread(target=by_run, args=(i,)) for i in range(len(xs))]
    threads += [threading.Thread(target=by_runner) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, f"{len(errors)} wrong outputs ({sorted(set(errors))})"
