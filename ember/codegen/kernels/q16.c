/* TFLite's 16x8 integer kernels: int16 activations (zero point 0), int8 weights, int64 bias and
 * accumulators (TFLite's reference_integer_ops for int16). Portable C, one output at a time (what MCUs and
 * other CPUs run), and AVX2 paths (ember_q16_conv_v, ember_q16v_*) that give the same integers. */

/*@kernel ember_q16_base requires ember_qround*/
/* TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator: the Q31 multiplier rounded to Q15
 * (m15), then one rounding right shift by `shift` (15 - TFLite's exponent, at least 1). */
EMBER_INLINE int64_t ember_q16_scale(int64_t acc, int32_t m15, int32_t shift) {
    return (acc * m15 + ((int64_t)1 << (shift - 1))) >> shift;
}
EMBER_INLINE int16_t ember_q16_clamp(int64_t v, int32_t lo, int32_t hi) {
    return (int16_t)(v < lo ? lo : v > hi ? hi : v);
}
/* Geometry table of ember_q16_conv and ember_q16_avgpool (ops/q16.py Q16Geometry). */
#define EMBER_Q16_N 0
#define EMBER_Q16_C 1
#define EMBER_Q16_H 2
#define EMBER_Q16_W 3
#define EMBER_Q16_M 4
#define EMBER_Q16_OH 5
#define EMBER_Q16_OW 6
#define EMBER_Q16_KH 7
#define EMBER_Q16_KW 8
#define EMBER_Q16_SH 9
#define EMBER_Q16_SW 10
#define EMBER_Q16_DH 11
#define EMBER_Q16_DW 12
#define EMBER_Q16_PH 13
#define EMBER_Q16_PW 14
#define EMBER_Q16_G 15
/*@end*/

/*@kernel ember_q16_conv requires ember_q16_base*/
/* CONV_2D, DEPTHWISE_CONV_2D (groups) and FULLY_CONNECTED (1x1 on [N, K, 1, 1]) on NCHW int16:
 * acc = bias[m] + sum x * w (int64), per-channel requantisation, clamp to [lo, hi]. The padding reads
 * zeros (the int16 zero point). `full`: (m15, shift) are a Q31 multiplier and ember_q_scale_tfl's shift
 * code (LiteRT's int16 FULLY_CONNECTED); else the Q15 multiplier and right shift of ember_q16_scale.
 * Products (at most 2^22 in magnitude) are summed in int32 runs of at most 256 (one kernel row, or 256
 * channels of a 1x1 window; ops/q16.py keeps rows that short), then in int64: the same exact sum. lay: bit 2, x
 * is stored channels-last, bit 3, y (ops/shape.py NhwcView; passes/nhwc_views.py). */
EMBER_INLINE int16_t ember_q16_out(int64_t acc, int32_t m15, int32_t shift, int32_t lo, int32_t hi, int32_t full) {
    return ember_q16_clamp(full ? ember_q_scale_tfl(acc, m15, shift) : ember_q16_scale(acc, m15, shift), lo, hi);
}
EMBER_UNUSED static void ember_q16_conv(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int8_t *w,
                           const int64_t *bias, const int32_t *m15, const int32_t *shift, const int32_t *g,
                           int32_t lo, int32_t hi, int32_t full, int lay) {
    const int32_t C = g[EMBER_Q16_C], H = g[EMBER_Q16_H], W = g[EMBER_Q16_W], M = g[EMBER_Q16_M];
    const int32_t OH = g[EMBER_Q16_OH], OW = g[EMBER_Q16_OW], KH = g[EMBER_Q16_KH], KW = g[EMBER_Q16_KW];
    const int32_t SH = g[EMBER_Q16_SH], SW = g[EMBER_Q16_SW], DH = g[EMBER_Q16_DH], DW = g[EMBER_Q16_DW];
    const int32_t PH = g[EMBER_Q16_PH], PW = g[EMBER_Q16_PW];
    const int32_t cg = C / g[EMBER_Q16_G], mg = M / g[EMBER_Q16_G];
    const ptrdiff_t HW = (ptrdiff_t)H * W, P = (ptrdiff_t)OH * OW;
    /* channel and pixel strides of x and y: NCHW, or channels-last */
    const ptrdiff_t xc = lay & 4 ? 1 : HW, xp1 = lay & 4 ? C : 1, yc = lay & 8 ? 1 : P, yp = lay & 8 ? M : 1;
    int32_t n, m, oy, ox, c, ky, kx;
    for (n = 0; n < g[EMBER_Q16_N]; ++n)
        for (m = 0; m < M; ++m) {
            const int16_t *xg = x + (ptrdiff_t)n * C * HW + (ptrdiff_t)(m / mg) * cg * xc;
            const int8_t *wm = w + (ptrdiff_t)m * cg * KH * KW;
            const int64_t b = bias ? bias[m] : 0;
            int16_t *ym = y + (ptrdiff_t)n * M * P + m * yc;
            for (oy = 0; oy < OH; ++oy)
                for (ox = 0; ox < OW; ++ox) {
                    const int32_t iy0 = oy * SH - PH, ix0 = ox * SW - PW;
                    int64_t acc = b;
                    if (KH == 1 && KW == 1) { /* 1x1 and fully connected: one tap per channel */
                        int32_t part = 0;
                        if (iy0 >= 0 && iy0 < H && ix0 >= 0 && ix0 < W) {
                            const int16_t *xp = xg + ((ptrdiff_t)iy0 * W + ix0) * xp1;
                            for (c = 0; c < cg; ++c) {
                                part += (int32_t)xp[c * xc] * wm[c];
                                if ((c & 255) == 255) acc += part, part = 0;
                            }
                        }
                        acc += part;
                    } else {
                        const int inside = ix0 >= 0 && ix0 + (KW - 1) * DW < W;
                        for (c = 0; c < cg; ++c)
                            for (ky = 0; ky < KH; ++ky) {
                                const int32_t iy = iy0 + ky * DH;
                                const int8_t *wr = wm + ((ptrdiff_t)c * KH + ky) * KW;
                                const int16_t *row;
                                int32_t part = 0;
                                if (iy < 0 || iy >= H) continue;
                                row = xg + c * xc + (ptrdiff_t)iy * W * xp1;
                                if (inside) {
                                    for (kx = 0; kx < KW; ++kx) part += (int32_t)row[(ix0 + kx * DW) * xp1] * wr[kx];
                                } else {
                                    for (kx = 0; kx < KW; ++kx) {
                                        const int32_t ix = ix0 + kx * DW;
                                        if (ix >= 0 && ix < W) part += (int32_t)row[ix * xp1] * wr[kx];
                                    }
                                }
                                acc += part;
                            }
                    }
                    ym[((ptrdiff_t)oy * OW + ox) * yp] = ember_q16_out(acc, m15[m], shift[m], lo, hi, full);
                }
        }
}
/*@end*/

