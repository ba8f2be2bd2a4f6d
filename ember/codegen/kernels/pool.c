/* Pooling and LRN, NC + 1-3 spatial dims (padded to 3-D with unit dims). Geometry comes in one static
 * table `p` (int32) of the fields below. */

/*@kernel ember_pool_geo requires ember_prelude*/
/* The pooling geometry table's entries (ember/ops/pool.py PoolGeometry writes it): input D,H,W,
 * kernel D,H,W, output D,H,W, strides, dilations, leading pads, trailing pads (each D,H,W). */
#define EMBER_POOL_IN_D 0
#define EMBER_POOL_IN_H 1
#define EMBER_POOL_IN_W 2
#define EMBER_POOL_K_D 3
#define EMBER_POOL_K_H 4
#define EMBER_POOL_K_W 5
#define EMBER_POOL_OUT_D 6
#define EMBER_POOL_OUT_H 7
#define EMBER_POOL_OUT_W 8
#define EMBER_POOL_STRIDE_D 9
#define EMBER_POOL_STRIDE_H 10
#define EMBER_POOL_STRIDE_W 11
#define EMBER_POOL_DIL_D 12
#define EMBER_POOL_DIL_H 13
#define EMBER_POOL_DIL_W 14
#define EMBER_POOL_PAD_D 15
#define EMBER_POOL_PAD_H 16
#define EMBER_POOL_PAD_W 17
#define EMBER_POOL_PAD_END_D 18
#define EMBER_POOL_PAD_END_H 19
#define EMBER_POOL_PAD_END_W 20
#define EMBER_POOL_GEO_SIZE 21
/*@end*/

/*@kernel ember_maxpool_tpl requires ember_window_bounds ember_pool_geo*/
/* Max pooling for one element type; `idx` (may be NULL) receives the flat argmax index into the input
 * (row-major spatial order, or column-major when storage_order is 1), like ONNX MaxPool's Indices.
 * Without indices, each output row is the running max of its taps' input rows, bounds solved per
 * tap (the loops over a row vectorize); with indices, one window at a time. */
#define EMBER_DEFINE_MAXPOOL(SUFFIX, T, LOWEST)                                                                  \
static void ember_maxpool_rows_##SUFFIX(T *y, const T *x, const int32_t *p, ptrdiff_t NC) {                      \
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W], OW = p[EMBER_POOL_OUT_W],  \
              sw = p[EMBER_POOL_STRIDE_W];                                                                       \
    ptrdiff_t nc;                                                                                                \
    int od, oh, ow, kd, kh, kw, lo, hi;                                                                          \
    for (nc = 0; nc < NC; ++nc)                                                                                  \
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)                                                             \
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh, y += OW) {                                              \
                for (ow = 0; ow < OW; ++ow) y[ow] = LOWEST;                                                      \
                for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {                                                     \
                    int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D]                                   \
                             + kd * p[EMBER_POOL_DIL_D];                                                         \
                    if (id < 0 || id >= D) continue;                                                             \
                    for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {                                                 \
                        int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H]                               \
                                 + kh * p[EMBER_POOL_DIL_H];                                                     \
                        const T *xr;                                                                             \
                        if (ih < 0 || ih >= H) continue;                                                         \
                        xr = x + ((nc * D + id) * (ptrdiff_t)H + ih) * W;                                        \
                        for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {                                             \
                            const int off = kw * p[EMBER_POOL_DIL_W] - p[EMBER_POOL_PAD_W];                      \
                            const T *xo = xr + off;                                                              \
                            ember_window_bounds(W, OW, sw, off, &lo, &hi);                                       \
                            if (sw == 1)                                                                         \
                                for (ow = lo; ow < hi; ++ow) y[ow] = xo[ow] > y[ow] ? xo[ow] : y[ow];            \
                            else                                                                                 \
                                for (ow = lo; ow < hi; ++ow) {                                                   \
                                    const T v = xo[(ptrdiff_t)ow * sw];                                          \
                                    y[ow] = v > y[ow] ? v : y[ow];                                               \
                                }                                                                                \
                        }                                                                                        \
                    }                                                                                            \
                }                                                                                                \
            }                                                                                                    \
}                                                                                                                \
static void ember_maxpool_##SUFFIX(T *y, int64_t *idx, const T *x, const int32_t *p, ptrdiff_t NC,               \
                                   int storage_order) {                                                          \
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W];                            \
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W;                                                                 \
    ptrdiff_t nc;                                                                                                \
    int od, oh, ow, kd, kh, kw;                                                                                  \
    if (!idx) {                                                                                                  \
        ember_maxpool_rows_##SUFFIX(y, x, p, NC);                                                                \
        return;                                                                                                  \
    }                                                                                                            \
    for (nc = 0; nc < NC; ++nc) {                                                                                \
        const T *xc = x + nc * s_in;                                                                             \
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)                                                             \
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh)                                                         \
                for (ow = 0; ow < p[EMBER_POOL_OUT_W]; ++ow) {                                                   \
                    T best = LOWEST;                                                                             \
                    ptrdiff_t arg = -1;                                                                          \
                    for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {                                                 \
                        int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D] + kd * p[EMBER_POOL_DIL_D];   \
                        if (id < 0 || id >= D) continue;                                                         \
                        for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {                                             \
                            int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H]                           \
                                     + kh * p[EMBER_POOL_DIL_H];                                                 \
                            if (ih < 0 || ih >= H) continue;                                                     \
                            for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {                                         \
                                int iw = ow * p[EMBER_POOL_STRIDE_W] - p[EMBER_POOL_PAD_W]                       \
                                         + kw * p[EMBER_POOL_DIL_W];                                             \
                                ptrdiff_t at;                                                                    \
                                if (iw < 0 || iw >= W) continue;                                                 \
                                at = ((ptrdiff_t)id * H + ih) * W + iw;                                          \
                                if (arg < 0 || xc[at] > best) {                                                  \
                                    best = xc[at];                                                               \
                                    arg = storage_order ? id + (ptrdiff_t)D * (ih + (ptrdiff_t)H * iw) : at;     \
                                }                                                                                \
                            }                                                                                    \
                        }                                                                                        \
                    }                                                                                            \
                    *y++ = best;                                                                                 \
                    if (idx) *idx++ = (int64_t)(nc * s_in + (arg < 0 ? 0 : arg));                                \
                }                                                                                                \
    }                                                                                                            \
}
/*@end*/

