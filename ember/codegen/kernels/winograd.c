/* Winograd F(2x2, 3x3) convolution for 3x3, stride-1, undilated, ungrouped 2-D convolutions: each
 * 2x2 output tile costs 16 multiplies per (in, out) channel pair instead of 36. The weights arrive
 * already transformed at compile time (ember/passes/winograd.py): U[e][m][c] = (G g_mc G^T)[e], e the
 * 16 positions of the 4x4 transformed tile. Per image:
 *   V[e][c][t] = (B^T d_ct B)[e]     input transform of each 4x4 input patch d (tile t, channel c)
 *   Z[e][m][t] = sum_c U[e][m][c] V[e][c][t]    16 matmuls (the matmul kernel)
 *   y tile     = A^T Z[.][m][t] A + bias, then the fused activation.
 * Geometry `p` as conv.c's table (C, input D,H,W, kernel, output, strides, dilations, leading pads).
 * The transforms vectorize across the tiles of a row: the padded input rows are stored split into
 * even and odd columns (a tile's 4 columns are then E[tw], O[tw], E[tw+1], O[tw+1], all contiguous
 * in tw), and output rows are produced as even and odd columns and interleaved on the way out.
 * `scratch`: padded plane (2*TH+2) x 2*(TW+1), V (16*(C*T+16)), Z (16*(M*T+16)) and four output half-rows
 * (TW each) floats, T = TH*TW tiles, TH = ceil(OH/2), TW = ceil(OW/2). `res` (else NULL): a residual shaped
 * as y, added to each output row as it is stored, before the activation (passes/fuse_residual.py); both
 * kernels here take it. `apack` (both kernels): each U[e] is in the matmul's row panels (kernels/matmul.c
 * ember_matmul_core_ap; passes/conv_algorithms.py row_panels), so that the products read the weights as one
 * forward stream: a model's U comes from memory (4-16 MiB a layer in ResNet-50), and a register tile's six rows
 * of C floats each are too short for the hardware prefetchers to follow. */