/*@kernel ember_q16_vec requires ember_q16_base*/
#if EMBER_HAVE_AVX2
/* 8 lanes of int32, 4 of int64: the vector types of the AVX2 int16 paths. */
typedef int32_t ember_q16v8 __attribute__((vector_size(32)));
typedef int16_t ember_q16v16 __attribute__((vector_size(32)));
typedef int16_t ember_q16h8 __attribute__((vector_size(16)));
typedef uint16_t ember_q16hu8 __attribute__((vector_size(16)));
typedef int8_t ember_q16b16 __attribute__((vector_size(16)));
typedef long long ember_q16v4 __attribute__((vector_size(32)));
typedef unsigned long long ember_q16u4 __attribute__((vector_size(32)));
typedef int32_t ember_q16v8u __attribute__((vector_size(32), may_alias, aligned(2)));
typedef int16_t ember_q16h8u __attribute__((vector_size(16), may_alias, aligned(2)));
typedef uint16_t ember_q16hu8u __attribute__((vector_size(16), may_alias, aligned(2)));
typedef int16_t ember_q16v16u __attribute__((vector_size(32), may_alias, aligned(2)));
typedef int8_t ember_q16b16u __attribute__((vector_size(16), may_alias, aligned(1)));
typedef unsigned long long ember_q16u64u __attribute__((may_alias, aligned(2)));
#if EMBER_CLANG
#define EMBER_Q16_EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14)
#else
#define EMBER_Q16_EVEN(a, b) __builtin_shuffle(a, b, (ember_q16v8){0, 2, 4, 6, 8, 10, 12, 14})
#endif
#define EMBER_Q16_SEL(c, a, b) (((a) & (c)) | ((b) & ~(c)))
/* 8 int16 at p sign- / zero-extended, 16 int8 sign-extended (one VPMOVSXWD / VPMOVZXWD / VPMOVSXBW: GCC 12
 * splits __builtin_convertvector of these into halves). */
#if EMBER_CLANG
#define EMBER_Q16_SX8(p) __builtin_convertvector(*(const ember_q16h8u *)(p), ember_q16v8)
#define EMBER_Q16_ZX8(p) __builtin_convertvector(*(const ember_q16hu8u *)(p), ember_q16v8)
#define EMBER_Q16_SXB16(p) __builtin_convertvector(*(const ember_q16b16u *)(p), ember_q16v16)
#else
#define EMBER_Q16_SX8(p) ((ember_q16v8)__builtin_ia32_pmovsxwd256(*(const ember_q16h8u *)(p)))
#define EMBER_Q16_ZX8(p) ((ember_q16v8)__builtin_ia32_pmovzxwd256(*(const ember_q16h8u *)(p)))
typedef char ember_q16c16 __attribute__((vector_size(16)));
#define EMBER_Q16_SXB16(p) ((ember_q16v16)__builtin_ia32_pmovsxbw256((ember_q16c16) * (const ember_q16b16u *)(p)))
#endif
/* (acc * mult + 2^(k-1)) >> k of 4 int64 lanes (0 <= mult < 2^31, 1 <= k <= 62), clamped to [lo, hi]:
 * ember_q16_scale (k = its shift) and LiteRT's single rounding (ember_q_scale_tfl, shift 64 + k) with no
 * 64-bit multiply or arithmetic shift in AVX2: the product modulo 2^64 is lo32 * mult + (hi32 * mult << 32)
 * (two VPMULUDQ), the scalar code's int64 product wherever that one does not overflow; x >> k is
 * (x ^ s) >> k ^ s, logical, with s the sign mask. */
EMBER_UNUSED EMBER_INLINE ember_q16v4 ember_q16v_scale(ember_q16v4 acc, int32_t mult, int k, int32_t lo, int32_t hi) {
    const ember_q16v8 m = (ember_q16v8){0} + mult;
    const ember_q16v4 plo = (ember_q16v4)__builtin_ia32_pmuludq256((ember_q16v8)acc, m);
    const ember_q16v4 phi = (ember_q16v4)__builtin_ia32_pmuludq256((ember_q16v8)((ember_q16u4)acc >> 32), m);
    const ember_q16v4 p = (ember_q16v4)((ember_q16u4)plo + ((ember_q16u4)phi << 32) + (((ember_q16u4){0} + 1) << (k - 1)));
    const ember_q16v4 s = p < (ember_q16v4){0};
    ember_q16v4 r = (ember_q16v4)((ember_q16u4)(p ^ s) >> k) ^ s;
    const ember_q16v4 l = (ember_q16v4){0} + lo, h = (ember_q16v4){0} + hi;
    r = EMBER_Q16_SEL(r < l, l, r);
    return EMBER_Q16_SEL(r > h, h, r);
}
/* 8 int64 lanes (a: 0-3, b: 4-7) already within int16, as int32 lanes. */
EMBER_UNUSED EMBER_INLINE ember_q16v8 ember_q16v_narrow(ember_q16v4 a, ember_q16v4 b) {
    return EMBER_Q16_EVEN((ember_q16v8)a, (ember_q16v8)b);
}
/* Sign-extended int32 lanes 0-3 / 4-7 as int64. */
EMBER_UNUSED EMBER_INLINE ember_q16v4 ember_q16v_lo64(ember_q16v8 v) {
    return (ember_q16v4){v[0], v[1], v[2], v[3]};
}
EMBER_UNUSED EMBER_INLINE ember_q16v4 ember_q16v_hi64(ember_q16v8 v) {
    return (ember_q16v4){v[4], v[5], v[6], v[7]};
}
/* Store n (<= 8) int32 lanes within int16. */
EMBER_UNUSED EMBER_INLINE void ember_q16v_store(int16_t *y, ember_q16v8 v, int n) {
    int j;
    if (n == 8) { /* VPACKSSDW (no lane saturates) keeps lanes 0-3 and 4-7 in quads 0 and 2 */
        const ember_q16v4 q = (ember_q16v4)__builtin_ia32_packssdw256(v, v);
        *(ember_q16u64u *)y = (unsigned long long)q[0];
        *(ember_q16u64u *)(y + 4) = (unsigned long long)q[2];
        return;
    }
    for (j = 0; j < n; ++j) y[j] = (int16_t)v[j];
}
#endif
/*@end*/

