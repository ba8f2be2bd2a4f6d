/*@kernel ember_qarm_conv_mve8 requires ember_qarm_conv*/
/* Cortex-M55 (Helium) convolution on int8 columns: VMLADAVA.S8 adds 16 products of int8 weights and int8
 * inputs to a scalar sum, twice the 8 of ember_qarm_conv_mve's VMLADAVA.S16, and the columns stay bytes.
 * They hold the input bytes themselves as int8 (uint8 tensors flipped by 0x80: s = b - 128), not their
 * difference from the zero point: sum w (s - zs) = sum w s - zs sum w, and the second term is taken from
 * the bias at compile time (ops/qarm.py `mve8_bias`), so the sums are the same integers as every other
 * path's and the requantisation is ember_qa_requant's. A window's positions outside the image hold the zero
 * point's own byte (s = zs: they add nothing). Weights (`mve8_weights`): rows in pairs, K rounded up to 16
 * (zeros), the pair's two rows interleaved 16 bytes at a time. Columns: two output pixels' windows, t0 and
 * t1, Kp bytes each (scratch 2 * Kp). */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QM8 1
#else
#define EMBER_QM8 0
#endif
#if EMBER_QM8
/* t[0 .. K): the window of output pixel (oh, ow) in ember_qa_col's order (channel, kernel row, kernel
 * column), each byte ^ flip, zb ^ flip outside the image. A window inside the image: with `win` (its KH * KW
 * <= 16 byte offsets, ember_qm8_conv_t) one gather per channel (the first layer's 3 x 3 x 3: 3 gathers where
 * copying took 9 rows), else one predicated load and store per kernel row (KW <= 16, dilation 1 across). */
static void ember_qm8_col(int8_t *EMBER_RESTRICT t, const uint8_t *EMBER_RESTRICT xn, uint8_t flip, uint8_t zb,
                          const int32_t *p, int oh, int ow, const uint8x16_t *win) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], Wd = p[EMBER_GEO_IN_W];
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], DH = p[EMBER_GEO_DIL_H], DW = p[EMBER_GEO_DIL_W];
    const int ih0 = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H], iw0 = ow * p[EMBER_GEO_STRIDE_W] - p[EMBER_GEO_PAD_W];
    const ptrdiff_t S = (ptrdiff_t)H * Wd, RS = (ptrdiff_t)DH * Wd;
    const int inside = ih0 >= 0 && iw0 >= 0 && ih0 + (KH - 1) * DH < H && iw0 + (KW - 1) * DW < Wd;
    const uint8x16_t vf = vdupq_n_u8(flip);
    int c, i, j;
    if (inside && win) {
        const int kk = KH * KW;
        const mve_pred16_t live = vctp8q((uint32_t)kk);
        const uint8_t *xc = xn + (ptrdiff_t)ih0 * Wd + iw0;
        for (c = 0; c < C; ++c, xc += S, t += kk)
            vstrbq_p_u8((uint8_t *)t, veorq_u8(vldrbq_gather_offset_u8(xc, *win), vf), live);
        return;
    }
    if (inside && DW == 1 && KW <= 16) {
        const mve_pred16_t row = vctp8q((uint32_t)KW);
        const uint8_t *xc = xn + (ptrdiff_t)ih0 * Wd + iw0;
        for (c = 0; c < C; ++c, xc += S) {
            const uint8_t *xr = xc;
            for (i = 0; i < KH; ++i, xr += RS, t += KW)
                vstrbq_p_u8((uint8_t *)t, veorq_u8(vldrbq_z_u8(xr, row), vf), row);
        }
        return;
    }
    for (c = 0; c < C; ++c)
        for (i = 0; i < KH; ++i) {
            const int ih = ih0 + i * DH;
            for (j = 0; j < KW; ++j) {
                const int iw = iw0 + j * DW;
                const int in = ih >= 0 && ih < H && iw >= 0 && iw < Wd;
                *t++ = (int8_t)((in ? xn[c * S + (ptrdiff_t)ih * Wd + iw] : zb) ^ flip);
            }
        }
}
/* t[0 .. C) (then zeros up to 16-channel steps): pixel xq of C channel planes S bytes apart, each byte ^
 * flip. Where 15 * S fits 16 bits, 16 channels per step: two halfword-offset byte gathers (even and odd
 * channels) narrowed into the bottom and top bytes of one vector. */
