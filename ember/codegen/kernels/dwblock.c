/* Channel-blocked depthwise convolution for small planes of any window (EfficientNet's and MobileNetV3's
 * 5x5 at 7x7, 14x14 and 28x28): the generalisation of ember_dw3_blocked (dwconv.c) past 3x3 pad 1.
 * On small planes the per-channel paths spend more on per-row and per-plane overheads (padded copies,
 * loops of a few dozen elements) than on multiplying; here a channel is a vector lane, so each output
 * is KH*KW full-vector FMAs with no masks, no phase planes and no short loops. */

/*@kernel ember_dwconv_blocked_f32 requires ember_dwconv_f32 ember_dw3_blocked ember_act_apply_f32 ember_conv_geo*/
/* Input planes up to this many pixels go channel-blocked (the grid of VL channels then stays in L1/L2);
 * measured on Zen 3 at 5x5: 28x28 planes win 2x, 56x56 ones (stride 2) still win. */
#define EMBER_DWK_BLOCKED_PIXELS 3136
#if EMBER_VL > 1
/* The outputs of one block of planes from its grid: four outputs of a row at a time (each weight vector
 * loaded once for four FMAs), a ragged end one at a time. */
EMBER_INLINE void ember_dwk_rows(const float *grid, float *out, const float *wt, ember_vf bv, int OH, int OW, int KH,
                                 int KW, int sh, int dh, int dw, ptrdiff_t row, ptrdiff_t step, int clamp, float lo,
                                 float hi) {
    int oh, ow, kh, kw;
    for (oh = 0; oh < OH; ++oh) {
        const float *g = grid + (ptrdiff_t)oh * sh * row;
        float *o = out + (ptrdiff_t)oh * OW * EMBER_VL;
        for (ow = 0; ow + 4 <= OW; ow += 4) {
            ember_vf a0 = bv, a1 = bv, a2 = bv, a3 = bv;
            for (kh = 0; kh < KH; ++kh) {
                const float *gr = g + (ptrdiff_t)kh * dh * row + (ptrdiff_t)ow * step, *wr = wt + kh * KW * EMBER_VL;
                for (kw = 0; kw < KW; ++kw) {
                    const ember_vf wv = EMBER_DW_LD(wr + kw * EMBER_VL);
                    const float *q = gr + (ptrdiff_t)kw * dw * EMBER_VL;
                    a0 += wv * EMBER_DW_LD(q);
                    a1 += wv * EMBER_DW_LD(q + step);
                    a2 += wv * EMBER_DW_LD(q + 2 * step);
                    a3 += wv * EMBER_DW_LD(q + 3 * step);
                }
            }
            EMBER_DW_ST(o + (ptrdiff_t)ow * EMBER_VL, ember_dw_clamp(a0, clamp, lo, hi));
            EMBER_DW_ST(o + (ptrdiff_t)(ow + 1) * EMBER_VL, ember_dw_clamp(a1, clamp, lo, hi));
            EMBER_DW_ST(o + (ptrdiff_t)(ow + 2) * EMBER_VL, ember_dw_clamp(a2, clamp, lo, hi));
            EMBER_DW_ST(o + (ptrdiff_t)(ow + 3) * EMBER_VL, ember_dw_clamp(a3, clamp, lo, hi));
        }
        for (; ow < OW; ++ow) {
            ember_vf a0 = bv;
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw)
                    a0 += EMBER_DW_LD(wt + (kh * KW + kw) * EMBER_VL) *
                          EMBER_DW_LD(g + (ptrdiff_t)kh * dh * row + (ptrdiff_t)ow * step + (ptrdiff_t)kw * dw * EMBER_VL);
            EMBER_DW_ST(o + (ptrdiff_t)ow * EMBER_VL, ember_dw_clamp(a0, clamp, lo, hi));
        }
    }
}

/* EMBER_VL consecutive planes j0.. of the N*C (multiplier 1): transposed into `grid`, GH x GW channel
 * vectors whose border (the padding, and what the windows never read) the caller zeroed once; then four
 * outputs of a row at a time (each weight vector loaded once for four FMAs), transposed back into y.
 * `wt`: KH*KW + 1 vectors (the taps' weights by lane, then the bias); `out`: OH*OW vectors. */
