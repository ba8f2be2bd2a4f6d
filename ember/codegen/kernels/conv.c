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
/* col[(c*KD + kd)*KH*KW + kh*KW + kw][od*OH*OW + oh*OW + ow] = x[c][id][ih][iw] (0 outside the input),
 * the B operand of the convolution-as-matmul. Each output row is zeros, a (strided) copy, zeros. */
static void ember_im2col_f32(float *EMBER_RESTRICT col, const float *EMBER_RESTRICT x, int C, const int32_t *p) {
    const int D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6], OD = p[7], OH = p[8], OW = p[9];
    const int sw = p[12];
    int c, kd, kh, kw, od, oh, ow;
    for (c = 0; c < C; ++c)
        for (kd = 0; kd < KD; ++kd)
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw) {
                    const float *xc = x + (ptrdiff_t)c * D * H * W;
                    const int off = kw * p[15] - p[18];
                    int lo, hi;
                    ember_window_bounds(W, OW, sw, off, &lo, &hi);
                    for (od = 0; od < OD; ++od) {
                        int id = od * p[10] - p[16] + kd * p[13];
                        for (oh = 0; oh < OH; ++oh, col += OW) {
                            int ih = oh * p[11] - p[17] + kh * p[14];
                            const float *xr = xc + ((ptrdiff_t)id * H + ih) * W + off;
                            if (id < 0 || id >= D || ih < 0 || ih >= H) {
                                for (ow = 0; ow < OW; ++ow) col[ow] = 0.0f;
                                continue;
                            }
                            for (ow = 0; ow < lo; ++ow) col[ow] = 0.0f;
                            if (sw == 1)
                                for (ow = lo; ow < hi; ++ow) col[ow] = xr[ow];
                            else if (sw == 2)
                                for (ow = lo; ow < hi; ++ow) col[ow] = xr[2 * (ptrdiff_t)ow];
                            else
                                for (ow = lo; ow < hi; ++ow) col[ow] = xr[(ptrdiff_t)ow * sw];
                            for (ow = hi; ow < OW; ++ow) col[ow] = 0.0f;
                        }
                    }
                }
}
/*@end*/

/*@kernel ember_conv_f32 requires ember_matmul_f32 ember_im2col_f32*/
/* Grouped convolution as one matmul per (image, group): y_g (Mg x OD*OH*OW) = w_g (Mg x K) * col (K x ...),
 * K = C/G * KD*KH*KW; bias and the fused activation are applied in the matmul epilogue.
 * `direct`: a 1x1, stride-1, unpadded conv reads the input itself as the B operand (no im2col). */
static void ember_conv_f32(float *y, const float *x, const float *w, const float *bias, float *col,
                           const int32_t *p, int N, int G, int M, int direct, int act, float act_a, float act_b) {
    const int C = p[0], Cg = C / G, Mg = M / G;
    const int K = Cg * p[4] * p[5] * p[6];
    const ptrdiff_t s_in = (ptrdiff_t)p[1] * p[2] * p[3], s_out = (ptrdiff_t)p[7] * p[8] * p[9];
    int n, g;
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const float *xg = x + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * s_in;
            const float *b = xg;
            if (!direct) {
                ember_im2col_f32(col, xg, Cg, p);
                b = col;
            }
            ember_matmul_f32(y + ((ptrdiff_t)n * M + (ptrdiff_t)g * Mg) * s_out, s_out,
                             w + (ptrdiff_t)g * Mg * K, K, 1, b, s_out, Mg, (int)s_out, K, 1.0f,
                             bias ? bias + (ptrdiff_t)g * Mg : bias, 1, 0, 1.0f, act, act_a, act_b);
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
             * column c - pl where those are inside the input (and r, c inside Hp x Wp), else zero. */
            for (a = 0; a < sh; ++a)
                for (b = 0; b < sw; ++b)
                    for (i = 0; i < Hh; ++i) {
                        float *EMBER_RESTRICT dst = pad + (a * sw + b) * plane + (ptrdiff_t)i * Wh;
                        const int r = i * sh + a, ih = r - pt, off = b - pl;
                        const int cols = (Wp - b + sw - 1) / sw; /* j with c < Wp */
                        int lo = 0, hi = 0;
                        if (r < Hp && ih >= 0 && ih < H) {
                            lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                            hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / sw + 1;
                            if (hi > cols) hi = cols;
                            if (lo > hi) lo = hi;
                        }
                        for (j = 0; j < lo; ++j) dst[j] = 0.0f;
                        if (sw == 1)
                            for (j = lo; j < hi; ++j) dst[j] = xc[(ptrdiff_t)ih * W + j + off];
                        else
                            for (j = lo; j < hi; ++j) dst[j] = xc[(ptrdiff_t)ih * W + (ptrdiff_t)j * sw + off];
                        for (j = hi; j < Wh; ++j) dst[j] = 0.0f;
                    }
#define EMBER_DW_TAP(KH_, KW_)                                                                          \
    (pad + (((KH_) * dh % sh) * sw + (KW_) * dw % sw) * plane + (ptrdiff_t)((KH_) * dh / sh) * Wh +   \
     (KW_) * dw / sw)
            if (KH == 3 && KW == 3) {
                const float *t0 = EMBER_DW_TAP(0, 0), *t1 = EMBER_DW_TAP(0, 1), *t2 = EMBER_DW_TAP(0, 2);
                const float *t3 = EMBER_DW_TAP(1, 0), *t4 = EMBER_DW_TAP(1, 1), *t5 = EMBER_DW_TAP(1, 2);
                const float *t6 = EMBER_DW_TAP(2, 0), *t7 = EMBER_DW_TAP(2, 1), *t8 = EMBER_DW_TAP(2, 2);
                const float w0 = wm[0], w1 = wm[1], w2 = wm[2], w3 = wm[3], w4 = wm[4], w5 = wm[5];
                const float w6 = wm[6], w7 = wm[7], w8 = wm[8];
                for (q = 0; q < len; ++q)
                    acc[q] = b0 + w0 * t0[q] + w1 * t1[q] + w2 * t2[q] + w3 * t3[q] + w4 * t4[q] + w5 * t5[q] +
                             w6 * t6[q] + w7 * t7[q] + w8 * t8[q];
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