static void ember_qm8_direct(int8_t *EMBER_RESTRICT t, const uint8_t *EMBER_RESTRICT xq, ptrdiff_t S, int C,
                             uint8_t flip) {
    int c = 0;
    if (S <= 0xffff / 15) {
        const uint16x8_t even = vmulq_n_u16(vidupq_n_u16(0, 2), (uint16_t)S);
        const uint16x8_t odd = vaddq_n_u16(even, (uint16_t)S);
        const uint8x16_t vf = vdupq_n_u8(flip);
        uint8x16_t v = vdupq_n_u8(0);
        for (; c < C; c += 16, xq += 16 * S) { /* the last step's lanes past C gather nothing (0) */
            const int n = C - c;
            v = vmovnbq_u16(v, vldrbq_gather_offset_z_u16(xq, even, vctp16q((uint32_t)(n + 1) / 2)));
            v = vmovntq_u16(v, vldrbq_gather_offset_z_u16(xq, odd, vctp16q((uint32_t)n / 2)));
            vst1q_u8((uint8_t *)t + c, veorq_u8(v, vf));
        }
        return;
    }
    for (; c < C; ++c, xq += S) t[c] = (int8_t)(*xq ^ flip);
}
/* y[m * rs + j] for the M output channels and the n (1 or 2) columns t0, t1 (Kp bytes; t1 read but unused
 * where n = 1); `fast` (a constant where inlined): the fast requantisation, four sums per vector. */
EMBER_INLINE void ember_qm8_gemm_t(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, const int8_t *t0,
                                   const int8_t *t1, const int32_t *rq, const int32_t *out, int fast) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    const uint32_t po[4] = {0, 0, 4, 4}, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32x4_t pairs = vld1q_u32(po), yoff = vld1q_u32(yo);
    const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    const int8_t *const tend = t0 + Kp;
    int m;
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp, rq += 8) {
        const int two = m + 1 < M;
        const int8_t *w = W, *x0 = t0, *x1 = t1;
        int32_t a00 = rq[3], a01 = rq[3], a10 = two ? rq[7] : 0, a11 = a10;
        while (x0 != tend) {
            const int8x16_t wa = vld1q_s8(w), wb = vld1q_s8(w + 16), c0 = vld1q_s8(x0), c1 = vld1q_s8(x1);
            a00 = vmladavaq_s8(a00, wa, c0);
            a01 = vmladavaq_s8(a01, wa, c1);
            a10 = vmladavaq_s8(a10, wb, c0);
            a11 = vmladavaq_s8(a11, wb, c1);
            w += 32;
            x0 += 16;
            x1 += 16;
        }
        if (fast && n > 1 && two) { /* lanes (m, p) (m, p+1) (m+1, p) (m+1, p+1), as ember_qa_mgemm_t */
            int32x4_t v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
            const int32x4_t mult = vldrwq_gather_shifted_offset_s32(rq, pairs);
            const int32x4_t sh = vldrwq_gather_shifted_offset_s32(rq + 1, pairs);
            v = vaddq_n_s32(vrshlq_s32(vmulhq_s32(v, mult), vnegq_s32(sh)), zp); /* VRSHL adds ra itself */
            vstrbq_scatter_offset_s32((int8_t *)y, yoff, vminq_s32(vmaxq_s32(v, vlo), vhi));
            continue;
        }
        y[0] = ember_qa_requant(a00, rq, zp, lo, hi, fast);
        if (n > 1) y[1] = ember_qa_requant(a01, rq, zp, lo, hi, fast);
        if (two) {
            y[rs] = ember_qa_requant(a10, rq + 4, zp, lo, hi, fast);
            if (n > 1) y[rs + 1] = ember_qa_requant(a11, rq + 4, zp, lo, hi, fast);
        }
    }
}
/* ember_qm8_gemm_t's common case: the fast requantisation, two columns, M2 whole channel pairs (G = Kp / 16),
 * the products in assembly: the first 16 k by VMLADAV (no sums to load first), the other G - 1 steps in a
 * low-overhead loop of 9 instructions per 64 multiply-adds; the bias joins in the vector, as the multipliers
 * and shifts do, by gathers from a written-back address vector (as in ember_qa_mgemm22). About 18
 * instructions per channel pair around the products (compiled: 10 per step and about 40 around). VMLADAV
 * sums into even registers only: the four sums are bound to r0, r2, r4, r6. */
