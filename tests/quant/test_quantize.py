"""The QDQ rewrite: its ONNX form run by onnxruntime, the compiled bundle against it, and its options."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ir.dtypes import DType
from ember.ir.graph import Graph
from ember.passes.pipeline import Purpose
from ember.quant.quantize import QuantConfig, quantize_graph, read_profile
from ember.quant.schema import SCHEMAS, is_power_of_two
from ember.reference import onnxruntime_session
from tests.quant.conftest import calibration_data
from tests.quant.ir_onnx import to_onnx


def _quantized(model: Path, profile: Path, **config) -> Graph:
    graph, _, sha = build_graph(str(model), CompileOptions(), Purpose.FLOAT)
    quantize_graph(graph, read_profile(str(profile), sha), QuantConfig(**config))
    return graph


def _session(graph_or_path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    src = graph_or_path if isinstance(graph_or_path, str) else to_onnx(graph_or_path).SerializeToString()
    return onnxruntime_session(src, opts)


def _nodes(graph: Graph, op: str) -> list:
    return [n for n in graph.nodes if n.op == op]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_qdq_graph_in_onnxruntime(cnn: Path, cnn_profile: Path, schema: str) -> None:
    """The rewritten graph is valid ONNX QDQ; onnxruntime's result stays within 0.02 of the float model's
    probabilities (about 1% of the output range [0, 1] per int8 rounding chain)."""
    graph = _quantized(cnn, cnn_profile, schema=schema)
    weights = [n for n in _nodes(graph, "DequantizeLinear") if n.inputs[0].is_const and n.inputs[0].shape[0] == 8
               and n.inputs[0].type.rank == 4]
    assert len(weights) == 3 and all(n.attrs["axis"] == 0 for n in weights)  # per-channel Conv weights
    assert all(n.inputs[0].dtype is DType.INT8 and not n.inputs[2].const.any() for n in weights)
    scales = [float(n.inputs[1].const) for n in _nodes(graph, "QuantizeLinear")]
    if schema == "symmetric_with_power2_scale":
        assert all(is_power_of_two(s) for s in scales)
    zero_points = {n.outputs[0].name: n.inputs[2].const for n in _nodes(graph, "QuantizeLinear")}
    if schema != "asymmetric":
        assert not any(zp.any() for zp in zero_points.values())
    want_u8 = schema == "symmetric_with_uint8"
    assert (zero_points["r1_quantized"].dtype == np.uint8) == want_u8  # post-ReLU
    assert zero_points["c2_quantized"].dtype == np.int8  # negative values too
    q, f = _session(graph), _session(str(cnn))
    for x in calibration_data(6, seed=7):
        got, ref = q.run(None, {"x": x[None]})[0], f.run(None, {"x": x[None]})[0]
        assert np.abs(got - ref).max() < 0.02


def test_bias_is_int32_at_input_times_weight_scale(cnn: Path, cnn_profile: Path) -> None:
    graph = _quantized(cnn, cnn_profile, per_channel=True)
    gemm = _nodes(graph, "Gemm")[0]
    w_dq, b_dq = gemm.inputs[1].producer, gemm.inputs[2].producer
    x_dq = gemm.inputs[0].producer
    assert w_dq.attrs["axis"] == 1 and w_dq.inputs[1].shape == (10,)  # B is [K, N] after loading
    assert b_dq.inputs[0].dtype is DType.INT32 and b_dq.attrs["axis"] == 0
    np.testing.assert_allclose(b_dq.inputs[1].const, x_dq.inputs[1].const * w_dq.inputs[1].const, rtol=1e-6)
    default = _quantized(cnn, cnn_profile)
    assert "axis" not in _nodes(default, "Gemm")[0].inputs[1].producer.attrs  # Gemm per tensor by default
    plain = _quantized(cnn, cnn_profile, per_channel=False)
    assert all("axis" not in n.attrs for n in _nodes(plain, "DequantizeLinear"))


def test_keep_float(cnn: Path, cnn_profile: Path) -> None:
    graph = _quantized(cnn, cnn_profile, keep_float=frozenset({"Softmax", "Add"}))
    softmax, add = _nodes(graph, "Softmax")[0], _nodes(graph, "Add")[0]
    assert graph.outputs[0] is softmax.outputs[0]  # nothing quantizes the float Softmax's result
    assert all(v.producer.op == "DequantizeLinear" for v in add.inputs)  # quantized neighbours still are
    assert not any(v.is_const and v.dtype is not DType.FLOAT32 for v in add.inputs)


def test_bundle_runs_the_qdq_graph(cnn: Path, cnn_profile: Path, tmp_path: Path) -> None:
    """ember's bundle and onnxruntime on the same QDQ graph: within one output quantization step (1/255)."""
    bundle = ember.compile(cnn, tmp_path / "q", quantize="int8", profile=str(cnn_profile),
                           opt_level=1)
    q = _session(_quantized(cnn, cnn_profile))
    step = 1.0 / 255 + 1e-6
    for x in calibration_data(6, seed=8):
        got, ref = bundle.run({"x": x[None]})["prob"], q.run(None, {"x": x[None]})[0]
        assert np.abs(got - ref).max() <= step


