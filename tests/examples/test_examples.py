"""Each example in examples/ (C, Python, Rust, Cortex-M) is copied out, built with its own build files
(Makefile, cargo) as a user would, and run on LeNet-5 from examples/make_lenet.py; what it prints must
match onnxruntime on the same input. Each builds its bundle with `ember compile` from this checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ember.reference import onnxruntime_session
from tests.cross import require_tools
from tests.support.models import assert_close

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# The fixed test pattern every example uses when given no input file.
PATTERN = (((np.arange(784) * 7) % 17) / 16.0 - 0.5).astype(np.float32).reshape(1, 1, 28, 28)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "EMBER": f"{sys.executable} -m ember.cli",
            "PYTHON": sys.executable}


def _run(cmd: list[str], cwd: Path, stderr: bool = False, **env: str) -> str:
    """stdout of the command (`stderr`: and its stderr, where QEMU prints what semihosting writes)."""
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**_env(), **env}, timeout=300)
    assert res.returncode == 0, f"$ {' '.join(cmd)} (in {cwd})\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res.stdout + (res.stderr if stderr else "")


def _reference(model: Path, x: np.ndarray) -> np.ndarray:
    return onnxruntime_session(str(model)).run(None, {"data": x})[0].reshape(-1)


def _probabilities(text: str) -> np.ndarray:
    return np.array([float(v) for v in re.findall(r"^class \d+: (\S+)$", text, re.M)], np.float32)


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    """A copy of examples/ (builds write into their own folder), and an input image as raw float32."""
    dst = tmp_path_factory.mktemp("examples") / "examples"
    shutil.copytree(EXAMPLES, dst, ignore=shutil.ignore_patterns("build", "target", "Cargo.lock", "*.onnx",
                                                                 "__pycache__"))
    np.random.default_rng(7).random((1, 1, 28, 28)).astype(np.float32).tofile(dst / "image.f32")
    return dst


@pytest.fixture(scope="module")
def c_example(examples: Path) -> Path:
    require_tools("examples/c", [] if shutil.which("make") and shutil.which("cc") else ["make and cc"])
    _run(["make", "-s"], examples / "c")
    return examples / "c"


def _image(examples: Path) -> np.ndarray:
    return np.fromfile(examples / "image.f32", np.float32).reshape(1, 1, 28, 28)


def test_c_example(c_example: Path, examples: Path) -> None:
    model = c_example / "build" / "lenet.onnx"
    for args, x in (([], PATTERN), ([str(examples / "image.f32")], _image(examples))):
        out = _run(["./build/classify", *args], c_example)
        ref = _reference(model, x)
        assert_close(_probabilities(out), ref, "examples/c", rel=1e-4)
        assert f"top-1: {int(np.argmax(ref))}" in out


def test_python_example(c_example: Path, examples: Path) -> None:
    out = _run([sys.executable, str(examples / "python" / "classify.py"), str(c_example / "build" / "lenet"),
                str(examples / "image.f32")], examples)
    top = int(np.argmax(_reference(c_example / "build" / "lenet.onnx", _image(examples))))
    assert re.findall(r"top-1 (\d+)", out) == [str(top), str(top)], out


def test_rust_example(c_example: Path, examples: Path, tmp_path: Path) -> None:
    """cargo build runs build.rs, which runs `ember compile` and links lenet.o into the program."""
    if shutil.which("cargo") is None:
        require_tools("examples/rust", ["cargo (apt-get install cargo, or https://rustup.rs)"])
    model = c_example / "build" / "lenet.onnx"
    out = _run(["cargo", "run", "-q", "--offline", "--", str(examples / "image.f32")], examples / "rust",
               EMBER_MODEL=str(model), CARGO_TARGET_DIR=str(tmp_path / "target"))
    ref = _reference(model, _image(examples))
    assert_close(_probabilities(out), ref, "examples/rust", rel=1e-4)
    assert f"top-1: {int(np.argmax(ref))}" in out


def test_cortex_m_example(examples: Path) -> None:
    missing = [f"{tool} (apt-get install {pkg})" for tool, pkg in
               (("arm-none-eabi-gcc", "gcc-arm-none-eabi"), ("qemu-system-arm", "qemu-system-arm"))
               if shutil.which(tool) is None]
    require_tools("examples/cortex-m", missing)
    folder = examples / "cortex-m"
    out = _run(["make", "-s", "run"], folder, stderr=True)
    ref = _reference(folder / "build" / "lenet.onnx", PATTERN)
    m = re.search(r"top-1: (\d+) \(probability x 1e6: (\d+)\)", out)
    assert m, out
    assert int(m[1]) == int(np.argmax(ref)) and abs(int(m[2]) - ref.max() * 1e6) <= 2, (out, ref)
