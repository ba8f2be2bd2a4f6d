"""quant.c's AVX2 TFLite requantisation of 8 int32 lanes (ember_qt8_rq: VPMULDQ products, LiteRT's single
rounding with a 64-bit arithmetic shift built from logical ones (or, where every k >= 32, the products' high
dwords shifted in 32 bits), gemmlowp's doubling high multiply and
rounding divide) against the scalar ember_q_requant / ember_q_scale_tfl it replaces, lane by lane, over
edge values: exact ties at every shift (acc * mult an odd multiple of 2^(k-1)), one below and above them,
INT32_MIN / INT32_MAX sums (TFLite Micro's saturating left shift), zero, both signs, every k both
roundings accept, multipliers from 0 to 2^31 - 1, and clamps around several zero points. Skipped where the
host C compiler does not target AVX2 (the vector code is not built there)."""

from __future__ import annotations

import ctypes
import importlib.util
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from ember.codegen import library
from tests.support import cdriver
from tests.support.cdriver import kernel_library

DRIVER = """
int has_qt8(void) {
#ifdef EMBER_QT8
    return 1;
#else
    return 0;
#endif
}
#ifdef EMBER_QT8
/* got[i] = ember_qt8_rq of v[i] by t, 8 lanes at a time. */
static void vector(int32_t *got, const int32_t *v, int n, const ember_qt8 *t) {
    int i;
    for (i = 0; i + 8 <= n; i += 8)
        *(ember_qt8iu *)(void *)(got + i) = ember_qt8_rq(*(const ember_qt8iu *)(const void *)(v + i), t);
}
#endif
/* got[i]: the vector requantisation of v[i] (n a multiple of 8); want[i]: the scalar one. */
void both(int32_t *got, int32_t *want, const int32_t *v, int n, int32_t mult, int shift, int32_t zp, int32_t lo,
          int32_t hi) {
    int i;
    for (i = 0; i < n; ++i) want[i] = ember_q_requant(v[i], mult, shift, zp, lo, hi);
#ifdef EMBER_QT8
    {
        ember_qt8 t;
        ember_qt8_init(&t, mult, shift, zp, lo, hi);
        vector(got, v, n, &t);
    }
#else
    (void)got;
#endif
}
/* As both, lane i (of each 8) with its own mult[i % 8], shift[i % 8] (ember_qt8_lane: depthwise quads). */
void lanes(int32_t *got, int32_t *want, const int32_t *v, int n, const int32_t *mult, const int32_t *shift,
           int32_t zp, int32_t lo, int32_t hi) {
    int i;
    for (i = 0; i < n; ++i) want[i] = ember_q_requant(v[i], mult[i % 8], shift[i % 8], zp, lo, hi);
#ifdef EMBER_QT8
    {
        ember_qt8 t;
        ember_qt8_init(&t, mult[0], shift[0], zp, lo, hi);
        for (i = 0; i < 8; ++i) ember_qt8_lane(&t, i, mult[i], shift[i]);
        vector(got, v, n, &t);
    }
#else
    (void)got;
#endif
}
/* As lanes, lane i with channel i % 4's mult and shift, set by ember_qt8_quad (qdwconv.c's channel quads). */
void quad(int32_t *got, int32_t *want, const int32_t *v, int n, const int32_t *mult, const int32_t *shift,
          int32_t zp, int32_t lo, int32_t hi) {
    int i;
    for (i = 0; i < n; ++i) want[i] = ember_q_requant(v[i], mult[i % 4], shift[i % 4], zp, lo, hi);
#ifdef EMBER_QT8
    {
        ember_qt8 t;
        ember_qt8_init(&t, mult[0], shift[0], zp, lo, hi);
        ember_qt8_quad(&t, mult, shift);
        vector(got, v, n, &t);
    }
#else
    (void)got;
#endif
}
/* As lanes, all 8 lanes set at once by ember_qt8_oct (qgemm.c's matrix-vector rows). */
void oct(int32_t *got, int32_t *want, const int32_t *v, int n, const int32_t *mult, const int32_t *shift,
         int32_t zp, int32_t lo, int32_t hi) {
    int i;
    for (i = 0; i < n; ++i) want[i] = ember_q_requant(v[i], mult[i % 8], shift[i % 8], zp, lo, hi);
#ifdef EMBER_QT8
    {
        ember_qt8 t;
        ember_qt8_init(&t, mult[0], shift[0], zp, lo, hi);
        ember_qt8_oct(&t, mult, shift);
        vector(got, v, n, &t);
    }
#else
    (void)got;
#endif
}
/* TFLite's ADD / SUB (qpointwise.c ember_qadd_tfl, vectorized by ember_qt8_rq) against its scalar formula. */
void qadd(uint8_t *got, uint8_t *want, const uint8_t *a, const uint8_t *b, int n, int sgn, const int32_t *r) {
    const int32_t *t = r + 8;
    int i;
    ember_qadd(got, a, b, n, 1, n, sgn, r);
    for (i = 0; i < n; ++i) {
        const int64_t xa = (int64_t)(ember_q_load(a, i, sgn) - r[EMBER_QADD_ZA]) * (1 << 20);
        const int64_t xb = (int64_t)(ember_q_load(b, i, sgn) - r[EMBER_QADD_ZB]) * (1 << 20);
        const int64_t va = ember_q_scale_tfl(xa, t[0], t[1]), vb = ember_q_scale_tfl(xb, t[2], t[3]);
        want[i] = (uint8_t)ember_q_requant(t[6] ? va - vb : va + vb, t[4], t[5], r[EMBER_QADD_ZY], r[EMBER_QADD_LO],
                                           r[EMBER_QADD_HI]);
    }
}
"""

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = kernel_library(tmp_path_factory.mktemp("qt8"), {"ember_qround", "ember_qadd"}, DRIVER)
    if not lib.has_qt8():
        pytest.skip("the host compiler does not target AVX2")
    return lib


