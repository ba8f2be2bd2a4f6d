"""qgemm.c's AVX2 tiles (on an AVX2 host; elsewhere these check whichever tiles the host has): with no
weight of -128 they multiply by VPMADDUBSW on |x| and w * sign(x), whose int16 pair sums must never
saturate, so activations of -128 and 127 against weights of +-127 are the worst case; a -128 weight
takes the VPMADDWD tiles. Both requantise in registers and store 4-row tiles, single rows, and the
partial tiles of a block's last pixels (here 117 pixels: a block of 64, then 3 tiles of 16 and 5). Where
K is large, the pixels past whole vectors of 8 are matrix-vector products instead (qblock.c
ember_qgemv_tail: a 7x7 map's 49th pixel, 3 of a 9x11 map's second block), four rows at a time and one.
Stride 2 on rows of 75 and 150 pixels: every other byte of a row 32 at a time (qpack.c ember_qgather2) into
im2col's rows of words (channels in fours) and into the planes of an RGB stem (qshift.c). On AVX2 the 7x7
map's tail pixel takes its ten rows as one group of eight by VPMADDUBSW (ember_qgemv8_rq: K 504, 15 steps of
32, a half step of 16 and 8 left over) and two single rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from tests.ops.test_quant_kernels import _check, _f32

RNG = np.random.default_rng(57)


def _extreme(shape: tuple[int, ...], values: list[int], dtype: type) -> np.ndarray:
    """Mostly the given extreme values, a quarter anything in the dtype's range."""
    info = np.iinfo(dtype)
    out = RNG.choice(np.array(values, np.int64), shape)
    anything = RNG.integers(info.min, info.max + 1, shape)
    return np.where(RNG.random(shape) < 0.25, anything, out).astype(dtype)


# x dtype, output channels, kernel, smallest weight, x shape, stride
SMALL = (1, 16, 9, 13)
CASES = {"s8_1x1_quads": (np.int8, 12, 1, -127, SMALL, 1), "u8_3x3_rows": (np.uint8, 7, 3, -127, SMALL, 1),
         "s8_3x3_w128": (np.int8, 7, 3, -128, SMALL, 1), "u8_1x1_w128": (np.uint8, 12, 1, -128, SMALL, 1),
         "s8_3x3_tail7x7": (np.int8, 10, 3, -127, (1, 56, 7, 7), 1),
         "u8_3x3_tail": (np.uint8, 6, 3, -128, (1, 64, 9, 11), 1),
         "s8_3x3_s2_rows": (np.int8, 8, 3, -127, (1, 8, 5, 75), 2),
         "u8_rgb_3x3_s2": (np.uint8, 8, 3, -127, (1, 3, 5, 150), 2)}


@pytest.mark.parametrize("case", list(CASES))
def test_extreme_products_match_reference(tmp_path: Path, case: str) -> None:
    xdt, m, k, wmin, xshape, stride = CASES[case]
    info = np.iinfo(xdt)
    x = _extreme(xshape, [info.min, info.max], xdt)
    w = _extreme((m, xshape[1], k, k), [wmin, 127], np.int8)
    if wmin == -127:
        w = np.maximum(w, -127).astype(np.int8)
    else:
        assert (w == -128).any()
    consts = {"xs": _f32(0.02), "xz": np.array(0 if xdt is np.int8 else 128, xdt), "w": w,
              "ws": RNG.uniform(0.004, 0.01, m).astype(np.float32), "wz": np.zeros(m, np.int8),
              "ys": _f32(0.9), "yz": np.array(-3 if xdt is np.int8 else 125, xdt),
              "b": RNG.integers(-3000, 3000, m).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[k // 2] * 4, strides=[stride, stride])
    got = _check(tmp_path, [node], {"x": x}, consts)
    assert len(np.unique(got["y"])) > 20  # not saturated into a few values