EMBER_INLINE void ember_qm8_gemm22(uint8_t *y, ptrdiff_t rs, const int8_t *W, int M2, int G, const int8_t *t0,
                                   const int8_t *t1, const int32_t *rq, const int32_t *out) {
    /* base: the addresses of the biases rq[3] rq[3] rq[7] rq[7] of the pair before the first */
    const uint32_t r0 = (uint32_t)(uintptr_t)rq - 32 + 12, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32_t bo[4] = {r0, r0, r0 + 16, r0 + 16};
    const uint32x4_t yoff = vld1q_u32(yo);
    uint32x4_t base = vld1q_u32(bo);
    const int32x4_t vzp = vdupq_n_s32(out[0]), vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int8_t *w = W, *const wend = W + (ptrdiff_t)M2 * 32 * G;
    const int g1 = G - 1;
    while (w != wend) {
        register int32_t a00 __asm__("r0");
        register int32_t a01 __asm__("r2");
        register int32_t a10 __asm__("r4");
        register int32_t a11 __asm__("r6");
        const int8_t *x0 = t0, *x1 = t1;
        int32x4_t v;
        __asm__("vldrb.u8 q0, [%[w]], #16\n\t"
                "vldrb.u8 q1, [%[x0]], #16\n\t"
                "vldrb.u8 q2, [%[x1]], #16\n\t"
                "vmladav.s8 %[a00], q0, q1\n\t"
                "vmladav.s8 %[a01], q0, q2\n\t"
                "vldrb.u8 q0, [%[w]], #16\n\t"
                "vmladav.s8 %[a10], q0, q1\n\t"
                "vmladav.s8 %[a11], q0, q2\n\t"
                "wls lr, %[g1], 2f\n"
                "1:\n\t"
                "vldrb.u8 q0, [%[w]], #16\n\t"
                "vldrb.u8 q1, [%[x0]], #16\n\t"
                "vldrb.u8 q2, [%[x1]], #16\n\t"
                "vmlava.s8 %[a00], q0, q1\n\t"
                "vmlava.s8 %[a01], q0, q2\n\t"
                "vldrb.u8 q0, [%[w]], #16\n\t"
                "vmlava.s8 %[a10], q0, q1\n\t"
                "vmlava.s8 %[a11], q0, q2\n\t"
                "le lr, 1b\n"
                "2:"
                : [a00] "=&r"(a00), [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11), [w] "+&r"(w),
                  [x0] "+&r"(x0), [x1] "+&r"(x1)
                : [g1] "r"(g1)
                : "q0", "q1", "q2", "lr", "memory");
        v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
        v = vmulhq_s32(vaddq_s32(v, vldrwq_gather_base_wb_s32(&base, 32)), vldrwq_gather_base_s32(base, -12));
        v = vrshlq_s32(v, vnegq_s32(vldrwq_gather_base_s32(base, -8))); /* + ra (2^(sh-1)), >> sh */
        v = vminq_s32(vmaxq_s32(vaddq_s32(v, vzp), vlo), vhi);
        vstrbq_scatter_offset_s32((int8_t *)y, yoff, v);
        y += 2 * rs;
    }
}
/* The M outputs of the columns t0 (and t1 where `two`) into y[m * rs + j], by ember_qm8_gemm22 in the common case. */
EMBER_INLINE void ember_qm8_product(uint8_t *y, ptrdiff_t rs, int two, const int8_t *W, int M, int Kp, const int8_t *t0,
                                    const int8_t *t1, const int32_t *rq, const int32_t *out, int fast) {
    if (fast && two) {
        const int M2 = M / 2;
        ember_qm8_gemm22(y, rs, W, M2, Kp / 16, t0, t1, rq, out);
        if (M & 1)
            ember_qm8_gemm_t(y + 2 * M2 * rs, rs, 2, W + (ptrdiff_t)M2 * 2 * Kp, 1, Kp, t0, t1, rq + 8 * M2, out, 1);
    } else if (fast)
        ember_qm8_gemm_t(y, rs, 1 + two, W, M, Kp, t0, two ? t1 : t0, rq, out, 1);
    else
        ember_qm8_gemm_t(y, rs, 1 + two, W, M, Kp, t0, two ? t1 : t0, rq, out, 0);
}
#endif
/* Convolution (2-D, one group) of N images, two output pixels at a time, as ember_qa_conv_t (its staging of
 * a fused residual add included: fin, res, radd, stage); xz: the input's zero point (its byte pads). */
