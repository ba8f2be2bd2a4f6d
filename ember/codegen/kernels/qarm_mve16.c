/* The Cortex-M int8 kernels (qarm.c lists their files): Cortex-M55's Helium kernels on int16 columns and planes,
 * ember_qarm_conv_mve (and its fused residual add) and ember_qarm_dw3_mve. qarm_mve.c holds the int8 ones
 * (`_mve8`). */

/*@kernel ember_qarm_conv_mve requires ember_qarm_conv*/
/* Cortex-M55 (Helium): ember_qa_conv_t's columns times W, plain int8 rows of Kp (K rounded up to 8;
 * ops/qarm.py `mve_weights`, rows in pairs with a zero row after an odd last one): VLDRB.S16 widens 8
 * weights, VMLADAVA.S16 adds 8 products of a weight vector and a column vector to a scalar sum, so a
 * pair of channels times a pair of pixels is 8 instructions per 32 multiply-adds. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE 1
#else
#define EMBER_QA_MVE 0
#endif
/* The sums a00 .. a11 of rows w0, w1 (int8) times columns t0, t1 (Kp int16), 8 k per step: VLDRB.S16 widens
 * the weights, VMLADAVA.S16 adds a vector's products to a sum. A macro: as an inline function it changed
 * the compiled loop of ember_qa_gemm_mve. */
#define EMBER_QA_MDOT22(k, Kp, w0, w1, t0, t1, a00, a01, a10, a11)                           \
    for (k = 0; k < Kp; k += 8) {                                                            \
        const int16x8_t wa = vldrbq_s16(w0 + k), wb = vldrbq_s16(w1 + k);                    \
        const int16x8_t x0 = vld1q_s16(t0 + k), x1 = vld1q_s16(t1 + k);                      \
        a00 = vmladavaq_s16(a00, wa, x0);                                                    \
        a01 = vmladavaq_s16(a01, wa, x1);                                                    \
        a10 = vmladavaq_s16(a10, wb, x0);                                                    \
        a11 = vmladavaq_s16(a11, wb, x1);                                                    \
    }
EMBER_INLINE void ember_qa_mgemm_t(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp,
                                   const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out, int fast) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    int m, k;
#if EMBER_QA_MVE
    const uint32_t po[4] = {0, 0, 4, 4}, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32x4_t pairs = vld1q_u32(po), yoff = vld1q_u32(yo);
    const int32x4_t vzp = vdupq_n_s32(zp), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
#endif
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp, rq += 8) {
        const int two = m + 1 < M;
        const int8_t *w0 = W, *w1 = W + Kp;
        int32_t a00 = rq[3], a01 = rq[3], a10 = two ? rq[7] : 0, a11 = a10;
#if EMBER_QA_MVE
        EMBER_QA_MDOT22(k, Kp, w0, w1, t0, t1, a00, a01, a10, a11);
#else
        for (k = 0; k < Kp; ++k) {
            a00 += w0[k] * t0[k];
            a01 += w0[k] * t1[k];
            a10 += w1[k] * t0[k];
            a11 += w1[k] * t1[k];
        }
#endif
#if EMBER_QA_MVE
        if (fast && n > 1 && two) { /* the four sums requantised in one vector: lanes (m, p) (m, p+1) (m+1, p) (m+1, p+1) */
            int32x4_t v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
            const int32x4_t mult = vldrwq_gather_shifted_offset_s32(rq, pairs);
            const int32x4_t sh = vldrwq_gather_shifted_offset_s32(rq + 1, pairs);
            v = vaddq_s32(vrshlq_s32(vmulhq_s32(v, mult), vnegq_s32(sh)), vzp); /* VRSHL adds ra itself */
            vstrbq_scatter_offset_s32((int8_t *)y, yoff, vminq_s32(vmaxq_s32(v, vlo), vhi));
            continue;
        }
#endif
        y[0] = ember_qa_requant(a00, rq, zp, lo, hi, fast);
        if (n > 1) y[1] = ember_qa_requant(a01, rq, zp, lo, hi, fast);
        if (two) {
            y[rs] = ember_qa_requant(a10, rq + 4, zp, lo, hi, fast);
            if (n > 1) y[rs + 1] = ember_qa_requant(a11, rq + 4, zp, lo, hi, fast);
        }
    }
}
#if EMBER_QA_MVE
/* ember_qa_mgemm_t's common case: two columns, the fast requantisation, M2 whole channel pairs; one branch-free
 * loop (the general one spent about 78 instructions per pair outside the products, mostly reloads around
 * its branches). */