def test_int16_precision(cnn: Path, cnn_profile: Path, tmp_path: Path) -> None:
    """int16 activations and weights: 16-bit QDQ (opset 21) in onnxruntime within 5e-4 of the float model, and
    the bundle within 1e-4 of onnxruntime's QDQ result (one int16 step of the output is 1/32767)."""
    graph = _quantized(cnn, cnn_profile, precision="int16", schema="symmetric")
    assert {n.inputs[0].dtype for n in _nodes(graph, "DequantizeLinear")} <= {DType.INT16, DType.INT32}
    q, f = _session(graph), _session(str(cnn))
    bundle = ember.compile(cnn, tmp_path / "q16", quantize="int8", precision="int16", schema="symmetric",
                           profile=str(cnn_profile), opt_level=1)
    for x in calibration_data(4, seed=12):
        ref = q.run(None, {"x": x[None]})[0]
        assert np.abs(ref - f.run(None, {"x": x[None]})[0]).max() < 5e-4
        assert np.abs(bundle.run({"x": x[None]})["prob"] - ref).max() < 1e-4


def test_int8_io(cnn: Path, cnn_profile: Path, tmp_path: Path) -> None:
    bundle = ember.compile(cnn, tmp_path / "q", quantize="int8", profile=str(cnn_profile), io="int8", opt_level=1)
    (inp,), (out,) = bundle.inputs, bundle.outputs
    assert inp["dtype"] == "int8" and out["dtype"] in ("int8", "uint8")
    header = (tmp_path / "q" / "cnn.h").read_text()
    s_in, z_in = inp["quantization"]["scale"][0], inp["quantization"]["zero_point"][0]
    assert f"#define CNN_x_SCALE {s_in!r}f" in header and f"#define CNN_x_ZERO_POINT {z_in}" in header
    assert "#define CNN_prob_SCALE" in header
    float_bundle = ember.compile(cnn, tmp_path / "qf", quantize="int8", profile=str(cnn_profile),
                           opt_level=1)
    for x in calibration_data(4, seed=9):
        xq = np.clip(np.rint(x[None] / s_in) + z_in, -128, 127).astype(np.int8)
        raw = bundle.run({"x": xq})["prob"]
        s_out, z_out = out["quantization"]["scale"][0], out["quantization"]["zero_point"][0]
        got = (raw.astype(np.float32) - z_out) * s_out
        np.testing.assert_allclose(got, float_bundle.run({"x": x[None]})["prob"], atol=1e-6)


def _mlp(path: Path) -> Path:
    rng = np.random.default_rng(4)
    w1 = numpy_helper.from_array((rng.standard_normal((64, 256)) * 0.1).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((10, 256)) * 0.1).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


@pytest.mark.parametrize("kind,ratio,tol", [("fp16", 0.51, 2e-3), ("int8", 0.27, 2e-2)])
def test_weight_only_compression(tmp_path: Path, kind: str, ratio: float, tol: float) -> None:
    """Weights stored small, computed in float: NAME.weights.bin is about 1/2 (fp16) or 1/4 (int8 and
    its per-channel scales) of the float one; outputs stay close (tolerance relative to their range)."""
    model = _mlp(tmp_path / "mlp.onnx")
    ref = ember.compile(model, tmp_path / "f", opt_level=1)
    small = ember.compile(model, tmp_path / kind, weights=kind, opt_level=1)
    size = {k: (tmp_path / k / "mlp.weights.bin").stat().st_size for k in ("f", kind)}
    assert size[kind] <= ratio * size["f"]
    x = np.random.default_rng(5).standard_normal((2, 64)).astype(np.float32)
    want = ref.run({"x": x})["y"]
    err = np.abs(small.run({"x": x})["y"] - want).max()
    assert err <= tol * (want.max() - want.min())


def test_int8_bias_runs_on_integer_kernels(cnn: Path, cnn_profile: Path, tmp_path: Path) -> None:
    """--bias int8 (Glow's -quantization-precision-bias=Int8): the int8 biases are re-expressed at the
    accumulator's scale, so every Conv/Gemm still folds into an integer kernel; the bundle stays within one
    output step of onnxruntime on the int8-bias QDQ graph."""
    bundle = ember.compile(cnn, tmp_path / "b8", quantize="int8", profile=str(cnn_profile), bias="int8",
                           opt_level=1)
    ops = bundle.manifest["ops"]
    assert not {"Conv", "Gemm", "MatMul"} & set(ops), ops  # none left in float
    graph = _quantized(cnn, cnn_profile, bias="int8")
    assert any(n.inputs[0].dtype is DType.INT8 and n.inputs[0].type.rank == 1
               for n in _nodes(graph, "DequantizeLinear"))  # the biases really are int8
    q = _session(graph)
    for x in calibration_data(4, seed=10):
        got, ref = bundle.run({"x": x[None]})["prob"], q.run(None, {"x": x[None]})[0]
        assert np.abs(got - ref).max() <= 1.0 / 255 + 1e-6
