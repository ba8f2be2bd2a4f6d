"""Accuracy on real data (issue 5): a small CNN trained here on scikit-learn's digits, profiled on training
images saved as PNG, compiled to int8 with each schema; test top-1 within 1.0 point of the float bundle's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember.cli import main
from ember.quant.schema import SCHEMAS
from ember.reference import onnxruntime_session
from tests.support.cache import locked, shared_root


def _train(folder: Path) -> None:
    import torch  # imported here: collecting the tests should not pay for it
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]  # 1797 x 1 x 8 x 8 in [0, 1]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    test, train = order[: len(x) * 3 // 10], order[len(x) * 3 // 10 :]
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny batches: threads only contend with the other test worker
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    xt, yt = torch.from_numpy(x[train]), torch.from_numpy(y[train])
    for _ in range(12):
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            batch = perm[i : i + 64]
            opt.zero_grad()
            nn.functional.cross_entropy(net(xt[batch]), yt[batch]).backward()
            opt.step()
    torch.set_num_threads(threads)
    net.eval()
    model = folder / "digits.onnx"
    torch.onnx.export(net, torch.zeros(1, 1, 8, 8), str(model), input_names=["image"], output_names=["logits"],
                      opset_version=17, dynamo=False)
    import onnx

    m = onnx.load(model)
    m.ir_version = 8
    onnx.save(m, model)
    images = folder / "calibration"
    images.mkdir(exist_ok=True)
    for i in train[:100]:  # the workflow: profile on real images
        Image.fromarray(np.rint(x[i, 0] * 255).astype(np.uint8)).save(images / f"{i:04d}.png")
    profile = folder / "profile.yaml"
    assert main(["profile", str(model), str(images), "-o", str(profile), "--image-mode", "0to1"]) == 0
    np.savez(folder / "test.npz", x=x[test], y=y[test])


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Trained, exported and profiled once per test run (the xdist workers share it)."""
    shared = shared_root(tmp_path_factory.getbasetemp())
    folder = shared / "digits"
    with locked(shared, "digits"):
        if not (folder / ".complete").exists():
            folder.mkdir(parents=True, exist_ok=True)
            _train(folder)
            (folder / ".complete").touch()
    test = np.load(folder / "test.npz")
    return {"model": folder / "digits.onnx", "profile": folder / "profile.yaml", "x": test["x"], "y": test["y"],
            "folder": tmp_path_factory.mktemp("digits_bundles")}


def _predict(bundle: ember.Bundle, x: np.ndarray) -> np.ndarray:
    runner = bundle.runner({"image": x[:1]})
    off = bundle.inputs[0]["offset"]
    out = []
    for sample in x:
        runner.mutable[off : off + sample.nbytes] = sample.reshape(-1).view(np.uint8)
        out.append(runner()["logits"][0])
    return np.array(out)


@pytest.fixture(scope="module")
def float_accuracy(digits: dict[str, Any]) -> float:
    bundle = ember.compile(digits["model"], digits["folder"] / "float")
    logits = _predict(bundle, digits["x"])

    sess = onnxruntime_session(str(digits["model"]))
    ref = np.concatenate([sess.run(None, {"image": s[None]})[0] for s in digits["x"]])
    span = ref.max() - ref.min()
    assert np.abs(logits - ref).max() <= 1e-4 * span  # the float bundle matches onnxruntime
    assert (logits.argmax(1) == ref.argmax(1)).all()
    accuracy = 100.0 * float((logits.argmax(1) == digits["y"]).mean())
    assert accuracy >= 90.0, "the float model did not train"
    return accuracy


def _int8_accuracy(digits: dict[str, Any], **options: Any) -> float:
    key = "-".join(f"{v}" for v in options.values())
    # -O1: the same results as the default -O3 (no fast-math), compiled three times faster.
    bundle = ember.compile(digits["model"], digits["folder"] / key, quantize="int8",
                           profile=str(digits["profile"]), opt_level=1, **options)
    return 100.0 * float((_predict(bundle, digits["x"]).argmax(1) == digits["y"]).mean())


@pytest.mark.parametrize("schema", SCHEMAS)
def test_int8_accuracy_per_schema(digits: dict[str, Any], float_accuracy: float, schema: str) -> None:
    accuracy = _int8_accuracy(digits, schema=schema)
    print(f"digits top-1: float {float_accuracy:.2f}%, int8 {schema} minmax {accuracy:.2f}%")
    assert abs(accuracy - float_accuracy) <= 1.0


@pytest.mark.parametrize("calibration", ["percentile", "kl", "mse"])
def test_int8_accuracy_per_calibration(digits: dict[str, Any], float_accuracy: float, calibration: str) -> None:
    accuracy = _int8_accuracy(digits, schema="asymmetric", calibration=calibration)
    print(f"digits top-1: float {float_accuracy:.2f}%, int8 asymmetric {calibration} {accuracy:.2f}%")
    assert abs(accuracy - float_accuracy) <= 1.0
