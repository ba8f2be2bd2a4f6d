"""The reference runtime a bundle is validated against: onnxruntime for ONNX models, LiteRT's interpreter
(its reference kernels) for TFLite models. Both take and give float data where the bundle does."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from ember.errors import EmberError


class Reference:
    """Runs the original model: `names` are its outputs, in the bundle's order."""

    names: list[str]
    quantized: bool = False  # a TFLite model with integer tensors: an int8 model however its I/O is typed

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError


def open_reference(model: str, fmt: str, input_names: list[str], output_names: list[str]) -> Reference:
    if fmt == "tflite":
        return _LiteRT(model, input_names, output_names)
    return _OnnxRuntime(model)


def onnxruntime_session(model: str | bytes, options: Any = None) -> Any:
    """An onnxruntime CPU session on `model` (a path or serialized bytes). onnx stamps new models with its
    newest IR version, which an older onnxruntime (ember supports 1.20 on) refuses although it runs every
    operator in them: then the model is opened again stamped with the lowest IR version its opsets need."""
    import onnxruntime as ort

    providers = ["CPUExecutionProvider"]
    try:
        return ort.InferenceSession(model, options, providers=providers)
    except Exception as e:  # onnxruntime raises its own exception types
        if "Unsupported model IR version" not in str(e):
            raise
        import onnx

        proto = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
        proto.ir_version = onnx.helper.find_min_ir_version_for(list(proto.opset_import), ignore_unknown=True)
        return ort.InferenceSession(proto.SerializeToString(), options, providers=providers)


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


class _OnnxRuntime(Reference):
    def __init__(self, model: str) -> None:
        if importlib.util.find_spec("onnxruntime") is None:
            raise EmberError("ember validate needs onnxruntime: pip install 'ember[validate]'")
        try:
            self.sess = onnxruntime_session(model)
        except Exception as e:  # onnxruntime raises its own exception types
            raise EmberError(f"{model}: onnxruntime cannot load it ({_first_line(e)})") from None
        self.names = [o.name for o in self.sess.get_outputs()]
        self.model = model

    def inputs(self) -> list[Any]:
        return self.sess.get_inputs()

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(r) for r in self.sess.run(None, feed)]


class _LiteRT(Reference):
    """LiteRT's interpreter on its reference kernels; the bundle's inputs and outputs are the model's, in
    the model's order. Float data for an integer input is quantized as TFLite's QUANTIZE does, integer
    outputs are dequantized, so both sides compare in float."""

    def __init__(self, model: str, input_names: list[str], output_names: list[str]) -> None:
        try:
            from ai_edge_litert import interpreter as lite
        except ImportError:
            raise EmberError("validating a TFLite model needs LiteRT: pip install ai-edge-litert") from None
        try:
            try:
                self.interp = lite.Interpreter(model_path=model,
                                               experimental_op_resolver_type=lite.OpResolverType.BUILTIN_REF)
            except ValueError:  # an operator without a reference kernel: the builtin ones, XNNPACK off
                builtin = lite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
                self.interp = lite.Interpreter(model_path=model, experimental_op_resolver_type=builtin)
            self.interp.allocate_tensors()
        except Exception as e:  # LiteRT raises ValueError/RuntimeError with multi-line text
            raise EmberError(f"{model}: LiteRT cannot load it ({_first_line(e)})") from None
        self.ins, self.outs = self.interp.get_input_details(), self.interp.get_output_details()
        if len(self.ins) != len(input_names) or len(self.outs) != len(output_names):
            raise EmberError(f"{model}: the bundle's inputs/outputs are not this model's")
        self.input_names, self.names = input_names, output_names
        self.quantized = any(np.dtype(d["dtype"]).kind in "iu" and d["quantization"][0]
                             for d in self.interp.get_tensor_details())

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        for d, name in zip(self.ins, self.input_names, strict=True):
            x, dtype = np.asarray(feed[name]), np.dtype(d["dtype"])
            scale, zp = d["quantization"]
            if x.dtype.kind == "f" and dtype.kind in "iu" and scale:
                info = np.iinfo(dtype)
                x = np.clip(np.rint(x.astype(np.float32) / np.float32(scale)) + zp, info.min, info.max)
            self.interp.set_tensor(d["index"], np.ascontiguousarray(x.astype(dtype).reshape(d["shape"])))
        # LSTM/SVDF states are variables LiteRT keeps between invocations; a bundle starts each run from
        # their initial values, so each reference run does too.
        self.interp.reset_all_variables()
        self.interp.invoke()
        out = []
        for d in self.outs:
            y = self.interp.get_tensor(d["index"]).copy()
            scale, zp = d["quantization"]
            if y.dtype.kind in "iu" and scale:
                y = ((y.astype(np.float64) - zp) * scale).astype(np.float32)
            out.append(y)
        return out
