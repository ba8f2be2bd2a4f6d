"""gemmlowp's two roundings (TFLite's convolutions: a doubling high multiply, then a rounding divide) as one, where
ops/qlinear.py `one_rounding` proves it for every sum a layer can make: quant.c's ember_qt8_rqa (sign(v) floor((|v| M
+ 2^(k-1) + 2^30) / 2^k)) against the scalar ember_q_requant lane by lane, at every output threshold of random
layers, and qgemm.c's ember_qf8_pack_words (a channel quad's words: saturating packs, the zero point and clamp on
bytes) against the plain clamp. The proof's one exception, a negative sum whose |v| M + 2^(k-1) + 2^30 is a multiple
of 2^k, is shown to differ, so the bound it checks matters. Skipped where the host C compiler does not target AVX2."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ember.ops.qlinear import DOUBLE, SINGLE, Requant, one_rounding
from tests.support.cdriver import kernel_library

DRIVER = """
int has_qt8(void) {
#ifdef EMBER_QRQ2
    return 1;
#else
    return 0;
#endif
}
/* got[i]: ember_qt8_rq of v[i] with t.one (ember_qt8_rqa), n a multiple of 8; want[i]: the scalar requantisation. */
void one(int32_t *got, int32_t *want, const int32_t *v, int n, int32_t mult, int shift, int32_t zp, int32_t lo,
         int32_t hi) {
    int i;
    for (i = 0; i < n; ++i) want[i] = ember_q_requant(v[i], mult, shift, zp, lo, hi);
#ifdef EMBER_QRQ2
    {
        ember_qt8 t;
        ember_qt8_init(&t, mult, shift, zp, lo, hi);
        ember_qt8_one(&t, 1);
        for (i = 0; i + 8 <= n; i += 8)
            *(ember_qt8iu *)(void *)(got + i) = ember_qt8_rq(*(const ember_qt8iu *)(const void *)(v + i), &t);
    }
#else
    (void)got;
#endif
}
/* ember_qf8_pack_words of the 4 x 8 lanes q (channel-major) into y, n pixels; out: [zp, lo, hi, ...]. */
void pack(uint8_t *y, const int32_t *q, int n, const int32_t *out) {
#ifdef EMBER_QRQ2
    const int32_t shift[1] = {2 * EMBER_Q_TFL + 40};
    ember_qout o;
    ember_qrq_out rg;
    ember_qf8i v[4];
    int c;
    for (c = 0; c < 4; ++c) v[c] = *(const ember_qf8iu *)(const void *)(q + 8 * c);
    o.kind = 1;
    o.ps = 1;
    o.blk = 1;
    o.wofs = 0;
    o.shift = shift;
    o.out = out;
    ember_qrq_setup(&o, &rg);
    ember_qf8_pack_words(y, v[0], v[1], v[2], v[3], n, &rg);
#else
    (void)y; (void)q; (void)n; (void)out;
#endif
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = kernel_library(tmp_path_factory.mktemp("qone"), {"ember_qconv"}, DRIVER)
    if not lib.has_qt8():
        pytest.skip("the host compiler does not target AVX2")
    return lib


def _run(lib: ctypes.CDLL, v: np.ndarray, mult: int, k: int, zp: int, lo: int, hi: int) -> tuple[np.ndarray, ...]:
    v = np.resize(v, (len(v) + 7) // 8 * 8).astype(np.int32)
    got, want = np.zeros_like(v), np.zeros_like(v)
    p = ctypes.c_void_p
    lib.one(got.ctypes.data_as(p), want.ctypes.data_as(p), v.ctypes.data_as(p), len(v), mult, 2 * 64 + k, zp, lo, hi)
    return v, got, want


def _thresholds(mult: int, k: int, bound: int) -> np.ndarray:
    """Sums around every output step of gemmlowp's rounding within [-bound, bound]: the step from q - 1 to q at
    v M = (q - 1/2) 2^k - 2^30 (positive side) and at v M = 2^30 - (q - 1/2) 2^k (negative), one either side."""
    top = min(bound * mult // (1 << k) + 2, 300)  # past the widest clamp every output saturates
    vals = []
    for q in range(1, top + 1):
        for edge in ((2 * q - 1) * (1 << (k - 1)) - (1 << 30), (1 << 30) - (2 * q - 1) * (1 << (k - 1))):
            c = -(-edge // mult)
            vals += [c - 1, c, c + 1]
    v = np.asarray(vals, np.int64)
    return v[np.abs(v) <= bound]


def test_one_rounding_equals_gemmlowp_at_every_step(lib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(60):
        k = int(rng.integers(32, 46))
        mult = int(rng.integers(1 << 30, 1 << 31))
        if trial % 10 == 0:
            mult = (mult >> 12) << 12  # trailing zero bits: the proof's bound shrinks to 2^(30 - 12)
        bound = int(rng.integers(1, 1 << 21))
        rq = Requant((mult,), (k,), 0, -128, 127, DOUBLE)
        tz = (mult & -mult).bit_length() - 1
        assert one_rounding(rq, np.array([float(bound)])) == (bound < 2 ** (30 - tz))
        if not one_rounding(rq, np.array([float(bound)])):
            continue
        v = np.concatenate([_thresholds(mult, k, bound), rng.integers(-bound, bound + 1, 400),
                            [0, 1, -1, bound, -bound]])
        for zp, lo, hi in [(0, -128, 127), (-7, -128, 127), (-128, -128, 127), (3, 3, 90), (100, 0, 255)]:
            _, got, want = _run(lib, v, mult, k, zp, lo, hi)
            bad = np.flatnonzero(got != want)
            assert not len(bad), (f"M={mult} k={k} zp={zp} v={v[bad[0]]}: one rounding {got[bad[0]]}, "
                                  f"gemmlowp {want[bad[0]]}")
            checked += len(v)
    assert checked > 50_000


def test_the_tie_the_proof_excludes_differs(lib: ctypes.CDLL) -> None:
    """M = 3 * 2^29 (29 trailing zeros), k = 32: |v| M + 2^31 + 2^30 is a multiple of 2^32 at |v| = 6, where gemmlowp
    gives -2 for v = -6 and the one rounding -3; one_rounding allows only sums below 2^(30 - 29) = 2."""
    mult, k = 3 << 29, 32
    _, got, want = _run(lib, np.array([-6, 6, -5, -7, -2, 1, -1, 0]), mult, k, 0, -128, 127)
    assert (want[0], got[0]) == (-2, -3)
    assert np.array_equal(got[1:], want[1:])
    rq = Requant((mult,), (k,), 0, -128, 127, DOUBLE)
    assert one_rounding(rq, np.array([1.0])) and not one_rounding(rq, np.array([6.0]))


def test_one_rounding_needs_gemmlowp_k_32_and_a_bound() -> None:
    ok = np.array([1000.0, 1000.0])
    assert not one_rounding(Requant((1 << 30, 1518500250), (40, 33), 0, -128, 127, DOUBLE), ok)  # M = 2^30: ties
    assert one_rounding(Requant((1518500250, 1518500250), (40, 33), 0, -128, 127, DOUBLE), ok)
    assert not one_rounding(Requant((1518500250, 1518500250), (40, 31), 0, -128, 127, DOUBLE), ok)
    assert not one_rounding(Requant((1518500250,), (40,), 0, -128, 127, SINGLE), ok[:1])
    assert not one_rounding(Requant((1518500250,), (40,), 0, -128, 127, DOUBLE), None)
    assert not one_rounding(Requant((0, 1518500250), (1, 40), 0, -128, 127, DOUBLE), ok)  # k < 32


@pytest.mark.parametrize("zp, lo, hi", [(0, -128, 127), (-5, -128, 127), (-128, -128, 6), (10, 10, 127), (3, 3, 90),
                                        (128, 0, 255), (255, 0, 255), (0, 0, 255), (90, 90, 200)])
def test_pack_words_is_the_clamp_of_the_lanes_plus_zero_point(lib: ctypes.CDLL, zp: int, lo: int, hi: int) -> None:
    rng = np.random.default_rng(zp + 300)
    out = np.array([zp, lo, hi, 0, 0, 0, 1, 1], np.int32)
    p = ctypes.c_void_p
    for trial in range(40):
        q = np.concatenate([rng.integers(-300, 300, 20), rng.integers(-(2**31), 2**31, 6),
                            [32767, 32768, -32768, -32769, 127 - zp, 128 - zp]]).astype(np.int64)
        q = rng.permutation(q)[:32].astype(np.int32)
        n = 8 if trial % 4 else int(rng.integers(1, 8))
        y = np.full(32, 0xA5, np.uint8)
        lib.pack(y.ctypes.data_as(p), q.ctypes.data_as(p), n, out.ctypes.data_as(p))
        want = np.clip(q.reshape(4, 8).astype(np.int64) + zp, lo, hi).T.reshape(-1)  # pixel-major words
        assert np.array_equal(y[: 4 * n], (want[: 4 * n] & 0xFF).astype(np.uint8)), (trial, n)
        assert np.all(y[4 * n:] == 0xA5)  # nothing past the n pixels
