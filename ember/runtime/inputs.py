"""The inputs a bundle runs on: `--input NAME=FILE` data (run, validate, bench; the same files and
preprocessing as `ember profile`, read by ember/quant/data.py), or random ones of the right types,
shapes and ranges (`ember bench`, `ember validate` without data)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import OptionError
from ember.ir.dtypes import DType
from ember.quant.data import DataError, InputInfo, Preprocess, collect_files, input_samples, read_array, sniff


def input_infos(entries: list[dict[str, Any]]) -> list[InputInfo]:
    """What data each bundle input takes. A quantized input (`--io int8`) takes float data, as its model
    does: Bundle.run quantizes it with the scale and zero point NAME.h states."""
    return [InputInfo(e["name"], tuple(e["shape"]),
                      np.dtype(np.float32) if e.get("quantization") else np.dtype(DType.parse(e["dtype"]).np))
            for e in entries]


def load_feeds(specs: list[str], inputs: list[InputInfo], prep: Preprocess | None = None,
               convert: bool = False) -> tuple[dict[str, np.ndarray], int]:
    """--input NAME=FILE (FILE: .npy/.npz, an image, a folder of those, or a stack whose first axis counts
    samples); a lone FILE feeds the only input, a lone .npz maps its keys to inputs. Returns each input's
    stack [samples, *shape] and the number of samples (an input with one sample is shared by all).
    An input given twice is refused, not silently replaced. `convert`: cast arrays to the input's dtype."""
    prep = prep or Preprocess()
    by_name = {i.name: i for i in inputs}
    names = ", ".join(by_name) or "none"
    stacks: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}

    def put(name: str, paths: list[Path], spec: str) -> None:
        if name not in by_name:
            raise OptionError(f"--input {name}: the bundle has no input of that name (inputs: {names})")
        if name in stacks:
            raise OptionError(f"--input {name} given twice ({origin[name]} and {spec})")
        samples = list(input_samples(paths, by_name[name], prep, convert))
        if not samples:
            raise DataError(f"{spec}: no samples for input '{name}'")
        stacks[name], origin[name] = np.stack(samples), spec

    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        if name and not path:
            raise OptionError(f"--input {spec}: expected NAME=FILE")
        files = collect_files([path])
        if name:
            put(name, files, path)
        elif len(inputs) == 1:
            put(inputs[0].name, files, path)
        elif len(files) == 1 and _npz_keys(files[0]):
            for key in _npz_keys(files[0]):
                put(key, files, f"{path}[{key}]")
        else:
            raise OptionError(f"{path}: the bundle has {len(inputs)} inputs ({names}); write --input NAME={path}")
    counts = {n: len(s) for n, s in stacks.items()}
    many = {n: k for n, k in counts.items() if k > 1}
    if len(set(many.values())) > 1:
        raise DataError("inputs hold different numbers of samples: "
                        + ", ".join(f"{n} {k}" for n, k in many.items()))
    return stacks, max(counts.values(), default=1)


def _npz_keys(path: Path) -> list[str]:
    if sniff(path) != "npz":
        return []
    return list(read_array(path))  # type: ignore[arg-type]


def sample(stacks: Mapping[str, np.ndarray], k: int) -> dict[str, np.ndarray]:
    """The k-th feed of `load_feeds`' stacks (an input with one sample feeds every run)."""
    return {n: s[k if len(s) > 1 else 0] for n, s in stacks.items()}


def random_inputs(bundle, seed: int, bounds: Mapping[str, int] | None = None,
                  ranges: Mapping[str, tuple[float, float]] | None = None) -> dict[str, np.ndarray]:
    """Random feeds inside each input's valid range: floats uniform in `ranges` (an int8 bundle's calibrated
    range) or standard normal (a quantized input: inside the range its scale and zero point cover), bool
    0/1, integers in [0, bound) where `bounds` gives the size of the dimension the input indexes (token ids
    into an embedding), else small non-negative values."""
    rng = np.random.default_rng(seed)
    bounds, ranges = bounds or {}, ranges or {}
    feeds = {}
    for e in bundle.inputs:
        dtype = DType.parse(e["dtype"])
        dt = dtype.np  # ml_dtypes' for bfloat16, float8, int4, ...
        q = e.get("quantization")
        if q and dt.kind in "iu" and len(q["scale"]) == 1:  # float data in the range the int8 type covers
            lim = np.iinfo(dt)
            lo, hi = sorted(((lim.min - q["zero_point"][0]) * q["scale"][0], (lim.max - q["zero_point"][0])
                             * q["scale"][0]))
            feeds[e["name"]] = rng.uniform(lo, hi, e["shape"]).astype(np.float32)
        elif dtype.is_float and e["name"] in ranges:
            feeds[e["name"]] = rng.uniform(*ranges[e["name"]], e["shape"]).astype(np.float32).astype(dt)
        elif dtype.is_float:
            feeds[e["name"]] = rng.standard_normal(e["shape"]).astype(np.float32).astype(dt)
        elif dtype is DType.BOOL:
            feeds[e["name"]] = rng.integers(0, 2, e["shape"]).astype(dt)
        else:  # small non-negative values (inside even uint2's range), or below the indexed dimension
            high = bounds.get(e["name"], min(10, 2 ** (dtype.bits - 1)))
            feeds[e["name"]] = rng.integers(0, max(int(high), 1), e["shape"]).astype(dt)
    return feeds