/*@kernel ember_maxpool_f32 requires ember_maxpool_tpl*/
EMBER_DEFINE_MAXPOOL(f32, float, (-__builtin_inff()))
/*@end*/

/*@kernel ember_maxpool3s2_f32 requires ember_pool_geo ember_phase_pick*/
/* Float max pooling over 3x3 windows at stride 2 (ResNet's stem pool), 2-D, without indices: each output row is
 * the max of its (up to) three input rows, and a vector of outputs the max of the even, the odd and the next
 * even floats of two vector pairs of those rows (ember_phase_pick), where the general kernel reads every tap
 * of every window with a stride of 2 (ResNet-50's 112x112 x 64 pool: 2.2x onnxruntime's time on Zen 3).
 * NaN as ember_maxpool_f32: never taken (v > best picks v); -inf where a window holds no float. */
#if EMBER_VL > 1
EMBER_INLINE ember_vf ember_mp_vmax(ember_vf v, ember_vf best) {
    const ember_phase_vi m = v > best;
    return (ember_vf)(((ember_phase_vi)v & m) | ((ember_phase_vi)best & ~m));
}
#endif
static void ember_maxpool3s2_f32(float *y, const float *x, const int32_t *p, ptrdiff_t NC) {
    const int H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W], OH = p[EMBER_POOL_OUT_H], OW = p[EMBER_POOL_OUT_W],
              pt = p[EMBER_POOL_PAD_H], pl = p[EMBER_POOL_PAD_W];
    ptrdiff_t nc;
    int oh, ow, i, t;
    for (nc = 0; nc < NC; ++nc)
        for (oh = 0; oh < OH; ++oh, y += OW) {
            const float *r[3];
            int nr = 0;
            for (t = 0; t < 3; ++t)
                if (2 * oh - pt + t >= 0 && 2 * oh - pt + t < H) r[nr++] = x + (nc * H + 2 * oh - pt + t) * (ptrdiff_t)W;
            for (ow = 0; ow < OW; ++ow) {
#if EMBER_VL > 1
                /* the columns [u, u + 2 * EMBER_VL + 2) inside the row: a vector of outputs */
                const int u = 2 * ow - pl;
                if (u >= 0 && ow + EMBER_VL <= OW && u + 2 * EMBER_VL + 2 <= W) {
                    ember_vf a = (ember_vf){0} - __builtin_inff(), b = a, c = a, d = a;
                    for (i = 0; i < nr; ++i) {
                        a = ember_mp_vmax(*(const ember_vf *)(r[i] + u), a);
                        b = ember_mp_vmax(*(const ember_vf *)(r[i] + u + EMBER_VL), b);
                        c = ember_mp_vmax(*(const ember_vf *)(r[i] + u + 2), c);
                        d = ember_mp_vmax(*(const ember_vf *)(r[i] + u + 2 + EMBER_VL), d);
                    }
                    a = ember_mp_vmax(EMBER_PHASE_PICK(a, b, EMBER_PHASE_ODD), EMBER_PHASE_PICK(a, b, EMBER_PHASE_EVEN));
                    *(ember_vf *)(y + ow) = ember_mp_vmax(EMBER_PHASE_PICK(c, d, EMBER_PHASE_EVEN), a);
                    ow += EMBER_VL - 1;
                    continue;
                }
#endif
                {
                    float best = -__builtin_inff();
                    for (i = 0; i < nr; ++i)
                        for (t = 2 * ow - pl; t < 2 * ow - pl + 3; ++t)
                            if (t >= 0 && t < W && r[i][t] > best) best = r[i][t];
                    y[ow] = best;
                }
            }
        }
}
/*@end*/