EMBER_INLINE void ember_qa_mgemm22(uint8_t *y, ptrdiff_t rs, const int8_t *W, int M2, int Kp, const int16_t *t0,
                                   const int16_t *t1, const int32_t *rq, const int32_t *out) {
    /* The pair's multipliers and shifts by gathers from a vector of addresses (rq[0] rq[0] rq[4] rq[4]) that
     * each pair's first gather advances by 32 bytes (VLDRW with writeback): no offsets vector to reload. */
    const uint32_t r0 = (uint32_t)(uintptr_t)rq - 32, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32_t bo[4] = {r0, r0, r0 + 16, r0 + 16};
    const uint32x4_t yoff = vld1q_u32(yo);
    uint32x4_t base = vld1q_u32(bo);
    const int32_t zp = out[0];
    const int32x4_t vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int8_t *const wend = W + (ptrdiff_t)M2 * 2 * Kp;
    while (W != wend) {
        const int8_t *w0 = W, *w1 = W + Kp;
        int32_t a00 = rq[3], a01 = rq[3], a10 = rq[7], a11 = rq[7];
        int k;
        int32x4_t v;
        EMBER_QA_MDOT22(k, Kp, w0, w1, t0, t1, a00, a01, a10, a11);
        v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
        v = vmulhq_s32(v, vldrwq_gather_base_wb_s32(&base, 32));
        /* the fast form's + ra (2^(sh-1)) and >> sh in one rounding shift */
        v = vrshlq_s32(v, vnegq_s32(vldrwq_gather_base_s32(base, 4)));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), vlo), vhi);
        vstrbq_scatter_offset_s32((int8_t *)y, yoff, v);
        W += 2 * Kp;
        y += 2 * rs;
        rq += 8;
    }
}
#endif
static void ember_qa_gemm_mve(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    const int mode = ember_qa_mode(out);
    (void)cols;
#if EMBER_QA_MVE
    if (mode && n == 2) {
        const int M2 = M / 2;
        ember_qa_mgemm22(y, rs, W, M2, Kp, t0, t1, rq, out);
        if (M & 1)
            ember_qa_mgemm_t(y + 2 * M2 * rs, rs, n, W + (ptrdiff_t)M2 * 2 * Kp, 1, Kp, t0, t1, rq + 8 * M2, out, mode);
        return;
    }
#endif
    if (mode == 2)
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 2);
    else if (mode == 1)
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 1);
    else
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 0);
}
EMBER_UNUSED static void ember_qarm_conv_mve(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 8, ember_qa_gemm_mve, 0, 0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_mve requires ember_qarm_dw3*/
/* Cortex-M55 (Helium) depthwise 3x3: ember_qarm_dw3's zero-padded int16 plane, four outputs of a row per
 * vector (each tap a halfword gather widened to int32 lanes, VMLA by the tap's weight), requantised in the
 * vector by the fast form (VMULH.S32 is SMMLA's floor((acc * mult) / 2^32)), the row's last lanes
 * predicated. Layers that need the exact form (possible ties) take ember_qarm_dw3. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE_DW 1
#else
#define EMBER_QA_MVE_DW 0
#endif
#if EMBER_QA_MVE_DW
/* One channel's output rows from its plane (geometry g), 4 outputs per vector; `s1` (a constant where
 * inlined): stride 1, whose taps are contiguous loads (the plane's rows reach 2 past the last vector's
 * lanes), otherwise gathers. */
EMBER_INLINE void ember_qa_dw3_mve_rows(uint8_t *yc, const int16_t *plane, const ember_qa_dw3_geo_t *g,
                                        const int16_t *wk, const int32_t *cq, const int32_t *out, int s1, int t) {
    const int OW = g->OW, Wp = g->Wp, SW = s1 ? 1 : g->SW;
    const int32x4_t vzp = vdupq_n_s32(out[0]), vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int32x4_t vb = vdupq_n_s32(cq[3]), vm = vdupq_n_s32(cq[0]);
    const int32x4_t vsh = vdupq_n_s32(-cq[1]);
    const uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)SW);
    const uint32x4_t ylanes = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ys_col); /* outputs ys_col apart */
    int oh, ow, i;
    for (oh = 0; oh < g->OH; ++oh) {
        const int16_t *r0 = plane + (ptrdiff_t)oh * g->SH * Wp;
        uint8_t *yr = yc + oh * g->ys_row;
        for (ow = 0; ow < OW; ow += 4) {
            const mve_pred16_t live = vctp32q((uint32_t)(OW - ow));
            const int16_t *s0 = r0 + ow * SW;
            int32x4_t a = vb, v;
            for (i = 0; i < 3; ++i, s0 += Wp) {
                if (s1) {
                    a = vmlaq_n_s32(a, vldrhq_s32(s0), wk[3 * i]);
                    a = vmlaq_n_s32(a, vldrhq_s32(s0 + 1), wk[3 * i + 1]);
                    a = vmlaq_n_s32(a, vldrhq_s32(s0 + 2), wk[3 * i + 2]);
                } else {
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0, lanes, live), wk[3 * i]);
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0 + 1, lanes, live), wk[3 * i + 1]);
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0 + 2, lanes, live), wk[3 * i + 2]);
                }
            }
            v = vaddq_s32(vrshlq_s32(vmulhq_s32(a, vm), vsh), vzp); /* VRSHL: + 2^(sh-1), >> sh (ra's) */
            v = vminq_s32(vmaxq_s32(v, vlo), vhi);
            if (t) /* the transposed plane's outputs: a column of the map */
                vstrbq_scatter_offset_p_s32((int8_t *)(yr + ow * g->ys_col), ylanes, v, live);
            else /* contiguous: no offsets vector to keep */
                vstrbq_p_s32((int8_t *)(yr + ow), v, live);
        }
    }
}
#endif
/* `hwc` (a constant where inlined): ember_qarm_dw3_mve_hwc's layouts (EMBER_QA_LAY): an NHWC output's rows stored
 * as the transposed plane's columns are, by scatters ys_col apart. */