/*@kernel ember_conv_winograd_f32 requires ember_matmul_core ember_conv_geo*/
static void ember_conv_winograd_f32(float *y, const float *x, const float *U, const float *bias, const float *res,
                                    float *scratch, const int32_t *p, int N, int M, int act, float act_a, float act_b,
                                    int apack) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int TH = (OH + 1) / 2, TW = (OW + 1) / 2, Hp = 2 * TH + 2, Wh = TW + 1;
    /* The 16 matrices of V and Z sit 64 bytes more than their size apart: at a multiple of 4 KiB (e.g.
     * 64 channels x 784 tiles) their 16 streams would collide in the same L1 sets. */
    const ptrdiff_t T = (ptrdiff_t)TH * TW, vs = (ptrdiff_t)C * T + 16, zs = (ptrdiff_t)M * T + 16;
    float *EMBER_RESTRICT xp = scratch;
    float *EMBER_RESTRICT V = xp + (ptrdiff_t)Hp * 2 * Wh;
    float *EMBER_RESTRICT Z = V + 16 * vs;
    float *EMBER_RESTRICT half = Z + 16 * zs;
    int n, c, m, e, r, j, th, tw, i;
    for (n = 0; n < N; ++n) {
        for (c = 0; c < C; ++c) {
            const float *xc = x + ((ptrdiff_t)n * C + c) * H * W;
            float *vc = V + (ptrdiff_t)c * T;
            /* Padded row r (input row r - pt; padded column q is input column q - pl) as its even
             * columns E[j] = q = 2j and odd columns O[j] = q = 2j + 1, zero outside the input. */
            for (r = 0; r < Hp; ++r) {
                float *EMBER_RESTRICT ev = xp + (ptrdiff_t)r * 2 * Wh, *EMBER_RESTRICT od = ev + Wh;
                const int ih = r - pt;
                const float *xr = xc + (ptrdiff_t)ih * W;
                for (j = 0; j < Wh; ++j) {
                    const int q0 = 2 * j - pl, q1 = q0 + 1;
                    const int in_row = ih >= 0 && ih < H;
                    ev[j] = in_row && q0 >= 0 && q0 < W ? xr[q0] : 0.0f;
                    od[j] = in_row && q1 >= 0 && q1 < W ? xr[q1] : 0.0f;
                }
            }
            for (th = 0; th < TH; ++th) {
                const float *e0 = xp + (ptrdiff_t)2 * th * 2 * Wh, *e1 = e0 + 2 * Wh, *e2 = e1 + 2 * Wh, *e3 = e2 + 2 * Wh;
                const float *o0 = e0 + Wh, *o1 = e1 + Wh, *o2 = e2 + Wh, *o3 = e3 + Wh;
                float *v = vc + (ptrdiff_t)th * TW;
                for (tw = 0; tw < TW; ++tw) {
                    /* Each patch row d times B (B^T rows: d0-d2, d1+d2, d2-d1, d1-d3), d = (E, O, E', O'). */
                    const float a0 = e0[tw] - e0[tw + 1], a1 = o0[tw] + e0[tw + 1], a2 = e0[tw + 1] - o0[tw], a3 = o0[tw] - o0[tw + 1];
                    const float b0 = e1[tw] - e1[tw + 1], b1 = o1[tw] + e1[tw + 1], b2 = e1[tw + 1] - o1[tw], b3 = o1[tw] - o1[tw + 1];
                    const float c0 = e2[tw] - e2[tw + 1], c1 = o2[tw] + e2[tw + 1], c2 = e2[tw + 1] - o2[tw], c3 = o2[tw] - o2[tw + 1];
                    const float d0 = e3[tw] - e3[tw + 1], d1 = o3[tw] + e3[tw + 1], d2 = e3[tw + 1] - o3[tw], d3 = o3[tw] - o3[tw + 1];
                    /* Then B^T down each column. */
                    v[0 * vs + tw] = a0 - c0;  v[1 * vs + tw] = a1 - c1;  v[2 * vs + tw] = a2 - c2;  v[3 * vs + tw] = a3 - c3;
                    v[4 * vs + tw] = b0 + c0;  v[5 * vs + tw] = b1 + c1;  v[6 * vs + tw] = b2 + c2;  v[7 * vs + tw] = b3 + c3;
                    v[8 * vs + tw] = c0 - b0;  v[9 * vs + tw] = c1 - b1;  v[10 * vs + tw] = c2 - b2; v[11 * vs + tw] = c3 - b3;
                    v[12 * vs + tw] = b0 - d0; v[13 * vs + tw] = b1 - d1; v[14 * vs + tw] = b2 - d2; v[15 * vs + tw] = b3 - d3;
                }
            }
        }
        for (e = 0; e < 16; ++e)
            ember_matmul_core_ap(Z + e * zs, T, U + e * (ptrdiff_t)M * C, C, 1, V + e * vs, T, 0, 0, M, (int)T, C, 1.0f,
                                 0, 0, 0, 0.0f, 0, 0, 0.0f, 0.0f, apack);
        for (m = 0; m < M; ++m) {
            const float b = bias ? bias[m] : 0.0f;
            float *ym = y + ((ptrdiff_t)n * M + m) * OH * OW;
            const float *rm = res ? res + ((ptrdiff_t)n * M + m) * OH * OW : 0;
            for (th = 0; th < TH; ++th) {
                const float *z = Z + (ptrdiff_t)m * T + (ptrdiff_t)th * TW;
                float *EMBER_RESTRICT y0e = half, *EMBER_RESTRICT y0o = half + TW;
                float *EMBER_RESTRICT y1e = half + 2 * TW, *EMBER_RESTRICT y1o = half + 3 * TW;
                for (tw = 0; tw < TW; ++tw) {
                    /* A^T = [1 1 1 0; 0 1 -1 -1] on the rows, then on the columns. */
                    const float q0 = z[0 * zs + tw] + z[4 * zs + tw] + z[8 * zs + tw];
                    const float q1 = z[1 * zs + tw] + z[5 * zs + tw] + z[9 * zs + tw];
                    const float q2 = z[2 * zs + tw] + z[6 * zs + tw] + z[10 * zs + tw];
                    const float q3 = z[3 * zs + tw] + z[7 * zs + tw] + z[11 * zs + tw];
                    const float w0 = z[4 * zs + tw] - z[8 * zs + tw] - z[12 * zs + tw];
                    const float w1 = z[5 * zs + tw] - z[9 * zs + tw] - z[13 * zs + tw];
                    const float w2 = z[6 * zs + tw] - z[10 * zs + tw] - z[14 * zs + tw];
                    const float w3 = z[7 * zs + tw] - z[11 * zs + tw] - z[15 * zs + tw];
                    y0e[tw] = b + q0 + q1 + q2;
                    y0o[tw] = b + q1 - q2 - q3;
                    y1e[tw] = b + w0 + w1 + w2;
                    y1o[tw] = b + w1 - w2 - w3;
                }
                for (i = 0; i < OW; ++i) ym[(ptrdiff_t)2 * th * OW + i] = (i & 1 ? y0o : y0e)[i >> 1];
                if (2 * th + 1 < OH)
                    for (i = 0; i < OW; ++i) ym[(ptrdiff_t)(2 * th + 1) * OW + i] = (i & 1 ? y1o : y1e)[i >> 1];
                if (rm) { /* the one or two rows just stored */
                    const ptrdiff_t at = (ptrdiff_t)2 * th * OW, rows = 2 * th + 1 < OH ? 2 : 1;
                    for (i = 0; i < rows * OW; ++i) ym[at + i] += rm[at + i];
                }
            }
            ember_act_apply_f32(ym, (ptrdiff_t)OH * OW, act, act_a, act_b);
        }
    }
}
/*@end*/

