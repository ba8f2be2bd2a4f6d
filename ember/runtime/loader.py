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


def entry_point(lib: ctypes.CDLL, name: str) -> Any:
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3
    return fn


def _aligned(nbytes: int, align: int = 64) -> np.ndarray:
    raw = np.empty(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes]


class Bundle:
    """A compiled bundle on disk: its manifest, and for the host target a function to run it.

    Bundles for other targets load for inspection (inputs, outputs, memory, footprint); running one
    needs its device (or an emulator: see tests/cross)."""

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
        self.target: str = self.manifest.get("target", "host")
        self._fn: Any = entry_point(self._link(sanitize), self.name) if self.target == "host" else None

    def _link(self, sanitize: bool) -> ctypes.CDLL:
        from ember.toolchain.cc import link_shared

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

    @property
    def footprint(self) -> dict[str, Any]:
        """Flash and RAM the bundle needs on its target (code, tables, weights; regions)."""
        return dict(self.manifest.get("footprint", {}))

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once: inputs by model name (numpy, framework layout); returns outputs by name."""
        return self.runner(inputs)()

    def runner(self, inputs: dict[str, np.ndarray], entry: Any = None) -> Runner:
        """Buffers allocated and inputs copied in once; calling the result runs the bundle again on them
        (what benchmarks time: one C call, no allocation). `entry`: another build of the same entry
        point (the instrumented one of `ember bench`)."""
        if entry is None and self._fn is None:
            raise BundleError(f"{self.path}: built for target '{self.target}'; only host bundles run here")
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
        return Runner(self, entry or self._fn, mutable, activations)

    __call__ = run


class Runner:
    """One bundle bound to its three regions, inputs already in place."""

    def __init__(self, bundle: Bundle, fn: Any, mutable: np.ndarray, activations: np.ndarray) -> None:
        self.bundle, self.fn, self.mutable, self.activations = bundle, fn, mutable, activations
        self.args = (bundle._weights.ctypes.data, mutable.ctypes.data, activations.ctypes.data)

    def run_once(self) -> None:
        rc = self.fn(*self.args)
        if rc != 0:
            raise EmberError(f"bundle {self.bundle.name} returned {rc}")

    def outputs(self) -> dict[str, np.ndarray]:
        out = {}
        for e in self.bundle.outputs:
            dt = DType.parse(e["dtype"]).np
            raw = self.mutable[e["offset"] : e["offset"] + e["bytes"]]
            out[e["name"]] = raw.view(dt).reshape(e["shape"]).copy()
        return out

    def __call__(self) -> dict[str, np.ndarray]:
        self.run_once()
        return self.outputs()


def load(path: str | os.PathLike) -> Bundle:
    return Bundle(path)
