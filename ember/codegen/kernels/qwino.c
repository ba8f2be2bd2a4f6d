/* Integer Winograd F(2x2, 3x3) (QConvWinograd, ops/qwino.py): 3x3, stride-1, undilated, one-group 2-D integer
 * convolutions, exact in integers. Per 2x2 output tile and (in, out) channel pair: 16 int16 products
 * instead of 36 int8 ones.
 *   V[e][c][t] = (B^T d B)[e],  d = the tile's 4x4 input patch minus the zero point (padding: 0), |V| <= 1020
 *   Z[e][m][t] = sum_c U'[e][m][c] V[e][c][t],   U' = (2G) g (2G)^T (compile time, int16, |U'| <= 9 |g|)
 *   4 y        = A^T Z A,  then the exact division by 4, and qgemm.c's ember_qstore (bias, requantisation).
 * The products are VPMADDWD on (channel 2c, 2c+1) int16 pairs (AVX-512 VNNI / AVX-VNNI: VPDPWSSD). The sums
 * and the output transform are computed modulo 2^32 (unsigned), so they may wrap midway: 4 y itself is
 * below 2^31 in magnitude (qwino.py checks that bound at compile time), so its value mod 2^32 is 4 y exactly.
 *
 * Work goes by bands of R tile rows (R from ops/qwino.py): the band's NT = R * TW tiles (NTp: rounded up to
 * 8, the extra tiles 0) are transformed for every channel into Vb[e][c/2][t][c%2] (int16), then for each
 * block of 4 output channels the 16 products go to Zb[e][r][t] (int32) and the output transform writes the
 * block's output rows through ember_qstore. The weights: U[m/4][e][m%4][Cp] int16, Cp = C rounded up to 2.
 * scratch (bytes): Vb 64 * C2 * NTp, Zb 256 * NTp, the transform's 64 * NTp, the padded rows
 * 4 * (2R + 2) * (TW + 1), the output rows 8 * (2 TW + 16), M int32: qwino.py `scratch_bytes`. */

