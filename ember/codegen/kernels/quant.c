/* Quantization kernels: ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear, and the integer
 * element-wise, pooling and lookup kernels of folded QDQ models. Integer results never depend on the
 * target: requantisation is a 64-bit fixed-point product (see ember_q_scale), no float. */

/*@kernel ember_qsaturate requires ember_prelude*/
/* round-half-to-even(v) + zp saturated to [lo, hi]: ONNX QuantizeLinear's rint-then-saturate, exact
 * for any float (after clamping to a small range, truncation and the fraction are exact) and
 * independent of the FPU rounding mode; NaN gives lo. Branch-free, so loops over it vectorize. */
EMBER_INLINE int32_t ember_q_saturate(float v, int32_t zp, int32_t lo, int32_t hi) {
    const float flo = (float)(lo - zp) - 1.0f, fhi = (float)(hi - zp) + 1.0f;
    const float c = v >= flo ? (v <= fhi ? v : fhi) : flo;
    const int32_t i = (int32_t)c;
    const float f = c - (float)i;
    const int32_t odd = i & 1;
    const int32_t r = i + zp + ((f > 0.5f) | ((f == 0.5f) & odd)) - ((f < -0.5f) | ((f == -0.5f) & odd));
    return r < lo ? lo : r > hi ? hi : r;
}
/*@end*/

/*@kernel ember_qround requires ember_prelude*/
/* acc * mult * 2^-shift, rounded half to even: the requantisation of every integer kernel. The real
 * multiplier (e.g. x_scale * w_scale / y_scale) is mult * 2^-shift with mult < 2^31 and 1 <= shift <= 62,
 * made at compile time from the float32 value exactly, so the result is the float computation's
 * correctly rounded value, with no float at run time. */
EMBER_INLINE int64_t ember_q_scale(int64_t acc, int32_t mult, int shift) {
    const int64_t p = acc * mult;
    return (p + ((((int64_t)1) << (shift - 1)) - 1) + ((p >> shift) & 1)) >> shift;
}
/* ember_q_scale + zero point, clamped to [lo, hi]. */
EMBER_INLINE int32_t ember_q_requant(int64_t acc, int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int64_t r = ember_q_scale(acc, mult, shift) + zp;
    return (int32_t)(r < lo ? lo : r > hi ? hi : r);
}
/* Element i of int8 (sgn = 1) or uint8 (sgn = 0) bytes, as an int. */
EMBER_INLINE int32_t ember_q_load(const uint8_t *p, ptrdiff_t i, int sgn) {
    return sgn ? (int32_t)(int8_t)p[i] : (int32_t)p[i];
}
/*@end*/

/*@kernel ember_qrun requires ember_qround*/
/* y[j] = ember_q_requant(acc[j] + c, mult, shift, zp, lo, hi) for j < n, in runs of 64: a constant trip
 * count that compilers vectorize whole (a 32 x 32 -> 64-bit multiply, the clamp before the zero point),
 * the last partial run through a zero-padded copy instead of a scalar remainder loop. */
EMBER_INLINE void ember_qrun64(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, int32_t c, int32_t mult,
                               int shift, int32_t zp, int64_t l, int64_t h) {
    const int64_t rnd = (((int64_t)1) << (shift - 1)) - 1;
    int j;
    for (j = 0; j < 64; ++j) {
        const int64_t p = (int64_t)(acc[j] + c) * mult; /* the sums plus c fit int32: see qlinear.py */
        int64_t r = (p + rnd + ((p >> shift) & 1)) >> shift;
        r = r < l ? l : r;
        r = r > h ? h : r;
        y[j] = (uint8_t)(r + zp);
    }
}
static void ember_qrun(uint8_t *EMBER_RESTRICT y, const int32_t *EMBER_RESTRICT acc, ptrdiff_t n, int32_t c,
                       int32_t mult, int shift, int32_t zp, int32_t lo, int32_t hi) {
    const int64_t l = lo - zp, h = hi - zp;
    ptrdiff_t j;
    for (j = 0; j + 64 <= n; j += 64) ember_qrun64(y + j, acc + j, c, mult, shift, zp, l, h);
    if (j < n) {
        int32_t a[64];
        uint8_t b[64];
        int i, r = (int)(n - j);
        for (i = 0; i < 64; ++i) a[i] = i < r ? acc[j + i] : 0;
        ember_qrun64(b, a, c, mult, shift, zp, l, h);
        for (i = 0; i < r; ++i) y[j + i] = b[i];
    }
}
/*@end*/

