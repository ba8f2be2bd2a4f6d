"""MLPerf-Tiny-like float models for memory-planning measurements (random weights, fixed seeds).

The shapes follow the four MLPerf Tiny reference architectures: KWS DS-CNN (49x10 MFCC), VWW MobileNetV1
alpha=0.25 at 96x96, IC ResNet-8 at 32x32 and the AD fully-connected autoencoder (640 inputs). Only their
tensor shapes matter to the planner, so they are exported untrained.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support import models as zoo


def _ds_cnn():
    nn = zoo._torch().nn

    def ds(c: int):
        return [nn.Conv2d(c, c, 3, 1, 1, groups=c), nn.BatchNorm2d(c), nn.ReLU(),
                nn.Conv2d(c, c, 1), nn.BatchNorm2d(c), nn.ReLU()]

    return nn.Sequential(nn.Conv2d(1, 64, (10, 4), 2, (5, 1)), nn.BatchNorm2d(64), nn.ReLU(),
                         *ds(64), *ds(64), *ds(64), *ds(64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 12))


def _mobilenet_v1(alpha: float = 0.25):
    nn = zoo._torch().nn
    c = [int(x * alpha) for x in (32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024)]
    strides = (2, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1)
    layers = [nn.Conv2d(3, c[0], 3, 2, 1), nn.BatchNorm2d(c[0]), nn.ReLU6()]
    for i in range(1, len(c)):
        cin, cout = c[i - 1], c[i]
        layers += [nn.Conv2d(cin, cin, 3, strides[i], 1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU6(),
                   nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU6()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c[-1], 2))


def _resnet8():
    nn = zoo._torch().nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU(),
                                      nn.Conv2d(cout, cout, 3, 1, 1), nn.BatchNorm2d(cout))
            self.skip = nn.Conv2d(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + self.skip(x))

    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(), Block(16, 16, 1),
                         Block(16, 32, 2), Block(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def _autoencoder():
    nn = zoo._torch().nn
    dims = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128)
    layers = []
    for a, b in zip(dims, dims[1:], strict=False):
        layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(128, 640))


TINY: dict[str, tuple[Callable[[Path], None], str]] = {
    "kws_dscnn": (zoo._torch_builder(_ds_cnn, (1, 1, 49, 10)), "KWS DS-CNN 49x10"),
    "vww_mobilenet": (zoo._torch_builder(_mobilenet_v1, (1, 3, 96, 96)), "VWW MobileNetV1 0.25 96x96"),
    "ic_resnet8": (zoo._torch_builder(_resnet8, (1, 3, 32, 32)), "IC ResNet-8 32x32"),
    "ad_autoencoder": (zoo._torch_builder(_autoencoder, (1, 640)), "AD autoencoder 640"),
}


def build(name: str, folder: Path) -> Path:
    return zoo.build(name, folder, TINY[name][0])
