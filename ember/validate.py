"""`ember validate`: the bundle side by side with the reference runtime (onnxruntime; LiteRT for a TFLite
model) on the same inputs, sample by sample.

Thresholds know what the bundle is: a float bundle must match tightly; one whose weights are stored
smaller (`--weights`) loosely; an int8 bundle (`--quantize int8`) is judged by cosine similarity and
top-1 agreement with the float reference, and with `--labels` by its accuracy next to the reference's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import EmberError, OptionError
from ember.frontends.detect import model_format
from ember.quant.data import Preprocess
from ember.reference import open_reference
from ember.runtime.inputs import input_infos, load_feeds, random_inputs, sample
from ember.runtime.loader import Bundle, dequantize_array, load


@dataclass(frozen=True)
class Thresholds:
    max_error: float | None  # max abs error relative to the reference's range; None: reported only
    min_cosine: float
    min_top1: float | None  # fraction of samples whose argmax agrees (only with --input data)
    max_accuracy_drop: float  # with --labels: bundle top-1 accuracy at most this below the reference's


# Defaults per kind of bundle (stated in `ember validate --help`).
DEFAULTS = {
    "float": Thresholds(1e-4, 0.9999, None, 0.005),
    "weights": Thresholds(5e-2, 0.999, None, 0.01),  # --weights fp16/bf16/int8: float math, rounded weights
    "int8": Thresholds(None, 0.99, 0.9, 0.02),
}


def defaults_text() -> str:
    """The default thresholds in words, for `ember validate --help`."""
    kinds = {"float": "float", "weights": "--weights fp16/bf16/int8", "int8": "--quantize int8"}
    parts = []
    for kind, t in DEFAULTS.items():
        words = [f"rel err <= {t.max_error:g}" if t.max_error is not None else "error reported only",
                 f"cosine >= {t.min_cosine:g}"]
        if t.min_top1 is not None:
            words.append(f"top-1 agreement >= {t.min_top1:g} on --input data")
        words.append(f"with --labels top-1 accuracy at most {t.max_accuracy_drop:g} below the reference's")
        parts.append(f"{kinds[kind]}: {', '.join(words)}")
    return "; ".join(parts)


def bundle_kind(bundle: Bundle) -> str:
    opts = bundle.manifest.get("options", {})
    if opts.get("quantize"):
        return "int8"
    return "weights" if opts.get("weights") else "float"


def compare(ref: np.ndarray, got: np.ndarray) -> dict[str, float]:
    """Errors of a stack [samples, ...] against the reference's: over all values, top-1 per sample."""
    r = ref.astype(np.float64).reshape(len(ref), -1)
    g = got.astype(np.float64).reshape(len(got), -1)
    span = float(r.max() - r.min()) if r.size else 0.0
    err = float(np.max(np.abs(r - g))) if r.size else 0.0
    denom = float(np.linalg.norm(r) * np.linalg.norm(g))
    cos = float(np.sum(r * g) / denom) if denom > 0 else (1.0 if err == 0 else 0.0)
    top1 = float(np.mean(np.argmax(r, axis=1) == np.argmax(g, axis=1))) if r.size else 1.0
    return {"max_abs_error": err, "relative_error": err / span if span > 0 else err, "cosine": cos,
            "top1_agree": top1}


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
              "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32,
              "tensor(int64)": np.int64, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
              "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_}


def _frozen_inputs(bundle: Bundle, inputs: list[Any]) -> dict[str, np.ndarray]:
    """The model inputs the bundle was compiled with as constants (--const), for onnxruntime."""
    consts = bundle.manifest.get("options", {}).get("consts", {})
    feeds = {}
    for i in inputs:
        if i.name in consts:
            arr = np.asarray(consts[i.name]).astype(_ORT_TYPES.get(i.type, np.float32))
            static = all(isinstance(d, int) for d in i.shape)
            feeds[i.name] = arr.reshape(i.shape) if static and arr.size == np.prod(i.shape) else arr
    return feeds


