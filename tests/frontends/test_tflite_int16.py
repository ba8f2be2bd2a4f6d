"""TFLite 16x8 models (int16 activations and I/O, int8 weights, int64 bias: the converter's
EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8): ember runs them on TFLite's int16 integer
kernels (ops/q16.py, passes/fold_qdq16.py), bit-exact with LiteRT's reference kernels and with TFLite Micro
(each compiled with that interpreter's rounding: their int16 FULLY_CONNECTED requantise differently)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.errors import UnsupportedOperatorError
from tests.frontends.test_tflite_int8 import _assert_same, micro_outputs
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert, run_sanitized

# One-operator models (scripts/tflite_op_fixtures.py INT16_OPS) and two networks (a keyword-spotting DS-CNN
# and a MobileNetV2-like net: scripts/make_tflite_fixtures.py), bit-exact with both.
OPS = ["add", "add_relu", "sub", "mul", "concat", "conv_relu6", "depthwise", "fully_connected", "avgpool",
       "maxpool", "relu", "leaky_relu", "softmax", "mean", "transpose_conv",
       # RELU6 of its own (LiteRT rescales to the output scale, TFLite Micro clamps the input's integers),
       # MAXIMUM / MINIMUM, PAD, STRIDED_SLICE and SPLIT_V (the stored integers)
       "relu6", "max_min", "pad", "slice_split",
       # PACK (after the converter's requantising QUANTIZE), UNPACK, ABS, MEAN over [1, 3] (QuantizedMeanOrSum),
       # BATCH_MATMUL of two int16 tensors (adj_y) and of an int16 constant
       "pack", "unpack", "abs", "mean_axes", "batch_matmul", "batch_matmul_const",
       # RESIZE_NEAREST_NEIGHBOR (half-pixel centres), BROADCAST_TO, RESHAPE and TRANSPOSE: the stored integers
       "resize_nearest", "broadcast_to", "reshapes",
       # LOGISTIC and TANH (after a MUL, and alone: the model's input is theirs)
       "logistic", "tanh", "logistic_alone", "tanh_alone"]
# TFLite Micro has no int16 kernel for these (REDUCE_MAX / REDUCE_MIN: float32 and int8 only): bit-exact with LiteRT.
LITERT_OPS = ["resize_bilinear", "gather", "reduce_max_min", "mirror_pad", "gather_nd", "space_batch",
              # (nor REDUCE_PROD at all; no int16 EXP, GELU, LOG or RSQRT either)
              "reduce_prod", "exp", "gelu", "gelu_tanh", "log", "rsqrt"]


def _draws(interp) -> list[list[np.ndarray]]:
    """Two draws over [-1, 1] in real terms, and one over the whole int16 range (saturating sums)."""
    wide = [np.random.default_rng(7 + i).integers(-32768, 32768, d["shape"]).astype(np.int16)
            for i, d in enumerate(interp.get_input_details())]
    return [inputs_for(interp, 0), inputs_for(interp, 1), wide]


def _check(path: Path, name: str, tmp_path: Path, with_micro: bool = True, reference: bool | None = True) -> None:
    """`reference`: LiteRT's reference kernels (False: its optimized ones; None: TFLite Micro's outputs only)."""
    interp = litert(path, bool(reference))
    n_out = len(interp.get_output_details())
    lite = ember.compile(path, tmp_path / "litert", name=name, opt_level=1) if reference is not None else None
    micro = ember.compile(path, tmp_path / "micro", name=name, opt_level=1, tflite_rounding="micro") \
        if with_micro else None
    for xs in _draws(interp):
        if lite is not None:
            _assert_same(name, run_litert(interp, xs), run_ember(lite, interp, xs), "LiteRT")
        if micro is not None:
            _assert_same(name, micro_outputs(path, xs, n_out), run_ember(micro, interp, xs), "TFLite Micro")


@pytest.mark.parametrize("op", OPS)
def test_int16_operator_bit_exact(op: str, tmp_path: Path) -> None:
    _check(FIXTURES / f"op_{op}_int16.tflite", op, tmp_path)


@pytest.mark.parametrize("op", LITERT_OPS)
def test_int16_operator_bit_exact_with_litert(op: str, tmp_path: Path) -> None:
    _check(FIXTURES / f"op_{op}_int16.tflite", op, tmp_path, with_micro=False)


def test_int16_sum_bit_exact(tmp_path: Path) -> None:
    """int16 SUM (the converter keeps the input's scale): the saturated sum, as TFLite Micro and LiteRT's
    optimized kernel give it. (LiteRT's reference int16 SUM returns garbage, e.g. -1 for every output.)"""
    _check(FIXTURES / "op_sum_int16.tflite", "sum", tmp_path, reference=False)


def test_int16_int8_quantize_bit_exact(tmp_path: Path) -> None:
    """QUANTIZE from int16 to int8 and from int8 back to int16 (a hand-made model: the 16x8 converter's I/O is
    float32 or int16), each to another scale: TFLite's Requantize on the integers (Q16Requant), byte for byte."""
    path = FIXTURES / "quantize_int16_int8.tflite"
    graph, _, _ = build_graph(str(path), CompileOptions())
    assert graph.op_counts() == {"Q16Requant": 2}, graph.op_counts()
    _check(path, "quantize", tmp_path)


def test_int16_float_io_bit_exact(tmp_path: Path) -> None:
    """A 16x8 model with float32 I/O: QUANTIZE to int16 at the input, DEQUANTIZE from it at the output, the same
    floats as LiteRT's and TFLite Micro's."""
    path = FIXTURES / "op_add_relu_float_io_int16.tflite"
    interp = litert(path)
    assert {d["dtype"] for d in interp.get_input_details() + interp.get_output_details()} == {np.float32}
    lite = ember.compile(path, tmp_path / "litert", name="fio", opt_level=1)
    micro = ember.compile(path, tmp_path / "micro", name="fio", opt_level=1, tflite_rounding="micro")
    for seed in (0, 1):
        xs = [x * 1.5 for x in inputs_for(interp, seed)]  # past the calibrated range too: saturation
        _assert_same("float_io", run_litert(interp, xs), run_ember(lite, interp, xs), "LiteRT")
        _assert_same("float_io", micro_outputs(path, xs, 1), run_ember(micro, interp, xs), "TFLite Micro")


def _quant(model: bytes, tensor: str):
    import tflite

    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return next(sg.Tensors(i) for i in range(sg.TensorsLength()) if sg.Tensors(i).Name().decode() == tensor
                ).Quantization()


def _with_scale(model: bytes, tensor: str, scale: float) -> bytes:
    """The model with the float32 scale of the named tensor rewritten in place (its flatbuffer vector)."""
    q = _quant(model, tensor)
    at = q._tab.Vector(q._tab.Offset(8))  # QuantizationParameters.scale
    return model[:at] + np.float32(scale).tobytes() + model[at + 4:]


@pytest.mark.parametrize(("name", "scale", "reference"), [("mean_axes", "a", True), ("sum", 5.3, None),
                                                         ("abs", 1.7, True)])
def test_int16_rescaled_output_bit_exact(name: str, scale: str | float, reference: bool | None,
                                         tmp_path: Path) -> None:
    """The paths the converter's scales do not take: MEAN with its output at the input's scale, SUM and ABS
    rescaling to an output scale of their own (`scale`: the named tensor's, or a factor on the output's). A
    rescaling int16 SUM follows TFLite Micro (QuantizedMeanOrSum): LiteRT's reference kernel returns garbage and
    its optimized one rounds a few sums the other way."""
    model = (FIXTURES / f"op_{name}_int16.tflite").read_bytes()
    new = _quant(model, scale).Scale(0) if isinstance(scale, str) else _quant(model, "Identity").Scale(0) * scale
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(_with_scale(model, "Identity", new))
    _check(path, name, tmp_path, reference=reference)


def test_int16_concat_copies_integers_of_other_scales(tmp_path: Path) -> None:
    """TFLite's int16 CONCATENATION copies the stored integers whatever the input scales (only the converter's
    QUANTIZE before it rescales; LiteRT's PACK refuses such a model): an input given a scale other than the
    output's still gives LiteRT's and TFLite Micro's outputs byte for byte."""
    path = tmp_path / "concat.tflite"
    path.write_bytes(_with_scale((FIXTURES / "op_concat_int16.tflite").read_bytes(), "a_requantized", 4.0e-5))
    interp = litert(path)
    assert interp.get_tensor_details()[-1]["quantization"][0] != interp.get_output_details()[0]["quantization"][0]
    _check(path, "concat", tmp_path)


@pytest.mark.parametrize("name", ["kws_cnn_int16", "mobilenet_like_int16"])
def test_int16_network_bit_exact(name: str, tmp_path: Path) -> None:
    _check(FIXTURES / f"{name}.tflite", name, tmp_path)


def test_int16_network_runs_int16_kernels() -> None:
    """Every layer of the 16x8 network runs on the int16 integer kernels: no float op, no DequantizeLinear."""
    graph, _, _ = build_graph(str(FIXTURES / "kws_cnn_int16.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("Q16Conv", 0) == 6 and counts.get("Q16AvgPool") == 1 and counts.get("Q16Softmax") == 1, counts
    assert not {"Conv", "Gemm", "MatMul", "DequantizeLinear", "QuantizeLinear", "AveragePool"} & set(counts), counts


@pytest.mark.parametrize(("op", "kernel"), [("relu6", "Q16Binary"), ("max_min", "Max"), ("pad", "Pad"),
                                          ("slice_split", "Split"), ("gather", "Gather"), ("pack", "Concat"),
                                          ("unpack", "Split"), ("abs", "Q16Binary"), ("sum", "Q16Reduce"),
                                          ("reduce_max_min", "Q16Reduce"), ("mean_axes", "Q16Reduce"),
                                          ("batch_matmul", "Q16MatMul"), ("batch_matmul_const", "Q16MatMul"),
                                          ("mirror_pad", "Pad"), ("resize_nearest", "Gather"),
                                          ("gather_nd", "GatherND"), ("broadcast_to", "Expand"),
                                          ("space_batch", "Transpose"), ("reshapes", "Transpose"),
                                          ("logistic", "Q16Sigmoid"), ("tanh", "Q16Sigmoid"),
                                          ("reduce_prod", "Q16Reduce"), ("exp", "Q16Lookup"),
                                          ("gelu", "Q16Lookup"), ("log", "Q16Lookup"), ("rsqrt", "Q16Lookup")])
def test_int16_operator_stays_integer(op: str, kernel: str) -> None:
    """RELU6, MAXIMUM / MINIMUM, PAD, STRIDED_SLICE, SPLIT_V, GATHER, PACK, UNPACK, ABS, the reductions,
    BATCH_MATMUL and the other data-movement ops run on the int16 integers: no float op between
    DequantizeLinear and QuantizeLinear is left."""
    graph, _, _ = build_graph(str(FIXTURES / f"op_{op}_int16.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert kernel in counts and not {"DequantizeLinear", "QuantizeLinear", "Clip"} & set(counts), counts
    assert all(v.dtype.name == "INT16" for n in graph.nodes for v in n.outputs if v is not None), counts


def test_int16_vector_kernels_only_for_x86_64() -> None:
    """The AVX2 convolution kernel (its padded copy and weight pairs) where it can run: --target x86_64 and an
    x86-64 host, not a Cortex-M or an AArch64 build."""
    import platform

    def simd(target: str, kind: str) -> set[bool]:
        path = str(FIXTURES / "kws_cnn_int16.tflite")
        graph, _, _ = build_graph(path, CompileOptions(target=target), target_kind=kind)
        return {n.attrs["_q16"].simd for n in graph.nodes if n.op == "Q16Conv"}

    assert simd("x86_64", "linux") == {True}
    assert simd("aarch64", "linux") == simd("cortex-m4", "mcu") == {False}
    assert simd("host", "host") == {platform.machine().lower() in ("x86_64", "amd64")}


def _every_int16(interp) -> list[np.ndarray]:
    """Every int16 value, in chunks of the (one) input's shape."""
    shape = interp.get_input_details()[0]["shape"]
    n = int(np.prod(shape))
    every = np.arange(-32768, 32768, dtype=np.int16)
    return [np.resize(every[i:i + n], shape) for i in range(0, every.size, n)]


# The input scales LOGISTIC / TANH take in TFLite's int16 Prepare: the converter's (a multiplier, rounding
# shift), a power of two kept raw (2^-12; 2^-11 for TANH only), a coarse one whose inputs run past the table's
# end (saturation), and a fine one (the largest shift).
@pytest.mark.parametrize(("op", "scale"), [("logistic", None), ("tanh", None), ("logistic", 2.0**-12),
                                         ("tanh", 2.0**-12), ("tanh", 2.0**-11), ("logistic", 2.0**-11),
                                         ("logistic", 0.0031), ("tanh", 1.7e-9)])
def test_int16_logistic_tanh_every_input(op: str, scale: float | None, tmp_path: Path) -> None:
    """int16 LOGISTIC and TANH (TFLite's 256-entry sigmoid table, read with interpolation): every one of the
    65536 int16 inputs gives LiteRT's reference output and TFLite Micro's, byte for byte."""
    path = FIXTURES / f"op_{op}_alone_int16.tflite"
    if scale is not None:
        path = tmp_path / f"{op}.tflite"
        path.write_bytes(_with_scale((FIXTURES / f"op_{op}_alone_int16.tflite").read_bytes(), "x", scale))
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name=op, opt_level=1)
    graph, _, _ = build_graph(str(path), CompileOptions())
    assert graph.op_counts() == {"Q16Sigmoid": 1}, graph.op_counts()
    for x in _every_int16(interp):
        got = run_ember(bundle, interp, [x])
        _assert_same(op, run_litert(interp, [x]), got, "LiteRT")
        _assert_same(op, micro_outputs(path, [x], 1), got, "TFLite Micro")


def test_int16_reduce_prod_every_input(tmp_path: Path) -> None:
    """int16 REDUCE_PROD (QuantizedReduceProd: the running product requantised after each multiply) over rows of
    8, fed every int16 value: LiteRT's reference outputs (TFLite Micro has no REDUCE_PROD), saturations
    included."""
    path = FIXTURES / "op_reduce_prod_int16.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name="prod", opt_level=1)
    for x in _every_int16(interp):
        _assert_same("reduce_prod", run_litert(interp, [x]), run_ember(bundle, interp, [x]), "LiteRT")


def _alone(model: bytes, op: str) -> bytes:
    """The model with operator `op` reading the model's input (its inputs vector's first entry rewritten in place):
    an operator the converter puts behind others (LOG behind ABS and ADD) fed every int16 value directly."""
    import tflite

    m = tflite.Model.GetRootAs(model, 0)
    sg = m.Subgraphs(0)
    for i in range(sg.OperatorsLength()):
        code = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) == getattr(tflite.BuiltinOperator, op):
            tab = sg.Operators(i)._tab
            at = tab.Vector(tab.Offset(6))  # Operator.inputs
            return model[:at] + np.int32(sg.Inputs(0)).tobytes() + model[at + 4:]
    raise KeyError(op)


@pytest.mark.parametrize(("op", "alone", "scale"), [("exp", None, None), ("exp", None, 0.01), ("gelu", None, None),
                                                    ("gelu_tanh", None, None), ("log", "LOG", None),
                                                    ("rsqrt", None, None)])  # (RSQRT alone: LiteRT fails it below 0)
def test_int16_lut_every_input(op: str, alone: str | None, scale: float | None, tmp_path: Path) -> None:
    """int16 EXP (also over [-328, 328], where expf overflows float32 and TFLite's table gets NaN entries), GELU
    (exact and tanh-approximate), LOG (its table's floor at and below zero) and RSQRT (after ABS and ADD: LiteRT
    fails the model on an input below zero): TFLite's LUTLookup of a 513-entry table filled in float32 as its
    LUTPopulate does; every int16 input gives LiteRT's reference output (TFLite Micro has no int16 EXP, GELU or
    LOG, and its RSQRT computes otherwise: test_int16_rsqrt_micro_every_input)."""
    path = FIXTURES / f"op_{op}_int16.tflite"
    if alone is not None or scale is not None:
        model = path.read_bytes()
        path = tmp_path / f"{op}.tflite"
        path.write_bytes(_alone(model, alone) if alone is not None else _with_scale(model, "x", scale))
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name=op, opt_level=1)
    graph, _, _ = build_graph(str(path), CompileOptions())
    assert "Q16Lookup" in graph.op_counts() and "DequantizeLinear" not in graph.op_counts(), graph.op_counts()
    for x in _every_int16(interp):
        _assert_same(op, run_litert(interp, [x]), run_ember(bundle, interp, [x]), "LiteRT")


def test_int16_rsqrt_micro_every_input(tmp_path: Path) -> None:
    """TFLite Micro's int16 RSQRT is its int8 fixed-point arithmetic widened (Newton-Raphson, two requantisations),
    not LiteRT's table: a --tflite-rounding micro build gives Micro's integers for every int16 input from 0 up
    (Micro fails the model below zero), the default build LiteRT's (test_int16_lut_every_input)."""
    path = tmp_path / "rsqrt.tflite"
    path.write_bytes(_alone((FIXTURES / "op_rsqrt_int16.tflite").read_bytes(), "RSQRT"))
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name="rsqrt", opt_level=1, tflite_rounding="micro")
    graph, _, _ = build_graph(str(path), CompileOptions(tflite_rounding="micro"))
    assert "Q16Rsqrt" in graph.op_counts(), graph.op_counts()
    for x in _every_int16(interp)[128:]:
        _assert_same("rsqrt", micro_outputs(path, [x], 1), run_ember(bundle, interp, [x]), "TFLite Micro")


def test_int16_logistic_output_scale_refused(tmp_path: Path) -> None:
    """TFLite's int16 LOGISTIC requires the output scale 2^-15 (its Prepare fails otherwise): ember refuses such a
    model in one line naming the operator and the tensor."""
    path = tmp_path / "logistic.tflite"
    path.write_bytes(_with_scale((FIXTURES / "op_logistic_alone_int16.tflite").read_bytes(), "Identity", 1e-4))
    with pytest.raises(UnsupportedOperatorError) as e:
        ember.compile(path, tmp_path / "out")
    msg = str(e.value)
    assert "'LOGISTIC'" in msg and "'Identity'" in msg and "2^-15" in msg and "\n" not in msg, msg


def test_int16_operator_without_exact_kernel_is_refused(tmp_path: Path) -> None:
    """An int16 HARD_SWISH (a hand-made model: the 16x8 converter writes none, and neither LiteRT nor TFLite Micro
    has an int16 kernel for it: both fail the model): one error naming the operator and its tensor, not a bundle
    that computes what no interpreter does."""
    with pytest.raises(UnsupportedOperatorError) as e:
        ember.compile(FIXTURES / "hard_swish_int16.tflite", tmp_path)
    msg = str(e.value)
    assert "'HARD_SWISH'" in msg and "int16 tensor '" in msg and "\n" not in msg, msg


@pytest.mark.parametrize(("name", "native"), [("kws_cnn_int16", False), ("op_resize_bilinear_int16", False),
                                             ("op_add_relu_int16", False), ("mobilenet_like_int16", True),
                                             ("op_mean_axes_int16", False), ("op_batch_matmul_int16", False),
                                             ("op_abs_int16", False), ("op_tanh_int16", False),
                                             ("op_reduce_prod_int16", False), ("op_gelu_int16", False),
                                             ("op_rsqrt_int16", False)])
def test_int16_kernels_sanitizer_clean(name: str, native: bool, tmp_path: Path) -> None:
    """The int16 kernels (and the integer RESIZE_BILINEAR; Q16Reduce, Q16MatMul, ABS) under ASan/UBSan, on inputs
    over the whole int16 range: no report, and LiteRT's outputs. `native`: built for this CPU (-march=native), so
    that an AVX2 host runs the vector kernels (ember_q16_conv_v's padded copy and its reads past a row's end among them)
    under the sanitizers too, -Wall -Wextra -Werror."""
    path = FIXTURES / f"{name}.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name="m", opt_level=1)
    xs = _draws(interp)[2]
    got = run_sanitized(bundle, interp, xs, tmp_path / "asan", cflags=("-march=native",) if native else ())
    _assert_same(name, run_litert(interp, xs), got, "LiteRT (sanitized build)")


def test_int16_rsqrt_micro_sanitizer_clean(tmp_path: Path) -> None:
    """TFLite Micro's int16 RSQRT kernel (fixed point, shifts of both signs) under ASan/UBSan over the whole int16
    range, negative inputs included: no report, and the integers of the plain build."""
    path = tmp_path / "rsqrt.tflite"
    path.write_bytes(_alone((FIXTURES / "op_rsqrt_int16.tflite").read_bytes(), "RSQRT"))
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name="m", opt_level=1, tflite_rounding="micro")
    xs = _draws(interp)[2]
    _assert_same("rsqrt", run_ember(bundle, interp, xs), run_sanitized(bundle, interp, xs, tmp_path / "asan"),
                 "the plain build")
