"""Signal processing: DFT, STFT (kernels in kernels/signal.c), the Hann/Hamming/Blackman windows and
MelWeightMatrix (compile-time tables).

Complex tensors are real ones with a trailing dim of 2 (real, imaginary); a trailing dim of 1 is a real
signal. Transform lengths are static, so each node gets its twiddle factors as a constant table computed
here in double precision: a radix-2 FFT where the length is a power of two (n/2 twiddles), a direct
O(n^2) DFT otherwise (n twiddles, the index j*k taken mod n so no twiddle is recomputed at run time).
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node, Value
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_FLOATS = {DType.FLOAT32: "f32", DType.FLOAT64: "f64"}


def _scalar_input(node: Node, i: int, what: str, default: int | None = None) -> int | None:
    """A compile-time integer scalar input (None or `default` when absent)."""
    v = node.input(i)
    if v is None:
        return default
    if v.const is None or np.asarray(v.const).size != 1:
        raise ShapeError(f"node '{node.name}' ({node.op}): {what} must be one compile-time integer")
    return int(np.asarray(v.const).reshape(-1)[0])


def _check_float(node: Node, v: Value) -> None:
    if v.dtype not in _FLOATS:
        raise UnsupportedOperatorError(node.op, node.name, f"{v.dtype.short} input (float32 or float64)")


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def twiddles(n: int) -> np.ndarray:
    """(cos, sin)(2 pi k / n) interleaved, for k < n/2 (radix-2 FFT) or k < n (direct DFT)."""
    count = n // 2 if _is_pow2(n) else n
    angle = 2.0 * np.pi * np.arange(count, dtype=np.float64) / n
    return np.stack([np.cos(angle), np.sin(angle)], axis=-1).reshape(-1)


def _emit_twiddles(k: KernelEmitter, n: int, dtype: DType) -> str:
    return k.table(twiddles(n).astype(dtype.np), dtype)


# ---- DFT -----------------------------------------------------------------------------------------
def _dft_params(node: Node) -> tuple[int, int, int, bool, bool]:
    """(axis, n: the transform length, output length along the axis, inverse, onesided)."""
    x = inp(node, 0)
    rank = x.type.rank
    if rank < 2 or x.shape[-1] not in (1, 2):
        raise ShapeError(f"node '{node.name}' (DFT): input {list(x.shape)} must end in a dim of 1 (real) or 2 "
                         "(complex)")
    given = _scalar_input(node, 2, "axis", -2)
    assert given is not None
    a = norm_axis(node, given, rank)
    if a == rank - 1:
        raise ShapeError(f"node '{node.name}' (DFT): the axis cannot be the last (real/imaginary) dim")
    inverse, onesided = bool(node.attrs.get("inverse", 0)), bool(node.attrs.get("onesided", 0))
    m = x.shape[a]
    # inverse + onesided: the input is the first half of a Hermitian spectrum; the output is real, of the
    # even length 2 (m - 1) unless dft_length says otherwise.
    n = _scalar_input(node, 1, "dft_length", 2 * (m - 1) if inverse and onesided else m)
    assert n is not None
    if n < 1:
        raise ShapeError(f"node '{node.name}' (DFT): the transform length {n} must be positive")
    out_len = n // 2 + 1 if onesided and not inverse else n
    return a, n, out_len, inverse, onesided


def _infer_dft(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    a, _, out_len, inverse, onesided = _dft_params(node)
    shape = list(x.shape)
    shape[a] = out_len
    shape[-1] = 1 if inverse and onesided else 2
    return [typed(x.dtype, shape)]


def _as_complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] if x.shape[-1] == 1 else x[..., 0] + 1j * x[..., 1]


def _eval_dft(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a, n, out_len, inverse, onesided = _dft_params(node)
    z = _as_complex(x)
    if inverse and onesided:
        return [np.fft.irfft(z, n=n, axis=a)[..., None].astype(x.dtype)]
    y = np.fft.ifft(z, n=n, axis=a) if inverse else np.fft.fft(z, n=n, axis=a)
    y = np.take(y, np.arange(out_len), axis=a)
    return [np.stack([y.real, y.imag], axis=-1).astype(x.dtype)]


def _dft_scratch(node: Node) -> int:
    _, n, _, _, _ = _dft_params(node)
    return 4 * n * inp(node, 0).dtype.itemsize  # the line being transformed and the direct DFT's result


def _lower_dft(node: Node, k: KernelEmitter) -> None:
    x, y = inp(node, 0), node.outputs[0]
    assert y is not None
    _check_float(node, x)
    a, n, out_len, inverse, onesided = _dft_params(node)
    if y.type.numel == 0:
        return
    outer, inner = math.prod(x.shape[:a]), math.prod(x.shape[a + 1:-1])
    k.call(f"ember_dft_{_FLOATS[x.dtype]}", k.out(0), k.inp(0), k.scratch(x.dtype.ctype),
           _emit_twiddles(k, n, x.dtype), outer, x.shape[a], inner, x.shape[-1], n, out_len, y.shape[-1],
           int(inverse), int(inverse and onesided))


# Inputs: (input [..., L, ..., 1 or 2], dft_length (optional, compile-time), axis (optional, compile-time,
# default -2; opset < 20 carries it as an attribute, default 1: frontends/onnx/ops.py)).
# Attributes: inverse (0), onesided (0). inverse + onesided: the inverse of a one-sided (real) spectrum.
register(OpDef("DFT", infer=_infer_dft, evaluate=_eval_dft, lower=_lower_dft, shape_inputs=(1, 2),
               scratch=_dft_scratch, kernels=("ember_dft_f32", "ember_dft_f64")))


# ---- STFT ----------------------------------------------------------------------------------------
def _stft_params(node: Node) -> tuple[int, int, int, int]:
    """(frame step, frame length, frames, bins)."""
    x = inp(node, 0)
    if x.type.rank != 3 or x.shape[-1] not in (1, 2):
        raise ShapeError(f"node '{node.name}' (STFT): signal {list(x.shape)} must be [batch, length, 1 or 2]")
    step = _scalar_input(node, 1, "frame_step")
    if step is None or step < 1:
        raise ShapeError(f"node '{node.name}' (STFT): frame_step must be a positive compile-time integer")
    window = node.input(2)
    if window is not None and window.type.rank != 1:
        raise ShapeError(f"node '{node.name}' (STFT): window {list(window.shape)} must be 1-D")
    length = _scalar_input(node, 3, "frame_length", window.shape[0] if window is not None else x.shape[1])
    assert length is not None
    if window is not None and window.shape[0] != length:
        raise ShapeError(f"node '{node.name}' (STFT): window of {window.shape[0]} samples, frame_length {length}")
    if not 1 <= length <= x.shape[1]:
        raise ShapeError(f"node '{node.name}' (STFT): frame_length {length} must be in [1, {x.shape[1]}]")
    frames = 1 + (x.shape[1] - length) // step
    bins = length // 2 + 1 if node.attrs.get("onesided", 1) else length
    return step, length, frames, bins


def _infer_stft(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    window = node.input(2)
    _, _, frames, bins = _stft_params(node)
    if window is not None and window.dtype is not x.dtype:
        raise ShapeError(f"node '{node.name}' (STFT): window {window.dtype.short}, signal {x.dtype.short}")
    return [typed(x.dtype, [x.shape[0], frames, bins, 2])]


def _eval_stft(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    step, length, frames, bins = _stft_params(node)
    window = np.ones(length, x.dtype) if len(xs) < 3 or xs[2] is None else np.asarray(xs[2])
    starts = np.arange(frames) * step
    z = _as_complex(x)[:, starts[:, None] + np.arange(length)[None, :]] * window  # [batch, frames, length]
    y = np.fft.fft(z, axis=-1)[..., :bins]
    return [np.stack([y.real, y.imag], axis=-1).astype(x.dtype)]


def _stft_scratch(node: Node) -> int:
    _, length, _, _ = _stft_params(node)
    return 4 * length * inp(node, 0).dtype.itemsize


def _lower_stft(node: Node, k: KernelEmitter) -> None:
    x, y = inp(node, 0), node.outputs[0]
    assert y is not None
    _check_float(node, x)
    step, length, frames, bins = _stft_params(node)
    if y.type.numel == 0:
        return
    k.call(f"ember_stft_{_FLOATS[x.dtype]}", k.out(0), k.inp(0), k.inp(2), k.scratch(x.dtype.ctype),
           _emit_twiddles(k, length, x.dtype), x.shape[0], x.shape[1], x.shape[2], frames, step, length, bins)


# Inputs: (signal [batch, length, 1 or 2], frame_step (compile-time), window [frame_length] (optional,
# run-time allowed), frame_length (optional, compile-time)). Attribute: onesided (1).
register(OpDef("STFT", infer=_infer_stft, evaluate=_eval_stft, lower=_lower_stft, shape_inputs=(1, 3),
               scratch=_stft_scratch, kernels=("ember_stft_f32", "ember_stft_f64")))


# ---- Compile-time tables: windows and MelWeightMatrix --------------------------------------------
_UNSIGNED = {1: DType.UINT8, 2: DType.UINT16, 4: DType.UINT32, 8: DType.UINT64}


def _out_dtype(node: Node) -> DType:
    dt = node.attrs.get("output_datatype", DType.FLOAT32)
    if not isinstance(dt, DType):
        raise UnsupportedOperatorError(node.op, node.name, f"output_datatype {dt!r}")
    if dt is DType.BOOL:
        raise UnsupportedOperatorError(node.op, node.name, "a bool output_datatype")
    return dt


def _lower_table(evaluate):
    """The node's value, computed here (all its inputs are compile-time), copied from a constant table."""

    def lower(node: Node, k: KernelEmitter) -> None:
        y = node.outputs[0]
        assert y is not None
        value = np.ascontiguousarray(evaluate(node, [v.const if v is not None else None for v in node.inputs])[0])
        if value.size:
            bits = value.reshape(-1).view(_UNSIGNED[value.itemsize].np)
            k.call("ember_copy", k.out(0, "uint8_t"), k.table(bits, _UNSIGNED[value.itemsize]), value.nbytes)

    return lower


