"""Run an ember bundle from Python two ways: `ember.load` (the package links and calls it), and plain
ctypes on a shared library linked from NAME.o (what any program with a C FFI does; no ember needed at
run time). Both print the top-1 class and must agree.

Usage: python examples/python/classify.py BUNDLE_DIR [IMAGE.f32]
  (BUNDLE_DIR from `python examples/make_lenet.py lenet.onnx && ember compile lenet.onnx -o BUNDLE_DIR`;
  IMAGE.f32: 784 raw float32 values, else a fixed test pattern)
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def with_ember(bundle_dir: Path, x: np.ndarray) -> np.ndarray:
    import ember

    bundle = ember.load(bundle_dir)
    return bundle.run({bundle.inputs[0]["name"]: x})[bundle.outputs[0]["name"]]


def aligned(nbytes: int, align: int) -> np.ndarray:
    """A zeroed byte buffer whose address is a multiple of `align` (the header's NAME_MEM_ALIGN)."""
    raw = np.zeros(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start : start + nbytes]


def with_ctypes(bundle_dir: Path, x: np.ndarray) -> np.ndarray:
    man = json.loads(next(bundle_dir.glob("*.json")).read_text())  # sizes and offsets, as NAME.h states them
    name, mem, align = man["name"], man["memory"], 64
    lib_path = Path(tempfile.mkdtemp()) / f"lib{name}.so"
    subprocess.run(["cc", "-shared", str(bundle_dir / f"{name}.o"), "-o", str(lib_path)], check=True)
    entry = getattr(ctypes.CDLL(str(lib_path)), name)
    entry.restype, entry.argtypes = ctypes.c_int, [ctypes.c_void_p] * 3
    constant = aligned(mem["constant"], align)
    constant[:] = np.fromfile(bundle_dir / f"{name}.weights.bin", np.uint8)
    mutable, activations = aligned(mem["mutable"], align), aligned(mem["activations"], align)
    (inp,), (out,) = man["inputs"], man["outputs"]
    mutable[inp["offset"] : inp["offset"] + inp["bytes"]] = x.astype(np.float32).reshape(-1).view(np.uint8)
    if entry(constant.ctypes.data, mutable.ctypes.data, activations.ctypes.data) != 0:
        raise SystemExit("the bundle failed")
    return mutable[out["offset"] : out["offset"] + out["bytes"]].view(np.float32).reshape(out["shape"]).copy()


def main() -> None:
    bundle_dir = Path(sys.argv[1])
    if len(sys.argv) > 2:
        x = np.fromfile(sys.argv[2], np.float32).reshape(1, 1, 28, 28)
    else:  # the same pattern as examples/c and examples/rust
        x = (((np.arange(784) * 7) % 17) / 16.0 - 0.5).astype(np.float32).reshape(1, 1, 28, 28)
    a, b = with_ember(bundle_dir, x), with_ctypes(bundle_dir, x)
    for label, p in (("ember.load", a), ("ctypes", b)):
        print(f"{label}: top-1 {int(np.argmax(p))} ({float(p.max()):.6f})")
    if not np.array_equal(a, b):
        raise SystemExit("the two ways disagree")


if __name__ == "__main__":
    main()
