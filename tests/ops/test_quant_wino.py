"""QConvWinograd (kernels/qwino.c, ops/qwino.py): exact integer Winograd F(2x2, 3x3). Its outputs must equal
ONNX's reference (and so ember's other integer convolutions) bit for bit: odd heights and widths (partial
tiles, one pixel), asymmetric and no padding, odd channel counts (a zero pad channel), output channels not in fours,
activation zero points at both ends of uint8 and int8, per-channel weight scales, uint8 weights whose rows
need offsets, int32 outputs (ConvInteger), a fused Relu; both on the host build (AVX2 tiles where there
are) and the portable path under ASan and UBSan. Also: the int32 proof refuses a layer whose sums could
pass 2^31, which then keeps QConv's kernels; and which CPU families choose it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.codegen import library
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ops import qwino
from ember.passes import conv_algorithms
from ember.toolchain.cpus import FAMILIES
from tests.ops.test_quant_blocked import _chain
from tests.ops.test_quant_kernels import _f32, _model
from tests.ops.test_quant_shifted import _compile, _ops
from tests.support import cdriver

RNG = np.random.default_rng(29)

CASES = {
    # name: (x dtype, x zero point, x shape, M, attrs, weight dtype)
    "u8_pad1_odd_hw_m7": (np.uint8, 7, (1, 8, 9, 11), 7, {"pads": [1, 1, 1, 1]}, np.int8),
    "s8_odd_c_asym_pads_batch2": (np.int8, -3, (2, 5, 7, 13), 6, {"pads": [0, 2, 1, 0]}, np.int8),
    "u8_valid_zp255": (np.uint8, 255, (1, 6, 10, 10), 4, {}, np.int8),
    "u8_zp0_wide": (np.uint8, 0, (1, 16, 6, 37), 9, {"pads": [1, 1, 1, 1]}, np.int8),
    "s8_zp127": (np.int8, 127, (1, 4, 5, 5), 5, {"pads": [1, 1, 1, 1]}, np.int8),
    "s8_zp-128_one_channel": (np.int8, -128, (1, 1, 4, 3), 3, {"pads": [2, 1, 1, 2]}, np.int8),
    "u8_uint8_weights_offsets": (np.uint8, 100, (1, 6, 8, 9), 5, {"pads": [1, 1, 1, 1]}, np.uint8),
    # one output pixel (a tile of which three outputs are dropped), two output channels (of a block of four)
    "s8_one_pixel": (np.int8, 5, (1, 3, 3, 3), 2, {}, np.int8),
    # 128 channels: bands of 3 tile rows (64 tiles at most), the last one partial, its last tile row half
    "u8_bands_128ch": (np.uint8, 40, (1, 128, 19, 40), 8, {"pads": [1, 1, 1, 1]}, np.int8),
}


def _qconv_parts(xdt: type, xz: int, xshape: tuple[int, ...], m: int, attrs: dict, wdt: type, k: int = 3,
                 p: str = "") -> tuple[onnx.NodeProto, dict, dict]:
    """A QLinearConv node (names prefixed by p), its input and its constants."""
    info, winfo = np.iinfo(xdt), np.iinfo(wdt)
    c = xshape[1]
    feeds = {p + "x": RNG.integers(info.min, info.max + 1, xshape).astype(xdt)}
    w = RNG.integers(winfo.min, winfo.max + 1, (m, c, k, k)).astype(wdt)
    # uint8 weights: zero points of 0 and 255 make rows of range past int8 (packed with offsets)
    wz = (np.where(np.arange(m) % 2, 255, 0) if wdt is np.uint8 else np.zeros(m)).astype(wdt)
    consts = {"xs": _f32(0.03), "xz": np.array(xz, xdt), "w": w,
              "ws": RNG.uniform(0.001, 0.006, m).astype(np.float32), "wz": wz, "ys": _f32(0.5),
              "yz": np.array(5, xdt), "b": RNG.integers(-3000, 3000, m).astype(np.int32)}
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    node = helper.make_node("QLinearConv", [p + n for n in names], [p + "y"], **attrs)
    return node, feeds, {p + n: v for n, v in consts.items()}


def _qconv_model(*case: object, k: int = 3) -> tuple[onnx.ModelProto, dict]:
    node, feeds, consts = _qconv_parts(*case, k=k)  # type: ignore[arg-type]
    return _model([node], feeds, consts, ("y",), 21), feeds


@pytest.fixture
def every_takeable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every convolution qwino.c can compute becomes QConvWinograd, whatever the CPU family's threshold."""
    monkeypatch.setattr(conv_algorithms, "qconv_wino_fits", lambda node, cpu: qwino.qconv_wino_takes(node))


def _check(tmp_path: Path, model: onnx.ModelProto, feeds: dict, ref: np.ndarray | None = None) -> None:
    if ref is None:
        ref = ReferenceEvaluator(model).run(None, feeds)[0]
    bundle = _compile(tmp_path, model)
    assert "QConvWinograd" in _ops(bundle)
    np.testing.assert_array_equal(bundle.run(feeds)["y"], ref)  # the host build (AVX2 tiles where there are)
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)  # portable path, sanitized
    np.testing.assert_array_equal(got["y"], ref)