/*@kernel ember_quantize_tpl requires ember_prelude*/
/* Scale / zero-point layout `q` = [outer, A, inner, block, s_o, s_a, s_i]: the tensor is outer x A x inner
 * (A = the quantization axis) and element (o, a, i) uses parameter o*s_o + (a/block)*s_a + i*s_i
 * (all strides 0: per tensor; s_a = 1: per axis; blocked otherwise). zp may be NULL (zero). */
#define EMBER_QUANT_LOOP(BODY)                                                                       \
    int o, a, i;                                                                                     \
    for (o = 0; o < q[0]; ++o)                                                                       \
        for (a = 0; a < q[1]; ++a) {                                                                 \
            const ptrdiff_t base = (ptrdiff_t)o * q[4] + (ptrdiff_t)(a / q[3]) * q[5];               \
            const ptrdiff_t e0 = ((ptrdiff_t)o * q[1] + a) * q[2];                                   \
            if (q[6] == 0) { /* one scale for the run: a loop that vectorizes */                      \
                const float sc = scale[base];                                                        \
                const int32_t z = zp ? (int32_t)zp[base] : 0;                                        \
                for (i = 0; i < q[2]; ++i) {                                                         \
                    const ptrdiff_t e = e0 + i;                                                      \
                    BODY;                                                                            \
                }                                                                                    \
            } else {                                                                                 \
                for (i = 0; i < q[2]; ++i) {                                                         \
                    const ptrdiff_t e = e0 + i;                                                      \
                    const float sc = scale[base + (ptrdiff_t)i * q[6]];                              \
                    const int32_t z = zp ? (int32_t)zp[base + (ptrdiff_t)i * q[6]] : 0;              \
                    BODY;                                                                            \
                }                                                                                    \
            }                                                                                        \
        }
#define EMBER_QUANTIZE(SUFFIX, T, LO, HI)                                                            \
    static void ember_quantize_##SUFFIX(T *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const float *scale, \
                                        const T *zp, const int32_t *q) {                             \
        EMBER_QUANT_LOOP(y[e] = (T)ember_q_saturate(x[e] / sc, z, LO, HI))                           \
    }
/* (x - zp) * scale, the subtraction in float as ONNX's reference does it (exact below 2^24). */
#define EMBER_DEQUANTIZE(SUFFIX, T)                                                                  \
    static void ember_dequantize_##SUFFIX(float *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, const float *scale, \
                                          const T *zp, const int32_t *q) {                           \
        EMBER_QUANT_LOOP(y[e] = ((float)x[e] - (float)z) * sc)                                      \
    }
/*@end*/

/*@kernel ember_quantize_s8 requires ember_quantize_tpl ember_qsaturate*/
EMBER_QUANTIZE(s8, int8_t, -128, 127)
/*@end*/
/*@kernel ember_quantize_u8 requires ember_quantize_tpl ember_qsaturate*/
EMBER_QUANTIZE(u8, uint8_t, 0, 255)
/*@end*/
/*@kernel ember_quantize_s16 requires ember_quantize_tpl ember_qsaturate*/
EMBER_QUANTIZE(s16, int16_t, -32768, 32767)
/*@end*/
/*@kernel ember_quantize_u16 requires ember_quantize_tpl ember_qsaturate*/
EMBER_QUANTIZE(u16, uint16_t, 0, 65535)
/*@end*/
/*@kernel ember_dequantize_s8 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s8, int8_t)
/*@end*/
/*@kernel ember_dequantize_u8 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(u8, uint8_t)
/*@end*/
/*@kernel ember_dequantize_s16 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s16, int16_t)
/*@end*/
/*@kernel ember_dequantize_u16 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(u16, uint16_t)
/*@end*/
/*@kernel ember_dequantize_s32 requires ember_quantize_tpl*/
EMBER_DEQUANTIZE(s32, int32_t)
/*@end*/

