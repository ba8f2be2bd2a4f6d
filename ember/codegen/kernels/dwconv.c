/* Float depthwise convolution kernels (one input channel per group). Geometry table `p` as in conv.c.
 * The 3x3 pad-1 stride-1/2 fast paths are in dwconv3.c; ember_dwconv_f32 here tries them first. */

/*@kernel ember_dwconv_rows_f32 requires ember_act_apply_f32 ember_window_bounds ember_conv_geo*/
/* Depthwise convolution (one input channel per group; M = C * multiplier), any rank, one output row at a time:
 * each kernel tap adds a scaled input row segment, y[ow] += w * x[ow*stride + off] over the outputs
 * whose input column is inside the row. With the segment's bounds solved first, the inner loop is a
 * branch-free axpy (contiguous, vectorized, at stride 1). */
static void ember_dwconv_rows_f32(float *y, const float *x, const float *w, const float *bias, const int32_t *p,
                             int N, int M, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W],
              KD = p[EMBER_GEO_K_D], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W];
    const int OD = p[EMBER_GEO_OUT_D], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], sw = p[EMBER_GEO_STRIDE_W],
              mult = M / C;
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W, s_out = (ptrdiff_t)OD * OH * OW;
    int n, m, od, oh, ow, kd, kh, kw;
    for (n = 0; n < N; ++n)
        for (m = 0; m < M; ++m) {
            const float *xc = x + ((ptrdiff_t)n * C + m / mult) * s_in;
            const float *wm = w + (ptrdiff_t)m * KD * KH * KW;
            float *ym = y + ((ptrdiff_t)n * M + m) * s_out;
            const float b0 = bias ? bias[m] : 0.0f;
            for (od = 0; od < OD; ++od)
                for (oh = 0; oh < OH; ++oh) {
                    float *EMBER_RESTRICT yr = ym + ((ptrdiff_t)od * OH + oh) * OW;
                    for (ow = 0; ow < OW; ++ow) yr[ow] = b0;
                    for (kd = 0; kd < KD; ++kd) {
                        int id = od * p[EMBER_GEO_STRIDE_D] - p[EMBER_GEO_PAD_D] + kd * p[EMBER_GEO_DIL_D];
                        if (id < 0 || id >= D) continue;
                        for (kh = 0; kh < KH; ++kh) {
                            int ih = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H] + kh * p[EMBER_GEO_DIL_H];
                            const float *EMBER_RESTRICT xr;
                            const float *wr;
                            if (ih < 0 || ih >= H) continue;
                            xr = xc + ((ptrdiff_t)id * H + ih) * W;
                            wr = wm + ((ptrdiff_t)kd * KH + kh) * KW;
                            for (kw = 0; kw < KW; ++kw) {
                                const int off = kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W];
                                const float wv = wr[kw];
                                int l, h;
                                ember_window_bounds(W, OW, sw, off, &l, &h);
                                if (sw == 1)
                                    for (ow = l; ow < h; ++ow) yr[ow] += wv * xr[ow + off];
                                else
                                    for (ow = l; ow < h; ++ow) yr[ow] += wv * xr[(ptrdiff_t)ow * sw + off];
                            }
                        }
                    }
                    ember_act_apply_f32(yr, OW, act, act_a, act_b);
                }
        }
}
/*@end*/

/*@kernel ember_dw3_blocked requires ember_dw3_common ember_act_apply_f32 ember_conv_geo*/
#if EMBER_VL > 1
#if EMBER_VL == 16
#define EMBER_DW_ZIPLO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define EMBER_DW_ZIPHI 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#elif EMBER_VL == 8
#define EMBER_DW_ZIPLO 0, 8, 1, 9, 2, 10, 3, 11
#define EMBER_DW_ZIPHI 4, 12, 5, 13, 6, 14, 7, 15
#else
#define EMBER_DW_ZIPLO 0, 4, 1, 5
#define EMBER_DW_ZIPHI 2, 6, 3, 7
#endif
#define EMBER_DW3_BLOCKED_PIXELS 256 /* stride-1 input planes up to this size (4x at stride 2) go blocked */
/* v[0..EMBER_VL) as the rows of a square matrix, transposed: log2(EMBER_VL) rounds of zipping row i with
 * row i + EMBER_VL/2 into rows 2i, 2i + 1. */
