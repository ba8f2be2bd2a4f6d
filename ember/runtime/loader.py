"""Host runtime: link a bundle's object into a shared library and call it through ctypes."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

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


def link_flags(manifest: dict[str, Any]) -> tuple[str, ...]:
    """What linking the bundle's object needs besides it (-pthread for a multi-threaded bundle)."""
    return tuple(manifest.get("threads", {}).get("link_flags", []))


def set_threads(lib: ctypes.CDLL, manifest: dict[str, Any], n: int) -> None:
    """Calls NAME_set_threads(n) of a loaded build of the bundle, after checking n against its pool."""
    most = int(manifest.get("threads", {}).get("max", 1))
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
        how = f"compiled with --threads {most}" if most > 1 else "compiled without --threads"
        raise BundleError(f"threads {n!r}: bundle {manifest['name']} runs on 1 to {most} threads ({how})")
    if most > 1:
        fn = getattr(lib, f"{manifest['name']}_set_threads")
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        fn(n)


def find_manifest(path: Path, name: str | None = None) -> Path:
    """NAME.json of the bundle at `path`: that file itself, DIR/NAME.json, or a folder's only bundle."""
    if path.is_file() and path.suffix == ".json":
        return path
    if not path.is_dir():
        raise BundleError(f"{path}: no such bundle directory")
    if name is not None:
        return path / f"{name}.json"
    found = [m for m in sorted(path.glob("*.json")) if _names_itself(m)]
    if not found:
        raise BundleError(f"{path}: not a bundle directory (no NAME.json)")
    if len(found) > 1:
        raise BundleError(f"{path}: holds {len(found)} bundles ({', '.join(m.stem for m in found)}); "
                          f"name one as {path / found[0].name}")
    return found[0]


def _names_itself(manifest: Path) -> bool:
    """Whether a .json file is an ember manifest (NAME.json whose name is NAME): others are not bundles."""
    try:
        with manifest.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'"ember_version"' in head or f'"name": "{manifest.stem}"'.encode() in head


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest, checked field by field: a damaged one is a one-line BundleError, not a KeyError later."""
    try:
        m = json.loads(path.read_text())
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise BundleError(f"{path}: not a valid bundle manifest ({type(e).__name__}; truncated?)") from None
    try:
        _check_manifest(m)
    except (KeyError, TypeError, ValueError) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise BundleError(f"{path}: not a valid bundle manifest ({detail})") from None
    return m


def _count(x: Any, what: str) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 0:
        raise ValueError(f"{what} is {x!r}, not a byte count")
    return x


def _check_manifest(m: Any) -> None:
    if not isinstance(m, dict):
        raise TypeError("not a JSON object")
    if not isinstance(m["name"], str) or not m["name"].isidentifier():
        raise ValueError(f"name {m['name']!r} is not a C identifier")
    for key in ("ember_version", "ops"):
        m[key]  # noqa: B018 - the KeyError names the field
    mem = m["memory"]
    for region in ("constant", "mutable", "activations"):
        _count(mem[region], f"memory.{region}")
    for kind in ("inputs", "outputs"):
        if not isinstance(m[kind], list):
            raise TypeError(f"{kind} is not a list")
        for e in m[kind]:
            what = f"{kind} '{e['name']}'"
            try:
                dt = DType.parse(e["dtype"])
            except (KeyError, ValueError, AttributeError):
                raise ValueError(f"{what}: unknown dtype {e['dtype']!r}") from None
            if not isinstance(e["shape"], list) or not all(isinstance(d, int) and d >= 0 for d in e["shape"]):
                raise ValueError(f"{what}: shape {e['shape']!r} is not a list of sizes")
            offset, nbytes = _count(e["offset"], f"{what} offset"), _count(e["bytes"], f"{what} bytes")
            if nbytes != int(np.prod(e["shape"], dtype=np.int64)) * dt.np.itemsize:
                raise ValueError(f"{what}: {nbytes} bytes do not hold {dt.short}{e['shape']}")
            valid = e.get("valid_count")
            if valid is not None and not _valid_count_fits(valid, e, m["outputs"] if kind == "outputs" else []):
                raise ValueError(f"{what}: valid_count {valid!r} names no output or axis")
            if offset + nbytes > mem["mutable"]:
                raise ValueError(f"{what}: bytes {offset}..{offset + nbytes} lie outside the mutable region "
                                 f"({mem['mutable']} bytes)")
    for kind in ("inputs", "outputs"):
        names = {e["name"] for e in m[kind]}
        for seq, elems in _sequences(m, kind).items():
            if not isinstance(elems, list) or not set(elems) <= names:
                raise ValueError(f"sequences.{kind} '{seq}': {elems!r} are not names of the bundle's {kind}")


def _valid_count_fits(valid: Any, entry: dict[str, Any], outputs: list[dict[str, Any]]) -> bool:
    return (isinstance(valid, dict) and valid.get("count") in {o["name"] for o in outputs}
            and isinstance(valid.get("axis"), int) and 0 <= valid["axis"] < max(len(entry["shape"]), 1))


def _sequences(manifest: dict[str, Any], kind: str) -> dict[str, list[str]]:
    """NAME.json `sequences`: model input/output name -> its elements' input/output names."""
    return manifest.get("sequences", {}).get(kind, {})


