"""ops/qarm.py: the Cortex-M DSP kernels' weight layout and their requantisation's fast form (SMMLA, rounding
half up) agreeing with quant.c's half to even wherever `fast_requant` allows it."""

from __future__ import annotations

import numpy as np

from ember.ops.qarm import (
    _mul_rows,
    _mve8_rows,
    _pair_rows,
    dsp_weights,
    dsp_weights16,
    dw3_pitch,
    dw3_plane,
    dw8_weights,
    fast_requant,
    fold_zp,
    folded_bias,
    mul_weights,
    mve8_weights,
    rq_table,
    sum_bound,
    tie_free,
)
from ember.ops.qlinear import Requant, fixed_point


def _half_even(p: int, k: int) -> int:
    q, r = divmod(p, 1 << k)  # floor
    half = 1 << (k - 1)
    return q + (r > half or (r == half and q & 1))


def _fast(acc: int, c: list[int]) -> int:
    """qarm.c's fast form: SMMLA (floor of (acc * mult + ra * 2^32) / 2^32), then >> sh."""
    return ((acc * c[0] + (c[2] << 32)) >> 32) >> c[1]


def test_fast_form_equals_half_to_even_when_admitted() -> None:
    rng = np.random.default_rng(3)
    admitted = 0
    for _ in range(300):
        m = float(np.float32(10.0 ** rng.uniform(-6, -0.4)))
        mult, shift = fixed_point(m)
        bound = int(rng.integers(1, 2**24))
        rq = Requant((mult,), (shift,), 0, -128, 127)
        if not fast_requant(rq, np.array([bound])):
            continue
        admitted += 1
        c = rq_table(rq, None, True)
        accs = np.concatenate([rng.integers(-bound, bound + 1, 200), [0, bound, -bound, 1, -1]])
        for acc in accs.tolist():
            assert _fast(acc, c) == _half_even(acc * mult, shift), (m, acc)
    assert admitted > 200


def test_ties_refuse_the_fast_form() -> None:
    """Multiplier 2^-3 (mult = 2^30, shift 33): acc = 4 is exactly half a step; rounding up would give 1."""
    mult, shift = fixed_point(0.125)
    rq = Requant((mult,), (shift,), 0, -128, 127)
    assert not fast_requant(rq, np.array([1000]))
    assert _half_even(4 * mult, shift) == 0 and _fast(4, rq_table(rq, None, True)) == 1
    assert rq_table(rq, (5,), False) == [mult, shift, 0, 5]


def test_dsp_weights_pair_rows_and_lane_order() -> None:
    rows = np.arange(3 * 6, dtype=np.int8).reshape(3, 6)  # odd rows, K not a multiple of 4
    w = dsp_weights(rows)
    assert w.shape == (4, 8)
    flat = w.reshape(-1)
    # first pair, first word of row 0 then of row 1: k0 k2 k1 k3
    assert flat[:8].tolist() == [0, 2, 1, 3, 6, 8, 7, 9]
    # first pair's second words: row 0's k4 k5 (k6, k7 zero padding), then row 1's
    assert flat[8:16].tolist() == [4, 0, 5, 0, 10, 0, 11, 0]
    # the odd last row is paired with a zero row
    assert flat[16:24].tolist() == [12, 14, 13, 15, 0, 0, 0, 0]


def test_dsp_weights16_pairs_half_groups_and_unpairs() -> None:
    """A convolution's int16 weights: per pair and 4 k, (k0, k1) of both rows, then (k2, k3) of both."""
    rows = np.arange(-9, 3 * 6 - 9, dtype=np.int8).reshape(3, 6)
    w = dsp_weights16(rows)
    assert w.dtype == np.int16 and w.shape == (4, 8)
    flat = w.reshape(-1)
    assert flat[:8].tolist() == [-9, -8, -3, -2, -7, -6, -1, 0]  # rows 0, 1: k0 k1, then k2 k3
    assert flat[8:16].tolist() == [-5, -4, 1, 2, 0, 0, 0, 0]  # k4 k5 of both, then the padding k6 k7
    assert flat[16:24].tolist() == [3, 4, 0, 0, 5, 6, 0, 0]  # the odd last row with a zero row
    assert (_pair_rows(w, 3)[:3, :6] == rows).all() and not _pair_rows(w, 3)[3].any()


