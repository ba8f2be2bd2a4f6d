/* The Cortex-M int8 kernels (qarm.c lists their files): the convolution (ember_qarm_conv: ember_qa_conv_t, which
 * the Helium and Cortex-M0/M3 convolutions share, on the columns of qarm_cols.c and the SMLAD product of
 * qarm_gemm4.c) and its fused residual add (ember_qa_res, ember_qarm_conv_add). */

/*@kernel ember_qarm_conv requires ember_qa_cols*/
/* Convolution (2-D, one group) of N images: y[n][m][pixel] requantised from W times the windows, two output
 * pixels at a time: their columns built plainly in t (2 x Kp int16, Kp: K rounded up to `kq`), then
 * handed to `gemm` (qarm_gemm4.c's SMLAD product, which interleaves them first, or Helium's). A 1x1 stride-1
 * unpadded convolution reads its columns straight from the channel planes (`dsp`: two at a time already
 * interleaved for ember_qa_gemm2, ember_qa_direct2). Scratch: 8 * Kp bytes. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE_COLS 1 /* Helium gathers for a 1x1 layer's columns (any product) */
#else
#define EMBER_QA_MVE_COLS 0
#endif
typedef void (*ember_qa_gemm_fn)(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                                 const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out);
/* A residual add fused into the requantisation (ember_qarm_conv_add): ember_qa_conv_t stores the outputs of
 * EMBER_QA_STAGE pixels in `stage` (M rows of EMBER_QA_STAGE bytes), then `fin` writes y[m * ys + j] =
 * QAdd(stage[m][j], r[m * ys + j]) for j < n: element by element, so y may be r (the output in place over
 * the residual, ops/qconv_add.py). */
#define EMBER_QA_STAGE 16
typedef void (*ember_qa_res_fn)(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n,
                                int sgn, const int32_t *radd);
/* A fused residual add's staging, in the loops over pixel pairs q of ember_qa_conv_t and qarm_mve.c's
 * ember_qm8_conv_t (an image's outputs yn, its residual rn, their P, M, sgn, fin, res, radd, stage): YQ, RS
 * where the outputs of pixels q, q + 1 go, y's rows P apart or the stage's EMBER_QA_STAGE apart; where q
 * starts a stage, the full one before it is finished into y first. Macros: as inline functions they
 * changed how the compiler laid out the loop. */
#define EMBER_QA_STAGE_Q(YQ, RS)                                                                            \
    uint8_t *const YQ = res ? stage + (q & (EMBER_QA_STAGE - 1)) : yn + q;                                  \
    const ptrdiff_t RS = res ? EMBER_QA_STAGE : P;                                                          \
    if (res && q && (q & (EMBER_QA_STAGE - 1)) == 0)                                                        \
        fin(yn + q - EMBER_QA_STAGE, P, stage, rn + q - EMBER_QA_STAGE, M, EMBER_QA_STAGE, sgn, radd)
/* After those loops: the image's last, maybe partial, stage into y. */
#define EMBER_QA_STAGE_END()                                                                                \
    if (res && P) {                                                                                         \
        const int q0 = (P - 1) & ~(EMBER_QA_STAGE - 1);                                                     \
        fin(yn + q0, P, stage, rn + q0, M, P - q0, sgn, radd);                                              \
    }
EMBER_INLINE void ember_qa_conv_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                  const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols, int kq,
                                  ember_qa_gemm_fn gemm, int dsp, ember_qa_res_fn fin, const uint8_t *res,
                                  const int32_t *radd, uint8_t *stage) {
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int K = C * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + kq - 1) / kq * kq, P = OH * OW;
    const ptrdiff_t S = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const int direct = K == C && S == P && p[EMBER_GEO_PAD_H] == 0 && p[EMBER_GEO_PAD_W] == 0;
    const int pairs = p[EMBER_GEO_STRIDE_W] <= 2 && p[EMBER_GEO_K_W] == 3 && p[EMBER_GEO_DIL_W] == 1; /* col2's */
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    int16_t *t0 = cols + 2 * Kp, *t1 = t0 + Kp;
    int n, q, c, oh = 0, ow = 0, built;
    int16_t *il = 0; /* ember_qa_col2's interleaved columns (cols) where ember_qa_gemm42b takes them */
