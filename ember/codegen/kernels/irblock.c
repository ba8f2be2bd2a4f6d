/* MobileNet/EfficientNet inverted-residual blocks computed band by band (ops/irblock.py, passes/fuse_irblock.py):
 * expand 1x1 (+ activation) -> depthwise KxK (+ activation) [-> project 1x1 (+ residual)]. Computed layer by
 * layer, the expanded tensor (6x the block's input channels at the input's full plane) is written to memory
 * and read back by the depthwise, and the depthwise's output again by the projection. Here a band of output
 * rows at a time: the expanded rows its windows read (plus the halo the stride and window need) go into a
 * scratch sized for L2, the depthwise runs on them, and the band is projected at once, so neither
 * intermediate tensor exists whole. The 1x1 stages are pointwise.c's blocked product + activation on row
 * ranges; the depthwise is this file's row kernel at stride 1 (the whole-plane kernels lost 1.3-1.6x on
 * bands of a few rows: per-call zeroed copies and tables), else dwblock.c's/dwconv.c's on the band. */

/*@kernel ember_irblock_f32 requires ember_pointwise_act_f32 ember_dwconv_blocked_f32 ember_dw3_common ember_conv_geo*/
/* One output row of a stride-1, undilated depthwise: o[c] = b + sum w[kh][kw] * e[kh*pitch + c + kw], e a
 * zero-bordered copy of the band's rows, so no tap checks bounds: a vector of outputs at a time, a ragged end
 * as the last vector again (same values), rows narrower than a vector one output at a time. Whole-plane
 * kernels (dwconv3.c) pay per call for zeroed copies and tables that a band of a few rows does not amortise;
 * this needs only the bordered copy. */
EMBER_INLINE void ember_irb_dwrow(float *EMBER_RESTRICT o, const float *e, ptrdiff_t pitch, int OW, const float *w,
                                  float b, int KH, int KW, int clamp, float lo, float hi) {
    int c = 0, kh, kw;
#if EMBER_VL > 1
    if (OW >= EMBER_VL) {
        const ember_vf bv = (ember_vf){0} + b;
        for (;; c += EMBER_VL) {
            ember_vf acc = bv;
            if (c > OW - EMBER_VL) c = OW - EMBER_VL;
            for (kh = 0; kh < KH; ++kh)
                for (kw = 0; kw < KW; ++kw) acc += w[kh * KW + kw] * EMBER_DW_LD(e + kh * pitch + c + kw);
            EMBER_DW_ST(o + c, ember_dw_clamp(acc, clamp, lo, hi));
            if (c + EMBER_VL >= OW) return;
        }
    }
#endif
    for (; c < OW; ++c) {
        float acc = b;
        for (kh = 0; kh < KH; ++kh)
            for (kw = 0; kw < KW; ++kw) acc += w[kh * KW + kw] * e[kh * pitch + c + kw];
        if (clamp) acc = acc < lo ? lo : acc > hi ? hi : acc;
        o[c] = acc;
    }
}

/* The band's `rows` output rows of that depthwise (E: rows + KH - 1 rows of W per channel; D: channels `out`
 * floats apart, so a block without projection writes y's rows directly), channel by channel through `pad`
 * ((rows + KH - 1) x (OW + KW - 1) floats: the channel's rows, pl zero columns on the left, zeros on the
 * right up to the windows' extent); 3x3 and 5x5 with their tap loops unrolled at compile time (the same
 * function, constant KH and KW). Activations other than Relu/Clip after each channel's rows. */
static void ember_irb_dw(float *D, ptrdiff_t out, const float *E, const float *w, const float *bias, float *pad,
                         int mid, int rows, int W, int OW, int KH, int KW, int pl, int act, float act_a, float act_b) {
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0, in_rows = rows + KH - 1;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act == EMBER_ACT_CLIP ? act_b : __builtin_inff();
    const int pitch = OW + KW - 1, last = pl + W < pitch ? W : pitch - pl; /* input columns the windows read */
    const ptrdiff_t in = (ptrdiff_t)in_rows * W;
    int m, r, c;
    for (r = 0; r < in_rows; ++r) /* the zero columns, written once */
        for (c = 0; c < pitch; ++c)
            if (c < pl || c >= pl + last) pad[r * pitch + c] = 0.0f;
    for (m = 0; m < mid; ++m) {
        const float *e = E + m * in, *wm = w + (ptrdiff_t)m * KH * KW;
        const float b = bias ? bias[m] : 0.0f;
        for (r = 0; r < in_rows; ++r)
            for (c = 0; c < last; ++c) pad[r * pitch + pl + c] = e[(ptrdiff_t)r * W + c];
        for (r = 0; r < rows; ++r) {
            float *o = D + m * out + (ptrdiff_t)r * OW;
            if (KH == 3 && KW == 3)
                ember_irb_dwrow(o, pad + r * pitch, pitch, OW, wm, b, 3, 3, clamp, lo, hi);
            else if (KH == 5 && KW == 5)
                ember_irb_dwrow(o, pad + r * pitch, pitch, OW, wm, b, 5, 5, clamp, lo, hi);
            else
                ember_irb_dwrow(o, pad + r * pitch, pitch, OW, wm, b, KH, KW, clamp, lo, hi);
        }
        if (!clamp) ember_act_apply_f32(D + m * out, (ptrdiff_t)rows * OW, act, act_a, act_b);
    }
}

