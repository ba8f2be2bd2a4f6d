"""--threads N on int8 networks (ops/split.py): the convolutions between channel-blocked tensors
(passes/int8_layout.py) divide along their output pixels in whole 64-pixel blocks (ember_qconv's and
ember_qconv_shifted's pixel range) on big maps, along their output channels on small ones (each part writing
its channel quads of every block, with the whole block stride), as does an integer Winograd convolution into
a blocked output; depthwise ones into or from blocked tensors along channel quads at the whole block stride;
an integer Winograd one on a map of several bands along its tile rows; a same-shape QAdd divides into byte runs,
an int8 MaxPool into planes. A threaded bundle's
bytes must be the single-thread bundle's, in process and as C under ASan/UBSan (the portable path and the
host's tiles); and each of those nodes must be divided (threads.MIN_WORK lowered to 0, so that these small
layers are)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.ops import qwino, registry
from ember.ops.parallel import node_split
from ember.ops.qlinear import YCUT_ATTR
from ember.passes import conv_algorithms, threads
from tests.ops.test_quant_blocked import HAS_AVX2, _chain
from tests.ops.test_quant_kernels import _f32, _model
from tests.ops.test_quant_shifted import HAS_VNNI
from tests.support import cdriver

# name, input, input channels, output channels, kernel, stride (test_quant_blocked._chain; "sum" = a + c) on a
# 9x84 map (756 pixels: 12 blocks), then 5x42 (210: 4 blocks) and 3x21 (63: one block).
LAYERS = [("a", "x", 8, 16, 1, 1),    # plain -> blocked, 1x1: pixels
          ("b", "a", 16, 16, 3, 1),   # blocked -> blocked, shifted 3x3: pixels
          ("c", "b", 16, 16, 1, 1),   # blocked in place, 1x1: pixels; sum = a + c, a blocked QAdd: bytes
          ("d", "sum", 16, 24, 3, 2),  # gathered 3x3 of stride 2 onto 4 blocks: channels, blocked output
          ("w", "d", 24, 20, 3, 1),   # integer Winograd, blocked -> blocked: quads (8 + 12 channels)
          ("e", "w", 20, 16, 3, 1),   # shifted 3x3, blocked -> blocked: channels
          ("f", "e", 16, 16, 1, 2),   # shifted 1x1 of stride 2 onto one block: channels
          ("g", "f", 16, 16, 3, 1)]   # gathered 3x3, blocked -> plain (an output): channels, as before


@pytest.fixture
def every_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Layers of any size divide; w (only) is a Winograd convolution."""
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    monkeypatch.setattr(conv_algorithms, "qconv_wino_fits",
                        lambda node, cpu: node.outputs[0].name == "w" and qwino.qconv_wino_takes(node))


def _divided(bundle: ember.Bundle) -> set[str]:
    """The outputs of the nodes whose code hands parts to the pool (NAME.c: each node's comment line, then its
    call)."""
    text = (Path(bundle.path) / "m.c").read_text()
    return set(re.findall(r"/\* \S+: \w+ -> (\w+) \*/\n\s*ember_tp_run\(", text))


def _how(path: Path, parts: int) -> dict[str, str]:
    """How each divided node of the model at `path` divides, by output name: along pixels, channels of a
    blocked output (each part writing its quads of every block), channels of a plain one, bytes, planes."""
    graph, _, _ = build_graph(str(path), CompileOptions(threads=parts))
    how = {}
    for node in graph.nodes:
        split_fn = registry.get(node.op).split
        found = node_split(node, split_fn)
        if found is None:
            continue
        split = found[0]
        y = node.outputs[0]
        assert y is not None
        if split.lower is not None:
            how[y.name] = split.lower.__name__
        else:
            attrs = split.attrs(0, split.align) if split.attrs is not None else {}
            how[y.name] = "blocked channels" if YCUT_ATTR in attrs else "channels"
    return how


def _bundles(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
             parts: int) -> tuple[ember.Bundle, dict[str, np.ndarray]]:
    """The bundle with `parts` threads, and the single-thread bundle's outputs."""
    onnx.save(model, tmp_path / "m.onnx")
    want = ember.compile(tmp_path / "m.onnx", tmp_path / "t1").run(feeds)
    assert all(len(np.unique(w)) > 20 for w in want.values())  # not saturated into a few values
    return ember.compile(tmp_path / "m.onnx", tmp_path / "tn", threads=parts), want