EMBER_INLINE void ember_qa_dw3_mve_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                     const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane, int hwc) {
#if EMBER_QA_MVE_DW
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo_lay(p, 1, hwc);
    const int C = p[EMBER_GEO_C];
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    const ptrdiff_t xs_ch = ember_qa_dw3_chan(p, hwc, 4, in_plane), ys_ch = ember_qa_dw3_chan(p, hwc, 8, out_plane);
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    int n, c, i;
    if (!out[3]) {
        ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1, hwc);
        return;
    }
    for (i = 0; i < g.Hp * g.Wp; ++i) plane[i] = 0;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int16_t *w = Wt + 9 * c;
            uint8_t *yc = y + (ptrdiff_t)n * C * out_plane + c * ys_ch;
            int16_t wk[9];
            uint32_t wv[12];
            ember_qa_dw3_load(plane, &g, x + (ptrdiff_t)n * C * in_plane + c * xs_ch, flip, z2, w, wv);
            for (i = 0; i < 9; ++i) wk[i] = g.t ? w[i % 3 * 3 + i / 3] : w[i]; /* (kernel row, column) of the plane */
            if (g.t) /* stride 1 */
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 1, 1);
            else if (hwc && g.ys_col != 1 && g.SW == 1) /* an NHWC output */
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 1, 1);
            else if (hwc && g.ys_col != 1)
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 0, 1);
            else if (g.SW == 1)
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 1, 0);
            else
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 0, 0);
        }
#else
    ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1, hwc);
#endif
}
EMBER_UNUSED static void ember_qarm_dw3_mve(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                            const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
    ember_qa_dw3_mve_t(y, x, sgn, xz, p, N, Wt, rq, out, plane, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_mve_hwc requires ember_qarm_dw3_mve*/
/* ember_qarm_dw3_mve at a channels-last model's edge, as qarm_dw3.c's ember_qarm_dw3_hwc. */
static void ember_qarm_dw3_mve_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                   const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
    ember_qa_dw3_mve_t(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1);
}
/*@end*/

/*@kernel ember_qarm_conv_mve_add requires ember_qarm_conv_mve ember_qa_res*/
/* ember_qarm_conv_mve, then y = QAdd(y, res) as ember_qarm_conv_add. */
static void ember_qarm_conv_mve_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                    int M, const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                    const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 8, ember_qa_gemm_mve, 0, ember_qa_res_rows, res, radd,
                    stage);
}
/*@end*/
