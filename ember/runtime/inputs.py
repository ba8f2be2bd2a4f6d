"""The inputs a bundle runs on: arrays from .npy/.npz files (`ember run`, `ember validate`), or random
ones of the right types and shapes (`ember bench`, `ember validate` without data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ember.errors import EmberError, OptionError
from ember.ir.dtypes import DType


def random_inputs(bundle, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for e in bundle.inputs:
        dtype = DType.parse(e["dtype"])
        dt = dtype.np  # ml_dtypes' for bfloat16, float8, int4, ...
        if dtype.is_float:
            feeds[e["name"]] = rng.standard_normal(e["shape"]).astype(np.float32).astype(dt)
        elif dtype is DType.BOOL:
            feeds[e["name"]] = rng.integers(0, 2, e["shape"]).astype(dt)
        else:  # small non-negative values, inside even uint2's range
            feeds[e["name"]] = rng.integers(0, min(10, 2 ** (dtype.bits - 1)), e["shape"]).astype(dt)
    return feeds


def load_arrays(specs: list[str], names: list[str]) -> dict[str, np.ndarray]:
    """--input NAME=FILE (.npy or .npz); a lone FILE feeds the only input; a .npz maps its keys.
    An input given twice (by two flags, or a flag and a .npz key) is refused, not silently replaced."""
    feeds: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}

    def put(name: str, arr: np.ndarray, path: str) -> None:
        if name in feeds:
            raise OptionError(f"--input {name} given twice ({origin[name]} and {path})")
        feeds[name], origin[name] = arr, path

    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        p = Path(path)
        if not p.exists():
            raise EmberError(f"{path}: no such file")
        if not p.is_file() and not p.is_char_device():
            raise EmberError(f"{path}: not a file")
        try:
            data = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            detail = str(e).strip().splitlines()[0] if str(e).strip() else "empty or truncated"
            raise EmberError(f"{path}: not a .npy/.npz file ({detail})") from None
        if isinstance(data, np.lib.npyio.NpzFile):
            try:
                arrays = {k: data[k] for k in data.files}
            except (OSError, ValueError, EOFError) as e:
                raise EmberError(f"{path}: damaged .npz file ({e})") from None
            if not arrays:
                raise EmberError(f"{path}: the .npz holds no arrays")
            if name:
                put(name, next(iter(arrays.values())), path)
            else:
                for k, a in arrays.items():
                    put(k, a, path)
        elif name:
            put(name, data, path)
        elif len(names) == 1:
            put(names[0], data, path)
        else:
            raise EmberError(f"{path}: the bundle has {len(names)} inputs; write --input NAME={path}")
    return feeds