#if EMBER_HAVE_ARM_DSP
    /* the common case: ember_qa_gemm42s straight, its context set once (ember_qa_gemm2h's checks and context
     * cost about 80 instructions per column pair) */
    ember_qa_q42_t q42;
    const int s42 = dsp && M % 4 == 0 && out[3] != 3 && ember_qa_mode(out) == 2 && out[0] == 0;
    q42.cols = cols, q42.kb = 8 * Kp, q42.rq = rq, q42.w = (const int16_t *)(const void *)W;
    q42.wend = q42.w + (ptrdiff_t)M * Kp, q42.entry = 0, q42.bq = rq + 4 * M; /* ops/qarm.py `_tables`' pairs */
    const ember_qa_q42_fn g42b = Kp <= 64 ? ember_qa_gemm42b1 : ember_qa_gemm42b; /* one pass, or more */
    /* ops/qarm.py `_tables`' fold: a 1x1 layer's bias pairs hold the zero point's share (rq[6 M] = 1), so that
     * ember_qa_direct2 leaves the bytes' values as they are */
    const int fz = s42 && direct && rq[6 * M];
    if (s42) il = cols;
    const int s2i = s42 && !direct && p[EMBER_GEO_STRIDE_W] == 2 && p[EMBER_GEO_K_W] == 3 && p[EMBER_GEO_DIL_W] == 1;
    const int SH = p[EMBER_GEO_STRIDE_H], PH = p[EMBER_GEO_PAD_H], PW = p[EMBER_GEO_PAD_W], KH = p[EMBER_GEO_K_H];
    const int DH = p[EMBER_GEO_DIL_H], IH = p[EMBER_GEO_IN_H], IW = p[EMBER_GEO_IN_W];
    const ptrdiff_t RS = (ptrdiff_t)DH * IW;
#endif
    for (n = 0; n < N; ++n) {
        const uint8_t *xn = x + (ptrdiff_t)n * C * S;
        uint8_t *yn = y + (ptrdiff_t)n * M * P;
        const uint8_t *rn = res ? res + (ptrdiff_t)n * M * P : 0;
        q = 0;
#if EMBER_HAVE_ARM_DSP
        if (s42 && direct && !res) { /* a 1x1 layer's column pairs, nothing else to track */
            q42.rs = (int32_t)P;
            if (fz && C % 4 == 0) { /* four pixels' columns at a time, the second pair's where t0, t1 would be */
                for (; q + 3 < P; q += 4) {
                    ember_qa_direct4(cols, t0, xn + q, S, C, flip);
                    q42.y = yn + q, q42.cols = cols;
                    g42b(&q42);
                    q42.y = yn + q + 2, q42.cols = t0;
                    g42b(&q42);
                }
                q42.cols = cols;
            }
            for (; q + 1 < P; q += 2) {
                ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, fz);
                q42.y = yn + q;
                g42b(&q42);
            }
        }
#endif
        for (; q < P; q += 2) {
            const int two = q + 1 < P;
            built = 0;
            EMBER_QA_STAGE_Q(yq, rs);
            if (dsp && direct && two) { /* SMLAD's interleaved columns straight from the planes */
#if EMBER_HAVE_ARM_DSP
                if (s42) {
                    ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, fz);
                    q42.y = yq, q42.rs = (int32_t)rs;
                    g42b(&q42);
                    continue;
                }
#endif
                ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, 0);
                ember_qa_gemm2h(yq, rs, 1, 2, (const int16_t *)(const void *)W, M, Kp, cols, rq, out);
                continue;
            }
            if (direct) {
                const uint8_t *xq = xn + q;
                c = 0;
#if EMBER_QA_MVE_COLS /* byte gathers S apart, widened: eight channels of both pixels per step where
                       * the offsets fit 16-bit lanes, otherwise four */
                if ((uint32_t)S <= 0xffffu / 7) {
                    const uint16x8_t offs = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)S);
                    const uint16x8_t vf = vdupq_n_u16((uint16_t)flip), vz = vdupq_n_u16((uint16_t)z2);
                    for (; c < C; c += 8, xq += 8 * S) {
                        const mve_pred16_t live = vctp16q((uint32_t)(C - c));
                        const uint16x8_t b0 = vldrbq_gather_offset_z_u16(xq, offs, live);
                        const uint16x8_t b1 = vldrbq_gather_offset_z_u16(xq + two, offs, live);
                        vstrhq_p_s16(t0 + c, vreinterpretq_s16_u16(vsubq_u16(veorq_u16(b0, vf), vz)), live);
                        vstrhq_p_s16(t1 + c, vreinterpretq_s16_u16(vsubq_u16(veorq_u16(b1, vf), vz)), live);
                    }
                    c = C;
                } else {
                    const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)S);
                    const int32x4_t vf = vdupq_n_s32((int32_t)flip), vz = vdupq_n_s32(z2);
                    for (; c < C; c += 4, xq += 4 * S) {
                        const mve_pred16_t live = vctp32q((uint32_t)(C - c));
                        const int32x4_t b0 = vreinterpretq_s32_u32(vldrbq_gather_offset_z_u32(xq, offs, live));
                        const int32x4_t b1 = vreinterpretq_s32_u32(vldrbq_gather_offset_z_u32(xq + two, offs, live));
                        vstrhq_p_s32(t0 + c, vsubq_s32(veorq_s32(b0, vf), vz), live);
                        vstrhq_p_s32(t1 + c, vsubq_s32(veorq_s32(b1, vf), vz), live);
                    }
                    c = C;
                }
