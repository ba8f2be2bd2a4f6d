/* Convolution and transposed convolution, float32, NCHW with 1-3 spatial dims (lower ranks are
 * padded to 3-D with unit dims). Geometry comes in one static table `p` (int32) of the fields below. */

/*@kernel ember_conv_geo requires ember_prelude*/
/* The convolution geometry table's entries (ember/ops/conv.py ConvGeometry writes it): input channels,
 * input D,H,W, kernel D,H,W, output D,H,W, strides, dilations, leading pads (each D,H,W). */
#define EMBER_GEO_C 0
#define EMBER_GEO_IN_D 1
#define EMBER_GEO_IN_H 2
#define EMBER_GEO_IN_W 3
#define EMBER_GEO_K_D 4
#define EMBER_GEO_K_H 5
#define EMBER_GEO_K_W 6
#define EMBER_GEO_OUT_D 7
#define EMBER_GEO_OUT_H 8
#define EMBER_GEO_OUT_W 9
#define EMBER_GEO_STRIDE_D 10
#define EMBER_GEO_STRIDE_H 11
#define EMBER_GEO_STRIDE_W 12
#define EMBER_GEO_DIL_D 13
#define EMBER_GEO_DIL_H 14
#define EMBER_GEO_DIL_W 15
#define EMBER_GEO_PAD_D 16
#define EMBER_GEO_PAD_H 17
#define EMBER_GEO_PAD_W 18
#define EMBER_GEO_SIZE 19
/*@end*/

/*@kernel ember_window_bounds requires ember_prelude*/
/* The outputs [lo, hi) of a row whose input column ow*stride + off lies inside [0, W): solving a
 * window tap's valid range once lets the loop over the row run without bounds checks. */
static void ember_window_bounds(int W, int OW, int stride, int off, int *lo, int *hi) {
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / stride + 1;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}
/*@end*/

/*@kernel ember_copy_run_f32 requires ember_simd*/
/* dst[0..n) = src[0..n) for the short runs im2col copies (output rows of 7 to 56 floats): whole
 * vectors, the last one overlapping the one before, instead of a vector loop with a scalar tail. */
EMBER_INLINE void ember_copy_run_f32(float *EMBER_RESTRICT dst, const float *EMBER_RESTRICT src, int n) {
    int i = 0;
#if EMBER_VL > 4
    if (n >= EMBER_VL) {
        for (; i + EMBER_VL <= n; i += EMBER_VL) *(ember_vf *)(dst + i) = *(const ember_vf *)(src + i);
        if (i < n) *(ember_vf *)(dst + n - EMBER_VL) = *(const ember_vf *)(src + n - EMBER_VL);
        return;
    }
#endif
#if EMBER_VL > 1
    {
        typedef float ember_v4 __attribute__((vector_size(16), aligned(4)));
        if (n >= 4) {
            for (; i + 4 <= n; i += 4) *(ember_v4 *)(dst + i) = *(const ember_v4 *)(src + i);
            if (i < n) *(ember_v4 *)(dst + n - 4) = *(const ember_v4 *)(src + n - 4);
            return;
        }
    }
#endif
    for (; i < n; ++i) dst[i] = src[i];
}
/*@end*/

/*@kernel ember_phase_pick requires ember_simd*/
/* EMBER_PHASE_PICK(a, b, EMBER_PHASE_EVEN / _ODD): the even or the odd floats of the 2 * EMBER_VL floats of
 * vectors a, b (a stride-2 row's two column phases). */
#if EMBER_VL > 1
typedef int32_t ember_phase_vi __attribute__((vector_size(EMBER_VL * 4)));
#if EMBER_VL == 16
#define EMBER_PHASE_EVEN 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define EMBER_PHASE_ODD 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#elif EMBER_VL == 8
#define EMBER_PHASE_EVEN 0, 2, 4, 6, 8, 10, 12, 14
#define EMBER_PHASE_ODD 1, 3, 5, 7, 9, 11, 13, 15
#else
#define EMBER_PHASE_EVEN 0, 2, 4, 6
#define EMBER_PHASE_ODD 1, 3, 5, 7
#endif
#if EMBER_CLANG
#define EMBER_PHASE_PICK(a, b, IDX) __builtin_shufflevector(a, b, IDX)
#else
#define EMBER_PHASE_PICK(a, b, IDX) __builtin_shuffle(a, b, (ember_phase_vi){IDX})
#endif
#endif
/*@end*/