_PASS_THROUGH = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}


def index_bounds(model_path: str) -> dict[str, int]:
    """For each integer graph input used as indices (Gather's, an embedding's), the size of the dimension
    it indexes: random ids must stay below it. Follows shape-only ops (Cast, Reshape, ...) in between."""
    import onnx

    try:
        model = onnx.load(model_path, load_external_data=False)
    except Exception:  # onnxruntime reports an unreadable model in one line later
        return {}
    g = model.graph
    dims: dict[str, list[int]] = {t.name: list(t.dims) for t in g.initializer}
    for vi in [*g.value_info, *g.input]:
        shape = vi.type.tensor_type.shape.dim
        if vi.name not in dims and shape and all(d.HasField("dim_value") for d in shape):
            dims[vi.name] = [d.dim_value for d in shape]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    # (op, index of the indices input, index of the indexed tensor) for ops whose indices must be in range
    indexed = {"Gather": (1, 0), "GatherElements": (1, 0), "EmbedLayerNormalization": (0, 2)}

    def bound(value: str, seen: int = 0) -> int | None:
        found = None
        for n in consumers.get(value, []):
            b = None
            if n.op_type in _PASS_THROUGH and n.input[0] == value and seen < 16:
                b = bound(n.output[0], seen + 1)
            elif n.op_type in indexed and len(n.input) > indexed[n.op_type][1]:
                at, table = indexed[n.op_type]
                shape = dims.get(n.input[table])
                if n.input[at] == value and shape:
                    axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
                    b = shape[axis % len(shape)]
            if b is not None:
                found = b if found is None else min(found, b)
        return found

    return {i.name: b for i in g.input if (b := bound(i.name)) is not None}


def calibrated_ranges(bundle: Bundle) -> dict[str, tuple[float, float]]:
    """An int8 bundle's float inputs' [min, max] from the profile it was compiled with (its path as
    NAME.json records it: absolute, or relative to here or the bundle), so that random data stays where
    the scales were chosen; {} (with a note) when the profile is not found."""
    import yaml

    recorded = bundle.manifest.get("options", {}).get("profile")
    found = [p for p in (Path(recorded), bundle.path / Path(recorded).name) if p.is_file()] if recorded else []
    try:
        tensors = yaml.safe_load(found[0].read_text()).get("tensors", {}) if found else None
    except (OSError, yaml.YAMLError, AttributeError):
        tensors = None
    if tensors is None:
        print(f"note: the profile {recorded} is not found, so random inputs may lie outside the calibrated "
              "range; validate an int8 bundle on real data (--input)")
        return {}
    return {e["name"]: (float(tensors[e["name"]]["min"]), float(tensors[e["name"]]["max"]))
            for e in bundle.inputs if e["name"] in tensors and not e.get("quantization")}


def load_labels(path: str, count: int) -> np.ndarray:
    """One integer class per sample: a .npy array or a text file (whitespace or one per line)."""
    p = Path(path)
    if not p.is_file():
        raise OptionError(f"--labels {path}: no such file")
    try:
        labels = np.load(p, allow_pickle=False) if p.read_bytes()[:6] == b"\x93NUMPY" else np.loadtxt(p, ndmin=1)
    except (OSError, ValueError) as e:
        raise OptionError(f"--labels {path}: not a .npy array or a text file of integers ({e})") from None
    labels = np.asarray(labels).reshape(-1)
    if labels.dtype.kind == "f" and not np.all(labels == np.round(labels)):
        raise OptionError(f"--labels {path}: labels must be integers (class indices)")
    if labels.size != count:
        raise OptionError(f"--labels {path}: {labels.size} labels for {count} samples")
    return labels.astype(np.int64)


