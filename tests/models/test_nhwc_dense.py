"""Dense convolutions in channels-last regions (the CPU family's nhwc_dense; passes/nhwc_region.py dense_kind,
kernels/nhwc_dense.c) against onnxruntime: a ResNet-like chain with 3x3 stride-1 convs as channels-last Winograd
F(4x4) (Relu, the fused residual, HardSwish after the tiles; odd maps whose last tiles are cut at the edge), a
stride-2 3x3, a 5x5 with dilation 2 and a strided 1x1 as im2col products, and a 3x3 on a map of few tiles (Winograd:
its transformed weights are small); batches of 1 and 2. Run on the host's vectors, on AVX2 (8-float vectors) and on
the x86-64 baseline (no vectors: the scalar C), in-process and as sanitized C, and divided among 2 threads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from onnx import numpy_helper

import ember
from ember.passes import pipeline
from ember.toolchain.cpus import CpuChoice
from tests.models.test_inverted_residual import _Net
from tests.support import cdriver
from tests.support.models import assert_bundle_matches, assert_close, assert_threads_match, onnxruntime_outputs

WINOGRAD, IM2COL = "ember_conv_wino4_nhwc_f32", "ember_conv_im2col_nhwc_f32"


@pytest.fixture
def dense(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regions of 3 Convs with dense convs in them, on every CPU family (toolchain/cpus.py)."""
    real = pipeline.resolve_cpu

    def resolve(target: str, cpu: str | None, params: tuple[str, ...] = ()) -> CpuChoice | None:
        choice = real(target, cpu, params)
        return None if choice is None else replace(choice, family=replace(
            choice.family, nhwc_min_convs=3, nhwc_dense=True))

    monkeypatch.setattr(pipeline, "resolve_cpu", resolve)


def _model(path: Path, n: int, h: int, w: int) -> tuple[Path, list[str]]:
    """1x1 32 -> 48 + Relu; Winograd 48 -> 64 + HardSwish; Winograd 64 -> 64 + the residual + Relu (read outside
    the region too: a way out); 3x3 stride 2 64 -> 32 + Clip; 5x5 dilation 2 32 -> 32; strided 1x1 32 -> 64 + Relu;
    3x3 64 -> 32 on the quarter map; the plane's mean."""
    net = _Net()
    net.inits += [numpy_helper.from_array(np.float32(v), name) for v, name in ((0.0, "zero"), (6.0, "six"))]
    a = net.op("Relu", net.conv("x", 32, 48))
    b = net.op("HardSwish", net.conv(a, 48, 64, k=3))
    c = net.op("Relu", net.op("Add", net.conv(b, 64, 64, k=3), b))
    d = net.op("Clip", net.conv(c, 64, 32, k=3, stride=2), "zero", "six")
    e = net.conv(d, 32, 32, k=5, dilation=2)
    f = net.op("Relu", net.conv(e, 32, 64, k=1, stride=2))
    g = net.op("GlobalAveragePool", net.conv(f, 64, 32, k=3))
    shapes = {c: [n, 64, h, w], g: [n, 32, 1, 1]}
    net.save(path, "dense", {"x": [n, 32, h, w]}, shapes)
    return path, list(shapes)


def _calls(bundle: ember.Bundle, kernel: str) -> int:
    return sum(line.strip().startswith(f"{kernel}(") for line in (bundle.path / "dense.c").read_text().splitlines())


@pytest.mark.parametrize("cpu", [None, "x86-64-v3", "x86-64"])
@pytest.mark.parametrize("n", [1, 2])
def test_dense_convs_run_channels_last(tmp_path: Path, dense: None, cpu: str | None, n: int) -> None:
    path, outs = _model(tmp_path / "dense.onnx", n, 19, 21)  # 5 x 6 tiles of 4x4
    bundle = ember.compile(path, tmp_path / "out", cpu=cpu)
    assert _calls(bundle, WINOGRAD) == 3 and _calls(bundle, IM2COL) == 3
    # the way in and the residual value's way out: nothing else leaves NHWC
    assert bundle.manifest["ops"].get("NhwcReorder") == 2, bundle.manifest["ops"]
    x = {"x": (np.random.default_rng(3).standard_normal((n, 32, 19, 21)) * 2).astype(np.float32)}
    assert_bundle_matches(bundle, path, x, outs, tmp_path / "asan", "dense region")
    cdriver.compile_werror(bundle.path, tmp_path / "werror.o")