/*@kernel ember_phase_rows2_f32 requires ember_phase_pick*/
/* One input row x (W floats) split into its two column phases for a stride-2 ConvShifted: r0[j] = x[2j - pl],
 * r1[j] = x[2j + 1 - pl] for j in [0, Wh), 0 outside the row. Where both phases are inside, a vector pair of
 * the row gives a vector of each (its even and odd floats): one pass over the row instead of a strided scalar
 * copy per phase (ResNet-50's 56x56 x 128 stride-2 layer spent a tenth of its time on the scalar copies). */
static void ember_phase_rows2_f32(float *EMBER_RESTRICT r0, float *EMBER_RESTRICT r1, const float *EMBER_RESTRICT x,
                                  int W, int Wh, int pl) {
    int j = 0;
#if EMBER_VL > 1
    /* the first j whose pair starts inside the row (2j >= pl), then vectors while the pairs end inside it */
    for (; j < Wh && 2 * j < pl; ++j) {
        r0[j] = 0.0f;
        r1[j] = 2 * j + 1 - pl >= 0 && 2 * j + 1 - pl < W ? x[2 * j + 1 - pl] : 0.0f;
    }
    for (; j + EMBER_VL <= Wh && 2 * (j + EMBER_VL) - pl <= W; j += EMBER_VL) {
        const ember_vf a = *(const ember_vf *)(x + 2 * j - pl), b = *(const ember_vf *)(x + 2 * j - pl + EMBER_VL);
        *(ember_vf *)(r0 + j) = EMBER_PHASE_PICK(a, b, EMBER_PHASE_EVEN);
        *(ember_vf *)(r1 + j) = EMBER_PHASE_PICK(a, b, EMBER_PHASE_ODD);
    }
#endif
    for (; j < Wh; ++j) {
        const int u = 2 * j - pl;
        r0[j] = u >= 0 && u < W ? x[u] : 0.0f;
        r1[j] = u + 1 >= 0 && u + 1 < W ? x[u + 1] : 0.0f;
    }
}
/*@end*/

/*@kernel ember_im2col_f32 requires ember_window_bounds ember_copy_run_f32 ember_conv_geo ember_phase_pick ember_transpose2d_ld_f32*/
/* Columns [q0, q0 + nq) of the convolution-as-matmul's B operand (ldc floats per row):
 *   col[(c*KD + kd)*KH*KW + kh*KW + kw][q - q0] = x[c][id][ih][iw] (0 outside the input), q = (od*OH + oh)*OW + ow.
 * Each output-row run is zeros, a (strided) copy, zeros, with the copy's bounds solved per tap. `ps`: 1 for NCHW x;
 * for x stored channels-last (ops/shape.py NhwcView: a TFLite model's NHWC image) its channel count, the floats
 * from one pixel to the next (x at the first channel this call reads): then a run's pixels, C channels each, are one
 * block transposed into the tap's C rows (a gather per float: a 1x1 of 32 channels at 19x19 took 1.24-1.35x the time
 * of its input's Transpose and the direct product). */
