"""Models that are not files yet (`ember.compile`'s in-memory sources): an `onnx.ModelProto`, or a
`torch.nn.Module` exported through torch.onnx. Each is written to a temporary .onnx file for the driver."""

from __future__ import annotations

import inspect
import re
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ember.errors import ModelFormatError, OptionError

_TORCH_HINT = "pip install 'ember[torch]'"


@contextmanager
def saved_model(model: Any, example_inputs: Any) -> Iterator[tuple[Path, str]]:
    """The model as a temporary .onnx file, and the bundle name it suggests (its graph's or class's)."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="ember-model-") as tmp:
        path = Path(tmp) / "model.onnx"
        if isinstance(model, onnx.ModelProto):
            if example_inputs is not None:
                raise OptionError("example_inputs: only for a torch.nn.Module (an ONNX model has its own shapes)")
            try:
                onnx.save_model(model, path)
            except ValueError:  # over protobuf's 2 GB: the weights go to a file beside it
                copy = onnx.ModelProto()
                copy.CopyFrom(model)  # saving to external data rewrites the proto: not the caller's
                try:
                    onnx.save_model(copy, path, save_as_external_data=True, location="model.onnx.data")
                except ValueError as e:
                    raise ModelFormatError(f"the onnx.ModelProto cannot be saved ({e})") from None
            yield path, _name(model.graph.name)
        elif _is_torch_module(model):
            _export_torch(model, example_inputs, path)
            yield path, _name(type(model).__name__)
        else:
            raise OptionError(f"ember.compile: model must be a path, an onnx.ModelProto or a torch.nn.Module "
                              f"(with example_inputs), not {type(model).__name__}")


def _name(text: str) -> str:
    """A C identifier from a graph or class name (the bundle name a user would otherwise have to give)."""
    name = re.sub(r"\W", "_", text.strip()).strip("_").lower()
    if not name or name[0].isdigit() or name.startswith(("ember_", "glow_")) or name == "main":
        name = f"model_{name}" if name else "model"
    return name[:64]


def _is_torch_module(model: Any) -> bool:
    """Without importing torch: a torch object is in a module under `torch`; a user's Module subclass
    has torch.nn.Module among its bases."""
    return any(c.__module__ == "torch.nn.modules.module" and c.__name__ == "Module" for c in type(model).__mro__)


def _export_torch(module: Any, example_inputs: Any, path: Path) -> None:
    try:
        import torch
    except ImportError:
        raise OptionError(f"compiling a torch.nn.Module needs torch: {_TORCH_HINT}") from None
    if example_inputs is None:
        raise OptionError("a torch.nn.Module needs example_inputs=(tensor, ...) to fix its input shapes")
    args = tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise OptionError("example_inputs: expected a torch.Tensor or a tuple of them")
    module.eval()
    # The TorchScript exporter: seconds where torch.export's (the default from torch 2.9) takes tens and
    # prints its progress; torch before 2.5 has only it (and no `dynamo` argument).
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(module, args, str(path), opset_version=17,
                              input_names=[f"input_{i}" for i in range(len(args))], **legacy)
    except Exception as e:  # torch raises many types; the first line says what failed
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelFormatError(f"torch.onnx.export failed: {text}") from None
