/* Dense convolutions on channels-last activations, so that a CNN of plain convolutions (ResNet) runs NHWC from
 * its first block to its pool (passes/nhwc_region.py, where the CPU family sets nhwc_dense). In NHWC a tap of a
 * window is one contiguous run of C floats, and the product takes the activations as its A operand and the
 * weights, packed at compile time, as B: nothing is packed at run time. In NCHW the activations are B, and
 * packing their strips took a fifth of ResNet-50's 1x1 convs' time. */

/*@kernel ember_conv_im2col_nhwc_f32 requires ember_conv_geo ember_pw_nhwc_ld_f32*/
/* Any 2-D window, stride, dilation and padding, one group: x [N][H][W][C] -> y [N][OH][OW][M], output pixels
 * [q0, q1) of the N*OH*OW, output channels [m0, m1) (whole panels: a thread's part). Block by block of pixels
 * (ember_pw_nhwc_rows of them), each pixel's window is copied into `scratch` as a row of K = KH*KW*C floats,
 * tap-major (channels inner), zeros outside the input; then the block is one ember_pw_nhwc_ld_f32 product with
 * the weights w [K][M] (in its panels), bias, residual (laid out as y) and activation. `scratch`:
 * ember_pw_nhwc_rows(q1 - q0, K, M) * K floats. */
static void ember_conv_im2col_nhwc_f32(float *y, const float *x, const float *w, int panels, const float *bias,
                                       const float *res, float *scratch, const int32_t *p, int M, int m0, int m1,
                                       ptrdiff_t q0, ptrdiff_t q1, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int K = KH * KW * C, rows = ember_pw_nhwc_rows((int)(q1 - q0), K, M);
    const ptrdiff_t plane = (ptrdiff_t)OH * OW;
    ptrdiff_t b, q;
    int kh, kw, c;
    for (b = q0; b < q1; b += rows) {
        const int n = q1 - b < rows ? (int)(q1 - b) : rows;
        for (q = 0; q < n; ++q) {
            const ptrdiff_t at = b + q, pix = at % plane;
            const int oh = (int)(pix / OW), ow = (int)(pix % OW);
            const float *xn = x + at / plane * H * W * C;
            float *EMBER_RESTRICT row = scratch + q * K;
            for (kh = 0; kh < KH; ++kh) {
                const int ih = oh * sh - pt + kh * dh;
                for (kw = 0; kw < KW; ++kw, row += C) {
                    const int iw = ow * sw - pl + kw * dw;
                    if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                        for (c = 0; c < C; ++c) row[c] = 0.0f;
                    } else {
                        const float *EMBER_RESTRICT src = xn + ((ptrdiff_t)ih * W + iw) * C;
                        for (c = 0; c < C; ++c) row[c] = src[c];
                    }
                }
            }
        }
        ember_pw_nhwc_ld_f32(y + b * M + m0, M, scratch, w + (ptrdiff_t)m0 * K, panels, bias ? bias + m0 : 0,
                             res ? res + b * M + m0 : 0, n, m1 - m0, K, act, act_a, act_b);
    }
}
/*@end*/

/*@kernel ember_conv_wino4_nhwc_f32 requires ember_conv_geo ember_pw_nhwc_f32 ember_wino4_tf ember_nhwc_util ember_act_apply_f32*/
/* Winograd F(4x4, 3x3) for a 3x3, stride-1, undilated, one-group conv on NHWC activations (C and m1 - m0 at least
 * EMBER_VL; a ragged last vector of channels overlaps the one before, recomputing equal values), tile rows [th0,
 * th1) of each image (4 output rows each; TW = ceil(OW/4) tiles a row), output channels [m0, m1) (whole panels; a
 * thread's part of a map with few tiles and big weights, which transforms the whole input and streams its share of
 * U, where parts of the tile rows would each stream all of it). Both transforms run in vectors of channels, so a
 * tile's 36 input vectors are loads from x as it is (no padded copy, no phase planes, no gather):
 *   V[e][t][c] = (B^T d B)[e]   for the 6x6 patch d of tile t (zeros outside the input)
 *   Z[e][t][m] = sum_c V[e][t][c] U[e][c][m]   36 products, ember_pw_nhwc_f32 (U: [36][C][M] in its panels)
 *   y tile     = A^T Z A + bias (+ res), then the activation; Relu and Clip in registers, others on the band.
 * The transforms are kernels/winograd.c's (ember_wino4_tf). `scratch`: 36*(T*C + 16) + 36*(T*(m1 - m0) + 16)
 * floats, T = (th1 - th0) * TW (64 bytes more than their size apart: no 4 KiB-aligned streams). */
