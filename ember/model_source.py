"""Models that are not files yet (`ember.compile`'s in-memory sources): an `onnx.ModelProto`, a
`torch.nn.Module` exported through torch.onnx, or a Keras model / TensorFlow SavedModel directory converted by
TensorFlow's TFLiteConverter. Each is written to a temporary .onnx or .tflite file for the driver."""

from __future__ import annotations

import inspect
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import ModelFormatError, OptionError

_TORCH_HINT = "pip install 'ember[torch]'"
_TF_HINT = "pip install 'ember[tf]'"


def is_saved_model_dir(path: Any) -> bool:
    """A TensorFlow SavedModel: a directory holding saved_model.pb."""
    return isinstance(path, str | os.PathLike) and (Path(path) / "saved_model.pb").is_file()


@contextmanager
def saved_model(model: Any, example_inputs: Any, representative_data: Any = None) -> Iterator[tuple[Path, str]]:
    """The model as a temporary .onnx or .tflite file, and the bundle name it suggests (its graph's, class's
    or directory's)."""
    with tempfile.TemporaryDirectory(prefix="ember-model-") as tmp:
        if is_saved_model_dir(model) or _is_keras_model(model):
            if example_inputs is not None:
                raise OptionError("example_inputs: only for a torch.nn.Module (a Keras model or SavedModel has its "
                                  "own input shapes)")
            path = Path(tmp) / "model.tflite"
            path.write_bytes(_convert_tf(model, representative_data))
            yield path, _name(Path(model).name if is_saved_model_dir(model) else getattr(model, "name", "model"))
            return
        if representative_data is not None:
            raise OptionError("representative_data: only for a Keras model or a SavedModel (converted to int8 "
                              "by TFLiteConverter)")
        import onnx

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
            raise OptionError(f"ember.compile: model must be a path, an onnx.ModelProto, a torch.nn.Module (with "
                              f"example_inputs), a Keras model or a SavedModel directory, not {type(model).__name__}")


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


def _is_keras_model(model: Any) -> bool:
    """Without importing tensorflow: a Keras (3, or tf_keras 2) Model among the object's classes."""
    return any(c.__module__.split(".")[0] in ("keras", "tf_keras") and c.__name__ == "Model"
               for c in type(model).__mro__)


def _convert_tf(model: Any, representative_data: Any) -> bytes:
    """TFLiteConverter's flatbuffer of a Keras model (traced with batch 1 where the batch is unset) or a
    SavedModel directory; full-integer int8 (float I/O) when `representative_data` is given: an iterable of
    input lists (numpy arrays), or a callable returning one."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TensorFlow's C++ start-up and converter logs
    try:
        import tensorflow as tf
    except ImportError:
        raise OptionError(f"compiling a Keras model or a SavedModel needs tensorflow: {_TF_HINT}") from None
    try:
        if is_saved_model_dir(model):
            # Its serving signature through the concrete-function path, which freezes the variables into
            # constant buffers (from_saved_model keeps Keras 3 variables as RESOURCE tensors).
            loaded = tf.saved_model.load(os.fspath(model))
            if not loaded.signatures:
                raise ModelFormatError(f"{os.fspath(model)}: the SavedModel has no signature to compile")
            sig = loaded.signatures.get("serving_default") or next(iter(loaded.signatures.values()))
            conv = tf.lite.TFLiteConverter.from_concrete_functions([sig])
        else:
            specs = [tf.TensorSpec([1 if d is None else d for d in t.shape], t.dtype) for t in model.inputs]
            fn = tf.function(lambda *xs: model(list(xs) if len(xs) > 1 else xs[0], training=False))
            # No trackable object: the converter then freezes the Keras variables into constants (with the
            # model as one it keeps them as RESOURCE variables, which no stateless bundle can hold).
            conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function(*specs)])
        if representative_data is not None:
            data = representative_data

            def dataset() -> Iterator[list[Any]]:
                for sample in (data() if callable(data) else data):
                    yield [np.asarray(x, np.float32) for x in (sample if isinstance(sample, list | tuple)
                                                                else [sample])]

            conv.optimizations = [tf.lite.Optimize.DEFAULT]
            conv.representative_dataset = dataset
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        return bytes(conv.convert())
    except (OptionError, ModelFormatError):
        raise
    except Exception as e:  # the converter raises many types with multi-line text
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelFormatError(f"TFLiteConverter failed: {text}") from None