static void ember_qm8_conv_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                             const int8_t *W, const int32_t *rq, const int32_t *out, int8_t *cols,
                             ember_qa_res_fn fin, const uint8_t *res, const int32_t *radd, uint8_t *stage) {
#if EMBER_QM8
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int K = C * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + 15) & ~15, P = OH * OW;
    const ptrdiff_t S = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const int direct = K == C && S == P && p[EMBER_GEO_PAD_H] == 0 && p[EMBER_GEO_PAD_W] == 0;
    const int fast = ember_qa_mode(out) != 0;
    const uint8_t flip = sgn ? 0u : 0x80u, zb = (uint8_t)xz;
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], RS = p[EMBER_GEO_DIL_H] * p[EMBER_GEO_IN_W];
    int8_t *t0 = cols, *t1 = cols + Kp;
    uint8x16_t win = vdupq_n_u8(0); /* a small window's byte offsets (ember_qm8_col), lanes past it 0 */
    int n, q, k, oh = 0, ow = 0;
    const int gather = !direct && KH * KW <= 16 && (KH - 1) * RS + (KW - 1) * p[EMBER_GEO_DIL_W] <= 255;
    if (gather) {
        uint8_t o[16];
        for (k = 0; k < 16; ++k) o[k] = (uint8_t)(k < KH * KW ? k / KW * RS + k % KW * p[EMBER_GEO_DIL_W] : 0);
        win = vld1q_u8(o);
    }
    for (k = K; k < Kp; ++k) t0[k] = t1[k] = 0; /* their weights are 0: any value, but a defined one */
    for (n = 0; n < N; ++n) {
        const uint8_t *xn = x + (ptrdiff_t)n * C * S;
        uint8_t *yn = y + (ptrdiff_t)n * M * P;
        const uint8_t *rn = res ? res + (ptrdiff_t)n * M * P : 0;
        for (q = 0; q < P; q += 2) {
            const int two = q + 1 < P;
            EMBER_QA_STAGE_Q(yq, rs);
            if (direct) {
                ember_qm8_direct(t0, xn + q, S, C, flip);
                if (two) ember_qm8_direct(t1, xn + q + 1, S, C, flip);
            } else {
                ember_qm8_col(t0, xn, flip, zb, p, oh, ow, gather ? &win : 0);
                if (++ow == OW) ow = 0, ++oh;
                if (two) {
                    ember_qm8_col(t1, xn, flip, zb, p, oh, ow, gather ? &win : 0);
                    if (++ow == OW) ow = 0, ++oh;
                }
            }
            ember_qm8_product(yq, rs, two, W, M, Kp, t0, t1, rq, out, fast);
        }
        EMBER_QA_STAGE_END();
        oh = ow = 0;
    }
#else /* only a Helium target selects this kernel (passes/mcu_kernels.py) */
    (void)y, (void)x, (void)sgn, (void)xz, (void)p, (void)N, (void)M, (void)W, (void)rq, (void)out, (void)cols;
    (void)fin, (void)res, (void)radd, (void)stage;
#endif
}
EMBER_UNUSED static void ember_qarm_conv_mve8(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p,
                                              int N, int M, const int8_t *W, const int32_t *rq, const int32_t *out,
                                              int8_t *cols) {
    ember_qm8_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_conv_mve8_add requires ember_qarm_conv_mve8 ember_qa_res*/
/* ember_qarm_conv_mve8, then y = QAdd(y, res) as ember_qarm_conv_add. */
static void ember_qarm_conv_mve8_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                     int M, const int8_t *W, const int32_t *rq, const int32_t *out, int8_t *cols,
                                     const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qm8_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, ember_qa_res_rows, res, radd, stage);
}
/*@end*/