/*@kernel ember_maxpool_u8 requires ember_maxpool_tpl*/
EMBER_DEFINE_MAXPOOL(u8, uint8_t, 0)
/*@end*/

/*@kernel ember_maxpool_s8 requires ember_maxpool_tpl*/
EMBER_DEFINE_MAXPOOL(s8, int8_t, (-128))
/*@end*/

/*@kernel ember_pool_nhwc_loop requires ember_pool_geo*/
/* Channels-last pooling (ops/conv.py CHANNELS_LAST): y [N, OD, OH, OW, C] from x [N, D, H, W, C]. Every output
 * pixel's window is walked once, and each tap inside the input is a run of C contiguous values, so the loops over
 * channels vectorize and every line of x is read once per window that covers it (a plane-by-plane walk would read
 * the whole tensor once per channel). EMBER_POOL_NHWC(T, BODY_BEFORE, BODY, BODY_AFTER) runs BODY for each tap
 * inside the input with `xp` at its first channel, BODY_BEFORE before the first tap (`y` at the pixel's first
 * channel) and BODY_AFTER after the last, with `count` the taps inside the input and `padded` those inside the
 * padded input (as ember_avgpool_f32 counts them); then `y` moves on by C. */
#define EMBER_POOL_NHWC(T, BODY_BEFORE, BODY, BODY_AFTER)                                                            \
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W];                               \
    ptrdiff_t n, c;                                                                                                  \
    int od, oh, ow, kd, kh, kw;                                                                                      \
    for (n = 0; n < N; ++n)                                                                                          \
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)                                                                 \
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh)                                                             \
                for (ow = 0; ow < p[EMBER_POOL_OUT_W]; ++ow, y += C) {                                               \
                    int count = 0, padded = 0;                                                                       \
                    BODY_BEFORE;                                                                                     \
                    for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {                                                     \
                        const int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D] + kd * p[EMBER_POOL_DIL_D]; \
                        const int din = id >= 0 && id < D,                                                           \
                                  dpad = id >= -p[EMBER_POOL_PAD_D] && id < D + p[EMBER_POOL_PAD_END_D];             \
                        for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {                                                 \
                            const int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H]                         \
                                           + kh * p[EMBER_POOL_DIL_H];                                               \
                            const int hin = din && ih >= 0 && ih < H,                                                \
                                      hpad = dpad && ih >= -p[EMBER_POOL_PAD_H] && ih < H + p[EMBER_POOL_PAD_END_H]; \
                            for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {                                             \
                                const int iw = ow * p[EMBER_POOL_STRIDE_W] - p[EMBER_POOL_PAD_W]                     \
                                               + kw * p[EMBER_POOL_DIL_W];                                           \
                                if (hpad && iw >= -p[EMBER_POOL_PAD_W] && iw < W + p[EMBER_POOL_PAD_END_W]) ++padded; \
                                if (hin && iw >= 0 && iw < W) {                                                      \
                                    const T *xp = x + (((n * D + id) * (ptrdiff_t)H + ih) * W + iw) * C;             \
                                    ++count;                                                                         \
                                    BODY;                                                                            \
                                }                                                                                    \
                            }                                                                                        \
                        }                                                                                            \
                    }                                                                                                \
                    BODY_AFTER;                                                                                      \
                }
