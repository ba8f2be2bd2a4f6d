/* Convolutions on channels-last (NHWC) activations: the region that passes/nhwc_region.py builds from chains
 * of depthwise and 1x1 convs. In NHWC a channel vector is EMBER_VL adjacent floats of one pixel, so the
 * depthwise conv multiplies whole vectors in place (no gather into a grid of channel vectors, no scatter
 * back, no stride-2 phase planes), and a 1x1 conv is one matmul whose A operand is the activations
 * ([pixels, C] row-major) and whose B is the weights ([C, M]). */

/*@kernel ember_nhwc_util requires ember_simd*/
#if EMBER_VL > 1
typedef int ember_nhwc_vi __attribute__((vector_size(EMBER_VL * 4)));
#define EMBER_NHWC_LD(ptr) (*(const ember_vf *)(const void *)(ptr))
#define EMBER_NHWC_ST(ptr, v) (*(ember_vf *)(void *)(ptr) = (v))
/* Relu (clamp 1: below lo) or Clip (clamp 2: also above hi), NaN kept, like ember_act_f32. */
EMBER_INLINE ember_vf ember_nhwc_clamp(ember_vf v, int clamp, float lo, float hi) {
    const ember_vf lv = (ember_vf){0} + lo, hv = (ember_vf){0} + hi;
    ember_nhwc_vi m;
    if (clamp >= 1) {
        m = v < lv;
        v = (ember_vf)(((ember_nhwc_vi)lv & m) | ((ember_nhwc_vi)v & ~m));
    }
    if (clamp == 2) {
        m = v > hv;
        v = (ember_vf)(((ember_nhwc_vi)hv & m) | ((ember_nhwc_vi)v & ~m));
    }
    return v;
}
#endif

/* The valid taps [lo, hi) of a window starting at input coordinate `start` (k taps, dilation d, extent n).
 * Unused where a bundle's only channels-last kernel is ember_pw_nhwc_small_f32 (clang warns of that). */
EMBER_INLINE EMBER_UNUSED void ember_nhwc_taps(int start, int k, int d, int n, int *lo, int *hi) {
    int a = 0, b = k;
    while (a < k && start + a * d < 0) ++a;
    while (b > a && start + (b - 1) * d >= n) --b;
    *lo = a, *hi = b;
}

/* The strides of one call, in floats: input row (dilated: dh rows), tap column (dw pixels), output step
 * (sw pixels), weight tap (C). */
typedef struct {
    ptrdiff_t krow, kcol, step, tap;
} ember_nhwc_st;
/*@end*/

/*@kernel ember_dwconv_nhwc_f32 requires ember_conv_geo ember_nhwc_util ember_act_apply_f32*/
#if EMBER_VL > 1
/* The four outputs a0..a3, `step` floats apart from y: plus the residual's (laid out as y), clamped, stored. */
EMBER_INLINE void ember_nhwc_put4(float *y, ptrdiff_t step, const float *res, ember_vf a0, ember_vf a1, ember_vf a2,
                                  ember_vf a3, int clamp, float lo, float hi) {
    if (res) {
        a0 += EMBER_NHWC_LD(res), a1 += EMBER_NHWC_LD(res + step);
        a2 += EMBER_NHWC_LD(res + 2 * step), a3 += EMBER_NHWC_LD(res + 3 * step);
    }
    EMBER_NHWC_ST(y, ember_nhwc_clamp(a0, clamp, lo, hi));
    EMBER_NHWC_ST(y + step, ember_nhwc_clamp(a1, clamp, lo, hi));
    EMBER_NHWC_ST(y + 2 * step, ember_nhwc_clamp(a2, clamp, lo, hi));
    EMBER_NHWC_ST(y + 3 * step, ember_nhwc_clamp(a3, clamp, lo, hi));
}

/* Four outputs of a row whose windows lie inside the row, channels c..c+VL: each weight vector is loaded once
 * for four FMAs. `x` points at the first window's (row khl, column 0) input, channel c; `w` at tap (0, 0),
 * channel c; `y` and `res` at the first output. KW is a constant where the 3x3 and 5x5 cases inline it. */
EMBER_INLINE void ember_nhwc_dw4(float *y, const float *x, const float *w, const float *res, ember_vf bv,
                                 ember_nhwc_st s, int KW, int khl, int khh, ptrdiff_t ystep, int clamp, float lo,
                                 float hi) {
    ember_vf a0 = bv, a1 = bv, a2 = bv, a3 = bv;
    int kh, kw;
    for (kh = khl; kh < khh; ++kh) {
        const float *xk = x + (ptrdiff_t)(kh - khl) * s.krow, *wk = w + (ptrdiff_t)kh * KW * s.tap;
        for (kw = 0; kw < KW; ++kw) {
            const ember_vf wv = EMBER_NHWC_LD(wk + kw * s.tap);
            const float *q = xk + kw * s.kcol;
            a0 += wv * EMBER_NHWC_LD(q);
            a1 += wv * EMBER_NHWC_LD(q + s.step);
            a2 += wv * EMBER_NHWC_LD(q + 2 * s.step);
            a3 += wv * EMBER_NHWC_LD(q + 3 * s.step);
        }
    }
    ember_nhwc_put4(y, ystep, res, a0, a1, a2, a3, clamp, lo, hi);
}

