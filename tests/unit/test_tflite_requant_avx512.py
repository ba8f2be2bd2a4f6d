"""qvec.c's AVX-512 TFLite requantisation of 16 int32 lanes, each lane its own multiplier and shift (ember_qt16_rq:
the depthwise VNNI kernel's 16 channels, a tile row's 16 pixels), against the scalar ember_q_requant /
ember_q_scale_tfl lane by lane: LiteRT's single rounding at every k, gemmlowp's two roundings at every k >= 31, over
the edge sums of the AVX2 test (ties, one either side, the int32 extremes), and the two as one (ember_qt16's ONE kind)
at every output step of sums that ops/qlinear.py `one_rounding` allows. Also which lanes ember_qt16_kind takes.
Skipped where the host C compiler does not target AVX-512 (the vector code is not built there)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ember.ops.qlinear import DOUBLE, Requant, one_rounding
from tests.support.cdriver import kernel_library
from tests.unit.test_tflite_one_rounding import _thresholds
from tests.unit.test_tflite_requant_avx2 import _sums

DRIVER = """
int has_qt16(void) {
#ifdef EMBER_QV16
    return 1;
#else
    return 0;
#endif
}
/* ember_qt16_kind of 16 lanes' shift codes and the out table [zp, lo, hi, 0, 0, 0, 0, one]. */
int kind16(const int32_t *shift, const int32_t *out) {
#ifdef EMBER_QV16
    return ember_qt16_kind(shift, 16, out);
#else
    (void)shift, (void)out;
    return -2;
#endif
}
/* got[i]: ember_qt16_rq of v[i], lane i % 16 with mult[i % 16], shift[i % 16] (n a multiple of 16), of the kind
 * ember_qt16_kind gives (returned; nothing computed where it is -1); want[i]: the scalar requantisation. */
int lanes16(int32_t *got, int32_t *want, const int32_t *v, int n, const int32_t *mult, const int32_t *shift,
            const int32_t *out) {
    int i;
    for (i = 0; i < n; ++i)
        want[i] = ember_q_requant(v[i], mult[i % 16], shift[i % 16], out[EMBER_QOUT_ZP], out[EMBER_QOUT_LO],
                                  out[EMBER_QOUT_HI]);
#ifdef EMBER_QV16
    {
        const int kind = ember_qt16_kind(shift, 16, out);
        ember_qt16 t;
        if (kind < 0) return kind;
        ember_qt16_init(&t, kind, *(const ember_qv16_iu *)(const void *)mult,
                        *(const ember_qv16_iu *)(const void *)shift, out);
        for (i = 0; i + 16 <= n; i += 16)
            *(ember_qv16_iu *)(void *)(got + i) = ember_qt16_rq(*(const ember_qv16_iu *)(const void *)(v + i), &t);
        return kind;
    }
#else
    (void)got;
    return -2;
#endif
}
"""

SINGLE_KIND, ONE_KIND, TWO_KIND = 0, 1, 2
CLAMPS = [(0, -128, 127), (-5, -128, 127), (127, -128, 127), (0, 0, 255), (200, 0, 255), (3, -20, 60)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = kernel_library(tmp_path_factory.mktemp("qt16"), {"ember_qv16"}, DRIVER)
    if not lib.has_qt16():
        pytest.skip("the host compiler does not target AVX-512")
    return lib


def _out(zp: int, lo: int, hi: int, one: int = 0) -> np.ndarray:
    return np.array([zp, lo, hi, 0, 0, 0, 0, one], np.int32)


def _run(lib: ctypes.CDLL, v: np.ndarray, mult: np.ndarray, shift: np.ndarray,
         out: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    v = np.resize(v, (len(v) + 15) // 16 * 16).astype(np.int32)
    got, want = np.zeros_like(v), np.zeros_like(v)
    p = ctypes.c_void_p
    kind = lib.lanes16(got.ctypes.data_as(p), want.ctypes.data_as(p), v.ctypes.data_as(p), len(v),
                       mult.ctypes.data_as(p), shift.ctypes.data_as(p), out.ctypes.data_as(p))
    return kind, v, got, want


@pytest.mark.parametrize("rounding", [1, 2])
def test_each_lane_requantises_as_the_scalar_code(lib: ctypes.CDLL, rounding: int) -> None:
    """Single rounding (64 + k, any k) and gemmlowp's two (128 + k, k >= 31), 16 lanes with their own (mult, k)."""
    rng = np.random.default_rng(rounding + 160)
    p_lo = 1 if rounding == 1 else 31
    checked, failures = 0, []
    for trial in range(80):
        ks = rng.integers(p_lo, 63, 16)
        if trial % 4 == 0:  # the edges of k in every lane position
            ks = rng.permutation(np.resize([p_lo, p_lo + 1, 31, 32, 33, 61, 62], 16))
        mult = np.where(rng.random(16) < 0.2, 1 << 30, rng.integers(0, 1 << 31, 16)).astype(np.int32)
        shift = (64 * rounding + ks).astype(np.int32)
        v = _sums(int(ks[trial % 16]), int(mult[trial % 16]), rng)
        for zp, lo, hi in CLAMPS:
            kind, v16, got, want = _run(lib, v, mult, shift, _out(zp, lo, hi))
            assert kind == (SINGLE_KIND if rounding == 1 else TWO_KIND)
            bad = np.flatnonzero(got != want)
            checked += len(v16)
            if len(bad):
                i = int(bad[0])
                failures.append(f"k={int(ks[i % 16])} mult={int(mult[i % 16])} zp={zp} acc={int(v16[i])}: "
                                f"vector {int(got[i])}, scalar {int(want[i])} ({len(bad)} lanes)")
    assert not failures, "\n".join(failures[:20])
    assert checked > 100_000