EMBER_INLINE void ember_dw_transpose(ember_vf *v) {
    ember_vf u[EMBER_VL];
    int round, i;
    for (round = 1; round < EMBER_VL; round *= 2) {
        for (i = 0; i < EMBER_VL / 2; ++i) {
            u[2 * i] = EMBER_DW_PICK(v[i], v[i + EMBER_VL / 2], EMBER_DW_ZIPLO);
            u[2 * i + 1] = EMBER_DW_PICK(v[i], v[i + EMBER_VL / 2], EMBER_DW_ZIPHI);
        }
        for (i = 0; i < EMBER_VL; ++i) v[i] = u[i];
    }
}

/* The n output vectors at `out` (a channel per lane, planes j0 .. j0+VL-1) back into those planes of y, each n
 * pixels: first any activation other than a clamp (applied in registers before), while the outputs are one
 * contiguous run rather than VL short planes. */
EMBER_INLINE void ember_dw_unblock(float *y, float *out, ptrdiff_t n, ptrdiff_t j0, int clamp, int act, float act_a,
                                   float act_b) {
    ember_vf v[EMBER_VL];
    ptrdiff_t p0;
    int c, k;
    if (!clamp) ember_act_apply_f32(out, n * EMBER_VL, act, act_a, act_b);
    for (p0 = 0; p0 < n; p0 += EMBER_VL) {
        if (p0 > n - EMBER_VL) p0 = n - EMBER_VL;
        for (k = 0; k < EMBER_VL; ++k) v[k] = EMBER_DW_LD(out + (p0 + k) * EMBER_VL);
        ember_dw_transpose(v);
        for (c = 0; c < EMBER_VL; ++c) EMBER_DW_ST(y + (j0 + c) * n + p0, v[c]);
    }
}

/* EMBER_VL consecutive planes j0.. of the N*C input planes (multiplier 1) at once, a channel per vector
 * lane, for small planes where per-plane overheads would dominate: the planes transposed into `grid`, a
 * (H + 2) x (W + 2) grid of channel vectors whose zero border is the padding (written once per call by
 * the caller), then every output is nine aligned vector products, with no masks and no phase planes at
 * stride 2; the outputs (`out`, n vectors) are transposed back into the planes. wt: 10 vectors. */
static void ember_dw3_blocked(float *y, const float *x, const float *w, const float *bias, float *grid, float *out,
                              float *wt, const int32_t *p, ptrdiff_t j0, int clamp, float lo, float hi, int act,
                              float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], s = p[EMBER_GEO_STRIDE_H];
    const ptrdiff_t hw = (ptrdiff_t)H * W, n = (ptrdiff_t)OH * OW, row = (ptrdiff_t)(W + 2) * EMBER_VL;
    ember_vf v[EMBER_VL], wv[9], bv, acc;
    ptrdiff_t p0;
    int c, k, r, col, oh, ow;
    for (c = 0; c < EMBER_VL; ++c) {
        const ptrdiff_t m = (j0 + c) % C;
        for (k = 0; k < 9; ++k) wt[k * EMBER_VL + c] = w[m * 9 + k];
        wt[9 * EMBER_VL + c] = bias ? bias[m] : 0.0f;
    }
    for (k = 0; k < 9; ++k) wv[k] = EMBER_DW_LD(wt + k * EMBER_VL);
    bv = EMBER_DW_LD(wt + 9 * EMBER_VL);
    for (p0 = 0; p0 < hw; p0 += EMBER_VL) {
        if (p0 > hw - EMBER_VL) p0 = hw - EMBER_VL;
        for (c = 0; c < EMBER_VL; ++c) v[c] = EMBER_DW_LD(x + (j0 + c) * hw + p0);
        ember_dw_transpose(v);
        r = (int)(p0 / W), col = (int)(p0 % W);
        for (k = 0; k < EMBER_VL; ++k) {
            EMBER_DW_ST(grid + (r + 1) * row + (ptrdiff_t)(col + 1) * EMBER_VL, v[k]);
            if (++col == W) col = 0, ++r;
        }
    }
    for (oh = 0; oh < OH; ++oh)
        for (ow = 0; ow < OW; ++ow) {
            const float *a = grid + (ptrdiff_t)oh * s * row + (ptrdiff_t)ow * s * EMBER_VL, *b = a + row, *d = b + row;
            acc = bv + wv[0] * EMBER_DW_LD(a) + wv[1] * EMBER_DW_LD(a + EMBER_VL) + wv[2] * EMBER_DW_LD(a + 2 * EMBER_VL);
            acc += wv[3] * EMBER_DW_LD(b) + wv[4] * EMBER_DW_LD(b + EMBER_VL) + wv[5] * EMBER_DW_LD(b + 2 * EMBER_VL);
            acc += wv[6] * EMBER_DW_LD(d) + wv[7] * EMBER_DW_LD(d + EMBER_VL) + wv[8] * EMBER_DW_LD(d + 2 * EMBER_VL);
            EMBER_DW_ST(out + ((ptrdiff_t)oh * OW + ow) * EMBER_VL, ember_dw_clamp(acc, clamp, lo, hi));
        }
    ember_dw_unblock(y, out, n, j0, clamp, act, act_a, act_b);
}
#endif
/*@end*/