def accuracy(scores: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Fraction of samples whose label is among the k highest scores."""
    flat = scores.reshape(len(scores), -1)
    top = np.argsort(-flat, axis=1, kind="stable")[:, :k]
    return float(np.mean(np.any(top == labels[:, None], axis=1)))


def _reference_feed(bundle: Bundle, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the float model gets: integer data given for a quantized input is dequantized."""
    out = dict(feed)
    for e in bundle.inputs:
        q = e.get("quantization")
        if q and e["name"] in out and out[e["name"]].dtype.kind in "iu":
            out[e["name"]] = dequantize_array(out[e["name"]], q)
    return out


def validate(model: str, bundle_dir: str, input_specs: list[str], seed: int, max_error: float | None = None,
             min_cosine: float | None = None, min_top1: float | None = None, labels: str | None = None,
             max_accuracy_drop: float | None = None, prep: Preprocess | None = None,
             cast: bool = False, execute: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:
    """Compare and print the table; returns the results (`ok`, per output, accuracy) as `ember report`'s
    validation file has them (docs/report.md). `execute(feed, dequantize=True)`: how the bundle runs
    (default `Bundle.run` here; `ember validate --target` runs it on its target)."""
    bundle = load(bundle_dir)
    kind = bundle_kind(bundle)
    t = _thresholds(kind, max_error, min_cosine, min_top1, max_accuracy_drop, bool(input_specs))
    if input_specs:
        stacks, count = load_feeds(input_specs, input_infos(bundle.inputs), prep)
    else:
        ranges = calibrated_ranges(bundle) if kind == "int8" else {}
        feeds = random_inputs(bundle, seed, index_bounds(model), ranges)
        stacks, count = {k: v[None] for k, v in feeds.items()}, 1
    label_array = load_labels(labels, count) if labels else None
    fmt = model_format(model)
    # --state io: the recurrent state starts from its reset value, as LiteRT's first invocation does; the
    # state outputs have no counterpart among the model's outputs.
    state = {s["input"]: s for s in bundle.manifest.get("state", [])}
    stacks = {k: v for k, v in stacks.items() if k not in state}
    resets = {e["name"]: np.full(e["shape"], state[e["name"]]["reset"], e["dtype"]) for e in bundle.inputs
              if e["name"] in state}
    state_outs = {s["output"] for s in state.values()}
    reference = open_reference(model, fmt, [e["name"] for e in bundle.inputs if e["name"] not in state],
                               [e["name"] for e in bundle.outputs if e["name"] not in state_outs])
    if reference.quantized and kind == "float":  # a TFLite int8 model: judged as an int8 bundle is
        kind = "int8"
        t = _thresholds(kind, max_error, min_cosine, min_top1, max_accuracy_drop, bool(input_specs))
    frozen = _frozen_inputs(bundle, reference.inputs()) if fmt == "onnx" else {}
    names = reference.names
    runtime = "onnxruntime" if fmt == "onnx" else "LiteRT"
    refs: dict[str, list[np.ndarray]] = {n: [] for n in names}
    gots: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for k in range(count):
        feed = _checked(bundle, {**sample(stacks, k), **resets}, cast)
        ref_feed = _reference_feed(bundle, feed) if fmt == "onnx" else feed
        try:  # the reference first: data it refuses (an index out of range) need not reach the bundle
            ref = reference.run({**frozen, **ref_feed})
        except Exception as e:
            raise EmberError(f"{runtime} failed on sample {k} of {model} ({_first_line(e)})") from None
        got = (execute or bundle.run)(feed, dequantize=True)
        for n, r in zip(names, ref, strict=True):
            refs[n].append(np.asarray(r))
            gots[n].append(got[n])
    return _report(kind, t, count, refs, gots, label_array)


def _thresholds(kind: str, max_error: float | None, min_cosine: float | None, min_top1: float | None,
                max_accuracy_drop: float | None, real_data: bool) -> Thresholds:
    """The kind's defaults, each replaced by the value given on the command line."""
    d = DEFAULTS[kind]
    return Thresholds(d.max_error if max_error is None else max_error,
                      d.min_cosine if min_cosine is None else min_cosine,
                      (d.min_top1 if real_data else None) if min_top1 is None else min_top1,
                      d.max_accuracy_drop if max_accuracy_drop is None else max_accuracy_drop)


def _checked(bundle: Bundle, feed: dict[str, np.ndarray], cast: bool) -> dict[str, np.ndarray]:
    """The feed in the bundle's dtypes (`cast`: converted), so that both sides get the same numbers; float
    data for a quantized input stays float (the reference's type; Bundle.run quantizes it)."""
    arrays = bundle.check_inputs(feed, cast)  # a wrong shape or dtype is the bundle's one-line error
    out = {}
    for e in bundle.inputs:
        x = np.asarray(feed[e["name"]])
        out[e["name"]] = (x.astype(np.float32) if x.dtype.kind == "f" else x) if e.get("quantization") \
            else arrays[e["name"]]
    return out


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(e).__name__


def _report(kind: str, t: Thresholds, count: int, refs: dict[str, list[np.ndarray]],
            gots: dict[str, list[np.ndarray]], labels: np.ndarray | None) -> dict[str, Any]:
    ok = True
    result: dict[str, Any] = {"kind": kind, "samples": count, "thresholds": vars(t), "outputs": []}
    print(f"{kind} bundle, {count} sample(s)")
    print(f"{'output':<24} {'max abs err':>12} {'rel err':>10} {'cosine':>10} {'top-1':>6}")
    for name in refs:
        if any(r.shape != g.shape for r, g in zip(refs[name], gots[name], strict=True)):
            ok = False
            print(f"{name:<24} shapes differ from the reference's  FAIL")
            result["outputs"].append({"output": name, "pass": False, "note": "shapes differ"})
            continue
        m = compare(np.stack(refs[name]), np.stack(gots[name]))
        good = ((t.max_error is None or m["relative_error"] <= t.max_error) and m["cosine"] >= t.min_cosine
                and (t.min_top1 is None or refs[name][0].size < 2 or m["top1_agree"] >= t.min_top1))
        ok &= good
        result["outputs"].append({"output": name, **m, "pass": good})
        print(f"{name:<24} {m['max_abs_error']:>12.3g} {m['relative_error']:>10.3g} {m['cosine']:>10.6f} "
              f"{m['top1_agree']:>6.1%}  {'PASS' if good else 'FAIL'}")
    if labels is not None:
        name = next((n for n in refs if refs[n][0].size > 1), next(iter(refs)))
        ref, got = np.stack(refs[name]), np.stack(gots[name])
        ks = (1, 5) if ref[0].size >= 5 else (1,)
        acc = {(who, k): accuracy(s, labels, k) for who, s in (("bundle", got), ("reference", ref)) for k in ks}
        good = acc["bundle", 1] >= acc["reference", 1] - t.max_accuracy_drop - 1e-12
        ok &= good
        result["accuracy"] = {"output": name, "pass": good,
                              **{f"{who}_top{k}": v for (who, k), v in acc.items()}}
        for who in ("bundle", "reference"):
            print(f"accuracy of {who:<9} on '{name}': " + "  ".join(f"top-{k} {acc[who, k]:.4f}" for k in ks))
        print(f"top-1 accuracy drop {acc['reference', 1] - acc['bundle', 1]:+.4f} "
              f"(at most {t.max_accuracy_drop})  {'PASS' if good else 'FAIL'}")
    limits = [f"rel err <= {t.max_error}" if t.max_error is not None else "", f"cosine >= {t.min_cosine}",
              f"top-1 agreement >= {t.min_top1}" if t.min_top1 is not None else ""]
    print("PASS" if ok else f"FAIL (thresholds: {', '.join(x for x in limits if x)})")
    result["ok"] = ok
    return result