/*@kernel ember_q16_conv_v requires ember_q16_conv ember_q16_vec*/
/* ember_q16_conv's results, 8 output pixels of up to 4 output channels at a time (AVX2; elsewhere it is
 * ember_q16_conv). The taps (c, ky, kx) of a group are taken in pairs: step s reads the input at two
 * offsets from the output pixel's window origin, off[2s], off[2s+1], and multiplies them by the channel's
 * pair of weights wp[m * steps + s] (int16 halves, the second 0 for an odd tap count): one VPMADDWD of
 * (x_a, x_b) words by (w_a, w_b) per 8 pixels. v = [mode, steps, blk, Hp, Wp, scratch elements, fits]
 * (ops/q16.py vec_tables): mode 0, fully connected ([N, K] by [M, K]: VPMADDWD along K, 16 at a time);
 * 1, a 1x1 stride-1 unpadded convolution over the H * W pixels as one row; 2, any other with strides
 * of 1 or 2, on a zero-padded copy of the input (scratch: Hp x Wp planes, and slack for the last block's
 * lanes past OW). The int32 partial sums are added into int64 every blk steps (mode 0: 16-element
 * chunks): vec_tables proves from the weights that blk steps cannot overflow int32 for any int16 input;
 * `fits`: it proves that bias plus every sum stays within int32, so they do, and the requantisation takes
 * the int32 lanes (quant.c ember_qt8_rq, LiteRT's single rounding: ember_q16_scale's arithmetic). */
#if EMBER_HAVE_AVX2
EMBER_INLINE ember_q16v8 ember_q16v_pair(const int16_t *a, const int16_t *b, int s2) {
    if (s2) { /* stride 2: the even words of 16 at a and at b */
        const ember_q16v8 va = *(const ember_q16v8u *)a, vb = *(const ember_q16v8u *)b;
        return (va & 0xFFFF) | (vb << 16);
    }
    {
        return EMBER_Q16_ZX8(a) | (EMBER_Q16_SX8(b) << 16);
    }
}
/* nb (1 or 4) channels from m of one group, np (1 or 2) vectors of 8 pixels (n of them stored) whose window
 * origins are base + j * stride: each step's weights broadcast once for up to 8 VPMADDWD. */
static inline __attribute__((always_inline)) void ember_q16v_block(
    int16_t *y, ptrdiff_t ystride, ptrdiff_t ps, int n, const int16_t *base, int s2, const int32_t *off,
    const int32_t *wp, int32_t steps, int32_t blk, int fits, const int64_t *bias, const int32_t *m15,
    const int32_t *shift, int32_t m, int32_t lo, int32_t hi, const int nb, const int np) {
    const ptrdiff_t next = s2 ? 16 : 8; /* the second vector's origins */
    ember_q16v8 acc[4][2];
    ember_q16v4 wide[4][2][2];
    int32_t s, j, v, left = blk;
    for (j = 0; j < nb; ++j) { /* the bias: in the int32 lanes from the start where they hold everything */
        const int64_t b = bias ? bias[m + j] : 0;
        for (v = 0; v < np; ++v) {
            wide[j][v][0] = wide[j][v][1] = (ember_q16v4){0} + (fits ? 0 : b);
            acc[j][v] = (ember_q16v8){0} + (fits ? (int32_t)b : 0);
        }
    }
    for (s = 0; s < steps; ++s) {
        const int16_t *pa = base + off[2 * s], *pb = base + off[2 * s + 1];
        ember_q16v16 xp[2];
        for (v = 0; v < np; ++v) xp[v] = (ember_q16v16)ember_q16v_pair(pa + v * next, pb + v * next, s2);
        for (j = 0; j < nb; ++j) {
            const ember_q16v16 wv = (ember_q16v16)((ember_q16v8){0} + wp[(ptrdiff_t)(m + j) * steps + s]);
            for (v = 0; v < np; ++v) acc[j][v] += (ember_q16v8)__builtin_ia32_pmaddwd256(xp[v], wv);
        }
        if (!fits && --left == 0) { /* blk steps: as much as int32 is proven to hold */
            for (j = 0; j < nb; ++j)
                for (v = 0; v < np; ++v) {
                    wide[j][v][0] += ember_q16v_lo64(acc[j][v]), wide[j][v][1] += ember_q16v_hi64(acc[j][v]);
                    acc[j][v] = (ember_q16v8){0};
                }
            left = blk;
        }
    }
    for (j = 0; j < nb; ++j)
        for (v = 0; v < np; ++v) {
            int16_t *yv = y + j * ystride + v * 8 * ps;
            const int nv = v ? n - 8 : n < 8 ? n : 8;
            ember_q16v8 r;
            if (fits) {
                ember_qt8 t;
                ember_qt8_init(&t, m15[m + j], EMBER_Q_TFL + shift[m + j], 0, lo, hi);
                r = ember_qt8_rq(acc[j][v], &t);
            } else {
                const ember_q16v4 a = wide[j][v][0] + ember_q16v_lo64(acc[j][v]);
                const ember_q16v4 b = wide[j][v][1] + ember_q16v_hi64(acc[j][v]);
                r = ember_q16v_narrow(ember_q16v_scale(a, m15[m + j], shift[m + j], lo, hi),
                                      ember_q16v_scale(b, m15[m + j], shift[m + j], lo, hi));
            }
            if (ps == 1) {
                ember_q16v_store(yv, r, nv);
            } else { /* channels-last: the pixels ps apart */
                int t;
                for (t = 0; t < nv; ++t) yv[t * ps] = (int16_t)r[t];
            }
        }
}
/* ember_q16v_block with nb and np as constants (each its own unrolled copy). */
#define EMBER_Q16V_BLOCK(NB, NP) \
    ember_q16v_block(yb, yc, yp, nv, base, s2, off, wp, steps, blk, fits, bias, m15, shift, m, lo, hi, NB, NP)