/*@end*/

/*@kernel ember_maxpool_nhwc_tpl requires ember_pool_nhwc_loop*/
/* Channels-last max pooling of one element type (no Indices output). */
#define EMBER_DEFINE_MAXPOOL_NHWC(SUFFIX, T, LOWEST)                                                              \
static void ember_maxpool_nhwc_##SUFFIX(T *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, const int32_t *p,        \
                                        ptrdiff_t N, ptrdiff_t C) {                                                \
    EMBER_POOL_NHWC(T, for (c = 0; c < C; ++c) y[c] = LOWEST,                                                      \
                    for (c = 0; c < C; ++c) y[c] = xp[c] > y[c] ? xp[c] : y[c], ((void)count, (void)padded))      \
}
/*@end*/

/*@kernel ember_maxpool_nhwc_f32 requires ember_maxpool_nhwc_tpl*/
EMBER_DEFINE_MAXPOOL_NHWC(f32, float, (-__builtin_inff()))
/*@end*/

/*@kernel ember_maxpool_nhwc_u8 requires ember_maxpool_nhwc_tpl*/
EMBER_DEFINE_MAXPOOL_NHWC(u8, uint8_t, 0)
/*@end*/

/*@kernel ember_maxpool_nhwc_s8 requires ember_maxpool_nhwc_tpl*/
EMBER_DEFINE_MAXPOOL_NHWC(s8, int8_t, (-128))
/*@end*/

/*@kernel ember_avgpool_nhwc_f32 requires ember_pool_nhwc_loop*/
/* Channels-last average pooling: ember_avgpool_f32's sums (the same taps in the same order) and divisors. */
static void ember_avgpool_nhwc_f32(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const int32_t *p,
                                   ptrdiff_t N, ptrdiff_t C, int count_include_pad) {
    EMBER_POOL_NHWC(float, for (c = 0; c < C; ++c) y[c] = 0.0f, for (c = 0; c < C; ++c) y[c] += xp[c], {
        const int k = count_include_pad ? padded : count;
        for (c = 0; c < C; ++c) y[c] = k > 0 ? y[c] / (float)k : 0.0f;
    })
}
/*@end*/

/*@kernel ember_avgpool_f32 requires ember_pool_geo*/
/* Average pooling. The divisor counts the window taps inside the input (count_include_pad = 0) or
 * inside the explicitly padded input (1); taps that only exist because of ceil_mode never count. */
static void ember_avgpool_f32(float *y, const float *x, const int32_t *p, ptrdiff_t NC, int count_include_pad) {
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W];
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W;
    ptrdiff_t nc;
    int od, oh, ow, kd, kh, kw;
    for (nc = 0; nc < NC; ++nc) {
        const float *xc = x + nc * s_in;
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh)
                for (ow = 0; ow < p[EMBER_POOL_OUT_W]; ++ow) {
                    float sum = 0.0f;
                    int count = 0, padded = 0;
                    for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {
                        int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D] + kd * p[EMBER_POOL_DIL_D];
                        int din = id >= 0 && id < D,
                            dpad = id >= -p[EMBER_POOL_PAD_D] && id < D + p[EMBER_POOL_PAD_END_D];
                        for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {
                            int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H] + kh * p[EMBER_POOL_DIL_H];
                            int hin = din && ih >= 0 && ih < H,
                                hpad = dpad && ih >= -p[EMBER_POOL_PAD_H] && ih < H + p[EMBER_POOL_PAD_END_H];
                            for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {
                                int iw = ow * p[EMBER_POOL_STRIDE_W] - p[EMBER_POOL_PAD_W] + kw * p[EMBER_POOL_DIL_W];
                                if (hpad && iw >= -p[EMBER_POOL_PAD_W] && iw < W + p[EMBER_POOL_PAD_END_W]) ++padded;
                                if (hin && iw >= 0 && iw < W) {
                                    sum += xc[((ptrdiff_t)id * H + ih) * W + iw];
                                    ++count;
                                }
                            }
                        }
                    }
                    count = count_include_pad ? padded : count;
                    *y++ = count > 0 ? sum / (float)count : 0.0f;
                }
    }
}
/*@end*/

