"""The deployment file: MACE's YAML keys, checked into typed specs; every mistake is one line naming the
file and the key path (`deploy.yml: models.mobilenet.model_sha256_checksum: ...`)."""

from __future__ import annotations

import difflib
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ember.errors import EmberError
from ember.toolchain.targets import TARGETS

# MACE's ABI names (and those of its devices file) onto ember's target table, with the float ABI that
# links with code built for that ABI: Android's armeabi-v7a passes floats in integer registers (softfp),
# which links with soft-float objects, not hard-float ones.
ABI_TARGETS: dict[str, tuple[str, str | None]] = {
    "host": ("host", None), "arm64-v8a": ("aarch64", None), "arm64": ("aarch64", None),
    "aarch64": ("aarch64", None), "armeabi-v7a": ("armv7", "soft"), "armhf": ("armv7", "hard"),
    "armv7l": ("armv7", "hard"), "x86_64": ("x86_64", None), "x86": ("i386", None),
}
# MACE's data_type: how weights are stored; ember always computes in float32.
DATA_TYPES = {"fp32_fp32": None, "fp16_fp32": "fp16", "bf16_fp32": "bf16"}
NOTE_ONLY = {  # keys MACE has that change nothing in an ember build: accepted with a one-line note
    "target_socs": "ember builds per ABI, not per SoC",
    "limit_opencl_kernel_time": "ember builds for the CPU; no OpenCL",
    "opencl_queue_window_size": "ember builds for the CPU; no OpenCL",
    "cl_mem_type": "ember builds for the CPU; no OpenCL",
    "winograd": "ember picks Winograd per convolution itself",
    "backend": "ember validates against onnxruntime",
}
TOP_KEYS = ("library_name", "target_abis", "models", "target_socs", "model_graph_format", "model_data_format",
            "build_type", "linkshared", "embed_model_data")
TENSOR_KEYS = ("input_tensors", "input_shapes", "output_tensors", "output_shapes", "input_ranges",
               "input_data_types", "input_data_formats", "output_data_formats", "validation_inputs_data",
               "validation_threshold")
MODEL_KEYS = ("platform", "model_file_path", "model_sha256_checksum", "weight_file_path", "weight_sha256_checksum",
              "subgraphs", *TENSOR_KEYS, "accuracy_validation_script", "backend", "runtime", "data_type",
              "limit_opencl_kernel_time", "opencl_queue_window_size", "cl_mem_type", "obfuscate", "winograd",
              "quantize", "quantize_range_file", "quantize_large_weights", "calibration_data")


class DeployError(EmberError):
    """A mistake in a deployment file or in what it points at."""


@dataclass(frozen=True)
class TargetSpec:
    abi: str  # as the file spells it (the output folder's name)
    target: str  # ember's target name
    float_abi: str | None


@dataclass
class ModelSpec:
    key: str  # the name under models:
    where: str  # "deploy.yml: models.<key>" for messages
    file: str  # model_file_path as written
    sha256: str
    inputs: list[str]
    input_shapes: list[list[int]]
    outputs: list[str]
    output_shapes: list[list[int]]
    input_types: list[str | None] = field(default_factory=list)
    input_ranges: list[tuple[float, float]] = field(default_factory=list)
    validation_inputs: list[str] = field(default_factory=list)
    threshold: float | None = None  # minimum cosine similarity; None: the default for the model's kind
    obfuscate: bool = False
    weights: str | None = None  # fp16 | bf16 | int8 (weight-only storage)
    quantize: bool = False
    range_file: str | None = None
    calibration: list[str] = field(default_factory=list)
    tensors_at: str = ""  # where input_tensors & co. are: "<file>: models.<key>" or its ".subgraphs[0]"


@dataclass
class DeployFile:
    path: Path
    library_name: str
    targets: list[TargetSpec]
    models: list[ModelSpec]
    notes: list[str]

    def resolve(self, text: str) -> Path:
        """A path in the file: absolute, or relative to the file's own folder."""
        p = Path(text).expanduser()
        return p if p.is_absolute() else self.path.parent / p


