"""The AVX2 16x8 kernels (kernels/q16.c ember_q16_conv_v, ember_q16v_scale) against the portable ones they
replace on host targets: the vector int64 requantisation lane by lane over edge accumulators, and whole
convolutions (strides, padding, dilation, groups, depthwise, fully connected, int32 blocks that must
widen) over the whole int16 range, byte for byte."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from ember.ops.q16 import Q16Geometry, Q16Spec, int32_block, vec_tables
from tests.support.cdriver import kernel_library

DRIVER = r"""
#if EMBER_HAVE_AVX2
int q16_have_avx2 = 1;
/* ember_q16v_scale of n accumulators (n a multiple of 4), and the scalar code's results. */
void q16_requant(const int64_t *acc, int n, int32_t mult, int32_t shift, int32_t lo, int32_t hi,
                 int64_t *vec, int64_t *ref) {
    int i, j;
    const int k = shift & 63;
    for (i = 0; i < n; i += 4) {
        const ember_q16v4 a = {acc[i], acc[i + 1], acc[i + 2], acc[i + 3]};
        const ember_q16v4 r = ember_q16v_scale(a, mult, k, lo, hi);
        for (j = 0; j < 4; ++j) {
            const int64_t s = shift >= EMBER_Q_TFL ? ember_q_scale_tfl(acc[i + j], mult, shift)
                                                    : ember_q16_scale(acc[i + j], mult, shift);
            vec[i + j] = r[j];
            ref[i + j] = s < lo ? lo : s > hi ? hi : s;
        }
    }
}
#else
int q16_have_avx2 = 0;
#endif
void q16_scalar(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *b, const int32_t *m15,
                const int32_t *sh, const int32_t *g, int32_t lo, int32_t hi, int32_t full, int lay) {
    ember_q16_conv(y, x, w, b, m15, sh, g, lo, hi, full, lay);
}
void q16_vector(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *b, const int32_t *m15,
                const int32_t *sh, const int32_t *g, int32_t lo, int32_t hi, int32_t full, int lay, int16_t *scratch,
                const int32_t *v, const int32_t *off, const int32_t *wp) {
    ember_q16_conv_v(y, x, w, b, m15, sh, g, lo, hi, full, lay, scratch, v, off, wp);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = kernel_library(tmp_path_factory.mktemp("q16v"), {"ember_q16_conv_v"}, DRIVER)
    if not ctypes.c_int.in_dll(lib, "q16_have_avx2").value:
        pytest.skip("no AVX2 on this CPU: ember_q16_conv_v is the portable kernel")
    return lib


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def _edges(mult: int, k: int) -> np.ndarray:
    """Accumulators at which a lane can go wrong: 0, +-1, the ties and their neighbours (acc * mult = 2^(k-1)
    modulo 2^k), both signs of the largest products that stay within int64, and where 32-bit halves carry."""
    acc = [0, 1, -1, 2, -2, (1 << 31) - 1, 1 << 31, -(1 << 31), -(1 << 31) - 1, (1 << 32) - 1, 1 << 32, -(1 << 32),
           (1 << 22) * 511, -(1 << 22) * 512, (1 << 47), -(1 << 47) + 1]
    big = ((1 << 63) - (1 << k)) // max(mult, 1)
    acc += [big, -big, big - 1, -big + 1]
    if mult:
        for t in range(-3, 4):  # acc with acc * mult near (2t + 1) * 2^(k-1)
            base = ((2 * t + 1) << (k - 1)) // mult
            acc += [base - 1, base, base + 1, -base - 1, -base, -base + 1]
    rng = np.random.default_rng(k * 131 + mult % 977)
    acc += rng.integers(-(1 << 40), 1 << 40, 16).tolist()
    acc = [a for a in acc if abs(a) * max(mult, 1) + (1 << k) < (1 << 63)]  # where the scalar code is defined
    acc += [0] * (-len(acc) % 4)
    return np.asarray(acc, np.int64)


@pytest.mark.parametrize("single", [False, True])
def test_vector_requantisation_matches_scalar_lane_by_lane(lib: ctypes.CDLL, single: bool) -> None:
    mults = (0, 1, 16384, 24576, 32767, (1 << 30), (1 << 31) - 1)
    cases = [(m, k) for m in mults for k in (1, 2, 15, 16, 31, 32, 33, 46, 62)]
    clamps = [(-32768, 32767), (0, 6000), (-(1 << 31), (1 << 31) - 1)]
    for mult, k in cases:
        if not single and mult > 32767:
            continue  # ember_q16_scale's multipliers are Q15
        acc = _edges(mult, k)
        for lo, hi in clamps:
            vec, ref = np.zeros_like(acc), np.zeros_like(acc)
            shift = 64 + k if single else k
            lib.q16_requant(_ptr(acc), len(acc), mult, shift, lo, hi, _ptr(vec), _ptr(ref))
            bad = np.nonzero(vec != ref)[0]
            assert bad.size == 0, (f"mult {mult} shift {shift} [{lo}, {hi}]: lane {bad[0]} acc {acc[bad[0]]}: "
                                   f"{vec[bad[0]]} != {ref[bad[0]]}")


def _run(lib: ctypes.CDLL, geo: Q16Geometry, rng: np.random.Generator, x: np.ndarray | None = None,
         w: np.ndarray | None = None, lo: int = -32768, hi: int = 32767, unit: bool = False,
         small_bias: bool = False) -> int:
    flat = geo.h == geo.w == geo.kh == geo.kw == 1
    cg = geo.c // geo.group
    if w is None:
        w = rng.integers(-128, 128, (geo.m, cg, geo.kh, geo.kw)).astype(np.int8)
    if x is None:
        x = rng.integers(-32768, 32768, geo.n * geo.c * geo.h * geo.w).astype(np.int16)
    bits = 20 if small_bias else 34  # int32 accumulators to the end (`fits`), or int64 ones
    bias = rng.integers(-(1 << bits), 1 << bits, geo.m).astype(np.int64)
    m15 = rng.integers(1, 32768, geo.m).astype(np.int32)
    shift = rng.integers(16, 30, geo.m).astype(np.int32)
    if unit:  # acc / 2^24: a sum past int32 stays within int16, so a lost carry shows
        m15, shift, bias = np.ones_like(m15), np.full_like(shift, 24), np.zeros_like(bias)
    spec = Q16Spec(geo, tuple(m15.tolist()), tuple(shift.tolist()), lo, hi, flat, simd=True)
    t = vec_tables(spec, w, bias)
    assert t is not None
    g = np.asarray(geo.table(), np.int32)
    n_out = geo.n * geo.m * geo.oh * geo.ow
    ref, got = np.zeros(n_out, np.int16), np.full(n_out, 12345, np.int16)
    scratch = np.full(max(t.v[5], 1), 777, np.int16)  # not zeroed: the kernel must write its padding
    v, off, wp = (np.ascontiguousarray(a, np.int32) for a in (t.v, t.off, t.wp))
    args = [_ptr(x), _ptr(w), _ptr(bias), _ptr(m15), _ptr(shift), _ptr(g), lo, hi, 0]
    lib.q16_scalar(_ptr(ref), *args, 0)
    lib.q16_vector(_ptr(got), *args, 0, _ptr(scratch), _ptr(v), _ptr(off), _ptr(wp))
    bad = np.nonzero(got != ref)[0]
    assert bad.size == 0, f"{geo}: output {bad[0]}: {got[bad[0]]} != {ref[bad[0]]} (mode {t.v[0]})"
    if not flat:  # channels-last input and output (lay 12): the vector kernel through its padded copy, and scalar
        tc = vec_tables(spec, w, bias, copy=True)
        assert tc is not None
        xl = np.ascontiguousarray(x.reshape(geo.n, geo.c, geo.h, geo.w).transpose(0, 2, 3, 1)).ravel()
        want = ref.reshape(geo.n, geo.m, geo.oh, geo.ow).transpose(0, 2, 3, 1).ravel()
        args[0] = _ptr(xl)
        vc, offc, wpc = (np.ascontiguousarray(a, np.int32) for a in (tc.v, tc.off, tc.wp))
        scratch = np.full(max(tc.v[5], 1), 777, np.int16)
        for name, run in (("scalar", lambda y: lib.q16_scalar(_ptr(y), *args, 12)),
                          ("vector", lambda y: lib.q16_vector(_ptr(y), *args, 12, _ptr(scratch), _ptr(vc), _ptr(offc),
                                                              _ptr(wpc)))):
            got = np.full(n_out, 12345, np.int16)
            run(got)
            bad = np.nonzero(got != want)[0]
            assert bad.size == 0, f"{geo} channels-last {name}: output {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"
    return t.v[6]


def _geo(n: int, c: int, h: int, w: int, m: int, k: int, s: int, p: int, g: int = 1, d: int = 1) -> Q16Geometry:
    oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
    return Q16Geometry(n, c, h, w, m, oh, ow, k, k, s, s, d, d, p, p, g)


@pytest.mark.parametrize("geo", [
    _geo(1, 16, 25, 5, 16, 1, 1, 0),  # pointwise: one row of 125 pixels, a 5-pixel tail
    _geo(2, 7, 9, 11, 6, 1, 1, 0),  # odd channels (a zero-weight step), batch 2, 2 of the 4-channel blocks
    _geo(1, 16, 25, 5, 16, 3, 1, 1, g=16),  # depthwise 3x3 on a 5-wide image
    _geo(1, 48, 16, 16, 48, 3, 2, 1, g=48),  # depthwise stride 2
    _geo(1, 3, 32, 32, 16, 3, 2, 1),  # the first convolution of a MobileNet
    _geo(1, 8, 12, 13, 12, 3, 1, 2, g=2, d=2),  # grouped, dilated
    _geo(1, 4, 10, 9, 4, 5, 2, 0),  # 5x5 valid, stride 2
    _geo(1, 6, 8, 8, 5, 1, 2, 0),  # a strided 1x1 (the padded path)
    Q16Geometry(1, 10, 49, 10, 16, 25, 5, 10, 4, 2, 2, 1, 1, 4, 1, 1),  # KWS's first layer: 10x4, stride 2
    Q16Geometry(3, 70, 1, 1, 9, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1),  # fully connected, a 6-element tail
])
@pytest.mark.parametrize("small_bias", [False, True])
def test_vector_convolution_matches_scalar(lib: ctypes.CDLL, geo: Q16Geometry, small_bias: bool) -> None:
    fits = _run(lib, geo, np.random.default_rng(geo.c * 7 + geo.kh), lo=-20000, hi=25000, small_bias=small_bias)
    assert fits == (small_bias and geo.h > 1), "the int32 path where bias and sums fit int32, else int64"


def test_vector_convolution_random_geometries(lib: ctypes.CDLL) -> None:
    """40 drawn geometries (strides 1-3 down, 1-2 across, padding, dilation, groups, batches): each the
    portable kernel's bytes."""
    rng = np.random.default_rng(2024)
    done = 0
    while done < 40:
        g = int(rng.choice([1, 1, 2, 3]))
        c, m = g * int(rng.integers(1, 6)), g * int(rng.integers(1, 7))
        kh, kw = (int(v) for v in rng.integers(1, 5, 2))
        dh, dw = (int(v) for v in rng.integers(1, 3, 2))
        sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        h, w = int(rng.integers(1, 14)), int(rng.integers(1, 20))
        ph, pw = int(rng.integers(0, kh)), int(rng.integers(0, kw))
        oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        if oh < 1 or ow < 1:
            continue
        geo = Q16Geometry(int(rng.integers(1, 3)), c, h, w, m, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, g)
        _run(lib, geo, rng, small_bias=bool(rng.random() < 0.5))
        done += 1


def test_int32_blocks_widen_before_overflow(lib: ctypes.CDLL) -> None:
    """Every input -32768 and every weight -128: each product is +2^22, so 1100 channels overflow int32 unless
    the partial sums go into int64 every 511 taps, as the block length proven from the weights says (fully
    connected: every 31 chunks of 16; an int32 lane holds 2 products of each)."""
    rng = np.random.default_rng(3)
    for geo in (Q16Geometry(1, 1100, 3, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1),
                Q16Geometry(1, 4200, 1, 1, 5, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1),  # each of 8 lanes: 525 products
                _geo(1, 130, 6, 6, 4, 3, 1, 1)):
        w = np.full((geo.m, geo.c, geo.kh, geo.kw), -128, np.int8)
        x = np.full(geo.n * geo.c * geo.h * geo.w, -32768, np.int16)
        _run(lib, geo, rng, x=x, w=w, unit=True)


def test_int32_block_length_from_weights() -> None:
    assert int32_block(np.array([100 * 16]), 32, 8) == 8  # the whole sum fits int32: no widening
    assert int32_block(np.array([1100 * 128]), 256, 550) == 255  # 255 * 256 * 2^15 < 2^31 <= 256 * 256 * 2^15
    assert int32_block(np.array([0]), 0, 0) == 1
    assert 255 * 256 * 32768 < (1 << 31) <= 256 * 256 * 32768


def test_vector_tables_need_no_scratch_for_pointwise(tmp_path: Path) -> None:
    spec = Q16Spec(_geo(1, 16, 8, 8, 8, 1, 1, 0), (1,) * 8, (20,) * 8, -32768, 32767, simd=True)
    t = vec_tables(spec, np.ones((8, 16, 1, 1), np.int8))
    assert t is not None and t.v[0] == 1 and t.v[5] == 0 and t.v[1] == 8
    strided = Q16Spec(_geo(1, 16, 8, 8, 8, 3, 3, 1), (1,) * 8, (20,) * 8, -32768, 32767, simd=True)
    assert vec_tables(strided, np.ones((8, 16, 3, 3), np.int8)) is None  # stride 3: the portable kernel


BINARY_DRIVER = r"""
void q16_binary(int16_t *y, const int16_t *a, const int16_t *b, ptrdiff_t n, ptrdiff_t b_n, ptrdiff_t b_inner,
                const int32_t *p) {
    ember_q16_binary(y, a, b, n, b_n, b_inner, p);
}
"""


def _binary_params(rng: np.random.Generator, op: int, rounding: int) -> np.ndarray:
    """ember_q16_binary's p as fold_qdq16 makes it, for random scales (and a narrow clamp now and then)."""
    from ember.ops.qlinear import DOUBLE, tflite_multiplier

    sa, sb, so = (float(v) for v in rng.uniform(1e-5, 1e-3, 3))
    lo, hi = (-32768, 32767) if rng.random() < 0.5 else (-1000, 20000)
    if op == 2:
        m, k = tflite_multiplier(sa * sb / so, rounding)
        return np.array([2, 0, 0, 1, 0, 1, m, k + 64 * rounding, lo, hi], np.int32)
    if op == 3:
        (ma, ka), (mb, kb) = tflite_multiplier(sa / so, rounding), tflite_multiplier(0.1 * sa / so, rounding)
        return np.array([3, 0, ma, ka + 64 * rounding, mb, kb + 64 * rounding, 0, 1, lo, hi], np.int32)
    twice = 2.0 * max(sa, sb)
    codes = [(m, k + 64 * DOUBLE) for m, k in (tflite_multiplier(r, DOUBLE) for r in (sa / twice, sb / twice,
                                                                                      twice / (2.0**15 * so)))]
    return np.array([op, 15, *codes[0], *codes[1], *codes[2], lo, hi], np.int32)


def test_vector_binary_matches_scalar(tmp_path: Path) -> None:
    """ember_q16_binary with AVX2 (8 lanes through ember_qt8_rq) and without, on every int16 input pair's
    extremes: ADD, SUB, MUL, LEAKY_RELU, each rounding, b of a's shape, a scalar, or broadcast along an axis."""
    (tmp_path / "v").mkdir(), (tmp_path / "s").mkdir()
    vec = kernel_library(tmp_path / "v", {"ember_q16_binary", "ember_q16_conv_v"}, BINARY_DRIVER + DRIVER)
    if not ctypes.c_int.in_dll(vec, "q16_have_avx2").value:
        pytest.skip("no AVX2 on this CPU")
    ref = kernel_library(tmp_path / "s", {"ember_q16_binary"}, BINARY_DRIVER, opt="-mno-avx2")
    rng = np.random.default_rng(11)
    n = 6 * 7 * 13  # not a multiple of 8: the scalar tail too
    edge = np.array([-32768, -32767, -1, 0, 1, 32766, 32767], np.int16)
    a = np.concatenate([np.repeat(edge, 7), np.tile(edge, 7), rng.integers(-32768, 32768, n - 98)]).astype(np.int16)
    for op in (0, 1, 2, 3):
        for rounding in (1, 2):
            p = _binary_params(rng, op, rounding)
            for b_n, b_inner in ((n, 1), (1, 1), (7, 13), (6, 91), (13, 1)):
                b = rng.integers(-32768, 32768, b_n).astype(np.int16)
                if b_n == n:
                    b = a[::-1].copy()
                got, want = np.zeros(n, np.int16), np.zeros(n, np.int16)
                vec.q16_binary(_ptr(got), _ptr(a), _ptr(b), ctypes.c_ssize_t(n), ctypes.c_ssize_t(b_n),
                               ctypes.c_ssize_t(b_inner), _ptr(p))
                ref.q16_binary(_ptr(want), _ptr(a), _ptr(b), ctypes.c_ssize_t(n), ctypes.c_ssize_t(b_n),
                               ctypes.c_ssize_t(b_inner), _ptr(p))
                bad = np.nonzero(got != want)[0]
                assert bad.size == 0, f"op {op} rounding {rounding} b ({b_n}, {b_inner}): element {bad[0]}"