/*@kernel ember_wino4_tf requires ember_simd*/
/* F(4x4, 3x3)'s transforms on six vectors of one line: B^T (input) and A^T (output), points 0, +-1, +-2.
 * Both ConvWinograd4 (vectors of tiles) and the channels-last kernel (vectors of channels) apply them twice,
 * along the rows and then down the columns. */
EMBER_INLINE void ember_wino4_bt(const ember_vf x[6], ember_vf t[6]) {
    t[0] = 4.0f * x[0] - 5.0f * x[2] + x[4];
    t[1] = x[3] + x[4] - 4.0f * (x[1] + x[2]);
    t[2] = x[4] - x[3] + 4.0f * (x[1] - x[2]);
    t[3] = x[4] - x[2] + 2.0f * (x[3] - x[1]);
    t[4] = x[4] - x[2] + 2.0f * (x[1] - x[3]);
    t[5] = 4.0f * x[1] - 5.0f * x[3] + x[5];
}
EMBER_INLINE void ember_wino4_at(const ember_vf x[6], ember_vf o[4]) {
    const ember_vf s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    o[0] = x[0] + s12 + s34;
    o[1] = d12 + 2.0f * d34;
    o[2] = s12 + 4.0f * s34;
    o[3] = d12 + 8.0f * d34 + x[5];
}
/*@end*/

/*@kernel ember_conv_winograd4_f32 requires ember_matmul_core ember_conv_geo ember_wino4_tf*/
/* Winograd F(4x4, 3x3): 36 multiplies per 4x4 output tile and channel pair, 2.25 per output against
 * F(2x2, 3x3)'s 4, for maps big enough to fill the matmuls' vectors with whole tiles (the choice is in
 * ember/passes/conv_algorithms.py, which also guarantees T >= EMBER_VL). U[e][m][c] = (G g G^T)[e],
 * e = 6i + j over the 36 positions. Transforms (Lavin and Gray's points 0, +-1, +-2):
 *   B^T rows (4,0,-5,0,1,0) (0,-4,-4,1,1,0) (0,4,-4,-1,1,0) (0,-2,-1,2,1,0) (0,2,-1,-2,1,0) (0,4,0,-5,0,1)
 *   A^T rows (1,1,1,1,1,0) (0,1,-1,2,-2,0) (0,1,1,4,4,0) (0,1,-1,8,-8,1)
 * Both transforms run in vectors across tiles, over the flat tile index t = th*TW + tw, so 28x28 maps
 * (7 tiles a row) fill 16 lanes too. For that, each channel's padded input is first stored as four
 * column phases P_r[j] = row[4j + r] (then a tile's six columns are contiguous runs in tw) and
 * gathered into D[6i + k][t] = patch t's element (i, k); the outputs go through 16 planes O[4r + k][t]
 * on their way back to rows. `scratch`: padded plane (4*TH+2) x 4*(TW+1), D (36*T), V (36*(C*T+16)),
 * Z (36*(M*T+16)), O (16*T) floats, T = TH*TW tiles, TH = ceil(OH/4), TW = ceil(OW/4).
 * `xs`, `ys` (0: H*W, OH*OW): floats between the channel planes of x, and of y and `res`. With them a call
 * computes a band of output rows of a bigger map (ops/split.py: a thread's part, whose table states the
 * band's rows, and the input rows from the band's first window row), transforming only the input it reads. */