#define EMBER_Q16V_BLOCKS(nb, np)                                         \
    do {                                                                  \
        if ((nb) == 4) {                                                  \
            if ((np) == 2) EMBER_Q16V_BLOCK(4, 2); else EMBER_Q16V_BLOCK(4, 1); \
        } else {                                                          \
            if ((np) == 2) EMBER_Q16V_BLOCK(1, 2); else EMBER_Q16V_BLOCK(1, 1); \
        }                                                                 \
    } while (0)
/* Fully connected: y[n, m] over K = C, 16 products per VPMADDWD, partials widened every blk chunks. */
static void ember_q16v_fc(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int8_t *w,
                          const int64_t *bias, const int32_t *m15, const int32_t *shift, const int32_t *g,
                          int32_t lo, int32_t hi, int32_t full, int32_t blk) {
    const int32_t K = g[EMBER_Q16_C], M = g[EMBER_Q16_M];
    int32_t n, m, c, j;
    for (n = 0; n < g[EMBER_Q16_N]; ++n)
        for (m = 0; m < M; ++m) {
            const int16_t *xn = x + (ptrdiff_t)n * K;
            const int8_t *wm = w + (ptrdiff_t)m * K;
            int64_t acc = bias ? bias[m] : 0;
            ember_q16v8 part = {0};
            int32_t left = blk, tail = 0;
            for (c = 0; c + 16 <= K; c += 16) {
                const ember_q16v16 wv = EMBER_Q16_SXB16(wm + c);
                part += (ember_q16v8)__builtin_ia32_pmaddwd256(*(const ember_q16v16u *)(xn + c), wv);
                if (--left == 0) {
                    for (j = 0; j < 8; ++j) acc += part[j];
                    part = (ember_q16v8){0}, left = blk;
                }
            }
            for (j = 0; j < 8; ++j) acc += part[j];
            for (; c < K; ++c) tail += (int32_t)xn[c] * wm[c]; /* fewer than 16: within int32 */
            acc += tail;
            y[(ptrdiff_t)n * M + m] = ember_q16_out(acc, m15[m], shift[m], lo, hi, full);
        }
}
/* Row src of W channels-last pixels of C channels to C plane rows dst, plane elements apart. */
static inline __attribute__((always_inline)) void ember_q16_unpack_row(int16_t *EMBER_RESTRICT dst, ptrdiff_t plane,
                                                                      const int16_t *EMBER_RESTRICT src, int W,
                                                                      const int C) {
    int i, c;
    for (c = 0; c < C; ++c)
        for (i = 0; i < W; ++i) dst[c * plane + i] = src[i * C + c];
}
#endif
static void ember_q16_conv_v(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int8_t *w,
                             const int64_t *bias, const int32_t *m15, const int32_t *shift, const int32_t *g,
                             int32_t lo, int32_t hi, int32_t full, int lay, int16_t *scratch, const int32_t *v,
                             const int32_t *off, const int32_t *wp) {
#if EMBER_HAVE_AVX2
    const int32_t C = g[EMBER_Q16_C], H = g[EMBER_Q16_H], W = g[EMBER_Q16_W], M = g[EMBER_Q16_M];
    const int32_t OH = g[EMBER_Q16_OH], OW = g[EMBER_Q16_OW], G = g[EMBER_Q16_G];
    const int32_t SH = g[EMBER_Q16_SH], s2 = g[EMBER_Q16_SW] == 2, mode = v[0], steps = v[1], blk = v[2];
    const int32_t Hp = v[3], Wp = v[4], fits = v[6], cg = C / G, mg = M / G;
    const ptrdiff_t plane = (ptrdiff_t)Hp * Wp, out = (ptrdiff_t)OH * OW;
    /* y's channel and pixel strides (channels-last: lay bit 3); a channels-last x (bit 2) takes the copy (mode 2) */
    const ptrdiff_t yc = lay & 8 ? 1 : out, yp = lay & 8 ? M : 1;
    int32_t n, gi, m, oy, ox, c, h;
    if (mode == 0) {
        ember_q16v_fc(y, x, w, bias, m15, shift, g, lo, hi, full, blk);
        return;
    }
    for (n = 0; n < g[EMBER_Q16_N]; ++n) {
        const int16_t *xs = x + (ptrdiff_t)n * C * H * W;
        int16_t *yn = y + (ptrdiff_t)n * M * out;
        if (mode == 2) { /* the zero-padded copy */
            const ptrdiff_t size = v[5], size16 = size - size % 16, w16 = W - W % 16;
            ptrdiff_t i;
            for (i = 0; i < size16; i += 16) *(ember_q16v16u *)(scratch + i) = (ember_q16v16){0};
            for (; i < size; ++i) scratch[i] = 0;
            for (h = 0; h < H && (lay & 4); ++h) { /* channels-last: row h's pixels in order, each to C planes */
                const int16_t *src = xs + (ptrdiff_t)h * W * C;
                int16_t *dst = scratch + (ptrdiff_t)(h + g[EMBER_Q16_PH]) * Wp + g[EMBER_Q16_PW];
                if (C == 3) /* an image: the compiler's shuffles for a constant channel count */
                    ember_q16_unpack_row(dst, plane, src, W, 3);
                else
                    ember_q16_unpack_row(dst, plane, src, W, C);
            }
            for (c = 0; c < C && !(lay & 4); ++c)
                for (h = 0; h < H; ++h) {
                    const int16_t *src = xs + ((ptrdiff_t)c * H + h) * W;
                    int16_t *dst = scratch + c * plane + (ptrdiff_t)(h + g[EMBER_Q16_PH]) * Wp + g[EMBER_Q16_PW];
                    for (i = 0; i < w16; i += 16) *(ember_q16v16u *)(dst + i) = *(const ember_q16v16u *)(src + i);
                    for (; i < W; ++i) dst[i] = src[i];
                }
            xs = scratch;
        }
        for (gi = 0; gi < G; ++gi) {
            const int16_t *xg = xs + (ptrdiff_t)gi * cg * plane;
            for (m = gi * mg; m < (gi + 1) * mg;) {
                const int nb = m + 4 <= (gi + 1) * mg ? 4 : 1;
                int16_t *ym = yn + (ptrdiff_t)m * yc;
                if (mode == 1) { /* one row of H * W pixels; the last partial block one pixel at a time */
                    for (ox = 0; ox + 8 <= out;) {
                        const int np = ox + 16 <= out ? 2 : 1, nv = 8 * np;
                        int16_t *yb = ym + ox * yp;
                        const int16_t *base = xg + ox;
                        EMBER_Q16V_BLOCKS(nb, np);
                        ox += nv;
                    }
                    for (; ox < out; ++ox) {
                        int32_t j, s;
                        for (j = 0; j < nb; ++j) {
                            int64_t acc = bias ? bias[m + j] : 0;
                            for (s = 0; s < steps; ++s) { /* each product within 2^22: int64 at once */
                                const int32_t pw = wp[(ptrdiff_t)(m + j) * steps + s];
                                acc += (int64_t)xg[ox + off[2 * s]] * (int16_t)(pw & 0xFFFF) +
                                       (int64_t)xg[ox + off[2 * s + 1]] * (int16_t)((uint32_t)pw >> 16);
                            }
                            ym[j * yc + ox * yp] = ember_q16_out(acc, m15[m + j], shift[m + j], lo, hi, full);
                        }
                    }
                } else {
                    for (oy = 0; oy < OH; ++oy)
                        for (ox = 0; ox < OW;) { /* 16 pixels while more than 8 remain (within the slack) */
                            const int np = OW - ox > 8 ? 2 : 1, nv = OW - ox < 8 * np ? OW - ox : 8 * np;
                            int16_t *yb = ym + ((ptrdiff_t)oy * OW + ox) * yp;
                            const int16_t *base = xg + (ptrdiff_t)oy * SH * Wp + (ptrdiff_t)ox * (s2 ? 2 : 1);
                            EMBER_Q16V_BLOCKS(nb, np);
                            ox += 8 * np;
                        }
                }
                m += nb;
            }
        }
    }
#else
    (void)scratch, (void)v, (void)off, (void)wp;
    ember_q16_conv(y, x, w, bias, m15, shift, g, lo, hi, full, lay);
#endif
}
/*@end*/