#else
                for (; c < C; ++c, xq += S) {
                    t0[c] = EMBER_QA_VAL(xq[0], flip, z2);
                    t1[c] = EMBER_QA_VAL(xq[two], flip, z2);
                }
#endif
                for (; c < Kp; ++c) t0[c] = t1[c] = 0;
            }
#if EMBER_HAVE_ARM_DSP
            else if (s2i && two && ow + 1 < OW && oh * SH - PH >= 0 && oh * SH - PH + (KH - 1) * DH < IH &&
                     ow * 2 - PW >= 0 && ow * 2 - PW + 4 < IW) {
                /* a stride-2 pair inside the image: ember_qa_col2's interleaved columns with its checks here */
                const uint8_t *xc = xn + (ptrdiff_t)(oh * SH - PH) * IW + ow * 2 - PW;
                if (flip)
                    ember_qa_col2i_t((uint32_t *)(void *)cols, xc, S, RS, C * KH, KH, z2, Kp, 1);
                else
                    ember_qa_col2i_t((uint32_t *)(void *)cols, xc, S, RS, C * KH, KH, z2, Kp, 0);
                if ((ow += 2) == OW) ow = 0, ++oh;
                q42.y = yq, q42.rs = (int32_t)rs;
                g42b(&q42);
                continue;
            }
#endif
            else if (pairs && two && ow + 1 < OW && (built = ember_qa_col2(t0, t1, il, xn, flip, z2, p, oh, ow, Kp))) {
                if ((ow += 2) == OW) ow = 0, ++oh;
            } else {
                ember_qa_col(t0, xn, flip, z2, p, oh, ow, Kp);
                if (++ow == OW) ow = 0, ++oh;
                if (two) {
                    ember_qa_col(t1, xn, flip, z2, p, oh, ow, Kp);
                    if (++ow == OW) ow = 0, ++oh;
                }
            }
#if EMBER_HAVE_ARM_DSP
            if (s42 && two) {
                if (built != 2) ember_qa_pair_cols(cols, t0, t1, Kp);
                q42.y = yq, q42.rs = (int32_t)rs;
                g42b(&q42);
                continue;
            }
#endif
            gemm(yq, rs, 1 + two, W, M, Kp, cols, t0, t1, rq, out);
        }
        EMBER_QA_STAGE_END();
        oh = ow = 0;
    }
}
/* The SMLAD product of ember_qa_conv_t's two plain columns (interleaved first when there are two). */
EMBER_UNUSED static void ember_qa_gemm_dsp(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    if (n == 2) ember_qa_pair_cols(cols, t0, t1, Kp);
    ember_qa_gemm2h(y, rs, 1, n, (const int16_t *)(const void *)W, M, Kp, n == 2 ? cols : t0, rq, out);
}
EMBER_UNUSED static void ember_qarm_conv(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                            const int16_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    /* W: int16 (dsp_weights16), carried through ember_qa_conv_t's byte pointer to ember_qa_gemm2h */
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, (const int8_t *)(const void *)W, rq, out, cols, 4, ember_qa_gemm_dsp, 1,
                    0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qa_res requires ember_qarm_conv ember_qadd*/
/* ember_qa_res_fn: the staged outputs plus the residual, by qpointwise.c's QAdd one channel row at a time. */
static void ember_qa_res_rows(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n, int sgn,
                              const int32_t *radd) {
    int m;
    for (m = 0; m < M; ++m) ember_qadd(y + m * ys, stage + m * EMBER_QA_STAGE, r + m * ys, n, 1, n, sgn, radd);
}
/*@end*/

/*@kernel ember_qarm_conv_add requires ember_qa_res*/
/* ember_qarm_conv, then y = QAdd(y, res) (ops/qconv_add.py): res's element read before y's is written, so
 * y may be res. stage: M * EMBER_QA_STAGE bytes. */
static void ember_qarm_conv_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                const int16_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, (const int8_t *)(const void *)W, rq, out, cols, 4, ember_qa_gemm_dsp, 1,
                    ember_qa_res_rows, res, radd, stage);
}
/*@end*/

/*@kernel ember_qarm_conv_hwc requires ember_qarm_conv*/
/* An NHWC output (EMBER_QA_HWC_OUT): the outputs of pixels q, q + 1, staged as M rows of 2 bytes (st), stored at the
 * pixel stride M (y: pixel q's channel 0; n: 1 or 2 pixels). */
