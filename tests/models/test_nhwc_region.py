"""Channels-last regions (passes/nhwc_region.py, ops/nhwc.py, kernels/nhwc.c) against onnxruntime: chains of
inverted-residual blocks with ReLU6, HardSwish and Swish, stride 1 and 2, dilation 2, a 5x5 depthwise, an
expand ratio of 1, a Squeeze-Excitation block (its pool and Mul channels-last too), channel counts that
are not whole vectors (20, 40, 60: the depthwise's overlapped last vector) and fewer than a vector (4: the
scalar path), odd plane sizes (19x21), and stems (a dense Conv of 3 input channels reading the NCHW input and
writing NHWC: 20 and 40 output channels, stride 2 and 1); 1x1 convs of at most 32 input channels whose weights
fill 16-column panels take the small-K kernel (16 -> 32 with Swish, 32 -> 16 with the residual, 24 -> 48: ragged
last pixel tiles). Run on the host's vectors and on the x86-64
baseline (no vectors: the scalar C), in-process and as sanitized C; the kernels also compile warning-free for
AVX-512 and AArch64."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

import ember
from ember.codegen import library
from ember.passes import pipeline
from ember.toolchain.cpus import CpuChoice
from tests.models.test_inverted_residual import _Net, _plain_block
from tests.support import cdriver
from tests.support.models import assert_bundle_matches, assert_close, assert_threads_match, onnxruntime_outputs

KERNELS = ("ember_dwconv_nhwc_f32", "ember_pw_nhwc_f32", "ember_transpose2d_f32", "ember_gap_nhwc_f32",
           "ember_scale_nhwc_f32", "ember_pw_nhwc_small_f32")
STEM = "ember_conv_stem_nhwc_f32"


@pytest.fixture
def nhwc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regions of 3 Convs on, and 1x1 weights in panels with the small-K kernel up to 32 input channels (on planes
    over 56x56 up to 64 output channels), on every CPU family (toolchain/cpus.py): x86-64's (SSE2) 32-column
    panels are four vectors, which that kernel runs in its plain C."""
    real = pipeline.resolve_cpu

    def resolve(target: str, cpu: str | None, params: tuple[str, ...] = ()) -> CpuChoice | None:
        choice = real(target, cpu, params)
        return None if choice is None else replace(choice, family=replace(
            choice.family, nhwc_min_convs=3, matmul_panels=True, nhwc_small_k=32, nhwc_small_big_m=64))

    monkeypatch.setattr(pipeline, "resolve_cpu", resolve)