/*@kernel ember_q16_pool requires ember_q16_base*/
/* AVERAGE_POOL_2D (TFLite's: the valid elements' int32 sum divided by their count, half away from zero)
 * or MAX_POOL_2D (`max`) on NCHW int16 (or NHWC: `nhwc`, ops/conv.py CHANNELS_LAST), then the clamp; input and
 * output share their scale. M = C. */
static void ember_q16_pool(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int32_t *g,
                           int32_t lo, int32_t hi, int32_t max, int32_t nhwc) {
    const int32_t H = g[EMBER_Q16_H], W = g[EMBER_Q16_W], OH = g[EMBER_Q16_OH], OW = g[EMBER_Q16_OW],
                  C = g[EMBER_Q16_C];
    const ptrdiff_t planes = (ptrdiff_t)g[EMBER_Q16_N] * C;
    /* element (row, col) of plane p = (n, c) in an HH x WW map */
#define EMBER_Q16_AT(p, row, col, HH, WW)                                        \
    (nhwc ? (((p) / C * (HH) + (row)) * (ptrdiff_t)(WW) + (col)) * C + (p) % C \
          : ((p) * (HH) + (row)) * (ptrdiff_t)(WW) + (col))
    ptrdiff_t p;
    int32_t oy, ox, ky, kx;
    for (p = 0; p < planes; ++p)
        for (oy = 0; oy < OH; ++oy)
            for (ox = 0; ox < OW; ++ox) {
                int32_t sum = max ? -32768 : 0, count = 0;
                for (ky = 0; ky < g[EMBER_Q16_KH]; ++ky) {
                    const int32_t iy = oy * g[EMBER_Q16_SH] - g[EMBER_Q16_PH] + ky;
                    if (iy < 0 || iy >= H) continue;
                    for (kx = 0; kx < g[EMBER_Q16_KW]; ++kx) {
                        const int32_t ix = ox * g[EMBER_Q16_SW] - g[EMBER_Q16_PW] + kx;
                        if (ix < 0 || ix >= W) continue;
                        const int32_t v = x[EMBER_Q16_AT(p, iy, ix, H, W)];
                        sum = max ? (v > sum ? v : sum) : sum + v;
                        ++count;
                    }
                }
                if (count && !max) sum = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                y[EMBER_Q16_AT(p, oy, ox, OH, OW)] = ember_q16_clamp(sum, lo, hi);
            }
#undef EMBER_Q16_AT
}
/*@end*/

/*@kernel ember_q16_binary requires ember_q16_base ember_q16_vec*/
/* ADD / SUB (op 0 / 1), MUL (op 2), LEAKY_RELU (op 3, of a alone) and ABS (op 4, of a alone: |a|, rescaled
 * by (m_out, k_out) where the left-shift slot p[1] is 1, else only clamped, as TFLite's AbsEvalQuantized) of int16 tensors, b broadcast along one axis: b's element for y's
 * element e is b[(e / b_inner) % b_n] (b_n = n, b_inner = 1: the same shape; b_n = 1: a scalar).
 * p = [op, left shift, m_a, k_a, m_b, k_b, m_out, k_out, lo, hi] with ember_q_scale_tfl's codes:
 * ADD/SUB as TFLite's general int16 path (inputs << 15, each rescaled, summed, rescaled); MUL:
 * a * b rescaled by m_out. Zero points are 0 in TFLite's int16. With AVX2, 8 elements at a time through
 * quant.c's ember_qt8_rq, which gives ember_q_scale_tfl's results for int32 arguments: every one here is
 * (a << 15 and its rescaled sums below 2^31 in magnitude, a * b at most 2^30). */