static void ember_im2col_f32(float *EMBER_RESTRICT col, ptrdiff_t ldc, const float *EMBER_RESTRICT x, int C,
                             ptrdiff_t ps, const int32_t *p, ptrdiff_t q0, ptrdiff_t nq) {
    const int D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KD = p[EMBER_GEO_K_D],
              KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sw = p[EMBER_GEO_STRIDE_W], start_ow = (int)(q0 % OW), start_oh = (int)(q0 / OW % OH),
              start_od = (int)(q0 / OW / OH);
    const int cn = ps > 1 ? C : 1; /* the channels a pass over the taps fills: all of a channels-last x's */
    const ptrdiff_t crow = (ptrdiff_t)KD * KH * KW * ldc; /* from a channel's rows to the next one's */
    int c, i, kd, kh, kw, ow;
    for (c = 0; c < C; c += cn)
        for (kd = 0; kd < KD; ++kd)
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw, col += ldc) {
                    const float *xc = x + (ptrdiff_t)c * D * H * W; /* (c = 0 where channels-last) */
                    const int off = kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W];
                    int lo, hi, ow0 = start_ow, oh = start_oh, od = start_od;
                    ptrdiff_t q = q0;
                    ember_window_bounds(W, OW, sw, off, &lo, &hi);
                    /* Runs of one output row each: (od, oh, ow0) advance with q, no divisions. */
                    for (; q < q0 + nq; ow0 = 0, oh = oh + 1 == OH ? 0 : oh + 1, od += oh == 0) {
                        const int ow1 = q0 + nq - q < OW - ow0 ? ow0 + (int)(q0 + nq - q) : OW;
                        const int id = od * p[EMBER_GEO_STRIDE_D] - p[EMBER_GEO_PAD_D] + kd * p[EMBER_GEO_DIL_D],
                                  ih = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H] + kh * p[EMBER_GEO_DIL_H];
                        float *EMBER_RESTRICT dst = col + (q - q0) - ow0; /* dst[ow] for ow in [ow0, ow1) */
                        const float *xr = xc + (((ptrdiff_t)id * H + ih) * W + off) * ps;
                        const int l = lo > ow0 ? (lo < ow1 ? lo : ow1) : ow0, h = hi < ow1 ? (hi > l ? hi : l) : ow1;
                        q += ow1 - ow0;
                        if (ps > 1) {
                            const int inside = id >= 0 && id < D && ih >= 0 && ih < H;
                            for (i = 0; i < C; ++i) {
                                float *EMBER_RESTRICT d = dst + i * crow;
                                for (ow = ow0; ow < (inside ? l : ow1); ++ow) d[ow] = 0.0f;
                                for (ow = inside ? h : ow1; ow < ow1; ++ow) d[ow] = 0.0f;
                            }
                            if (inside)
                                ember_transpose2d_ld_f32(dst + l, crow, xr + (ptrdiff_t)l * sw * ps, sw * ps, h - l, C);
                            continue;
                        }
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {
                            for (ow = ow0; ow < ow1; ++ow) dst[ow] = 0.0f;
                            continue;
                        }
                        for (ow = ow0; ow < l; ++ow) dst[ow] = 0.0f;
                        if (sw == 1)
                            ember_copy_run_f32(dst + l, xr + l, h - l);
                        else if (sw == 2) {
                            ow = l;
#if EMBER_VL > 1
                            /* the even floats of vector pairs while a pair ends inside the row (1x1 stride-2
                             * shortcuts: a gather per float otherwise) */
                            for (; ow + EMBER_VL <= h && off + 2 * (ow + EMBER_VL) <= W; ow += EMBER_VL) {
                                const ember_vf a = *(const ember_vf *)(xr + 2 * (ptrdiff_t)ow),
                                               b = *(const ember_vf *)(xr + 2 * (ptrdiff_t)ow + EMBER_VL);
                                *(ember_vf *)(dst + ow) = EMBER_PHASE_PICK(a, b, EMBER_PHASE_EVEN);
                            }
#endif
                            for (; ow < h; ++ow) dst[ow] = xr[2 * (ptrdiff_t)ow];
                        } else
                            for (ow = l; ow < h; ++ow) dst[ow] = xr[(ptrdiff_t)ow * sw];
                        for (ow = h; ow < ow1; ++ow) dst[ow] = 0.0f;
                    }
                }
}
/*@end*/

/*@kernel ember_residual_act_f32 requires ember_act_apply_f32*/
/* y = act(y + r) over n floats: a fused residual Add on the kernel paths that cannot add it in registers. A Relu
 * (ResNet's shortcuts) goes in the add's own pass: y is a whole feature map there (3 MiB at 56x56 x 256),
 * past L2, and a second pass read it all back from L3. */
static void ember_residual_act_f32(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT r, ptrdiff_t n, int act,
                                   float act_a, float act_b) {
    ptrdiff_t i;
    if (act == EMBER_ACT_RELU) {
        for (i = 0; i < n; ++i) y[i] = ember_act_f32(y[i] + r[i], EMBER_ACT_RELU, act_a, act_b);
        return;
    }
    for (i = 0; i < n; ++i) y[i] += r[i];
    ember_act_apply_f32(y, n, act, act_a, act_b);
}
/*@end*/

/*@kernel ember_conv_f32 requires ember_matmul_core ember_im2col_f32 ember_conv_geo*/
/* Grouped convolution as matmuls per (image, group): y_g (Mg x OD*OH*OW) = w_g (Mg x K) * col (K x ...),
 * K = C/G * KD*KH*KW; bias and the fused activation are applied in the matmul epilogue. im2col runs
 * in blocks of `qb` output pixels (col holds K x qb floats, sized to stay in L2), each followed by
 * its matmul. `direct`: a 1x1, stride-1, unpadded conv reads the input itself as B (no im2col). `res` (else
 * NULL): a residual shaped as y, added in the matmul tiles before the activation (passes/fuse_residual.py).
 * `apack`: w is in the matmul's row panels (kernels/matmul.c ember_matmul_core_ap; G = 1). `ps`: as for
 * ember_im2col_f32 (C for a channels-last x, not `direct`). */
