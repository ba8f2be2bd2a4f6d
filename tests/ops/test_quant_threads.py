"""--threads N on int8 networks (ops/split.py): the convolutions between channel-blocked tensors
(passes/int8_layout.py) divide along their output pixels in whole 64-pixel blocks (ember_qconv's and
ember_qconv_shifted's pixel range) on big maps, along their output channels on small ones (each part writing
its channel quads of every block, with the whole block stride), as does an integer Winograd convolution into
a blocked output; a same-shape QAdd divides into byte runs, an int8 MaxPool into planes. A threaded bundle's
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
from ember.ops import qwino
from ember.passes import conv_algorithms, threads
from tests.ops.test_quant_blocked import HAS_AVX2, _chain
from tests.ops.test_quant_shifted import HAS_VNNI
from tests.support import cdriver

# name, input, input channels, output channels, kernel, stride (test_quant_blocked._chain; "sum" = a + c) on a
# 9x84 map (756 pixels: 12 blocks), then 5x42 (210: 4 blocks) and 3x21 (63: one block).
LAYERS = [("a", "x", 8, 16, 1, 1),    # plain -> blocked, 1x1: pixels
          ("b", "a", 16, 16, 3, 1),   # blocked -> blocked, shifted 3x3: pixels
          ("c", "b", 16, 16, 1, 1),   # blocked in place, 1x1: pixels; sum = a + c, a blocked QAdd: bytes
          ("d", "sum", 16, 24, 3, 2),  # gathered 3x3 of stride 2 onto 4 blocks: channels, blocked output
          ("e", "d", 24, 16, 1, 2),   # shifted 1x1 of stride 2 onto one block: channels, blocked output
          ("f", "e", 16, 16, 3, 1),   # gathered 3x3 onto one block: channels, blocked output
          ("g", "f", 16, 16, 3, 1)]   # blocked -> plain (an output): channels, as before
DIVIDED = {"a", "b", "c", "sum", "d", "e", "f", "g"}


@pytest.fixture
def every_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "MIN_WORK", 0)


def _divided(bundle: ember.Bundle) -> set[str]:
    """The outputs of the nodes whose code hands parts to the pool (NAME.c: each node's comment line, then its
    call)."""
    text = (Path(bundle.path) / "m.c").read_text()
    return set(re.findall(r"/\* \S+: \w+ -> (\w+) \*/\n\s*ember_tp_run\(", text))


def _check(tmp_path: Path, model: onnx.ModelProto, feeds: dict[str, np.ndarray], parts: int,
           divided: set[str]) -> None:
    onnx.save(model, tmp_path / "m.onnx")
    want = ember.compile(tmp_path / "m.onnx", tmp_path / "t1").run(feeds)
    assert all(len(np.unique(w)) > 20 for w in want.values())  # not saturated into a few values
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "tn", threads=parts)
    assert _divided(bundle) == divided
    builds = {"host": bundle.run(feeds),
              "portable": cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-pthread",))}
    if HAS_VNNI or HAS_AVX2:  # the tiles' word stores at a part's first block or channel quad
        builds["native"] = cdriver.run(bundle.path, tmp_path / "drv_native", feeds, sanitize=True,
                                       cflags=("-pthread", "-march=native"))
    for build, got in builds.items():
        for name, w in want.items():
            np.testing.assert_array_equal(got[name], w, err_msg=f"{build} {name}")


def test_blocked_chain_divides_bit_identically(tmp_path: Path, every_layer: None) -> None:
    """Three threads: 12 blocks in parts of 4, 24 channels in parts of 8, 16 in parts of 8 (two)."""
    model, feeds = _chain(np.uint8, 1, LAYERS, outputs=("g",))
    _check(tmp_path, model, feeds, 3, DIVIDED)


def test_two_images_divide_by_pixels(tmp_path: Path, every_layer: None) -> None:
    """Two int8 images: the pixel parts take each image's range of blocks; channel parts need one image, so
    the small maps stay whole."""
    model, feeds = _chain(np.int8, 2, LAYERS, outputs=("g",))
    _check(tmp_path, model, feeds, 2, {"a", "b", "c", "sum"})


def test_winograd_into_blocks_divides_by_quads(tmp_path: Path, every_layer: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """An integer Winograd 3x3 between blocked values: parts of its output-channel quads (20 channels: 8 + 12)
    written into every block of the whole output, and a MaxPool of its plain output's planes."""
    monkeypatch.setattr(conv_algorithms, "qconv_wino_fits", lambda node, cpu: qwino.qconv_wino_takes(node))
    layers = [("a", "x", 8, 16, 1, 1), ("w", "a", 16, 20, 3, 1), ("o", "w", 20, 16, 1, 1)]
    model, feeds = _chain(np.uint8, 1, layers, (8, 11, 30), outputs=("o",))
    graph = model.graph  # o's MaxPool in QDQ form: a QMaxPool
    graph.node.extend([helper.make_node("DequantizeLinear", ["o", "s", "zp"], ["o_f"]),
                       helper.make_node("MaxPool", ["o_f"], ["pooled_f"], kernel_shape=[3, 3], strides=[2, 2]),
                       helper.make_node("QuantizeLinear", ["pooled_f", "s", "zp"], ["pooled"])])
    graph.output.append(onnx.ValueInfoProto(name="pooled"))
    _check(tmp_path, model, feeds, 2, {"a", "w", "o", "pooled"})
    ops = (tmp_path / "tn" / "m.c").read_text()
    assert "ember_qconv_wino(" in ops and "ember_qmaxpool(" in ops