static void ember_q16_binary(int16_t *EMBER_RESTRICT y, const int16_t *a, const int16_t *b, ptrdiff_t n,
                             ptrdiff_t b_n, ptrdiff_t b_inner, const int32_t *p) {
    ptrdiff_t e = 0;
#if EMBER_HAVE_AVX2
    {
        const int op = p[0];
        ember_qt8 ta, tb, to;
        ptrdiff_t bi = 0, r = 0; /* b's element and the position in its run (broadcast b) */
        int j;
        if (op == 3) {
            ember_qt8_init(&ta, p[2], p[3], 0, p[8], p[9]);
            ember_qt8_init(&tb, p[4], p[5], 0, p[8], p[9]);
        } else {
            ember_qt8_init(&ta, p[2], p[3], 0, -2147483647 - 1, 2147483647);
            ember_qt8_init(&tb, p[4], p[5], 0, -2147483647 - 1, 2147483647);
        }
        ember_qt8_init(&to, p[6], p[7], 0, p[8], p[9]);
        const ptrdiff_t n8 = n - n % 8;
        for (; op != 4 && e < n8; e += 8) { /* (ABS: the scalar loop) */
            const ember_q16v8 va = EMBER_Q16_SX8(a + e);
            ember_q16v8 vb, v;
            if (b_n == n && b_inner == 1) {
                vb = EMBER_Q16_SX8(b + e);
            } else {
                for (j = 0; j < 8; ++j) { /* b[(e / b_inner) % b_n], counted along */
                    vb[j] = b[bi];
                    if (++r == b_inner) r = 0, bi = bi + 1 == b_n ? 0 : bi + 1;
                }
            }
            if (op == 2) {
                v = ember_qt8_rq(va * vb, &to);
            } else if (op == 3) {
                v = EMBER_Q16_SEL(va >= (ember_q16v8){0}, ember_qt8_rq(va, &ta), ember_qt8_rq(va, &tb));
            } else {
                const ember_q16v8 sa = ember_qt8_rq(va * (1 << p[1]), &ta), sb = ember_qt8_rq(vb * (1 << p[1]), &tb);
                v = ember_qt8_rq(op == 1 ? sa - sb : sa + sb, &to);
            }
            ember_q16v_store(y + e, v, 8);
        }
    }
#endif
    for (; e < n; ++e) {
        const int64_t va = a[e], vb = b[(e / b_inner) % b_n];
        int64_t r;
        if (p[0] == 2) {
            r = ember_q_scale_tfl(va * vb, p[6], p[7]);
        } else if (p[0] == 4) {
            r = va < 0 ? -va : va;
            if (p[1]) r = ember_q_scale_tfl(r, p[6], p[7]);
        } else if (p[0] == 3) { /* LEAKY_RELU of a: (m_a, k_a) at and above zero, (m_b, k_b) below */
            r = va >= 0 ? ember_q_scale_tfl(va, p[2], p[3]) : ember_q_scale_tfl(va, p[4], p[5]);
        } else {
            const int64_t sa = ember_q_scale_tfl(va * ((int64_t)1 << p[1]), p[2], p[3]);
            const int64_t sb = ember_q_scale_tfl(vb * ((int64_t)1 << p[1]), p[4], p[5]);
            r = ember_q_scale_tfl(p[0] == 1 ? sa - sb : sa + sb, p[6], p[7]);
        }
        y[e] = ember_q16_clamp(r, p[8], p[9]);
    }
}
/*@end*/

/*@kernel ember_q16_softmax requires ember_q16_base*/
/* TFLite's int16 SOFTMAX over rows of `depth` (input and output zero point 0, output scale 1/32768):
 * exp(x - max) from a 513-entry table over [-10, 0] (input rescaled by m, shift: ember_q_scale_tfl's
 * code), the Q16.15 sum's reciprocal from a 513-entry 1/(1 + x) table over [0, 1], both read with
 * TFLite's linear interpolation (7 fractional bits). */
EMBER_INLINE int32_t ember_q16_lut(int32_t v, const int16_t *lut) {
    const int32_t s = v < -32768 ? -32768 : v > 32767 ? 32767 : v;
    const int32_t i = 256 + (s >> 7), frac = s & 0x7f;
    return lut[i] + (((lut[i + 1] - lut[i]) * frac + 64) >> 7);
}
static void ember_q16_softmax(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t rows,
                              int32_t depth, int32_t m, int32_t shift, const int16_t *exp_lut,
                              const int16_t *recip_lut) {
    ptrdiff_t r;
    int32_t c;
    for (r = 0; r < rows; ++r) {
        const int16_t *xr = x + r * depth;
        int16_t *yr = y + r * depth;
        int32_t top = -32768, sum = 0, clz = 0, rshift;
        uint32_t bits;
        for (c = 0; c < depth; ++c) top = xr[c] > top ? xr[c] : top;
        for (c = 0; c < depth; ++c) { /* the exps wait in y, as TFLite's kernel keeps them */
            yr[c] = (int16_t)ember_q16_lut((int32_t)ember_q_scale_tfl(xr[c] - top, m, shift) + 32767, exp_lut);
            sum += yr[c];
        }
        for (bits = (uint32_t)sum; clz < 32 && !(bits & 0x80000000u); bits <<= 1) ++clz;
        {
            const int32_t shifted = (int32_t)((((int64_t)sum << (clz - 1)) + (1 << 13)) >> 14);
            const int64_t recip = ember_q16_lut(shifted - ((1 << 15) + (1 << 16)), recip_lut);
            rshift = 31 - clz;
            for (c = 0; c < depth; ++c) {
                const int64_t v = ((int64_t)yr[c] * recip + ((int64_t)1 << (rshift - 1))) >> rshift;
                yr[c] = (int16_t)(v < 0 ? 0 : v > 32767 ? 32767 : v);
            }
        }
    }
}
/*@end*/