def _sums(k: int, mult: int, rng: np.random.Generator) -> np.ndarray:
    """Sums whose products with mult sit on, just below and just above the rounding ties of shift k (and of
    the doubling high multiply's 2^31), the int32 extremes, and random ones."""
    vals = [0, 1, -1, 2, -2, I32_MIN, I32_MAX, I32_MIN + 1, I32_MAX - 1, 2**30, -(2**30)]
    for kk in {k, 31, max(k - 31, 1), max(k - 1, 1)}:
        if mult > 0:
            tz = (mult & -mult).bit_length() - 1  # mult = odd * 2^tz
            odd = mult >> tz
            e = kk - 1 - tz  # acc * mult = t * 2^(kk-1), t odd: acc = t' * 2^e where mult's odd part divides
            if 0 <= e <= 30:
                inv = pow(odd, -1, 1 << (kk - tz)) if kk - tz > 0 else 0
                base = ((1 << e) * inv) % (1 << max(kk - tz, 1)) if kk - tz > 0 else 0
                for t in range(-3, 4):
                    a = base + t * (1 << max(kk - tz, 1))
                    vals += [a, a - 1, a + 1, -a, -a - 1, -a + 1]
        for s in range(31):
            vals += [(1 << s), -(1 << s), (1 << s) + 1, -(1 << s) - 1, 3 << s >> 1, -(3 << s >> 1)]
    vals += list(rng.integers(I32_MIN, I32_MAX, 200, endpoint=True))
    vals += list(rng.integers(-(2**16), 2**16, 100))
    v = np.clip(np.asarray(vals, np.int64), I32_MIN, I32_MAX)
    v = rng.permutation(v)  # every edge value in several lanes of a vector
    v = np.concatenate([v, v[::-1], np.roll(v, 3)])
    return np.resize(v, (len(v) + 7) // 8 * 8).astype(np.int32)


@pytest.mark.parametrize("rounding", [1, 2])
def test_vector_tflite_requant_equals_scalar(lib: ctypes.CDLL, rounding: int) -> None:
    rng = np.random.default_rng(rounding + 40)
    mults = [0, 1, 2, 3, 1 << 30, (1 << 31) - 1, 1 << 29, 1518500250, 1073741825]
    ks = range(1 if rounding == 1 else 0, 63)
    clamps = [(0, -128, 127), (-5, -128, 127), (127, -128, 127), (0, 0, 255), (200, 0, 255), (-128, -128, 127),
              (3, -20, 60)]
    failures = []
    checked = 0
    for k in ks:
        for mult in [*mults, *rng.integers(1 << 30, 1 << 31, 3)]:
            mult = int(mult)
            v = _sums(k, mult, rng)
            got, want = np.zeros_like(v), np.zeros_like(v)
            for zp, lo, hi in clamps:
                lib.both(got.ctypes.data_as(ctypes.c_void_p), want.ctypes.data_as(ctypes.c_void_p),
                         v.ctypes.data_as(ctypes.c_void_p), len(v), mult, 64 * rounding + k, zp, lo, hi)
                bad = np.flatnonzero(got != want)
                checked += len(v)
                if len(bad):
                    i = int(bad[0])
                    failures.append(f"k={k} mult={mult} zp={zp} [{lo},{hi}] acc={int(v[i])} lane {i % 8}: "
                                    f"vector {int(got[i])}, scalar {int(want[i])} ({len(bad)} lanes)")
    assert not failures, "\n".join(failures[:20])
    assert checked > 100_000


@pytest.mark.parametrize("setup", ["lanes", "oct"])
@pytest.mark.parametrize("rounding", [1, 2])
def test_each_lane_its_own_multiplier_and_shift(lib: ctypes.CDLL, rounding: int, setup: str) -> None:
    """Depthwise quads requantise 2 pixels x 4 channels in one vector, a matrix-vector product 8 rows: every
    lane has its own (mult, k), set lane by lane (ember_qt8_lane) or all at once (ember_qt8_oct)."""
    rng = np.random.default_rng(rounding + 50)
    p = ctypes.c_void_p
    for trial in range(120):
        ks = rng.integers(1, 63, 8) if trial % 3 else rng.permutation([1, 2, 30, 31, 32, 33, 61, 62])
        if trial % 6 == 1:  # every lane k >= 31: the path without the saturating left shift (ember_qt8.ls0)
            ks = rng.integers(31, 63, 8)
        if trial % 6 == 5:  # every lane k >= 32: LiteRT's rounding in 32 bits (ember_qt8.hi32)
            ks = rng.integers(32, 63, 8)
        mult = np.where(rng.random(8) < 0.2, 1 << 30, rng.integers(0, 1 << 31, 8)).astype(np.int32)
        shift = (64 * rounding + ks).astype(np.int32)
        v = _sums(int(ks[trial % 8]), int(mult[trial % 8]), rng)
        got, want = np.zeros_like(v), np.zeros_like(v)
        getattr(lib, setup)(got.ctypes.data_as(p), want.ctypes.data_as(p), v.ctypes.data_as(p), len(v),
                  mult.ctypes.data_as(p), shift.ctypes.data_as(p), -3, -128, 127)
        bad = np.flatnonzero(got != want)
        assert not len(bad), (f"lane {bad[0] % 8} (mult {mult[bad[0] % 8]}, k {ks[bad[0] % 8]}) acc {v[bad[0]]}: "
                              f"vector {got[bad[0]]}, scalar {want[bad[0]]}")


@pytest.mark.parametrize("rounding", [1, 2])
def test_channel_quad_setup_equals_scalar(lib: ctypes.CDLL, rounding: int) -> None:
    """ember_qt8_quad (the AVX2 depthwise kernel's per-quad setup, 2 pixels x 4 channels) gives each lane its
    channel's multiplier and shift: every lane equals the scalar requantisation, mixed k < 31 and k >= 31 too."""
    rng = np.random.default_rng(rounding + 60)
    p = ctypes.c_void_p
    for trial in range(120):
        ks = rng.integers(1, 63, 4) if trial % 3 else rng.permutation([1, 31, 32, 62])
        if trial % 6 == 1:  # every lane k >= 31 (ember_qt8.ls0)
            ks = rng.integers(31, 63, 4)
        if trial % 6 == 5:  # every lane k >= 32 (ember_qt8.hi32)
            ks = rng.integers(32, 63, 4)
        mult = np.where(rng.random(4) < 0.2, 1 << 30, rng.integers(0, 1 << 31, 4)).astype(np.int32)
        shift = (64 * rounding + ks).astype(np.int32)
        v = _sums(int(ks[trial % 4]), int(mult[trial % 4]), rng)
        got, want = np.zeros_like(v), np.zeros_like(v)
        lib.quad(got.ctypes.data_as(p), want.ctypes.data_as(p), v.ctypes.data_as(p), len(v),
                 mult.ctypes.data_as(p), shift.ctypes.data_as(p), 5, -128, 127)
        bad = np.flatnonzero(got != want)
        assert not len(bad), (f"lane {bad[0] % 8} (mult {mult[bad[0] % 4]}, k {ks[bad[0] % 4]}) acc {v[bad[0]]}: "
                              f"vector {got[bad[0]]}, scalar {want[bad[0]]}")


@pytest.mark.parametrize("rounding", [1, 2])
def test_tflite_add_vectorized_equals_scalar(lib: ctypes.CDLL, rounding: int) -> None:
    """qpointwise.c's TFLite ADD/SUB, 8 elements at a time, equals its scalar formula on every int8/uint8 pair
    (a ramp against each other, 65,536 + 5 elements: the tail too) for several scales, both roundings."""
    from ember.ops.qlinear import tflite_multiplier

    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    a, b = np.concatenate([a, a[:5]]), np.concatenate([b, b[::-1][:5]])
    p = ctypes.c_void_p
    for sa, sb, sy, sub in [(0.02, 0.05, 0.06, 0), (0.1, 0.1, 0.2, 1), (0.013, 0.7, 0.5, 0), (0.3, 0.01, 0.04, 1)]:
        twice = 2 * max(sa, sb)
        ma, ka = tflite_multiplier(sa / twice, rounding)
        mb, kb = tflite_multiplier(sb / twice, rounding)
        my, ky = tflite_multiplier(twice / ((1 << 20) * sy), rounding)
        for sgn, (za, zb, zy, lo, hi) in [(1, (-3, 7, 2, -128, 127)), (0, (128, 100, 120, 0, 255))]:
            r = np.array([za, zb, 0, 0, 64 * rounding + 1, zy, lo, hi, ma, 64 * rounding + ka, mb,
                          64 * rounding + kb, my, 64 * rounding + ky, sub], np.int32)
            got, want = np.zeros_like(a), np.zeros_like(a)
            lib.qadd(got.ctypes.data_as(p), want.ctypes.data_as(p), a.ctypes.data_as(p), b.ctypes.data_as(p),
                     len(a), sgn, r.ctypes.data_as(p))
            bad = np.flatnonzero(got != want)
            assert not len(bad), f"a={a[bad[0]]} b={b[bad[0]]}: vector {got[bad[0]]}, scalar {want[bad[0]]}"
            assert len(np.unique(want)) > 30


def test_the_scalar_reference_sees_ties(lib: ctypes.CDLL) -> None:
    """The reference itself rounds the ties the sums above aim at: half up once (LiteRT), and gemmlowp's
    two half-away roundings (so a negative tie at k > 31 goes down, unlike LiteRT's)."""
    v = np.array([1, -1, 3, -3, 5, -5, 0, 7], np.int32)
    got, want = np.zeros_like(v), np.zeros_like(v)
    # LiteRT: acc * 2^30 >> 31 = acc / 2, half up
    lib.both(got.ctypes.data_as(ctypes.c_void_p), want.ctypes.data_as(ctypes.c_void_p),
             v.ctypes.data_as(ctypes.c_void_p), 8, 1 << 30, 64 + 31, 0, -128, 127)
    assert want.tolist() == [1, 0, 2, -1, 3, -2, 0, 4]
    assert got.tolist() == want.tolist()
    # Micro, k = 32: SRDHM gives acc / 2 rounded (exact for these), then a divide by 2 half away from zero
    lib.both(got.ctypes.data_as(ctypes.c_void_p), want.ctypes.data_as(ctypes.c_void_p),
             (v * 2).astype(np.int32).ctypes.data_as(ctypes.c_void_p), 8, 1 << 30, 128 + 32, 0, -128, 127)
    assert want.tolist() == [1, -1, 2, -2, 3, -3, 0, 4]
    assert got.tolist() == want.tolist()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 compilers")
@pytest.mark.parametrize("kernel", ["ember_qadd", "ember_qdwconv"])
def test_avx2_paths_compile_alone_warning_free(tmp_path: Path, kernel: str) -> None:
    """The AVX2 paths of TFLite's ADD (byte loads and packs), the requantisation (ember_qt8_rq) and the
    depthwise kernel (ember_qdx_fill2), and the same kernels on AVX-512 CPUs, compiled on their own as a bundle
    copies them in, warning-free under GCC and zig's clang (the cross compiler)."""
    src = tmp_path / f"{kernel}.c"
    src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble({kernel})
                   + f"void ember_use(void);\nvoid ember_use(void) {{ (void){kernel}; }}\n")
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-Wdouble-promotion", "-ffreestanding", "-c", str(src),
             "-o", str(tmp_path / "k.o")]
    for cpu in ("haswell", "znver3", "skylake-avx512"):
        cdriver.run_cmd(["cc", f"-march={cpu}", *flags])
    # ember_qdwconv alone is not clang-clean yet: quant.c's helpers it does not call are unused there
    if kernel == "ember_qadd" and importlib.util.find_spec("ziglang") is not None:
        cdriver.run_cmd([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-mcpu=znver3", *flags])
    # but it must assemble there: its AVX-512 VNNI path's inline assembly once used an operand modifier (%g)
    # that clang lacks, and an AVX-512 x86_64 bundle did not build (the kernel kept by a pointer, so that its
    # code, the assembly included, is emitted)
    if kernel == "ember_qdwconv" and importlib.util.find_spec("ziglang") is not None:
        src.write_text("#include <stdint.h>\n#include <stddef.h>\n" + library.assemble({kernel})
                       + f"void (*volatile ember_keep)(void) = (void (*)(void)){kernel};\n")
        cdriver.run_cmd([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl", "-mcpu=icelake_server",
                         *[f for f in flags if f != "-Werror"]])
