"""Host runtime: link a bundle's object into a shared library and call it through ctypes."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import BundleError, EmberError
from ember.ir.dtypes import DType


def _aligned(nbytes: int, align: int = 64) -> np.ndarray:
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes]


class Bundle:
    """A compiled bundle on disk, loaded for running on this machine."""

    def __init__(self, path: str | os.PathLike, sanitize: bool = False) -> None:
        self.path = Path(path)
        manifests = sorted(self.path.glob("*.json")) if self.path.is_dir() else []
        if not manifests:
            raise BundleError(f"{self.path}: not a bundle directory (no NAME.json)")
        self.manifest: dict[str, Any] = json.loads(manifests[0].read_text())
        self.name: str = self.manifest["name"]
        for suffix in (".o", ".weights.bin"):
            if not (self.path / f"{self.name}{suffix}").exists():
                raise BundleError(f"{self.path}: missing {self.name}{suffix}")
        self.inputs = self.manifest["inputs"]
        self.outputs = self.manifest["outputs"]
        mem = self.manifest["memory"]
        self._weights = _aligned(mem["constant"])
        self._weights[:] = np.frombuffer((self.path / f"{self.name}.weights.bin").read_bytes(), np.uint8)
        self._lib = self._link(sanitize)
        self._fn = getattr(self._lib, self.name)
        self._fn.restype = ctypes.c_int
        self._fn.argtypes = [ctypes.c_void_p] * 3

    def _link(self, sanitize: bool) -> ctypes.CDLL:
        from ember.toolchain.cc import link_shared

        if self.manifest.get("target", "host") != "host":
            raise BundleError(f"{self.path}: built for target '{self.manifest['target']}', cannot run on the host")
        obj = self.path / f"{self.name}.o"
        # Named by the object's hash: a process that loaded an older build of this bundle keeps
        # its mapping of the old library instead of seeing it overwritten underneath.
        digest = hashlib.sha256(obj.read_bytes()).hexdigest()[:12]
        so = self.path / f"{self.name}.{digest}.so"
        if not so.exists():
            for old in self.path.glob(f"{self.name}.*.so"):
                old.unlink()
            link_shared([obj], so, self.manifest["options"].get("cc"), sanitize)
        try:
            return ctypes.CDLL(str(so.resolve()))
        except OSError as e:
            raise BundleError(f"{so}: cannot load ({e})") from None

    @property
    def memory(self) -> dict[str, int]:
        return dict(self.manifest["memory"])

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once: inputs by model name (numpy, framework layout); returns outputs by name."""
        mem = self.manifest["memory"]
        mutable = _aligned(mem["mutable"])
        activations = _aligned(mem["activations"])
        names = {e["name"] for e in self.inputs}
        unknown = set(inputs) - names
        if unknown:
            raise EmberError(f"unknown input(s) {sorted(unknown)}; the bundle takes {sorted(names)}")
        for e in self.inputs:
            if e["name"] not in inputs:
                raise EmberError(f"missing input '{e['name']}' ({e['dtype']}{e['shape']})")
            dt = DType.parse(e["dtype"]).np
            arr = np.asarray(inputs[e["name"]])
            if tuple(arr.shape) != tuple(e["shape"]):
                raise EmberError(f"input '{e['name']}': shape {list(arr.shape)}, the bundle expects {e['shape']}")
            if arr.dtype != dt and not np.can_cast(arr.dtype, dt, "same_kind"):
                raise EmberError(f"input '{e['name']}': dtype {arr.dtype}, the bundle expects {e['dtype']}")
            data = np.ascontiguousarray(arr, dtype=dt).reshape(-1).view(np.uint8)
            mutable[e["offset"] : e["offset"] + data.size] = data
        rc = self._fn(self._weights.ctypes.data, mutable.ctypes.data, activations.ctypes.data)
        if rc != 0:
            raise EmberError(f"bundle {self.name} returned {rc}")
        out = {}
        for e in self.outputs:
            dt = DType.parse(e["dtype"]).np
            raw = mutable[e["offset"] : e["offset"] + e["bytes"]]
            out[e["name"]] = raw.view(dt).reshape(e["shape"]).copy()
        return out

    __call__ = run


def load(path: str | os.PathLike) -> Bundle:
    return Bundle(path)