static void ember_conv_f32(float *y, const float *x, const float *w, const float *bias, const float *res, float *col,
                           const int32_t *p, int N, int G, int M, int direct, int qb, int act, float act_a,
                           float act_b, int apack, ptrdiff_t ps) {
    const int C = p[EMBER_GEO_C], Cg = C / G, Mg = M / G;
    const int K = Cg * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W],
                    s_out = (ptrdiff_t)p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    ptrdiff_t q0;
    int n, g;
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const float *xg = x + (ptrdiff_t)n * C * s_in + (ptrdiff_t)g * Cg * (ps > 1 ? 1 : s_in);
            float *yg = y + ((ptrdiff_t)n * M + (ptrdiff_t)g * Mg) * s_out;
            const float *wg = w + (ptrdiff_t)g * Mg * K, *bg = bias ? bias + (ptrdiff_t)g * Mg : bias;
            const float *rg = res ? res + ((ptrdiff_t)n * M + (ptrdiff_t)g * Mg) * s_out : 0;
            if (direct) {
                ember_matmul_core_ap(yg, s_out, wg, K, 1, xg, s_out, 0, 0, Mg, (int)s_out, K, 1.0f, bg, 1, 0, 1.0f, rg,
                                     act, act_a, act_b, apack);
                continue;
            }
            for (q0 = 0; q0 < s_out; q0 += qb) {
                const int nq = s_out - q0 < qb ? (int)(s_out - q0) : qb;
                ember_im2col_f32(col, nq, xg, Cg, ps, p, q0, nq);
                ember_matmul_core_ap(yg + q0, s_out, wg, K, 1, col, nq, 0, 0, Mg, nq, K, 1.0f, bg, 1, 0, 1.0f,
                                     rg ? rg + q0 : 0, act, act_a, act_b, apack);
            }
        }
}
/*@end*/

/*@kernel ember_conv_nhwc_f32 requires ember_matmul_core ember_im2col_f32 ember_transpose2d_ld_f32 ember_act_apply_f32 ember_conv_geo*/
/* ember_conv_f32's convolution with y stored channels-last (M floats a pixel: ops/shape.py NhwcView, a TFLite model's
 * NHWC output), for output pixels [q0, q1) of each image (a thread's part, or all). Each block of `qb` pixels is
 * multiplied into `out` (Mg x qb floats of scratch after im2col's K x qb, or from the start of `col` where
 * `direct`), as ember_conv_f32 does into y, then stored transposed while it is in cache (an activation the matmul
 * tiles do not apply in registers, such as HardSwish, in one pass over the block before). `ps`: ember_im2col_f32's
 * (a channels-last x is never `direct`). No residual. */
static void ember_conv_nhwc_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                                const int32_t *p, int N, int G, int M, int direct, int qb, int act, float act_a,
                                float act_b, int apack, ptrdiff_t ps, ptrdiff_t q0, ptrdiff_t q1) {
    const int C = p[EMBER_GEO_C], Cg = C / G, Mg = M / G;
    const int K = Cg * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W],
                    s_out = (ptrdiff_t)p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    float *out = direct ? col : col + (ptrdiff_t)K * qb;
    const int in_tile = act == EMBER_ACT_NONE || act == EMBER_ACT_RELU || act == EMBER_ACT_CLIP;
    ptrdiff_t q;
    int n, g;
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const float *xg = x + (ptrdiff_t)n * C * s_in + (ptrdiff_t)g * Cg * (ps > 1 ? 1 : s_in);
            const float *wg = w + (ptrdiff_t)g * Mg * K, *bg = bias ? bias + (ptrdiff_t)g * Mg : bias;
            for (q = q0; q < q1; q += qb) {
                const int nq = q1 - q < qb ? (int)(q1 - q) : qb;
                if (!direct) ember_im2col_f32(col, nq, xg, Cg, ps, p, q, nq);
                ember_matmul_core_ap(out, nq, wg, K, 1, direct ? xg + q : col, direct ? s_out : nq, 0, 0, Mg, nq, K,
                                     1.0f, bg, 1, 0, 1.0f, 0, in_tile ? act : EMBER_ACT_NONE, act_a, act_b, apack);
                if (!in_tile) ember_act_apply_f32(out, (ptrdiff_t)Mg * nq, act, act_a, act_b);
                ember_transpose2d_ld_f32(y + ((ptrdiff_t)n * s_out + q) * M + (ptrdiff_t)g * Mg, M, out, nq, Mg, nq);
            }
        }
}
/*@end*/

/*@kernel ember_conv_hwc_f32 requires ember_matmul_core ember_im2col_f32 ember_act_apply_f32 ember_conv_geo*/
/* ember_conv_nhwc_f32 on a microcontroller (ops/conv.py WEIGHTS_KM): each block of qb output pixels' product, group
 * by group, computed transposed, y[q][g Mg + m] = bias[g Mg + m] + sum_k col[k][q] wt[g][k][m], straight into the
 * channels-last output (the matmul's A read down im2col's columns, its B the group's weights stored Kg x Mg), so that
 * no block of product takes scratch beside the columns: there scratch is RAM, and a product block raised a model's
 * peak. */