/* Output rows [o_lo, o_hi) of the block, `band` rows at a time.
 *   x: the block input (cin planes of H x W); we/be: expand weights (mid x cin) and bias (be may be NULL);
 *   wd/bd: depthwise (mid x KH*KW);
 *   wp/bp: projection (cout x mid), wp NULL for a block that ends at the depthwise (Squeeze-Excitation reads its
 *   whole output: y is then the depthwise's, mid planes); res: a tensor of y's shape added at the end, or NULL.
 *   p: the depthwise's whole geometry.
 * The band's depthwise runs on a plane of exactly the window rows of its output rows (rows outside the input:
 * zeros), with no top padding.
 *   scratch: e_floats (mid x the band's plane rows x W), d_floats (mid x its output rows x OW), then the
 *   depthwise kernel's scratch. `path`: 2, stride 1 undilated: ember_irb_dw; 1: the channel-blocked
 *   depthwise (the scratch has room for it); 0: ember_dwconv_f32. */
static void ember_irblock_f32(float *y, const float *x, const float *we, const float *be, const float *wd,
                              const float *bd, const float *wp, const float *bp, const float *res, float *scratch,
                              const int32_t *p, int cin, int cout, int band, int o_lo, int o_hi, ptrdiff_t e_floats,
                              ptrdiff_t d_floats, int path, int act_e, float ea, float eb, int act_d,
                              float da, float db, int act_p, float pa, float pb) {
    const int mid = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], sh = p[EMBER_GEO_STRIDE_H], pt = p[EMBER_GEO_PAD_H];
    const int span = (p[EMBER_GEO_K_H] - 1) * p[EMBER_GEO_DIL_H] + 1;
    const ptrdiff_t plane = (ptrdiff_t)H * W, oplane = (ptrdiff_t)OH * OW;
    float *E = scratch, *D = scratch + e_floats, *dws = scratch + e_floats + d_floats;
    int32_t g[EMBER_GEO_SIZE];
    int i, c, o0, held = 0, v_prev = 0;
    for (i = 0; i < EMBER_GEO_SIZE; ++i) g[i] = p[i];
    g[EMBER_GEO_PAD_H] = 0;
    for (o0 = o_lo; o0 < o_hi; o0 += band) {
        const int nout = o_hi - o0 < band ? o_hi - o0 : band, rows = (nout - 1) * sh + span, v0 = o0 * sh - pt;
        const ptrdiff_t es = (ptrdiff_t)rows * W, ds = (ptrdiff_t)nout * OW;
        /* Rows [v0, v0 + rows) of the expanded plane, each channel's contiguous (pitch es). Rows the
         * previous band holds move up (the windows' overlap; only a last, shorter band changes the pitch:
         * then every row moves. Forward copies: the sources lie above); the rest are computed, or are zero
         * outside [0, H). */
        int keep = held && v0 >= v_prev && v0 < v_prev + held ? v_prev + held - v0 : 0, r0, r1;
        const ptrdiff_t es_prev = (ptrdiff_t)(held ? held : rows) * W;
        ptrdiff_t q;
        if (keep > rows) keep = rows;
        if (keep)
            for (c = 0; c < mid; ++c) {
                float *e = E + c * es;
                const float *s = E + c * es_prev + (ptrdiff_t)(v0 - v_prev) * W;
                if (e != s)
                    for (q = 0; q < (ptrdiff_t)keep * W; ++q) e[q] = s[q];
            }
        r0 = v0 + keep < 0 ? 0 : v0 + keep, r1 = v0 + rows < H ? v0 + rows : H;
        for (c = 0; c < mid; ++c) { /* the padding rows above and below the input */
            float *e = E + c * es;
            for (q = (ptrdiff_t)keep * W; q < (ptrdiff_t)(r0 - v0) * W; ++q) e[q] = 0.0f;
            for (q = (ptrdiff_t)((r1 > r0 ? r1 : r0) - v0) * W; q < es; ++q) e[q] = 0.0f;
        }
        if (r1 > r0)
            ember_pointwise_act_f32(E + (ptrdiff_t)(r0 - v0) * W, es, x + (ptrdiff_t)r0 * W, plane, we, be, mid, cin,
                                    (r1 - r0) * W, act_e, ea, eb);
        held = rows, v_prev = v0;
        g[EMBER_GEO_IN_H] = rows, g[EMBER_GEO_OUT_H] = nout;
        if (path == 2 && !wp) {
            ember_irb_dw(y + (ptrdiff_t)o0 * OW, oplane, E, wd, bd, dws, mid, nout, W, OW, p[EMBER_GEO_K_H],
                         p[EMBER_GEO_K_W], p[EMBER_GEO_PAD_W], act_d, da, db);
            continue;
        }
        if (path == 2)
            ember_irb_dw(D, ds, E, wd, bd, dws, mid, nout, W, OW, p[EMBER_GEO_K_H], p[EMBER_GEO_K_W],
                         p[EMBER_GEO_PAD_W], act_d, da, db);
        else if (path == 1)
            ember_dwconv_blocked_f32(D, E, wd, bd, dws, g, 1, mid, act_d, da, db);
        else
            ember_dwconv_f32(D, E, wd, bd, dws, g, 1, mid, act_d, da, db);
        if (wp) {
            float *yb = y + (ptrdiff_t)o0 * OW;
            ember_pointwise_act_f32(yb, oplane, D, ds, wp, bp, cout, mid, nout * OW, act_p, pa, pb);
            if (res)
                for (c = 0; c < cout; ++c) {
                    float *yr = yb + c * oplane;
                    const float *rr = res + c * oplane + (ptrdiff_t)o0 * OW;
                    for (q = 0; q < (ptrdiff_t)nout * OW; ++q) yr[q] = rr[q] + yr[q];
                }
        } else { /* no projection: the depthwise band into y's rows */
            for (c = 0; c < mid; ++c) {
                float *yr = y + c * oplane + (ptrdiff_t)o0 * OW;
                const float *s = D + c * ds;
                for (q = 0; q < (ptrdiff_t)nout * OW; ++q) yr[q] = s[q];
            }
        }
    }
}
/*@end*/
