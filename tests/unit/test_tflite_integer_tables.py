"""The compile-time constants of TFLite's integer kernels that ember reproduces: RESIZE_BILINEAR's 10-bit
interpolation taps, the int64 requantisation's Q15 multipliers, and the int16 SOFTMAX tables."""

from __future__ import annotations

import math
import re

import numpy as np

from ember.ops.q16 import gen_lut, q15_multiplier
from ember.ops.qlinear import DOUBLE
from ember.ops.resize import tflite_bilinear_taps


def test_bilinear_taps_follow_tflite_integer_coordinates() -> None:
    # 4 -> 7 rows: scale (1024 * 4 + 3) // 7 = 585 per output row
    taps = tflite_bilinear_taps(4, 7, align=False, half=False)
    assert taps[1].tolist() == [0, 1, 585] and taps[6].tolist() == [3, 3, 6 * 585 - 3 * 1024]
    # half-pixel centres: row 0 sits 220/1024 before input row 0, both taps on row 0 (a negative weight)
    assert tflite_bilinear_taps(4, 7, align=False, half=True)[0].tolist() == [0, 0, -220]
    # align_corners: the last output row is the last input row exactly
    assert tflite_bilinear_taps(4, 7, align=True, half=False)[-1].tolist() == [3, 3, 0]


def test_q15_multiplier_rounds_the_q31_significand() -> None:
    assert q15_multiplier(0.5, DOUBLE) == (1 << 14, 15)  # 2^30 in Q31 -> 2^14 in Q15, 15 - 0 right shift
    assert q15_multiplier(0.75 - 2.0**-20, DOUBLE) == (24576, 15)  # the lost low bits round
    assert q15_multiplier(2.0**15, DOUBLE) is None  # a left shift: TFLite refuses such a model


def test_softmax_tables_span_their_functions() -> None:
    exp = gen_lut(math.exp, -10.0, 0.0).astype(np.int64)
    recip = gen_lut(lambda v: 1.0 / (1.0 + v), 0.0, 1.0).astype(np.int64)
    assert exp.shape == recip.shape == (513,)
    assert exp[-1] == 32767 and abs(exp[0] - round(math.exp(-10) * 32768)) <= 1 and np.all(np.diff(exp) >= 0)
    assert recip[0] == 32767 and recip[-1] == 16384 and np.all(np.diff(recip) <= 0)
    single = gen_lut(lambda v: np.exp(np.float32(v)), -10.0, 0.0, single=True).astype(np.int64)
    assert np.abs(single - exp).max() <= 1  # TFLite Micro's float32 table: at most one step apart


def test_q16_geometry_table_matches_ember_q16_macros() -> None:
    """q16.c's EMBER_Q16_* index macros name the fields ops/q16.py Q16Geometry writes at those indices."""
    from dataclasses import fields

    from ember.codegen import library
    from ember.ops.q16 import Q16Geometry

    geo = Q16Geometry(*range(10, 26))
    text = library.blocks()["ember_q16_base"].text
    macros = {m[1].lower(): int(m[2]) for m in re.finditer(r"#define EMBER_Q16_(\w+) (\d+)", text)}
    names = [f.name for f in fields(Q16Geometry)]
    assert sorted(macros) == sorted("g" if n == "group" else n for n in names)
    table = geo.table()
    for name in names:
        assert table[macros["g" if name == "group" else name]] == getattr(geo, name), name


def test_reduce_tables_cover_any_axes() -> None:
    """Q16Reduce's tables: output o reduces x[base[o] + off], for axes that are not adjacent too."""
    from ember.ops.q16 import reduce_tables

    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    for axes in [(1, 3), (0,), (3,), (0, 1, 2, 3)]:
        base, off = reduce_tables(x.shape, axes)
        got = np.asarray([x.reshape(-1)[b + off].sum() for b in base])
        assert got.tolist() == x.sum(axis=axes).reshape(-1).tolist(), axes


def test_matmul_batches_broadcast() -> None:
    """Q16MatMul's batch offsets: a [2, 1, M, K] by b [3, K, N] is 6 products, a's batch repeated along b's."""
    from ember.ops.q16 import matmul_batches

    a, b = matmul_batches((2, 1, 4, 8), (3, 8, 5), (2, 3, 4, 5))
    assert a.tolist() == [0, 0, 0, 32, 32, 32] and b.tolist() == [0, 40, 80, 0, 40, 80]
