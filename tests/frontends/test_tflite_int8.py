"""Full-integer TFLite models (TFLiteConverter with a representative dataset, int8 inputs and outputs): ember
maps their quantized tensors onto its QDQ form, and passes/fold_qdq.py turns it into integer kernels that
requantise with TFLite's arithmetic (ops/qlinear.py `tflite_multiplier`, quant.c `ember_q_scale_tfl`).

Bit-exact means equal bytes: with LiteRT's reference kernels (`tflite_rounding="litert"`, the default) and
with TFLite Micro's (`"micro"`: its kernels round twice where LiteRT's FULLY_CONNECTED rounds once). Unary
operators are fed all 256 int8 values. Models still approximate (operators whose TFLite arithmetic is not
replicated yet) keep a bound in quantization steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ir.dtypes import DType
from ember.ops.shape import NHWC_OUT
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert, run_sanitized
from tests.support.host import cpu_has

# One-operator models (scripts/tflite_op_fixtures.py), each bit-exact with both interpreters.
EXACT_OPS = ["add", "add_relu", "sub", "mul", "concat", "conv_relu6", "depthwise", "fully_connected", "avgpool",
             "maxpool", "leaky_relu", "logistic", "tanh", "hard_swish", "softmax", "mean", "logistic_rescaled",
             "tanh_rescaled", "hard_swish_rescaled", "transpose_conv", "resize_bilinear", "relu"]
# One-operator models TFLite Micro has no int8 kernel for: bit-exact with LiteRT, fed every int8 value.
LITERT_EXACT_OPS = ["sqrt", "rsqrt"]
# Networks bit-exact with both (name -> opt level of the LiteRT build: one at -O3 takes the tuned kernel paths).
EXACT_NETWORKS = {"conv_pool_int8": 3, "kws_cnn_int8": 1, "mobilenet_like_int8": 1, "matmul_ops_int8": 1,
                  "conv_variants_int8": 1, "resize_space_int8": 1}
# Models with operators TFLite Micro lacks (STRIDED_SLICE of rank 5, TILE, ...): bit-exact with LiteRT
# (reduce_misc_int8 on LiteRT's optimized kernels: its reference int8 SUM is wrong).
LITERT_EXACT = ["shape_ops_int8", "math_more_int8", "reduce_misc_int8", "kws_cnn_int8_float_io", "elementwise_int8"]
# name -> (largest difference in steps allowed, share of an output's elements that may differ): models with
# operators whose TFLite integer arithmetic ember does not replicate yet, measured with
# scripts/tflite_int8_diff.py (none at present).
APPROXIMATE: dict[str, tuple[int, float]] = {}


def micro_outputs(path: Path, xs: list[np.ndarray], n_out: int) -> list[np.ndarray]:
    """TFLite Micro's outputs (its reference kernels) for the inputs xs."""
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    interp = runtime.Interpreter.from_file(str(path), arena_size=1 << 20)
    for i, x in enumerate(xs):
        interp.set_input(x, i)
    interp.invoke()
    return [interp.get_output(i) for i in range(n_out)]


def _inputs(interp: Any) -> list[list[np.ndarray]]:
    """Two random draws, and every int8 value in each input (permuted differently per input)."""
    every = [np.random.default_rng(i).permutation(np.arange(-128, 128)).astype(np.int8)
             if i else np.arange(-128, 128, dtype=np.int8) for i in range(len(interp.get_input_details()))]
    codes = [e.reshape(d["shape"]) for e, d in zip(every, interp.get_input_details(), strict=True)
             if np.prod(d["shape"]) == 256]
    draws = [inputs_for(interp, seed) for seed in (0, 1)]
    return [*draws, codes] if len(codes) == len(every) else draws


def _assert_same(name: str, ref: list[np.ndarray], got: list[np.ndarray], what: str) -> None:
    for i, (r, g) in enumerate(zip(ref, got, strict=True)):
        assert g.dtype == r.dtype and g.shape == r.shape
        bad = np.flatnonzero(g != r)
        assert bad.size == 0, (f"{name} output {i} vs {what}: {bad.size} of {r.size} differ, e.g. at {bad[0]}: "
                               f"{g.reshape(-1)[bad[0]]} vs {r.reshape(-1)[bad[0]]}")