def test_one_rounding_at_every_step(lib: ctypes.CDLL) -> None:
    """gemmlowp's two roundings as one, where one_rounding proves it for the layer's sums (out[EMBER_QOUT_ONE])."""
    rng = np.random.default_rng(170)
    checked = 0
    for _ in range(40):
        k = int(rng.integers(32, 46))
        mult = int(rng.integers(1 << 30, 1 << 31))
        bound = int(rng.integers(1, 1 << 21))
        if not one_rounding(Requant((mult,), (k,), 0, -128, 127, DOUBLE), np.array([float(bound)])):
            continue
        v = np.concatenate([_thresholds(mult, k, bound), rng.integers(-bound, bound + 1, 400),
                            [0, 1, -1, bound, -bound]])
        mults, shifts = np.full(16, mult, np.int32), np.full(16, 128 + k, np.int32)
        for zp, lo, hi in CLAMPS:
            kind, v16, got, want = _run(lib, v, mults, shifts, _out(zp, lo, hi, one=1))
            assert kind == ONE_KIND
            bad = np.flatnonzero(got != want)
            assert not len(bad), (f"M={mult} k={k} zp={zp} v={v16[bad[0]]}: one rounding {got[bad[0]]}, "
                                  f"want {want[bad[0]]}")
            checked += len(v16)
    assert checked > 20_000


def test_kind_of_the_shift_codes(lib: ctypes.CDLL) -> None:
    """The lanes the 16-lane code takes, and the ones left to the callers' other paths."""
    def kind(shifts: list[int], one: int = 0) -> int:
        return lib.kind16(np.resize(np.array(shifts, np.int32), 16).ctypes.data_as(ctypes.c_void_p),
                          _out(0, -128, 127, one).ctypes.data_as(ctypes.c_void_p))

    assert kind([64 + 20, 64 + 40]) == SINGLE_KIND
    assert kind([128 + 31, 128 + 40]) == TWO_KIND
    assert kind([128 + 31, 128 + 40], one=1) == TWO_KIND  # as one only where every k >= 32
    assert kind([128 + 32, 128 + 40], one=1) == ONE_KIND
    assert kind([128 + 32, 128 + 40]) == TWO_KIND  # the layer's sums not proven
    assert kind([128 + 40] * 15 + [128 + 30]) == -1  # a multiplier of 2 or more: acc is shifted left first
    assert kind([40, 41]) == -1  # ember's own rounding (the float path's)
    assert kind([192 + 3]) == -1  # TFLite's average pool division