def test_dsp_weights16_quads_then_pairs() -> None:
    """7 rows: one quad (per k pair the words of its four rows), then rows 4..6 in pairs (a zero row last)."""
    rows = np.arange(7 * 6, dtype=np.int16).reshape(7, 6).astype(np.int8)
    w = dsp_weights16(rows)
    assert w.shape == (8, 8)
    flat = w.reshape(-1)
    assert flat[:8].tolist() == [0, 1, 6, 7, 12, 13, 18, 19]  # k0 k1 of rows 0..3
    assert flat[8:16].tolist() == [2, 3, 8, 9, 14, 15, 20, 21]  # k2 k3
    assert flat[24:32].tolist() == [0, 0, 0, 0, 0, 0, 0, 0]  # k6 k7: the padding
    assert flat[32:40].tolist() == [24, 25, 30, 31, 26, 27, 32, 33]  # rows 4, 5 as dsp_weights16's pairs
    assert (_pair_rows(w, 7)[:7, :6] == rows).all() and not _pair_rows(w, 7)[7].any()
    for m in (4, 5, 8, 10, 11):
        r = np.random.default_rng(m).integers(-128, 128, (m, 9)).astype(np.int8)
        assert (_pair_rows(dsp_weights16(r), m)[:m, :9] == r).all()


def test_mul_weights_pair_rows_per_k_pair() -> None:
    """Cortex-M0/M3 (qarm_mul.c): int8, per row pair and pair of k the bytes a0 a1 b0 b1; K padded to 4."""
    rows = np.arange(-9, 3 * 6 - 9, dtype=np.int8).reshape(3, 6)
    w = mul_weights(rows)
    assert w.dtype == np.int8 and w.shape == (4, 8)
    flat = w.reshape(-1)
    assert flat[:8].tolist() == [-9, -8, -3, -2, -7, -6, -1, 0]  # rows 0, 1: k0 k1 of each, then k2 k3
    assert flat[8:16].tolist() == [-5, -4, 1, 2, 0, 0, 0, 0]  # k4 k5, then the padding k6 k7
    assert flat[16:24].tolist() == [3, 4, 0, 0, 5, 6, 0, 0]  # the odd last row with a zero row
    assert (_mul_rows(w)[:3, :6] == rows).all() and not _mul_rows(w)[3].any()


def test_zero_point_in_the_rounding_constant() -> None:
    """`fold_zp`: SMMLA with ra + zp * 2^sh, then >> sh, equals the fast form plus the zero point; a shift
    that would overflow ra's 32 bits is refused."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        mult, shift = fixed_point(float(np.float32(10.0 ** rng.uniform(-6, -0.4))))
        zp = int(rng.integers(-128, 128))
        rq = Requant((mult, 0), (shift, shift), zp, -128, 127)
        if not fold_zp(rq):
            assert shift <= 32 or shift - 32 + 8 > 30
            continue
        plain, folded = rq_table(rq, None, True), rq_table(rq, None, True, zp)
        for acc in rng.integers(-2**24, 2**24, 50).tolist():
            assert _fast(acc, folded) == _fast(acc, plain) + zp
            assert _fast(acc, folded[4:]) == zp  # a zero multiplier: the zero point alone
    assert not fold_zp(Requant((1 << 30,), (32 + 28,), -100, -128, 127))


def test_targets_name_their_integer_kernels() -> None:
    from ember.toolchain.targets import get_target

    isa = {t: get_target(t).int8_isa for t in ("cortex-m0", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33",
                                               "cortex-m55", "riscv32", "armv7", "host")}
    assert isa == {"cortex-m0": "mul", "cortex-m3": "mul", "cortex-m4": "dsp", "cortex-m7": "dsp", "cortex-m33": "dsp",
                   "cortex-m55": "mve", "riscv32": "", "armv7": "", "host": ""}


def test_mve8_weights_interleave_channel_pairs_16_bytes_at_a_time() -> None:
    """ember_qarm_conv_mve8 reads a pair's rows from one pointer: 16 k of the first, 16 of the second, ..."""
    rows = np.random.default_rng(5).integers(-128, 128, (5, 21)).astype(np.int8)
    w = mve8_weights(rows)
    assert w.shape == (6, 32)
    padded = np.zeros((6, 32), np.int8)
    padded[:5, :21] = rows
    flat = w.reshape(-1)
    for pair in range(3):
        for blk in range(2):
            for r in range(2):
                at = pair * 64 + blk * 32 + r * 16
                np.testing.assert_array_equal(flat[at:at + 16], padded[2 * pair + r, 16 * blk:16 * blk + 16])
    np.testing.assert_array_equal(_mve8_rows(w), padded)