/*@kernel ember_qconv_wino requires ember_qconv ember_conv_geo*/
/* (ember_qconv: qgemm.c's ember_qstore, and the tiles its other functions use, which alone would be unused) */
#if EMBER_HAVE_AVX2
typedef int32_t ember_qw_v __attribute__((vector_size(32)));
typedef uint32_t ember_qw_u __attribute__((vector_size(32)));
typedef int32_t ember_qw_vu __attribute__((vector_size(32), aligned(4), may_alias));
typedef short ember_qw_h __attribute__((vector_size(32)));
/* acc + the pair products of the int16 pairs of w and x (wrapping) */
EMBER_INLINE ember_qw_u ember_qw_dot(ember_qw_u acc, ember_qw_v w, ember_qw_v x) {
#if EMBER_HAVE_AVX512_VNNI && EMBER_HAVE_AVX512_BWVL
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
    return acc;
#elif EMBER_HAVE_AVX_VNNI
    __asm__("{vex} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(w), "x"(x));
    return acc;
#else
    return acc + (ember_qw_u)__builtin_ia32_pmaddwd256((ember_qw_h)w, (ember_qw_h)x);
#endif
}
/* Rows r < 4 of Zb[e] for the tiles [t, t + 8 * NV): C2 channel pairs of U rows (stride Cp int16) and V. */
#define EMBER_QW_TILE(NV)                                                                                    \
    do {                                                                                                     \
        ember_qw_u a[4][NV];                                                                                 \
        int r_, v_, c_;                                                                                      \
        for (r_ = 0; r_ < 4; ++r_)                                                                           \
            for (v_ = 0; v_ < NV; ++v_) a[r_][v_] = (ember_qw_u){0};                                         \
        for (c_ = 0; c_ < C2; ++c_) {                                                                        \
            const int32_t *vx = v + (ptrdiff_t)c_ * NTp + t;                                                 \
            ember_qw_v xv[NV];                                                                               \
            for (v_ = 0; v_ < NV; ++v_) xv[v_] = *(const ember_qw_vu *)(const void *)(vx + 8 * v_);          \
            for (r_ = 0; r_ < 4; ++r_) {                                                                     \
                const ember_qw_v wv = (ember_qw_v){0} + *(const ember_qi32u *)(const void *)(u + r_ * Cp + 2 * c_); \
                for (v_ = 0; v_ < NV; ++v_) a[r_][v_] = ember_qw_dot(a[r_][v_], wv, xv[v_]);                 \
            }                                                                                                \
        }                                                                                                    \
        for (r_ = 0; r_ < 4; ++r_)                                                                           \
            for (v_ = 0; v_ < NV; ++v_) *(ember_qw_vu *)(void *)(z + r_ * NTp + t + 8 * v_) = (ember_qw_v)a[r_][v_]; \
    } while (0)
#endif

/* Zb[e][r][t] = sum over the C2 channel pairs of U[e][r][pair] . Vb[e][pair][t], for e < 16, r < 4, t < NTp. */
static void ember_qw_gemm(uint32_t *Zb, const int16_t *U, const int16_t *Vb, int C2, int NTp) {
    const int Cp = 2 * C2;
    int e, t;
    for (e = 0; e < 16; ++e) {
        const int16_t *u = U + (ptrdiff_t)e * 4 * Cp;
        uint32_t *z = Zb + (ptrdiff_t)e * 4 * NTp;
#if EMBER_HAVE_AVX2
        const int32_t *v = (const int32_t *)(const void *)Vb + (ptrdiff_t)e * C2 * NTp;
        for (t = 0; t + 24 <= NTp; t += 24) EMBER_QW_TILE(3);
        if (t + 16 <= NTp) {
            EMBER_QW_TILE(2);
            t += 16;
        }
        if (t < NTp) EMBER_QW_TILE(1);
#else
        const int16_t *v = Vb + (ptrdiff_t)e * C2 * NTp * 2;
        int r, c;
        for (r = 0; r < 4; ++r)
            for (t = 0; t < NTp; ++t) {
                uint32_t s = 0;
                for (c = 0; c < C2; ++c) {
                    const int16_t *x2 = v + ((ptrdiff_t)c * NTp + t) * 2, *w2 = u + r * Cp + 2 * c;
                    s += (uint32_t)(w2[0] * x2[0]) + (uint32_t)(w2[1] * x2[1]);
                }
                z[(ptrdiff_t)r * NTp + t] = s;
            }
#endif
    }
}

/* Vb for the tile rows [th0, th0 + R) of image x: each channel's padded rows split into even and odd columns
 * (E, O: a tile's patch row is E[tw], O[tw], E[tw+1], O[tw+1]), then B^T d B of every tile, vectorized along
 * the tile row; channel pairs interleaved last. */
static void ember_qw_input(int16_t *Vb, int16_t *tmp, int16_t *rows, const uint8_t *x, int x_sgn, int32_t xz,
                           const int32_t *p, int th0, int R, int TW, int NTp) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], pt = p[EMBER_GEO_PAD_H],
              pl = p[EMBER_GEO_PAD_W], TH = (p[EMBER_GEO_OUT_H] + 1) / 2, C2 = (C + 1) / 2, Wh = TW + 1;
    const int nr = th0 + R <= TH ? R : TH - th0; /* tile rows of this band that exist */
    int c2, h, r, j, tr, tw, e, t;
    for (c2 = 0; c2 < C2; ++c2) {
        for (h = 0; h < 2; ++h) {
            int16_t *tc = tmp + (ptrdiff_t)h * 16 * NTp;
            const int c = 2 * c2 + h;
            if (c >= C) { /* the pad channel of an odd C: zeros (its weights are 0 too) */
                for (t = 0; t < 16 * NTp; ++t) tc[t] = 0;
                continue;
            }
            for (r = 0; r < 2 * nr + 2; ++r) {
                int16_t *EMBER_RESTRICT ev = rows + (ptrdiff_t)r * 2 * Wh, *EMBER_RESTRICT od = ev + Wh;
                const int ih = 2 * th0 + r - pt;
                for (j = 0; j < Wh; ++j) ev[j] = od[j] = 0;
                if (ih < 0 || ih >= H) continue;
                {
                    const uint8_t *xr = x + ((ptrdiff_t)c * H + ih) * W;
                    for (j = 0; j < W; ++j) {
                        const int q = j + pl; /* padded column */
                        const int16_t d = (int16_t)((x_sgn ? (int32_t)(int8_t)xr[j] : (int32_t)xr[j]) - xz);
                        if (q < 2 * Wh) (q & 1 ? od : ev)[q >> 1] = d;
                    }
                }
            }
            for (tr = 0; tr < nr; ++tr) {
                const int16_t *e0 = rows + (ptrdiff_t)2 * tr * 2 * Wh, *e1 = e0 + 2 * Wh, *e2 = e1 + 2 * Wh,
                              *e3 = e2 + 2 * Wh;
                const int16_t *o0 = e0 + Wh, *o1 = e1 + Wh, *o2 = e2 + Wh, *o3 = e3 + Wh;
                int16_t *EMBER_RESTRICT v = tc + (ptrdiff_t)tr * TW;
                for (tw = 0; tw < TW; ++tw) {
                    /* each patch row times B, then B^T down the columns: e = 4 * row + column */
                    const int16_t a0 = e0[tw] - e0[tw + 1], a1 = o0[tw] + e0[tw + 1], a2 = e0[tw + 1] - o0[tw], a3 = o0[tw] - o0[tw + 1];
                    const int16_t b0 = e1[tw] - e1[tw + 1], b1 = o1[tw] + e1[tw + 1], b2 = e1[tw + 1] - o1[tw], b3 = o1[tw] - o1[tw + 1];
                    const int16_t c0 = e2[tw] - e2[tw + 1], c1 = o2[tw] + e2[tw + 1], c2_ = e2[tw + 1] - o2[tw], c3 = o2[tw] - o2[tw + 1];
                    const int16_t d0 = e3[tw] - e3[tw + 1], d1 = o3[tw] + e3[tw + 1], d2 = e3[tw + 1] - o3[tw], d3 = o3[tw] - o3[tw + 1];
                    v[0 * NTp + tw] = a0 - c0;  v[1 * NTp + tw] = a1 - c1;  v[2 * NTp + tw] = a2 - c2_;  v[3 * NTp + tw] = a3 - c3;
                    v[4 * NTp + tw] = b0 + c0;  v[5 * NTp + tw] = b1 + c1;  v[6 * NTp + tw] = b2 + c2_;  v[7 * NTp + tw] = b3 + c3;
                    v[8 * NTp + tw] = c0 - b0;  v[9 * NTp + tw] = c1 - b1;  v[10 * NTp + tw] = c2_ - b2; v[11 * NTp + tw] = c3 - b3;
                    v[12 * NTp + tw] = b0 - d0; v[13 * NTp + tw] = b1 - d1; v[14 * NTp + tw] = b2 - d2;  v[15 * NTp + tw] = b3 - d3;
                }
            }
            for (e = 0; e < 16; ++e)
                for (t = nr * TW; t < NTp; ++t) tc[(ptrdiff_t)e * NTp + t] = 0;
        }
        for (e = 0; e < 16; ++e) {
            int16_t *EMBER_RESTRICT vd = Vb + (((ptrdiff_t)e * C2 + c2) * NTp) * 2;
            const int16_t *t0 = tmp + (ptrdiff_t)e * NTp, *t1 = t0 + 16 * NTp;
            for (t = 0; t < NTp; ++t) {
                vd[2 * t] = t0[t];
                vd[2 * t + 1] = t1[t];
            }
        }
    }
}