static void ember_conv_hwc_f32(float *y, const float *x, const float *wt, const float *bias, float *col,
                               const int32_t *p, int N, int G, int M, int direct, int qb, int act, float act_a,
                               float act_b, ptrdiff_t ps) {
    const int C = p[EMBER_GEO_C], Cg = C / G, Mg = M / G;
    const int K = Cg * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W],
                    s_out = (ptrdiff_t)p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    const int in_tile = act == EMBER_ACT_NONE || act == EMBER_ACT_RELU || act == EMBER_ACT_CLIP;
    ptrdiff_t q;
    int n, g;
    for (n = 0; n < N; ++n)
        for (q = 0; q < s_out; q += qb) {
            const int nq = s_out - q < qb ? (int)(s_out - q) : qb;
            float *yq = y + ((ptrdiff_t)n * s_out + q) * M;
            for (g = 0; g < G; ++g) {
                const float *xg = x + (ptrdiff_t)n * C * s_in + (ptrdiff_t)g * Cg * (ps > 1 ? 1 : s_in);
                if (!direct) ember_im2col_f32(col, nq, xg, Cg, ps, p, q, nq);
                ember_matmul_core_ap(yq + (ptrdiff_t)g * Mg, M, direct ? xg + q : col, 1, direct ? s_in : nq,
                                     wt + (ptrdiff_t)g * K * Mg, Mg, 0, 0, nq, Mg, K, 1.0f,
                                     bias ? bias + (ptrdiff_t)g * Mg : bias, 0, 1, 1.0f, 0,
                                     in_tile ? act : EMBER_ACT_NONE, act_a, act_b, 0);
            }
            if (!in_tile) ember_act_apply_f32(yq, (ptrdiff_t)nq * M, act, act_a, act_b);
        }
}
/*@end*/

/*@kernel ember_conv_shifted_f32 requires ember_matmul_core ember_copy_run_f32 ember_window_bounds ember_conv_geo ember_residual_act_f32 ember_phase_rows2_f32*/
/* 2-D convolution without im2col (ember/passes/conv_algorithms.py picks it for strided convolutions and
 * for stride-1 ones on small maps, where im2col's many short row copies cost more than the matmul).
 * The input is stored (zero-padded) as sh*sw polyphase planes per channel, plane (a, b) holding padded
 * rows i*sh + a and columns j*sw + b (Hh x Wh). Then output pixel q = oh*Wh + ow reads, for tap
 * (kh, kw), plane (kh*dh % sh, kw*dw % sw) at q + (kh*dh / sh)*Wh + kw*dw / sw: row k = (c, kh, kw) of
 * the matmul's B is a plane shifted by b_row[k] (a compile-time table), and nothing is copied per tap.
 * A stride-1 unpadded conv reads the input itself (`planes` = 0); `planes` = 2: the input is stored channels-last
 * (ops/shape.py NhwcView: a TFLite model's NHWC image), each plane row gathered C floats apart. The matmul runs
 * over blocks of `rb` output rows, computing all Wh columns of each row into `scratch` (the last Wh - OW are
 * discarded) while the block stays in cache; its rows are then copied out.
 * `scratch`: the planes (C*sh*sw*Hh*Wh floats, only if `planes`) then M*((rb-1)*Wh + OW) floats. `res` (else
 * NULL): a residual shaped as y, added (then the activation) as each row is copied out. Output rows of at least
 * EMBER_SHIFTED_ROW_MIN pixels fill the matmul's strips alone: there each row is one product into y itself.
 * `apack`: w is in the matmul's row panels (kernels/matmul.c ember_matmul_core_ap). `nhwc`: y is stored
 * channels-last (ops/shape.py NhwcView of the output; no res): each block's rows are copied out transposed. */