/* The same at stride 1, undilated (KW <= 5): the windows of the four outputs overlap, so each row's KW + 3
 * input vectors are loaded once for all of them (5x5: 8 loads instead of 20 a row). `x` points at the first
 * window (iw0 0); with `edge`, some windows reach past the row's ends: `x` points at the row's column 0, the first
 * window at column iw0 of W, and the columns past the ends read as zeros (w * 0 adds nothing). An output whose window
 * lies inside the row adds the same taps in the same order either way, so it comes out the same. */
EMBER_INLINE void ember_nhwc_dw4_s1(float *y, const float *x, const float *w, const float *res, ember_vf bv,
                                    ember_nhwc_st s, int KW, int khl, int khh, int edge, int iw0, int W, ptrdiff_t C,
                                    int clamp, float lo, float hi) {
    ember_vf a0 = bv, a1 = bv, a2 = bv, a3 = bv, col[8];
    int kh, kw;
    for (kh = khl; kh < khh; ++kh) {
        const float *xk = x + (ptrdiff_t)(kh - khl) * s.krow, *wk = w + (ptrdiff_t)kh * KW * s.tap;
        for (kw = 0; kw < KW + 3; ++kw)
            col[kw] = !edge || (iw0 + kw >= 0 && iw0 + kw < W) ? EMBER_NHWC_LD(xk + (ptrdiff_t)(iw0 + kw) * C)
                                                               : (ember_vf){0};
        for (kw = 0; kw < KW; ++kw) {
            const ember_vf wv = EMBER_NHWC_LD(wk + kw * s.tap);
            a0 += wv * col[kw];
            a1 += wv * col[kw + 1];
            a2 += wv * col[kw + 2];
            a3 += wv * col[kw + 3];
        }
    }
    ember_nhwc_put4(y, C, res, a0, a1, a2, a3, clamp, lo, hi);
}

/* One output row, all channels: windows inside the row four at a time, the others (the borders, a ragged end)
 * one at a time with their taps clipped; at each step every channel vector in turn (the last one overlapping
 * the one before it where C is not a multiple of VL), so the input columns a step reads are reused from L1
 * (channel vector by channel vector over the whole row, 3 rows of MobileNetV3's 56x56x72 left L1 between
 * vectors: 1.19x the NCHW kernel's time). `x` points at input row ih0 + khl * dh. */
EMBER_INLINE void ember_nhwc_dw_row(float *y, const float *x, const float *w, const float *res, const float *bias,
                                    ember_nhwc_st s, int KW, int unit, int khl, int khh, int OW, int W, int sw,
                                    int dw, int pl, int owa, int owb, ptrdiff_t C, int clamp, float lo, float hi) {
    /* groups at the ends too where at least 4 outputs would go one at a time (7x7 and 28x28 maps' 5x5 windows: 0.5x
     * and 0.93x; 14x14 maps' 3x3 ones, with 2 such outputs, measured 1.02-1.12x) */
    const int edges = unit && OW >= 4 && OW - (owb - owa) / 4 * 4 >= 4;
    int ow = 0, kh, kw;
    ptrdiff_t c;
    while (ow < OW) {
        if (ow >= owa && ow + 4 <= owb) {
            for (c = 0; c < C; c += EMBER_VL) {
                ptrdiff_t o;
                ember_vf bv;
                if (c > C - EMBER_VL) c = C - EMBER_VL;
                o = (ptrdiff_t)ow * C + c;
                bv = bias ? EMBER_NHWC_LD(bias + c) : (ember_vf){0};
                if (unit)
                    ember_nhwc_dw4_s1(y + o, x + (ptrdiff_t)(ow - pl) * C + c, w + c, res ? res + o : 0, bv, s, KW, khl,
                                      khh, 0, 0, W, C, clamp, lo, hi);
                else
                    ember_nhwc_dw4(y + o, x + (ptrdiff_t)(ow * sw - pl) * C + c, w + c, res ? res + o : 0, bv, s, KW,
                                   khl, khh, C, clamp, lo, hi);
            }
            ow += 4;
        } else if (edges) {
            /* four outputs at a row's ends (the last four of the row where fewer are left: outputs computed again to
             * the values they have; y overlaps neither x nor res): a 7x7 map's 5x5 windows all reach past an end,
             * and one at a time below, MobileNetV3's 960-channel ones took 1.37x onnxruntime's time */
            const int og = ow + 4 <= OW ? ow : OW - 4;
            for (c = 0; c < C; c += EMBER_VL) {
                ptrdiff_t o;
                if (c > C - EMBER_VL) c = C - EMBER_VL;
                o = (ptrdiff_t)og * C + c;
                ember_nhwc_dw4_s1(y + o, x + c, w + c, res ? res + o : 0,
                                  bias ? EMBER_NHWC_LD(bias + c) : (ember_vf){0}, s, KW, khl, khh, 1, og - pl, W, C,
                                  clamp, lo, hi);
            }
            ow = og + 4;
        } else {
            /* Two channel vectors at a time (c0, c1: the same one where a single vector is left), each in two
             * sums (even and odd window rows): four independent FMA chains, where one vector's single chain of a
             * border pixel's taps waited on the FMA latency at every tap (the keyword spotter's rows of 5 pixels
             * are all borders: 16 channels at 25x5 took 2.6 us a conv). */
            const int iw0 = ow * sw - pl;
            int kwl, kwh;
            ember_nhwc_taps(iw0, KW, dw, W, &kwl, &kwh);
            for (c = 0; c < C; c += 2 * EMBER_VL) {
                const ptrdiff_t c0 = c > C - EMBER_VL ? C - EMBER_VL : c;
                const ptrdiff_t c1 = c + EMBER_VL > C - EMBER_VL ? C - EMBER_VL : c + EMBER_VL;
                ember_vf a0 = bias ? EMBER_NHWC_LD(bias + c0) : (ember_vf){0}, b0 = (ember_vf){0};
                ember_vf a1 = bias ? EMBER_NHWC_LD(bias + c1) : (ember_vf){0}, b1 = (ember_vf){0};
                for (kh = khl; kh < khh; ++kh) {
                    const float *xk = x + (ptrdiff_t)(kh - khl) * s.krow + (ptrdiff_t)iw0 * C;
                    const float *wk = w + (ptrdiff_t)kh * KW * s.tap;
                    for (kw = kwl; kw < kwh; ++kw) {
                        const float *q = xk + (ptrdiff_t)kw * s.kcol, *v = wk + (ptrdiff_t)kw * s.tap;
                        if ((kh - khl) & 1) {
                            b0 += EMBER_NHWC_LD(v + c0) * EMBER_NHWC_LD(q + c0);
                            b1 += EMBER_NHWC_LD(v + c1) * EMBER_NHWC_LD(q + c1);
                        } else {
                            a0 += EMBER_NHWC_LD(v + c0) * EMBER_NHWC_LD(q + c0);
                            a1 += EMBER_NHWC_LD(v + c1) * EMBER_NHWC_LD(q + c1);
                        }
                    }
                }
                a0 += b0, a1 += b1;
                if (res) a0 += EMBER_NHWC_LD(res + (ptrdiff_t)ow * C + c0), a1 += EMBER_NHWC_LD(res + (ptrdiff_t)ow * C + c1);
                EMBER_NHWC_ST(y + (ptrdiff_t)ow * C + c0, ember_nhwc_clamp(a0, clamp, lo, hi));
                EMBER_NHWC_ST(y + (ptrdiff_t)ow * C + c1, ember_nhwc_clamp(a1, clamp, lo, hi));
            }
            ++ow;
        }
    }
}
#endif