/* Output rows of channels m0 .. m0+3 (< M) for the band's tiles from Zb: A^T Z A / 4, through ember_qstore. */
static void ember_qw_output(const ember_qout *o, const uint32_t *Zb, int m0, int M, int th0, int nr, int TW, int NTp,
                            int OH, int OW, int32_t *orow) {
    int r, tr, tw, j;
    for (r = 0; r < 4 && m0 + r < M; ++r)
        for (tr = 0; tr < nr; ++tr) {
            const uint32_t *z = Zb + (ptrdiff_t)r * NTp + tr * TW;
            const ptrdiff_t zs = 4 * (ptrdiff_t)NTp; /* from one e to the next */
            int32_t *EMBER_RESTRICT y0 = orow, *EMBER_RESTRICT y1 = orow + 2 * TW + 16;
            const int oh = 2 * (th0 + tr);
            for (tw = 0; tw < TW; ++tw) {
                uint32_t s0[4], s1[4];
                for (j = 0; j < 4; ++j) {
                    s0[j] = z[j * zs + tw] + z[(4 + j) * zs + tw] + z[(8 + j) * zs + tw];
                    s1[j] = z[(4 + j) * zs + tw] - z[(8 + j) * zs + tw] - z[(12 + j) * zs + tw];
                }
                /* 4y fits int32 (qwino.py): its bits as int32, then an exact arithmetic shift */
                y0[2 * tw] = (int32_t)(s0[0] + s0[1] + s0[2]) >> 2;
                y0[2 * tw + 1] = (int32_t)(s0[1] - s0[2] - s0[3]) >> 2;
                y1[2 * tw] = (int32_t)(s1[0] + s1[1] + s1[2]) >> 2;
                y1[2 * tw + 1] = (int32_t)(s1[1] - s1[2] - s1[3]) >> 2;
            }
            /* in runs of 16: ember_qstore's vector requantisation (AVX2: qgemm.c ember_qf8) takes those */
            for (j = 0; j < OW; j += 16) {
                const int n = OW - j < 16 ? OW - j : 16;
                ember_qstore(o, m0 + r, (ptrdiff_t)oh * OW + j, 0, y0 + j, n);
                if (oh + 1 < OH) ember_qstore(o, m0 + r, (ptrdiff_t)(oh + 1) * OW + j, 0, y1 + j, n);
            }
        }
}

