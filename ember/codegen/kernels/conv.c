/* Convolution and transposed convolution, float32, NCHW with 1-3 spatial dims (lower ranks are
 * padded to 3-D with unit dims). Geometry comes in one static table `p` (int32):
 *   p[0] = C (input channels), p[1..3] = input D,H,W, p[4..6] = kernel KD,KH,KW,
 *   p[7..9] = output OD,OH,OW, p[10..12] = strides, p[13..15] = dilations, p[16..18] = leading pads. */

/*@kernel ember_im2col_f32 requires ember_prelude*/
/* col[(c*KD + kd)*KH*KW + kh*KW + kw][od*OH*OW + oh*OW + ow] = x[c][id][ih][iw] (0 outside the input),
 * the B operand of the convolution-as-matmul. */
static void ember_im2col_f32(float *EMBER_RESTRICT col, const float *EMBER_RESTRICT x, int C, const int32_t *p) {
    const int D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6], OD = p[7], OH = p[8], OW = p[9];
    int c, kd, kh, kw, od, oh, ow;
    for (c = 0; c < C; ++c)
        for (kd = 0; kd < KD; ++kd)
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw) {
                    const float *xc = x + (ptrdiff_t)c * D * H * W;
                    for (od = 0; od < OD; ++od) {
                        int id = od * p[10] - p[16] + kd * p[13];
                        for (oh = 0; oh < OH; ++oh) {
                            int ih = oh * p[11] - p[17] + kh * p[14];
                            int row_ok = id >= 0 && id < D && ih >= 0 && ih < H;
                            const float *xr = row_ok ? xc + ((ptrdiff_t)id * H + ih) * W : xc;
                            for (ow = 0; ow < OW; ++ow) {
                                int iw = ow * p[12] - p[18] + kw * p[15];
                                *col++ = (row_ok && iw >= 0 && iw < W) ? xr[iw] : 0.0f;
                            }
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

/*@kernel ember_dwconv_f32 requires ember_act_apply_f32*/
/* The outputs [lo, hi) of a row whose input column ow*stride + off lies inside [0, W). */
static void ember_dw_bounds(int W, int OW, int stride, int off, int *lo, int *hi) {
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / stride + 1;
    if (*hi > OW) *hi = OW;
}

/* Depthwise convolution (one input channel per group; M = C * multiplier), one output row at a time:
 * each kernel tap adds a scaled input row segment, y[ow] += w * x[ow*stride + off] over the outputs
 * whose input column is inside the row. With the segment's bounds solved first, the inner loop is a
 * branch-free axpy (contiguous, vectorized, at stride 1). */
static void ember_dwconv_f32(float *y, const float *x, const float *w, const float *bias, const int32_t *p,
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
                                ember_dw_bounds(W, OW, sw, off, &l, &h);
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