/*@kernel ember_qarm_conv_mve8_hwc requires ember_qarm_conv_mve8 ember_qarm_conv_hwc*/
/* ember_qarm_conv_mve8 at a channels-last model's edge (EMBER_QA_LAY), as qarm_conv.c's ember_qarm_conv_hwc: each
 * window from the NHWC bytes in the order kernel row, kernel column, channel (the weights' `tap_major` order; a
 * kernel row inside the image one run of KW * C bytes, 16 per predicated step), or from the NCHW planes; an NHWC
 * output through a pixel pair's stage. Scratch: 2 * Kp + 2 * M bytes. */
#if EMBER_QM8
/* n bytes from s ^ flip (s 0: the byte b) into t, 16 per predicated step. */
static void ember_qm8_copy(int8_t *EMBER_RESTRICT t, const uint8_t *EMBER_RESTRICT s, int n, uint8_t flip, uint8_t b) {
    const uint8x16_t vf = vdupq_n_u8(flip), vb = vdupq_n_u8((uint8_t)(b ^ flip));
    int i;
    for (i = 0; i < n; i += 16) {
        const mve_pred16_t live = vctp8q((uint32_t)(n - i));
        vstrbq_p_u8((uint8_t *)t + i, s ? veorq_u8(vldrbq_z_u8(s + i, live), vf) : vb, live);
    }
}
static void ember_qm8_col_hwc(int8_t *EMBER_RESTRICT t, const uint8_t *EMBER_RESTRICT xn, uint8_t flip, uint8_t zb,
                              const int32_t *p, int oh, int ow) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], Wd = p[EMBER_GEO_IN_W];
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], DH = p[EMBER_GEO_DIL_H], DW = p[EMBER_GEO_DIL_W];
    const int ih0 = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H], iw0 = ow * p[EMBER_GEO_STRIDE_W] - p[EMBER_GEO_PAD_W];
    const int run = DW == 1 && iw0 >= 0 && iw0 + KW <= Wd;
    int i, j;
    for (i = 0; i < KH; ++i, t += KW * C) {
        const int ih = ih0 + i * DH;
        if (ih < 0 || ih >= H)
            ember_qm8_copy(t, 0, KW * C, flip, zb);
        else if (run)
            ember_qm8_copy(t, xn + ((ptrdiff_t)ih * Wd + iw0) * C, KW * C, flip, zb);
        else
            for (j = 0; j < KW; ++j) {
                const int iw = iw0 + j * DW;
                ember_qm8_copy(t + j * C, iw < 0 || iw >= Wd ? 0 : xn + ((ptrdiff_t)ih * Wd + iw) * C, C, flip, zb);
            }
    }
}
#endif
static void ember_qarm_conv_mve8_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                     int M, const int8_t *W, const int32_t *rq, const int32_t *out, int8_t *cols) {
#if EMBER_QM8
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int K = C * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + 15) & ~15, P = OH * OW;
    const ptrdiff_t S = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const int hin = EMBER_QA_HWC_IN(p) != 0, hout = EMBER_QA_HWC_OUT(p) != 0, fast = ember_qa_mode(out) != 0;
    const uint8_t flip = sgn ? 0u : 0x80u, zb = (uint8_t)xz;
    int8_t *t0 = cols, *t1 = cols + Kp;
    uint8_t *const st = (uint8_t *)(t1 + Kp);
    int n, q, k, oh = 0, ow = 0;
    for (k = K; k < Kp; ++k) t0[k] = t1[k] = 0;
    for (n = 0; n < N; ++n) {
        const uint8_t *xn = x + (ptrdiff_t)n * C * S;
        uint8_t *yn = y + (ptrdiff_t)n * M * P;
        for (q = 0; q < P; q += 2) {
            const int two = q + 1 < P;
            if (hin)
                ember_qm8_col_hwc(t0, xn, flip, zb, p, oh, ow);
            else
                ember_qm8_col(t0, xn, flip, zb, p, oh, ow, 0);
            if (++ow == OW) ow = 0, ++oh;
            if (two) {
                if (hin)
                    ember_qm8_col_hwc(t1, xn, flip, zb, p, oh, ow);
                else
                    ember_qm8_col(t1, xn, flip, zb, p, oh, ow, 0);
                if (++ow == OW) ow = 0, ++oh;
            }
            ember_qm8_product(hout ? st : yn + q, hout ? 2 : P, two, W, M, Kp, t0, t1, rq, out, fast);
            if (hout) ember_qa_hwc_store(yn + (ptrdiff_t)q * M, st, M, 1 + two);
        }
        oh = ow = 0;
    }