/*@kernel ember_dynquant_u8 requires ember_qsaturate*/
/* DynamicQuantizeLinear: uint8 with the range of x widened to include 0, step by step as ONNX's
 * reference computes it (float32). */
static void ember_dynquant_u8(uint8_t *y, float *scale, uint8_t *zp, const float *x, ptrdiff_t n) {
    float mx = 0.0f, mn = 0.0f, s, izp;
    int32_t z;
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        mx = x[i] > mx ? x[i] : mx;
        mn = x[i] < mn ? x[i] : mn;
    }
    s = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    izp = 0.0f - mn / s;
    z = ember_q_saturate(izp < 0.0f ? 0.0f : izp > 255.0f ? 255.0f : izp, 0, 0, 255);
    for (i = 0; i < n; ++i) y[i] = (uint8_t)ember_q_saturate(x[i] / s, z, 0, 255);
    *scale = s;
    *zp = (uint8_t)z;
}
/*@end*/

/*@kernel ember_qadd requires ember_qround ember_qv16*/
/* Folded QDQ Add (and Sub, with mb < 0) on int8 (sgn = 1) or uint8 bytes, each input rescaled to the
 * output's scale: y = zy + round(((a - za) * ma + (b - zb) * mb) * 2^-shift) clamped to [lo, hi];
 * r = [za, zb, ma, mb, shift, zy, lo, hi]. `b` may broadcast: element i of y reads b[(i / b_div) % b_mod]
 * (b_div = 1, b_mod = n: same shape; b_mod = 1: one value; else one axis of y). On AVX-512, 16 elements
 * at a time in 64-bit lanes (VPMULDQ of the even and odd int32 lanes): the same integers. */
#ifdef EMBER_QV16
typedef int64_t ember_qa_q8 __attribute__((vector_size(64)));
EMBER_INLINE ember_qa_q8 ember_qa_muldq(ember_qa_q8 a, ember_qa_q8 b) { /* low int32 of each lane, widened */
    __asm__("vpmuldq %2, %1, %0" : "=v"(a) : "v"(a), "v"(b));
    return a;
}
#endif
static void ember_qadd(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                       ptrdiff_t b_mod, int sgn, const int32_t *r) {
    ptrdiff_t i = 0;
#ifdef EMBER_QV16
    if (b_div == 1 && b_mod == n && r[4] >= 1 && r[4] <= 62) {
        const ember_qa_q8 ma = (ember_qa_q8){0} + r[2], mb = (ember_qa_q8){0} + r[3];
        const ember_qa_q8 rnd = (ember_qa_q8){0} + ((((int64_t)1) << (r[4] - 1)) - 1), lo = (ember_qa_q8){0} + (r[6] - r[5]);
        const ember_qa_q8 hi = (ember_qa_q8){0} + (r[7] - r[5]), even = (ember_qa_q8){0} + 0xFFFFFFFFll;
        const ember_qv16_i za = (ember_qv16_i){0} + r[0], zb = (ember_qv16_i){0} + r[1], zy = (ember_qv16_i){0} + r[5];
        const int shift = r[4];
        for (; i + 16 <= n; i += 16) {
            const ember_qa_q8 va = (ember_qa_q8)(ember_qv16_widen(a + i, sgn) - za);
            const ember_qa_q8 vb = (ember_qa_q8)(ember_qv16_widen(b + i, sgn) - zb);
            ember_qa_q8 pe = ember_qa_muldq(va, ma) + ember_qa_muldq(vb, mb);
            ember_qa_q8 po = ember_qa_muldq(va >> 32, ma) + ember_qa_muldq(vb >> 32, mb);
            pe = (pe + rnd + ((pe >> shift) & 1)) >> shift;
            po = (po + rnd + ((po >> shift) & 1)) >> shift;
            __asm__("vpmaxsq %2, %1, %0\n\tvpminsq %3, %0, %0" : "=&v"(pe) : "v"(pe), "v"(lo), "v"(hi));
            __asm__("vpmaxsq %2, %1, %0\n\tvpminsq %3, %0, %0" : "=&v"(po) : "v"(po), "v"(lo), "v"(hi));
            *(ember_qv16_bu *)(void *)(y + i) =
                __builtin_convertvector((ember_qv16_i)(pe & even) + (ember_qv16_i)(po << 32) + zy, ember_qv16_b);
        }
    }
#endif
    for (; i < n; ++i) {
        const int64_t s = (int64_t)(ember_q_load(a, i, sgn) - r[0]) * r[2] +
                          (int64_t)(ember_q_load(b, (i / b_div) % b_mod, sgn) - r[1]) * r[3];
        y[i] = (uint8_t)ember_q_requant(s, 1, r[4], r[5], r[6], r[7]);
    }
}
/*@end*/