/*@kernel ember_global_pool_f32 requires ember_prelude*/
/* Mean (is_max = 0) or max (is_max = 1) over each of NC contiguous planes of S values. */
static void ember_global_pool_f32(float *y, const float *x, ptrdiff_t NC, ptrdiff_t S, int is_max) {
    ptrdiff_t nc, i;
    for (nc = 0; nc < NC; ++nc) {
        const float *xc = x + nc * S;
        float acc = is_max ? xc[0] : 0.0f;
        if (is_max) {
            for (i = 1; i < S; ++i) acc = xc[i] > acc ? xc[i] : acc;
        } else {
            /* 16 partial sums: one running sum is a chain of dependent adds (4 cycles each, GCC may not
             * reorder float adds), which made SE blocks' pools 10x slower than the bandwidth allows. */
            const ptrdiff_t S16 = S - S % 16;
            float part[16] = {0};
            int j;
            for (i = 0; i < S16; i += 16)
                for (j = 0; j < 16; ++j) part[j] += xc[i + j];
            for (i = S16; i < S; ++i) acc += xc[i];
            for (j = 0; j < 8; ++j) part[j] += part[j + 8];
            for (j = 0; j < 4; ++j) part[j] += part[j + 4];
            acc += (part[0] + part[2]) + (part[1] + part[3]);
            acc /= (float)S;
        }
        y[nc] = acc;
    }
}
/*@end*/

/*@kernel ember_lrn_f32 requires ember_powf*/
/* Local response normalization across channels:
 * y = x / (bias + alpha / size * sum_{c' in window} x[c']^2) ^ beta, window [c - (size-1)/2, c + size/2]. */
static void ember_lrn_f32(float *y, const float *x, int N, int C, ptrdiff_t S, int size,
                          float alpha, float beta, float bias) {
    const int lo = (size - 1) / 2, hi = size / 2;
    int n, c, j;
    ptrdiff_t s;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= C ? C - 1 : c + hi;
            const float *xn = x + (ptrdiff_t)n * C * S;
            float *yc = y + ((ptrdiff_t)n * C + c) * S;
            for (s = 0; s < S; ++s) {
                float sq = 0.0f;
                for (j = c0; j <= c1; ++j) {
                    float v = xn[(ptrdiff_t)j * S + s];
                    sq += v * v;
                }
                yc[s] = xn[(ptrdiff_t)c * S + s] / ember_powf(bias + alpha / (float)size * sq, beta);
            }
        }
}
/*@end*/

/*@kernel ember_lppool_f32 requires ember_powf ember_fabsf ember_pool_geo*/
/* Lp pooling: y = (sum over the window's in-input taps of |x|^P)^(1/P); padding contributes zeros. */
static void ember_lppool_f32(float *y, const float *x, const int32_t *p, ptrdiff_t NC, float P) {
    const int D = p[EMBER_POOL_IN_D], H = p[EMBER_POOL_IN_H], W = p[EMBER_POOL_IN_W];
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W;
    ptrdiff_t nc;
    int od, oh, ow, kd, kh, kw;
    for (nc = 0; nc < NC; ++nc) {
        const float *xc = x + nc * s_in;
        for (od = 0; od < p[EMBER_POOL_OUT_D]; ++od)
            for (oh = 0; oh < p[EMBER_POOL_OUT_H]; ++oh)
                for (ow = 0; ow < p[EMBER_POOL_OUT_W]; ++ow) {
                    float sum = 0.0f;
                    for (kd = 0; kd < p[EMBER_POOL_K_D]; ++kd) {
                        int id = od * p[EMBER_POOL_STRIDE_D] - p[EMBER_POOL_PAD_D] + kd * p[EMBER_POOL_DIL_D];
                        if (id < 0 || id >= D) continue;
                        for (kh = 0; kh < p[EMBER_POOL_K_H]; ++kh) {
                            int ih = oh * p[EMBER_POOL_STRIDE_H] - p[EMBER_POOL_PAD_H] + kh * p[EMBER_POOL_DIL_H];
                            if (ih < 0 || ih >= H) continue;
                            for (kw = 0; kw < p[EMBER_POOL_K_W]; ++kw) {
                                int iw = ow * p[EMBER_POOL_STRIDE_W] - p[EMBER_POOL_PAD_W] + kw * p[EMBER_POOL_DIL_W];
                                float v;
                                if (iw < 0 || iw >= W) continue;
                                v = ember_fabsf(xc[((ptrdiff_t)id * H + ih) * W + iw]);
                                sum += P == 2.0f ? v * v : ember_powf(v, P);
                            }
                        }
                    }
                    *y++ = ember_powf(sum, 1.0f / P);
                }
    }
}
/*@end*/
