/* Convolution and transposed convolution, float32, NCHW with 1-3 spatial dims (lower ranks are
 * padded to 3-D with unit dims). Geometry comes in one static table `p` (int32):
 *   p[0] = C (input channels), p[1..3] = input D,H,W, p[4..6] = kernel KD,KH,KW,
 *   p[7..9] = output OD,OH,OW, p[10..12] = strides, p[13..15] = dilations, p[16..18] = leading pads. */

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

/*@kernel ember_im2col_f32 requires ember_window_bounds*/
/* Columns [q0, q0 + nq) of the convolution-as-matmul's B operand (ldc floats per row):
 *   col[(c*KD + kd)*KH*KW + kh*KW + kw][q - q0] = x[c][id][ih][iw] (0 outside the input), q = (od*OH + oh)*OW + ow.
 * Each output-row run is zeros, a (strided) copy, zeros, with the copy's bounds solved per tap. */
static void ember_im2col_f32(float *EMBER_RESTRICT col, ptrdiff_t ldc, const float *EMBER_RESTRICT x, int C,
                             const int32_t *p, ptrdiff_t q0, ptrdiff_t nq) {
    const int D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6], OH = p[8], OW = p[9];
    const int sw = p[12], start_ow = (int)(q0 % OW), start_oh = (int)(q0 / OW % OH), start_od = (int)(q0 / OW / OH);
    int c, kd, kh, kw, ow;
    for (c = 0; c < C; ++c)
        for (kd = 0; kd < KD; ++kd)
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw, col += ldc) {
                    const float *xc = x + (ptrdiff_t)c * D * H * W;
                    const int off = kw * p[15] - p[18];
                    int lo, hi, ow0 = start_ow, oh = start_oh, od = start_od;
                    ptrdiff_t q = q0;
                    ember_window_bounds(W, OW, sw, off, &lo, &hi);
                    /* Runs of one output row each: (od, oh, ow0) advance with q, no divisions. */
                    for (; q < q0 + nq; ow0 = 0, oh = oh + 1 == OH ? 0 : oh + 1, od += oh == 0) {
                        const int ow1 = q0 + nq - q < OW - ow0 ? ow0 + (int)(q0 + nq - q) : OW;
                        const int id = od * p[10] - p[16] + kd * p[13], ih = oh * p[11] - p[17] + kh * p[14];
                        float *EMBER_RESTRICT dst = col + (q - q0) - ow0; /* dst[ow] for ow in [ow0, ow1) */
                        const float *xr = xc + ((ptrdiff_t)id * H + ih) * W + off;
                        const int l = lo > ow0 ? (lo < ow1 ? lo : ow1) : ow0, h = hi < ow1 ? (hi > l ? hi : l) : ow1;
                        q += ow1 - ow0;
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {
                            for (ow = ow0; ow < ow1; ++ow) dst[ow] = 0.0f;
                            continue;
                        }
                        for (ow = ow0; ow < l; ++ow) dst[ow] = 0.0f;
                        if (sw == 1)
                            for (ow = l; ow < h; ++ow) dst[ow] = xr[ow];
                        else if (sw == 2)
                            for (ow = l; ow < h; ++ow) dst[ow] = xr[2 * (ptrdiff_t)ow];
                        else
                            for (ow = l; ow < h; ++ow) dst[ow] = xr[(ptrdiff_t)ow * sw];
                        for (ow = h; ow < ow1; ++ow) dst[ow] = 0.0f;
                    }
                }
}
/*@end*/

/*@kernel ember_conv_f32 requires ember_matmul_f32 ember_im2col_f32*/
/* Grouped convolution as matmuls per (image, group): y_g (Mg x OD*OH*OW) = w_g (Mg x K) * col (K x ...),
 * K = C/G * KD*KH*KW; bias and the fused activation are applied in the matmul epilogue. im2col runs
 * in blocks of `qb` output pixels (col holds K x qb floats, sized to stay in L2), each followed by
 * its matmul. `direct`: a 1x1, stride-1, unpadded conv reads the input itself as B (no im2col). */