def _window_size(node: Node) -> int:
    size = _scalar_input(node, 0, "size")
    if size is None or size < 0:
        raise ShapeError(f"node '{node.name}' ({node.op}): the window size must be a non-negative integer")
    return size


# Cosine-sum windows w[n] = sum_i c_i cos(2 pi i n / N), N = size if periodic else size - 1.
_WINDOWS = {
    "HannWindow": (0.5, -0.5),
    "HammingWindow": (25.0 / 46.0, -21.0 / 46.0),
    "BlackmanWindow": (0.42, -0.5, 0.08),
}


def _eval_window(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    size = _window_size(node)
    period = size if node.attrs.get("periodic", 1) else size - 1
    n = np.arange(size, dtype=np.float64)
    with np.errstate(all="ignore"):  # size 1, symmetric: 0/0, as the ONNX reference computes it
        w = sum(c * np.cos(2.0 * np.pi * i * n / period) for i, c in enumerate(_WINDOWS[node.op]))
    return [np.asarray(w).astype(_out_dtype(node).np)]


def _infer_window(node: Node) -> list[TensorType | None]:
    return [typed(_out_dtype(node), [_window_size(node)])]


# Input: size (a compile-time integer scalar). Attributes: output_datatype (float32), periodic (1).
for _name in _WINDOWS:
    register(OpDef(_name, infer=_infer_window, evaluate=_eval_window, lower=_lower_table(_eval_window),
                   shape_inputs=(0,), kernels=("ember_copy",)))


def _mel_inputs(node: Node) -> tuple[int, int, int, np.generic, np.generic]:
    """The five scalars; the edge frequencies keep their element type (float32 arithmetic, as the reference's)."""
    vals = []
    for i, what in enumerate(("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                              "upper_edge_hertz")):
        v = inp(node, i)
        if v.const is None or np.asarray(v.const).size != 1:
            raise ShapeError(f"node '{node.name}' (MelWeightMatrix): {what} must be one compile-time value")
        vals.append(np.asarray(v.const).reshape(-1)[0])
    bins, dft_length, rate = int(vals[0]), int(vals[1]), int(vals[2])
    low, high = vals[3], vals[4]
    if bins < 1 or dft_length < 1 or rate < 1 or not 0 <= low <= high:
        raise ShapeError(f"node '{node.name}' (MelWeightMatrix): needs num_mel_bins, dft_length, sample_rate >= 1 "
                         f"and 0 <= lower_edge_hertz <= upper_edge_hertz (got {[v.item() for v in vals]})")
    return bins, dft_length, rate, low, high


def _eval_mel(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    """Triangular filters between mel-spaced points (the ONNX reference's formula, integer FFT bins)."""
    bins, dft_length, rate, low, high = _mel_inputs(node)
    spectrum = dft_length // 2 + 1
    mel_low, mel_high = (2595 * np.log1p(f / 700) / np.log(10) for f in (low, high))
    step = (mel_high - mel_low) / (bins + 2)
    hz = 700 * np.expm1((np.arange(bins + 2) * step + mel_low) / 2595 * np.log(10))
    points = ((dft_length + 1) * hz // rate).astype(np.int64)
    if points[-1] >= spectrum:
        raise ShapeError(f"node '{node.name}' (MelWeightMatrix): upper_edge_hertz {high} is above the "
                         f"{spectrum} frequency bins of a {dft_length}-point DFT at {rate} Hz")
    out = np.zeros((spectrum, bins))
    for i in range(bins):
        left, center, right = points[i], points[i + 1], points[i + 2]
        if center == left:
            out[center, i] = 1.0
        else:
            out[left:center + 1, i] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            out[center:right, i] = (right - np.arange(center, right)) / (right - center)
    return [out.astype(_out_dtype(node).np)]


def _infer_mel(node: Node) -> list[TensorType | None]:
    bins, dft_length, _, _, _ = _mel_inputs(node)
    return [typed(_out_dtype(node), [dft_length // 2 + 1, bins])]


# Inputs: (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz), all compile-time
# scalars. Attribute: output_datatype (float32). The frontend folds it; the lowering copies the table.
register(OpDef("MelWeightMatrix", infer=_infer_mel, evaluate=_eval_mel, lower=_lower_table(_eval_mel),
               shape_inputs=(0, 1, 2, 3, 4), kernels=("ember_copy",)))