def test_wino_matches_reference(tmp_path: Path, every_takeable: None) -> None:
    """Every case of CASES as one node of one model (one build of each kind)."""
    nodes, feeds, consts = [], {}, {}
    for i, case in enumerate(sorted(CASES)):
        node, f, c = _qconv_parts(*CASES[case], p=f"c{i}_")
        nodes.append(node)
        feeds.update(f)
        consts.update(c)
    outs = tuple(f"c{i}_y" for i in range(len(CASES)))
    model = _model(nodes, feeds, consts, outs, 21)
    refs = dict(zip(outs, ReferenceEvaluator(model).run(None, feeds), strict=True))
    bundle = _compile(tmp_path, model)
    assert _ops(bundle).count("QConvWinograd") == len(CASES)
    got = bundle.run(feeds)  # the host build (AVX2 tiles where there are)
    sanitized = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)  # portable path, sanitized
    for i, case in enumerate(sorted(CASES)):
        np.testing.assert_array_equal(got[outs[i]], refs[outs[i]], err_msg=case)
        np.testing.assert_array_equal(sanitized[outs[i]], refs[outs[i]], err_msg=case)


def test_wino_int32_outputs(tmp_path: Path, every_takeable: None) -> None:
    """ConvInteger: the exact sums, no requantisation (uint8 input, per-channel int8 weights)."""
    feeds = {"x": RNG.integers(0, 256, (1, 6, 7, 9)).astype(np.uint8)}
    consts = {"xz": np.array(131, np.uint8), "w": RNG.integers(-128, 128, (5, 6, 3, 3)).astype(np.int8)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 0, 1, 2])
    model = _model([node], feeds, consts, ("y",), 21)
    _check(tmp_path, model, feeds)


def test_wino_qdq_relu_and_residual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A QDQ Conv + Relu (the clamp folded into the requantisation) whose output is added to the input (a
    residual QAdd after it), 32 channels: the AVX2 tiles' full 3-vector tile on a 12x12 map. Integer
    requantisation is not the float reference's arithmetic, so the check is against ember's QConv kernels."""
    x = RNG.integers(0, 256, (1, 32, 12, 12)).astype(np.uint8)
    w = RNG.integers(-127, 128, (32, 32, 3, 3)).astype(np.int8)
    init = [helper.make_tensor("xs", TensorProto.FLOAT, [], [0.02]),
            helper.make_tensor("xz", TensorProto.UINT8, [], [128]),
            helper.make_tensor("w", TensorProto.INT8, w.shape, w.reshape(-1).tolist()),
            helper.make_tensor("ws", TensorProto.FLOAT, [32], RNG.uniform(0.0005, 0.002, 32).tolist()),
            helper.make_tensor("wz", TensorProto.INT8, [32], [0] * 32),
            helper.make_tensor("b", TensorProto.INT32, [32], RNG.integers(-500, 500, 32).tolist()),
            helper.make_tensor("ys", TensorProto.FLOAT, [], [0.03]),
            helper.make_tensor("yz", TensorProto.UINT8, [], [0])]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("Mul", ["ws", "xs"], ["bsc"]),
             helper.make_node("DequantizeLinear", ["b", "bsc"], ["bf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "ys", "yz"], ["rf"]),
             helper.make_node("Add", ["rf", "xf"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "xs", "xz"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, x.shape)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    (tmp_path / "plain").mkdir()
    plain = _compile(tmp_path / "plain", model, cpu="x86-64")
    assert "QConvWinograd" not in _ops(plain)
    ref = plain.run({"x": x})["y"]
    assert len(np.unique(ref)) > 20 and (ref == 128).any()
    monkeypatch.setattr(conv_algorithms, "qconv_wino_fits", lambda node, cpu: qwino.qconv_wino_takes(node))
    _check(tmp_path, model, {"x": x}, ref)


def test_proof_refuses_worst_case_layer(tmp_path: Path, every_takeable: None) -> None:
    """2048 channels of weights +-127 (or -128): 4 * 255 * sum |w| reaches past 2^31, so some input could
    wrap 4y: the layer keeps QConv's kernels, and its outputs stay exact."""
    c = 2048
    w = np.where(RNG.integers(0, 2, (2, c, 3, 3)) == 1, 127, -128).astype(np.int8)
    assert not qwino.sums_fit(w.astype(np.int64))
    assert qwino.sums_fit(w[:, :1000].astype(np.int64))
    feeds = {"x": RNG.integers(0, 256, (1, c, 3, 3)).astype(np.uint8)}
    consts = {"xz": np.array(0, np.uint8), "w": w}
    model = _model([helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 1, 1, 1])], feeds, consts,
                   ("y",), 21)
    bundle = _compile(tmp_path, model)
    assert "QConvWinograd" not in _ops(bundle)
    np.testing.assert_array_equal(bundle.run(feeds)["y"], ReferenceEvaluator(model).run(None, feeds)[0])