def test_folded_bias_gives_the_sums_of_x_less_the_zero_point() -> None:
    """The Helium int8 kernels multiply the bytes themselves (uint8 ones less 128, padding the zero point's
    byte): with folded_bias their sums are every other path's sum of w (x - zp) + bias."""
    rng = np.random.default_rng(9)
    for x_int8, lo in ((True, -128), (False, 0)):
        zp = int(rng.integers(lo, lo + 256))
        w = rng.integers(-128, 128, (7, 30)).astype(np.int64)
        bias = tuple(int(v) for v in rng.integers(-5000, 5000, 7))
        x = rng.integers(lo, lo + 256, 30).astype(np.int64)
        x[::4] = zp  # padding: the zero point's byte
        s = x if x_int8 else x - 128
        host = w @ (x - zp) + np.asarray(bias)
        np.testing.assert_array_equal(w @ s + np.asarray(folded_bias(bias, zp, x_int8, w)), host)


def test_dw8_weights_give_two_neighbouring_outputs_per_gathered_window() -> None:
    """ember_qarm_dw3_mve8's window (3 rows of 4 lanes at column stride 1, of 5 at stride 2, from one byte
    gather) times the two weight vectors: the 3x3 outputs at columns c and c + 1."""
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (3, 9)).astype(np.int64)
    plane = rng.integers(-128, 128, (3, 12)).astype(np.int64)
    for stride, transposed in ((1, False), (2, False), (1, True)):
        packed = dw8_weights(w, stride, transposed).astype(np.int64)
        ww = 4 if stride == 1 else 5
        lanes = np.zeros(16, np.int64)
        lanes[:3 * ww] = plane[:, :ww].reshape(-1)
        for c in range(3):
            k = w[c].reshape(3, 3).T if transposed else w[c].reshape(3, 3)
            first = int((plane[:, 0:3] * k).sum())
            second = int((plane[:, stride:stride + 3] * k).sum())
            assert int(packed[c, :16] @ lanes) == first and int(packed[c, 16:] @ lanes) == second


def test_sum_bound_is_the_largest_sum() -> None:
    """sum_bound: the largest |bias + sum w * (x - zp)| over every x of the type, reached (brute force over
    the corners: each weight's term is extreme at one end of x's range), never exceeded."""
    rng = np.random.default_rng(4)
    for x_int8, zp in [(True, -128), (True, 5), (False, 0), (False, 131)]:
        w = rng.integers(-127, 128, (6, 5))
        bias = tuple(int(b) for b in rng.integers(-5000, 5001, 6))
        xs = np.array(np.meshgrid(*[[-128, 127] if x_int8 else [0, 255]] * 5)).reshape(5, -1) - zp
        sums = w @ xs + np.array(bias)[:, None]
        np.testing.assert_array_equal(sum_bound(w, bias, zp, x_int8), np.abs(sums).max(axis=1))


def test_tie_free_per_channel() -> None:
    """A power-of-two multiplier among others: only its channel is out of the proof (the mixed layer of
    ops/qarm.py `_tables`); a shift of 32 or less rules the fast form out for the whole layer."""
    tie, other = fixed_point(0.125), fixed_point(0.0123)
    rq = Requant((other[0], tie[0], other[0]), (other[1], tie[1], other[1]), 0, -128, 127)
    assert tie_free(rq, np.array([1000, 1000, 1000])) == [True, False, True]
    big = fixed_point(0.75)
    assert tie_free(Requant((big[0],), (big[1],), 0, -128, 127), np.array([10])) is None


def test_dw3_planes_of_the_dsp_rows_keep_the_image_rows() -> None:
    """qarm_dw3.c ember_qa_dw3_geo_tr: Helium transposes a map of more rows than columns (KWS's 25 x 5), the DSP
    rows do not; their fixed pitch (ember_qa_dw3_fast) only where it does not more than double many short rows."""
    assert dw3_plane(25, 5, 1, 1) == (7, 30)
    assert dw3_plane(25, 5, 1, 1, transpose=False) == (27, 10)
    assert dw3_plane(24, 24, 2, 2, transpose=False) == dw3_plane(24, 24, 2, 2) == (49, 50)
    assert not dw3_pitch(27, 10) and dw3_pitch(8, 10) and dw3_pitch(50, 50) and not dw3_pitch(3, 74)
