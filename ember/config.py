"""CompileOptions: every knob of a compile, frozen, and recorded verbatim in NAME.json."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ember.errors import OptionError
from ember.quant import schema as qs
from ember.quant.calibrate import METHODS

T = TypeVar("T")
WEIGHT_OPTIONS = ("fp16", "bf16", "int8")


@dataclass(frozen=True)
class CompileOptions:
    name: str | None = None  # network name (C prefix); default: model file stem
    target: str = "host"
    cpu: str | None = None
    # --cpu-param KEY=VALUE: values of the CPU family (toolchain/cpus.py) replaced, for tuning experiments.
    cpu_params: tuple[str, ...] = ()
    float_abi: str | None = None
    reloc: str | None = None  # static | pic; default: the target's (pic for host/Linux, static for MCU/wasm)
    cc: str | None = None  # user's own C compiler
    api: str = "static"  # Glow's static or dynamic bundle API
    defines: dict[str, int] = field(default_factory=dict)  # symbolic dim -> value
    inputs: dict[str, str] = field(default_factory=dict)  # input name -> "DTYPE:SHAPE"
    # Graph inputs frozen to constants (--const): name -> value (a number, a list, an array or a .npy path);
    # the frontend checks each against the declared input and folds what it decides (an If on it inlines).
    consts: dict[str, Any] = field(default_factory=dict)
    dump_graph: str | None = None
    # NAME.weights.txt (the weights as a C array body): big models rarely want 6 bytes of text per weight byte.
    weights_txt: bool = True
    opt_level: int = 3
    sanitize: bool = False  # build the host library with AddressSanitizer + UBSan (tests)
    # Quantization (ember/quant): `ember profile` output + target precision and how to choose parameters.
    quantize: str | None = None  # int8
    profile: str | None = None  # profile.yaml
    schema: str = "asymmetric"  # asymmetric | symmetric | symmetric_with_uint8 | symmetric_with_power2_scale
    precision: str = "int8"  # int8 | int16 (activations and weights)
    bias: str = "int32"  # int32 | int8
    per_channel: bool | None = None  # per-channel weight scales; None = for convolutions only
    calibration: str = "minmax"  # minmax | percentile | kl | mse
    percentile: float = 99.99
    keep_float: tuple[str, ...] = ()  # op types left in float
    io: str = "float"  # float | int8: the bundle's inputs and outputs
    # A fully-quantized TFLite model's requantisation: LiteRT's (single rounding) or TFLite Micro's (double)
    tflite_rounding: str = "litert"
    weights: str | None = None  # fp16 | bf16 | int8: weight-only compression of a float bundle
    # Largest total of the three memory regions, bytes; None: 4 GiB for host, the address space otherwise.
    max_memory: int | None = None
    # Largest RAM the bundle may use: the mutable region (inputs, outputs) plus the activations; None: no limit.
    ram_limit: int | None = None
    # The call may overwrite its inputs: inputs, outputs and intermediates are planned in one region (the mutable
    # one), intermediates over inputs already read, as TFLite Micro's arena does; the activation region is empty.
    reuse_inputs: bool = False
    # Threads a bundle may use (host and Linux targets): its pool's size and the parts big kernels divide into.
    threads: int = 1
    # --tune: time each layer shape's candidate algorithms on this machine first (ember/tune.py) and keep the
    # fastest in the choice file; --tune-file PATH: that file (default ~/.cache/ember/choices.json), whose
    # choices a compile uses, with or without --tune (passes/choice_file.py).
    tune: bool = False
    tune_file: str | None = None
    # Recurrent state (TFLite variable tensors: LSTM, SVDF): "zero" starts every run from zero; "io" makes each
    # state an extra input and output (`NAME.json` `state`), which a streaming caller carries between calls.
    state: str = "zero"

    def __post_init__(self) -> None:
        if self.api not in ("static", "dynamic"):
            raise OptionError(f"--api must be static or dynamic, not '{self.api}'")
        if self.state not in ("zero", "io"):
            raise OptionError(f"--state must be zero or io, not '{self.state}'")
        if self.reloc not in (None, "static", "pic"):
            raise OptionError(f"--reloc must be static or pic, not '{self.reloc}'")
        if self.quantize or self.profile or self.weights or self.keep_float or self.io != "float":
            _check_quantization(self)
        if self.name is not None:
            from ember.codegen.bundle import check_network_name

            check_network_name(self.name)
        if isinstance(self.cpu_params, str):
            raise OptionError("cpu_params: a list of KEY=VALUE strings, not one string")
        object.__setattr__(self, "cpu_params", tuple(self.cpu_params))
        for k, v in self.defines.items():
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OptionError(f"--define {k}={v}: the value must be a positive integer")
            if v > MAX_DIM:
                raise OptionError(f"--define {k}={v}: dimensions are at most {MAX_DIM} (C int)")
        object.__setattr__(self, "consts", {k: const_array(k, v) for k, v in self.consts.items()})
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or not 1 <= self.threads <= MAX_THREADS:
            raise OptionError(f"--threads {self.threads}: must be a whole number from 1 to {MAX_THREADS}")
        if self.max_memory is not None and (not isinstance(self.max_memory, int) or self.max_memory <= 0):
            raise OptionError(f"--max-memory {self.max_memory}: must be a positive number of bytes")
        if self.ram_limit is not None and (not isinstance(self.ram_limit, int) or isinstance(self.ram_limit, bool)
                                           or self.ram_limit <= 0):
            raise OptionError(f"--ram-limit {self.ram_limit}: must be a positive number of bytes")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["keep_float"] = list(self.keep_float)
        d["cpu_params"] = list(self.cpu_params)
        d["consts"] = {k: v.tolist() for k, v in self.consts.items()}
        return d


def _check_quantization(o: CompileOptions) -> None:
    """The quantization options of a compile, checked together."""
    from ember.ops import registry

    object.__setattr__(o, "keep_float", tuple(o.keep_float))
    if o.quantize not in (None, "int8"):
        raise OptionError(f"--quantize must be int8, not '{o.quantize}' (int16 activations: --precision int16)")
    if o.quantize and not o.profile:
        raise OptionError("--quantize int8 needs --profile FILE (make one with `ember profile MODEL DATA...`)")
    if o.profile and not o.quantize:
        raise OptionError("--profile needs --quantize int8")
    if o.weights is not None and o.weights not in WEIGHT_OPTIONS:
        raise OptionError(f"--weights must be one of {', '.join(WEIGHT_OPTIONS)}, not '{o.weights}'")
    if o.weights and o.quantize:
        raise OptionError("--weights compresses a float bundle's weights; --quantize int8 stores int8 weights already")
    qs.check(o.schema, o.precision)
    if o.tflite_rounding not in ("litert", "micro"):
        raise OptionError(f"--tflite-rounding must be litert or micro, not '{o.tflite_rounding}'")
    if o.bias not in ("int32", "int8"):
        raise OptionError(f"--bias must be int32 or int8, not '{o.bias}'")
    if o.calibration not in METHODS:
        raise OptionError(f"--calibration must be one of {', '.join(METHODS)}, not '{o.calibration}'")
    if not 50.0 < o.percentile <= 100.0:
        raise OptionError(f"--percentile must be in (50, 100], not {o.percentile}")
    if o.io not in ("float", "int8"):
        raise OptionError(f"--io must be float or int8, not '{o.io}'")
    if o.io == "int8" and not o.quantize:
        raise OptionError("--io int8 needs --quantize int8")
    if o.keep_float and not o.quantize:
        raise OptionError("--keep-float needs --quantize int8")
    ops = registry.load_all()
    for op in o.keep_float:
        if op not in ops:
            raise OptionError(f"--keep-float: unknown operator '{op}'")


MAX_THREADS = 256  # the pool's storage is static: a bound keeps a typo from reserving megabytes
# Dimensions and element counts reach the generated C as `int`.
MAX_DIM = 2**31 - 1
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str, flag: str = "--max-memory") -> int:
    """'4G', '512M', '64K', '123456' (bytes; K/M/G/T are powers of 1024, an optional trailing B or iB)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise OptionError(f"{flag} {text}: expected a size such as 4G, 512M or 1000000 (bytes)")
    value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if value <= 0:
        raise OptionError(f"{flag} {text}: must be positive")
    return value


