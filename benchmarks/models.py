"""The benchmark models, built with fixed seeds: the four CNNs, the encoder of issue 4, an LSTM, a Hugging
Face BERT encoder as onnxruntime's transformer optimizer fuses it (com.microsoft Attention, SkipLayerNormalization),
and real architectures from installed packages with random weights (torchvision's EfficientNet-B0,
MobileNetV3-Large, ResNet-50 and a ViT-Tiny; transformers' BERT-base), exported by torch.onnx.

LeNet-5, MobileNetV2, ResNet-18 and the transformer encoder are the test suite's own definitions
(tests/support/models.py); ResNet-50 (bottleneck blocks, as in the paper) and the LSTM are written out here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
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
    if importlib.util.find_spec("torchvision") is not None:
        _torchvision()  # transformers imports it: a CPU torch beside PyPI's torchvision needs the workaround
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


def _torchvision():
    """torchvision, imported for its model definitions only. Beside the CPU build of torch it must be the matching
    CPU build of torchvision (0.28 for torch 2.13, from PyTorch's CPU wheel index): PyPI's wheel is built against
    CUDA torch, its C extension does not load, and importing it then fails registering fake kernels for its nms
    ops. That case is worked around here by declaring the ops first (never run: no detection model is built
    here), so that the architectures still build; `transformers` imports torchvision too, so BERT-base needs this."""
    if importlib.util.find_spec("torchvision") is None:
        raise SystemExit("benchmarks: torchvision is not installed; install the build that matches torch "
                         f"{zoo._torch().__version__} (the CPU build for a CPU torch)")
    torch = zoo._torch()
    try:
        import torchvision
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
        for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        for op in ("nms", "qnms"):
            torch.library.define(f"torchvision::{op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        import torchvision
    return torchvision


def _vit_tiny():
    """ViT-Tiny / DeiT-Tiny's shape (patch 16, 12 layers, width 192, 3 heads, MLP 768) in torchvision's ViT."""
    vit = _torchvision().models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3,
                                                  hidden_dim=192, mlp_dim=768)
    zoo._torch().nn.init.normal_(vit.heads.head.weight, std=0.02)  # torchvision starts it at zero: outputs all 0
    return vit


def _bert_base(path: Path, seq: int = 128) -> None:
    """transformers' BertModel with bert-base-uncased's configuration (12 layers, d=768, 12 heads, vocab 30522)
    and random weights, as torch.onnx exports it (attention spelled out: MatMul, Softmax); input `input_ids`
    (batch 1, `seq` tokens, every one attended), output `hidden`."""
    if importlib.util.find_spec("torchvision") is not None:
        _torchvision()  # transformers imports it: a CPU torch beside PyPI's torchvision needs the workaround
    import transformers

    torch = zoo._torch()
    config = transformers.BertConfig()
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    bert = transformers.BertModel(config, add_pooling_layer=False).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids):  # noqa: ANN001, ANN202
            # token_type_ids given: BERT's default slices a buffer through GatherElements, which ember's constant
            # folding (the ONNX reference implementation, onnx 1.23) fails on for [1, 512] data.
            return self.bert(input_ids=ids, token_type_ids=torch.zeros_like(ids)).last_hidden_state

    ids = torch.randint(0, config.vocab_size, (1, seq), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        torch.onnx.export(Encoder(), (ids,), str(path), opset_version=zoo.OPSET, dynamo=False,
                          input_names=["input_ids"], output_names=["hidden"])


def _tv(name: str):
    return lambda: getattr(_torchvision().models, name)()


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
    "efficientnet_b0": (zoo._torch_builder(_tv("efficientnet_b0"), (1, 3, 224, 224)), "torchvision EfficientNet-B0"),
    "mobilenet_v3_large": (zoo._torch_builder(_tv("mobilenet_v3_large"), (1, 3, 224, 224)),
                           "torchvision MobileNetV3-Large"),
    "resnet50_tv": (zoo._torch_builder(_tv("resnet50"), (1, 3, 224, 224)), "torchvision ResNet-50"),
    "vit_tiny": (zoo._torch_builder(_vit_tiny, (1, 3, 224, 224)), "ViT-Tiny (DeiT-Tiny shape), torchvision ViT"),
    "bert_base": (_bert_base, "BERT-base (transformers, 12 layers, d=768, seq 128), torch.onnx export"),
}


def _code(fn: object, depth: int = 0) -> str:
    """The source of a builder and of what its closure holds (the `make` of zoo._torch_builder, a model's name,
    the input shape), so a changed definition changes it; any other object by its repr."""
    if not callable(fn) or depth > 3:
        return repr(fn)
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = getattr(fn, "__qualname__", repr(fn))
    cells = getattr(fn, "__closure__", None) or ()
    return text + "".join(_code(c.cell_contents, depth + 1) for c in cells)


def recipe(name: str) -> str:
    """The model's fingerprint in a kept cache: its name, note and the code that builds it, so that an edited
    definition is exported again instead of timed from a stale file."""
    builder, note = MODELS[name]
    return f"{name} {hashlib.sha256((note + _code(builder)).encode()).hexdigest()[:16]}"


def build(name: str, folder: Path) -> Path:
    return zoo.build(name, folder, MODELS[name][0], recipe(name))