/*@kernel ember_dwconv_f32 requires ember_dwconv_rows_f32 ember_dwconv3_f32 ember_conv_geo*/
/* 2-D depthwise convolution over a zero-padded, polyphase copy of each input plane, so that every
 * tap is one contiguous, bounds-free vector loop over the whole output plane, however narrow its rows.
 * The padded plane xp (the Hp x Wp extent the windows read) is split by row phase a = r % sh and
 * column phase b = c % sw into planes P[a][b] of Hh x Wh (Hh = ceil(Hp/sh), Wh = ceil(Wp/sw)); then
 *   xp[oh*sh + kh*dh][ow*sw + kw*dw] = P[(kh*dh) % sh][(kw*dw) % sw][oh + kh*dh/sh][ow + kw*dw/sw],
 * i.e. tap t reads its plane at flat index q + off_t for output q = oh*Wh + ow. Outputs are computed
 * flat at pitch Wh (columns past OW are never copied out); 3x3 windows keep all nine taps in one pass.
 * `pad`: scratch of sh*sw*Hh*Wh + OH*Wh floats. 2-D only. `xps`, `yps` (constants where inlined): the pixel
 * strides, 1 for NCHW planes, the channel count where a side is stored channels-last (NHWC: ember_dwconv_strided_f32),
 * whose planes are then filled and stored at that stride. */