def element_inputs(manifest: dict[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs by the bundle's input names: a sequence input given as a list (or tuple) of arrays becomes its
    element inputs, which must be as many as the bundle was compiled for."""
    seqs = _sequences(manifest, "inputs")
    flat = {k: v for k, v in inputs.items() if k not in seqs}
    for name, elems in seqs.items():
        if name not in inputs:
            if not any(e in inputs for e in elems):
                raise BundleError(f"missing input '{name}' (a sequence of {len(elems)} tensors)")
            continue  # given element by element
        items = inputs[name]
        if not isinstance(items, (list, tuple)) or len(items) != len(elems):
            got = f"{len(items)} elements" if isinstance(items, (list, tuple)) else type(items).__name__
            raise BundleError(f"input '{name}': a sequence of {len(elems)} arrays expected, got {got}")
        flat.update(zip(elems, items, strict=True))
    return flat


def sequence_outputs(manifest: dict[str, Any], outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Outputs by model name: each sequence output the list of its element outputs."""
    out: dict[str, Any] = dict(outputs)
    for name, elems in _sequences(manifest, "outputs").items():
        out[name] = [out.pop(e) for e in elems]
    return out


def trim_to_counts(outputs: dict[str, np.ndarray], entries: list[dict[str, Any]],
                   copy: bool = True) -> dict[str, np.ndarray]:
    """Outputs whose size depends on values (NAME.json `valid_count`, ember/ops/counted.py) cut to the
    entries their count output says are valid: contiguous copies, or views of the given arrays."""
    for e in entries:
        valid = e.get("valid_count")
        if valid:
            arr, axis = outputs[e["name"]], valid["axis"]
            count = min(max(int(np.asarray(outputs[valid["count"]]).reshape(-1)[0]), 0), arr.shape[axis])
            cut = arr[(slice(None),) * axis + (slice(0, count),)]
            outputs[e["name"]] = np.ascontiguousarray(cut) if copy else cut
    return outputs


def _quant_params(q: dict[str, Any], ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point of a NAME.json `quantization` entry, shaped to broadcast along its axis."""
    scale = np.asarray(q["scale"], np.float64)
    zp = np.asarray(q["zero_point"], np.float64)
    axis = q.get("axis")
    if scale.size > 1 and axis is not None and ndim:
        shape = [1] * ndim
        shape[axis % ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return scale, zp


def quantize_array(x: np.ndarray, q: dict[str, Any], dtype: np.dtype) -> np.ndarray:
    """Float data into a quantized input as ONNX QuantizeLinear does it: round half to even of x / scale
    in float32, plus the zero point, saturated to the type."""
    scale, zp = _quant_params(q, x.ndim)
    lim = np.iinfo(dtype)
    return np.clip(np.rint(x.astype(np.float32) / scale.astype(np.float32)) + zp, lim.min, lim.max).astype(dtype)


def dequantize_array(x: np.ndarray, q: dict[str, Any]) -> np.ndarray:
    """A quantized tensor's float values: (x - zero point) * scale."""
    scale, zp = _quant_params(q, x.ndim)
    return ((x.astype(np.float64) - zp) * scale).astype(np.float32)


_FLOAT32 = np.dtype(np.float32)


class Port(NamedTuple):
    """One input or output of a bundle, parsed from NAME.json once: where it lies in the mutable region."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    quantization: dict[str, Any] | None


def _ports(entries: list[dict[str, Any]]) -> tuple[Port, ...]:
    return tuple(Port(e["name"], DType.parse(e["dtype"]).np, tuple(e["shape"]), e["offset"], e["bytes"],
                      e.get("quantization")) for e in entries)


class Regions:
    """One mutable and one activations region, with every input's and output's place in the mutable region as a
    typed view made once: a run copies the inputs into their views and the outputs out of theirs, nothing else."""

    __slots__ = ("mutable", "activations", "args", "ins", "outs")

    def __init__(self, bundle: Bundle) -> None:
        mem = bundle.manifest["memory"]
        self.mutable = _allocate(mem["mutable"], "mutable region")
        self.activations = _allocate(mem["activations"], "activations region")
        self.args = (bundle._weights.ctypes.data, self.mutable.ctypes.data, self.activations.ctypes.data)
        self.ins = [self._view(p) for p in bundle.ports_in]
        self.outs = [self._view(p) for p in bundle.ports_out]

    def _view(self, p: Port) -> np.ndarray:
        return self.mutable[p.offset : p.offset + p.nbytes].view(p.dtype).reshape(p.shape)


class Bundle:
    """A compiled bundle on disk: its manifest, and for the host target a function to run it.

    Bundles for other targets load for inspection (inputs, outputs, memory, footprint); running one
    needs its device (or an emulator: see tests/cross).

    Threads: `run` is safe to call from many threads at once (each call takes a set of regions no other call
    holds; the entry point is re-entrant). The bundle keeps those sets for the next calls, one per call that
    ran at the same time, so a run allocates nothing but its outputs (and with `out=`, not those either).
    A `Runner` owns one set of regions, so it runs one call at a time (a lock)."""

    def __init__(self, path: str | os.PathLike, sanitize: bool = False, name: str | None = None) -> None:
        manifest = find_manifest(Path(path), name)
        self.path = manifest.parent
        self.manifest: dict[str, Any] = read_manifest(manifest)
        self.name: str = self.manifest["name"]
        if manifest.stem != self.name:
            raise BundleError(f"{manifest}: the manifest is of bundle '{self.name}', not '{manifest.stem}'")
        for suffix in (".o", ".weights.bin"):
            if not (self.path / f"{self.name}{suffix}").exists():
                raise BundleError(f"{self.path}: missing {self.name}{suffix}")
        self.inputs = self.manifest["inputs"]
        self.outputs = self.manifest["outputs"]
        self.ports_in, self.ports_out = _ports(self.inputs), _ports(self.outputs)
        self._sequences = bool(_sequences(self.manifest, "inputs") or _sequences(self.manifest, "outputs"))
        self._counted = any(e.get("valid_count") for e in self.outputs)
        self._free: list[Regions] = []  # regions no run holds now; list.pop/append are atomic
        mem = self.manifest["memory"]
        weights = self.path / f"{self.name}.weights.bin"
        if weights.stat().st_size != mem["constant"]:
            raise BundleError(f"{weights}: {weights.stat().st_size:,} bytes, the manifest says {mem['constant']:,} "
                              "(truncated or from another build)")
        self._weights = _allocate(mem["constant"], "constant weights")
        self._weights[:] = np.frombuffer(weights.read_bytes(), np.uint8)
        self.target: str = self.manifest.get("target", "host")
        self._lib = self._link(sanitize) if self.target == "host" else None
        self._fn: Any = entry_point(self._lib, self.name) if self._lib is not None else None

    def _link(self, sanitize: bool) -> ctypes.CDLL:
        from ember.toolchain.cc import link_shared

        obj = self.path / f"{self.name}.o"
        # Named by the object's hash: a process that loaded an older build of this bundle keeps
        # its mapping of the old library instead of seeing it overwritten underneath.
        digest = hashlib.sha256(obj.read_bytes()).hexdigest()[:12]
        so = self.path / f"{self.name}.{digest}.so"
        if not so.exists():
            for old in self.path.glob(f"{self.name}.*.so"):
                if re.fullmatch(r"[0-9a-f]{12}", old.name[len(self.name) + 1 : -3]):
                    old.unlink()
            # Linked under a temporary name and renamed: an interrupted link (Ctrl-C) leaves no half library
            # that the next run would try to load.
            part = so.with_name(f"{so.name}.{os.getpid()}.part")
            try:
                link_shared([obj], part, self.manifest["options"].get("cc"), sanitize, link_flags(self.manifest))
                os.replace(part, so)
            finally:
                part.unlink(missing_ok=True)
        try:
            return ctypes.CDLL(str(so.resolve()))
        except OSError as e:
            raise BundleError(f"{so}: cannot load ({e})") from None

    @property
    def threads(self) -> int:
        """The most threads the bundle can use (`--threads`; 1: it runs on the calling thread)."""
        return int(self.manifest.get("threads", {}).get("max", 1))

    def set_threads(self, n: int) -> None:
        """How many threads its calls use from now on: 1 up to `threads` (results do not depend on it)."""
        if self._lib is None:
            raise BundleError(f"{self.path}: built for target '{self.target}'; only host bundles run here")
        set_threads(self._lib, self.manifest, n)

    @property
    def memory(self) -> dict[str, int]:
        return dict(self.manifest["memory"])

    @property
    def footprint(self) -> dict[str, Any]:
        """Flash and RAM the bundle needs on its target (code, tables, weights; regions)."""
        return dict(self.manifest.get("footprint", {}))

    def run(self, inputs: dict[str, np.ndarray], cast: bool = False, dequantize: bool = False,
            out: Mapping[str, np.ndarray] | list[np.ndarray] | tuple[np.ndarray, ...] | None = None,
            ) -> dict[str, Any]:
        """Run once: inputs by model name (numpy, framework layout); returns outputs by name.

        Inputs must have the bundle's dtypes exactly; `cast=True` converts them (numpy's rules). Float data
        for a quantized input (`--io int8`) is quantized with its scale and zero point; `dequantize=True`
        returns quantized outputs as float32. Inputs of the right dtype and shape are copied straight into the
        bundle's region, with no conversion copy first (strided ones too).

        `out`: preallocated output arrays, a dict by output name (NAME.json's, a sequence's elements by
        their own names) or a list in NAME.json's order, each C-contiguous and writable with the output's
        dtype (float32 where `dequantize` applies) and shape. The outputs are written into them and they
        are returned (an output trimmed to its valid count as a view of its array): the run allocates
        nothing (but the float32 arrays it dequantizes into them)."""
        if self._fn is None:
            raise BundleError(f"{self.path}: built for target '{self.target}'; only host bundles run here")
        feeds = self._ready_inputs(inputs)
        if feeds is None:  # a conversion, a sequence or an error to report: the checked path
            arrays = self.check_inputs(inputs, cast)
            feeds = [arrays[p.name] for p in self.ports_in]
        targets = None if out is None else self._out_arrays(out, dequantize)
        try:
            regions = self._free.pop()
        except IndexError:
            regions = Regions(self)
        try:
            for view, arr in zip(regions.ins, feeds, strict=True):
                view[...] = arr
            rc = self._fn(*regions.args)
            if rc != 0:
                raise EmberError(f"bundle {self.name} returned {rc}")
            outs = self._collect(regions.outs, targets, dequantize)
        finally:
            self._free.append(regions)
        return outs

    def _ready_inputs(self, inputs: Any) -> list[np.ndarray] | None:
        """The inputs in port order when each is already an array of the port's dtype and shape, else None."""
        if type(inputs) is not dict or len(inputs) != len(self.ports_in) or self._sequences:
            return None
        feeds = []
        for p in self.ports_in:
            arr = inputs.get(p.name)
            if type(arr) is not np.ndarray or arr.dtype != p.dtype or arr.shape != p.shape:
                return None
            feeds.append(arr)
        return feeds

    def _out_arrays(self, out: Any, dequantize: bool) -> list[np.ndarray] | tuple[np.ndarray, ...]:
        """`run`'s `out=` in port order, each checked to take its output as it is: one-line errors."""
        n = len(self.ports_out)
        kind = type(out)
        if kind is not dict and kind is not list and kind is not tuple:
            out = dict(out) if isinstance(out, Mapping) else list(out) if isinstance(out, list | tuple) else out
            kind = type(out)
        if kind is dict and len(out) == n:
            try:
                arrays = [out[p.name] for p in self.ports_out]
            except KeyError:
                raise self._out_error(out) from None
        elif (kind is list or kind is tuple) and len(out) == n:
            arrays = out
        else:
            raise self._out_error(out)
        for p, arr in zip(self.ports_out, arrays, strict=True):
            dt = _FLOAT32 if dequantize and p.quantization else p.dtype
            if (not isinstance(arr, np.ndarray) or arr.dtype != dt or arr.shape != p.shape
                    or not arr.flags.c_contiguous or not arr.flags.writeable):
                got = type(arr).__name__
                if isinstance(arr, np.ndarray):
                    got = (f"{arr.dtype}{list(arr.shape)}{'' if arr.flags.c_contiguous else ' not C-contiguous'}"
                           f"{'' if arr.flags.writeable else ' read-only'}")
                raise BundleError(f"out '{p.name}': {got}; the bundle writes a C-contiguous, writable "
                                  f"{dt}{list(p.shape)}")
        return arrays

    def _out_error(self, out: Any) -> BundleError:
        names = [p.name for p in self.ports_out]
        if isinstance(out, dict):
            unknown = sorted(map(str, set(out) - set(names)))
            missing = [n for n in names if n not in out]
            what = f"unknown output(s) {unknown}" if unknown else f"missing output(s) {missing}"
            return BundleError(f"out=: {what}; the bundle writes {names}")
        if isinstance(out, list | tuple):
            return BundleError(f"out=: {len(out)} arrays for the bundle's {len(names)} outputs {names}")
        return BundleError(f"out= must be a dict or list of numpy arrays, not {type(out).__name__}")

    def _collect(self, views: list[np.ndarray], targets: list[np.ndarray] | tuple[np.ndarray, ...] | None,
                 dequantize: bool) -> dict[str, Any]:
        """Outputs out of the region: into `targets`, or each into a new array."""
        outs: dict[str, np.ndarray] = {}
        for i, (p, view) in enumerate(zip(self.ports_out, views, strict=True)):
            deq = dequantize and p.quantization
            if targets is None:
                outs[p.name] = dequantize_array(view, p.quantization) if deq else view.copy()
            else:
                targets[i][...] = dequantize_array(view, p.quantization) if deq else view
                outs[p.name] = targets[i]
        if self._counted:
            outs = trim_to_counts(outs, self.outputs, copy=targets is None)
        return sequence_outputs(self.manifest, outs) if self._sequences else outs

    def check_inputs(self, inputs: Any, cast: bool = False) -> dict[str, np.ndarray]:
        """The inputs as contiguous arrays of the bundle's dtypes, or a one-line error naming the input."""
        if not isinstance(inputs, Mapping):
            raise BundleError(f"bundle {self.name}: inputs must be a dict of arrays by input name, "
                              f"not {type(inputs).__name__}")
        inputs = element_inputs(self.manifest, inputs)
        names = {e["name"] for e in self.inputs}
        unknown = set(inputs) - names
        if unknown:
            raise BundleError(f"unknown input(s) {sorted(map(str, unknown))}; the bundle takes {sorted(names)}")
        arrays = {}
        for e in self.inputs:
            if e["name"] not in inputs:
                raise BundleError(f"missing input '{e['name']}' ({e['dtype']}{e['shape']})")
            dt = DType.parse(e["dtype"]).np
            arr = np.asarray(inputs[e["name"]])
            if tuple(arr.shape) != tuple(e["shape"]):
                raise BundleError(f"input '{e['name']}': shape {list(arr.shape)}, the bundle expects {e['shape']}")
            if arr.dtype.kind == "f" and e.get("quantization") and dt.kind in "iu":
                if not np.all(np.isfinite(arr)):
                    raise BundleError(f"input '{e['name']}': float data to quantize holds NaN or infinity")
                arr = quantize_array(arr, e["quantization"], dt)
            if arr.dtype != dt:
                if not cast:
                    raise BundleError(f"input '{e['name']}': dtype {arr.dtype}, the bundle expects {e['dtype']} "
                                      "(convert it, or pass cast=True / --cast)")
                if arr.dtype.kind not in "biuf" or (arr.dtype.kind == "f" and dt.kind in "biu"
                                                    and not np.all(np.isfinite(arr))):
                    raise BundleError(f"input '{e['name']}': cannot cast {arr.dtype} to {e['dtype']}")
            arrays[e["name"]] = np.ascontiguousarray(arr, dtype=dt)
        return arrays

    def by_element(self, outputs: dict[str, Any]) -> dict[str, np.ndarray]:
        """`run`'s outputs with each sequence (a list) replaced by its element outputs, by their names in
        NAME.json: every value an array (what `ember run` prints and saves)."""
        flat = dict(outputs)
        for name, elems in _sequences(self.manifest, "outputs").items():
            if isinstance(flat.get(name), list):
                flat.update(zip(elems, flat.pop(name), strict=True))
        return flat

    def runner(self, inputs: dict[str, np.ndarray], entry: Any = None, cast: bool = False) -> Runner:
        """Buffers allocated and inputs copied in once; calling the result runs the bundle again on them
        (what benchmarks time: one C call, no allocation). `entry`: another build of the same entry
        point (the instrumented one of `ember bench`)."""
        if entry is None and self._fn is None:
            raise BundleError(f"{self.path}: built for target '{self.target}'; only host bundles run here")
        arrays = self.check_inputs(inputs, cast)
        regions = Regions(self)
        for p, view in zip(self.ports_in, regions.ins, strict=True):
            np.copyto(view, arrays[p.name])
        return Runner(self, entry or self._fn, regions.mutable, regions.activations)

    __call__ = run


def _allocate(nbytes: int, what: str) -> np.ndarray:
    try:
        return _aligned(nbytes)
    except MemoryError:
        raise BundleError(f"cannot allocate the {what}: {nbytes:,} bytes") from None


# A bundle whose first run took less than this runs with the GIL held (see Runner).
QUICK_RUN_S = 1e-3


class Runner:
    """One bundle bound to its three regions, inputs already in place. Calls from several threads take
    turns: they share the regions, so running two at once would mix their activations.

    Turns are a lock around a call that releases the GIL, except for quick bundles (the first run, made
    here, took under QUICK_RUN_S): those are called with the GIL held throughout, so that no two calls
    can overlap and run_once needs no lock. A lock and a GIL hand-over cost 1-3 us a call on some
    machines, a third of a keyword spotter's run; holding the GIL a millisecond at most costs other
    threads little."""

    def __init__(self, bundle: Bundle, fn: Any, mutable: np.ndarray, activations: np.ndarray) -> None:
        self.bundle, self.fn, self.mutable, self.activations = bundle, fn, mutable, activations
        self.args = (bundle._weights.ctypes.data, mutable.ctypes.data, activations.ctypes.data)
        self.lock = threading.Lock()
        self.held: Any = None  # the entry point called with the GIL held, for quick bundles
        t0 = time.perf_counter()
        rc = fn(*self.args)  # no other thread has this runner yet
        if rc == 0 and time.perf_counter() - t0 < QUICK_RUN_S:
            addr = ctypes.cast(fn, ctypes.c_void_p).value
            self.held = ctypes.PYFUNCTYPE(ctypes.c_int, *[ctypes.c_void_p] * 3)(addr)

    def run_once(self) -> None:
        if self.held is not None:
            self._run()  # the GIL, held through the call, keeps other calls out
            return
        with self.lock:
            self._run()

    def _run(self) -> None:
        rc = (self.held or self.fn)(*self.args)
        if rc != 0:
            raise EmberError(f"bundle {self.bundle.name} returned {rc}")

    def outputs(self) -> dict[str, np.ndarray]:
        with self.lock:
            return self._outputs()

    def _outputs(self) -> dict[str, np.ndarray]:
        out = {}
        for p in self.bundle.ports_out:
            out[p.name] = self.mutable[p.offset : p.offset + p.nbytes].view(p.dtype).reshape(p.shape).copy()
        return sequence_outputs(self.bundle.manifest, trim_to_counts(out, self.bundle.outputs))

    def __call__(self) -> dict[str, np.ndarray]:
        with self.lock:
            self._run()
            return self._outputs()


def load(path: str | os.PathLike, name: str | None = None) -> Bundle:
    """The bundle in folder `path` (its only one, or the one named `name`), or at `path` = DIR/NAME.json."""
    return Bundle(path, name=name)