/*@kernel ember_qmul requires ember_qround*/
/* Folded QDQ Mul: y = zy + round((a - za) * (b - zb) * mult * 2^-shift); r = [za, zb, mult, shift, zy, lo, hi],
 * broadcasting as ember_qadd. */
static void ember_qmul(uint8_t *y, const uint8_t *a, const uint8_t *b, ptrdiff_t n, ptrdiff_t b_div,
                       ptrdiff_t b_mod, int sgn, const int32_t *r) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) {
        const int32_t p = (ember_q_load(a, i, sgn) - r[0]) * (ember_q_load(b, (i / b_div) % b_mod, sgn) - r[1]);
        y[i] = (uint8_t)ember_q_requant(p, r[2], r[3], r[4], r[5], r[6]);
    }
}
/*@end*/

/*@kernel ember_qlut requires ember_prelude*/
/* y = table[x]: any function of one quantized value (sigmoid, tanh, hard-swish, a change of scale). */
static void ember_qlut(uint8_t *y, const uint8_t *x, ptrdiff_t n, const uint8_t *table) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) y[i] = table[x[i]];
}
/*@end*/

/*@kernel ember_qavgpool requires ember_qround*/
/* Average pooling of int8 (sgn = 1) / uint8 bytes with the pool.c geometry table p: the window sum of
 * (x - zx) requantised with the multiplier of its divisor, the count of taps inside the input
 * (include_pad = 0) or inside the padded input (1), as ember_avgpool_f32 counts them; the tables
 * mult/shift are indexed by that count (0 .. kernel volume). Padding adds 0 to the sum. */
static void ember_qavgpool(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t NC, int sgn, int zx,
                           int include_pad, const int32_t *mult, const int32_t *shift, const int32_t *out) {
    const int D = p[0], H = p[1], W = p[2];
    ptrdiff_t nc;
    int od, oh, ow, kd, kh, kw;
    for (nc = 0; nc < NC; ++nc) {
        const uint8_t *xc = x + nc * (ptrdiff_t)D * H * W;
        for (od = 0; od < p[6]; ++od)
            for (oh = 0; oh < p[7]; ++oh)
                for (ow = 0; ow < p[8]; ++ow) {
                    int32_t sum = 0, count = 0, padded = 0;
                    for (kd = 0; kd < p[3]; ++kd) {
                        const int id = od * p[9] - p[15] + kd * p[12];
                        const int din = id >= 0 && id < D, dpad = id >= -p[15] && id < D + p[18];
                        for (kh = 0; kh < p[4]; ++kh) {
                            const int ih = oh * p[10] - p[16] + kh * p[13];
                            const int hin = din && ih >= 0 && ih < H, hpad = dpad && ih >= -p[16] && ih < H + p[19];
                            for (kw = 0; kw < p[5]; ++kw) {
                                const int iw = ow * p[11] - p[17] + kw * p[14];
                                if (hpad && iw >= -p[17] && iw < W + p[20]) ++padded;
                                if (hin && iw >= 0 && iw < W) {
                                    sum += ember_q_load(xc, ((ptrdiff_t)id * H + ih) * W + iw, sgn) - zx;
                                    ++count;
                                }
                            }
                        }
                    }
                    count = include_pad ? padded : count;
                    *y++ = (uint8_t)ember_q_requant(sum, mult[count], shift[count], out[0], out[1], out[2]);
                }
    }
}
/*@end*/

