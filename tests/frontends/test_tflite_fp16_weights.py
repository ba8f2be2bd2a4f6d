"""`--weights fp16` keeps a TFLite model's float16 weights float16 in NAME.weights.bin (half the bytes) and
computes in float32; ONNX float models get the same option with a rounding cost. NAME.json states the format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.reference import onnxruntime_session
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert


def test_tflite_fp16_weights_stay_fp16(tmp_path: Path) -> None:
    """The model's float16 weights are stored bit for bit (widened once, narrowed back exactly), so the
    outputs equal LiteRT's, which widens the same values, to float32 rounding; the weights halve."""
    path = FIXTURES / "conv_pool_fp16.tflite"
    interp = litert(path)
    wide = ember.compile(path, tmp_path / "f32", opt_level=1)
    half = ember.compile(path, tmp_path / "f16", weights="fp16", opt_level=1)
    assert wide.manifest["weights"]["format"] == "float32"
    assert half.manifest["weights"]["format"] == "float16"
    # Every float16 weight of rank >= 2 (biases stay float32: 46 values) is in the bundle as float16.
    f16 = sum(int(np.prod(t["shape"])) * 2 for t in interp.get_tensor_details()
              if t["dtype"] == np.float16 and len(t["shape"]) >= 2)
    assert half.manifest["weights"]["bytes"]["float16"] == f16 == 3264
    size = {k: (tmp_path / k / "conv_pool_fp16.weights.bin").stat().st_size for k in ("f32", "f16")}
    assert size["f16"] <= 0.55 * size["f32"], size
    for seed in (0, 1):
        xs = inputs_for(interp, seed)
        want = run_litert(interp, xs)
        for got, ref in zip(run_ember(half, interp, xs), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def _onnx_conv(path: Path) -> Path:
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2, "w")
    fc = numpy_helper.from_array(rng.standard_normal((16 * 36, 10)).astype(np.float32) * 0.05, "fc")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("MatMul", ["f", "fc"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [w, fc, shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_onnx_fp16_weights_against_onnxruntime(tmp_path: Path) -> None:
    """ONNX float weights rounded to float16 at compile time: relative weight error <= 2^-11, so outputs stay
    within 2e-3 of onnxruntime's output range here (README: typically 1e-3); NAME.weights.bin halves."""

    model = _onnx_conv(tmp_path / "conv.onnx")
    full = ember.compile(model, tmp_path / "f32", opt_level=1)
    half = ember.compile(model, tmp_path / "f16", weights="fp16", opt_level=1)
    assert half.manifest["weights"]["format"] == "float16"
    assert half.manifest["weights"]["bytes"]["float16"] == (16 * 8 * 9 + 16 * 36 * 10) * 2
    size = {k: (tmp_path / k / "conv.weights.bin").stat().st_size for k in ("f32", "f16")}
    assert size["f16"] <= 0.55 * size["f32"], size
    sess = onnxruntime_session(str(model))
    x = np.random.default_rng(1).standard_normal((1, 8, 6, 6)).astype(np.float32)
    want = sess.run(None, {"x": x})[0]
    span = float(want.max() - want.min())
    np.testing.assert_allclose(full.run({"x": x})["y"], want, atol=1e-5 * span)
    err = np.abs(half.run({"x": x})["y"] - want).max()
    assert 0 < err <= 2e-3 * span, err  # rounded (not exact), within the stated fp16 cost