#else /* only a Helium target selects this kernel (passes/mcu_kernels.py) */
    (void)y, (void)x, (void)sgn, (void)xz, (void)p, (void)N, (void)M, (void)W, (void)rq, (void)out, (void)cols;
#endif
}
/*@end*/

/*@kernel ember_qarm_dw3_mve8 requires ember_qarm_dw3*/
/* Cortex-M55 (Helium) depthwise 3x3 of column stride 1 or 2 on an int8 plane: ember_qarm_dw3's zero-padded
 * plane (ember_qa_dw3_geo), but of the input bytes themselves (^ flip, as ember_qarm_conv_mve8's columns;
 * the border the zero point's byte, its share taken from the bias at compile time, ops/qarm.py `mve8_bias`).
 * One VLDRB gather with byte offsets loads the 3 x 4 window of two neighbouring outputs (3 x 5 at stride 2),
 * and VMLADAV.S8 of it and the channel's two weight vectors (`dw8_weights`: the 9 weights at the first
 * output's lanes and at the second's, zeros elsewhere) gives both sums: 4 outputs from 2 gathers and 4
 * products, requantised in one vector by the fast form. Scratch: the plane, Hp * Wp bytes (Wp <= 125, so
 * that the offsets fit a byte). */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QM8_DW 1
#else
#define EMBER_QM8_DW 0
#endif
#if EMBER_QM8_DW
/* Channel xc into the plane's image positions (ember_qa_dw3_load's rows), 16 bytes per predicated step; the
 * transposed plane's rows, or an NHWC image's, by byte gathers xs_col apart. */
static void ember_qm8_dw_load(int8_t *plane, const ember_qa_dw3_geo_t *g, const uint8_t *xc, uint8_t flip) {
    const int r_end = g->H + g->PH < g->Hp ? g->H + g->PH : g->Hp, wd = g->W + g->PW < g->Wp ? g->W : g->Wp - g->PW;
    const uint8x16_t vf = vdupq_n_u8(flip);
    const int gather = g->xs_col > 1 && g->xs_col <= 255 / 15; /* the transposed plane's, or an NHWC image's */
    const uint8x16_t down = vmulq_n_u8(vidupq_n_u8(0, 1), (uint8_t)(gather ? g->xs_col : 0));
    int r, j;
    for (r = g->PH; r < r_end; ++r) {
        uint8_t *d = (uint8_t *)plane + (ptrdiff_t)r * g->Wp + g->PW;
        const uint8_t *s = xc + (ptrdiff_t)(r - g->PH) * g->xs_row;
        if (g->xs_col == 1) {
            for (j = 0; j < wd; j += 16) {
                const mve_pred16_t live = vctp8q((uint32_t)(wd - j));
                vstrbq_p_u8(d + j, veorq_u8(vldrbq_z_u8(s + j, live), vf), live);
            }
        } else if (gather) {
            for (j = 0; j < wd; j += 16, s += 16 * g->xs_col) {
                const mve_pred16_t live = vctp8q((uint32_t)(wd - j));
                vstrbq_p_u8(d + j, veorq_u8(vldrbq_gather_offset_z_u8(s, down, live), vf), live);
            }
        } else {
            for (j = 0; j < wd; ++j, s += g->xs_col) d[j] = (uint8_t)(*s ^ flip);
        }
    }
}
/* One channel's output rows from its plane: 4 outputs per step (the last ones predicated), stored along a row
 * or, `t` (a constant where inlined), ys_col apart (down a column of the map for the transposed plane, or at
 * an NHWC output's pixel stride). The bias, shift and
 * zero point stay scalars (VADD, VRSHL by a register): 8 vectors live in the loop, no spills. */
