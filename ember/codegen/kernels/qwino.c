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
 * scratch (bytes): Vb 64 * C2 * NTp, Zb 256 * NTp, a channel pair's padded rows 8 * (2R + 2) * (TW + 1), the
 * output transform's 64 * NTp and eight output rows 32 * (2 TW + 16), M int32: qwino.py `scratch_bytes`. */

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
    __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(w), "x"(x));
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

/* Zb[e][r][t] = sum over the C2 channel pairs of U[e][r][pair] . Vb[e][pair][t], for e < 16, r < 4, t < nt (the
 * band's tiles rounded up to 8; NTp: the stride of Vb's and Zb's rows, a whole band's). */
EMBER_NOINLINE static void ember_qw_gemm(uint32_t *Zb, const int16_t *U, const int16_t *Vb, int C2, int NTp, int nt) {
    const int Cp = 2 * C2;
    int e, t;
    for (e = 0; e < 16; ++e) {
        const int16_t *u = U + (ptrdiff_t)e * 4 * Cp;
        uint32_t *z = Zb + (ptrdiff_t)e * 4 * NTp;
#if EMBER_HAVE_AVX2
        const int32_t *v = (const int32_t *)(const void *)Vb + (ptrdiff_t)e * C2 * NTp;
        for (t = 0; t + 24 <= nt; t += 24) EMBER_QW_TILE(3);
        if (t + 16 <= nt) {
            EMBER_QW_TILE(2);
            t += 16;
        }
        if (t < nt) EMBER_QW_TILE(1);
#else
        const int16_t *v = Vb + (ptrdiff_t)e * C2 * NTp * 2;
        int r, c;
        for (r = 0; r < 4; ++r)
            for (t = 0; t < nt; ++t) {
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

#if EMBER_GNUC
typedef short ember_qw_h16 __attribute__((vector_size(32), aligned(2), may_alias));
typedef short ember_qw_h8 __attribute__((vector_size(16), aligned(2), may_alias));
#endif
/* B^T d B for the lanes from i of type T (int16_t, or a vector of them): each patch row times B, then B^T down
 * the columns, e = 4 * row + column; rows e0..e3 / o0..o3, into v (es int16 from one e to the next). */
#define EMBER_QW_LD(T, r, k) (*(const T *)(const void *)((r) + (k)))
#define EMBER_QW_ST(T, e, val) (*(T *)(void *)(v + (e) * es + i) = (val))
#define EMBER_QW_BT(T)                                                                                            \
    do {                                                                                                          \
        const T E0 = EMBER_QW_LD(T, e0, i), F0 = EMBER_QW_LD(T, e0, i + 2), O0 = EMBER_QW_LD(T, o0, i),           \
                P0 = EMBER_QW_LD(T, o0, i + 2), E1 = EMBER_QW_LD(T, e1, i), F1 = EMBER_QW_LD(T, e1, i + 2),       \
                O1 = EMBER_QW_LD(T, o1, i), P1 = EMBER_QW_LD(T, o1, i + 2), E2 = EMBER_QW_LD(T, e2, i),           \
                F2 = EMBER_QW_LD(T, e2, i + 2), O2 = EMBER_QW_LD(T, o2, i), P2 = EMBER_QW_LD(T, o2, i + 2),       \
                E3 = EMBER_QW_LD(T, e3, i), F3 = EMBER_QW_LD(T, e3, i + 2), O3 = EMBER_QW_LD(T, o3, i),           \
                P3 = EMBER_QW_LD(T, o3, i + 2);                                                                   \
        const T a0 = E0 - F0, a1 = O0 + F0, a2 = F0 - O0, a3 = O0 - P0, b0 = E1 - F1, b1 = O1 + F1, b2 = F1 - O1, \
                b3 = O1 - P1, c0 = E2 - F2, c1 = O2 + F2, c2_ = F2 - O2, c3 = O2 - P2, d0 = E3 - F3, d1 = O3 + F3, \
                d2 = F3 - O3, d3 = O3 - P3;                                                                       \
        EMBER_QW_ST(T, 0, a0 - c0); EMBER_QW_ST(T, 1, a1 - c1); EMBER_QW_ST(T, 2, a2 - c2_); EMBER_QW_ST(T, 3, a3 - c3); \
        EMBER_QW_ST(T, 4, b0 + c0); EMBER_QW_ST(T, 5, b1 + c1); EMBER_QW_ST(T, 6, b2 + c2_); EMBER_QW_ST(T, 7, b3 + c3); \
        EMBER_QW_ST(T, 8, c0 - b0); EMBER_QW_ST(T, 9, c1 - b1); EMBER_QW_ST(T, 10, c2_ - b2); EMBER_QW_ST(T, 11, c3 - b3); \
        EMBER_QW_ST(T, 12, b0 - d0); EMBER_QW_ST(T, 13, b1 - d1); EMBER_QW_ST(T, 14, b2 - d2); EMBER_QW_ST(T, 15, b3 - d3); \
    } while (0)

/* Vb for the tile rows [th0, th0 + R) (those before t1) of image x, a channel pair at a time: the pair's padded
 * rows as int16 pairs (channel 2c2 + h at 2j + h) split into even and odd columns (E, O: a tile's patch row is
 * E[tw], O[tw], E[tw+1], O[tw+1]), then B^T d B of every tile on the pairs' lanes alike, so the results land in
 * Vb's [t][2] order; vectorized along the tile row. A pad channel (odd C) is zeros (its weights are 0 too). */
EMBER_NOINLINE static void ember_qw_input(int16_t *EMBER_RESTRICT Vb, int16_t *EMBER_RESTRICT rows, const uint8_t *x,
                                          int blk, int x_sgn, int32_t xz, const int32_t *p, int th0, int R, int t1,
                                          int TW, int NTp) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], pt = p[EMBER_GEO_PAD_H],
              pl = p[EMBER_GEO_PAD_W], C2 = (C + 1) / 2, Wh = TW + 1, L = 2 * Wh;
    const int nr = th0 + R <= t1 ? R : t1 - th0; /* tile rows of this band that exist (and are this call's) */
    /* int8 bytes b seen as uint8 b ^ 0x80, whose zero point is xz + 128 */
    const uint8_t flip = x_sgn ? 0x80 : 0;
    const int32_t zq = xz + (x_sgn ? 128 : 0);
    /* the even (odd) padded columns 2j (2j + 1) inside the input: j in [ej0, ej1) ([oj0, oj1)) */
    const int ej0 = (pl + 1) / 2, ej1 = (W + pl + 1) / 2 < Wh ? (W + pl + 1) / 2 : Wh;
    const int oj0 = pl / 2, oj1 = (W + pl) / 2 < Wh ? (W + pl) / 2 : Wh;
    const ptrdiff_t es = (ptrdiff_t)C2 * NTp * 2; /* int16 from one e of Vb to the next */
    int c2, h, r, j, i, tr, e;
    for (c2 = 0; c2 < C2; ++c2) {
        for (r = 0; r < 2 * nr + 2; ++r) {
            int16_t *EMBER_RESTRICT ev = rows + (ptrdiff_t)r * 2 * L, *EMBER_RESTRICT od = ev + L;
            const int ih = 2 * th0 + r - pt;
            for (j = 0; j < 2 * L; ++j) ev[j] = 0;
            if (ih < 0 || ih >= H) continue;
            if (blk) { /* channel-blocked (qgemm.c ember_qblk_off; C % 4 == 0): the pair is half of its quad's word */
                const ptrdiff_t row = (ptrdiff_t)ih * W - pl, bs = 64 * (ptrdiff_t)C;
                const uint8_t *xq = x + (ptrdiff_t)(c2 >> 1) * 256;
                const int sh = 16 * (c2 & 1);
                const uint32_t f2 = flip * 0x0101u;
                for (j = ej0; j < ej1; ++j) {
                    const ptrdiff_t px = row + 2 * j;
                    const uint32_t w = (uint32_t)*(const ember_qi32u *)(const void *)(xq + (px >> 6) * bs + (px & 63) * 4) >> sh ^ f2;
                    ev[2 * j] = (int16_t)((int32_t)(w & 255) - zq);
                    ev[2 * j + 1] = (int16_t)((int32_t)(w >> 8 & 255) - zq);
                }
                for (j = oj0; j < oj1; ++j) {
                    const ptrdiff_t px = row + 2 * j + 1;
                    const uint32_t w = (uint32_t)*(const ember_qi32u *)(const void *)(xq + (px >> 6) * bs + (px & 63) * 4) >> sh ^ f2;
                    od[2 * j] = (int16_t)((int32_t)(w & 255) - zq);
                    od[2 * j + 1] = (int16_t)((int32_t)(w >> 8 & 255) - zq);
                }
                continue;
            }
            for (h = 0; h < 2 && 2 * c2 + h < C; ++h) {
                const int c = 2 * c2 + h;
                {
                    const uint8_t *xr = x + ((ptrdiff_t)c * H + ih) * W;
                    for (j = ej0; j < ej1; ++j) ev[2 * j + h] = (int16_t)((int32_t)(uint8_t)(xr[2 * j - pl] ^ flip) - zq);
                    for (j = oj0; j < oj1; ++j) od[2 * j + h] = (int16_t)((int32_t)(uint8_t)(xr[2 * j + 1 - pl] ^ flip) - zq);
                }
            }
        }
        for (tr = 0; tr < nr; ++tr) {
            const int16_t *e0 = rows + (ptrdiff_t)2 * tr * 2 * L, *e1 = e0 + 2 * L, *e2 = e1 + 2 * L, *e3 = e2 + 2 * L;
            const int16_t *o0 = e0 + L, *o1 = e1 + L, *o2 = e2 + L, *o3 = e3 + L;
            int16_t *EMBER_RESTRICT v = Vb + ((ptrdiff_t)c2 * NTp + (ptrdiff_t)tr * TW) * 2;
            /* lane i: tile i / 2, channel 2c2 + i % 2; "tw + 1" is i + 2. 16 lanes, then 8, then one at a time. */
            i = 0;
#if EMBER_GNUC
            for (; i + 16 <= 2 * TW; i += 16) EMBER_QW_BT(ember_qw_h16);
            for (; i + 8 <= 2 * TW; i += 8) EMBER_QW_BT(ember_qw_h8);
#endif
            for (; i < 2 * TW; ++i) EMBER_QW_BT(int16_t);
        }
        for (e = 0; e < 16; ++e) /* the band's missing tiles and the padding to NTp: zeros */
            for (i = 2 * nr * TW; i < 2 * NTp; ++i) Vb[e * es + (ptrdiff_t)c2 * NTp * 2 + i] = 0;
    }
}

/* A^T Z A / 4 for the lanes from t of type T (uint32_t, or a vector of them) of Zb's row z: Y[q][t], q = 2a + b
 * for output (a, b) of each tile, into Yr. 4y fits int32 (qwino.py): its bits read as int32, then an exact shift. */
#define EMBER_QW_AT(T, TS)                                                                                        \
    do {                                                                                                          \
        T s0[4], s1[4];                                                                                           \
        int j_;                                                                                                   \
        for (j_ = 0; j_ < 4; ++j_) {                                                                              \
            const T z1 = EMBER_QW_LD(T, z, (4 + j_) * zs + t), z2 = EMBER_QW_LD(T, z, (8 + j_) * zs + t);        \
            s0[j_] = EMBER_QW_LD(T, z, j_ * zs + t) + z1 + z2;                                                    \
            s1[j_] = z1 - z2 - EMBER_QW_LD(T, z, (12 + j_) * zs + t);                                             \
        }                                                                                                         \
        *(TS *)(void *)(Yr + t) = (TS)(s0[0] + s0[1] + s0[2]) >> 2;                                                \
        *(TS *)(void *)(Yr + NTp + t) = (TS)(s0[1] - s0[2] - s0[3]) >> 2;                                          \
        *(TS *)(void *)(Yr + 2 * NTp + t) = (TS)(s1[0] + s1[1] + s1[2]) >> 2;                                      \
        *(TS *)(void *)(Yr + 3 * NTp + t) = (TS)(s1[1] - s1[2] - s1[3]) >> 2;                                      \
    } while (0)
#ifdef EMBER_QF8
typedef uint8_t ember_qw_b8 __attribute__((vector_size(8), aligned(1), may_alias)); /* int32 lanes' low bytes */
#endif
#if EMBER_GNUC
typedef uint32_t ember_qw_z8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t ember_qw_y8 __attribute__((vector_size(32), aligned(4), may_alias));
#endif

/* Output rows of channels m0 .. m0+3 (< M) for the band's tiles from Zb, through qgemm.c's stores. Y: 4 rows of
 * 4 * NTp int32 (A^T Z A / 4), then 2 x 4 output rows of RS = 2 TW + 16 int32 (row h of a tile row, channel r). */
EMBER_NOINLINE static void ember_qw_output(const ember_qout *o, const uint32_t *Zb, int m0, int M, int th0, int nr,
                                           int TW, int NTp, int OH, int OW, int32_t *Y) {
    const ptrdiff_t zs = 4 * (ptrdiff_t)NTp, RS = 2 * TW + 16; /* from one e of Zb to the next; a row buffer */
    const int R4 = M - m0 < 4 ? M - m0 : 4;
    int32_t *EMBER_RESTRICT rows = Y + 16 * (ptrdiff_t)NTp;
    int r, tr, tw, j, t, h;
#ifdef EMBER_QF8
    const int fast = o->kind == 1 && !o->blk && o->out[EMBER_QOUT_FLOAT];
#endif
    for (r = 0; r < R4; ++r) {
        const uint32_t *z = Zb + (ptrdiff_t)r * NTp;
        int32_t *EMBER_RESTRICT Yr = Y + 4 * (ptrdiff_t)r * NTp;
#if EMBER_GNUC
        for (t = 0; t < nr * TW; t += 8) EMBER_QW_AT(ember_qw_z8, ember_qw_y8);
#else
        for (t = 0; t < nr * TW; ++t) EMBER_QW_AT(uint32_t, int32_t);
#endif
    }
    for (tr = 0; tr < nr; ++tr) {
        const int oh = 2 * (th0 + tr);
        for (r = 0; r < R4; ++r) {
            const int32_t *q = Y + 4 * (ptrdiff_t)r * NTp + tr * TW;
            int32_t *EMBER_RESTRICT y0 = rows + r * RS, *EMBER_RESTRICT y1 = rows + (4 + r) * RS;
            for (tw = 0; tw < TW; ++tw) {
                y0[2 * tw] = q[tw];
                y0[2 * tw + 1] = q[NTp + tw];
                y1[2 * tw] = q[2 * NTp + tw];
                y1[2 * tw + 1] = q[3 * NTp + tw];
            }
        }
        /* in runs of 16 (ending at blocks of 64 pixels where y is channel-blocked): qgemm.c's vector
         * requantisation (AVX2: ember_qf8) takes those */
        for (h = 0; h < 2 && oh + h < OH; ++h) {
            const ptrdiff_t pix = (ptrdiff_t)(oh + h) * OW;
            const int32_t *yh = rows + 4 * h * RS;
            int n;
            for (j = 0; j < OW; j += n) {
                n = OW - j < 16 ? OW - j : 16;
                if (o->blk && 64 - (pix + j) % 64 < n) n = (int)(64 - (pix + j) % 64);
#if EMBER_QNR >= 16
                if (R4 == 4 && o->blk) { /* a channel quad's words at once (ember_qstore_rows; rows of EMBER_QNR) */
                    int32_t acc[4 * EMBER_QNR];
                    int i;
                    for (r = 0; r < 4; ++r)
                        for (i = 0; i < n; ++i) acc[r * EMBER_QNR + i] = yh[r * RS + j + i];
                    ember_qstore_rows(o, m0, 4, pix + j, 0, acc, n);
                    continue;
                }
#endif
                for (r = 0; r < R4; ++r) {
#ifdef EMBER_QF8
                    if (n == 16 && fast) { /* ember_qstore's float requantisation, the bytes stored as vectors */
                        ember_qf8i q[2];
                        uint8_t *yb = o->y + (ptrdiff_t)(m0 + r) * o->rs + pix + j;
                        ember_qf8_row(q, yh + r * RS + j, 16, o->corr[m0 + r], o->mult[m0 + r], o->shift[m0 + r], o->out);
                        *(ember_qw_b8 *)(void *)yb = __builtin_convertvector(q[0], ember_qw_b8);
                        *(ember_qw_b8 *)(void *)(yb + 8) = __builtin_convertvector(q[1], ember_qw_b8);
                        continue;
                    }
#endif
                    ember_qstore(o, m0 + r, pix + j, 0, yh + r * RS + j, n);
                }
            }
        }
    }
}

/* y (NCHW, M channels: int32 sums if kind 0, else requantised bytes) = the convolution of x (NCHW bytes, int8
 * if x_sgn, zero point xz) by the transformed weights U; bias (or NULL), mult/shift/out as for ember_qconv
 * (qconv.c). R: tile rows per band. lay: bit 0, x is channel-blocked (passes/int8_layout.py); bit 1, y is,
 * its blocks of my channels (M, or more where y points at a thread's part of its channel quads). Only the
 * tile rows [t0, t1) (a thread's part, ops/split.py; bands of R from t0): every tile is computed as the whole
 * call computes it, exactly in integers, whichever band holds it. */
static void ember_qconv_wino(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int M,
                             const int16_t *U, const int32_t *bias, const int32_t *mult, const int32_t *shift,
                             const int32_t *out, int R, int lay, uint8_t *scratch, int my, int t0, int t1) {
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], TW = (OW + 1) / 2,
              C2 = (C + 1) / 2, NTp = (R * TW + 7) & ~7;
    const ptrdiff_t P = (ptrdiff_t)OH * OW, s_in = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    /* bytes per image: channel-blocked ones are whole blocks of pixels */
    const ptrdiff_t x_img = lay & 1 ? (s_in + 63) / 64 * 64 * C : C * s_in, y_img = lay & 2 ? (P + 63) / 64 * 64 * my : M * P;
    int16_t *Vb = (int16_t *)(void *)scratch;
    uint32_t *Zb = (uint32_t *)(void *)(scratch + (ptrdiff_t)64 * C2 * NTp);
    int16_t *rows = (int16_t *)(void *)(Zb + 64 * (ptrdiff_t)NTp);
    int32_t *orow = (int32_t *)(void *)(rows + (ptrdiff_t)(2 * R + 2) * 4 * (TW + 1));
    int32_t *corr = orow + 16 * NTp + 8 * (2 * TW + 16);
    ember_qout o;
    int n, th0, m0;
    ember_qout_init(&o, kind, mult, shift, out);
    for (m0 = 0; m0 < M; ++m0) corr[m0] = bias ? bias[m0] : 0;
    o.blk = lay >> 1 & 1;
    o.rs = o.blk ? 64 * my : P;
    o.ps = o.blk ? 4 : 1;
    o.corr = corr;
    o.wofs = 0;
    o.colsum = corr; /* never read (no weight offsets) */
    o.row = 0;
    for (n = 0; n < N; ++n) {
        o.y = (uint8_t *)y + n * y_img * (kind == 0 ? 4 : 1);
        for (th0 = t0; th0 < t1; th0 += R) {
            const int nr = th0 + R <= t1 ? R : t1 - th0;
            ember_qw_input(Vb, rows, (const uint8_t *)x + n * x_img, lay & 1, x_sgn, xz, p, th0, R, t1, TW, NTp);
            for (m0 = 0; m0 < M; m0 += 4) {
                ember_qw_gemm(Zb, U + (ptrdiff_t)m0 * 16 * 2 * C2, Vb, C2, NTp, (nr * TW + 7) & ~7);
                ember_qw_output(&o, Zb, m0, M, th0, nr, TW, NTp, OH, OW, orow);
            }
        }
    }
}
/*@end*/
