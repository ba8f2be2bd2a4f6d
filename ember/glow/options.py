"""Glow's model and quantization flags as ember's CompileOptions (shared by both tools)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ember.codegen.bundle import network_name
from ember.errors import OptionError
from ember.glow.flags import Flag, Parsed

# -model-input types (Glow's Loader.cpp) and the ember element types they are.
INPUT_TYPES = {"float": "float32", "float16": "float16", "int32": "int32", "int64": "int64", "bool": "bool",
               "int8q": "int8", "int16q": "int16", "int32q": "int32"}
_QUANTIZED = ("int8q", "int16q", "int32q")
SCHEMAS = ("asymmetric", "symmetric", "symmetric_with_uint8", "symmetric_with_power2_scale")
# Glow's node kinds (-keep-original-precision-for-nodes) and the ember/ONNX operators they come from.
NODE_KINDS: dict[str, tuple[str, ...]] = {
    "Add": ("Add",), "Sub": ("Sub",), "Mul": ("Mul",), "Div": ("Div",), "Exp": ("Exp",), "Log": ("Log",),
    "Pow": ("Pow",), "Max": ("Max",), "Min": ("Min",), "SoftMax": ("Softmax",), "LogSoftMax": ("LogSoftmax",),
    "Convolution": ("Conv",), "ChannelwiseQuantizedConvolution": ("Conv",), "ConvTranspose": ("ConvTranspose",),
    "FullyConnected": ("Gemm", "MatMul"), "RowwiseQuantizedFullyConnected": ("Gemm", "MatMul"),
    "MatMul": ("MatMul",), "BatchMatMul": ("MatMul",), "BatchedAdd": ("Add",), "Relu": ("Relu",),
    "Sigmoid": ("Sigmoid",), "Tanh": ("Tanh",), "LeakyRelu": ("LeakyRelu",), "Clip": ("Clip",),
    "MaxPool": ("MaxPool",), "AvgPool": ("AveragePool",), "AdaptiveAvgPool": ("GlobalAveragePool",),
    "Concat": ("Concat",), "Reshape": ("Reshape",), "Transpose": ("Transpose",), "Slice": ("Slice",),
    "Gather": ("Gather",), "Tile": ("Tile",), "Pad": ("Pad",), "BatchNormalization": ("BatchNormalization",),
    "LocalResponseNormalization": ("LRN",), "BatchedReduceAdd": ("ReduceSum",),
    "BatchedReduceMean": ("ReduceMean",), "ResizeNearest": ("Resize",), "ResizeBilinear": ("Resize",),
    "Sqrt": ("Sqrt",), "Abs": ("Abs",), "Neg": ("Neg",), "Swish": ("Swish",), "Gelu": ("Gelu",),
    "HardSwish": ("HardSwish",), "PRelu": ("PRelu",),
}

MODEL_FLAGS = [
    Flag("model", "list", "the ONNX model: a .onnx/.onnxtxt file, or a folder holding one", "path"),
    Flag("model-input", "list", "name,type,[shape] or name,int8q,scale,offset,[shape] (repeatable)",
         "name,type,[shape]"),
    Flag("onnx-define-symbol", "list", "value of a symbolic dimension, e.g. None,1 (repeatable)", "name,value"),
    Flag("backend", "value", "CPU (ember's C bundles; the only backend)", "CPU"),
]
QUANT_FLAGS = [
    Flag("load-profile", "value", "quantize to int8 from this profile (image-classifier -dump-profile)", "profile.yml"),
    Flag("quantization-schema", "value", "asymmetric (default), symmetric, symmetric_with_uint8, "
         "symmetric_with_power2_scale", "schema"),
    Flag("quantization-precision", "value", "Int8 (default) or Int16", "Int8"),
    Flag("quantization-precision-bias", "value", "Int32 (default) or Int8", "Int32"),
    Flag("quantization-calibration", "value", "none (min/max, default) or KL", "none"),
    Flag("enable-channelwise", "bool", "one weight scale per output channel (default: one per tensor)"),
    Flag("keep-original-precision-for-nodes", "csv", "node kinds left in float, e.g. Add,Div,SoftMax", "kinds"),
]


def local_path(text: str) -> Path:
    """A path as typed; a Windows path (models\\lenet_mnist, from eIQ's Windows tools) where that one exists."""
    p = Path(text)
    if not p.exists() and "\\" in text and Path(text.replace("\\", "/")).exists():
        return Path(text.replace("\\", "/"))
    return p


def find_model(values: list[str], scratch: Path) -> tuple[Path, str]:
    """The ONNX file -model names, and Glow's default network name (the path's last part, no extension).

    A folder (Glow's `-model=lenet_mnist`) must hold one ONNX model: `model.onnx`, else `<folder>.onnx`,
    else its only .onnx (or .onnxtxt) file."""
    if len(values) != 1:
        raise OptionError(f"-model given {len(values)} times: ember reads one ONNX model (Caffe2's two-file "
                          "form is not supported; convert the model to ONNX)")
    p = local_path(values[0])
    default_name = network_name(p.resolve().name.rsplit(".", 1)[0] if p.suffix else p.resolve().name)
    if p.is_dir():
        found = sorted(f for f in p.iterdir() if f.suffix in (".onnx", ".onnxtxt") and f.is_file())
        preferred = [p / "model.onnx", p / f"{p.resolve().name}.onnx"]
        pick = next((f for f in preferred if f in found), found[0] if len(found) == 1 else None)
        if pick is None and not found:
            caffe2 = (p / "predict_net.pb").exists()
            raise OptionError(f"-model={values[0]}: " + ("a Caffe2 model; ember reads ONNX (convert it first)"
                              if caffe2 else "the folder holds no .onnx file"))
        if pick is None:
            raise OptionError(f"-model={values[0]}: the folder holds {len(found)} ONNX files "
                              f"({', '.join(f.name for f in found)}); name one, e.g. -model={found[0]}")
        p = pick
    elif not p.exists():
        raise OptionError(f"-model={values[0]}: no such file or folder")
    if p.suffix == ".onnxtxt":
        import onnx

        try:
            model = onnx.load_model(str(p), format="textproto")
        except Exception as e:  # noqa: BLE001 - any parse failure is the user's file
            raise OptionError(f"-model={values[0]}: not an ONNX text model ({str(e).splitlines()[0][:120]})") from None
        p = scratch / (p.stem + ".onnx")
        onnx.save(model, str(p))
    return p, default_name


def parse_model_input(text: str, model: Path) -> tuple[str, str]:
    """Glow's `name[,type[,scale,offset],[shape]]` as ember's input spec (name, 'DTYPE:SHAPE')."""
    name, _, rest = text.partition(",")
    if not name:
        raise OptionError(f"-model-input={text}: the input name is empty")
    if not rest:  # Glow: a bare name is float [1]
        return name, "float32:1"
    kind, _, rest = rest.partition(",")
    if kind not in INPUT_TYPES:
        raise OptionError(f"-model-input={text}: type '{kind}' is not one of {', '.join(INPUT_TYPES)}")
    if kind in _QUANTIZED:
        scale_s, _, rest = rest.partition(",")
        offset_s, _, rest = rest.partition(",")
        try:
            scale, offset = float(scale_s), int(offset_s, 0)
        except ValueError:
            raise OptionError(f"-model-input={text}: {kind} needs a scale and an integer offset before the shape "
                              f"(name,{kind},scale,offset,[shape])") from None
        _check_quantized_input(text, name, INPUT_TYPES[kind], scale, offset, model)
    if not (rest.startswith("[") and rest.endswith("]") and len(rest) > 2):
        raise OptionError(f"-model-input={text}: the shape must be written [d0,d1,...]")
    try:
        dims = [int(d, 0) for d in rest[1:-1].split(",")]
    except ValueError:
        raise OptionError(f"-model-input={text}: shape dimensions must be integers") from None
    return name, f"{INPUT_TYPES[kind]}:{'x'.join(map(str, dims))}"


def _check_quantized_input(text: str, name: str, dtype: str, scale: float, offset: int, model: Path) -> None:
    """A quantized input is what the model already takes: an integer input read by a DequantizeLinear of
    that scale and zero point. ember cannot make a float input quantized with parameters of the user's."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(model), load_external_data=False)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    declared = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
    want = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    if declared.get(name) != want:
        raise OptionError(f"-model-input={text}: input '{name}' of the model is not {dtype}; ember keeps float "
                          "inputs float when it quantizes (as Glow's -load-profile does) and cannot give one a "
                          "scale and offset of your choice")
    for node in m.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] == name and node.input[1] in inits:
            s = float(inits[node.input[1]].reshape(-1)[0])
            z = int(inits[node.input[2]].reshape(-1)[0]) if len(node.input) > 2 and node.input[2] in inits else 0
            if not (np.isclose(s, scale, rtol=1e-6) and z == offset):
                raise OptionError(f"-model-input={text}: the model dequantizes '{name}' with scale {s:g} and "
                                  f"offset {z}, not {scale:g} and {offset}")


def parse_symbols(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for text in values:
        sym, _, val = text.rpartition(",")
        try:
            value = int(val)
        except ValueError:
            value = 0
        if not sym or value <= 0:
            raise OptionError(f"-onnx-define-symbol={text}: expected name,value with a positive integer value")
        if sym in out and out[sym] != value:
            raise OptionError(f"-onnx-define-symbol: '{sym}' given twice ({out[sym]} and {value})")
        out[sym] = value
    return out


def keep_float(kinds: list[str]) -> tuple[str, ...]:
    """Glow node kinds (SoftMax, FullyConnected, ...) as ember operator names; ember's own names pass too."""
    from ember.ops import registry

    ops = registry.load_all()
    lower = {k.lower(): v for k, v in NODE_KINDS.items()}
    out: list[str] = []
    for kind in kinds:
        k = kind.removesuffix("Node")
        names = NODE_KINDS.get(k) or lower.get(k.lower()) or ((k,) if k in ops else None)
        if names is None:
            raise OptionError(f"-keep-original-precision-for-nodes: unknown node kind '{kind}' (Glow kinds such as "
                              f"{', '.join(list(NODE_KINDS)[:8])}, ... or ember operator names)")
        out += [n for n in names if n not in out]
    return tuple(out)


def quant_options(a: Parsed, scratch: Path, model: Path, notes: list[str]) -> dict[str, Any]:
    """The CompileOptions fields of the quantization flags."""
    from ember.glow.profile import resolve

    opts: dict[str, Any] = {}
    schema = a.get("quantization-schema")
    if schema is not None and schema not in SCHEMAS:
        raise OptionError(f"-quantization-schema={schema}: expected one of {', '.join(SCHEMAS)}")
    precision = _enum(a, "quantization-precision", {"int8": "int8", "int16": "int16"})
    bias = _enum(a, "quantization-precision-bias", {"int8": "int8", "int32": "int32"})
    calibration = _enum(a, "quantization-calibration", {"none": "minmax", "kl": "kl"})
    kinds = a.get("keep-original-precision-for-nodes", [])
    profile = a.get("load-profile")
    if profile is None:
        given = [f"-{n}" for n in ("quantization-precision", "quantization-precision-bias", "quantization-calibration",
                                   "enable-channelwise", "keep-original-precision-for-nodes") if n in a.values]
        if given:
            notes.append(f"{', '.join(given)}: no effect without -load-profile (the bundle stays float)")
        return opts
    path, note = resolve(profile, model, scratch)
    if note:
        notes.append(note)
    opts.update(quantize="int8", profile=path, schema=schema or "asymmetric", precision=precision or "int8",
                bias=bias or "int32", calibration=calibration or "minmax",
                per_channel=bool(a.get("enable-channelwise", False)), keep_float=keep_float(kinds))
    return opts


def _enum(a: Parsed, flag: str, values: dict[str, str]) -> str | None:
    text = a.get(flag)
    if text is None:
        return None
    if text.lower() not in values:
        raise OptionError(f"-{flag}={text}: expected one of {', '.join(v.capitalize() for v in values)}")
    return values[text.lower()]