def test_dense_convs_divide_among_threads(tmp_path: Path, dense: None) -> None:
    """Compiled for 2 threads, Winograd divides by rows of tiles and im2col by pixels, each part with scratch of its
    own; results as 1 thread's, also as sanitized C with its thread pool."""
    path, outs = _model(tmp_path / "dense.onnx", 1, 45, 47)
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=2)
    assert _calls(threaded, WINOGRAD) > _calls(serial, WINOGRAD) and _calls(threaded, IM2COL) > _calls(serial, IM2COL)
    x = {"x": (np.random.default_rng(4).standard_normal((1, 32, 45, 47)) * 2).astype(np.float32)}
    assert_threads_match(serial, threaded, x, outs, tmp_path / "c", "dense region")


def test_big_weights_on_few_pixels_divide_by_columns(tmp_path: Path, dense: None) -> None:
    """Products whose weights pass 1 MiB over few pixels divide among 2 threads by weight panels (ops/nhwc.py
    by_columns), each thread streaming half the weights: Winograd 256 -> 256 on 14x14 (16 tiles, 9 MiB of U; with
    HardSwish, applied by each part to its channels), then on 7x7 an im2col 3x3 512 -> 256 and a 1x1 1024 -> 512.
    Results as 1 thread's, also as sanitized C with the thread pool."""
    net = _Net()
    a = net.op("HardSwish", net.conv("x", 256, 256, k=3))
    b = net.op("Relu", net.conv(net.op("Relu", net.conv(a, 256, 512, stride=2)), 512, 256, k=3))
    c = net.op("Relu", net.conv(net.conv(b, 256, 1024), 1024, 512))
    g = net.op("GlobalAveragePool", c)
    path = tmp_path / "dense.onnx"
    net.save(path, "dense", {"x": [1, 256, 14, 14]}, {a: [1, 256, 14, 14], b: [1, 256, 7, 7], g: [1, 512, 1, 1]})
    serial = ember.compile(path, tmp_path / "t1")
    threaded = ember.compile(path, tmp_path / "t2", threads=2)
    choice = pipeline.resolve_cpu("host", None)
    if choice is not None and choice.family.matmul_panels:  # weights in panels: the columns divide
        source = (threaded.path / "dense.c").read_text()
        assert source.count("ember_pw_nhwc_ld_f32(") - (serial.path / "dense.c").read_text().count(
            "ember_pw_nhwc_ld_f32(") == 1  # the 1x1's second part
        assert _calls(threaded, IM2COL) == 4 and _calls(threaded, WINOGRAD) == 2
        first = [line for line in source.splitlines() if line.strip().startswith(f"{WINOGRAD}(")][0]
        assert first.split(", ")[9:11] == ["0", "128"], first  # columns [0, 128) of 256, every tile row
    x = {"x": (np.random.default_rng(9).standard_normal((1, 256, 14, 14))).astype(np.float32)}
    want, ref = serial.run(x), onnxruntime_outputs(path, x)
    for name in (a, g):
        assert_close(want[name], ref[name], f"{name}: 1 thread")
    assert_threads_match(serial, threaded, x, [a, b, g], tmp_path / "c", "big weights")


@pytest.mark.parametrize("cpu", [None, "x86-64-v3", "x86-64"])
def test_winograd_on_ragged_channels_and_small_maps(tmp_path: Path, cpu: str | None) -> None:
    """Between an NHWC model's Transposes (TFLite's layout: the region's way in and out cancel with them), channels-
    last Winograd with ragged vectors of channels (24 -> 40 on 19x21: the last vector overlaps the one before) and on
    a 10x10 map of 9 tiles whose transformed weights are small (96 -> 24): no Transpose is left, and the outputs
    match onnxruntime's, also as sanitized C. The host family's own rules (nhwc_dense on AVX2 and AVX-512)."""
    from tests.unit.test_transposes import TO_NCHW, TO_NHWC, Net

    choice = pipeline.resolve_cpu("host", cpu)
    for shape, m in (((1, 19, 21, 24), 40), ((1, 10, 10, 96), 24)):
        net = Net()
        t = net.op("Transpose", ["x"], perm=TO_NCHW)
        y = net.op("Relu", [net.op("Conv", [t, net.w(m, shape[3], 3, 3), net.w(m)], pads=[1] * 4)])
        out = net.op("Transpose", [y], perm=TO_NHWC)
        path = net.save(tmp_path / f"w{m}.onnx", [("x", list(shape))], [out])
        bundle = ember.compile(path, tmp_path / f"b{m}", cpu=cpu)
        if choice is not None and choice.family.nhwc_dense:
            assert bundle.manifest["ops"] == {"ConvNHWC": 1}, bundle.manifest["ops"]
            assert (bundle.path / f"w{m}.c").read_text().count(f"{WINOGRAD}(") == 2
        x = {"x": np.random.default_rng(m).standard_normal(shape).astype(np.float32)}
        assert_bundle_matches(bundle, path, x, [out], tmp_path / f"asan{m}", f"Winograd {shape} -> {m}")
