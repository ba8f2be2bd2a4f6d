"""Bundle.runner: a quick bundle (its first run under QUICK_RUN_S) is called with the GIL held and no lock;
a slow one through the lock, releasing the GIL. Both give Bundle.run's outputs, also from several threads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import ember
from ember.runtime import loader
from tests.cli.helpers import save_model


@pytest.mark.parametrize("quick", [True, False])
def test_runner_quick_and_slow_calls_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick: bool) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 64]) for n in ("x", "y")]
    bundle = ember.compile(save_model(tmp_path / "m.onnx", nodes, vi[:1], vi[1:]), tmp_path / "b")
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    want = bundle.run({"x": x})["y"]
    if not quick:
        monkeypatch.setattr(loader, "QUICK_RUN_S", 0.0)
    runner = bundle.runner({"x": x})
    assert (runner.held is not None) == quick
    errors: list[str] = []

    def calls() -> None:
        for _ in range(50):
            runner.run_once()
            if not np.array_equal(runner()["y"], want):
                errors.append("wrong")

    threads = [threading.Thread(target=calls) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    runner.run_once()
    np.testing.assert_array_equal(runner.outputs()["y"], want)