#define EMBER_SHIFTED_ROW_MIN 64
static void ember_conv_shifted_f32(float *y, const float *x, const float *w, const float *bias, const float *res,
                                   float *scratch,
                                   const int32_t *p, const int32_t *b_row, int N, int M, int planes, int rb,
                                   int act, float act_a, float act_b, int apack, int nhwc) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int Hh = (OH - 1 + ((KH - 1) * p[EMBER_GEO_DIL_H]) / sh) + 1,
              Wh = (OW - 1 + ((KW - 1) * p[EMBER_GEO_DIL_W]) / sw) + 1;
    const ptrdiff_t plane = (ptrdiff_t)Hh * Wh;
    float *EMBER_RESTRICT out = planes ? scratch + (ptrdiff_t)C * sh * sw * plane : scratch;
    int n, c, a, b, i, j, m, r, oh0;
    for (n = 0; n < N; ++n) {
        const float *src = x + (ptrdiff_t)n * C * H * W;
        if (planes == 1 && sw == 2) {
            /* Both column phases of each row in one pass (ember_phase_rows2_f32). */
            for (c = 0; c < C; ++c)
                for (a = 0; a < sh; ++a)
                    for (i = 0; i < Hh; ++i) {
                        float *EMBER_RESTRICT r0 = scratch + (ptrdiff_t)(c * sh + a) * 2 * plane + (ptrdiff_t)i * Wh;
                        const int ih = i * sh + a - pt;
                        if (ih >= 0 && ih < H) {
                            ember_phase_rows2_f32(r0, r0 + plane, src + ((ptrdiff_t)c * H + ih) * W, W, Wh, pl);
                        } else {
                            for (j = 0; j < Wh; ++j) r0[j] = r0[plane + j] = 0.0f;
                        }
                    }
            src = scratch;
        } else if (planes) {
            /* where input (c, ih, iw) is: NCHW, or channels-last (planes == 2) */
            const ptrdiff_t cs = planes == 2 ? 1 : (ptrdiff_t)H * W, ps = planes == 2 ? C : 1;
            for (c = 0; c < C; ++c)
                for (a = 0; a < sh; ++a)
                    for (b = 0; b < sw; ++b)
                        for (i = 0; i < Hh; ++i) {
                            /* Plane column j is input column j*sw + b - pl: inside for j in [lo, hi). */
                            float *EMBER_RESTRICT row = scratch + ((ptrdiff_t)(c * sh + a) * sw + b) * plane + (ptrdiff_t)i * Wh;
                            const int ih = i * sh + a - pt;
                            int lo = 0, hi = 0;
                            if (ih >= 0 && ih < H) ember_window_bounds(W, Wh, sw, b - pl, &lo, &hi);
                            for (j = 0; j < lo; ++j) row[j] = 0.0f;
                            if (sw == 1 && ps == 1)
                                ember_copy_run_f32(row + lo, src + (c * H + ih) * (ptrdiff_t)W + b - pl + lo, hi - lo);
                            else
                                for (j = lo; j < hi; ++j)
                                    row[j] = src[c * cs + ((ptrdiff_t)ih * W + (ptrdiff_t)j * sw + b - pl) * ps];
                            for (j = hi; j < Wh; ++j) row[j] = 0.0f;
                        }
            src = scratch;
        }
        if (OW >= EMBER_SHIFTED_ROW_MIN && !nhwc) {
            /* Wide rows (a stem's 112): one product per output row, straight into y (and its residual) at the
             * plane stride: no copy of the output through scratch and no Wh - OW extra columns. */
            for (oh0 = 0; oh0 < OH; ++oh0) {
                const ptrdiff_t at = (ptrdiff_t)n * M * OH * OW + (ptrdiff_t)oh0 * OW;
                ember_matmul_core_ap(y + at, (ptrdiff_t)OH * OW, w, C * KH * KW, 1, src + (ptrdiff_t)oh0 * Wh, 0, b_row,
                                     0, M, OW, C * KH * KW, 1.0f, bias, 1, 0, 1.0f, res ? res + at : 0, act, act_a,
                                     act_b, apack);
            }
            continue;
        }
        for (oh0 = 0; oh0 < OH; oh0 += rb) {
            const int nr = OH - oh0 < rb ? OH - oh0 : rb;
            const ptrdiff_t nq = (ptrdiff_t)(nr - 1) * Wh + OW;
            ember_matmul_core_ap(out, nq, w, C * KH * KW, 1, src + (ptrdiff_t)oh0 * Wh, 0, b_row, 0, M, (int)nq,
                                 C * KH * KW, 1.0f, bias, 1, 0, 1.0f, 0, res ? EMBER_ACT_NONE : act, act_a, act_b,
                                 apack);
            if (nhwc) {
                for (r = 0; r < nr; ++r)
                    for (j = 0; j < OW; ++j) {
                        float *EMBER_RESTRICT yp = y + (((ptrdiff_t)n * OH + oh0 + r) * OW + j) * M;
                        const float *op = out + (ptrdiff_t)r * Wh + j;
                        for (m = 0; m < M; ++m) yp[m] = op[m * nq];
                    }
                continue;
            }
            for (m = 0; m < M; ++m)
                for (r = 0; r < nr; ++r) {
                    const ptrdiff_t at = (((ptrdiff_t)n * M + m) * OH + oh0 + r) * OW;
                    ember_copy_run_f32(y + at, out + m * nq + (ptrdiff_t)r * Wh, OW);
                    if (res) ember_residual_act_f32(y + at, res + at, OW, act, act_a, act_b);
                }
        }
    }
}
/*@end*/