/* y[OH][OW][C] = depthwise conv (multiplier 1) of x[H][W][C] with weights w[KH*KW][C] (tap-major), bias[C]
 * (or NULL), plus res[OH][OW][C] (or NULL) before the activation; N images one after another, output rows
 * [oh0, oh1) of each (a thread's part; 0, OH for all). 2-D geometry:
 * the depth entries of the table are 1. Relu/Clip clamp in registers; any other activation runs over each
 * finished output row (contiguous: OW*C floats). With C not a multiple of EMBER_VL, the last vector of a
 * pixel overlaps the one before it (its outputs are recomputed to the same values), so y must not overlap x. */
static void ember_dwconv_nhwc_f32(float *y, const float *x, const float *w, const float *bias, const float *res,
                                  const int32_t *p, int N, int oh0, int oh1, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act_b;
    const ptrdiff_t xrow = (ptrdiff_t)W * C, yrow = (ptrdiff_t)OW * C;
    const int unit = sw == 1 && dw == 1; /* overlapping windows: ember_nhwc_dw4_s1 */
    int n, oh, owa = 0, owb = 0, kh, kw, khl, khh;
    /* [owa, owb): the outputs whose windows lie inside the row */
    while (owa < OW && owa * sw - pl < 0) ++owa;
    owb = owa;
    while (owb < OW && owb * sw - pl + (KW - 1) * dw < W) ++owb;
    for (n = 0; n < N; ++n) {
        const float *xn = x + (ptrdiff_t)n * H * xrow;
        float *yn = y + (ptrdiff_t)n * OH * yrow;
        const float *rn = res ? res + (ptrdiff_t)n * OH * yrow : 0;
        for (oh = oh0; oh < oh1; ++oh) {
            const int ih0 = oh * sh - pt;
            float *yr = yn + oh * yrow;
            const float *rr = rn ? rn + oh * yrow : 0;
            ptrdiff_t c = 0;
            ember_nhwc_taps(ih0, KH, dh, H, &khl, &khh);
#if EMBER_VL > 1
            if (C >= EMBER_VL) {
                const ember_nhwc_st s = {(ptrdiff_t)dh * xrow, (ptrdiff_t)dw * C, (ptrdiff_t)sw * C, C};
                const float *xr = xn + (ptrdiff_t)(ih0 + khl * dh) * xrow;
/* the row kernel with its window width and stride-1 flag constant where they are known here */
#define EMBER_NHWC_ROW(KW_, UNIT_)                                                                               \
    ember_nhwc_dw_row(yr, xr, w, rr, bias, s, KW_, UNIT_, khl, khh, OW, W, sw, dw, pl, owa, owb, C, clamp, lo, hi)
                if (KH == 3 && KW == 3 && unit)
                    EMBER_NHWC_ROW(3, 1);
                else if (KH == 3 && KW == 3)
                    EMBER_NHWC_ROW(3, 0);
                else if (KH == 5 && KW == 5 && unit)
                    EMBER_NHWC_ROW(5, 1);
                else if (KH == 5 && KW == 5)
                    EMBER_NHWC_ROW(5, 0);
                else
                    EMBER_NHWC_ROW(KW, 0);
#undef EMBER_NHWC_ROW
                c = C;
            }
#endif
            if (c < C) { /* scalar: no vectors, or fewer channels than a vector */
                int ow;
                for (ow = 0; ow < OW; ++ow) {
                    const int iw0 = ow * sw - pl;
                    int kwl, kwh;
                    ember_nhwc_taps(iw0, KW, dw, W, &kwl, &kwh);
                    for (c = 0; c < C; ++c) {
                        float a = bias ? bias[c] : 0.0f;
                        for (kh = khl; kh < khh; ++kh)
                            for (kw = kwl; kw < kwh; ++kw)
                                a += w[(ptrdiff_t)(kh * KW + kw) * C + c] *
                                     xn[(ptrdiff_t)(ih0 + kh * dh) * xrow + (ptrdiff_t)(iw0 + kw * dw) * C + c];
                        if (rr) a += rr[(ptrdiff_t)ow * C + c];
                        if (clamp >= 1) a = a < lo ? lo : a;
                        if (clamp == 2) a = a > hi ? hi : a;
                        yr[(ptrdiff_t)ow * C + c] = a;
                    }
                }
            }
            if (!clamp) ember_act_apply_f32(yr, yrow, act, act_a, act_b);
        }
    }
}
/*@end*/

