"""One PyTorch model exported at every opset from 11 to 20: ember honours each version's semantics.

Older opsets spell the same network differently (LayerNorm and GELU decomposed into ReduceMean/Pow/
Erf, axes as attributes instead of inputs, Split/Squeeze/Unsqueeze forms, Clip attributes), so this
catches version handling that a single-opset model would miss.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from tests.support.models import assert_close, onnxruntime_outputs


def _model():
    import torch

    nn = torch.nn

    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8 * 4 * 4, 32)
            self.ln = nn.LayerNorm(32)
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            x = nn.functional.relu6(self.bn(self.conv(x)))
            x = nn.functional.max_pool2d(x, 2)
            x = x.view(x.size(0), -1)  # Shape -> Gather -> Unsqueeze -> Concat -> Reshape
            x = nn.functional.gelu(self.ln(self.fc(x)))
            a, b = x.split(16, dim=1)
            x = a * torch.sigmoid(b) + x.mean(dim=1, keepdim=True)
            return torch.softmax(self.head(x.unsqueeze(1)).squeeze(1), dim=-1)

    torch.manual_seed(0)
    m = _model_eval(Mixed())
    return m


def _model_eval(m):
    import torch

    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.2, 0.2)
        m.bn.running_var.uniform_(0.5, 1.5)
    return m.eval()


@pytest.mark.parametrize("opset", [11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
def test_every_opset_matches_onnxruntime(opset: int, tmp_path: Path) -> None:
    import torch

    model = _model()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    path = tmp_path / f"mixed_op{opset}.onnx"
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=opset,
                          input_names=["input"], output_names=["prob"],
                          dynamic_axes={"input": {0: "batch"}, "prob": {0: "batch"}})
    bundle = ember.compile(path, tmp_path / "b", defines={"batch": 2})
    feeds = {"input": x.numpy()}
    ref = onnxruntime_outputs(path, feeds)["prob"]
    got = bundle.run(feeds)["prob"]
    assert_close(got, ref, f"opset {opset}")
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)
