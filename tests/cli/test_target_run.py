"""`ember run/validate/bench --target T`: bundles run on their target (a microcontroller board under
qemu-system, a Linux target under qemu-user, wasm32 in wasmtime) from the commands a host user types,
with the same data vocabulary; outputs match the host bundle and the reference (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from ember.cli import main
from ember.runtime.targets import missing_tools
from tests.cross import require_tools
from tests.support.cache import ArtifactCache
from tests.support.models import assert_close

from .helpers import save_model
from .test_data_inputs import SHAPE, _digits


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def lenet_data(artifacts: ArtifactCache, tmp_path_factory) -> Path:
    """Two samples for the test zoo's LeNet (its only input), stacked along a first axis."""
    (entry,) = artifacts.bundle("lenet").inputs
    path = tmp_path_factory.mktemp("lenet") / "x.npy"
    np.save(path, np.random.default_rng(3).standard_normal((2, *entry["shape"])).astype(np.float32))
    return path


@pytest.mark.parametrize("target", ["cortex-m4", "aarch64", "wasm32"])
def test_run_on_target_matches_host(artifacts: ArtifactCache, tmp_path: Path, capsys, lenet_data: Path,
                                    target: str) -> None:
    require_tools(target, missing_tools(target))
    host = artifacts.bundle("lenet")
    cross = artifacts.bundle("lenet", target=target)
    out = tmp_path / "o.npz"
    code, _, err = _cli(capsys, "run", str(cross.path), "--target", target, "--input", str(lenet_data),
                        "--output", str(out))
    assert code == 0, err
    (entry,), (result,) = host.inputs, host.outputs
    got = np.load(out)[result["name"]]
    assert got.shape == (2, *result["shape"])
    for k, x in enumerate(np.load(lenet_data)):
        assert_close(got[k], host.run({entry["name"]: x})[result["name"]], f"lenet on {target}, sample {k}",
                     rel=1e-4)


@pytest.mark.parametrize("target", ["cortex-m4", "aarch64", "wasm32"])
def test_validate_on_target_passes(artifacts: ArtifactCache, capsys, lenet_data: Path, target: str) -> None:
    require_tools(target, missing_tools(target))
    cross = artifacts.bundle("lenet", target=target)
    code, out, err = _cli(capsys, "validate", str(artifacts.model("lenet")), str(cross.path), "--target", target,
                          "--input", str(lenet_data))
    assert code == 0, out + err
    assert "2 sample(s)" in out and out.strip().endswith("PASS")


@pytest.mark.parametrize("target", ["aarch64", "wasm32"])
def test_bench_off_microcontrollers_times_one_run(artifacts: ArtifactCache, capsys, target: str) -> None:
    require_tools(target, missing_tools(target))
    code, out, err = _cli(capsys, "bench", str(artifacts.bundle("lenet", target=target).path), "--target", target)
    assert code == 0, err
    assert "one run" in out and "per inference" not in out, out


def test_int8_digits_on_the_board(tmp_path: Path, capsys) -> None:
    """The int8 digits classifier (float I/O): validated on cortex-m4 against onnxruntime, and its
    outputs on the board equal the host int8 bundle's bit for bit (integer kernels)."""
    require_tools("cortex-m4", missing_tools("cortex-m4"))
    model = _digits(tmp_path / "digits.onnx")
    data = tmp_path / "calib.npy"
    np.save(data, np.random.default_rng(1).random((8, *SHAPE)).astype(np.float32))
    assert main(["profile", str(model), str(data), "-o", str(tmp_path / "p.yaml")]) == 0
    for out, target in (("host", "host"), ("m4", "cortex-m4")):
        assert main(["compile", str(model), "-o", str(tmp_path / out), "--target", target, "--profile",
                     str(tmp_path / "p.yaml"), "--quantize", "int8"]) == 0
    capsys.readouterr()
    code, out, err = _cli(capsys, "validate", str(model), str(tmp_path / "m4"), "--target", "cortex-m4",
                          "--input", str(data))
    assert code == 0 and "int8 bundle, 8 sample(s)" in out, out + err
    code, _, err = _cli(capsys, "run", str(tmp_path / "m4"), "--input", str(data), "--output", str(tmp_path / "o.npz"))
    assert code == 0, err
    host = ember.load(tmp_path / "host")
    for k, x in enumerate(np.load(data)):
        np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["prob"][k], host.run({"data": x})["prob"])


def _relu(path: Path, n: int) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    return save_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])])


def _bench(tmp_path: Path, capsys, n: int, target: str) -> dict:
    model = _relu(tmp_path / f"relu{n}.onnx", n)
    out = tmp_path / f"{target}-{n}"
    hard = ["--float-abi", "hard"] if target == "riscv32" else []  # soft float: ~40 instructions a compare
    assert main(["compile", str(model), "-o", str(out), "--target", target, *hard]) == 0
    js = tmp_path / f"bench-{target}-{n}.json"
    code, text, err = _cli(capsys, "bench", str(out), "--target", target, "--json", str(js))
    assert code == 0, err
    assert "per inference" in text and "high-water" in text
    return json.loads(js.read_text())


def test_bench_counts_the_entry_point_alone(tmp_path: Path, capsys) -> None:
    """Instructions per inference cover the entry-point call only: a Relu over 1,024 floats counts far fewer
    than the firmware's boot (painting its 32 KiB stack alone is a loop of 4-5 instructions per 8,192 words,
    over 32,768 instructions) or the input copy,
    and 4x the elements take about 4x the instructions. The M33's board clocks SysTick at 20 MHz, the M4's
    at 25 MHz: the same Thumb-2 code must count alike on both (a wrong clock would scale it by 1.25);
    RISC-V (hard float) counts through minstret. Stack, flash and RAM come with it."""
    for target in ("cortex-m4", "cortex-m33", "riscv32"):
        require_tools(target, missing_tools(target))
    r = {(n, t): _bench(tmp_path, capsys, n, t) for n, t in
         ((1024, "cortex-m4"), (4096, "cortex-m4"), (1024, "cortex-m33"), (1024, "riscv32"))}
    for run in r.values():
        assert 0 < run["stack"] < 4096, run["stack"]
        assert run["firmware"]["flash"] >= run["firmware"]["text"] > 0 and run["firmware"]["ram"] > 32768
    count = {k: run["instructions"] for k, run in r.items()}
    assert all(0 < c < 16384 for (n, _), c in count.items() if n == 1024), count
    assert 3.5 < count[4096, "cortex-m4"] / count[1024, "cortex-m4"] < 4.5, count
    assert 0.9 < count[1024, "cortex-m33"] / count[1024, "cortex-m4"] < 1.1, count


def test_target_errors_are_one_line(artifacts: ArtifactCache, capsys) -> None:
    host = artifacts.bundle("lenet")
    for target, says in (("cortex-m4", "compiled for 'host', not 'cortex-m4'"), ("nosuch", "no runner for it")):
        code, _, err = _cli(capsys, "run", str(host.path), "--target", target, "--input", "x.npy")
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and says in lines[0], err