/*@kernel ember_conv_stem_nhwc_f32 requires ember_conv_geo ember_nhwc_util ember_act_apply_f32*/
/* A network's stem: a dense Conv of few input channels (an image's 3) whose output enters a channels-last
 * region. It reads x[N][C][H][W] (NCHW, as an ONNX model's input comes) or, with `nhwc_in`, x[N][H][W][C] (a
 * TFLite model's input, whose NHWC -> NCHW Transpose is then left out) and writes y[N][OH][OW][M] (NHWC), so the
 * region needs no reorder at its way in, and each output pixel is NV channel vectors of M accumulated over
 * the C*KH*KW taps: a broadcast input times a row of w[C*KH*KW][M] (tap-major, (c, kh, kw) order). As an
 * NCHW conv (ConvShifted: C*KH*KW products of K = 1 per stride phase, or im2col's K = 27 matmul) the 3x3
 * stride-2 stems of MobileNetV3 and EfficientNet took 1.6-4x onnxruntime's time on Zen 3. PX pixels whose
 * windows lie inside the input go together (PX * NV independent sums hide the FMA latency); border pixels go
 * one at a time with their taps clipped. Rows with few such windows (the keyword spotter's 10x4 stem on a
 * 49x10 spectrogram: 3 of its 5 outputs a row) go three rows at a time down each column instead, whose windows
 * share their clipped columns: one at a time, its 6.4 us were 2.5x LiteRT's time on Zen 3. Every output sums its
 * taps in the same order whichever way it goes, so a thread's rows come out as the whole call's. */
#if EMBER_VL > 1
EMBER_INLINE void ember_stem_px(float *y, const float *x, int ih0, int iw0, const float *w, const float *bias,
                                const ptrdiff_t *o, int NV, int PX, int C, ptrdiff_t cs, ptrdiff_t ps, int W, int khl,
                                int khh, int kwl, int kwh, int KH, int KW, int dh, int dw, ptrdiff_t step,
                                ptrdiff_t ystep, int M, int clamp, float lo, float hi) {
    ember_vf a[4][4];
    int i, j, c, kh, kw;
    for (i = 0; i < PX; ++i)
        for (j = 0; j < NV; ++j) a[i][j] = bias ? EMBER_NHWC_LD(bias + o[j]) : (ember_vf){0};
    for (c = 0; c < C; ++c)
        for (kh = khl; kh < khh; ++kh)
            for (kw = kwl; kw < kwh; ++kw) {
                const float *xk = x + (ptrdiff_t)c * cs + ((ptrdiff_t)(ih0 + kh * dh) * W + iw0 + kw * dw) * ps;
                const float *wk = w + (ptrdiff_t)((c * KH + kh) * KW + kw) * M;
                for (i = 0; i < PX; ++i) {
                    const ember_vf xv = (ember_vf){0} + xk[i * step];
                    for (j = 0; j < NV; ++j) a[i][j] += xv * EMBER_NHWC_LD(wk + o[j]);
                }
            }
    for (i = 0; i < PX; ++i)
        for (j = 0; j < NV; ++j) EMBER_NHWC_ST(y + i * ystep + o[j], ember_nhwc_clamp(a[i][j], clamp, lo, hi));
}
#endif