static void ember_conv_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                           const int32_t *p, int N, int G, int M, int direct, int qb, int act, float act_a,
                           float act_b) {
    const int C = p[0], Cg = C / G, Mg = M / G;
    const int K = Cg * p[4] * p[5] * p[6];
    const ptrdiff_t s_in = (ptrdiff_t)p[1] * p[2] * p[3], s_out = (ptrdiff_t)p[7] * p[8] * p[9];
    ptrdiff_t q0;
    int n, g;
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const float *xg = x + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * s_in;
            float *yg = y + ((ptrdiff_t)n * M + (ptrdiff_t)g * Mg) * s_out;
            const float *wg = w + (ptrdiff_t)g * Mg * K, *bg = bias ? bias + (ptrdiff_t)g * Mg : bias;
            if (direct) {
                ember_matmul_f32(yg, s_out, wg, K, 1, xg, s_out, Mg, (int)s_out, K, 1.0f, bg, 1, 0, 1.0f, act,
                                 act_a, act_b);
                continue;
            }
            for (q0 = 0; q0 < s_out; q0 += qb) {
                const int nq = s_out - q0 < qb ? (int)(s_out - q0) : qb;
                ember_im2col_f32(col, nq, xg, Cg, p, q0, nq);
                ember_matmul_f32(yg + q0, s_out, wg, K, 1, col, nq, Mg, nq, K, 1.0f, bg, 1, 0, 1.0f, act, act_a,
                                 act_b);
            }
        }
}
/*@end*/

/*@kernel ember_conv_narrow_f32 requires ember_matmul_panels_f32 ember_im2col_f32 ember_transpose2d_f32*/
/* Pixel-major convolution for few output pixels P and many channels M (ember/passes/conv_algorithms.py):
 * yt (P x M) = col^T (P x K) * w^T (K x M), then y = yt^T. The vectors run along the output channels
 * and the pixels are broadcast, so P = 49 wastes no lanes. The weights, the big operand here, were
 * transposed and packed in 32-channel panels at compile time, so they stream from memory once, in
 * order. `scratch`: im2col (K x P, unless `direct`) then yt. */
static void ember_conv_narrow_f32(float *y, const float *x, const float *wp, const float *bias, float *scratch,
                                  const int32_t *p, int N, int M, int direct, int act, float act_a, float act_b) {
    const int C = p[0], K = C * p[4] * p[5] * p[6], P = p[7] * p[8] * p[9];
    const ptrdiff_t s_in = (ptrdiff_t)p[1] * p[2] * p[3];
    float *yt = direct ? scratch : scratch + (ptrdiff_t)K * P;
    int n;
    for (n = 0; n < N; ++n) {
        const float *col = x + (ptrdiff_t)n * C * s_in;
        if (!direct) {
            ember_im2col_f32(scratch, P, col, C, p, 0, P);
            col = scratch;
        }
        ember_matmul_panels_f32(yt, M, col, 1, P, wp, P, M, K, bias, 0, 1, act, act_a, act_b);
        ember_transpose2d_f32(y + (ptrdiff_t)n * M * P, yt, P, M);
    }
}
/*@end*/

/*@kernel ember_dwconv_rows_f32 requires ember_act_apply_f32 ember_window_bounds*/
/* Depthwise convolution (one input channel per group; M = C * multiplier), any rank, one output row at a time:
 * each kernel tap adds a scaled input row segment, y[ow] += w * x[ow*stride + off] over the outputs
 * whose input column is inside the row. With the segment's bounds solved first, the inner loop is a
 * branch-free axpy (contiguous, vectorized, at stride 1). */