/*@kernel ember_q16_mean requires ember_q16_base*/
/* MEAN over each of NC planes of S int16 values (TFLite's QuantizedMeanOrSum: the int sum times a
 * multiplier with 1/S folded in, ember_q_scale_tfl's shift code), clamped to [lo, hi]; with C_last, over the S
 * pixels of each of NC channels-last images, per channel (ops/conv.py CHANNELS_LAST). */
static void ember_q16_mean(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t NC, ptrdiff_t S,
                           ptrdiff_t C_last, int32_t mult, int32_t shift, int32_t lo, int32_t hi) {
    ptrdiff_t p, i, c;
    if (C_last) { /* channels-last: NC images of S pixels of C_last channels */
        for (p = 0; p < NC; ++p)
            for (c = 0; c < C_last; ++c) {
                int64_t sum = 0;
                for (i = 0; i < S; ++i) sum += x[(p * S + i) * C_last + c];
                y[p * C_last + c] = ember_q16_clamp(ember_q_scale_tfl(sum, mult, shift), lo, hi);
            }
        return;
    }
    for (p = 0; p < NC; ++p) {
        int64_t sum = 0;
        for (i = 0; i < S; ++i) sum += x[p * S + i];
        y[p] = ember_q16_clamp(ember_q_scale_tfl(sum, mult, shift), lo, hi);
    }
}
/*@end*/

/*@kernel ember_q16_reduce requires ember_q16_base*/
/* REDUCE_MAX / REDUCE_MIN (kind 2 / 3: the stored integers; TFLite requires one scale) and SUM / MEAN (kind 0:
 * the int64 sum requantised by ember_q_scale_tfl's (mult, shift), 1/n folded into a MEAN's multiplier as
 * TFLite's QuantizedMeanOrSum does) and PROD (kind 4: QuantizedReduceProd, ember_q16_scale's mult and shift
 * after each multiply and once more at the end; the int32 casts wrap as TFLite's do), clamped to int16. Output o reads x[base[o] + off[r]] for r < R: the
 * tables (ops/q16.py Q16Reduce) hold any set of reduced axes. */
static void ember_q16_reduce(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int32_t *base,
                             ptrdiff_t O, const int32_t *off, ptrdiff_t R, int32_t kind, int32_t mult,
                             int32_t shift) {
    ptrdiff_t o, r;
    for (o = 0; o < O; ++o) {
        const int16_t *xo = x + base[o];
        if (kind == 2 || kind == 3) {
            int32_t v = xo[off[0]];
            for (r = 1; r < R; ++r) {
                const int32_t e = xo[off[r]];
                v = kind == 2 ? (e > v ? e : v) : (e < v ? e : v);
            }
            y[o] = (int16_t)v;
        } else if (kind == 4) { /* TFLite's int32 running product: each step's int64 product requantised */
            int32_t p = xo[off[0]];
            for (r = 1; r < R; ++r) p = (int32_t)ember_q16_scale((int64_t)p * xo[off[r]], mult, shift);
            y[o] = ember_q16_clamp((int32_t)ember_q16_scale(p, mult, shift), -32768, 32767);
        } else {
            int64_t sum = 0;
            for (r = 0; r < R; ++r) sum += xo[off[r]];
            y[o] = ember_q16_clamp(ember_q_scale_tfl(sum, mult, shift), -32768, 32767);
        }
    }
}
/*@end*/

/*@kernel ember_q16_matmul requires ember_q16_base*/
/* BATCH_MATMUL of int16 by int16 (TFLite's reference BatchMatMul<int16_t, int64_t>): per batch t, a [M, K]
 * at a + abase[t] times b [K, N] at b + bbase[t] (broadcast batches repeat an offset), int64 sums, TFLite's
 * int64 MultiplyByQuantizedMultiplier (ember_q16_scale), saturated to int16. */
static void ember_q16_matmul(int16_t *EMBER_RESTRICT y, const int16_t *a, const int16_t *b, const int32_t *abase,
                             const int32_t *bbase, ptrdiff_t batches, int32_t M, int32_t K, int32_t N, int32_t m15,
                             int32_t shift) {
    ptrdiff_t t;
    int32_t i, j, k;
    for (t = 0; t < batches; ++t) {
        const int16_t *at = a + abase[t], *bt = b + bbase[t];
        int16_t *yt = y + t * (ptrdiff_t)M * N;
        for (i = 0; i < M; ++i)
            for (j = 0; j < N; ++j) {
                int64_t acc = 0;
                for (k = 0; k < K; ++k) acc += (int32_t)at[(ptrdiff_t)i * K + k] * bt[(ptrdiff_t)k * N + j];
                yt[(ptrdiff_t)i * N + j] = ember_q16_clamp(ember_q16_scale(acc, m15, shift), -32768, 32767);
            }
    }
}
/*@end*/

/*@kernel ember_q16_requant requires ember_q16_base*/
/* QUANTIZE between int16 and int8 (TFLite's Requantize): y = (x - zin) requantised by ember_q_scale_tfl's (mult,
 * shift) + zout, saturated to the output type; to8: int16 in, int8 out, else int8 in, int16 out. */
static void ember_q16_requant(void *EMBER_RESTRICT y, const void *EMBER_RESTRICT x, ptrdiff_t n, int32_t to8,
                              int32_t mult, int32_t shift, int32_t zin, int32_t zout) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        const int32_t v = to8 ? ((const int16_t *)x)[i] : ((const int8_t *)x)[i];
        const int64_t r = ember_q_scale_tfl(v - zin, mult, shift) + zout;
        if (to8)
            ((int8_t *)y)[i] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
        else
            ((int16_t *)y)[i] = ember_q16_clamp(r, -32768, 32767);
    }
}
/*@end*/