static void ember_conv_stem_nhwc_f32(float *y, const float *x, const float *w, const float *bias, const int32_t *p,
                                     int M, int nhwc_in, int N, int oh0, int oh1, int act, float act_a, float act_b) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OW = p[EMBER_GEO_OUT_W], OH = p[EMBER_GEO_OUT_H];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act_b;
    const ptrdiff_t plane = (ptrdiff_t)H * W, yrow = (ptrdiff_t)OW * M;
    /* an input channel's and an input pixel's stride */
    const ptrdiff_t cs = nhwc_in ? 1 : plane, ps = nhwc_in ? C : 1;
    int n, oh, ow, owa = 0, owb, khl, khh, kwl, kwh, rows = 1;
    /* [owa, owb): the outputs whose windows lie inside the row */
    while (owa < OW && owa * sw - pl < 0) ++owa;
    owb = owa;
    while (owb < OW && owb * sw - pl + (KW - 1) * dw < W) ++owb;
    for (n = 0; n < N; ++n)
        for (oh = oh0; oh < oh1; oh += rows) {
            const int ih0 = oh * sh - pt;
            const float *xn = x + (ptrdiff_t)n * C * plane;
            float *yr = y + ((ptrdiff_t)n * OH + oh) * yrow;
            rows = 1;
            ember_nhwc_taps(ih0, KH, dh, H, &khl, &khh);
#if EMBER_VL > 1
            if (M >= EMBER_VL) {
                /* three rows down each column: narrow rows, three of them whose windows lie inside the height */
                const int col = owb - owa < 8 && oh + 3 <= oh1 && khl == 0 && khh == KH &&
                                (oh + 2) * sh - pt + (KH - 1) * dh < H;
                int m0;
                if (col) rows = 3;
                for (m0 = 0; m0 < M; m0 += 4 * EMBER_VL) {
                    /* up to four vectors from m0; the last of the row overlaps the one before it where M is not
                     * a multiple of EMBER_VL (recomputed to the same values) */
                    const int nv = (M - m0 >= 4 * EMBER_VL ? 4 * EMBER_VL : M - m0 + EMBER_VL - 1) / EMBER_VL;
                    ptrdiff_t o[4];
                    int j;
                    for (j = 0; j < 4; ++j) o[j] = m0 + j * EMBER_VL > M - EMBER_VL ? M - EMBER_VL : m0 + j * EMBER_VL;
/* PX_ pixels of NV_ vectors from output column ow, taps [kwl, kwh) */
#define EMBER_STEM(NV_, PX_)                                                                                \
    ember_stem_px(yr + (ptrdiff_t)ow * M, xn, ih0, ow * sw - pl, w, bias, o, NV_, PX_, C, cs, ps, W, khl, khh, kwl, \
                  kwh, KH, KW, dh, dw, sw * ps, M, M, clamp, lo, hi)
/* three pixels of NV_ vectors down output column ow, taps [kwl, kwh) */
#define EMBER_STEM_COL(NV_)                                                                                    \
    ember_stem_px(yr + (ptrdiff_t)ow * M, xn, ih0, ow * sw - pl, w, bias, o, NV_, 3, C, cs, ps, W, 0, KH, kwl, kwh, \
                  KH, KW, dh, dw, (ptrdiff_t)sh * W * ps, yrow, M, clamp, lo, hi)
                    for (ow = 0; col && ow < OW; ++ow) {
                        ember_nhwc_taps(ow * sw - pl, KW, dw, W, &kwl, &kwh);
                        if (nv == 4) EMBER_STEM_COL(4);
                        else if (nv == 3) EMBER_STEM_COL(3);
                        else if (nv == 2) EMBER_STEM_COL(2);
                        else EMBER_STEM_COL(1);
                    }
                    for (ow = 0; !col && ow < OW;) {
                        const int px = nv == 4 ? 3 : 4;
                        if (ow >= owa && ow + px <= owb) {
                            kwl = 0, kwh = KW;
                            if (nv == 4) EMBER_STEM(4, 3);
                            else if (nv == 3) EMBER_STEM(3, 4);
                            else if (nv == 2) EMBER_STEM(2, 4);
                            else EMBER_STEM(1, 4);
                            ow += px;
                        } else if (ow >= owa && ow + 2 <= owb) {
                            /* the last two or three inside the row together: one at a time, each waited on the FMA
                             * latency as long as a group does (MobileNet's 3x3 stride-2 stem at 16x16 outputs:
                             * 3 of every 16) */
                            kwl = 0, kwh = KW;
                            if (owb - ow >= 3 && nv < 4) {
                                if (nv == 3) EMBER_STEM(3, 3);
                                else if (nv == 2) EMBER_STEM(2, 3);
                                else EMBER_STEM(1, 3);
                                ow += 3;
                            } else {
                                if (nv == 4) EMBER_STEM(4, 2);
                                else if (nv == 3) EMBER_STEM(3, 2);
                                else if (nv == 2) EMBER_STEM(2, 2);
                                else EMBER_STEM(1, 2);
                                ow += 2;
                            }
                        } else {
                            ember_nhwc_taps(ow * sw - pl, KW, dw, W, &kwl, &kwh);
                            if (nv == 4) EMBER_STEM(4, 1);
                            else if (nv == 3) EMBER_STEM(3, 1);
                            else if (nv == 2) EMBER_STEM(2, 1);
                            else EMBER_STEM(1, 1);
                            ++ow;
                        }
                    }
#undef EMBER_STEM
#undef EMBER_STEM_COL
                }
            } else
#endif
            {
                int m, c, kh, kw;
                for (ow = 0; ow < OW; ++ow) {
                    const int iw0 = ow * sw - pl;
                    ember_nhwc_taps(iw0, KW, dw, W, &kwl, &kwh);
                    for (m = 0; m < M; ++m) {
                        float a = bias ? bias[m] : 0.0f;
                        for (c = 0; c < C; ++c)
                            for (kh = khl; kh < khh; ++kh)
                                for (kw = kwl; kw < kwh; ++kw)
                                    a += w[(ptrdiff_t)((c * KH + kh) * KW + kw) * M + m] *
                                         xn[(ptrdiff_t)c * cs + ((ptrdiff_t)(ih0 + kh * dh) * W + iw0 + kw * dw) * ps];
                        if (clamp >= 1) a = a < lo ? lo : a;
                        if (clamp == 2) a = a > hi ? hi : a;
                        yr[(ptrdiff_t)ow * M + m] = a;
                    }
                }
            }
            if (!clamp) ember_act_apply_f32(yr, yrow * rows, act, act_a, act_b);
        }
}
/*@end*/