def test_which_families_choose_it(tmp_path: Path) -> None:
    """The families' thresholds: AVX2 (x86-64-v3) turns a 3x3 stride-1 QConv of 32 channels at 7x7 into
    QConvWinograd; 16 channels, 6x6 maps, stride 2 and the SSE2 baseline keep QConv's kernels."""
    assert FAMILIES["avx2"].qwino_min_channels == 32 and FAMILIES["x86-64"].qwino_min_channels is None
    pad = {"pads": [1, 1, 1, 1]}
    for i, (c, hw, kernel, attrs, opts, want) in enumerate([
            (32, 7, 3, pad, {"cpu": "x86-64-v3"}, True),
            (16, 28, 3, pad, {"cpu": "x86-64-v3"}, False),
            (32, 6, 3, pad, {"cpu": "x86-64-v3"}, False),
            (32, 14, 3, {**pad, "strides": [2, 2]}, {"cpu": "x86-64-v3"}, False),
            (32, 7, 3, pad, {"cpu": "x86-64"}, False)]):
        model, feeds = _qconv_model(np.uint8, 3, (1, c, hw, hw), c, attrs, np.int8, k=kernel)
        (tmp_path / str(i)).mkdir()
        bundle = _compile(tmp_path / str(i), model, **opts)
        assert ("QConvWinograd" in _ops(bundle)) == want, (c, hw, kernel, attrs, opts)
        if want or opts["cpu"] == "x86-64":
            np.testing.assert_array_equal(bundle.run(feeds)["y"], ReferenceEvaluator(model).run(None, feeds)[0])


def test_simd_paths_compile_warning_free(tmp_path: Path, every_takeable: None) -> None:
    """The product's three x86 paths build warning-free: VPDPWSSD (AVX-512 VNNI with VL; AVX-VNNI, {vex}
    encoded) and VPMADDWD (AVX2); this host runs only what it has, so the others are compiled, not run. And the
    kernel block compiles alone (portable and AVX2), with no unused function and no double promotion."""
    model, _ = _qconv_model(np.uint8, 7, (1, 8, 9, 11), 7, {"pads": [1, 1, 1, 1]}, np.int8)
    bundle = _compile(tmp_path, model)
    for march in ("icelake-server", "alderlake", "haswell"):
        cdriver.build(bundle.path, tmp_path / march, cflags=(f"-march={march}", "-Werror"), opt="-O2")
    # the kernel block alone, with only what it requires (library.py), as a bundle copies it in
    src = tmp_path / "alone.c"
    src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble({"ember_qconv_wino"})
                   + "void ember_use(void);\nvoid ember_use(void) { (void)ember_qconv_wino; }\n")
    for march in ("x86-64", "haswell"):
        cdriver.run_cmd(["cc", "-std=c99", "-O2", f"-march={march}", "-Wall", "-Wextra", "-Werror",
                         "-Wdouble-promotion", "-ffreestanding", "-c", str(src), "-o", str(tmp_path / "alone.o")])


def test_wino_reads_and_writes_blocked(tmp_path: Path, every_takeable: None) -> None:
    """Between integer convolutions, QConvWinograd reads and writes channel-blocked values (int8_layout.py):
    b and f read a blocked input and write a blocked output on a 9x37 map (333 pixels: output rows that run
    into the next block of 64), two images of int8; bit for bit the NCHW build's (--opt-level 1), on the host and
    natively under ASan/UBSan (the portable path's blocked reads are the same C)."""
    layers = [("a", "x", 8, 12, 1, 1), ("b", "a", 12, 8, 3, 1), ("f", "b", 8, 12, 3, 1), ("g", "f", 12, 4, 1, 1)]
    model, feeds = _chain(np.int8, 2, layers, (8, 9, 37), ("g",))
    onnx.save(model, tmp_path / "m.onnx")
    graph, _, _ = build_graph(str(tmp_path / "m.onnx"), CompileOptions())
    assert {v.name.split("_")[0] for v in graph.values() if v.blocked} == {"a", "b", "f"}
    assert [n.op for n in graph.nodes].count("QConvWinograd") == 2
    ref = ember.compile(tmp_path / "m.onnx", tmp_path / "nchw", opt_level=1).run(feeds)["g"]
    assert len(np.unique(ref)) > 20
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "blocked")
    np.testing.assert_array_equal(bundle.run(feeds)["g"], ref)
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-march=native",))
    np.testing.assert_array_equal(got["g"], ref)


def test_wino_divides_among_threads(tmp_path: Path, every_takeable: None) -> None:
    """--threads 2: a Winograd layer into a plain output divides along its output-channel quads (the last
    quad partial: 14 channels), each part with its quads' weights and tables, and gives the reference's
    bytes; the threaded C (sanitized) as well."""
    model, feeds = _qconv_model(np.uint8, 17, (1, 24, 15, 18), 14, {"pads": [1, 1, 1, 1]}, np.int8)
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    bundle = _compile(tmp_path, model, threads=2)
    assert "QConvWinograd" in _ops(bundle) and bundle.manifest["threads"]["divided"] == 1
    np.testing.assert_array_equal(bundle.run(feeds)["y"], ref)
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_array_equal(got["y"], ref)