EMBER_INLINE void ember_qa_hwc_store(uint8_t *EMBER_RESTRICT y, const uint8_t *EMBER_RESTRICT st, int M, int n) {
    int m;
    if (n == 2)
        for (m = 0; m < M; ++m) y[m] = st[2 * m], y[M + m] = st[2 * m + 1];
    else
        for (m = 0; m < M; ++m) y[m] = st[2 * m];
}
/* ember_qa_conv_t at a channels-last model's edge (EMBER_QA_LAY, ops/qarm.py reads_nhwc): each pixel's column from
 * the NHWC bytes (ember_qa_col_hwc, in the `tap_major` order of the weights) or the NCHW planes (ember_qa_col), the
 * same products, and where the output is NHWC each pixel pair's outputs through the stage after the columns. Its own
 * kernel, so that the NCHW layers' loop keeps its paths and registers. Scratch: 8 * Kp + 2 * M bytes. */
EMBER_INLINE void ember_qa_conv_hwc_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                      int M, const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                      ember_qa_gemm_fn gemm, int dsp) {
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int K = C * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + 3) / 4 * 4, P = OH * OW;
    const ptrdiff_t S = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const int hin = EMBER_QA_HWC_IN(p) != 0, hout = EMBER_QA_HWC_OUT(p) != 0;
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    int16_t *t0 = cols + 2 * Kp, *t1 = t0 + Kp;
    uint8_t *const st = (uint8_t *)(t1 + Kp);
    int32_t zp2 = z2; /* a column pair's zero point */
    int n, q, oh = 0, ow = 0;
#if EMBER_HAVE_ARM_DSP
    /* qarm_gemm4.c's tile straight where the layer allows, as ember_qa_conv_t's; a 1x1 layer's bias pairs may hold
     * the zero point's share (ops/qarm.py `_tables`' fold), its pairs' columns then the bytes' values as they are */
    ember_qa_q42_t q42;
    const int s42 = dsp && M % 4 == 0 && out[3] != 3 && ember_qa_mode(out) == 2 && out[0] == 0;
    const ember_qa_q42_fn g42b = Kp <= 64 ? ember_qa_gemm42b1 : ember_qa_gemm42b;
    q42.cols = cols, q42.kb = 8 * Kp, q42.rq = rq, q42.w = (const int16_t *)(const void *)W;
    q42.wend = q42.w + (ptrdiff_t)M * Kp, q42.entry = 0, q42.bq = rq + 4 * M;
    if (s42 && K == C && S == P && p[EMBER_GEO_PAD_H] == 0 && p[EMBER_GEO_PAD_W] == 0 && rq[6 * M])
        zp2 = (int32_t)flip;
#else
    (void)dsp;
#endif
    for (n = 0; n < N; ++n) {
        const uint8_t *xn = x + (ptrdiff_t)n * C * S;
        uint8_t *yn = y + (ptrdiff_t)n * M * P;
        for (q = 0; q < P; q += 2) {
            const int two = q + 1 < P;
            const int32_t zc = two ? zp2 : z2; /* a lone last pixel takes the plain product (gemm) */
            uint8_t *const yq = hout ? st : yn + q;
            const ptrdiff_t rs = hout ? 2 : P;
            if (hin)
                ember_qa_col_hwc(t0, xn, flip, zc, p, oh, ow, Kp);
            else
                ember_qa_col(t0, xn, flip, zc, p, oh, ow, Kp);
            if (++ow == OW) ow = 0, ++oh;
            if (two) {
                if (hin)
                    ember_qa_col_hwc(t1, xn, flip, zc, p, oh, ow, Kp);
                else
                    ember_qa_col(t1, xn, flip, zc, p, oh, ow, Kp);
                if (++ow == OW) ow = 0, ++oh;
            }
#if EMBER_HAVE_ARM_DSP
            if (s42 && two) {
                ember_qa_pair_cols(cols, t0, t1, Kp);
                q42.y = yq, q42.rs = (int32_t)rs;
                g42b(&q42);
            } else
#endif
                gemm(yq, rs, 1 + two, W, M, Kp, cols, t0, t1, rq, out);
            if (hout) ember_qa_hwc_store(yn + (ptrdiff_t)q * M, st, M, 1 + two);
        }
        oh = ow = 0;
    }
}
EMBER_UNUSED static void ember_qarm_conv_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                             int M, const int16_t *W, const int32_t *rq, const int32_t *out,
                                             int16_t *cols) {
    ember_qa_conv_hwc_t(y, x, sgn, xz, p, N, M, (const int8_t *)(const void *)W, rq, out, cols, ember_qa_gemm_dsp, 1);
}
/*@end*/