def _check_builds(tmp_path: Path, bundle: ember.Bundle, feeds: dict[str, np.ndarray],
                  want: dict[str, np.ndarray]) -> None:
    """The threaded bundle in process, and as C under ASan/UBSan (portable, and native where the host has the
    AVX2 or VNNI kernels), gives the 1-thread bundle's bytes."""
    builds = {"host": bundle.run(feeds),
              "portable": cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-pthread",))}
    if HAS_VNNI or HAS_AVX2:
        builds["native"] = cdriver.run(bundle.path, tmp_path / "drv_native", feeds, sanitize=True,
                                       cflags=("-pthread", "-march=native"))
    for build, got in builds.items():
        for name, w in want.items():
            np.testing.assert_array_equal(got[name], w, err_msg=f"{build} {name}")


def test_blocked_chain_divides_bit_identically(tmp_path: Path, every_layer: None) -> None:
    """Three threads: 12 blocks in parts of 4, 24 channels in parts of 8, 16 in two parts of 8, 20 in 8 and 12
    (the channel parts of blocked outputs on maps of several blocks, so that the block stride is the whole's);
    in process and as C under ASan/UBSan, on the portable path and the host's tiles (their word stores at a
    part's first block or channel quad)."""
    model, feeds = _chain(np.uint8, 1, LAYERS, outputs=("g",))
    graph = model.graph  # g's MaxPool in QDQ form: a QMaxPool, by planes
    graph.node.extend([helper.make_node("DequantizeLinear", ["g", "s", "zp"], ["g_f"]),
                       helper.make_node("MaxPool", ["g_f"], ["pooled_f"], kernel_shape=[2, 2]),
                       helper.make_node("QuantizeLinear", ["pooled_f", "s", "zp"], ["pooled"])])
    graph.output.append(onnx.ValueInfoProto(name="pooled"))
    bundle, want = _bundles(tmp_path, model, feeds, 3)
    assert _divided(bundle) == {"a", "b", "c", "sum", "d", "e", "f", "w", "g", "pooled"}
    pixels, blocked = "_lower_qpixels", "blocked channels"
    assert _how(tmp_path / "m.onnx", 3) == {
        "a": pixels, "b": pixels, "c": pixels, "sum": "_lower_qbinary", "d": blocked, "e": blocked, "f": blocked,
        "w": blocked, "g": "channels", "pooled": "channels"}
    text = (tmp_path / "tn" / "m.c").read_text()
    assert all(f"{k}(" in text for k in ("ember_qconv_shifted", "ember_qconv_wino", "ember_qadd", "ember_qmaxpool"))
    _check_builds(tmp_path, bundle, feeds, want)


def test_two_images_divide_by_pixels(tmp_path: Path, every_layer: None) -> None:
    """Two int8 images: the pixel parts take each image's range of blocks; channel parts need one image, so
    the small maps stay whole."""
    model, feeds = _chain(np.int8, 2, LAYERS, outputs=("g",))
    bundle, want = _bundles(tmp_path, model, feeds, 2)
    assert _divided(bundle) == {"a", "b", "c", "sum"}
    assert set(_how(tmp_path / "m.onnx", 2).values()) == {"_lower_qpixels", "_lower_qbinary"}
    got = bundle.run(feeds)
    for name, w in want.items():
        np.testing.assert_array_equal(got[name], w, err_msg=name)


# On the 9x84 map: depthwise 5x5 from the plain input into blocks (lay 2), depthwise 3x3 blocked in and out
# (lay 3: qdwconv.c's AVX2 quads, qdwvnni.c's groups), an integer Winograd 3x3 of 24 channels (tile rows of 42
# tiles, bands of 3: two bands), a depthwise stride-2 3x3 from blocks into a plain output (lay 1).
DW_LAYERS = [("h", "x", 8, 8, 5, 1), ("a", "h", 8, 24, 1, 1), ("p", "a", 24, 24, 3, 1), ("w", "p", 24, 24, 3, 1),
             ("q", "w", 24, 24, 3, 2)]


def test_blocked_depthwise_and_winograd_rows_divide_bit_identically(tmp_path: Path, every_layer: None) -> None:
    """Three threads: the blocked depthwise convolutions in parts of channel quads (8 channels: two parts of 4;
    24: three of 8), each at the whole block stride; the Winograd one in parts of its 5 tile rows (a part
    boundary inside a band); in process and as C under ASan/UBSan, portable and native."""
    model, feeds = _chain(np.uint8, 1, DW_LAYERS, outputs=("q",))
    bundle, want = _bundles(tmp_path, model, feeds, 3)
    assert _divided(bundle) == {"h", "a", "p", "w", "q"}
    dw, rows = "_lower_qdw_channels", "_lower_qwino_rows"
    assert _how(tmp_path / "m.onnx", 3) == {"h": dw, "a": "_lower_qpixels", "p": dw, "w": rows, "q": dw}
    text = (tmp_path / "tn" / "m.c").read_text()
    # the calls (their output pointer opens with a cast; the kernel's own call on NCHW copies does not)
    assert "ember_qconv_wino(" in text and len(re.findall(r"^\s+ember_qdwconv\(\(", text, re.M)) == 2 + 3 + 3
    _check_builds(tmp_path, bundle, feeds, want)


def test_depthwise_with_a_channel_multiplier_stays_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A depthwise convolution of channel multiplier 2 (output channel m reads input channel m / 2) is not divided:
    a part of its output channels is not the same range of its input's (cut alike, it read past them)."""
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    c, rng = 16, np.random.default_rng(3)
    consts = {"s": _f32(0.05), "zp": np.array(120, np.uint8),
              "w": rng.integers(-60, 61, (2 * c, 1, 3, 3)).astype(np.int8),
              "ws": np.full(2 * c, 0.01, np.float32), "wz": np.zeros(2 * c, np.int8),
              "b": rng.integers(-200, 200, 2 * c).astype(np.int32)}
    feeds = {"x": rng.integers(0, 256, (1, c, 20, 20)).astype(np.uint8)}
    model = _model([helper.make_node("QLinearConv", ["x", "s", "zp", "w", "ws", "wz", "s", "zp", "b"], ["y"],
                                     pads=[1] * 4, group=c)], feeds, consts, ("y",), 21)
    bundle, want = _bundles(tmp_path, model, feeds, 2)
    assert bundle.manifest["threads"]["divided"] == 0
    np.testing.assert_array_equal(bundle.run(feeds)["y"], want["y"])