def _check_exact(path: Path, name: str, tmp_path: Path, opt_level: int) -> None:
    interp = litert(path)
    n_out = len(interp.get_output_details())
    lite = ember.compile(path, tmp_path / "litert", name=name, opt_level=opt_level)
    # (Micro's at -O1 only: -O3 compiles are the slow ones; its rounding at -O3 runs in tests/cross)
    micro = ember.compile(path, tmp_path / "micro", name=name, opt_level=1, tflite_rounding="micro")
    for xs in _inputs(interp):
        _assert_same(name, run_litert(interp, xs), run_ember(lite, interp, xs), "LiteRT")
        _assert_same(name, micro_outputs(path, xs, n_out), run_ember(micro, interp, xs), "TFLite Micro")


@pytest.mark.parametrize("op", EXACT_OPS)
def test_int8_operator_bit_exact(op: str, tmp_path: Path) -> None:
    _check_exact(FIXTURES / f"op_{op}_int8.tflite", op, tmp_path, 1)


@pytest.mark.parametrize("op", LITERT_EXACT_OPS)
def test_int8_operator_bit_exact_with_litert(op: str, tmp_path: Path) -> None:
    path = FIXTURES / f"op_{op}_int8.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path, name=op, opt_level=1)
    for xs in _inputs(interp):
        _assert_same(op, run_litert(interp, xs), run_ember(bundle, interp, xs), "LiteRT")


@pytest.mark.parametrize("name", sorted(EXACT_NETWORKS))
def test_int8_network_bit_exact(name: str, tmp_path: Path) -> None:
    _check_exact(FIXTURES / f"{name}.tflite", name, tmp_path, EXACT_NETWORKS[name])


@pytest.mark.parametrize("name", sorted(APPROXIMATE) + LITERT_EXACT)
def test_int8_model_within_steps_of_litert(name: str, tmp_path: Path) -> None:
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path, name=name, opt_level=1)
    # LiteRT's reference int8 SUM is wrong for this model (its optimized kernel and numpy agree with ember).
    interp = litert(path, reference=name != "reduce_misc_int8")
    steps, share = APPROXIMATE.get(name, (0, 0.0))
    for seed in (0, 1, 2):
        xs = inputs_for(interp, seed)
        ref, got = run_litert(interp, xs), run_ember(bundle, interp, xs)
        for i, (r, g) in enumerate(zip(ref, got, strict=True)):
            assert g.dtype == r.dtype and g.shape == r.shape
            if r.dtype.kind == "f":  # float I/O: the DEQUANTIZE of an int8 softmax, whose step is 1/256
                np.testing.assert_allclose(g, r, rtol=0, atol=steps / 256)
                continue
            diff = np.abs(g.astype(np.int32) - r.astype(np.int32))
            assert diff.max() <= steps, f"{name} output {i} (seed {seed}): {int(diff.max())} steps apart"
            assert (diff > 0).mean() <= share, f"{name} output {i} (seed {seed}): {(diff > 0).sum()} differ"


def test_tflite_multiplier_is_quantize_multiplier() -> None:
    """QuantizeMultiplier's significand rounds half away from zero and carries into the exponent."""
    from ember.ops.qlinear import DOUBLE, tflite_multiplier

    assert tflite_multiplier(0.5, DOUBLE) == (1 << 30, 31)
    assert tflite_multiplier(1.0 - 2.0**-40, DOUBLE) == (1 << 30, 30)  # the significand rounds up to 1.0
    assert tflite_multiplier(3.0, DOUBLE) == (3 << 29, 29)  # above 1: a left shift (k < 31)
    assert tflite_multiplier(2.0**-40, DOUBLE) == (0, 1)  # below TFLite's smallest exponent: zero


