"""Seeded model builders for the end-to-end tests: PyTorch exports and hand-built ONNX graphs.

Every builder is deterministic (fixed seeds), so a model file can be cached and the same bytes
come back on every machine. Architectures are written out here (torchvision is not a dependency).
`build(name, folder)` writes `folder/NAME.onnx` once (atomically, so parallel test workers can
share a cache folder) and returns its path.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ember.reference import onnxruntime_session

OPSET = 17  # LayerNormalization exists from 17; every runtime we compare with supports it


# ----------------------------------------------------------------------------- PyTorch models
def _torch():
    import torch  # imported lazily: hand-built models must not need torch

    return torch


def _randomize_batchnorm(model) -> None:
    """Give BatchNorm non-trivial statistics so that folding it into Conv is really exercised."""
    torch = _torch()
    g = torch.Generator().manual_seed(1234)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


def _lenet():
    nn = _torch().nn

    class LeNet5(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Conv2d(1, 6, 5, padding=2)
            self.c3 = nn.Conv2d(6, 16, 5)
            self.f5 = nn.Linear(16 * 5 * 5, 120)
            self.f6 = nn.Linear(120, 84)
            self.f7 = nn.Linear(84, 10)
            self.pool = nn.MaxPool2d(2)
            self.relu = nn.ReLU()

        def forward(self, x):
            x = self.pool(self.relu(self.c1(x)))
            x = self.pool(self.relu(self.c3(x)))
            # view(size(0), -1): with a symbolic batch this exports Shape/Gather/Concat/Reshape
            x = x.view(x.size(0), -1)
            x = self.relu(self.f5(x))
            x = self.relu(self.f6(x))
            return self.f7(x)

    return LeNet5()


def _conv_bn(nn, cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _mobilenet_v2(width: float, num_classes: int = 1000):
    nn = _torch().nn

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            layers = [] if expand == 1 else [_conv_bn(nn, cin, hidden, 1, 1)]
            layers += [_conv_bn(nn, hidden, hidden, 3, stride, groups=hidden),
                       _conv_bn(nn, hidden, cout, 1, 1, act=False)]
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        # (expansion t, channels c, repeats n, first stride s), as in the paper's table 2
        SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                    (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))

        def __init__(self) -> None:
            super().__init__()
            cin = _make_divisible(32 * width)
            last = _make_divisible(1280 * max(1.0, width))
            layers = [_conv_bn(nn, 3, cin, 3, 2)]
            for t, c, n, s in self.SETTINGS:
                cout = _make_divisible(c * width)
                for i in range(n):
                    layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                    cin = cout
            layers.append(_conv_bn(nn, cin, last, 1, 1))
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(last, num_classes)

        def forward(self, x):
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.classifier(x)

    return MobileNetV2()


def _resnet18(base: int, num_classes: int = 1000):
    nn = _torch().nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], base
            for i, cout in enumerate((base, base * 2, base * 4, base * 8)):
                stride = 1 if i == 0 else 2
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))

    return ResNet18()


def _transformer(d_model: int, heads: int, layers: int, ffn: int):
    torch = _torch()
    nn = torch.nn

    class SelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
            self.proj = nn.Linear(d_model, d_model)
            self.dh = d_model // heads

        def forward(self, x):
            b, s, d = x.shape
            q = self.q(x).view(b, s, heads, self.dh).transpose(1, 2)
            k = self.k(x).view(b, s, heads, self.dh).transpose(1, 2)
            v = self.v(x).view(b, s, heads, self.dh).transpose(1, 2)
            att = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / self.dh**0.5), dim=-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, s, d))

    class EncoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = SelfAttention()
            self.ln1 = nn.LayerNorm(d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.ff = nn.Sequential(nn.Linear(d_model, ffn), nn.GELU(), nn.Linear(ffn, d_model))

        def forward(self, x):
            x = self.ln1(x + self.attn(x))  # post-norm, as nn.TransformerEncoderLayer's default
            return self.ln2(x + self.ff(x))

    class Encoder(nn.Module):
        def __init__(self, seq: int) -> None:
            super().__init__()
            self.pos = nn.Parameter(torch.randn(1, seq, d_model) * 0.1)
            self.layers = nn.Sequential(*(EncoderLayer() for _ in range(layers)))

        def forward(self, x):
            return self.layers(x + self.pos)

    return Encoder


def _export(model, shape: tuple[int, ...], path: Path, *, keep_batchnorm: bool = False,
            dynamic_batch: bool = False, dynamo: bool = False) -> None:
    torch = _torch()
    model.eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(7))
    kwargs: dict = {"input_names": ["input"], "output_names": ["output"], "opset_version": OPSET}
    if dynamo:
        torch.onnx.export(model, (x,), str(path), dynamo=True, **kwargs)
        return
    if keep_batchnorm:
        # PRESERVE keeps BatchNormalization nodes (EVAL would fuse them into Conv in the exporter),
        # so ember's own BatchNorm handling is what gets tested.
        kwargs["training"] = torch.onnx.TrainingMode.PRESERVE
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"input": {0: "batch"}, "output": {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        # PRESERVE on a model in eval mode is what we mean; the exporter's advice is for training.
        warnings.simplefilter("ignore", UserWarning)
        torch.onnx.export(model, (x,), str(path), dynamo=False, **kwargs)


def _torch_builder(make: Callable[[], object], shape: tuple[int, ...], **export_kw) -> Callable[[Path], None]:
    def build(path: Path) -> None:
        torch = _torch()
        torch.manual_seed(0)
        model = make()
        _randomize_batchnorm(model)
        _export(model, shape, path, **export_kw)

    return build


# ----------------------------------------------------------------------------- onnx.helper models
def _rng() -> np.random.Generator:
    return np.random.default_rng(42)


def _finish(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ember-tests")
    model.ir_version = 8  # readable by every onnxruntime we compare with
    onnx.checker.check_model(model, full_check=True)
    return model


def _mlp(path: Path) -> None:
    """Gemm + Relu + Gemm + Softmax, weights as initializers."""
    r = _rng()
    w1 = numpy_helper.from_array((r.standard_normal((128, 64)) * 0.2).astype(np.float32), "w1")
    b1 = numpy_helper.from_array((r.standard_normal(128) * 0.1).astype(np.float32), "b1")
    w2 = numpy_helper.from_array((r.standard_normal((10, 128)) * 0.2).astype(np.float32), "w2")
    b2 = numpy_helper.from_array((r.standard_normal(10) * 0.1).astype(np.float32), "b2")
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
        helper.make_node("Gemm", ["hr", "w2", "b2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], [w1, w2, b1, b2])
    onnx.save(_finish(g), str(path))


def _constant_nodes(path: Path) -> None:
    """A small CNN whose every weight is a `Constant` node (no initializers at all)."""
    r = _rng()

    def const(name: str, arr: np.ndarray) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], name=f"const_{name}",
                                value=numpy_helper.from_array(arr.astype(np.float32), name))

    nodes = [
        const("cw", r.standard_normal((8, 3, 3, 3)) * 0.3),
        const("cb", r.standard_normal(8) * 0.1),
        const("fw", r.standard_normal((8, 5)) * 0.3),
        const("fb", r.standard_normal(5) * 0.1),
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["cr"], name="relu"),
        helper.make_node("GlobalAveragePool", ["cr"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["fl"], name="flatten", axis=1),
        helper.make_node("MatMul", ["fl", "fw"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "fb"], ["y"], name="bias"),
    ]
    g = helper.make_graph(nodes, "constant_nodes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])])
    onnx.save(_finish(g), str(path))


def _external_data(path: Path) -> None:
    """LeNet-5 re-saved with every initializer in one external data file beside the model."""
    tmp = path.with_suffix(".inline.onnx")
    _torch_builder(_lenet, (1, 1, 28, 28))(tmp)
    model = onnx.load(str(tmp))
    tmp.unlink()
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location=f"{path.stem}.data", size_threshold=0)


# ----------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class ModelSpec:
    name: str
    build: Callable[[Path], None]
    defines: dict[str, int] = field(default_factory=dict)
    # Smaller variant of the same architecture for the sanitizer runs (ASan/UBSan is ~5x slower).
    small: str | None = None
    note: str = ""


_SPECS = [
    ModelSpec("lenet", _torch_builder(_lenet, (1, 1, 28, 28))),
    ModelSpec("lenet_batch", _torch_builder(_lenet, (2, 1, 28, 28), dynamic_batch=True), {"batch": 2},
              note="symbolic batch dimension, compiled with defines={'batch': 2}"),
    ModelSpec("lenet_external", _external_data, note="initializers in an external data file"),
    ModelSpec("mobilenet_v2", _torch_builder(lambda: _mobilenet_v2(1.0), (1, 3, 224, 224)),
              small="mobilenet_v2_small"),
    ModelSpec("mobilenet_v2_small", _torch_builder(lambda: _mobilenet_v2(0.35, 16), (1, 3, 64, 64)),
              note="width 0.35, 64x64 input, 16 classes"),
    ModelSpec("resnet18", _torch_builder(lambda: _resnet18(64), (1, 3, 224, 224), keep_batchnorm=True),
              small="resnet18_small"),
    ModelSpec("resnet18_small", _torch_builder(lambda: _resnet18(16, 16), (1, 3, 64, 64), keep_batchnorm=True),
              note="base width 16, 64x64 input, 16 classes"),
    ModelSpec("transformer", _torch_builder(lambda: _transformer(128, 4, 2, 256)(32), (1, 32, 128))),
    ModelSpec("mlp", _mlp),
    ModelSpec("constant_nodes", _constant_nodes),
]
SPECS: dict[str, ModelSpec] = {s.name: s for s in _SPECS}


def dynamo_builder(path: Path) -> None:
    """LeNet-5 through the torch.export-based exporter (needs the onnxscript package)."""
    torch = _torch()
    torch.manual_seed(0)
    _export(_lenet(), (1, 1, 28, 28), path, dynamo=True)


def build(name: str, folder: Path, builder: Callable[[Path], None] | None = None, recipe: str | None = None) -> Path:
    """Write folder/NAME.onnx once; parallel callers wait on a lock and reuse the file. With a `recipe` (a
    fingerprint of how the model is made), a file stamped with another recipe is built again: folders kept across
    runs (the benchmarks' cache) never serve a model of another definition. A file from before stamps (none beside
    it) is built again too, but kept, unstamped, where that cannot run (a package the builder needs is missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.onnx"
    stamp = folder / f".{name}.recipe"
    with open(folder / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stale = recipe is not None and path.exists() and (not stamp.exists() or stamp.read_text() != recipe)
        if not path.exists() or stale:
            sub = folder / f".{name}.building"
            shutil.rmtree(sub, ignore_errors=True)
            sub.mkdir()
            try:
                (builder or SPECS[name].build)(sub / path.name)
            except (ImportError, SystemExit) as e:
                shutil.rmtree(sub, ignore_errors=True)
                if not (stale and not stamp.exists()):
                    raise
                print(f"note: {path} kept as it is (from before recipe stamps; rebuilding it failed: {e})",
                      file=sys.stderr)
                return path
            for f in sorted(sub.iterdir()):  # the model last: its presence means "complete"
                if f.name != path.name:
                    os.replace(f, folder / f.name)
            os.replace(sub / path.name, path)
            sub.rmdir()
            if recipe is not None:
                stamp.write_text(recipe)
    return path


# ----------------------------------------------------------------------------- inputs / reference
_NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64,
          TensorProto.INT32: np.int32, TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def input_specs(path: Path, defines: dict[str, int] | None = None) -> dict[str, tuple[tuple[int, ...], type]]:
    """The graph's run-time inputs (not initializers) with symbolic dims resolved by `defines`."""
    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    specs = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else (defines or {})[d.dim_param]
                     for d in tt.shape.dim)
        specs[vi.name] = (dims, _NP_OF[tt.elem_type])
    return specs


def random_inputs(path: Path, defines: dict[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dt) in input_specs(path, defines).items():
        if np.issubdtype(dt, np.floating):
            out[name] = rng.standard_normal(shape).astype(dt)
        else:
            out[name] = rng.integers(0, 10, shape).astype(dt)
    return out


def onnxruntime_outputs(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # the tests run two workers on two cores
    sess = onnxruntime_session(str(path), opts)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, inputs), strict=True))