EMBER_INLINE void ember_qm8_dw_rows(uint8_t *yc, const int8_t *plane, const ember_qa_dw3_geo_t *g, uint8x16_t offs,
                                    const int8_t *wc, const int32_t *cq, const int32_t *out, int t) {
    const int OW = g->OW, SW = g->SW, Wp = g->Wp;
    const int8x16_t wa = vld1q_s8(wc), wb = vld1q_s8(wc + 16);
    const int32x4_t vm = vdupq_n_s32(cq[0]), vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int32_t b = cq[3], sh = -cq[1], zp = out[0];
    const ptrdiff_t ys = t ? 4 * g->ys_col : 4;
    int oh, ow;
    for (oh = 0; oh < g->OH; ++oh) {
        const int8_t *s0 = plane + (ptrdiff_t)oh * g->SH * Wp;
        uint8_t *yq = yc + oh * g->ys_row;
        for (ow = 0; ow < OW; ow += 4, s0 += 4 * SW, yq += ys) {
            const mve_pred16_t live = vctp32q((uint32_t)(OW - ow));
            const int8x16_t g0 = vldrbq_gather_offset_s8(s0, offs), g1 = vldrbq_gather_offset_s8(s0 + 2 * SW, offs);
            int32x4_t v = vsetq_lane_s32(vmladavq_s8(wb, g1), vsetq_lane_s32(vmladavq_s8(wa, g1),
                          vsetq_lane_s32(vmladavq_s8(wb, g0), vdupq_n_s32(vmladavq_s8(wa, g0)), 1), 2), 3);
            v = vaddq_n_s32(vrshlq_n_s32(vmulhq_s32(vaddq_n_s32(v, b), vm), sh), zp); /* VRSHL: ra's rounding */
            v = vminq_s32(vmaxq_s32(v, vlo), vhi);
            if (t) /* a column of the map: outputs ys_col apart */
                vstrbq_scatter_offset_p_s32((int8_t *)yq, vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ys_col), v, live);
            else
                vstrbq_p_s32((int8_t *)yq, v, live);
        }
    }
}
#endif
/* `hwc` (a constant where inlined): ember_qarm_dw3_mve8_hwc's layouts (EMBER_QA_LAY): the plane's rows gathered at,
 * the outputs scattered to, the pixel stride C on an NHWC side. */
EMBER_INLINE void ember_qm8_dw_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                 const int8_t *W, const int32_t *rq, const int32_t *out, int8_t *plane, int hwc) {
#if EMBER_QM8_DW
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo_lay(p, 1, hwc);
    const int C = p[EMBER_GEO_C], Ww = g.SW == 1 ? 4 : 5;
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    const ptrdiff_t xs_ch = ember_qa_dw3_chan(p, hwc, 4, in_plane), ys_ch = ember_qa_dw3_chan(p, hwc, 8, out_plane);
    const uint8_t flip = sgn ? 0u : 0x80u;
    uint8_t off[16];
    uint8x16_t offs;
    int n, c, i;
    for (i = 0; i < 16; ++i) off[i] = (uint8_t)(i < 3 * Ww ? i / Ww * g.Wp + i % Ww : 0); /* lanes past 3 rows: w 0 */
    offs = vld1q_u8(off);
    for (i = 0; i < g.Hp * g.Wp; ++i) plane[i] = (int8_t)((uint8_t)xz ^ flip);
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            uint8_t *yc = y + (ptrdiff_t)n * C * out_plane + c * ys_ch;
            ember_qm8_dw_load(plane, &g, x + (ptrdiff_t)n * C * in_plane + c * xs_ch, flip);
            if (g.ys_col != 1)
                ember_qm8_dw_rows(yc, plane, &g, offs, W + 32 * c, rq + 4 * c, out, 1);
            else
                ember_qm8_dw_rows(yc, plane, &g, offs, W + 32 * c, rq + 4 * c, out, 0);
        }
#else /* only a Helium target selects this kernel (passes/mcu_kernels.py) */
    (void)y, (void)x, (void)sgn, (void)xz, (void)p, (void)N, (void)W, (void)rq, (void)out, (void)plane, (void)hwc;
#endif
}
EMBER_UNUSED static void ember_qarm_dw3_mve8(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p,
                                             int N, const int8_t *W, const int32_t *rq, const int32_t *out,
                                             int8_t *plane) {
    ember_qm8_dw_t(y, x, sgn, xz, p, N, W, rq, out, plane, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_mve8_hwc requires ember_qarm_dw3_mve8*/
/* ember_qarm_dw3_mve8 at a channels-last model's edge, as qarm_dw3.c's ember_qarm_dw3_hwc. */
static void ember_qarm_dw3_mve8_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                    const int8_t *W, const int32_t *rq, const int32_t *out, int8_t *plane) {
    ember_qm8_dw_t(y, x, sgn, xz, p, N, W, rq, out, plane, 1);
}
/*@end*/