static void ember_conv_winograd4_f32(float *y, const float *x, const float *U, const float *bias, const float *res,
                                     float *scratch, const int32_t *p, int N, int M, ptrdiff_t xs, ptrdiff_t ys, int act,
                                     float act_a, float act_b, int apack) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int TH = (OH + 3) / 4, TW = (OW + 3) / 4, Hp = 4 * TH + 2, Wq = TW + 1;
    /* 64 bytes more than their size apart, as above: no 4 KiB-aligned streams. */
    const ptrdiff_t T = (ptrdiff_t)TH * TW, vs = (ptrdiff_t)C * T + 16, zs = (ptrdiff_t)M * T + 16;
    const ptrdiff_t xplane = xs ? xs : (ptrdiff_t)H * W, yplane = ys ? ys : (ptrdiff_t)OH * OW;
    float *EMBER_RESTRICT xp = scratch;
    float *EMBER_RESTRICT D = xp + (ptrdiff_t)Hp * 4 * Wq;
    float *EMBER_RESTRICT V = D + 36 * T;
    float *EMBER_RESTRICT Z = V + 36 * vs;
    float *EMBER_RESTRICT O = Z + 36 * zs;
    ptrdiff_t t0, t;
    int n, c, m, e, r, i, j, k, th, tw, ow;
    for (n = 0; n < N; ++n) {
        for (c = 0; c < C; ++c) {
            const float *xc = x + ((ptrdiff_t)n * C + c) * xplane;
            for (r = 0; r < Hp; ++r) {
                float *EMBER_RESTRICT row = xp + (ptrdiff_t)r * 4 * Wq;
                const int ih = r - pt, in_row = ih >= 0 && ih < H;
                const float *xr = xc + (ptrdiff_t)ih * W;
                for (j = 0; j < Wq; ++j)
                    for (i = 0; i < 4; ++i) {
                        const int q = 4 * j + i - pl;
                        row[i * Wq + j] = in_row && q >= 0 && q < W ? xr[q] : 0.0f;
                    }
            }
            for (i = 0; i < 6; ++i)
                for (k = 0; k < 6; ++k)
                    for (th = 0; th < TH; ++th) {
                        const float *src = xp + (ptrdiff_t)(4 * th + i) * 4 * Wq + (k & 3) * Wq + (k >> 2);
                        float *EMBER_RESTRICT dst = D + (6 * i + k) * T + (ptrdiff_t)th * TW;
                        for (tw = 0; tw < TW; ++tw) dst[tw] = src[tw];
                    }
            /* V = B^T d B for EMBER_VL tiles at a time; a ragged last group overlaps the one before. */
            for (t0 = 0; t0 < T; t0 += EMBER_VL) {
                ember_vf d[6], tr[6][6], col[6], o[6];
                float *EMBER_RESTRICT v = V + (ptrdiff_t)c * T;
                t = t0 + EMBER_VL > T ? T - EMBER_VL : t0;
                for (i = 0; i < 6; ++i) {
                    for (k = 0; k < 6; ++k) d[k] = *(const ember_vf *)(D + (6 * i + k) * T + t);
                    ember_wino4_bt(d, tr[i]);
                }
                for (j = 0; j < 6; ++j) {
                    for (i = 0; i < 6; ++i) col[i] = tr[i][j];
                    ember_wino4_bt(col, o);
                    for (i = 0; i < 6; ++i) *(ember_vf *)(v + (6 * i + j) * vs + t) = o[i];
                }
            }
        }
        for (e = 0; e < 36; ++e)
            ember_matmul_core_ap(Z + e * zs, T, U + e * (ptrdiff_t)M * C, C, 1, V + e * vs, T, 0, 0, M, (int)T, C, 1.0f,
                                 0, 0, 0, 0.0f, 0, 0, 0.0f, 0.0f, apack);
        for (m = 0; m < M; ++m) {
            const float b = bias ? bias[m] : 0.0f;
            float *ym = y + ((ptrdiff_t)n * M + m) * yplane;
            const float *rm = res ? res + ((ptrdiff_t)n * M + m) * yplane : 0;
            for (t0 = 0; t0 < T; t0 += EMBER_VL) {
                ember_vf z[6], s[6][4], col[6], o[4];
                t = t0 + EMBER_VL > T ? T - EMBER_VL : t0;
                for (i = 0; i < 6; ++i) { /* A^T on the rows of each tile's Z, then down the columns */
                    for (j = 0; j < 6; ++j) z[j] = *(const ember_vf *)(Z + (6 * i + j) * zs + (ptrdiff_t)m * T + t);
                    ember_wino4_at(z, s[i]);
                }
                for (k = 0; k < 4; ++k) {
                    for (i = 0; i < 6; ++i) col[i] = s[i][k];
                    ember_wino4_at(col, o);
                    for (r = 0; r < 4; ++r) *(ember_vf *)(O + (4 * r + k) * T + t) = o[r] + b;
                }
            }
            for (th = 0; th < TH; ++th)
                for (r = 0; r < 4 && 4 * th + r < OH; ++r) {
                    float *EMBER_RESTRICT yr = ym + (ptrdiff_t)(4 * th + r) * OW;
                    const float *orow = O + 4 * r * T + (ptrdiff_t)th * TW;
                    for (ow = 0; ow < OW; ++ow) yr[ow] = orow[(ow & 3) * T + (ow >> 2)];
                    if (rm)
                        for (ow = 0; ow < OW; ++ow) yr[ow] += rm[(ptrdiff_t)(4 * th + r) * OW + ow];
                }
            ember_act_apply_f32(ym, (ptrdiff_t)OH * OW, act, act_a, act_b);
        }
    }
}
/*@end*/
