"""A float convolution at a channels-last model's edge (a TFLite model's NHWC input or output, reaching the IR as a
Transpose to NCHW before it or one to NHWC after it) keeps neither Transpose on any target or CPU family: every float
kernel reads its input and stores its output at the channel stride (passes/nhwc_views.py, ops/conv.py
float_conv_reads_nhwc / float_conv_stores_nhwc). The outputs match onnxruntime in-process and as the sanitized C
driver, on the host's kernels and the x86-64 baseline family's (no channels-last regions there, so the NCHW kernels
meet the edges), and the 2-thread builds (parts of pixels, F(4x4)'s bands) match their 1-thread ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.toolchain.targets import get_target
from tests.support.models import assert_bundle_matches, assert_threads_match
from tests.unit.test_transposes import TO_NCHW, TO_NHWC, Net


@dataclass(frozen=True)
class Edge:
    """One Conv of `c` -> `m` channels between NHWC Transposes (`nhwc_out`: also after it) on an [n, h, w, c] input."""

    name: str
    n: int
    h: int
    w: int
    c: int
    m: int
    k: int
    stride: int = 1
    group: int = 1
    dilation: int = 1
    act: str | None = None
    nhwc_out: bool = True

    def save(self, path: Path) -> tuple[Path, str]:
        net = Net()
        t = net.op("Transpose", ["x"], perm=TO_NCHW)
        pad = self.dilation * (self.k - 1) // 2
        y = net.op("Conv", [t, net.w(self.m, self.c // self.group, self.k, self.k), net.w(self.m)],
                   strides=[self.stride] * 2, pads=[pad] * 4, group=self.group, dilations=[self.dilation] * 2)
        if self.act:
            y = net.op(self.act, [y])
        out = net.op("Transpose", [y], perm=TO_NHWC) if self.nhwc_out else y
        return net.save(path, [("x", [self.n, self.h, self.w, self.c])], [out]), out

    def input(self) -> dict[str, np.ndarray]:
        return {"x": np.random.default_rng(0).standard_normal((self.n, self.h, self.w, self.c)).astype(np.float32)}


# Each names the kernel the baseline x86-64 family runs it with (the host's channels-last regions take some).
EDGES = [
    Edge("im2col_3x3_8_to_12", 1, 64, 64, 8, 12, 3, act="Relu"),  # Conv: products stored transposed
    Edge("im2col_strided_40_to_20", 1, 14, 14, 40, 20, 3, stride=2),
    Edge("im2col_1x1_strided", 1, 14, 14, 24, 36, 1, stride=2, act="HardSwish"),
    Edge("direct_1x1", 1, 19, 19, 32, 12, 1, act="HardSwish"),  # a 1x1 reading NHWC: im2col gathers it
    Edge("direct_1x1_nchw_out", 1, 19, 19, 32, 12, 1, act="HardSwish", nhwc_out=False),  # ember_conv_act_f32
    Edge("grouped", 1, 16, 16, 16, 32, 3, group=2),
    Edge("depthwise", 1, 28, 28, 32, 32, 3, group=32, act="Relu"),  # ember_dwconv_planes_f32
    Edge("depthwise_strided", 1, 28, 27, 32, 32, 3, stride=2, group=32),
    Edge("depthwise_multiplier_2", 1, 16, 16, 8, 16, 3, group=8),
    Edge("depthwise_dilated", 1, 9, 10, 3, 3, 3, group=3, dilation=3),
    Edge("winograd2_ssd_head", 1, 10, 10, 256, 546, 3),  # ConvWinograd
    Edge("winograd2_batch", 2, 20, 20, 16, 16, 3, act="Relu"),
    Edge("winograd4", 1, 56, 56, 16, 16, 3, act="Relu"),  # ConvWinograd4
    Edge("narrow_1x1", 1, 4, 4, 16, 64, 1, act="Relu"),  # ConvNarrow: its pixel-major result is the NHWC output
    Edge("narrow_3x3", 1, 7, 7, 128, 128, 3),
    Edge("shifted_dilated", 1, 20, 20, 6, 10, 5, dilation=2),  # ConvShifted
    Edge("stem_rgb_nchw_out", 1, 32, 32, 3, 16, 3, stride=2, act="Relu", nhwc_out=False),  # im2col's gather
]
LAYOUT_PERMS = (TO_NCHW, TO_NHWC)
TARGETS = [("host", None), ("x86_64", None), ("x86_64", "x86-64-v3"), ("aarch64", None), ("riscv64", None),
           ("wasm32", None)]


def _layout_transposes(path: Path, target: str, cpu: str | None = None, **options: object) -> list[str]:
    """The layout Transposes left in `path`'s graph as `target` builds it (its kind, its int8 kernels; `options`: more
    CompileOptions)."""
    t = get_target(target)
    graph, _, _ = build_graph(str(path), CompileOptions(target=target, cpu=cpu, **options), target_kind=t.kind,
                              int8_isa=t.int8_isa)
    return [f"{n.name} ({n.op})" for n in graph.nodes
            if n.op == "Transpose" and list(n.attrs.get("perm", [])) in LAYOUT_PERMS]


@pytest.mark.parametrize("edge", EDGES, ids=lambda e: e.name)
def test_no_layout_transpose_on_any_target(tmp_path: Path, edge: Edge) -> None:
    path, _ = edge.save(tmp_path / "m.onnx")
    for target, cpu in TARGETS:
        assert _layout_transposes(path, target, cpu) == [], f"{edge.name} on {target} {cpu or ''}"


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
def test_microcontrollers_view_only_without_scratch_copies(tmp_path: Path, target: str) -> None:
    """A microcontroller's scratch is RAM the plan holds: there an edge is read in place only where no NCHW copy or
    product block goes into scratch beside it, and it is, every one: im2col gathers every window (an RGB stem's, and 8
    channels' that a host copies), a depthwise convolution fills its planes and stores its rows at the pixel stride
    (ops/conv.py dw_strided), and a dense one computes its product transposed into the output (WEIGHTS_KM)."""
    for name in ("stem_rgb_nchw_out", "depthwise", "im2col_3x3_8_to_12", "grouped", "direct_1x1"):
        edge = next(e for e in EDGES if e.name == name)
        assert _layout_transposes(edge.save(tmp_path / f"{name}.onnx")[0], target) == [], name


@pytest.mark.parametrize("cpu", [None, "x86-64"], ids=["host", "x86-64"])
@pytest.mark.parametrize("edge", EDGES, ids=lambda e: e.name)
def test_edges_match_onnxruntime(tmp_path: Path, edge: Edge, cpu: str | None) -> None:
    path, out = edge.save(tmp_path / "m.onnx")
    bundle = ember.compile(path, tmp_path / "b", cpu=cpu)
    assert not any(op == "Transpose" for op in bundle.manifest["ops"]), bundle.manifest["ops"]
    assert_bundle_matches(bundle, path, edge.input(), [out], tmp_path / "drv", f"{edge.name} ({cpu or 'host'})")


THREADED = ["im2col_3x3_8_to_12", "winograd4", "depthwise", "narrow_3x3", "winograd2_ssd_head"]


@pytest.mark.parametrize("name", THREADED)
def test_edges_divided_among_threads(tmp_path: Path, name: str) -> None:
    """Parts of an NHWC output's pixels (ember_conv_nhwc_f32's range), F(4x4)'s bands of rows at the channel stride,
    and the kernels left whole where a part would cut the output's channels."""
    edge = next(e for e in EDGES if e.name == name)
    path, out = edge.save(tmp_path / "m.onnx")
    serial = ember.compile(path, tmp_path / "one", cpu="x86-64")
    threaded = ember.compile(path, tmp_path / "two", cpu="x86-64", threads=2)
    assert_threads_match(serial, threaded, edge.input(), [out], tmp_path / "drv", name)