def parse_define(text: str) -> tuple[str, int]:
    """'SYMBOL=VALUE' (also Glow's 'SYMBOL,VALUE')."""
    sep = "=" if "=" in text else ","
    name, _, val = text.partition(sep)
    try:
        value = int(val)
    except ValueError:
        raise OptionError(f"--define {text}: expected SYMBOL=VALUE with an integer VALUE") from None
    if not name or value <= 0:
        raise OptionError(f"--define {text}: expected SYMBOL=VALUE with a positive VALUE")
    if value > MAX_DIM:
        raise OptionError(f"--define {text}: dimensions are at most {MAX_DIM} (C int)")
    return name, value


def const_array(name: str, value: Any) -> np.ndarray:
    """A --const value as an array: numbers and lists as given, a str/Path ending in .npy read from the file."""
    if isinstance(value, (str, Path)) and str(value).endswith(".npy"):
        try:
            arr = np.load(value, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise OptionError(f"--const {name}={value}: cannot read the .npy file ({str(e).splitlines()[0]})") from None
        if not isinstance(arr, np.ndarray):
            raise OptionError(f"--const {name}={value}: the file holds no single array")
    else:
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError) as e:
            raise OptionError(f"--const {name}: not a number, list of numbers or .npy path ({e})") from None
    if arr.dtype.kind not in "biuf" or arr.size == 0:
        raise OptionError(f"--const {name}: expected numbers (a number, a comma list or a .npy file), got {value!r}")
    return arr