EMBER_INLINE void ember_dwconv_planes_t(float *y, const float *x, const float *w, const float *bias, float *pad,
                                        const int32_t *p, int N, int M, int act, float act_a, float act_b,
                                        ptrdiff_t xps, ptrdiff_t yps) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H], dw = p[EMBER_GEO_DIL_W],
              pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W], mult = M / C;
    const int Hp = (OH - 1) * sh + (KH - 1) * dh + 1, Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
    const int Hh = (Hp + sh - 1) / sh, Wh = (Wp + sw - 1) / sw;
    const ptrdiff_t plane = (ptrdiff_t)Hh * Wh, len = (ptrdiff_t)(OH - 1) * Wh + OW;
    float *EMBER_RESTRICT acc = pad + sh * sw * plane;
    int n, m, a, b, i, j, kh, kw, oh, ow;
    ptrdiff_t q;
    for (n = 0; n < N; ++n)
        for (m = 0; m < M; ++m) {
            /* channel m / mult's plane, or its first byte of an NHWC image (then its pixels xps apart) */
            const float *EMBER_RESTRICT xc = xps == 1 ? x + ((ptrdiff_t)n * C + m / mult) * H * W
                                                      : x + (ptrdiff_t)n * C * H * W + m / mult;
            const float *wm = w + (ptrdiff_t)m * KH * KW;
            const float b0 = bias ? bias[m] : 0.0f;
            float *EMBER_RESTRICT ym = yps == 1 ? y + ((ptrdiff_t)n * M + m) * OH * OW
                                                : y + (ptrdiff_t)n * M * OH * OW + m;
            /* Row i of plane (a, b) holds padded row r = i*sh + a, columns c = j*sw + b: input row r - pt,
             * column c - pl where those are inside the input, else zero (columns at c >= Wp are never read
             * for a valid output). At sw == 2 both column phases of a row are filled in one pass over it
             * (a deinterleave, which vectorizes), elsewhere one phase at a time. */
            for (a = 0; a < sh; ++a)
                for (i = 0; i < Hh; ++i) {
                    const int ih = i * sh + a - pt, in_row = i * sh + a < Hp && ih >= 0 && ih < H;
                    const float *xr = xps == 1 ? xc + (ptrdiff_t)ih * W - pl : xc + ((ptrdiff_t)ih * W - pl) * xps;
                    if (sw == 2) {
                        float *EMBER_RESTRICT ev = pad + (a * 2) * plane + (ptrdiff_t)i * Wh, *EMBER_RESTRICT od = ev + plane;
                        int lo = in_row ? (pl + 1) / 2 : 0, hi = in_row ? (W - 2 + pl) / 2 + 1 : 0;
                        if (hi > Wh) hi = Wh;
                        if (lo > hi) lo = hi;
                        for (j = 0; j < lo; ++j) {
                            const int c = 2 * j - pl;
                            ev[j] = in_row && c >= 0 && c < W ? xr[2 * j * xps] : 0.0f;
                            od[j] = in_row && c + 1 >= 0 && c + 1 < W ? xr[(2 * j + 1) * xps] : 0.0f;
                        }
                        for (j = lo; j < hi; ++j) {
                            ev[j] = xr[2 * (ptrdiff_t)j * xps];
                            od[j] = xr[(2 * (ptrdiff_t)j + 1) * xps];
                        }
                        for (j = hi; j < Wh; ++j) {
                            const int c = 2 * j - pl;
                            ev[j] = in_row && c >= 0 && c < W ? xr[2 * j * xps] : 0.0f;
                            od[j] = in_row && c + 1 >= 0 && c + 1 < W ? xr[(2 * j + 1) * xps] : 0.0f;
                        }
                        continue;
                    }
                    for (b = 0; b < sw; ++b) {
                        float *EMBER_RESTRICT dst = pad + (a * sw + b) * plane + (ptrdiff_t)i * Wh;
                        int lo = 0, hi = 0;
                        if (in_row) {
                            lo = b - pl >= 0 ? 0 : (pl - b + sw - 1) / sw;
                            hi = W - 1 - b + pl < 0 ? 0 : (W - 1 - b + pl) / sw + 1;
                            if (hi > Wh) hi = Wh;
                            if (lo > hi) lo = hi;
                        }
                        for (j = 0; j < lo; ++j) dst[j] = 0.0f;
                        for (j = lo; j < hi; ++j) dst[j] = xr[((ptrdiff_t)j * sw + b) * xps];
                        for (j = hi; j < Wh; ++j) dst[j] = 0.0f;
                    }
                }
#define EMBER_DW_TAP(KH_, KW_)                                                                          \
    (pad + (((KH_) * dh % sh) * sw + (KW_) * dw % sw) * plane + (ptrdiff_t)((KH_) * dh / sh) * Wh +   \
     (KW_) * dw / sw)
            /* 3x3, undilated, stride 1 or 2: all nine taps in one pass, addressed from few base pointers
             * (nine separate pointers would not fit the registers). */
            if (KH == 3 && KW == 3 && dh == 1 && dw == 1 && sh == sw && sh <= 2) {
                const float w0 = wm[0], w1 = wm[1], w2 = wm[2], w3 = wm[3], w4 = wm[4], w5 = wm[5];
                const float w6 = wm[6], w7 = wm[7], w8 = wm[8];
                if (sh == 1) {
                    const float *r0 = pad, *r1 = pad + Wh, *r2 = pad + 2 * (ptrdiff_t)Wh;
                    for (q = 0; q < len; ++q)
                        acc[q] = b0 + w0 * r0[q] + w1 * r0[q + 1] + w2 * r0[q + 2] + w3 * r1[q] + w4 * r1[q + 1] +
                                 w5 * r1[q + 2] + w6 * r2[q] + w7 * r2[q + 1] + w8 * r2[q + 2];
                } else { /* planes (row phase, column phase): 00, 01, 10, 11 */
                    const float *p00 = pad, *p01 = pad + plane, *p10 = pad + 2 * plane, *p11 = pad + 3 * plane;
                    for (q = 0; q < len; ++q)
                        acc[q] = b0 + w0 * p00[q] + w1 * p01[q] + w2 * p00[q + 1] + w3 * p10[q] + w4 * p11[q] +
                                 w5 * p10[q + 1] + w6 * p00[q + Wh] + w7 * p01[q + Wh] + w8 * p00[q + Wh + 1];
                }
            } else if (KW == 5) {
                /* EfficientNet's and MobileNetV3's 5x5: one pass per kernel row (five taps added in registers)
                 * instead of one per tap, so acc is loaded and stored 5 times, not 25. */
                for (q = 0; q < len; ++q) acc[q] = b0;
                for (kh = 0; kh < KH; ++kh) {
                    const float *EMBER_RESTRICT t0 = EMBER_DW_TAP(kh, 0), *EMBER_RESTRICT t1 = EMBER_DW_TAP(kh, 1),
                                *EMBER_RESTRICT t2 = EMBER_DW_TAP(kh, 2), *EMBER_RESTRICT t3 = EMBER_DW_TAP(kh, 3),
                                *EMBER_RESTRICT t4 = EMBER_DW_TAP(kh, 4);
                    const float v0 = wm[kh * 5], v1 = wm[kh * 5 + 1], v2 = wm[kh * 5 + 2], v3 = wm[kh * 5 + 3],
                                v4 = wm[kh * 5 + 4];
                    for (q = 0; q < len; ++q)
                        acc[q] += v0 * t0[q] + v1 * t1[q] + v2 * t2[q] + v3 * t3[q] + v4 * t4[q];
                }
            } else {
                for (q = 0; q < len; ++q) acc[q] = b0;
                for (kh = 0; kh < KH; ++kh)
                    for (kw = 0; kw < KW; ++kw) {
                        const float *EMBER_RESTRICT t = EMBER_DW_TAP(kh, kw);
                        const float wv = wm[kh * KW + kw];
                        for (q = 0; q < len; ++q) acc[q] += wv * t[q];
                    }
            }
#undef EMBER_DW_TAP
            if (yps != 1) { /* each row's activation in acc, then the row at the pixel stride */
                for (oh = 0; oh < OH; ++oh) {
                    ember_act_apply_f32(acc + (ptrdiff_t)oh * Wh, OW, act, act_a, act_b);
                    for (ow = 0; ow < OW; ++ow) ym[((ptrdiff_t)oh * OW + ow) * yps] = acc[(ptrdiff_t)oh * Wh + ow];
                }
                continue;
            }
            for (oh = 0; oh < OH; ++oh)
                for (ow = 0; ow < OW; ++ow) ym[(ptrdiff_t)oh * OW + ow] = acc[(ptrdiff_t)oh * Wh + ow];
            ember_act_apply_f32(ym, (ptrdiff_t)OH * OW, act, act_a, act_b);
        }
}
static void ember_dwconv_planes_f32(float *y, const float *x, const float *w, const float *bias, float *pad,
                                    const int32_t *p, int N, int M, int act, float act_a, float act_b) {
    ember_dwconv_planes_t(y, x, w, bias, pad, p, N, M, act, act_a, act_b, 1, 1);
}