/*@kernel ember_conv_narrow_f32 requires ember_matmul_core ember_matmul_wide_f32 ember_im2col_f32 ember_transpose2d_f32 ember_conv_geo ember_residual_act_f32*/
/* Pixel-major convolution for few output pixels P and many channels M (ember/passes/conv_algorithms.py):
 * yt (P x M) = col^T (P x K) * w^T (K x M), then y = yt^T. The vectors run along the output channels
 * and the pixels are broadcast, so P = 49 wastes no lanes. The weights, the big operand here, were
 * transposed and packed in panels of pw channels at compile time, so they stream from memory once, in
 * order: EMBER_MM_PANEL wide for the general matmul's strips, or 64 (the CPU family's narrow_panel) for AVX-512's
 * 4-vector tiles (ember_matmul_wide_f32). `scratch`: im2col (K x P, unless `direct`) then yt. `res` (else NULL): a
 * residual shaped as y, added (then the activation) after the transpose. `lay` bit 0: x stored channels-last (an
 * NhwcView: im2col gathers at the pixel stride, and a 1x1's x is col^T itself); bit 1: y stored channels-last (no
 * res), which yt is: it is computed there, and nothing is transposed. */
static void ember_conv_narrow_f32(float *y, const float *x, const float *wp, const float *bias, const float *res,
                                  float *scratch, const int32_t *p, int N, int M, int pw, int direct, int act,
                                  float act_a, float act_b, int lay) {
    const int C = p[EMBER_GEO_C], K = C * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W],
              P = p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const ptrdiff_t ps = lay & 1 ? C : 1; /* a channels-last x: C floats a pixel */
    float *yt = direct ? scratch : scratch + (ptrdiff_t)K * P;
    int n;
    for (n = 0; n < N; ++n) {
        const float *col = x + (ptrdiff_t)n * C * s_in;
        ptrdiff_t a_sm = 1, a_sk = P; /* col^T: pixel p's K products, a column of col */
        if (!direct) {
            ember_im2col_f32(scratch, P, col, C, ps, p, 0, P);
            col = scratch;
        } else if (ps > 1) { /* a channels-last 1x1's input is col^T itself */
            a_sm = C;
            a_sk = 1;
        }
        if (lay & 2) yt = y + (ptrdiff_t)n * M * P; /* the pixel-major result is the channels-last output */
#if EMBER_VL == 16
        if (pw % 64 == 0)
            ember_matmul_wide_f32(yt, M, col, a_sm, a_sk, wp, pw, P, M, K, bias, 0, res ? EMBER_ACT_NONE : act, act_a,
                                  act_b);
        else
#endif
            /* the general matmul's strips, in panels of pw columns (any build: its vectors divide the panel) */
            ember_matmul_core(yt, M, col, a_sm, a_sk, wp, 0, 0, pw, P, M, K, 1.0f, bias, 0, 1, 1.0f,
                              res ? EMBER_ACT_NONE : act, act_a, act_b);
        if (lay & 2) continue;
        ember_transpose2d_f32(y + (ptrdiff_t)n * M * P, yt, P, M);
        if (res)
            ember_residual_act_f32(y + (ptrdiff_t)n * M * P, res + (ptrdiff_t)n * M * P, (ptrdiff_t)M * P, act, act_a,
                                   act_b);
    }
}
/*@end*/

/*@kernel ember_convtranspose_f32 requires ember_matmul_f32 ember_conv_geo*/
/* Transposed convolution: per (image, group) col (Mg*KD*KH*KW x D*H*W) = w_g^T * x_g by the matmul kernel
 * (w_g is Cg x Mg*kvol, read transposed through strides), then col2im scatters-adds col into y, which
 * starts at the bias. Here p[1..3] are the input dims and p[7..9] the output dims. cl: x and y are stored
 * channels-last (ops/conv.py CHANNELS_LAST, where Transpose optimization moved the layout through): then the
 * product is col^T (D*H*W x Mg*kvol) = x_g * w_g, x_g's rows the input pixels, and col2im adds each input pixel's
 * row into the output pixels its taps reach, the channels M apart. */
