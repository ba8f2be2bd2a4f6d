/* TFLite's 16x8 integer kernels: int16 activations (zero point 0), int8 weights, int64 bias and
 * accumulators (TFLite's reference_integer_ops for int16). Portable C, one output at a time: written for
 * exactness first (a SIMD / Cortex-M path can come later, as qarm.c does for int8). */

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
 * channels of a 1x1 window; ops/q16.py keeps rows that short), then in int64: the same exact sum. */
EMBER_INLINE int16_t ember_q16_out(int64_t acc, int32_t m15, int32_t shift, int32_t lo, int32_t hi, int32_t full) {
    return ember_q16_clamp(full ? ember_q_scale_tfl(acc, m15, shift) : ember_q16_scale(acc, m15, shift), lo, hi);
}
static void ember_q16_conv(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int8_t *w,
                           const int64_t *bias, const int32_t *m15, const int32_t *shift, const int32_t *g,
                           int32_t lo, int32_t hi, int32_t full) {
    const int32_t C = g[EMBER_Q16_C], H = g[EMBER_Q16_H], W = g[EMBER_Q16_W], M = g[EMBER_Q16_M];
    const int32_t OH = g[EMBER_Q16_OH], OW = g[EMBER_Q16_OW], KH = g[EMBER_Q16_KH], KW = g[EMBER_Q16_KW];
    const int32_t SH = g[EMBER_Q16_SH], SW = g[EMBER_Q16_SW], DH = g[EMBER_Q16_DH], DW = g[EMBER_Q16_DW];
    const int32_t PH = g[EMBER_Q16_PH], PW = g[EMBER_Q16_PW];
    const int32_t cg = C / g[EMBER_Q16_G], mg = M / g[EMBER_Q16_G];
    const ptrdiff_t HW = (ptrdiff_t)H * W;
    int32_t n, m, oy, ox, c, ky, kx;
    for (n = 0; n < g[EMBER_Q16_N]; ++n)
        for (m = 0; m < M; ++m) {
            const int16_t *xg = x + ((ptrdiff_t)n * C + (ptrdiff_t)(m / mg) * cg) * HW;
            const int8_t *wm = w + (ptrdiff_t)m * cg * KH * KW;
            const int64_t b = bias ? bias[m] : 0;
            int16_t *ym = y + ((ptrdiff_t)n * M + m) * OH * OW;
            for (oy = 0; oy < OH; ++oy)
                for (ox = 0; ox < OW; ++ox) {
                    const int32_t iy0 = oy * SH - PH, ix0 = ox * SW - PW;
                    int64_t acc = b;
                    if (KH == 1 && KW == 1) { /* 1x1 and fully connected: one tap per channel */
                        int32_t part = 0;
                        if (iy0 >= 0 && iy0 < H && ix0 >= 0 && ix0 < W) {
                            const int16_t *xp = xg + (ptrdiff_t)iy0 * W + ix0;
                            for (c = 0; c < cg; ++c) {
                                part += (int32_t)xp[c * HW] * wm[c];
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
                                row = xg + (c * H + (ptrdiff_t)iy) * W;
                                if (inside) {
                                    for (kx = 0; kx < KW; ++kx) part += (int32_t)row[ix0 + kx * DW] * wr[kx];
                                } else {
                                    for (kx = 0; kx < KW; ++kx) {
                                        const int32_t ix = ix0 + kx * DW;
                                        if (ix >= 0 && ix < W) part += (int32_t)row[ix] * wr[kx];
                                    }
                                }
                                acc += part;
                            }
                    }
                    ym[(ptrdiff_t)oy * OW + ox] = ember_q16_out(acc, m15[m], shift[m], lo, hi, full);
                }
        }
}
/*@end*/

/*@kernel ember_q16_pool requires ember_q16_base*/
/* AVERAGE_POOL_2D (TFLite's: the valid elements' int32 sum divided by their count, half away from zero)
 * or MAX_POOL_2D (`max`) on NCHW int16, then the clamp; input and output share their scale. M = C. */
static void ember_q16_pool(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, const int32_t *g,
                           int32_t lo, int32_t hi, int32_t max) {
    const int32_t H = g[EMBER_Q16_H], W = g[EMBER_Q16_W], OH = g[EMBER_Q16_OH], OW = g[EMBER_Q16_OW];
    const ptrdiff_t planes = (ptrdiff_t)g[EMBER_Q16_N] * g[EMBER_Q16_C];
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
                        const int32_t v = x[(p * H + iy) * W + ix];
                        sum = max ? (v > sum ? v : sum) : sum + v;
                        ++count;
                    }
                }
                if (count && !max) sum = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                y[(p * OH + oy) * OW + ox] = ember_q16_clamp(sum, lo, hi);
            }
}
/*@end*/

/*@kernel ember_q16_binary requires ember_q16_base*/
/* ADD / SUB (op 0 / 1), MUL (op 2) and LEAKY_RELU (op 3, of a alone) of int16 tensors, b broadcast along one axis: b's element for y's
 * element e is b[(e / b_inner) % b_n] (b_n = n, b_inner = 1: the same shape; b_n = 1: a scalar).
 * p = [op, left shift, m_a, k_a, m_b, k_b, m_out, k_out, lo, hi] with ember_q_scale_tfl's codes:
 * ADD/SUB as TFLite's general int16 path (inputs << 15, each rescaled, summed, rescaled); MUL:
 * a * b rescaled by m_out. Zero points are 0 in TFLite's int16. */
static void ember_q16_binary(int16_t *EMBER_RESTRICT y, const int16_t *a, const int16_t *b, ptrdiff_t n,
                             ptrdiff_t b_n, ptrdiff_t b_inner, const int32_t *p) {
    ptrdiff_t e;
    for (e = 0; e < n; ++e) {
        const int64_t va = a[e], vb = b[(e / b_inner) % b_n];
        int64_t r;
        if (p[0] == 2) {
            r = ember_q_scale_tfl(va * vb, p[6], p[7]);
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
 * multiplier with 1/S folded in, ember_q_scale_tfl's shift code), clamped to [lo, hi]. */
static void ember_q16_mean(int16_t *EMBER_RESTRICT y, const int16_t *EMBER_RESTRICT x, ptrdiff_t NC, ptrdiff_t S,
                           int32_t mult, int32_t shift, int32_t lo, int32_t hi) {
    ptrdiff_t p, i;
    for (p = 0; p < NC; ++p) {
        int64_t sum = 0;
        for (i = 0; i < S; ++i) sum += x[p * S + i];
        y[p] = ember_q16_clamp(ember_q_scale_tfl(sum, mult, shift), lo, hi);
    }
}
/*@end*/