def reference_outputs(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The ONNX reference implementation's outputs: the spec, where onnxruntime's fused integer kernels round
    otherwise (onnxruntime 1.32 is a few int8 steps off it on per-channel QDQ and dynamic quantization).
    Quantization ops of opsets the reference no longer implements (13, 14) run as opset 21's, which compute
    the same for int8/uint8 with per-tensor or per-axis scales."""
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(str(path))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < 19:
            o.version = 21
    ref = ReferenceEvaluator(model)
    return dict(zip(ref.output_names, ref.run(None, inputs), strict=True))


def assert_close(got: np.ndarray, ref: np.ndarray, what: str, rel: float = 1e-4) -> None:
    """The issue's criterion: max abs error <= rel * (max - min) of the reference output."""
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != reference {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype} != reference {ref.dtype}"
    span = float(ref.max() - ref.min()) if ref.size else 0.0
    err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
    tol = rel * span if span > 0 else 1e-6
    assert err <= tol, f"{what}: max abs error {err:.3g} > {tol:.3g} (= {rel} x output range {span:.4g})"


def assert_bundle_matches(bundle, model: Path, x: dict[str, np.ndarray], names: list[str], work: Path,
                          what: str) -> None:
    """The bundle's outputs `names` as onnxruntime's on `model`, in-process and as the sanitized C driver (in
    `work`)."""
    from tests.support import cdriver

    ref, got = onnxruntime_outputs(model, x), bundle.run(x)
    sanitized = cdriver.run(bundle.path, work, x, sanitize=True)
    for name in names:
        assert_close(got[name], ref[name], f"{what} {name}")
        assert_close(sanitized[name], ref[name], f"{what} {name} (sanitized C driver)")


def assert_threads_match(serial, threaded, x: dict[str, np.ndarray], names: list[str], work: Path,
                         what: str) -> None:
    """A 2-thread bundle's outputs `names` as its 1-thread build's (within 1e-5 of the range), in-process and as the
    sanitized C driver with its thread pool (in `work`)."""
    from tests.support import cdriver

    want, got = serial.run(x), threaded.run(x)
    sanitized = cdriver.run(threaded.path, work, x, sanitize=True, cflags=("-pthread",))
    for name in names:
        assert_close(got[name], want[name], f"{what} {name}: 2 threads vs 1", rel=1e-5)
        assert_close(sanitized[name], want[name], f"{what} {name}: sanitized C driver, 2 threads", rel=1e-5)


def assert_outputs_match(got: dict[str, np.ndarray], want: dict[str, np.ndarray], *, rtol: float = 1e-4,
                         atol: float = 1e-5, steps: int = 0) -> None:
    """Every output of `want` (onnxruntime's) in `got`: the same shape and dtype; integers within `steps`
    (0: exactly, e.g. class labels), floats within rtol/atol."""
    for name, ref in want.items():
        res = got[name]
        assert res.shape == ref.shape and res.dtype == ref.dtype, (
            f"{name}: {res.dtype}{list(res.shape)} vs {ref.dtype}{list(ref.shape)}")
        if ref.dtype.kind in "iub":
            diff = np.abs(res.astype(np.int64) - ref.astype(np.int64))
            assert diff.max(initial=0) <= steps, f"{name}: off by up to {diff.max()} (allowed {steps})"
        else:
            np.testing.assert_allclose(res, ref, rtol=rtol, atol=atol, err_msg=name)


def bert_fused_by_onnxruntime(path: Path, *, hidden: int, layers: int, heads: int, seq: int, batch: int,
                              vocab: int, mask_input: bool) -> None:
    """A Hugging Face BERT encoder (random weights) exported from PyTorch and fused by onnxruntime's transformer
    optimizer (com.microsoft Attention, SkipLayerNormalization, BiasGelu), as users ship BERT-style models for
    CPU inference. Inputs input_ids and token_type_ids (values below 10), and attention_mask where
    `mask_input` (else every token attends); output `hidden`. Needs `transformers`."""
    import transformers
    from onnxruntime.transformers import optimizer

    torch = _torch()
    config = transformers.BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                     num_attention_heads=heads, intermediate_size=4 * hidden,
                                     max_position_embeddings=max(seq, 32), type_vocab_size=10)
    config._attn_implementation = "eager"  # the attention pattern the optimizer fuses
    torch.manual_seed(0)
    bert = transformers.BertModel(config).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids, segments, *mask):  # noqa: ANN001, ANN202
            attention = mask[0] if mask else torch.ones_like(ids)
            return self.bert(input_ids=ids, attention_mask=attention, token_type_ids=segments).last_hidden_state

    ids = torch.randint(0, vocab, (batch, seq))
    args = (ids, torch.zeros_like(ids), *((torch.ones_like(ids),) if mask_input else ()))
    names = ["input_ids", "token_type_ids", *(["attention_mask"] if mask_input else [])]
    exported = path.with_suffix(".exported.onnx")
    torch.onnx.export(Encoder(), args, exported, opset_version=17, dynamo=False, input_names=names,
                      output_names=["hidden"])
    fused = optimizer.optimize_model(str(exported), model_type="bert", num_heads=heads, hidden_size=hidden,
                                     opt_level=0)
    fused.save_model_to_file(str(path))
    exported.unlink()