def parse_const(text: str) -> tuple[str, Any]:
    """'NAME=VALUE': VALUE a number (3, 0.5, true), a comma list (1,2,3) or a .npy file."""
    name, sep, val = text.partition("=")
    val = val.strip()
    if not name or not sep or not val:
        raise OptionError(f"--const {text}: expected NAME=VALUE (a number, a comma list or a .npy file)")
    if val.endswith(".npy"):
        return name, val
    items = []
    for item in val.strip("[]").split(","):
        word = item.strip().lower()
        if word in ("true", "false"):
            items.append(word == "true")
            continue
        try:
            items.append(int(word))
        except ValueError:
            try:
                items.append(float(word))
            except ValueError:
                raise OptionError(f"--const {text}: '{item.strip()}' is not a number") from None
    return name, items[0] if len(items) == 1 and "," not in val else items


def parse_consts(texts: list[str]) -> dict[str, Any]:
    """Every --const NAME=VALUE, each name once."""
    return _each_once("--const", texts, parse_const)


def _each_once(flag: str, texts: list[str], parse: Callable[[str], tuple[str, T]]) -> dict[str, T]:
    out: dict[str, T] = {}
    for t in texts:
        k, v = parse(t)
        if k in out:
            raise OptionError(f"{flag} {k} given twice ({out[k]} and {t})")
        out[k] = v
    return out


def parse_defines(texts: list[str]) -> dict[str, int]:
    """Every --define, each symbol once."""
    return _each_once("--define", texts, parse_define)


def parse_inputs(texts: list[str]) -> dict[str, str]:
    """Every compile-time --input NAME:DTYPE:SHAPE, each name once."""
    return _each_once("--input", texts, parse_input)


def parse_input(text: str) -> tuple[str, str]:
    """'NAME:DTYPE:SHAPE' -> (NAME, 'DTYPE:SHAPE'); SHAPE as 1x3x224x224 or [1,3,224,224]."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise OptionError(f"--input {text}: expected NAME:DTYPE:SHAPE, e.g. data:float32:1x3x224x224")
    return parts[0], f"{parts[1]}:{parts[2]}"