EMBER_INLINE int ember_convt_out(int i, int k, const int32_t *p, int axis) {
    return i * p[EMBER_GEO_STRIDE_D + axis] - p[EMBER_GEO_PAD_D + axis] + k * p[EMBER_GEO_DIL_D + axis];
}
static void ember_convtranspose_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                                    const int32_t *p, int N, int G, int M, int cl, int act, float act_a,
                                    float act_b) {
    const int C = p[EMBER_GEO_C], D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W],
              KD = p[EMBER_GEO_K_D], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W];
    const int OD = p[EMBER_GEO_OUT_D], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], Cg = C / G, Mg = M / G,
              kvol = KD * KH * KW;
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W, s_out = (ptrdiff_t)OD * OH * OW;
    const ptrdiff_t ym = cl ? 1 : s_out, yq = cl ? M : 1; /* y's channel and pixel strides */
    int n, g, m, kd, kh, kw, id, ih, iw;
    ptrdiff_t i;
    for (n = 0; n < N; ++n) {
        float *yn = y + (ptrdiff_t)n * M * s_out;
        const float *xn = x + (ptrdiff_t)n * C * s_in;
        for (m = 0; m < M; ++m) {
            float b0 = bias ? bias[m] : 0.0f;
            for (i = 0; i < s_out; ++i) yn[m * ym + i * yq] = b0;
        }
        for (g = 0; g < G; ++g) {
            const float *wg = w + (ptrdiff_t)g * Cg * Mg * kvol, *xg = xn + (ptrdiff_t)g * Cg * (cl ? 1 : s_in);
            if (cl)
                ember_matmul_f32(col, (ptrdiff_t)Mg * kvol, xg, C, 1, wg, (ptrdiff_t)Mg * kvol, (int)s_in, Mg * kvol, Cg,
                                 1.0f, 0, 0, 0, 0.0f, 0, 0.0f, 0.0f);
            else
                ember_matmul_f32(col, s_in, wg, 1, (ptrdiff_t)Mg * kvol, xg, s_in, Mg * kvol, (int)s_in, Cg, 1.0f, 0, 0,
                                 0, 0.0f, 0, 0.0f, 0.0f);
            if (cl) { /* each input pixel's row: Mg channels of each tap, added at the channel stride 1 */
                for (id = 0; id < D; ++id)
                    for (ih = 0; ih < H; ++ih)
                        for (iw = 0; iw < W; ++iw) {
                            const float *ci = col + (((ptrdiff_t)id * H + ih) * W + iw) * Mg * kvol;
                            for (kd = 0; kd < KD; ++kd) {
                                const int od = ember_convt_out(id, kd, p, 0);
                                if (od < 0 || od >= OD) continue;
                                for (kh = 0; kh < KH; ++kh) {
                                    const int oh = ember_convt_out(ih, kh, p, 1);
                                    if (oh < 0 || oh >= OH) continue;
                                    for (kw = 0; kw < KW; ++kw) {
                                        const int ow = ember_convt_out(iw, kw, p, 2);
                                        const float *c0 = ci + (kd * KH + kh) * KW + kw;
                                        float *y0;
                                        if (ow < 0 || ow >= OW) continue;
                                        y0 = yn + (((ptrdiff_t)od * OH + oh) * OW + ow) * M + (ptrdiff_t)g * Mg;
                                        for (m = 0; m < Mg; ++m) y0[m] += c0[(ptrdiff_t)m * kvol];
                                    }
                                }
                            }
                        }
                continue;
            }
            for (m = 0; m < Mg; ++m) { /* each channel's rows of each tap, added along the output rows */
                const float *row = col + (ptrdiff_t)m * kvol * s_in;
                float *ymg = yn + ((ptrdiff_t)g * Mg + m) * s_out;
                for (kd = 0; kd < KD; ++kd)
                    for (kh = 0; kh < KH; ++kh)
                        for (kw = 0; kw < KW; ++kw, row += s_in)
                            for (id = 0; id < D; ++id) {
                                const int od = ember_convt_out(id, kd, p, 0);
                                if (od < 0 || od >= OD) continue;
                                for (ih = 0; ih < H; ++ih) {
                                    const int oh = ember_convt_out(ih, kh, p, 1);
                                    const float *r = row + ((ptrdiff_t)id * H + ih) * W;
                                    float *yr;
                                    if (oh < 0 || oh >= OH) continue;
                                    yr = ymg + ((ptrdiff_t)od * OH + oh) * OW;
                                    for (iw = 0; iw < W; ++iw) {
                                        const int ow = ember_convt_out(iw, kw, p, 2);
                                        if (ow >= 0 && ow < OW) yr[ow] += r[iw];
                                    }
                                }
                            }
            }
        }
        ember_act_apply_f32(yn, (ptrdiff_t)M * s_out, act, act_a, act_b);
    }
}
/*@end*/