def _model(path: Path, h: int = 19, w: int = 21) -> tuple[Path, list[str]]:
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = _plain_block(net, "x", 20, 20, 3, 1, "relu6")                  # residual, 60 channels
    b = _plain_block(net, a, 20, 24, 2, 2, "hardswish")               # stride 2: 19x21 -> 10x11
    c = _plain_block(net, b, 24, 24, 1, 1, "swish")                   # expand ratio 1, residual
    d = _plain_block(net, c, 24, 4, 2, 1, "relu6", dilation=2)        # 4 output channels
    e = net.op("Clip", net.conv(d, 4, 4, k=5, group=4), "zero", "six")  # 5x5 on 4 channels: the scalar path
    f = _plain_block(net, net.conv(e, 4, 16), 16, 16, 2, 1, "swish", se=True)  # SE: GapNHWC, ScaleNHWC
    oh, ow = -(-h // 2), -(-w // 2)
    shapes = {d: [1, 4, oh, ow], f: [1, 16, oh, ow]}
    net.save(path, "nhwc", {"x": [1, 20, h, w]}, shapes)
    return path, list(shapes)


def _stem_model(path: Path, h: int = 23, w: int = 19) -> tuple[Path, list[str]]:
    """Two stems on a 3-channel image: 3x3 stride 2 to 20 channels + HardSwish (vectors of 8: two whole and
    one overlapped), and 3x3 stride 1 to 40 channels + Relu (four vectors and a fifth in a second group)."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = _plain_block(net, net.op("HardSwish", net.conv("x", 3, 20, k=3, stride=2)), 20, 20, 2, 1, "relu6")
    b = _plain_block(net, net.op("Relu", net.conv("x", 3, 40, k=3)), 40, 8, 1, 2, "swish")
    shapes = {a: [1, 20, -(-h // 2), -(-w // 2)], b: [1, 8, -(-h // 2), -(-w // 2)]}
    net.save(path, "stem", {"x": [1, 3, h, w]}, shapes)
    return path, list(shapes)


def _channels_last_model(path: Path) -> Path:
    """Two regions laid out as a TFLite model's: an NHWC image (23x19x3) Transposed to NCHW into a 3x3 stride-2
    stem to 20 channels + HardSwish and a block, whose output is Transposed back to NHWC; and a one-channel 49x10
    spectrogram into the keyword spotter's 10x4 stride-2 stem to 16 channels + Relu, a block, and an AveragePool
    whose one window is the whole 25x5 plane."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    net.nodes.append(helper.make_node("Transpose", ["x"], ["x_nchw"], perm=[0, 3, 1, 2]))
    a = _plain_block(net, net.op("HardSwish", net.conv("x_nchw", 3, 20, k=3, stride=2)), 20, 20, 2, 1, "relu6")
    net.nodes.append(helper.make_node("Transpose", [a], ["image_out"], perm=[0, 2, 3, 1]))
    net.inits += [numpy_helper.from_array((net.rng.standard_normal((16, 1, 10, 4)) / 6).astype(np.float32), "kws_w"),
                  numpy_helper.from_array(net.rng.uniform(-0.5, 0.5, 16).astype(np.float32), "kws_b")]
    net.nodes.append(helper.make_node("Conv", ["s", "kws_w", "kws_b"], ["kws_stem"], kernel_shape=[10, 4],
                                      strides=[2, 2], pads=[4, 1, 5, 1]))
    b = _plain_block(net, net.op("Relu", "kws_stem"), 16, 16, 1, 1, "relu6")
    net.nodes.append(helper.make_node("AveragePool", [b], ["kws_out"], kernel_shape=[25, 5], strides=[25, 5]))
    net.save(path, "cl", {"x": [1, 23, 19, 3], "s": [1, 1, 49, 10]},
             {"image_out": [1, 12, 10, 20], "kws_out": [1, 16, 1, 1]})
    return path


def test_channels_last_models_run_their_regions_without_reorders(tmp_path: Path, nhwc: None) -> None:
    """The stem reads the NHWC image as it came (no Transpose at the way in), the way out cancels with the
    output's Transpose, and the keyword spotter's one-channel 10x4 stem and whole-plane pool close its region: no
    reorder is left anywhere. Against onnxruntime, in-process and as sanitized C."""
    path = _channels_last_model(tmp_path / "cl.onnx")
    bundle = ember.compile(path, tmp_path / "out")
    source = (bundle.path / "cl.c").read_text()
    assert source.count(f"{STEM}(") == 3
    assert set(bundle.manifest["ops"]) == {"ConvNHWC", "GapNHWC"}, bundle.manifest["ops"]  # no reorder, no Transpose
    rng = np.random.default_rng(7)
    x = {"x": (rng.standard_normal((1, 23, 19, 3)) * 3).astype(np.float32),
         "s": (rng.standard_normal((1, 1, 49, 10)) * 3).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, ["image_out", "kws_out"], tmp_path / "asan", "channels-last")


@pytest.mark.parametrize("cpu", [None, "x86-64"])
def test_stems_write_the_region_channels_last(tmp_path: Path, nhwc: None, cpu: str | None) -> None:
    """No reorder at the region's way in: the stems read the NCHW input and write NHWC (ops/nhwc.py)."""
    path, outs = _stem_model(tmp_path / "stem.onnx")
    bundle = ember.compile(path, tmp_path / "out", cpu=cpu)
    source = (bundle.path / "stem.c").read_text()
    assert source.count(f"{STEM}(") == 3 and source.count("ember_transpose2d_f32(") == 3  # 2 ways out
    x = {"x": (np.random.default_rng(5).standard_normal((1, 3, 23, 19)) * 3).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, outs, tmp_path / "asan", "stem region")
    cdriver.compile_werror(bundle.path, tmp_path / "werror.o")


@pytest.mark.parametrize("cpu", [None, "x86-64"])
def test_nhwc_regions_match_onnxruntime(tmp_path: Path, nhwc: None, cpu: str | None) -> None:
    path, outs = _model(tmp_path / "nhwc.onnx")
    bundle = ember.compile(path, tmp_path / "out", cpu=cpu)
    source = (bundle.path / "nhwc.c").read_text()
    assert all(source.count(f"{k}(") >= 2 for k in KERNELS)  # the kernel and its calls
    # the SE scale runs in place over the depthwise output its pool has read
    call = next(line for line in source.splitlines() if line.strip().startswith("ember_scale_nhwc_f32("))
    args = call.strip()[len("ember_scale_nhwc_f32("):].split(", ")
    assert args[0] == args[1], call
    x = {"x": (np.random.default_rng(3).standard_normal((1, 20, 19, 21)) * 3).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, outs, tmp_path / "asan", "nhwc region")
    cdriver.compile_werror(bundle.path, tmp_path / "werror.o")


@pytest.mark.parametrize("cpu", [None, "x86-64"])
def test_small_k_on_big_planes_matches_onnxruntime(tmp_path: Path, nhwc: None, cpu: str | None) -> None:
    """On a 60x61 plane (over 56x56) the 16 -> 32 expand and the 32 -> 16 project (with the residual; where 16
    columns fill a panel) take the small-K kernel, the 16 -> 96 expand (over 64 output channels) and the 96 -> 16
    project the general matmul; against onnxruntime."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    b = _plain_block(net, _plain_block(net, "x", 16, 16, 2, 1, "relu6"), 16, 16, 6, 1, "hardswish")
    path = tmp_path / "big.onnx"
    net.save(path, "big", {"x": [1, 16, 60, 61]}, {b: [1, 16, 60, 61]})
    bundle = ember.compile(path, tmp_path / "out", cpu=cpu)
    calls = [line.strip().split("(")[0] for line in (bundle.path / "big.c").read_text().splitlines()
             if line.strip().startswith(("ember_pw_nhwc_f32(", "ember_pw_nhwc_small_f32("))]
    choice = pipeline.resolve_cpu("host", cpu)
    small = 2 if choice is not None and choice.family.mm_panel == 16 else 1  # 32-column panels: 16 -> 32 only
    assert calls == ["ember_pw_nhwc_small_f32"] * small + ["ember_pw_nhwc_f32"] * (4 - small), calls
    x = {"x": (np.random.default_rng(6).standard_normal((1, 16, 60, 61)) * 3).astype(np.float32)}
    assert_close(bundle.run(x)[b], onnxruntime_outputs(path, x)[b], "small-K on a 60x61 plane")


def test_wide_panels_match_onnxruntime(tmp_path: Path, nhwc: None) -> None:
    """On AVX-512 (the family's narrow_panel: 64) the 1x1 convs whose output channels fill 64-column panels run in
    4-vector tiles (ember_matmul_wide_f32): an expand with HardSwish (applied after the tiles), one with ReLU6 (in
    them), projects with the residual, one of them over two K blocks (320 -> 64); 11x13 pixels, no whole number of
    7-row tiles. Against onnxruntime, in-process and as sanitized C."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    b = _plain_block(net, _plain_block(net, "x", 64, 64, 2, 1, "hardswish"), 64, 64, 5, 1, "relu6")
    path = tmp_path / "wide.onnx"
    net.save(path, "wide", {"x": [1, 64, 11, 13]}, {b: [1, 64, 11, 13]})
    bundle = ember.compile(path, tmp_path / "out")
    choice = pipeline.resolve_cpu("host", None)
    calls = [line.strip() for line in (bundle.path / "wide.c").read_text().splitlines()
             if line.strip().startswith("ember_pw_nhwc_f32(")]
    assert len(calls) == 4, calls
    if choice is not None and choice.family.narrow_panel == 64:
        assert all(call.split(", ")[3] == "64" for call in calls), calls
    x = {"x": (np.random.default_rng(8).standard_normal((1, 64, 11, 13)) * 3).astype(np.float32)}
    ref = onnxruntime_outputs(path, x)[b]
    assert_close(bundle.run(x)[b], ref, "wide panels")
    assert_close(cdriver.run(bundle.path, tmp_path / "asan", x, sanitize=True)[b], ref, "wide panels (sanitized C)")


@pytest.mark.parametrize(("h", "w"), [(7, 7), (5, 6), (9, 28)])
def test_depthwise_row_ends_in_groups_match_onnxruntime(tmp_path: Path, nhwc: None, h: int, w: int) -> None:
    """Stride-1 depthwise rows where at least four outputs' windows reach past the row's ends compute them four at a
    time with zero columns there (kernels/nhwc.c ember_nhwc_dw4_s1_edge; the last group moved back over outputs
    already computed): 5x5 windows on 7 and 6 columns (every output at an end) and on 28, and 3x3 on each; 40
    channels (a ragged last vector), ReLU6 in the tiles. Against onnxruntime, in-process and as sanitized C."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = net.conv("x", 40, 40)
    b = net.op("Clip", net.conv(a, 40, 40, k=5, group=40), "zero", "six")
    c = net.op("Add", a, net.conv(net.conv(b, 40, 40, k=3, group=40), 40, 40))
    path = tmp_path / "rowends.onnx"
    net.save(path, "rowends", {"x": [1, 40, h, w]}, {c: [1, 40, h, w]})
    bundle = ember.compile(path, tmp_path / "out")
    assert sum(n["op"].startswith("ConvNHWC") for n in bundle.manifest["nodes"]) == 4
    x = {"x": (np.random.default_rng(10).standard_normal((1, 40, h, w)) * 3).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, [c], tmp_path / "asan", f"depthwise row ends {h}x{w}")


@pytest.mark.parametrize("threads", [1, 2])
def test_ragged_wide_panels_match_onnxruntime(tmp_path: Path, nhwc: None, threads: int) -> None:
    """1x1 convs of more output channels than a 64-column panel that 64 does not divide (in steps of 8) keep their
    weights in 64-column panels and a narrower last one (AVX-512: the 4-vector tiles, then the general matmul's strips
    over the rest): a projection to 112 (64 + 48) with the residual, an expand to 224 (192 + 32) with HardSwish after
    the tiles, a projection to 72 (64 + 8: the half-vector strip) and one to 40 (under a panel: no change); 7x9
    pixels. With 2 threads too (divided by pixels: a ragged panel is never divided by columns). Against
    onnxruntime, in-process and as sanitized C."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = _plain_block(net, _plain_block(net, "x", 112, 112, 2, 1, "hardswish"), 112, 72, 1, 1, "relu6")
    b = net.conv(a, 72, 40)
    path = tmp_path / "ragged.onnx"
    net.save(path, "ragged", {"x": [1, 112, 7, 9]}, {b: [1, 40, 7, 9]})
    bundle = ember.compile(path, tmp_path / "out", threads=threads)
    choice = pipeline.resolve_cpu("host", None)
    calls = [line.strip() for line in (bundle.path / "ragged.c").read_text().splitlines()
             if line.strip().startswith("ember_pw_nhwc_f32(")]
    if choice is not None and choice.family.narrow_panel == 64 and threads == 1:
        assert [call.split(", ")[3] for call in calls] == ["64", "64", "64", "0"], calls
    x = {"x": (np.random.default_rng(9).standard_normal((1, 112, 7, 9)) * 3).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, [b], tmp_path / "asan", "ragged wide panels")


def test_nhwc_kernels_compile_for_avx512_and_aarch64(tmp_path: Path) -> None:
    """The AVX-512 (16-float vectors) and NEON paths, which this machine cannot run, warning-free; the dense convs'
    kernels (kernels/nhwc_dense.c) too."""
    src = tmp_path / "nhwc.c"
    kernels = (*KERNELS, STEM, "ember_conv_wino4_nhwc_f32", "ember_conv_im2col_nhwc_f32")
    src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble(set(kernels))
                   + "void ember_use(void);\nvoid ember_use(void) {" + "".join(f" (void){k};" for k in kernels)
                   + " }\n")
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-ffreestanding", "-c", str(src),
             "-o", str(tmp_path / "k.o")]
    cdriver.run_cmd(["cc", "-march=x86-64-v4", *flags])
    if importlib.util.find_spec("ziglang") is not None:
        cdriver.run_cmd([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-musl", *flags])


def test_nhwc_regions_divide_among_threads(tmp_path: Path, nhwc: None) -> None:
    """Compiled for 2 threads, the depthwise convs divide by output rows and the 1x1 convs by pixels, each part
    computing its elements as the whole call does; also as sanitized C with its thread pool. Planes of 57x59, so
    that the convs have the work passes/threads.py divides."""
    path, outs = _model(tmp_path / "nhwc.onnx", 57, 59)
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=2)
    # each divided node calls its kernel once per part
    one, two = ((b.path / "nhwc.c").read_text() for b in (serial, threaded))
    assert all(two.count(f"{k}(") > one.count(f"{k}(") for k in KERNELS[:2])  # the reorders stay whole
    x = {"x": (np.random.default_rng(4).standard_normal((1, 20, 57, 59)) * 3).astype(np.float32)}
    assert_threads_match(serial, threaded, x, outs, tmp_path / "c", "nhwc region")


def test_stems_divide_among_threads(tmp_path: Path, nhwc: None) -> None:
    """Compiled for 2 threads, a stem divides by output rows like a depthwise conv (ops/nhwc.py), each part
    computing its rows as the whole call does."""
    path, outs = _stem_model(tmp_path / "stem.onnx", 61, 57)
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=2)
    one, two = ((b.path / "stem.c").read_text() for b in (serial, threaded))
    assert two.count(f"{STEM}(") > one.count(f"{STEM}(")
    x = {"x": (np.random.default_rng(6).standard_normal((1, 3, 61, 57)) * 3).astype(np.float32)}
    want, got = serial.run(x), threaded.run(x)
    for name in outs:
        assert_close(got[name], want[name], f"stem region {name}: 2 threads vs 1", rel=1e-5)
