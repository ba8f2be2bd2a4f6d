"""The four MLPerf Tiny (v1.x) reference architectures, built with fixed seeds in PyTorch and exported to ONNX.

Layer widths, kernel sizes and strides follow the reference training code (github.com/mlcommons/tiny,
benchmark/training/*): KWS DS-CNN on 49x10 MFCCs, VWW MobileNetV1 alpha=0.25 at 96x96, IC ResNet-8 at 32x32,
AD fully-connected autoencoder on 640 inputs. The weights are random (fixed seeds) and BatchNorm gets fixed-seed
statistics, not trained ones: instruction counts and memory do not depend on the values, and bit-exactness
between builds holds for any values. Calibration data for `ember profile` is fixed-seed random too.

TensorFlow's "same" padding with stride 2 pads more at the bottom/right than at the top/left; PyTorch's Conv2d
pads symmetrically, so the stride-2 layers get an explicit ZeroPad2d where the two differ (KWS's first layer),
which keeps every activation shape that of the reference. MobileNet's stride-2 3x3 layers and ResNet-8's have
the reference's output shapes with symmetric padding 1 already.

    from benchmarks.mlperf_tiny import MODELS, export
    export("kws", Path("kws.onnx"))          # float ONNX, batch 1
    calibration("kws", 8)                    # (8, *input shape) float32, fixed seed
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17


@dataclass(frozen=True)
class Spec:
    name: str
    title: str  # what the MLPerf Tiny rules call it
    shape: tuple[int, ...]  # NCHW (AD: N x 640)
    seed: int


MODELS: dict[str, Spec] = {s.name: s for s in (
    Spec("kws", "Keyword spotting: DS-CNN, 49x10 MFCC", (1, 1, 49, 10), 101),
    Spec("vww", "Visual wake words: MobileNetV1 0.25x, 96x96", (1, 3, 96, 96), 102),
    Spec("ic", "Image classification: ResNet-8, 32x32 CIFAR-10", (1, 3, 32, 32), 103),
    Spec("ad", "Anomaly detection: FC autoencoder, 640 inputs", (1, 640), 104),
)}


def _nn() -> Any:
    import torch  # lazily: importing this module must not need torch

    return torch.nn


def _bn_relu(nn: Any, c: int, dims: int = 2) -> list[Any]:
    return [nn.BatchNorm2d(c) if dims == 2 else nn.BatchNorm1d(c), nn.ReLU()]


def _kws() -> Any:
    nn = _nn()
    # Conv 10x4 stride 2 "same" on 49x10: TF pads rows 4 above / 5 below and columns 1 / 1 -> 25x5x64.
    layers = [nn.ZeroPad2d((1, 1, 4, 5)), nn.Conv2d(1, 64, (10, 4), 2), *_bn_relu(nn, 64)]
    for _ in range(4):  # four depthwise-separable blocks of 64 channels
        layers += [nn.Conv2d(64, 64, 3, 1, 1, groups=64), *_bn_relu(nn, 64), nn.Conv2d(64, 64, 1), *_bn_relu(nn, 64)]
    # The reference pools (24, 5) = (49 // 2, 10 // 2) over the 25x5 map: one output, the last row unread.
    layers += [nn.AvgPool2d((24, 5)), nn.Flatten(), nn.Linear(64, 12), nn.Softmax(-1)]
    return nn.Sequential(*layers)


def _vww() -> Any:
    nn = _nn()

    def dw_pw(cin: int, cout: int, stride: int) -> list[Any]:
        return [nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), *_bn_relu(nn, cin),
                nn.Conv2d(cin, cout, 1, bias=False), *_bn_relu(nn, cout)]

    layers = [nn.Conv2d(3, 8, 3, 2, 1, bias=False), *_bn_relu(nn, 8)]  # 32 x 0.25 filters, 96 -> 48
    plan = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2),
            *[(128, 128, 1)] * 5, (128, 256, 2), (256, 256, 1)]
    for cin, cout, stride in plan:
        layers += dw_pw(cin, cout, stride)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 2), nn.Softmax(-1)]
    return nn.Sequential(*layers)


def _ic() -> Any:
    nn = _nn()

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), *_bn_relu(nn, cout),
                                      nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout))
            self.short = nn.Identity() if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride)
            self.relu = nn.ReLU()

        def forward(self, x: Any) -> Any:
            return self.relu(self.body(x) + self.short(x))

    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), *_bn_relu(nn, 16), Block(16, 16, 1), Block(16, 32, 2),
                         Block(32, 64, 2), nn.AvgPool2d(8), nn.Flatten(), nn.Linear(64, 10), nn.Softmax(-1))


def _ad() -> Any:
    nn = _nn()
    widths = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
    layers = []
    for cin, cout in zip(widths, widths[1:], strict=False):
        layers += [nn.Linear(cin, cout), *_bn_relu(nn, cout, dims=1)]
    layers.append(nn.Linear(128, 640))
    return nn.Sequential(*layers)


_BUILD = {"kws": _kws, "vww": _vww, "ic": _ic, "ad": _ad}


def module(name: str) -> Any:
    """The model as a torch.nn.Module in eval mode, fixed-seed weights and BatchNorm statistics."""
    import torch

    spec = MODELS[name]
    torch.manual_seed(spec.seed)
    model = _BUILD[name]()
    g = torch.Generator().manual_seed(spec.seed + 1000)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d | torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)
    return model.eval()


def export(name: str, path: Path) -> Path:
    """Write the float model as ONNX (opset 17, batch 1, input 'input', output 'output'); returns `path`."""
    import warnings

    import torch

    spec = MODELS[name]
    path.parent.mkdir(parents=True, exist_ok=True)
    x = torch.from_numpy(calibration(name, 1))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module(name), (x,), str(path), input_names=["input"], output_names=["output"],
                          opset_version=OPSET, dynamo=False)
    assert spec.shape == tuple(x.shape)
    return path


def calibration(name: str, samples: int, seed: int = 11) -> np.ndarray:
    """Fixed-seed standard-normal inputs, (samples, *input shape without batch), float32."""
    shape = MODELS[name].shape[1:]
    return np.random.default_rng(seed).standard_normal((samples, *shape)).astype(np.float32)


def macs(name: str) -> int:
    """Multiply-accumulates of one inference (convolutions and fully-connected layers), for MACs/instruction."""
    import torch

    total = 0

    def hook(m: Any, inputs: Any, out: Any) -> None:
        nonlocal total
        if isinstance(m, torch.nn.Conv2d):
            total += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, torch.nn.Linear):
            total += out.numel() * m.in_features

    model = module(name)
    handles = [m.register_forward_hook(hook) for m in model.modules()]
    with torch.no_grad():
        model(torch.from_numpy(calibration(name, 1)))
    for h in handles:
        h.remove()
    return total
