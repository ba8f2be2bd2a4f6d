"""Models that arrive quantized: onnxruntime.quantization's quantize_static (QDQ format; per-channel and
per-tensor weights; int8 and uint8 activations and weights) and quantize_dynamic (operator format:
DynamicQuantizeLinear, ConvInteger, MatMulInteger), compiled by ember and compared with onnxruntime
running the same quantized model.

Tolerances. Every int8 tensor of a QDQ model (each QuantizeLinear output, made a graph output so both
runtimes compute and report it) must be within one quantization step of onnxruntime's, and identical
for the MatMul model: ember requantises with exact fixed-point arithmetic (the float32 multiplier,
rounded half to even), onnxruntime in float32, so they differ only where a value lands within float32
rounding of a half step, and in AveragePool and Softmax, whose float formulas differ. The float output
of the unchanged model must be within one step of the output's scale (onnxruntime fuses the last
Gemm with its QuantizeLinear/DequantizeLinear pair and skips that rounding). Dynamic models compute in
int32 and then float: within 1e-6 of the output's range.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

import ember
from ember.reference import onnxruntime_session
from tests.support import cdriver
from tests.support.models import reference_outputs


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.3) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_empty_tensor_value_info("y")],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def lenet() -> onnx.ModelProto:
    r, n = np.random.default_rng(10), helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
             n("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Conv", ["p1", "w2", "b2"], ["c2"]), n("Relu", ["c2"], ["r2"]),
             n("AveragePool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]), n("Flatten", ["p2"], ["f"]),
             n("Gemm", ["f", "w3", "b3"], ["g"], transB=1), n("Relu", ["g"], ["r3"]),
             n("Gemm", ["r3", "w4", "b4"], ["y"], transB=1)]
    inits = {"w1": _w(r, 4, 1, 3, 3), "b1": _w(r, 4, scale=0.1), "w2": _w(r, 8, 4, 3, 3),
             "b2": _w(r, 8, scale=0.1), "w3": _w(r, 24, 72, scale=0.1), "b3": _w(r, 24, scale=0.1),
             "w4": _w(r, 10, 24), "b4": _w(r, 10, scale=0.1)}
    return _model(nodes, inits, [1, 1, 16, 16])


def mobilenet_block() -> onnx.ModelProto:
    """Inverted residual (1x1 expand, ReLU6, depthwise 3x3, ReLU6, 1x1 project, residual Add), hard-swish,
    squeeze-excite (global pool, 1x1, sigmoid, per-channel Mul), Concat, Tanh, classifier, Softmax."""
    r, n = np.random.default_rng(11), helper.make_node
    nodes = [n("Conv", ["x", "we", "be"], ["e"]), n("Clip", ["e", "zero", "six"], ["e6"]),
             n("Conv", ["e6", "wd", "bd"], ["d"], group=16, pads=[1, 1, 1, 1]), n("Clip", ["d", "zero", "six"], ["d6"]),
             n("Conv", ["d6", "wp", "bp"], ["p"]), n("Add", ["p", "x"], ["s"]), n("HardSwish", ["s"], ["h"]),
             n("GlobalAveragePool", ["h"], ["g0"]), n("Conv", ["g0", "ws", "bs"], ["g1"]), n("Sigmoid", ["g1"], ["g2"]),
             n("Mul", ["h", "g2"], ["m"]), n("Concat", ["m", "x"], ["c"], axis=1), n("Tanh", ["c"], ["t"]),
             n("GlobalAveragePool", ["t"], ["gp"]), n("Flatten", ["gp"], ["fl"]),
             n("Gemm", ["fl", "wf", "bf"], ["lg"], transB=1), n("Softmax", ["lg"], ["y"])]
    inits = {"we": _w(r, 16, 8, 1, 1), "be": _w(r, 16, scale=0.1), "zero": np.array(0, np.float32),
             "six": np.array(6, np.float32), "wd": _w(r, 16, 1, 3, 3), "bd": _w(r, 16, scale=0.1),
             "wp": _w(r, 8, 16, 1, 1), "bp": _w(r, 8, scale=0.1), "ws": _w(r, 8, 8, 1, 1), "bs": _w(r, 8, scale=0.1),
             "wf": _w(r, 10, 16), "bf": _w(r, 10, scale=0.1)}
    return _model(nodes, inits, [1, 8, 12, 12])


def matmul_model() -> onnx.ModelProto:
    """Transformer-ish: token-wise MatMul + bias + ReLU, MatMul + bias, residual Add, Transpose, Reshape, MatMul."""
    r, n = np.random.default_rng(12), helper.make_node
    nodes = [n("MatMul", ["x", "w1"], ["m1"]), n("Add", ["m1", "b1"], ["a1"]), n("Relu", ["a1"], ["r1"]),
             n("MatMul", ["r1", "w2"], ["m2"]), n("Add", ["m2", "b2"], ["a2"]), n("Add", ["a2", "x"], ["s"]),
             n("Transpose", ["s"], ["t"], perm=[0, 2, 1]), n("Reshape", ["t", "shape"], ["f"]),
             n("MatMul", ["f", "w3"], ["y"])]
    inits = {"w1": _w(r, 16, 32), "b1": _w(r, 32, scale=0.1), "w2": _w(r, 32, 16), "b2": _w(r, 16, scale=0.1),
             "shape": np.array([1, 96], np.int64), "w3": _w(r, 96, 5)}
    return _model(nodes, inits, [1, 6, 16])


MODELS = {"lenet": lenet, "mobilenet_block": mobilenet_block, "matmul": matmul_model}
# (activations, weights, per-channel weight scales)
CONFIGS = {"s8s8_per_channel": (QuantType.QInt8, QuantType.QInt8, True),
           "u8s8_per_tensor": (QuantType.QUInt8, QuantType.QInt8, False),
           "u8u8_per_channel": (QuantType.QUInt8, QuantType.QUInt8, True)}
CASES = [("lenet", c) for c in CONFIGS] + [("mobilenet_block", "s8s8_per_channel"),
                                           ("mobilenet_block", "u8u8_per_channel"),
                                           ("matmul", "s8s8_per_channel"), ("matmul", "u8s8_per_tensor")]


class _Reader(CalibrationDataReader):
    def __init__(self, shape: list[int]) -> None:
        rng = np.random.default_rng(1)
        self._batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _shape(model: onnx.ModelProto) -> list[int]:
    return [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]


def _inputs(model: onnx.ModelProto, count: int = 3) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(2)
    return [{"x": rng.standard_normal(_shape(model)).astype(np.float32)} for _ in range(count)]


def _quantized(tmp_path: Path, name: str, config: str) -> Path:
    float_path, path = tmp_path / f"{name}.onnx", tmp_path / f"{name}_{config}.onnx"
    model = MODELS[name]()
    onnx.save(model, float_path)
    act, weight, per_channel = CONFIGS[config]
    quantize_static(str(float_path), str(path), _Reader(_shape(model)), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel, activation_type=act, weight_type=weight)
    return path


def _int8_tensors_as_outputs(path: Path) -> tuple[Path, list[str]]:
    model = onnx.load(path)
    names = [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    model.graph.output.extend(helper.make_empty_tensor_value_info(o) for o in names)
    out = path.with_name(path.stem + "_all.onnx")
    onnx.save(model, out)
    return out, names


def _step(path: Path, tensor: str) -> float:
    """The scale of the DequantizeLinear producing `tensor`."""
    model = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    node = next(n for n in model.graph.node if n.output[0] == tensor)
    assert node.op_type == "DequantizeLinear"
    return float(inits[node.input[1]].reshape(-1)[0])


def _ops(bundle: ember.runtime.loader.Bundle) -> list[str]:
    manifest = json.loads(next(bundle.path.glob("*.json")).read_text())
    return [n["op"] for n in manifest["nodes"]]


@pytest.mark.parametrize(("name", "config"), CASES)
def test_qdq_model_matches_onnxruntime(tmp_path: Path, name: str, config: str) -> None:
    path = _quantized(tmp_path, name, config)
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    ops = _ops(bundle)
    float_ops = {"Conv", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "Sigmoid", "Tanh", "HardSwish",
                 "AveragePool", "GlobalAveragePool"}
    assert not float_ops & set(ops), f"not folded into integer kernels: {ops}"
    # Softmax stays float (dequantize -> softmax -> quantize); the rest is integer.
    assert ops.count("DequantizeLinear") == (2 if name == "mobilenet_block" else 1), ops
    session = onnxruntime_session(str(path))
    step = _step(path, "y")
    for feeds in _inputs(onnx.load(path)):
        got = bundle.run(feeds)["y"]
        diff = np.abs(got - reference_outputs(path, feeds)["y"]).max()
        assert diff <= step * 1.001, f"output off by {diff / step:.2f} steps from the ONNX reference"
        # onnxruntime's fused per-channel int8 kernels round otherwise: up to 4 steps off the reference.
        diff = np.abs(got - session.run(None, feeds)[0]).max()
        assert diff <= 4 * step * 1.001, f"output off by {diff / step:.2f} steps from onnxruntime"

    all_path, names = _int8_tensors_as_outputs(path)
    bundle = ember.compile(all_path, tmp_path / "out_all", opt_level=1)
    for feeds in _inputs(onnx.load(path)):
        got, ref = bundle.run(feeds), reference_outputs(all_path, feeds)
        for t in names:
            steps = np.abs(got[t].astype(np.int32) - ref[t].astype(np.int32)).max()
            assert steps <= (0 if name == "matmul" else 1), f"{t}: {steps} steps from onnxruntime"


@pytest.mark.parametrize("name", ["lenet", "matmul"])
def test_dynamic_quantized_model_matches_onnxruntime(tmp_path: Path, name: str) -> None:
    float_path, path = tmp_path / f"{name}.onnx", tmp_path / f"{name}_dynamic.onnx"
    onnx.save(MODELS[name](), float_path)
    quantize_dynamic(str(float_path), str(path))
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    ops = _ops(bundle)
    assert "QMatMul" in ops and "DynamicQuantizeLinear" in ops and "MatMul" not in ops and "Conv" not in ops, ops
    session = onnxruntime_session(str(path))
    for feeds in _inputs(onnx.load(path)):
        got, ref = bundle.run(feeds)["y"], reference_outputs(path, feeds)["y"]
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
        # onnxruntime 1.32 quantizes some rows one step otherwise: within 1% of the output range of it.
        np.testing.assert_allclose(got, session.run(None, feeds)[0], rtol=0, atol=1e-2 * np.abs(ref).max())


def test_qdq_block_in_sanitized_c_driver(tmp_path: Path) -> None:
    """The integer kernels of the MobileNet-style block (depthwise, Add, Mul, tables, means) under
    ASan/UBSan, built from NAME.h alone: same outputs as the Python-loaded bundle."""
    path = _quantized(tmp_path, "mobilenet_block", "u8s8_per_tensor")
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    feeds = _inputs(onnx.load(path), 1)[0]
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_array_equal(got["y"], bundle.run(feeds)["y"])