static void ember_dwconv_f32(float *y, const float *x, const float *w, const float *bias, float *pad,
                             const int32_t *p, int N, int M, int act, float act_a, float act_b) {
    if (p[EMBER_GEO_IN_D] != 1 || p[EMBER_GEO_K_D] != 1 || p[EMBER_GEO_OUT_D] != 1)
        ember_dwconv_rows_f32(y, x, w, bias, p, N, M, act, act_a, act_b);
    else if (!ember_dwconv3_f32(y, x, w, bias, pad, p, N, M, act, act_a, act_b))
        ember_dwconv_planes_f32(y, x, w, bias, pad, p, N, M, act, act_a, act_b);
}
/*@end*/

/*@kernel ember_dwconv_strided_f32 requires ember_dwconv_f32*/
/* ember_dwconv_f32's planes (2-D) at a channels-last model's edge on a microcontroller (ops/conv.py
 * dw_strided): each channel's padded planes filled from, and its output rows stored to, NHWC at the pixel stride
 * (lay bit 0: the input, bit 1: the output), so that no NCHW copy of either tensor takes RAM. */
static void ember_dwconv_strided_f32(float *y, const float *x, const float *w, const float *bias, float *pad,
                                     const int32_t *p, int N, int M, int lay, int act, float act_a, float act_b) {
    ember_dwconv_planes_t(y, x, w, bias, pad, p, N, M, act, act_a, act_b, lay & 1 ? p[EMBER_GEO_C] : 1,
                          lay & 2 ? M : 1);
}
/*@end*/
