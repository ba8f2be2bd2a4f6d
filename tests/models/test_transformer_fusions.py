"""Transformers as torch.onnx writes them before opset 17 (LayerNorm and GELU spelled out elementwise):
passes/fuse_norm.py turns them back into LayerNormalization and Gelu, residual Adds into SkipLayerNormalization,
and the bundle still matches onnxruntime."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.passes.pipeline import Purpose
from tests.support import models as zoo
from tests.support.models import assert_close, onnxruntime_outputs


def _export(model, shape: tuple[int, ...], path: Path) -> None:
    torch = zoo._torch()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (torch.randn(*shape),), str(path), opset_version=16, dynamo=False,
                          input_names=["input"], output_names=["output"])


def _counts(path: Path, purpose: Purpose) -> dict[str, int]:
    graph, _, _ = build_graph(str(path), CompileOptions(), purpose, check=True)
    return graph.op_counts()


def _matches_onnxruntime(path: Path, shape: tuple[int, ...], tmp_path: Path) -> None:
    feeds = {"input": np.random.default_rng(5).standard_normal(shape).astype(np.float32)}
    got = ember.compile(path, tmp_path / "out").run(feeds)
    assert_close(got["output"], onnxruntime_outputs(path, feeds)["output"], "output")


def test_torch_encoder_at_opset_16(tmp_path: Path) -> None:
    """Two post-norm layers (tests/support/models.py's encoder): 4 LayerNorms, each after a residual Add."""
    zoo._torch().manual_seed(0)
    path = tmp_path / "encoder.onnx"
    _export(zoo._transformer(32, 2, 2, 64)(6), (1, 6, 32), path)
    ops = _counts(path, Purpose.FLOAT)
    assert ops["LayerNormalization"] == 4 and ops["Gelu"] == 2, ops
    assert not {"ReduceMean", "Erf", "Pow", "Sqrt"} & set(ops), ops
    ops = _counts(path, Purpose.BUNDLE)
    assert ops["SkipLayerNormalization"] == 4 and "LayerNormalization" not in ops, ops
    _matches_onnxruntime(path, (1, 6, 32), tmp_path)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_torch_gelu_and_layernorm_without_residual(approximate: str, tmp_path: Path) -> None:
    nn = zoo._torch().nn
    zoo._torch().manual_seed(1)
    model = nn.Sequential(nn.Linear(16, 24), nn.GELU(approximate=approximate), nn.LayerNorm(24, eps=1e-6))
    path = tmp_path / "mlp.onnx"
    _export(model, (2, 5, 16), path)
    ops = _counts(path, Purpose.FLOAT)
    assert ops.get("Gelu") == 1 and ops.get("LayerNormalization") == 1, ops
    _matches_onnxruntime(path, (2, 5, 16), tmp_path)