@pytest.mark.parametrize("name", ["conv_pool_int8", "kws_cnn_int8", "mobilenet_like_int8"])
def test_int8_model_runs_integer_kernels(name: str) -> None:
    """Every convolution and fully-connected layer runs on ember's integer kernels, none in float. The only
    Transpose left is the one of an image input (NHWC) before the integer stem: conv_pool_int8's NHWC flatten into
    its FULLY_CONNECTED is an order of the weights instead (passes/transposes.py fold_flatten_transposes; its
    outputs stay bit-exact: test_int8_network_bit_exact)."""
    graph, _, _ = build_graph(str(FIXTURES / f"{name}.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("QConv", 0) + counts.get("QConvShifted", 0) >= 3, counts
    assert not {"Conv", "ConvNarrow", "MatMul", "Gemm"} & set(counts), counts
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    assert len(transposes) <= 1 and all(graph.is_input(t.inputs[0]) for t in transposes), counts


def test_int8_transpose_conv_and_resize_stay_integer() -> None:
    """TRANSPOSE_CONV runs as the integer convolution it equals (zero points spread between the input's
    elements), RESIZE_BILINEAR interpolates the stored int8 values: neither leaves int8."""
    graph, _, _ = build_graph(str(FIXTURES / "resize_space_int8.tflite"), CompileOptions())
    resizes = [n for n in graph.nodes if n.op == "Resize"]
    assert len(resizes) == 3 and all(n.inputs[0].dtype is DType.INT8 for n in resizes), resizes
    graph, _, _ = build_graph(str(FIXTURES / "op_transpose_conv_int8.tflite"), CompileOptions())
    counts = graph.op_counts()
    assert counts.get("QConv") == 1 and "ConvTranspose" not in counts and "QuantizeLinear" not in counts, counts


def test_int8_lookup_tables_follow_the_nhwc_layout() -> None:
    """TFLite's exact TANH and LEAKY_RELU tables (QLut) sit between an NCHW convolution or pool and what follows in
    NHWC: the Transposes move through them instead of one pair around each (conv_variants_int8 stays bit-exact:
    test_int8_network_bit_exact)."""
    graph, _, _ = build_graph(str(FIXTURES / "conv_variants_int8.tflite"), CompileOptions())
    luts = [n for n in graph.nodes if n.op == "QLut"]
    assert len(luts) == 2 and all(n.inputs[0].producer.op != "Transpose" for n in luts), graph.op_counts()
    # no Transpose; four views: the input, read in place by the stem's rows of words; the TANH table's output, which
    # the stem stores channels-last and the table maps as it is; the TRANSPOSE_CONV's spread input, read in place by
    # its rows; and the last convolution's output, stored channels-last for the pools, the LEAKY_RELU table and the
    # flatten
    assert "Transpose" not in graph.op_counts() and graph.op_counts().get("NhwcView") == 4, graph.op_counts()
    stem, pool = luts[0].inputs[0].producer, luts[1].inputs[0].producer
    assert stem.op == "QConv" and stem.attrs.get(NHWC_OUT) == 1
    pool_view = pool.inputs[0].producer
    assert pool.op == "QAvgPool" and pool.attrs.get("channels_last") == 1 and pool_view.op == "NhwcView"
    assert pool_view.inputs[0].producer.attrs.get(NHWC_OUT) == 1


@pytest.mark.parametrize(("name", "op"), [("op_maxpool_int8", "QMaxPool"), ("op_avgpool_int8", "QAvgPool"),
                                        ("op_mean_int8", "QMean"), ("op_maxpool_int16", "Q16MaxPool"),
                                        ("op_avgpool_int16", "Q16AvgPool"), ("op_mean_int16", "Q16Mean")])
def test_integer_pools_run_channels_last(name: str, op: str) -> None:
    """MAX_POOL_2D, AVERAGE_POOL_2D and MEAN over H and W run on the NHWC integers as they are (channels-last
    integer pools): no Transpose at the input or the output (their outputs against LiteRT and TFLite Micro:
    test_int8_operator_bit_exact, test_tflite_int16.py)."""
    graph, _, _ = build_graph(str(FIXTURES / f"{name}.tflite"), CompileOptions())
    pools = [n for n in graph.nodes if n.op == op]
    assert len(pools) == 1 and pools[0].attrs.get("channels_last") and "Transpose" not in graph.op_counts(), \
        graph.op_counts()


@pytest.mark.parametrize("cpu", [None, "x86-64-v4", "x86-64-v3"])
def test_int8_rgb_stem_skips_im2col_bit_exact(tmp_path: Path, cpu: str | None) -> None:
    """At the default -O level the 3-channel stride-2 stem of a TFLite model (TFLite's rounding, which
    qgemm.c's float requantisation cannot take) runs as QConvShifted, gathered from its stride-phase planes,
    and stays bit-exact with LiteRT. It reads the NHWC image as it is (no Transpose): 16 words per byte permute
    with AVX-512 VBMI (this host's build, where it has VBMI), a word at a time without it (x86-64-v4: AVX-512
    without VBMI; x86-64-v3: AVX2)."""
    if cpu is None and not cpu_has("avx512vbmi"):
        pytest.skip("this CPU lacks AVX-512 VBMI")
    path = FIXTURES / "mobilenet_like_int8.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path, name="m", **({"cpu": cpu} if cpu else {}))
    assert "ember_qconv_shifted(" in (tmp_path / "m.c").read_text()
    graph, _, _ = build_graph(str(path), CompileOptions(**({"cpu": cpu} if cpu else {})))
    assert "Transpose" not in graph.op_counts() and graph.op_counts().get("NhwcView") == 1, graph.op_counts()
    for xs in _inputs(interp):
        _assert_same("mobilenet_like_int8", run_litert(interp, xs), run_ember(bundle, interp, xs), "LiteRT")
    if cpu is None:  # the C bundle under AddressSanitizer and UndefinedBehaviorSanitizer
        xs = inputs_for(interp, 0)
        _assert_same("mobilenet_like_int8", run_litert(interp, xs), run_sanitized(bundle, interp, xs, tmp_path / "drv"),
                     "LiteRT (sanitized C)")


@pytest.mark.parametrize("cpu", [None, "x86-64-v4"])
@pytest.mark.parametrize("name", ["conv_variants_int8", "op_conv_relu6_int8", "conv_pool_int8"])
def test_int8_row_packing_reads_the_nhwc_image_bit_exact(tmp_path: Path, name: str, cpu: str | None) -> None:
    """At the default -O level a first QConv packs its rows from the NHWC image itself (NhwcView, no Transpose):
    rows of words where its channels come in fours (4 at stride 2, 8 at stride 1: qpack.c ember_qpack_rows), rows of
    bytes otherwise (an RGB stem at stride 1: ember_qpack_rows1). Bit-exact with LiteRT on the host's build (AVX-512
    VBMI for 4 channels) and on x86-64-v4 (no VBMI), and as sanitized C."""
    path = FIXTURES / f"{name}.tflite"
    opts = {"cpu": cpu} if cpu else {}
    graph, _, _ = build_graph(str(path), CompileOptions(**opts))
    views = [n for n in graph.nodes if n.op == "NhwcView" and graph.is_input(n.inputs[0])]
    assert len(views) == 1 and "Transpose" not in {n.op for n in graph.consumers()[id(views[0].inputs[0])]}, \
        graph.op_counts()
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "b", name="m", **opts)
    for xs in _inputs(interp):
        _assert_same(name, run_litert(interp, xs), run_ember(bundle, interp, xs), "LiteRT")
    if cpu is None:
        xs = inputs_for(interp, 0)
        _assert_same(name, run_litert(interp, xs), run_sanitized(bundle, interp, xs, tmp_path / "drv"),
                     "LiteRT (sanitized C)")


def test_int8_depthwise_avx2_sanitized_bit_exact(tmp_path: Path) -> None:
    """The host's channel-blocked depthwise kernel (qdwconv.c ember_qdx_conv on AVX2: channel quads whose lanes
    take each channel's TFLite multiplier and shift, quant.c ember_qt8_quad; the small maps' whole-image bands,
    qlinear.py _dw_work) built for this CPU under ASan/UBSan: no report, and LiteRT's bytes."""
    path = FIXTURES / "mobilenet_like_int8.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "out", name="m")
    src = (tmp_path / "out" / "m.c").read_text()
    assert src.count("ember_qdwconv(") >= 3, "no depthwise call"
    for xs in _inputs(interp)[:1]:
        _assert_same("mobilenet_like_int8", run_litert(interp, xs),
                     run_sanitized(bundle, interp, xs, tmp_path / "asan", cflags=("-march=native",)),
                     "LiteRT (sanitized build)")