/*@kernel ember_pw_nhwc_ld_f32 requires ember_matmul_core ember_matmul_wide_f32 ember_act_apply_f32*/
/* A 1x1 stride-1 conv on NHWC activations: y[P][M] = x[P][C] . w[C][M] + bias[M] (+ res[P][M]), then the
 * activation; P = N * H * W pixels. `panels`: w was packed at compile time in panels of EMBER_MM_PANEL columns
 * (1), or of that many (a multiple of 64 on AVX-512: the 4-vector tiles of ember_matmul_wide_f32; kernels/matmul.c),
 * or not (0). The matmul runs strip by strip of columns, each strip passing over all of A: one product
 * over a whole plane read A (the activations, up to MiBs) once per strip from L3, and the 1x1 expand convs of
 * MobileNetV2 took 1.4-1.7x their NCHW time. In blocks of pixels whose rows of A fill about 128 KiB (an L2
 * share), each block of A is read from memory once. The bias (a row vector here), the residual and Relu/Clip
 * are applied in the matmul's registers; another activation (HardSwish, Swish) runs over each finished block,
 * one contiguous run, where the matmul would apply it strip by strip in rows of a few vectors (MobileNetV3's
 * expand convs: 1.1-1.25x). Weights over 1 MiB (C*M floats: ResNet's 7x7 stage, a dense conv's KH*KW*C rows)
 * no longer stay in L2 between blocks, so there the blocks grow to 1 MiB of A: each block streams the weights
 * from memory once; and P up to half a block more than that is one block (a 7x7 map's 49 pixels of K = 4608 are
 * 48 + 1 rows of 1 MiB blocks: the last row alone would stream the 9 MiB of weights again). */
#define EMBER_PW_NHWC_BLOCK_FLOATS 32768
#define EMBER_PW_NHWC_BIG_FLOATS 262144
EMBER_INLINE int ember_pw_nhwc_rows(int P, int C, int M) {
    const ptrdiff_t budget = (ptrdiff_t)C * M > EMBER_PW_NHWC_BIG_FLOATS ? EMBER_PW_NHWC_BIG_FLOATS
                                                                          : EMBER_PW_NHWC_BLOCK_FLOATS;
    int rows = (int)(budget / (C > 0 ? C : 1)) / EMBER_MR * EMBER_MR;
    if (rows < EMBER_MR) rows = EMBER_MR;
    return P <= rows + rows / 2 ? P : rows;
}
/* Columns [0, N) of n pixels' rows: B in panels of pw columns (N a multiple of pw), or plain (pw 0, b_sk floats a
 * row). */
EMBER_INLINE void ember_pw_nhwc_cols(float *y, ptrdiff_t ldy, const float *x, int C, const float *w, int pw,
                                     ptrdiff_t b_sk, const float *bias, const float *res, int n, int N, int act,
                                     float act_a, float act_b) {
#if EMBER_VL == 16
    if (pw % 64 == 0 && pw) {
        ember_matmul_wide_f32(y, ldy, x, C, 1, w, pw, n, N, C, bias, res, act, act_a, act_b);
        return;
    }
#endif
    if (res)
        ember_matmul_core_res(y, ldy, x, C, 1, w, b_sk, 0, pw, n, N, C, 1.0f, bias, 0, 1, 1.0f, res, act, act_a, act_b);
    else
        ember_matmul_core(y, ldy, x, C, 1, w, b_sk, 0, pw, n, N, C, 1.0f, bias, 0, 1, 1.0f, act, act_a, act_b);
}
/* Columns [0, M) of rows ldy floats apart in y and res (M < ldy: a thread's columns of a wider product, w and bias
 * at its first column; its blocks of pixels are the whole product's, sized by ldy). Where `panels` does not divide M,
 * the columns after the last whole panel are one narrower panel (conv_algorithms.py narrow_panels), a product of
 * their own. */
static void ember_pw_nhwc_ld_f32(float *y, ptrdiff_t ldy, const float *x, const float *w, int panels,
                                 const float *bias, const float *res, int P, int M, int C, int act, float act_a,
                                 float act_b) {
    const int late = act != EMBER_ACT_NONE && act != EMBER_ACT_RELU && act != EMBER_ACT_CLIP;
    const int rows = ember_pw_nhwc_rows(P, C, (int)ldy), whole = panels ? M / panels * panels : M;
    const int in = late ? EMBER_ACT_NONE : act;
    int p0, r;
    for (p0 = 0; p0 < P; p0 += rows) {
        const int n = P - p0 < rows ? P - p0 : rows;
        const ptrdiff_t o = (ptrdiff_t)p0 * ldy;
        const float *xb = x + (ptrdiff_t)p0 * C;
        ember_pw_nhwc_cols(y + o, ldy, xb, C, w, panels, M, bias, res ? res + o : 0, n, whole, in, act_a, act_b);
        if (whole < M)
            ember_pw_nhwc_cols(y + o + whole, ldy, xb, C, w + (ptrdiff_t)whole * C, M - whole, 0,
                               bias ? bias + whole : 0, res ? res + o + whole : 0, n, M - whole, in, act_a, act_b);
        if (late) {
            if (ldy == M) ember_act_apply_f32(y + o, (ptrdiff_t)n * M, act, act_a, act_b);
            else
                for (r = 0; r < n; ++r) ember_act_apply_f32(y + o + r * ldy, M, act, act_a, act_b);
        }
    }
}
/*@end*/

