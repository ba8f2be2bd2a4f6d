"""Capture builds: a bundle's NAME.c compiled with -DEMBER_CAPTURE, linked with a hosted copier.

The generated code calls `ember_capture_tensor(value, data, bytes)` after every node for each of its
outputs (value = index of the output among all node outputs, in graph order). The copier below puts
the bytes at `buffer + offsets[value]` of a buffer the caller binds before each run (offset -1 = not
wanted), so many runs can land side by side in one numpy array and be reduced there in bulk.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from ember.errors import BundleError
from ember.runtime.bench import _compile_hosted
from ember.runtime.loader import entry_point
from ember.toolchain.cc import compile_object, link_shared
from ember.toolchain.targets import get_target

_COPIER_C = """#include <stddef.h>
#include <string.h>
static unsigned char *capture_buffer;
static const long long *capture_offsets;
static int capture_count;
void ember_capture_bind(unsigned char *buffer, const long long *offsets, int count) {
    capture_buffer = buffer;
    capture_offsets = offsets;
    capture_count = count;
}
void ember_capture_tensor(int value, const void *data, size_t bytes) {
    if (capture_buffer && value >= 0 && value < capture_count && capture_offsets[value] >= 0)
        memcpy(capture_buffer + capture_offsets[value], data, bytes);
}
"""


def _aligned(nbytes: int, align: int = 64) -> np.ndarray:
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start : start + nbytes]


class CaptureLibrary:
    """A capture build of one generated bundle source, loaded, with its three memory regions.

    `weights`, `mutable_size`, `activations_size` come from the memory plan of the same source.
    """

    def __init__(self, source: Path, name: str, weights: bytes | bytearray, mutable_size: int, activations_size: int,
                 opt_level: int = 2) -> None:
        work = source.parent
        target = get_target("host")
        obj, copier_c, copier_o, so = (work / f"{name}.capture.o", work / "ember_capture.c",
                                       work / "ember_capture.o", work / f"{name}.capture.so")
        compile_object(source, obj, target, target.float_abi(None), opt_level, "pic", None, None,
                       extra=("-DEMBER_CAPTURE", f"-I{work}"))
        copier_c.write_text(_COPIER_C)
        _compile_hosted(copier_c, copier_o)
        link_shared([obj, copier_o], so, None)
        try:
            self.lib = ctypes.CDLL(str(so.resolve()))
        except OSError as e:
            raise BundleError(f"{so}: cannot load the capture build ({e})") from None
        self.fn = entry_point(self.lib, name)
        self.bind = self.lib.ember_capture_bind
        self.bind.restype = None
        self.bind.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        self.weights = _aligned(len(weights))
        self.weights[:] = np.frombuffer(weights, np.uint8)
        self.mutable = _aligned(mutable_size)
        self.activations = _aligned(activations_size)
        self._offsets = np.zeros(0, np.int64)

    def set_offsets(self, offsets: np.ndarray) -> None:
        """Where in a bound buffer each captured value goes (bytes; -1 = skip)."""
        self._offsets = np.ascontiguousarray(offsets, dtype=np.int64)

    def run(self, buffer: np.ndarray) -> None:
        """One run of the bundle on the inputs already in `mutable`, copying captures into `buffer`."""
        self.bind(buffer.ctypes.data, self._offsets.ctypes.data, len(self._offsets))
        try:
            rc = self.fn(self.weights.ctypes.data, self.mutable.ctypes.data, self.activations.ctypes.data)
        finally:
            self.bind(None, None, 0)
        if rc != 0:
            raise BundleError(f"capture build returned {rc}")
