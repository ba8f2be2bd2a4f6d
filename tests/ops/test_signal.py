"""DFT, STFT, the windows and MelWeightMatrix beyond the node tests, against numpy and the ONNX reference.

The node tests transform only length 10 (the direct DFT) and 16 (STFT, radix 2). These cases reach both
algorithms in both directions, float64, complex input, zero padding and truncation by dft_length, the
inverse of one-sided spectra of odd and even length, every axis form of opsets 17 and 20, and STFT
without a window, with a run-time one, two-sided and on complex signals. Each runs through the Python
runtime and, for the C itself, in the C driver built with AddressSanitizer + UBSan.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.errors import ShapeError
from ember.frontends.onnx.dtypes import dtype_from_onnx
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops import registry
from tests.support import cdriver
from tests.support.models import assert_close

_ONNX_TYPE = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def _save(path: Path, node: onnx.NodeProto, inputs: dict[str, np.ndarray], inits: dict[str, np.ndarray],
          opset: int) -> None:
    graph = helper.make_graph(
        [node], "signal",
        [helper.make_tensor_value_info(k, _ONNX_TYPE[v.dtype.type], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.save(model, path)


def _check(path: Path, tmp_path: Path, inputs: dict[str, np.ndarray], ref: np.ndarray, what: str) -> None:
    bundle = ember.compile(path, tmp_path / "out")
    assert_close(bundle.run(inputs)["y"], ref, what)
    got = cdriver.run(bundle.path, tmp_path / "drv", inputs, sanitize=True)["y"]
    assert_close(got, ref, f"{what} (ASan)")


def _complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0].astype(np.float64) if x.shape[-1] == 1 else x[..., 0] + 1j * x[..., 1].astype(np.float64)


def _split(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


# name: (input shape, dtype, axis (None: the opset's default), dft_length, inverse, onesided, opset)
DFT_CASES = {
    "radix2_real": ((2, 16, 3, 1), np.float32, 1, None, 0, 0, 20),
    "radix2_complex_inverse": ((3, 8, 2), np.float32, None, None, 1, 0, 20),
    "direct_onesided": ((2, 12, 1), np.float32, -2, None, 0, 1, 20),
    "radix2_zero_padded": ((2, 5, 2), np.float32, 1, 8, 0, 0, 20),
    "direct_truncated": ((1, 10, 2, 2), np.float32, 1, 6, 0, 0, 20),
    "direct_float64_axis0": ((9, 2, 2), np.float64, 0, None, 0, 0, 20),
    "radix2_float64_inverse": ((4, 32, 2), np.float64, -2, None, 1, 0, 20),
    "irfft_odd_length": ((2, 4, 3, 2), np.float32, 1, 7, 1, 1, 20),
    "irfft_even_length": ((9, 2), np.float32, 0, 16, 1, 1, 20),
    "irfft_default_length": ((1, 5, 2), np.float32, 1, None, 1, 1, 20),
    "length_one": ((3, 1, 2), np.float32, 1, None, 0, 0, 20),
    "opset17_default_axis": ((2, 6, 4, 1), np.float32, None, None, 0, 0, 17),
    "opset17_axis2_inverse": ((2, 6, 4, 2), np.float32, 2, None, 1, 0, 17),
}


def _dft_reference(x: np.ndarray, axis: int, n: int | None, inverse: int, onesided: int) -> np.ndarray:
    z = _complex(x)
    axis %= x.ndim
    if inverse and onesided:
        return np.fft.irfft(z, n=n, axis=axis)[..., None]
    y = np.fft.ifft(z, n=n, axis=axis) if inverse else np.fft.fft(z, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(y.shape[axis] // 2 + 1), axis=axis)
    return _split(y)


@pytest.mark.parametrize("case", sorted(DFT_CASES))
def test_dft_matches_numpy(case: str, tmp_path: Path) -> None:
    shape, dtype, axis, n, inverse, onesided, opset = DFT_CASES[case]
    x = np.random.default_rng(len(case)).standard_normal(shape).astype(dtype)
    inits: dict[str, np.ndarray] = {}
    names = ["x", ""]
    if n is not None:
        inits["n"] = np.asarray(n, np.int64)
        names[1] = "n"
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20 and axis is not None:
        inits["axis"] = np.asarray(axis, np.int64)
        names.append("axis")
    elif axis is not None:
        attrs["axis"] = axis
    _save(tmp_path / "dft.onnx", helper.make_node("DFT", names, ["y"], **attrs), {"x": x}, inits, opset)
    default_axis = -2 if opset >= 20 else 1
    ref = _dft_reference(x, default_axis if axis is None else axis, n, inverse, onesided).astype(dtype)
    _check(tmp_path / "dft.onnx", tmp_path, {"x": x}, ref, case)


# name: (signal shape, dtype, frame_step, window length (0: none), frame_length input, onesided)
STFT_CASES = {
    "radix2_window": ((2, 64, 1), np.float32, 8, 16, None, 1),
    "direct_no_window": ((1, 50, 1), np.float32, 5, 0, 12, 1),
    "twosided_complex": ((2, 40, 2), np.float32, 7, 8, 8, 0),
    "float64_window": ((1, 33, 1), np.float64, 4, 10, None, 1),
}


@pytest.mark.parametrize("case", sorted(STFT_CASES))
def test_stft_matches_numpy(case: str, tmp_path: Path) -> None:
    shape, dtype, step, win, length, onesided = STFT_CASES[case]
    rng = np.random.default_rng(len(case))
    inputs = {"x": rng.standard_normal(shape).astype(dtype)}
    inits = {"step": np.asarray(step, np.int64)}
    names = ["x", "step", "", ""]
    if win:
        inputs["window"] = rng.uniform(0.1, 1.0, win).astype(dtype)  # a run-time input
        names[2] = "window"
    if length is not None:
        inits["length"] = np.asarray(length, np.int64)
        names[3] = "length"
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    _save(tmp_path / "stft.onnx", node, inputs, inits, 17)
    n = length or win
    frames = 1 + (shape[1] - n) // step
    window = inputs.get("window", np.ones(n))
    z = np.stack([_complex(inputs["x"])[:, f * step:f * step + n] * window for f in range(frames)], axis=1)
    y = np.fft.fft(z, axis=-1)[..., :n // 2 + 1 if onesided else n]
    _check(tmp_path / "stft.onnx", tmp_path, inputs, _split(y).astype(dtype), case)


def test_dft_on_the_last_dim_is_refused(tmp_path: Path) -> None:
    x = np.zeros((2, 8, 1), np.float32)
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"])
    _save(tmp_path / "dft.onnx", node, {"x": x}, {"axis": np.asarray(-1, np.int64)}, 20)
    with pytest.raises(ShapeError, match="cannot be the last"):
        ember.compile(tmp_path / "dft.onnx", tmp_path / "out")


def test_stft_window_and_frame_length_must_agree(tmp_path: Path) -> None:
    node = helper.make_node("STFT", ["x", "step", "w", "length"], ["y"])
    inits = {"step": np.asarray(4, np.int64), "w": np.ones(8, np.float32), "length": np.asarray(16, np.int64)}
    _save(tmp_path / "stft.onnx", node, {"x": np.zeros((1, 64, 1), np.float32)}, inits, 17)
    with pytest.raises(ShapeError, match="window of 8 samples, frame_length 16"):
        ember.compile(tmp_path / "stft.onnx", tmp_path / "out")


# ---- compile-time tables: ember's own evaluate (passes fold with it) against the ONNX reference --------
def _reference(op: str, inputs: list[np.ndarray], **attrs: object) -> np.ndarray:
    names = [f"i{j}" for j in range(len(inputs))]
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], "t", [], [
        helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in zip(names, inputs, strict=True)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ReferenceEvaluator(model).run(None, {})[0]


def _ember_evaluate(op: str, inputs: list[np.ndarray], **attrs: object) -> np.ndarray:
    g = Graph("t")
    values = [g.constant(f"i{j}", np.asarray(a)) for j, a in enumerate(inputs)]
    if "output_datatype" in attrs:
        attrs["output_datatype"] = dtype_from_onnx(int(attrs["output_datatype"]))  # as the frontend gives it
    node = Node(op, "n", list(values), [g.value("y", TensorType(DType.FLOAT32, ()))], dict(attrs))
    opdef = registry.get(op)
    assert opdef.infer is not None and opdef.evaluate is not None
    (out_type,) = opdef.infer(node)
    (y,) = opdef.evaluate(node, [np.asarray(a) for a in inputs])
    assert out_type is not None and tuple(out_type.shape) == y.shape and out_type.dtype.np == y.dtype
    return y


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size, out_type", [(10, TensorProto.FLOAT), (7, TensorProto.DOUBLE), (1, TensorProto.FLOAT),
                                            (16, TensorProto.FLOAT16)])
def test_window_evaluate_matches_reference(op: str, periodic: int, size: int, out_type: int) -> None:
    inputs = [np.asarray(size, np.int64)]
    want = _reference(op, inputs, periodic=periodic, output_datatype=out_type)
    got = _ember_evaluate(op, inputs, periodic=periodic, output_datatype=out_type)
    # The reference computes in the output type; ember in double, then rounds (float16: a few ulps apart).
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=2e-3 if out_type == TensorProto.FLOAT16 else 1e-6)


@pytest.mark.parametrize("bins, dft_length, rate, low, high", [
    (8, 16, 8192, 0.0, 4096.0), (40, 512, 16000, 20.0, 7600.0), (10, 255, 16000, 125.0, 3800.0)])
def test_mel_weight_matrix_evaluate_matches_reference(bins: int, dft_length: int, rate: int, low: float,
                                                      high: float) -> None:
    inputs = [np.asarray(bins, np.int32), np.asarray(dft_length, np.int32), np.asarray(rate, np.int32),
              np.asarray(low, np.float32), np.asarray(high, np.float32)]
    np.testing.assert_array_equal(_ember_evaluate("MelWeightMatrix", inputs), _reference("MelWeightMatrix", inputs))