/*@kernel ember_q16_sigmoid requires ember_q16_base*/
/* TFLite's int16 LOGISTIC and TANH (reference_integer_ops::Logistic / Tanh; output scale 2^-15): the input
 * times mult, rounded right by shift, its magnitude split into a table index and a 9-bit (LOGISTIC) or 8-bit
 * (TANH: tanh(x) = 2 sigmoid(2x) - 1) fraction that interpolates tab (sigmoid(i / 24), 0.16), saturating
 * past the last entry; the sign folds the result about its middle. */
static void ember_q16_sigmoid(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t n,
                              int32_t is_tanh, int32_t mult, int32_t shift, const uint16_t *tab) {
    const int64_t round = shift > 0 ? (int64_t)1 << (shift - 1) : 0;
    const uint32_t bits = is_tanh ? 8u : 9u;
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        const int32_t v = (int32_t)(((int64_t)x[i] * mult + round) >> shift);
        const uint32_t a = (uint32_t)(v < 0 ? -v : v), hi = a >> bits, frac = a & ((1u << bits) - 1u);
        const uint32_t r = hi >= 255u ? (is_tanh ? 0xFFFFu << 8 : 0x7FFFu << 10)
                                      : ((uint32_t)tab[hi] << bits) + frac * (uint32_t)(tab[hi + 1] - tab[hi]);
        if (is_tanh) {
            const int32_t s = (int32_t)r, t = v >= 0 ? s - (1 << 23) + (1 << 7) : -s + (1 << 23) + (1 << 7) - 1;
            y[i] = (int16_t)(t >> 8);
        } else {
            y[i] = (int16_t)((v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u) >> 10);
        }
    }
}
/*@end*/

/*@kernel ember_q16_lookup requires ember_q16_base*/
/* TFLite's int16 LUTLookup (EXP, GELU): entry 256 + (x >> 7) of a 513-entry table plus the slope to the next
 * entry times the low 7 bits, rounded; the slope and the sum kept in int16 as TFLite keeps them (they wrap). */
static void ember_q16_lookup(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t n,
                             const int16_t *lut) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        const int32_t v = x[i], at = 256 + (v >> 7);
        const int16_t slope = (int16_t)(lut[at + 1] - lut[at]);
        y[i] = (int16_t)(lut[at] + ((slope * (v & 0x7f) + 64) >> 7));
    }
}
/*@end*/

/*@kernel ember_q16_rsqrt requires ember_q16_base*/
/* TFLite Micro's int16 RSQRT (its int8 RsqrtEvalQuantized widened; zero points 0): 1/sqrt(v) as
 * GetInvSqrtQuantizedMultiplierExp's fixed-point Newton-Raphson (five steps), then two
 * MultiplyByQuantizedMultiplier with gemmlowp's double rounding: by 1 << 20 and by the output multiplier
 * (mult, left shift `shift` - 20), saturated. v = 0 gives 32767; v < 0 (Micro fails the model) what v = 1 does. */
EMBER_INLINE int32_t ember_q16r_wrap(int64_t v) {
    return (int32_t)(uint32_t)(uint64_t)v;
}
EMBER_INLINE int32_t ember_q16r_mulhi(int32_t a, int32_t b) { /* SaturatingRoundingDoublingHighMul */
    const int64_t ab = (int64_t)a * b;
    if (a == b && a == -2147483647 - 1) return 2147483647;
    return (int32_t)((ab + (ab >= 0 ? (1 << 30) : 1 - (1 << 30))) / ((int64_t)1 << 31));
}
EMBER_INLINE int32_t ember_q16r_rdiv(int32_t x, int32_t e) { /* RoundingDivideByPOT */
    const int64_t mask = ((int64_t)1 << e) - 1, rem = (int64_t)x & mask;
    return (int32_t)(((int64_t)x >> e) + (rem > (mask >> 1) + (x < 0)));
}
EMBER_INLINE int32_t ember_q16r_pot(int32_t x, int32_t e) { /* SaturatingRoundingMultiplyByPOT */
    int64_t v;
    if (e <= 0) return ember_q16r_rdiv(x, -e);
    v = (int64_t)x * ((int64_t)1 << e);
    return v > 2147483647 ? 2147483647 : v < -2147483647 - 1 ? -2147483647 - 1 : (int32_t)v;
}
EMBER_INLINE int32_t ember_q16r_mbqm(int32_t x, int32_t m, int32_t shift) {
    const int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return ember_q16r_rdiv(ember_q16r_mulhi(ember_q16r_wrap((int64_t)x * ((int64_t)1 << left)), m), right);
}
static void ember_q16_rsqrt(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t n, int32_t mult,
                            int32_t shift) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        int32_t v = x[i], inv = 2147483647, inv_shift = 0, out;
        if (v == 0) {
            y[i] = 32767;
            continue;
        }
        if (v > 1) {
            int32_t bits = 0, pairs, half, r = 1 << 28, k, e = 11;
            while ((v >> bits) != 0) ++bits;
            pairs = ((32 - bits) - 1) / 2 - 1;
            e -= pairs;
            v <<= 2 * pairs;
            half = ember_q16r_rdiv(v >> 1, 1);
            for (k = 0; k < 5; ++k) {
                const int32_t r3 = ember_q16r_pot(ember_q16r_mulhi(ember_q16r_mulhi(r, r), r), 6);
                r = ember_q16r_pot(ember_q16r_wrap((int64_t)ember_q16r_mulhi((1 << 28) + (1 << 27), r) -
                                                   ember_q16r_mulhi(half, r3)), 3);
            }
            r = ember_q16r_mulhi(r, 1518500250); /* times sqrt(2) / 2 */
            if (e < 0) {
                r = ember_q16r_wrap((int64_t)r * ((int64_t)1 << -e));
                e = 0;
            }
            inv = r;
            inv_shift = -e;
        }
        out = ember_q16r_mbqm(ember_q16r_mbqm(1, inv, inv_shift + 20), mult, shift - 20);
        y[i] = (int16_t)(out < -32768 ? -32768 : out > 32767 ? 32767 : out);
    }
}
/*@end*/