class _Reader:
    def __init__(self, path: Path) -> None:
        self.name = str(path)
        self.notes: list[str] = []

    def fail(self, where: str, msg: str) -> DeployError:
        return DeployError(f"{self.name}: {where}: {msg}" if where else f"{self.name}: {msg}")

    def check_keys(self, d: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
        for k in d:
            if k not in allowed:
                near = difflib.get_close_matches(str(k), allowed, n=1)
                hint = f"; did you mean '{near[0]}'?" if near else f" (known: {', '.join(allowed)})"
                raise self.fail(_join(where, str(k)), f"unknown key{hint}")

    def mapping(self, v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.fail(where, f"expected a mapping of keys, got {_kind(v)}")
        return v

    def words(self, v: Any, where: str) -> list[str]:
        """A YAML list, or MACE's comma-separated string form."""
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [w.strip() for w in str(v).split(",")]
        if not isinstance(v, list) or not all(isinstance(w, (str, int, float)) for w in v):
            raise self.fail(where, f"expected a list of names, got {_kind(v)}")
        out = [str(w).strip() for w in v]
        if any(not w for w in out):
            raise self.fail(where, "an empty name")
        return out

    def flag(self, v: Any, where: str) -> bool:
        if v in (0, 1) or isinstance(v, bool):
            return bool(v)
        raise self.fail(where, f"expected 0 or 1, got {v!r}")

    def shape(self, v: Any, where: str) -> list[int]:
        items = v if isinstance(v, list) else [s for s in str(v).replace("x", ",").split(",") if s.strip()]
        try:
            dims = [int(str(s).strip()) for s in items]
        except ValueError:
            raise self.fail(where, f"expected a shape such as 1,224,224,3, got {v!r}") from None
        if any(d <= 0 for d in dims):
            raise self.fail(where, f"dimensions must be positive, got {v!r}")
        return dims

    def shapes(self, v: Any, where: str) -> list[list[int]]:
        if not isinstance(v, list) or all(isinstance(x, int) for x in v):
            v = [v]  # one shape: "1,3,224,224", or a flow list [1, 3, 224, 224]
        return [self.shape(s, f"{where}[{i}]") for i, s in enumerate(v)]

    def note(self, where: str, why: str) -> None:
        self.notes.append(f"{self.name}: {where}: ignored ({why})")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _kind(v: Any) -> str:
    return "nothing" if v is None else f"{type(v).__name__} {v!r}"[:80]


def read(path: str | Path) -> DeployFile:
    path = Path(path)
    r = _Reader(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise DeployError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DeployError(f"{path}: cannot read it ({e})") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        raise DeployError(f"{path}: {at}not valid YAML ({getattr(e, 'problem', None) or e})") from None
    doc = r.mapping(doc, "")
    r.check_keys(doc, TOP_KEYS, "")
    for key in ("library_name", "target_abis", "models"):
        if key not in doc:
            raise r.fail(key, "missing (required)")
    lib = str(doc["library_name"]).strip()
    if not lib or not all(c.isalnum() or c in "_-" for c in lib):
        raise r.fail("library_name", f"expected letters, digits, '_' or '-', got {lib!r}")
    targets = _targets(r, doc["target_abis"])
    for key in ("model_graph_format", "model_data_format", "build_type"):
        if key in doc and doc[key] not in ("code", "file", "proto"):
            raise r.fail(key, f"expected code or file, got {doc[key]!r}")
    if doc.get("linkshared", 0) not in (0, False):
        raise r.fail("linkshared", "ember builds static libraries (lib<library_name>.a); use 0")
    if "target_socs" in doc:
        r.note("target_socs", NOTE_ONLY["target_socs"])
    models_doc = r.mapping(doc["models"], "models")
    if not models_doc:
        raise r.fail("models", "no models")
    models = [_model(r, str(k), v) for k, v in models_doc.items()]
    return DeployFile(path, lib, targets, models, r.notes)


def _targets(r: _Reader, v: Any) -> list[TargetSpec]:
    out: list[TargetSpec] = []
    for i, abi in enumerate(r.words(v, "target_abis")):
        where = f"target_abis[{i}]"
        if abi in ABI_TARGETS:
            name, float_abi = ABI_TARGETS[abi]
        elif abi in TARGETS:
            name, float_abi = abi, None
        else:
            known = [*ABI_TARGETS, *(t for t in TARGETS if t not in ABI_TARGETS)]
            near = difflib.get_close_matches(abi, known, n=1)
            hint = f"; did you mean '{near[0]}'?" if near else f" (known: {', '.join(known)})"
            raise r.fail(where, f"unknown ABI or target '{abi}'{hint}")
        if any(t.abi == abi for t in out):
            raise r.fail(where, f"'{abi}' listed twice")
        out.append(TargetSpec(abi, name, float_abi))
    if not out:
        raise r.fail("target_abis", "no targets")
    return out


def _model(r: _Reader, key: str, v: Any) -> ModelSpec:
    where = f"models.{key}"
    d = r.mapping(v, where)
    r.check_keys(d, MODEL_KEYS, where)
    for k in ("model_file_path", "model_sha256_checksum"):
        if k not in d:
            raise r.fail(_join(where, k), "missing (required)")
    platform = str(d.get("platform", "onnx")).lower()
    if platform != "onnx":
        raise r.fail(_join(where, "platform"), f"ember deploys ONNX models; convert the {platform} model to ONNX "
                     "first (tf2onnx, torch.onnx) and give platform: onnx")
    for k in ("weight_file_path", "weight_sha256_checksum"):
        if k in d:
            raise r.fail(_join(where, k), "Caffe weight files are not read; ember deploys ONNX models")
    if "accuracy_validation_script" in d:
        raise r.fail(_join(where, "accuracy_validation_script"),
                     "validation plugins are not run; give validation_inputs_data and validation_threshold")
    sha = d["model_sha256_checksum"]
    if isinstance(sha, int) and not isinstance(sha, bool):  # all digits: YAML read a number
        raise r.fail(_join(where, "model_sha256_checksum"), "YAML reads it as a number; put it in quotes")
    if not isinstance(sha, str) or len(sha.strip()) != 64 or any(c not in string.hexdigits for c in sha.strip()):
        raise r.fail(_join(where, "model_sha256_checksum"), f"expected 64 hex digits (sha256sum FILE), got {sha!r}")
    runtime = str(d.get("runtime", "cpu")).lower()
    if runtime == "cpu+gpu":
        r.note(_join(where, "runtime"), "builds for the CPU only")
    elif runtime != "cpu":
        raise r.fail(_join(where, "runtime"), f"ember builds for the CPU only (runtime: cpu), not {runtime}")
    for k in ("limit_opencl_kernel_time", "opencl_queue_window_size", "cl_mem_type", "winograd", "backend"):
        if k in d:
            r.note(_join(where, k), NOTE_ONLY[k])
    spec = ModelSpec(key, f"{r.name}: {where}", str(d["model_file_path"]), sha.strip().lower(), [], [], [], [])
    _tensors(r, spec, d, where)
    spec.obfuscate = r.flag(d.get("obfuscate", 0), _join(where, "obfuscate"))
    _types(r, spec, d, where)
    return spec


def _tensors(r: _Reader, spec: ModelSpec, d: dict[str, Any], where: str) -> None:
    """input/output tensors: in `subgraphs: [ {...} ]` (MACE's layout) or directly under the model."""
    t = {k: d[k] for k in TENSOR_KEYS if k in d}
    if "subgraphs" in d:
        subs = d["subgraphs"]
        sw = _join(where, "subgraphs")
        if not isinstance(subs, list) or len(subs) != 1:
            raise r.fail(sw, "expected a list of one subgraph (ember builds one graph per model)")
        sub = r.mapping(subs[0], f"{sw}[0]")
        r.check_keys(sub, TENSOR_KEYS, f"{sw}[0]")
        if set(sub) & set(t):
            raise r.fail(sw, f"{sorted(set(sub) & set(t))[0]} given both in subgraphs and beside it")
        t.update(sub)
        where = f"{sw}[0]"
    spec.tensors_at = f"{r.name}: {where}"
    for k in ("input_tensors", "input_shapes", "output_tensors"):
        if k not in t:
            raise r.fail(_join(where, k), "missing (required)")
    spec.inputs = r.words(t["input_tensors"], _join(where, "input_tensors"))
    spec.outputs = r.words(t["output_tensors"], _join(where, "output_tensors"))
    spec.input_shapes = r.shapes(t["input_shapes"], _join(where, "input_shapes"))
    spec.output_shapes = r.shapes(t["output_shapes"], _join(where, "output_shapes")) if "output_shapes" in t else []
    for names, k in ((spec.inputs, "input_tensors"), (spec.outputs, "output_tensors")):
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise r.fail(_join(where, k), f"'{dup}' listed twice")
    _same_count(r, spec.input_shapes, spec.inputs, _join(where, "input_shapes"))
    if spec.output_shapes:
        _same_count(r, spec.output_shapes, spec.outputs, _join(where, "output_shapes"))
    if "input_data_types" in t:
        types = r.words(t["input_data_types"], _join(where, "input_data_types"))
        types = types * len(spec.inputs) if len(types) == 1 else types
        _same_count(r, types, spec.inputs, _join(where, "input_data_types"))
        spec.input_types = [{"float32": "float32", "int32": "int32"}.get(x) or _bad_type(r, x, where) for x in types]
    for k in ("input_data_formats", "output_data_formats"):
        for fmt in r.words(t.get(k, "NONE"), _join(where, k)):
            if fmt.upper() not in ("NONE", "NCHW", "OIHW"):
                raise r.fail(_join(where, k), f"{fmt}: ember keeps the ONNX model's own layout; give shapes in it "
                             "and NCHW or NONE here")
    if "input_ranges" in t:
        rw = _join(where, "input_ranges")
        ranges = t["input_ranges"] if isinstance(t["input_ranges"], list) else [t["input_ranges"]]
        ranges = ranges * len(spec.inputs) if len(ranges) == 1 else ranges
        _same_count(r, ranges, spec.inputs, rw)
        for rg in ranges:
            try:
                lo, hi = (float(x) for x in str(rg).split(","))
            except ValueError:
                raise r.fail(rw, f"expected MIN,MAX such as -1,1, got {rg!r}") from None
            if not lo < hi:
                raise r.fail(rw, f"MIN must be below MAX, got {rg!r}")
            spec.input_ranges.append((lo, hi))
    if "validation_inputs_data" in t:
        vw = _join(where, "validation_inputs_data")
        spec.validation_inputs = r.words(t["validation_inputs_data"], vw)
        _same_count(r, spec.validation_inputs, spec.inputs, vw)
    if "validation_threshold" in t:
        spec.threshold = _threshold(r, t["validation_threshold"], _join(where, "validation_threshold"))


def _bad_type(r: _Reader, x: str, where: str) -> str:
    raise r.fail(_join(where, "input_data_types"), f"expected float32 or int32, got {x!r}")


def _threshold(r: _Reader, v: Any, where: str) -> float | None:
    """MACE's {CPU: 0.999} (or one number): the least cosine similarity of every output to onnxruntime's."""
    if isinstance(v, dict):
        by = {str(k).upper(): x for k, x in v.items()}
        if "CPU" not in by:
            return None
        v, where = by["CPU"], f"{where}.CPU"
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not -1 <= v <= 1:
        raise r.fail(where, f"expected a similarity in [-1, 1] such as 0.999, got {v!r}")
    return float(v)


def _same_count(r: _Reader, got: list[Any], names: list[str], where: str) -> None:
    if len(got) != len(names):
        raise r.fail(where, f"{len(got)} given for {len(names)} tensor(s)")


def _types(r: _Reader, spec: ModelSpec, d: dict[str, Any], where: str) -> None:
    """data_type (weight storage), quantize_large_weights (int8 weights) and quantize (int8 throughout)."""
    dt = str(d.get("data_type", "fp32_fp32")).lower()
    if dt == "fp16_fp16":
        raise r.fail(_join(where, "data_type"), "ember computes in float32; use fp16_fp32 (half-precision weights)")
    if dt not in DATA_TYPES:
        raise r.fail(_join(where, "data_type"), f"expected one of {', '.join(DATA_TYPES)}, got {dt!r}")
    spec.weights = DATA_TYPES[dt]
    if r.flag(d.get("quantize_large_weights", 0), _join(where, "quantize_large_weights")):
        if spec.weights:
            raise r.fail(_join(where, "quantize_large_weights"), f"conflicts with data_type: {dt}")
        spec.weights = "int8"
    spec.quantize = r.flag(d.get("quantize", 0), _join(where, "quantize"))
    if not spec.quantize:
        for k in ("quantize_range_file", "calibration_data"):
            if k in d:
                raise r.fail(_join(where, k), "needs quantize: 1")
        return
    if spec.weights:
        raise r.fail(_join(where, "quantize"), "stores int8 weights already; leave data_type at fp32_fp32 and "
                     "quantize_large_weights at 0")
    if ("quantize_range_file" in d) == ("calibration_data" in d):
        raise r.fail(_join(where, "quantize"), "needs either calibration_data (.npy/.npz files or folders) or "
                     "quantize_range_file (a profile from `ember profile`)")
    if "quantize_range_file" in d:
        if spec.obfuscate:
            raise r.fail(_join(where, "quantize_range_file"), "names the model's tensors, which obfuscate: 1 "
                         "renames; give calibration_data instead")
        spec.range_file = str(d["quantize_range_file"])
    else:
        spec.calibration = r.words(d["calibration_data"], _join(where, "calibration_data"))


def print_notes(notes: list[str]) -> None:
    for n in notes:
        print(f"ember: note: {n}", file=sys.stderr)