static void ember_dwconv_rows_f32(float *y, const float *x, const float *w, const float *bias, const int32_t *p,
                             int N, int M, int act, float act_a, float act_b) {
    const int C = p[0], D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6];
    const int OD = p[7], OH = p[8], OW = p[9], sw = p[12], mult = M / C;
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
                        int id = od * p[10] - p[16] + kd * p[13];
                        if (id < 0 || id >= D) continue;
                        for (kh = 0; kh < KH; ++kh) {
                            int ih = oh * p[11] - p[17] + kh * p[14];
                            const float *EMBER_RESTRICT xr;
                            const float *wr;
                            if (ih < 0 || ih >= H) continue;
                            xr = xc + ((ptrdiff_t)id * H + ih) * W;
                            wr = wm + ((ptrdiff_t)kd * KH + kh) * KW;
                            for (kw = 0; kw < KW; ++kw) {
                                const int off = kw * p[15] - p[18];
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

/*@kernel ember_dwconv_f32 requires ember_dwconv_rows_f32*/
/* 2-D depthwise convolution over a zero-padded, polyphase copy of each input plane, so that every
 * tap is one contiguous, bounds-free vector loop over the whole output plane, however narrow its rows.
 * The padded plane xp (the Hp x Wp extent the windows read) is split by row phase a = r % sh and
 * column phase b = c % sw into planes P[a][b] of Hh x Wh (Hh = ceil(Hp/sh), Wh = ceil(Wp/sw)); then
 *   xp[oh*sh + kh*dh][ow*sw + kw*dw] = P[(kh*dh) % sh][(kw*dw) % sw][oh + kh*dh/sh][ow + kw*dw/sw],
 * i.e. tap t reads its plane at flat index q + off_t for output q = oh*Wh + ow. Outputs are computed
 * flat at pitch Wh (columns past OW are never copied out); 3x3 windows keep all nine taps in one pass.
 * `pad`: scratch of sh*sw*Hh*Wh + OH*Wh floats. 3-D inputs use the row kernel. */
static void ember_dwconv_f32(float *y, const float *x, const float *w, const float *bias, float *pad,
                             const int32_t *p, int N, int M, int act, float act_a, float act_b) {
    const int C = p[0], H = p[2], W = p[3], KH = p[5], KW = p[6], OH = p[8], OW = p[9];
    const int sh = p[11], sw = p[12], dh = p[14], dw = p[15], pt = p[17], pl = p[18], mult = M / C;
    const int Hp = (OH - 1) * sh + (KH - 1) * dh + 1, Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
    const int Hh = (Hp + sh - 1) / sh, Wh = (Wp + sw - 1) / sw;
    const ptrdiff_t plane = (ptrdiff_t)Hh * Wh, len = (ptrdiff_t)(OH - 1) * Wh + OW;
    float *EMBER_RESTRICT acc = pad + sh * sw * plane;
    int n, m, a, b, i, j, kh, kw, oh, ow;
    ptrdiff_t q;
    if (p[1] != 1 || p[4] != 1 || p[7] != 1) {
        ember_dwconv_rows_f32(y, x, w, bias, p, N, M, act, act_a, act_b);
        return;
    }
    for (n = 0; n < N; ++n)
        for (m = 0; m < M; ++m) {
            const float *EMBER_RESTRICT xc = x + ((ptrdiff_t)n * C + m / mult) * H * W;
            const float *wm = w + (ptrdiff_t)m * KH * KW;
            const float b0 = bias ? bias[m] : 0.0f;
            float *EMBER_RESTRICT ym = y + ((ptrdiff_t)n * M + m) * OH * OW;
            /* Row i of plane (a, b) holds padded row r = i*sh + a, columns c = j*sw + b: input row r - pt,
             * column c - pl where those are inside the input, else zero (columns at c >= Wp are never read
             * for a valid output). At sw == 2 both column phases of a row are filled in one pass over it
             * (a deinterleave, which vectorizes), elsewhere one phase at a time. */
            for (a = 0; a < sh; ++a)
                for (i = 0; i < Hh; ++i) {
                    const int ih = i * sh + a - pt, in_row = i * sh + a < Hp && ih >= 0 && ih < H;
                    const float *xr = xc + (ptrdiff_t)ih * W - pl;
                    if (sw == 2) {
                        float *EMBER_RESTRICT ev = pad + (a * 2) * plane + (ptrdiff_t)i * Wh, *EMBER_RESTRICT od = ev + plane;
                        int lo = in_row ? (pl + 1) / 2 : 0, hi = in_row ? (W - 2 + pl) / 2 + 1 : 0;
                        if (hi > Wh) hi = Wh;
                        if (lo > hi) lo = hi;
                        for (j = 0; j < lo; ++j) {
                            const int c = 2 * j - pl;
                            ev[j] = in_row && c >= 0 && c < W ? xr[2 * j] : 0.0f;
                            od[j] = in_row && c + 1 >= 0 && c + 1 < W ? xr[2 * j + 1] : 0.0f;
                        }
                        for (j = lo; j < hi; ++j) {
                            ev[j] = xr[2 * (ptrdiff_t)j];
                            od[j] = xr[2 * (ptrdiff_t)j + 1];
                        }
                        for (j = hi; j < Wh; ++j) {
                            const int c = 2 * j - pl;
                            ev[j] = in_row && c >= 0 && c < W ? xr[2 * j] : 0.0f;
                            od[j] = in_row && c + 1 >= 0 && c + 1 < W ? xr[2 * j + 1] : 0.0f;
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
                        for (j = lo; j < hi; ++j) dst[j] = xr[(ptrdiff_t)j * sw + b];
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
            for (oh = 0; oh < OH; ++oh)
                for (ow = 0; ow < OW; ++ow) ym[(ptrdiff_t)oh * OW + ow] = acc[(ptrdiff_t)oh * Wh + ow];
            ember_act_apply_f32(ym, (ptrdiff_t)OH * OW, act, act_a, act_b);
        }
}
/*@end*/

/*@kernel ember_convtranspose_f32 requires ember_matmul_f32*/
/* Transposed convolution: per (image, group) col (Mg*KD*KH*KW x D*H*W) = w_g^T * x_g by the matmul kernel
 * (w_g is Cg x Mg*kvol, read transposed through strides), then col2im scatters-adds col into y, which
 * starts at the bias. Here p[1..3] are the input dims and p[7..9] the output dims. */
static void ember_convtranspose_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                                    const int32_t *p, int N, int G, int M, int act, float act_a, float act_b) {
    const int C = p[0], D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6];
    const int OD = p[7], OH = p[8], OW = p[9], Cg = C / G, Mg = M / G, kvol = KD * KH * KW;
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W, s_out = (ptrdiff_t)OD * OH * OW;
    int n, g, m, kd, kh, kw, id, ih, iw;
    ptrdiff_t i;
    for (n = 0; n < N; ++n) {
        float *yn = y + (ptrdiff_t)n * M * s_out;
        for (m = 0; m < M; ++m) {
            float b0 = bias ? bias[m] : 0.0f;
            for (i = 0; i < s_out; ++i) yn[(ptrdiff_t)m * s_out + i] = b0;
        }
        for (g = 0; g < G; ++g) {
            const float *row = col;
            ember_matmul_f32(col, s_in, w + (ptrdiff_t)g * Cg * Mg * kvol, 1, (ptrdiff_t)Mg * kvol,
                             x + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * s_in, s_in, Mg * kvol, (int)s_in, Cg,
                             1.0f, 0, 0, 0, 0.0f, 0, 0.0f, 0.0f);
            for (m = 0; m < Mg; ++m) {
                float *ym = yn + ((ptrdiff_t)g * Mg + m) * s_out;
                for (kd = 0; kd < KD; ++kd)
                    for (kh = 0; kh < KH; ++kh)
                        for (kw = 0; kw < KW; ++kw, row += s_in)
                            for (id = 0; id < D; ++id) {
                                int od = id * p[10] - p[16] + kd * p[13];
                                if (od < 0 || od >= OD) continue;
                                for (ih = 0; ih < H; ++ih) {
                                    int oh = ih * p[11] - p[17] + kh * p[14];
                                    const float *r;
                                    float *yr;
                                    if (oh < 0 || oh >= OH) continue;
                                    r = row + ((ptrdiff_t)id * H + ih) * W;
                                    yr = ym + ((ptrdiff_t)od * OH + oh) * OW;
                                    for (iw = 0; iw < W; ++iw) {
                                        int ow = iw * p[12] - p[18] + kw * p[15];
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