static void ember_conv_wino4_nhwc_f32(float *y, const float *x, const float *U, int panels, const float *bias,
                                      const float *res, float *scratch, const int32_t *p, int M, int m0, int m1,
                                      int N, int th0, int th1, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int TW = (OW + 3) / 4, oh1 = 4 * th1 < OH ? 4 * th1 : OH;
    const int Mp = m1 - m0; /* Z's columns: this call's channels */
    const ptrdiff_t T = (ptrdiff_t)(th1 - th0) * TW, vs = T * C + 16, zs = T * Mp + 16;
#if EMBER_VL > 1
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act_b;
#else
    const int clamp = 0;
#endif
    const ember_vf zero = {0};
    float *EMBER_RESTRICT V = scratch;
    float *EMBER_RESTRICT Z = scratch + 36 * vs;
    int n, th, tw, c, m, e, i, j, k, r;
    for (n = 0; n < N; ++n) {
        const float *xn = x + (ptrdiff_t)n * H * W * C;
        float *yn = y + (ptrdiff_t)n * OH * OW * M;
        const float *rn = res ? res + (ptrdiff_t)n * OH * OW * M : 0;
        for (th = th0; th < th1; ++th)
            for (tw = 0; tw < TW; ++tw) {
                const ptrdiff_t t = (ptrdiff_t)(th - th0) * TW + tw;
                const int ih0 = 4 * th - pt, iw0 = 4 * tw - pl;
                const int inside = ih0 >= 0 && ih0 + 6 <= H && iw0 >= 0 && iw0 + 6 <= W;
                for (c = 0; c < C; c += EMBER_VL) {
                    const int cv = c + EMBER_VL > C ? C - EMBER_VL : c;
                    ember_vf d[6], tr[6][6], col[6], o[6];
                    for (i = 0; i < 6; ++i) {
                        const int ih = ih0 + i, row_in = ih >= 0 && ih < H;
                        const float *xr = xn + ((ptrdiff_t)ih * W + iw0) * C + cv;
                        for (k = 0; k < 6; ++k)
                            d[k] = inside || (row_in && iw0 + k >= 0 && iw0 + k < W) ? *(const ember_vf *)(xr + k * C)
                                                                                      : zero;
                        ember_wino4_bt(d, tr[i]);
                    }
                    for (j = 0; j < 6; ++j) {
                        for (i = 0; i < 6; ++i) col[i] = tr[i][j];
                        ember_wino4_bt(col, o);
                        for (i = 0; i < 6; ++i) *(ember_vf *)(V + (6 * i + j) * vs + t * C + cv) = o[i];
                    }
                }
            }
        for (e = 0; e < 36; ++e)
            ember_pw_nhwc_f32(Z + e * zs, V + e * vs, U + (ptrdiff_t)e * C * M + (ptrdiff_t)m0 * C, panels, 0, 0,
                              (int)T, Mp, C, EMBER_ACT_NONE, 0.0f, 0.0f);
        for (th = th0; th < th1; ++th)
            for (tw = 0; tw < TW; ++tw) {
                const ptrdiff_t t = (ptrdiff_t)(th - th0) * TW + tw;
                const int rows = OH - 4 * th < 4 ? OH - 4 * th : 4, cols = OW - 4 * tw < 4 ? OW - 4 * tw : 4;
                for (m = m0; m < m1; m += EMBER_VL) {
                    const int mv = m + EMBER_VL > m1 ? m1 - EMBER_VL : m;
                    ember_vf z[6], s[6][4], col[6], o[4];
                    const ember_vf bv = bias ? *(const ember_vf *)(bias + mv) : zero;
                    for (i = 0; i < 6; ++i) { /* A^T along each row of the tile's Z, then down the columns */
                        for (j = 0; j < 6; ++j) z[j] = *(const ember_vf *)(Z + (6 * i + j) * zs + t * Mp + mv - m0);
                        ember_wino4_at(z, s[i]);
                    }
                    for (k = 0; k < cols; ++k) {
                        for (i = 0; i < 6; ++i) col[i] = s[i][k];
                        ember_wino4_at(col, o);
                        for (r = 0; r < rows; ++r) {
                            const ptrdiff_t at = ((ptrdiff_t)(4 * th + r) * OW + 4 * tw + k) * M + mv;
                            ember_vf v = o[r] + bv;
                            if (rn) v += *(const ember_vf *)(rn + at);
#if EMBER_VL > 1
                            if (clamp) v = ember_nhwc_clamp(v, clamp, lo, hi);
#endif
                            *(ember_vf *)(yn + at) = v;
                        }
                    }
                }
            }
        if (act != EMBER_ACT_NONE && !clamp) { /* the band's pixels, this call's channels */
            const ptrdiff_t px0 = (ptrdiff_t)4 * th0 * OW, px1 = (ptrdiff_t)oh1 * OW;
            ptrdiff_t px;
            if (Mp == M) ember_act_apply_f32(yn + px0 * M, (px1 - px0) * M, act, act_a, act_b);
            else
                for (px = px0; px < px1; ++px) ember_act_apply_f32(yn + px * M + m0, Mp, act, act_a, act_b);
        }
    }
}
/*@end*/
