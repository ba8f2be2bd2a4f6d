"""QConvShifted (qshift.c): integer convolutions that read the input's padded word planes, split by
stride phase, instead of an im2col copy. Both of its paths must equal ONNX's reference bit for bit: the AVX-512
tiles (padding columns computed and dropped, partial last blocks of 1 to 4 vectors, 4-row tiles and
single rows, the +-L clamp of sums past 2^24), and the portable path that gathers blocks from the planes
(a build without AVX-512, under ASan and UBSan). Also: which convolutions take it, and their weights'
(c/4, kh, kw, c%4) order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ops import qshifted
from ember.passes import conv_algorithms
from tests.ops.test_quant_kernels import _f32, _model
from tests.ops.test_quant_speedpaths import _large_sum_case
from tests.support import cdriver

RNG = np.random.default_rng(23)
NATIVE = cdriver.run_cmd(["cc", "-march=native", "-dM", "-E", "-x", "c", "/dev/null"]).stdout
HAS_VNNI = "__AVX512VNNI__" in NATIVE and "__AVX512BW__" in NATIVE

CASES = {
    # name: (x dtype, x shape, w shape (M, C, kh, kw), attrs): M = 7 and 5 give 4-row tiles and single rows
    "u8_3x3_pad1": (np.uint8, (1, 8, 9, 20), (7, 8, 3, 3), {"pads": [1, 1, 1, 1]}),
    "s8_5x5_dil2_asym_pads": (np.int8, (2, 4, 5, 76), (5, 4, 5, 5), {"dilations": [2, 2], "pads": [2, 4, 1, 3]}),
    "u8_3x2_valid": (np.uint8, (1, 12, 6, 33), (4, 12, 3, 2), {}),
    # strided: both phases of each dimension, one phase (a 1x1: the input subsampled), three row phases
    # with dilated columns that all read phase 0
    "u8_3x3_s2_pad1": (np.uint8, (1, 8, 23, 40), (7, 8, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "s8_1x1_s2": (np.int8, (2, 12, 9, 37), (5, 12, 1, 1), {"strides": [2, 2]}),
    "u8_3x3_s3x2_dil_cols": (np.uint8, (1, 4, 20, 45), (6, 4, 3, 3),
                             {"strides": [3, 2], "dilations": [1, 2], "pads": [2, 1, 0, 3]}),
    # channels not in fours, padded with zero weights: an RGB stem, and a quad and a half
    "u8_rgb_stem_s2": (np.uint8, (1, 3, 31, 64), (8, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "s8_6ch_3x3": (np.int8, (1, 6, 7, 40), (5, 6, 3, 3), {"pads": [1, 1, 1, 1]}),
}


def _qconv_model(xdt: type, xshape: tuple[int, ...], wshape: tuple[int, ...],
                 attrs: dict) -> tuple[onnx.ModelProto, dict]:
    info = np.iinfo(xdt)
    m = wshape[0]
    feeds = {"x": RNG.integers(info.min, info.max + 1, xshape).astype(xdt)}
    consts = {"xs": _f32(0.03), "xz": np.array(7 if xdt is np.uint8 else -3, xdt),
              "w": RNG.integers(-127, 128, wshape).astype(np.int8),
              "ws": RNG.uniform(0.002, 0.01, m).astype(np.float32),
              "wz": np.zeros(m, np.int8), "ys": _f32(0.4), "yz": np.array(5, xdt),
              "b": RNG.integers(-3000, 3000, m).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], **attrs)
    return _model([node], feeds, consts, ("y",), 21), feeds


def _compile(tmp_path: Path, model: onnx.ModelProto, **opts: object) -> ember.Bundle:
    onnx.save(model, tmp_path / "m.onnx")
    return ember.compile(tmp_path / "m.onnx", tmp_path / "out", **opts)


def _ops(bundle: ember.Bundle) -> list[str]:
    return [n["op"] for n in json.loads((Path(bundle.path) / "m.json").read_text())["nodes"]]


@pytest.fixture
def every_takeable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every convolution qshift.c can compute becomes QConvShifted, whether or not it pays (the kernel's
    geometry, not the choice, is under test)."""
    monkeypatch.setattr(conv_algorithms, "qconv_shifted_fits", qshifted.qconv_shifted_takes)
    monkeypatch.setattr(conv_algorithms, "qconv_amx_fits", lambda node, cpu: False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_shifted_conv_matches_reference(tmp_path: Path, case: str, every_takeable: None) -> None:
    model, feeds = _qconv_model(*CASES[case])
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    bundle = _compile(tmp_path, model)
    assert _ops(bundle) == ["QConvShifted"]
    np.testing.assert_array_equal(bundle.run(feeds)["y"], ref)  # the host build: AVX-512 tiles where there are
    # the portable path (no -march: SSE2), sanitized
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_array_equal(got["y"], ref)


@pytest.mark.skipif(not HAS_VNNI, reason="needs a host with AVX-512 VNNI")
@pytest.mark.parametrize("stride", [1, 2])
def test_shifted_tiles_sanitized_with_clamp(tmp_path: Path, stride: int, every_takeable: None) -> None:
    """The AVX-512 tiles under ASan/UBSan (they read up to a block past the last position: the planes'
    margin; of stride 2, the last phase plane's), on sums past 2^24 that take the +-L clamp."""
    feeds, consts, _ = _large_sum_case(7, 64, (5, 30), 0.00003)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1], strides=[stride, stride])
    model = _model([node], feeds, consts, ("y",), 21)
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    bundle = _compile(tmp_path, model)
    assert _ops(bundle) == ["QConvShifted"]
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-march=native",))
    np.testing.assert_array_equal(got["y"], ref)
    assert (ref == 127).any() and (ref == -128).any()