/* y (NCHW, M channels: int32 sums if kind 0, else requantised bytes) = the convolution of x (NCHW bytes, int8
 * if x_sgn, zero point xz) by the transformed weights U; bias (or NULL), mult/shift/out as for ember_qconv
 * (qconv.c). R: tile rows per band. */
static void ember_qconv_wino(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int M,
                             const int16_t *U, const int32_t *bias, const int32_t *mult, const int32_t *shift,
                             const int32_t *out, int R, uint8_t *scratch) {
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], TH = (OH + 1) / 2, TW = (OW + 1) / 2,
              C2 = (C + 1) / 2, NTp = (R * TW + 7) & ~7;
    const ptrdiff_t P = (ptrdiff_t)OH * OW, s_in = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    int16_t *Vb = (int16_t *)(void *)scratch;
    uint32_t *Zb = (uint32_t *)(void *)(scratch + (ptrdiff_t)64 * C2 * NTp);
    int16_t *tmp = (int16_t *)(void *)(Zb + 64 * (ptrdiff_t)NTp);
    int16_t *rows = tmp + 32 * (ptrdiff_t)NTp;
    int32_t *orow = (int32_t *)(void *)(rows + (((ptrdiff_t)(2 * R + 2) * 2 * (TW + 1) + 1) & ~1));
    int32_t *corr = orow + 2 * (2 * TW + 16);
    ember_qout o;
    int n, th0, m0;
    ember_qout_init(&o, kind, mult, shift, out);
    for (m0 = 0; m0 < M; ++m0) corr[m0] = bias ? bias[m0] : 0;
    o.rs = P;
    o.ps = 1;
    o.corr = corr;
    o.wofs = 0;
    o.colsum = corr; /* never read (no weight offsets) */
    o.row = 0;
    for (n = 0; n < N; ++n) {
        o.y = (uint8_t *)y + (ptrdiff_t)n * M * P * (kind == 0 ? 4 : 1);
        for (th0 = 0; th0 < TH; th0 += R) {
            const int nr = th0 + R <= TH ? R : TH - th0;
            ember_qw_input(Vb, tmp, rows, (const uint8_t *)x + (ptrdiff_t)n * C * s_in, x_sgn, xz, p, th0, R, TW, NTp);
            for (m0 = 0; m0 < M; m0 += 4) {
                ember_qw_gemm(Zb, U + (ptrdiff_t)m0 * 16 * 2 * C2, Vb, C2, NTp);
                ember_qw_output(&o, Zb, m0, M, th0, nr, TW, NTp, OH, OW, orow);
            }
        }
    }
}
/*@end*/
