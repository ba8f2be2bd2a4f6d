/* Sampling and scattering over spatial dims (float32): GridSample, AffineGrid, Col2Im, RoiAlign, MaxUnpool,
 * DeformConv. Coordinates and indices that come from run-time data (grids, boxes, offsets, indices) are
 * checked or clamped before they become an address: a NaN, an infinity or a wild index reads zeros or is
 * skipped, never memory outside the tensor, and no out-of-range float reaches an integer conversion. */

/*@kernel ember_coord_clamp requires ember_prelude*/
/* x limited to [lo, hi]; NaN becomes lo (so the float -> int conversion that follows is defined). */
static inline float ember_coord_clamp(float x, float lo, float hi) {
    if (!(x >= lo)) return lo;
    return x > hi ? hi : x;
}
/*@end*/

/*@kernel ember_gridsample_f32 requires ember_floorf ember_rintf ember_coord_clamp*/
#define EMBER_GS_MAX_DIMS 3
/* Reflects x into [lo, hi] by its nearer border, as often as it takes. */
static float ember_gs_reflect(float x, float lo, float hi) {
    const float rng = hi - lo;
    float dx, q, r;
    if (!(rng > 0.0f)) return lo;
    if (x < lo) {
        dx = lo - x;
        q = ember_floorf(dx / rng);
        r = dx - q * rng;
        return q - 2.0f * ember_floorf(q * 0.5f) == 0.0f ? lo + r : hi - r;
    }
    if (x > hi) {
        dx = x - hi;
        q = ember_floorf(dx / rng);
        r = dx - q * rng;
        return q - 2.0f * ember_floorf(q * 0.5f) == 0.0f ? hi - r : lo + r;
    }
    return x;
}
/* Keys' cubic convolution weights (a = -0.75) of the 4 taps around a point at fraction t past tap 1. */
static void ember_gs_cubic(float t, float *c) {
    const float a = -0.75f, t1 = t + 1.0f, u = 1.0f - t, u1 = 2.0f - t;
    c[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    c[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    c[2] = ((a + 2.0f) * u - (a + 3.0f)) * u * u + 1.0f;
    c[3] = ((a * u1 - 5.0f * a) * u1 + 8.0f * a) * u1 - 4.0f * a;
}
/* Y[n, c, p] = X[n, c] sampled at grid[n, p] (normalized to [-1, 1], last spatial dim first) for nd spatial
 * dims of sizes dims[] (nd <= EMBER_GS_MAX_DIMS). mode: 0 nearest, 1 linear, 2 cubic; padding: 0 zeros,
 * 1 border, 2 reflection. Taps are separable: per dim the tap indices and weights, then every combination. */
static void ember_gridsample_f32(float *y, const float *x, const float *grid, int N, int C, int nd,
                                 const int32_t *dims, ptrdiff_t P, int mode, int padding, int align) {
    const int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
    int32_t tap_idx[EMBER_GS_MAX_DIMS][4];
    float tap_w[EMBER_GS_MAX_DIMS][4];
    ptrdiff_t offs[64], stride[EMBER_GS_MAX_DIMS], S = 1;
    float ws[64];
    int n, c, d, j, combos, used;
    ptrdiff_t p;
    for (d = nd - 1; d >= 0; --d) {
        stride[d] = S;
        S *= dims[d];
    }
    combos = 1;
    for (d = 0; d < nd; ++d) combos *= taps;
    for (n = 0; n < N; ++n)
        for (p = 0; p < P; ++p) {
            for (d = 0; d < nd; ++d) {
                const float L = (float)dims[d], g = grid[((ptrdiff_t)n * P + p) * nd + (nd - 1 - d)];
                const float lo = align ? 0.0f : -0.5f, hi = align ? L - 1.0f : L - 0.5f;
                float v = align ? (g + 1.0f) * 0.5f * (L - 1.0f) : ((g + 1.0f) * L - 1.0f) * 0.5f, f, t;
                if (mode == 0) v = ember_rintf(ember_coord_clamp(v, -L - 8.0f, 2.0f * L + 8.0f));
                if (v < lo || v > hi) {
                    if (padding == 1) v = ember_coord_clamp(v, 0.0f, L - 1.0f);
                    else if (padding == 2) v = ember_gs_reflect(v, lo, hi);
                }
                /* Far outside, every tap reads padding alike; clamping keeps the int conversion defined. */
                v = ember_coord_clamp(v, -8.0f, L + 8.0f);
                f = mode == 0 ? (float)(int32_t)v : ember_floorf(v);
                t = v - f;
                if (mode == 0) {
                    tap_idx[d][0] = (int32_t)f;
                    tap_w[d][0] = 1.0f;
                } else if (mode == 1) {
                    tap_idx[d][0] = (int32_t)f;
                    tap_idx[d][1] = (int32_t)f + 1;
                    tap_w[d][0] = 1.0f - t;
                    tap_w[d][1] = t;
                } else {
                    ember_gs_cubic(t, tap_w[d]);
                    for (j = 0; j < 4; ++j) tap_idx[d][j] = (int32_t)f - 1 + j;
                }
                for (j = 0; j < taps; ++j) {
                    int32_t i = tap_idx[d][j];
                    if (padding == 1) {
                        i = i < 0 ? 0 : i >= dims[d] ? dims[d] - 1 : i;
                    } else if (padding == 2) {
                        i = (int32_t)ember_coord_clamp(ember_gs_reflect((float)i, lo, hi), 0.0f, L - 1.0f);
                        i = i >= dims[d] ? dims[d] - 1 : i;
                    } else if (i < 0 || i >= dims[d]) {
                        i = -1; /* zeros */
                    }
                    tap_idx[d][j] = i;
                }
            }
            used = 0;
            for (j = 0; j < combos; ++j) {
                ptrdiff_t off = 0;
                float w = 1.0f;
                int rest = j, valid = 1;
                for (d = nd - 1; d >= 0; --d) {
                    const int k = rest % taps;
                    rest /= taps;
                    if (tap_idx[d][k] < 0) valid = 0;
                    off += (ptrdiff_t)tap_idx[d][k] * stride[d];
                    w *= tap_w[d][k];
                }
                if (valid) {
                    offs[used] = off;
                    ws[used++] = w;
                }
            }
            for (c = 0; c < C; ++c) {
                const float *xc = x + ((ptrdiff_t)n * C + c) * S;
                float acc = 0.0f;
                for (j = 0; j < used; ++j) acc += ws[j] * xc[offs[j]];
                y[((ptrdiff_t)n * C + c) * P + p] = acc;
            }
        }
}
/*@end*/

/*@kernel ember_affine_grid_f32 requires ember_prelude*/
/* grid[n, (z,) y, x] = theta[n] (nd x (nd + 1)) applied to the base grid's point (x, y(, z), 1), the base
 * grid spanning [-1, 1] over each of the D (1 for 2-D), H, W positions (at pixel centres unless align). */
static float ember_affine_base(int i, int L, int align) {
    if (align) return L > 1 ? -1.0f + 2.0f * (float)i / (float)(L - 1) : -1.0f;
    return (2.0f * (float)i + 1.0f) / (float)L - 1.0f;
}
static void ember_affine_grid_f32(float *grid, const float *theta, int N, int nd, int D, int H, int W, int align) {
    int n, z, yy, xx, r;
    for (n = 0; n < N; ++n) {
        const float *t = theta + (ptrdiff_t)n * nd * (nd + 1);
        for (z = 0; z < D; ++z)
            for (yy = 0; yy < H; ++yy)
                for (xx = 0; xx < W; ++xx) {
                    float base[4];
                    float *g = grid + ((((ptrdiff_t)n * D + z) * H + yy) * W + xx) * nd;
                    base[0] = ember_affine_base(xx, W, align);
                    base[1] = ember_affine_base(yy, H, align);
                    base[2] = ember_affine_base(z, D, align);
                    base[nd] = 1.0f;
                    for (r = 0; r < nd; ++r) {
                        const float *row = t + r * (nd + 1);
                        float s = 0.0f;
                        int k;
                        for (k = 0; k <= nd; ++k) s += row[k] * base[k];
                        g[r] = s;
                    }
                }
    }
}
/*@end*/

/*@kernel ember_col2im_f32 requires ember_prelude*/
#define EMBER_COL2IM_MAX_DIMS 8
/* Y[n, c, image] += X[n, c * B + b, l] for every block offset b and block position l (nd spatial dims,
 * row-major; cols[] block positions per dim), where the block's element lands inside the image. */
static void ember_col2im_f32(float *y, const float *x, int N, int C, int nd, const int32_t *img,
                             const int32_t *blk, const int32_t *cols, const int32_t *strides,
                             const int32_t *pads, const int32_t *dil) {
    ptrdiff_t img_size = 1, B = 1, L = 1, b, l, i;
    int n, c, d;
    for (d = 0; d < nd; ++d) {
        img_size *= img[d];
        B *= blk[d];
        L *= cols[d];
    }
    for (i = 0; i < (ptrdiff_t)N * C * img_size; ++i) y[i] = 0.0f;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            float *yc = y + ((ptrdiff_t)n * C + c) * img_size;
            const float *xc = x + ((ptrdiff_t)n * C + c) * B * L;
            for (b = 0; b < B; ++b)
                for (l = 0; l < L; ++l) {
                    ptrdiff_t rb = b, rl = l, off = 0, st = 1;
                    int inside = 1;
                    for (d = nd - 1; d >= 0; --d) {
                        const ptrdiff_t pos = (rl % cols[d]) * strides[d] - pads[d] + (rb % blk[d]) * dil[d];
                        rb /= blk[d];
                        rl /= cols[d];
                        if (pos < 0 || pos >= img[d]) inside = 0;
                        off += pos * st;
                        st *= img[d];
                    }
                    if (inside) yc[off] += xc[b * L + l];
                }
        }
}
/*@end*/

/*@kernel ember_roialign_f32 requires ember_ceilf ember_coord_clamp*/
/* RoiAlign over NCHW X: for each of R boxes (x1, y1, x2, y2) * scale on image batch[r], PH x PW bins, each
 * the average (or the maximum of the weighted corner values) of a grid of bilinear samples. A batch index
 * outside [0, N) gives zeros; adaptive sample grids are capped at 1024 per axis. */
static void ember_roialign_f32(float *y, const float *x, const float *rois, const int64_t *batch, int R, int N,
                               int C, int H, int W, int PH, int PW, int sampling, float scale, int half_pixel,
                               int max_mode) {
    const float off = half_pixel ? 0.5f : 0.0f;
    int r, c, ph, pw, iy, ix;
    for (r = 0; r < R; ++r) {
        const float *box = rois + (ptrdiff_t)r * 4;
        const int64_t bi = batch[r];
        const float x1 = box[0] * scale - off, y1 = box[1] * scale - off;
        float rw = box[2] * scale - off - x1, rh = box[3] * scale - off - y1, bh, bw, count;
        int gh, gw;
        float *yr = y + (ptrdiff_t)r * C * PH * PW;
        if (bi < 0 || bi >= N) {
            ptrdiff_t i;
            for (i = 0; i < (ptrdiff_t)C * PH * PW; ++i) yr[i] = 0.0f;
            continue;
        }
        if (!half_pixel) {
            rw = rw > 1.0f ? rw : 1.0f;
            rh = rh > 1.0f ? rh : 1.0f;
        }
        bh = rh / (float)PH;
        bw = rw / (float)PW;
        if (sampling > 0) {
            gh = gw = sampling;
        } else {
            const float ch = ember_ceilf(bh), cw = ember_ceilf(bw);
            gh = ch >= 1.0f ? (int)ember_coord_clamp(ch, 1.0f, 1024.0f) : 0;
            gw = cw >= 1.0f ? (int)ember_coord_clamp(cw, 1.0f, 1024.0f) : 0;
        }
        count = gh * gw > 1 ? (float)(gh * gw) : 1.0f;
        for (c = 0; c < C; ++c) {
            const float *xc = x + ((ptrdiff_t)bi * C + c) * H * W;
            for (ph = 0; ph < PH; ++ph)
                for (pw = 0; pw < PW; ++pw) {
                    float acc = 0.0f;
                    int first = 1;
                    for (iy = 0; iy < gh; ++iy)
                        for (ix = 0; ix < gw; ++ix) {
                            float sy = y1 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
                            float sx = x1 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
                            float ly, lx, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f, v4 = 0.0f, v;
                            int y0, x0, yh, xh;
                            if (sy >= -1.0f && sy <= (float)H && sx >= -1.0f && sx <= (float)W) {
                                sy = sy > 0.0f ? sy : 0.0f;
                                sx = sx > 0.0f ? sx : 0.0f;
                                y0 = (int)sy;
                                x0 = (int)sx;
                                if (y0 >= H - 1) {
                                    y0 = yh = H - 1;
                                    sy = (float)y0;
                                } else {
                                    yh = y0 + 1;
                                }
                                if (x0 >= W - 1) {
                                    x0 = xh = W - 1;
                                    sx = (float)x0;
                                } else {
                                    xh = x0 + 1;
                                }
                                ly = sy - (float)y0;
                                lx = sx - (float)x0;
                                v1 = (1.0f - ly) * (1.0f - lx) * xc[(ptrdiff_t)y0 * W + x0];
                                v2 = (1.0f - ly) * lx * xc[(ptrdiff_t)y0 * W + xh];
                                v3 = ly * (1.0f - lx) * xc[(ptrdiff_t)yh * W + x0];
                                v4 = ly * lx * xc[(ptrdiff_t)yh * W + xh];
                            }
                            if (max_mode) {
                                v = v1 > v2 ? v1 : v2;
                                v = v > v3 ? v : v3;
                                v = v > v4 ? v : v4;
                                acc = first || v > acc ? v : acc;
                                first = 0;
                            } else {
                                acc += v1 + v2 + v3 + v4;
                            }
                        }
                    yr[((ptrdiff_t)c * PH + ph) * PW + pw] = max_mode ? acc : acc / count;
                }
        }
    }
}
/*@end*/

/*@kernel ember_maxunpool requires ember_copy*/
#define EMBER_UNPOOL_MAX_RANK 8
/* y = 0, then each of the `count` elements of x (elem_size bytes) goes to the flat index idx[i] of the
 * unpooled tensor of dims[] (rank dims), which sits in the leading corner of y (strides ystr[], in elements).
 * An index outside that tensor is skipped. */
static void ember_maxunpool(void *y, const void *x, const int64_t *idx, ptrdiff_t count, int rank,
                            const int32_t *dims, const int32_t *ystr, ptrdiff_t y_numel, int elem_size) {
    uint8_t *yb = (uint8_t *)y;
    const uint8_t *xb = (const uint8_t *)x;
    int64_t total = 1;
    ptrdiff_t i;
    int d;
    for (i = 0; i < y_numel * elem_size; ++i) yb[i] = 0;
    for (d = 0; d < rank; ++d) total *= dims[d];
    for (i = 0; i < count; ++i) {
        int64_t rest = idx[i];
        ptrdiff_t off = 0;
        if (rest < 0 || rest >= total) continue;
        for (d = rank - 1; d >= 0; --d) {
            off += (ptrdiff_t)(rest % dims[d]) * ystr[d];
            rest /= dims[d];
        }
        ember_copy(yb + off * elem_size, xb + i * elem_size, (size_t)elem_size);
    }
}
/*@end*/

/*@kernel ember_deform_conv2d_f32 requires ember_floorf ember_coord_clamp*/
/* X at (h, w), bilinear, zero outside the H x W plane. */
static float ember_deform_sample(const float *xc, int H, int W, float h, float w) {
    float fh, fw, th, tw, acc = 0.0f;
    int h0, w0, a, b;
    h = ember_coord_clamp(h, -2.0f, (float)H + 1.0f);
    w = ember_coord_clamp(w, -2.0f, (float)W + 1.0f);
    fh = ember_floorf(h);
    fw = ember_floorf(w);
    th = h - fh;
    tw = w - fw;
    h0 = (int)fh;
    w0 = (int)fw;
    for (a = 0; a < 2; ++a)
        for (b = 0; b < 2; ++b) {
            const int hh = h0 + a, ww = w0 + b;
            if (hh >= 0 && hh < H && ww >= 0 && ww < W)
                acc += (a ? th : 1.0f - th) * (b ? tw : 1.0f - tw) * xc[(ptrdiff_t)hh * W + ww];
        }
    return acc;
}
/* 2-D deformable convolution: each kernel tap (i, j) of output pixel (oh, ow) samples X at its regular
 * position plus offset[n, og, i, j, (dh, dw), oh, ow], times mask[n, og, i, j, oh, ow] when given; input
 * channel c uses offset group c / (C / OG). geo: SH SW PH PW DH DW. */
static void ember_deform_conv2d_f32(float *y, const float *x, const float *w, const float *offset, const float *bias,
                                    const float *mask, int N, int C, int H, int W, int OC, int OH, int OW, int KH,
                                    int KW, const int32_t *geo, int G, int OG) {
    const int cpg = C / G, ocpg = OC / G, cpog = C / OG, K = KH * KW;
    const ptrdiff_t plane = (ptrdiff_t)OH * OW;
    int n, oc, oh, ow, ci, i, j;
    for (n = 0; n < N; ++n)
        for (oc = 0; oc < OC; ++oc)
            for (oh = 0; oh < OH; ++oh)
                for (ow = 0; ow < OW; ++ow) {
                    const int g = oc / ocpg;
                    const ptrdiff_t px = (ptrdiff_t)oh * OW + ow;
                    float acc = bias ? bias[oc] : 0.0f;
                    for (ci = 0; ci < cpg; ++ci) {
                        const int c = g * cpg + ci, og = c / cpog;
                        const float *xc = x + ((ptrdiff_t)n * C + c) * H * W;
                        const float *wk = w + ((ptrdiff_t)oc * cpg + ci) * K;
                        for (i = 0; i < KH; ++i)
                            for (j = 0; j < KW; ++j) {
                                const int k = i * KW + j;
                                const ptrdiff_t oo = ((ptrdiff_t)n * OG + og) * K + k;
                                const float dh = offset[(oo * 2) * plane + px], dw = offset[(oo * 2 + 1) * plane + px];
                                const float hh = (float)(oh * geo[0] - geo[2] + i * geo[4]) + dh;
                                const float ww = (float)(ow * geo[1] - geo[3] + j * geo[5]) + dw;
                                float v = ember_deform_sample(xc, H, W, hh, ww);
                                if (mask) v *= mask[oo * plane + px];
                                acc += wk[k] * v;
                            }
                    }
                    y[((ptrdiff_t)n * OC + oc) * plane + px] = acc;
                }
}
/*@end*/