/*@kernel ember_pw_nhwc_f32 requires ember_pw_nhwc_ld_f32*/
static void ember_pw_nhwc_f32(float *y, const float *x, const float *w, int panels, const float *bias,
                              const float *res, int P, int M, int C, int act, float act_a, float act_b) {
    ember_pw_nhwc_ld_f32(y, M, x, w, panels, bias, res, P, M, C, act, act_a, act_b);
}
/*@end*/

/*@kernel ember_pw_nhwc_small_f32 requires ember_nhwc_util ember_act_apply_f32*/
/* The 1x1 conv of ember_pw_nhwc_f32 for few input channels (K = C <= 32: the expand convs of MobileNet-style
 * nets, 24 or 32 channels to 144 or 192), with w packed at compile time in panels of EMBER_MM_PANEL columns
 * ([M/P][C][P]). The general matmul runs strip by strip of 16 columns, each over a whole block of pixels, with a
 * K loop of a run-time length. Here a tile of EMBER_PWS_R pixels (in L1) runs over every panel (the weights, at
 * most 32 x M floats, stay in L1/L2 too), K is a compile-time constant in each case of the switch below, the
 * accumulators start from the bias, and the output is written pixel after pixel, in memory order (on Zen 3,
 * MobileNetV2's expand convs at 56x56 and 28x28: 0.72-0.79x the general matmul's time). A ragged last tile
 * overlaps the one before it (its pixels recomputed to the same values), so y must not overlap x or res.
 * Relu/Clip clamp in registers; another activation runs over each finished tile (6 x M floats, in L1). */
#ifndef EMBER_MM_PANEL /* the CPU family's panel width (as in kernels/matmul.c) */
#define EMBER_MM_PANEL 32
#endif
#if EMBER_VL > 1 && EMBER_MM_PANEL == 2 * EMBER_VL
#define EMBER_PWS 1 /* a panel is two vectors (AVX2's 16 columns, AVX-512's 32): tiles of 6 pixels x 2 vectors */
#define EMBER_PWS_R 6
/* One tile: pixels x[0..6) (rows of K floats) times one panel w ([K][2 * VL]), 12 accumulators written out
 * (GCC kept an accumulator array of this shape on the stack). A float splats as x - 0 (exact for every x, so the
 * compiler drops the subtraction), not 0 + x (which it must keep: -0 + 0 is +0). */
EMBER_INLINE void ember_pws_tile(float *y, const float *x, const float *w, const float *bias, const float *res,
                                 int K, ptrdiff_t M, int clamp, float lo, float hi) {
    const ember_vf b0 = bias ? EMBER_NHWC_LD(bias) : (ember_vf){0}, b1 = bias ? EMBER_NHWC_LD(bias + EMBER_VL) : (ember_vf){0};
    ember_vf a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1, a30 = b0, a31 = b1, a40 = b0, a41 = b1, a50 = b0,
             a51 = b1;
    int k;
    for (k = 0; k < K; ++k) {
        const ember_vf w0 = EMBER_NHWC_LD(w + (ptrdiff_t)k * 2 * EMBER_VL), w1 = EMBER_NHWC_LD(w + (ptrdiff_t)k * 2 * EMBER_VL + EMBER_VL);
        const float *xk = x + k;
        ember_vf v;
#define EMBER_PWS_FMA(I) (v = xk[(I) * K] - (ember_vf){0}, a##I##0 += v * w0, a##I##1 += v * w1)
        EMBER_PWS_FMA(0), EMBER_PWS_FMA(1), EMBER_PWS_FMA(2), EMBER_PWS_FMA(3), EMBER_PWS_FMA(4), EMBER_PWS_FMA(5);
#undef EMBER_PWS_FMA
    }
#define EMBER_PWS_PUT(I, J, A)                                                                   \
    do {                                                                                           \
        float *yo = y + (I) * M + (J) * EMBER_VL;                                                  \
        ember_vf t = A;                                                                            \
        if (res) t += EMBER_NHWC_LD(res + (I) * M + (J) * EMBER_VL);                               \
        EMBER_NHWC_ST(yo, ember_nhwc_clamp(t, clamp, lo, hi));                                     \
    } while (0)
    EMBER_PWS_PUT(0, 0, a00); EMBER_PWS_PUT(0, 1, a01); EMBER_PWS_PUT(1, 0, a10); EMBER_PWS_PUT(1, 1, a11);
    EMBER_PWS_PUT(2, 0, a20); EMBER_PWS_PUT(2, 1, a21); EMBER_PWS_PUT(3, 0, a30); EMBER_PWS_PUT(3, 1, a31);
    EMBER_PWS_PUT(4, 0, a40); EMBER_PWS_PUT(4, 1, a41); EMBER_PWS_PUT(5, 0, a50); EMBER_PWS_PUT(5, 1, a51);
#undef EMBER_PWS_PUT
}
/* Every tile of pixels [0, P), all panels; K constant where a case of the switch below inlines it. */
EMBER_INLINE void ember_pws_run(float *y, const float *x, const float *w, const float *bias, const float *res, int P,
                                int M, int K, int clamp, int act, float act_a, float act_b, float lo, float hi) {
    int p0 = 0, n0;
    while (p0 < P) {
        const ptrdiff_t o = (ptrdiff_t)p0 * M;
        for (n0 = 0; n0 < M; n0 += EMBER_MM_PANEL)
            ember_pws_tile(y + o + n0, x + (ptrdiff_t)p0 * K, w + (ptrdiff_t)n0 * K, bias ? bias + n0 : 0,
                           res ? res + o + n0 : 0, K, M, clamp, lo, hi);
        if (!clamp) ember_act_apply_f32(y + o, (ptrdiff_t)EMBER_PWS_R * M, act, act_a, act_b);
        p0 += EMBER_PWS_R;
        if (p0 < P && p0 + EMBER_PWS_R > P) p0 = P - EMBER_PWS_R;
    }
}
#else
#define EMBER_PWS 0
#endif
/* y[P][M] = x[P][C] . w + bias[M] (+ res[P][M]), then the activation; M a multiple of EMBER_MM_PANEL. */
static void ember_pw_nhwc_small_f32(float *y, const float *x, const float *w, const float *bias, const float *res, int P,
                                    int M, int C, int act, float act_a, float act_b) {
    const int clamp = act == EMBER_ACT_RELU ? 1 : act == EMBER_ACT_CLIP ? 2 : 0;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act_b;
    int p, m, c;
#if EMBER_PWS
    if (P >= EMBER_PWS_R) {
        switch (C) {
        case 8: ember_pws_run(y, x, w, bias, res, P, M, 8, clamp, act, act_a, act_b, lo, hi); return;
        case 16: ember_pws_run(y, x, w, bias, res, P, M, 16, clamp, act, act_a, act_b, lo, hi); return;
        case 24: ember_pws_run(y, x, w, bias, res, P, M, 24, clamp, act, act_a, act_b, lo, hi); return;
        case 32: ember_pws_run(y, x, w, bias, res, P, M, 32, clamp, act, act_a, act_b, lo, hi); return;
        default: ember_pws_run(y, x, w, bias, res, P, M, C, clamp, act, act_a, act_b, lo, hi); return;
        }
    }
#endif
    /* no vectors, or fewer pixels than a tile: one output at a time, the bias first as in the tiles */
    for (p = 0; p < P; ++p) {
        for (m = 0; m < M; ++m) {
            const float *wm = w + (ptrdiff_t)(m / EMBER_MM_PANEL) * C * EMBER_MM_PANEL + m % EMBER_MM_PANEL;
            float a = bias ? bias[m] : 0.0f;
            for (c = 0; c < C; ++c) a += x[(ptrdiff_t)p * C + c] * wm[(ptrdiff_t)c * EMBER_MM_PANEL];
            if (res) a += res[(ptrdiff_t)p * M + m];
            if (clamp >= 1) a = a < lo ? lo : a;
            if (clamp == 2) a = a > hi ? hi : a;
            y[(ptrdiff_t)p * M + m] = a;
        }
        if (!clamp) ember_act_apply_f32(y + (ptrdiff_t)p * M, M, act, act_a, act_b);
    }
}
/*@end*/

