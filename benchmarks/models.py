"""The benchmark models, built with fixed seeds: the four CNNs, the encoder of issue 4, an LSTM, and a Hugging
Face BERT encoder as onnxruntime's transformer optimizer fuses it (com.microsoft Attention, SkipLayerNormalization).

LeNet-5, MobileNetV2, ResNet-18 and the transformer encoder are the test suite's own definitions
(tests/support/models.py); ResNet-50 (bottleneck blocks, as in the paper) and the LSTM are written out here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support import models as zoo


def _resnet50(num_classes: int = 1000):
    nn = zoo._torch().nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + (x if self.down is None else self.down(x)))

    class ResNet50(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for i, (width, n) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
                for j in range(n):
                    blocks.append(Bottleneck(cin, width, 2 if i > 0 and j == 0 else 1))
                    cin = width * 4
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

    return ResNet50()


def _bert(path: Path) -> None:
    """BERT encoder: 4 layers, hidden 256, 4 heads, sequence 128 (tests/support/models.py)."""
    zoo.bert_fused_by_onnxruntime(path, hidden=256, layers=4, heads=4, seq=128, batch=1, vocab=1000, mask_input=False)


def _transformer_opset16(path: Path) -> None:
    """The transformer encoder as torch.onnx writes it at opset 16: LayerNorm and GELU spelled out elementwise."""
    torch = zoo._torch()
    torch.manual_seed(0)
    model = zoo._transformer(256, 4, 2, 1024)(128).eval()
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(1, 128, 256),), str(path), opset_version=16, dynamo=False,
                          input_names=["input"], output_names=["output"])


def _lstm(input_size: int = 64, hidden: int = 128, layers: int = 2):
    """nn.LSTM returning its output sequence (the exporter keeps one ONNX LSTM node per layer)."""
    nn = zoo._torch().nn

    class LSTM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(input_size, hidden, num_layers=layers)

        def forward(self, x):
            return self.lstm(x)[0]

    return LSTM()


# name -> (builder, note); BatchNorm is folded by the exporter (as users export for inference).
MODELS: dict[str, tuple[Callable[[Path], None], str]] = {
    "lenet5": (zoo._torch_builder(zoo._lenet, (1, 1, 28, 28)), "LeNet-5 28x28"),
    "mobilenet_v2": (zoo._torch_builder(lambda: zoo._mobilenet_v2(1.0), (1, 3, 224, 224)), "MobileNetV2 224"),
    "resnet18": (zoo._torch_builder(lambda: zoo._resnet18(64), (1, 3, 224, 224)), "ResNet-18 224"),
    "resnet50": (zoo._torch_builder(_resnet50, (1, 3, 224, 224)), "ResNet-50 224"),
    "transformer": (zoo._torch_builder(lambda: zoo._transformer(256, 4, 2, 1024)(128), (1, 128, 256)),
                    "transformer encoder (2 layers, d=256, 4 heads, seq 128)"),
    "transformer16": (_transformer_opset16, "the transformer encoder exported at opset 16 (no LayerNorm op)"),
    "lstm": (zoo._torch_builder(_lstm, (100, 1, 64)), "LSTM (2 layers, hidden 128, input 64, seq 100, batch 1)"),
    "bert": (_bert, "BERT encoder (4 layers, d=256, 4 heads, seq 128) fused by onnxruntime's optimizer"),
}


def build(name: str, folder: Path) -> Path:
    return zoo.build(name, folder, MODELS[name][0])