static void ember_dwk_block(float *y, const float *x, const float *w, const float *bias, float *grid, float *out,
                            float *wt, const int32_t *p, ptrdiff_t j0, int GH, int GW, int clamp, float lo,
                            float hi, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W], taps = KH * KW;
    const ptrdiff_t hw = (ptrdiff_t)H * W, n = (ptrdiff_t)OH * OW, row = (ptrdiff_t)GW * EMBER_VL;
    const ptrdiff_t step = (ptrdiff_t)sw * EMBER_VL;
    ember_vf v[EMBER_VL], bv;
    ptrdiff_t p0;
    int c, k, r, col;
    for (c = 0; c < EMBER_VL; ++c) {
        const ptrdiff_t m = (j0 + c) % C;
        for (k = 0; k < taps; ++k) wt[k * EMBER_VL + c] = w[m * taps + k];
        wt[taps * EMBER_VL + c] = bias ? bias[m] : 0.0f;
    }
    bv = EMBER_DW_LD(wt + taps * EMBER_VL);
    for (p0 = 0; p0 < hw; p0 += EMBER_VL) {
        if (p0 > hw - EMBER_VL) p0 = hw - EMBER_VL;
        for (c = 0; c < EMBER_VL; ++c) v[c] = EMBER_DW_LD(x + (j0 + c) * hw + p0);
        ember_dw_transpose(v);
        r = (int)(p0 / W) + pt, col = (int)(p0 % W);
        for (k = 0; k < EMBER_VL; ++k) {
            if (r < GH && col + pl < GW) EMBER_DW_ST(grid + r * row + (ptrdiff_t)(col + pl) * EMBER_VL, v[k]);
            if (++col == W) col = 0, ++r;
        }
    }
    /* 5x5 and 3x3 with their tap loops unrolled at compile time (the same function, constant KH and KW) */
    if (KH == 5 && KW == 5)
        ember_dwk_rows(grid, out, wt, bv, OH, OW, 5, 5, sh, dh, dw, row, step, clamp, lo, hi);
    else if (KH == 3 && KW == 3)
        ember_dwk_rows(grid, out, wt, bv, OH, OW, 3, 3, sh, dh, dw, row, step, clamp, lo, hi);
    else
        ember_dwk_rows(grid, out, wt, bv, OH, OW, KH, KW, sh, dh, dw, row, step, clamp, lo, hi);
    ember_dw_unblock(y, out, n, j0, clamp, act, act_a, act_b);
}

/* Whether the channel-blocked path takes this 2-D depthwise convolution: multiplier 1, at least a vector
 * of planes, planes (in and out) of at least a vector and at most EMBER_DWK_BLOCKED_PIXELS. */
EMBER_INLINE int ember_dwk_blocked_fits(const int32_t *p, int N, int M) {
    const ptrdiff_t in_plane = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    return EMBER_VL > 1 && M == p[EMBER_GEO_C] && (ptrdiff_t)N * M >= EMBER_VL && in_plane >= EMBER_VL &&
           in_plane <= EMBER_DWK_BLOCKED_PIXELS && (ptrdiff_t)p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W] >= EMBER_VL;
}
#endif


/* The whole convolution, channel-blocked; 0 (nothing written) where ember_dwk_blocked_fits says no.
 * `scratch`: EMBER_VL * (GH*GW + OH*OW + KH*KW + 2) floats, GH x GW the padded extent the windows read. The
 * last block of planes overlaps the one before it (recomputing some planes to the same values). */
static int ember_dwk_blocked_f32(float *y, const float *x, const float *w, const float *bias, float *scratch,
                                 const int32_t *p, int N, int M, int act, float act_a, float act_b) {
#if EMBER_VL > 1
    const int GH = (p[EMBER_GEO_OUT_H] - 1) * p[EMBER_GEO_STRIDE_H] + (p[EMBER_GEO_K_H] - 1) * p[EMBER_GEO_DIL_H] + 1;
    const int GW = (p[EMBER_GEO_OUT_W] - 1) * p[EMBER_GEO_STRIDE_W] + (p[EMBER_GEO_K_W] - 1) * p[EMBER_GEO_DIL_W] + 1;
    const ptrdiff_t cells = (ptrdiff_t)GH * GW * EMBER_VL, n = (ptrdiff_t)p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W];
    const ptrdiff_t count = (ptrdiff_t)N * M;
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f;
    float *grid = scratch, *out, *wt;
    ptrdiff_t q, j0;
    if (!ember_dwk_blocked_fits(p, N, M)) return 0;
    grid += (EMBER_VL - (ptrdiff_t)((uintptr_t)grid / 4 % EMBER_VL)) % EMBER_VL; /* vector-aligned */
    out = grid + cells, wt = out + n * EMBER_VL;
    for (q = 0; q < cells; ++q) grid[q] = 0.0f;
    for (j0 = 0; j0 < count; j0 += EMBER_VL) {
        if (j0 > count - EMBER_VL) j0 = count - EMBER_VL;
        ember_dwk_block(y, x, w, bias, grid, out, wt, p, j0, GH, GW, clamp, lo, act_b, act, act_a, act_b);
    }
    return 1;
#else
    (void)y, (void)x, (void)w, (void)bias, (void)scratch, (void)p, (void)N, (void)M, (void)act, (void)act_a;
    (void)act_b;
    return 0;
#endif
}

/* ember_dwconv_f32 (dwconv.c) with the channel-blocked path first: ops/conv.py calls this one where the
 * geometry is not one of the 3x3 fast paths and it gave the scratch both paths need. */
static void ember_dwconv_blocked_f32(float *y, const float *x, const float *w, const float *bias, float *scratch,
                                     const int32_t *p, int N, int M, int act, float act_a, float act_b) {
    if (!ember_dwk_blocked_f32(y, x, w, bias, scratch, p, N, M, act, act_a, act_b))
        ember_dwconv_f32(y, x, w, bias, scratch, p, N, M, act, act_a, act_b);
}
/*@end*/