/*@kernel ember_qmaxpool requires ember_prelude*/
/* 2-D max pooling of int8 (sgn) or uint8 planes (pool.c's geometry table p; no indices). Per output row,
 * the input rows under the window are maxed column by column into one padded row, which is split into
 * its stride phases (column c at phase c % sw, index c / sw); then each window column is one contiguous
 * run of a phase, so every loop vectorizes. Bytes compare in the uint8 view (int8 ^ 0x80 keeps the
 * order); padding is the lowest value, as ONNX MaxPool ignores it. row: 2 * sw * ember_qmaxpool_phase bytes
 * (the row, then its phases). */
static int ember_qmaxpool_phase(const int32_t *p) { /* columns per stride phase */
    return ((p[8] - 1) * p[11] + (p[5] - 1) * p[14] + p[11]) / p[11];
}
static void ember_qmaxpool_max(uint8_t *EMBER_RESTRICT d, const uint8_t *EMBER_RESTRICT s, int n, uint8_t flip) {
    int i;
    for (i = 0; i < n; ++i) {
        const uint8_t v = s[i] ^ flip;
        d[i] = v > d[i] ? v : d[i];
    }
}
static void ember_qmaxpool(uint8_t *y, const uint8_t *x, const int32_t *p, ptrdiff_t NC, int sgn, uint8_t *row) {
    const int H = p[1], W = p[2], KH = p[4], KW = p[5], OH = p[7], OW = p[8], sh = p[10], sw = p[11];
    const int dh = p[13], dw = p[14], pt = p[16], pl = p[17], wq = ember_qmaxpool_phase(p);
    const int wpad = sw * wq, c0 = pl < wpad ? pl : wpad, c1 = pl + W < wpad ? pl + W : wpad;
    const uint8_t flip = sgn ? 0x80 : 0;
    uint8_t *phases = row + wpad;
    ptrdiff_t nc;
    int oh, ow, kh, kw, c, ph;
    for (nc = 0; nc < NC; ++nc)
        for (oh = 0; oh < OH; ++oh) {
            const uint8_t *xc = x + nc * H * W;
            uint8_t *yr = y + (nc * OH + oh) * OW;
            for (c = 0; c < wpad; ++c) row[c] = 0;
            for (kh = 0; kh < KH; ++kh) {
                const int ih = oh * sh - pt + kh * dh;
                if (ih >= 0 && ih < H) ember_qmaxpool_max(row + c0, xc + (ptrdiff_t)ih * W + c0 - pl, c1 - c0, flip);
            }
            if (sw == 2) /* a constant stride, which compilers vectorize */
                for (c = 0; c < wq; ++c) {
                    phases[c] = row[2 * c];
                    phases[wq + c] = row[2 * c + 1];
                }
            else if (sw > 1)
                for (ph = 0; ph < sw; ++ph)
                    for (c = 0; c < wq; ++c) phases[ph * wq + c] = row[c * sw + ph];
            for (ow = 0; ow < OW; ++ow) yr[ow] = 0;
            for (kw = 0; kw < KW; ++kw) {
                const int off = kw * dw;
                ember_qmaxpool_max(yr, sw > 1 ? phases + (off % sw) * wq + off / sw : row + off, OW, 0);
            }
            for (ow = 0; ow < OW; ++ow) yr[ow] ^= flip;
        }
}
/*@end*/

/*@kernel ember_qmean requires ember_qround*/
/* GlobalAveragePool / ReduceMean over each of NC planes of S int8 (sgn = 1) / uint8 bytes:
 * zy + round((sum - S*zx) * mult * 2^-shift), the multiplier folding x_scale / (y_scale * S). */
static void ember_qmean(uint8_t *y, const uint8_t *x, ptrdiff_t NC, ptrdiff_t S, int sgn, int zx, int32_t mult,
                        int shift, const int32_t *out) {
    ptrdiff_t nc, i;
    for (nc = 0; nc < NC; ++nc) {
        int64_t sum = 0;
        for (i = 0; i < S; ++i) sum += ember_q_load(x, nc * S + i, sgn);
        y[nc] = (uint8_t)ember_q_requant(sum - (int64_t)S * zx, mult, shift, out[0], out[1], out[2]);
    }
}
/*@end*/
