"""`-load-profile`: ember's profile (what `image-classifier -dump-profile` and `ember profile` write), or a
profile written by Glow itself, converted.

Glow's file (lib/Quantization/Serialization.cpp) is two YAML documents: `GraphPreLowerHash`, then a list of
`{NodeOutputName: 'node:result', Min, Max, Histogram: [counts over [Min, Max]]}`. Its names are Glow node
outputs; `name:0` becomes tensor `name`, which is the ONNX tensor name wherever Glow kept the model's names.
A tensor ember needs and the file lacks is reported by name when the bundle is built."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from ember.errors import OptionError
from ember.runtime.profile import write_yaml

_RESULT = re.compile(r":\d+$")


def resolve(path: str, model: Path, scratch: Path) -> tuple[str, str | None]:
    """The profile as an ember profile file, and a note when it was converted from Glow's format."""
    p = Path(path)
    if not p.is_file():
        raise OptionError(f"-load-profile={path}: no such file")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        docs = [d for d in yaml.load_all(p.read_text(), Loader=loader) if d is not None]
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise OptionError(f"-load-profile={path}: not a YAML file ({str(e).splitlines()[0]})") from None
    if len(docs) == 1 and isinstance(docs[0], dict) and "ember_profile" in docs[0]:
        return path, None
    entries = next((d for d in docs if isinstance(d, list)), None)
    if entries is None:
        raise OptionError(f"-load-profile={path}: neither an ember profile nor Glow's (a list of NodeOutputName, "
                          "Min, Max, Histogram entries)")
    tensors = {}
    for e in entries:
        if not isinstance(e, dict):
            raise OptionError(f"-load-profile={path}: an entry is not a mapping: {e!r}"[:200])
        tensors.update(_tensor(e, path))
    doc = {"ember_profile": 1, "model": str(model), "model_sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
           "converted_from": str(path), "tensors": tensors}
    out = scratch / (p.stem + ".ember.yaml")
    write_yaml(doc, out)
    return str(out), f"-load-profile={path}: Glow's profile format, {len(tensors)} tensor range(s) read"


def _tensor(e: dict[str, Any], path: str) -> dict[str, Any]:
    keys = {k.lower(): v for k, v in e.items()}
    try:
        name = _RESULT.sub("", str(keys["nodeoutputname"]))
        lo, hi = float(keys["min"]), float(keys["max"])
    except (KeyError, TypeError, ValueError):
        if "scale" in keys:
            raise OptionError(f"-load-profile={path}: an old Glow profile (scale and offset, no Min/Max); "
                              "profile again with image-classifier -dump-profile") from None
        raise OptionError(f"-load-profile={path}: entry without NodeOutputName, Min and Max: {e!r}"[:200]) from None
    counts = [max(0, round(float(c))) for c in keys.get("histogram") or [1]]
    if sum(counts) == 0:
        counts = [1] * len(counts)
    top = hi if hi > lo else lo + max(abs(lo), 1.0) * 2.0**-20  # ember's histogram needs a positive width
    return {name: {"min": lo, "max": hi, "count": sum(counts), "nonfinite": 0,
                   "histogram": {"lo": lo, "hi": top, "counts": counts}}}