/*@kernel ember_gap_nhwc_f32 requires ember_simd*/
/* Squeeze-Excitation on NHWC activations. Pool: y[n][c] = mean over the P pixels of x[n][p][c] (the pooled
 * [N, C, 1, 1] tensor has the same bytes either way). Scale: y[n][p][c] = x[n][p][c] * s[n * s_n + c] (the
 * gate, [N or 1, C, 1, 1]). Channel vectors for the first cv = C - C % VL channels, one at a time for the rest. */
static void ember_gap_nhwc_f32(float *y, const float *x, int N, int P, int C) {
    const float inv = 1.0f / (float)P;
    const int cv = EMBER_VL > 1 ? C - C % EMBER_VL : 0;
    int n, p, c;
    for (n = 0; n < N; ++n) {
        const float *xn = x + (ptrdiff_t)n * P * C;
        float *yn = y + (ptrdiff_t)n * C;
#if EMBER_VL > 1
        for (c = 0; c < cv; c += EMBER_VL) {
            ember_vf a = (ember_vf){0};
            for (p = 0; p < P; ++p) a += *(const ember_vf *)(const void *)(xn + (ptrdiff_t)p * C + c);
            *(ember_vf *)(void *)(yn + c) = a * inv;
        }
#endif
        for (c = cv; c < C; ++c) {
            float a = 0.0f;
            for (p = 0; p < P; ++p) a += xn[(ptrdiff_t)p * C + c];
            yn[c] = a * inv;
        }
    }
}
/*@end*/

/*@kernel ember_scale_nhwc_f32 requires ember_simd*/
/* See ember_gap_nhwc_f32. */
static void ember_scale_nhwc_f32(float *y, const float *x, const float *s, ptrdiff_t s_n, int N, int P, int C) {
    const int cv = EMBER_VL > 1 ? C - C % EMBER_VL : 0;
    int n, p, c;
    for (n = 0; n < N; ++n) {
        const float *sn = s + n * s_n;
        for (p = 0; p < P; ++p) {
            const ptrdiff_t o = ((ptrdiff_t)n * P + p) * C;
#if EMBER_VL > 1
            for (c = 0; c < cv; c += EMBER_VL)
                *(ember_vf *)(void *)(y + o + c) =
                    *(const ember_vf *)(const void *)(x + o + c) * *(const ember_vf *)(const void *)(sn + c);
#endif
            for (c = cv; c < C; ++c) y[o + c] = x[o + c] * sn[c];
        }
    }
}
/*@end*/