def test_which_convolutions_are_shifted(tmp_path: Path) -> None:
    """Stride-1 convolutions with several taps, strided 1x1s and strided ones whose channels are not in
    fours are shifted where little work is wasted; narrow ones (a 14-wide 3x3 would waste 2/16, a 1x1 of
    stride 2 onto 3x3 lanes for 9 pixels), other strided ones, stride-1 ones with channels not in
    fours, stride-1 1x1s and --opt-level 1 keep im2col (QConv)."""
    for i, (xshape, kernel, attrs, opts, op) in enumerate([
            ((1, 8, 9, 40), 3, {"pads": [1, 1, 1, 1]}, {}, "QConvShifted"),
            ((1, 8, 18, 36), 1, {"strides": [2, 2]}, {}, "QConvShifted"),
            ((1, 3, 18, 36), 3, {"strides": [2, 2], "pads": [1, 1, 1, 1]}, {}, "QConvShifted"),
            ((1, 3, 9, 40), 3, {"pads": [1, 1, 1, 1]}, {}, "QConv"),
            ((1, 8, 9, 14), 3, {"pads": [1, 1, 1, 1]}, {}, "QConv"),
            ((1, 8, 6, 6), 1, {"strides": [2, 2]}, {}, "QConv"),
            ((1, 8, 14, 40), 3, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, {}, "QConv"),
            ((1, 8, 9, 40), 1, {}, {}, "QConv"),
            ((1, 8, 9, 40), 3, {"pads": [1, 1, 1, 1]}, {"opt_level": 1}, "QConv")]):
        # The choice only: the host pipeline, no C (both kernels' results are held to the reference above and
        # in test_quant_kernels.py).
        model, _ = _qconv_model(np.uint8, xshape, (4, xshape[1], kernel, kernel), attrs)
        onnx.save(model, tmp_path / f"{i}.onnx")
        graph, _, _ = build_graph(str(tmp_path / f"{i}.onnx"), CompileOptions(**opts))
        assert [n.op for n in graph.nodes] == [op], (xshape, kernel, attrs, opts)
