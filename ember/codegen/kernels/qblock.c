/* Block-level drivers of the int8 product (qgemm.c's tiles): all output rows for one packed block of
 * pixels, matrix-vector products for one pixel, and the per-row and per-pixel corrections of the zero
 * points (qgemm.c explains the algebra). */

/*@kernel ember_qblock requires ember_qgemm ember_qamx*/
/* Rows m0 .. m1-1 of the product (W: all rows) for one pixel whose Kp view bytes are contiguous at x (a
 * matrix-vector product, so vectorized along K instead of across pixels): sums -> ember_qstore as pixel
 * `pix` (j0 in the block). */
#if EMBER_GNUC
__attribute__((noinline)) /* kept out of ember_qgemm_block, whose inlined tile then keeps its registers */
#endif
static void ember_qgemv_rows(const ember_qout *o, const int8_t *W, int m0, int m1, int Kp, const uint8_t *x,
                             ptrdiff_t pix, int j0, int quads) {
    int m = m0, k;
    (void)quads;
#if EMBER_Q_PATH == 1 || EMBER_Q_PATH == 3
    for (; quads && m + 4 <= m1; m += 4) { /* four rows (weights in cache) share each load of x */
        const int8_t *w = W + (ptrdiff_t)m * Kp;
        ember_qv acc[4] = {{0}, {0}, {0}, {0}};
        int32_t sum[4] = {0, 0, 0, 0};
        int r;
        for (k = 0; k + 4 * EMBER_QVL <= Kp; k += 4 * EMBER_QVL) {
            const ember_qv xv = *(const ember_qv *)(const void *)(x + k);
            for (r = 0; r < 4; ++r)
                acc[r] = ember_qdot(acc[r], xv, *(const ember_qv *)(const void *)(w + (ptrdiff_t)r * Kp + k));
        }
        for (r = 0; r < 4; ++r) {
            int l, kk;
            for (l = 0; l < EMBER_QVL; ++l) sum[r] += acc[r][l];
            for (kk = k; kk < Kp; ++kk) sum[r] += w[(ptrdiff_t)r * Kp + kk] * ((const ember_qx *)x)[kk];
            ember_qstore(o, m + r, pix, j0, &sum[r], 1);
        }
    }
#elif EMBER_Q_PATH == 2 && EMBER_QVL == 4
#ifdef EMBER_QRQ2
    {
        ember_qrq_out rg;
        if (m1 - m >= 8 && ember_qgemv8_ok(o, &rg)) /* eight rows at a time, requantised in registers */
            for (; m + 8 <= m1; m += 8) ember_qgemv8_rq(o, m, W, Kp, x, pix, &rg);
    }
#endif
    for (; quads && m + 4 <= m1; m += 4) { /* AVX2: four rows share each widened 16 bytes of x */
        const int8_t *w = W + (ptrdiff_t)m * Kp;
        ember_qv acc[4] = {{0}, {0}, {0}, {0}};
        int r;
        for (k = 0; k + 16 <= Kp; k += 16) {
            const ember_qhx xv = EMBER_QWIDEN(*(const ember_qvx *)(const void *)(x + k));
            for (r = 0; r < 4; ++r) {
                const ember_qvx wv = *(const ember_qvx *)(const void *)(w + (ptrdiff_t)r * Kp + k);
                acc[r] += (ember_qv)EMBER_QPMADDWD(xv, EMBER_QWIDEN(wv));
            }
        }
        for (r = 0; r < 4; ++r) {
            int32_t sum = 0;
            int l, kk;
            for (l = 0; l < 8; ++l) sum += acc[r][l];
            for (kk = k; kk < Kp; ++kk) sum += w[(ptrdiff_t)r * Kp + kk] * ((const ember_qx *)x)[kk];
            ember_qstore(o, m + r, pix, j0, &sum, 1);
        }
    }
#endif
    for (; m < m1; ++m) {
        const int8_t *w = W + (ptrdiff_t)m * Kp;
        int32_t sum = 0;
        k = 0;
#if EMBER_Q_PATH == 1 || EMBER_Q_PATH == 3
        {
            ember_qv acc = (ember_qv){0};
            int l;
            for (; k + 4 * EMBER_QVL <= Kp; k += 4 * EMBER_QVL)
                acc = ember_qdot(acc, *(const ember_qv *)(const void *)(x + k),
                                 *(const ember_qv *)(const void *)(w + k));
            for (l = 0; l < EMBER_QVL; ++l) sum += acc[l];
        }
#elif EMBER_Q_PATH == 2 && EMBER_QVL == 4
        { /* AVX2: 16 bytes of x and w widened to int16, VPMADDWD pair sums (a FULLY_CONNECTED's whole time) */
            ember_qv acc = (ember_qv){0};
            int l;
            for (; k + 16 <= Kp; k += 16)
                acc += (ember_qv)EMBER_QPMADDWD(EMBER_QWIDEN(*(const ember_qvx *)(const void *)(x + k)),
                                                EMBER_QWIDEN(*(const ember_qvx *)(const void *)(w + k)));
            for (l = 0; l < 8; ++l) sum += acc[l];
        }
#endif
        for (; k < Kp; ++k) sum += w[k] * ((const ember_qx *)x)[k];
        ember_qstore(o, m, pix, j0, &sum, 1);
    }
}
EMBER_INLINE void ember_qgemv(const ember_qout *o, const int8_t *W, int M, int Kp, const uint8_t *x, ptrdiff_t pix, int j0) {
    ember_qgemv_rows(o, W, 0, M, Kp, x, pix, j0, 0);
}

#define EMBER_QTAIL 8 /* most pixels of a block that ember_qgemm_block leaves to matrix-vector products */
/* Rows of Kp bytes at o->row that a convolution's scratch holds: the tail pixels where there are any (AVX-512
 * VNNI and AVX2, ember_qgemv_tail), else the one pixel of ember_qconv's P <= 2 path (ops/qlinear.py sizes
 * the same on microcontrollers and EMBER_QTAIL rows elsewhere). */
#if (EMBER_Q_PATH == 1 && EMBER_QVL == 16) || (EMBER_Q_PATH == 2 && EMBER_QVL == 4)
#define EMBER_QTAIL_ROWS EMBER_QTAIL
#else
#define EMBER_QTAIL_ROWS 1
#endif
/* How many of the last pixels of a block of pb go to matrix-vector products (their bytes in o->row,
 * EMBER_QTAIL rows of Kp) instead of a vector of mostly idle lanes: where that takes less time, counting
 * a lane vector Kp/4 dot products a row and a pixel Kp/64 plus about 40 for its sum and store (measured:
 * the lane vector wins below about 256 K values for one pixel, 1024 for four). */
static int ember_qgemv_tail(const ember_qout *o, int Kp, int pb) {
#if EMBER_Q_PATH == 1 && EMBER_QVL == 16
    const int rest = pb % EMBER_QVL;
    return o->row && rest && rest <= EMBER_QTAIL && rest * (Kp / 64 + 40) < Kp / 4 ? rest : 0;
#elif EMBER_Q_PATH == 2 && EMBER_QVL == 4
    /* AVX2: the pixels past whole vectors of 8 (a 7x7 map's 49th), where their matrix-vector products
     * (about Kp/5 + 60 operations a row and pixel: K/16 widened VPMADDWDs shared by four rows, the sum and
     * its requantisation) cost less than the 8-lane tile that would compute them (about 1.1 Kp a row) */
    const int rest = pb % 8;
    return o->row && rest && rest * (Kp / 5 + 60) * 10 < 11 * Kp ? rest : 0;
#else
    (void)o;
    (void)Kp;
    (void)pb;
    return 0;
#endif
}

/* ember_qgemm_block for a block of pixels that full tiles do not cover: tiles of as many vectors as
 * are left, the last few pixels as matrix-vector products where they cost less (ember_qgemv_tail). */
#if EMBER_GNUC
__attribute__((noinline)) /* its own registers: inlined, the full tiles' loop of ember_qgemm_block spills */
#endif
static void ember_qgemm_part(const ember_qout *o, const int8_t *W, int M, int Kp, const uint8_t *X,
                              ptrdiff_t pix, int pb) {
    int32_t acc[EMBER_QMR * EMBER_QNR];
    const int tail = ember_qgemv_tail(o, Kp, pb), pt = pb - tail;
    int m0, j0, j, g;
    for (j = 0; j < tail; ++j) /* the tail pixels' words as rows of bytes */
        for (g = 0; g < Kp / 4; ++g)
            *(ember_qi32u *)(void *)(o->row + (ptrdiff_t)j * Kp + 4 * g) =
                *(const ember_qi32u *)(const void *)(EMBER_QXG(X, g) + 4 * (pt + j));
#if defined(EMBER_QRQ) || defined(EMBER_QRQ2)
    ember_qrq_out range;
    if (ember_qrq_setup(o, &range, M)) { /* requantised in registers */
#ifdef EMBER_QRQ2
        /* AVX2: the tail pixels' rows eight at a time (ember_qgemv8_rq), after the tiles, instead of four rows
         * after each quad's tiles with a scalar requantisation each */
        const int late = tail && M >= 8 && ember_qgemv8_ok(o, &range);
#else
        const int late = 0;
#endif
        for (m0 = 0; m0 < M;) {
            const int R = M - m0 >= EMBER_QMR ? EMBER_QMR : 1;
            const int8_t *w = W + (ptrdiff_t)m0 * Kp;
            for (j0 = 0; j0 < pt;) {
                const int nv = (pt - j0 + EMBER_QVL - 1) / EMBER_QVL, width = nv >= EMBER_QNV ? EMBER_QNR : EMBER_QVL;
                const int n = pt - j0 < width ? pt - j0 : width;
                const uint8_t *x = X + j0 * 4;
                if (R > 1) {
                    if (nv >= EMBER_QNV) ember_qtile_full_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    else if (nv == 3) ember_qtile_v3_rq(o, m0, w, Kp, x, pix + j0, pt - j0, &range);
                    else if (nv == 2) ember_qtile_v2_rq(o, m0, w, Kp, x, pix + j0, pt - j0, &range);
                    else ember_qtile_narrow_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    j0 += nv >= EMBER_QNV ? width : nv * EMBER_QVL;
                } else {
                    if (nv >= EMBER_QNV) ember_qtile_row_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    else ember_qtile_row_narrow_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    j0 += width;
                }
            }
            for (j = 0; j < tail && !late; ++j) /* while the rows' weights are in cache */
                ember_qgemv_rows(o, W, m0, m0 + R, Kp, o->row + (ptrdiff_t)j * Kp, pix + pt + j, pt + j, 1);
            m0 += R;
        }
        for (j = 0; j < tail && late; ++j)
            ember_qgemv_rows(o, W, 0, M, Kp, o->row + (ptrdiff_t)j * Kp, pix + pt + j, pt + j, 1);
        return;
    }
#endif
    for (m0 = 0; m0 < M;) {
        const int R = M - m0 >= EMBER_QMR ? EMBER_QMR : 1;
        const int8_t *w = W + (ptrdiff_t)m0 * Kp;
        for (j0 = 0; j0 < pt;) {
            /* A full tile unless fewer pixels are left than it has (it would compute mostly waste). */
            const int full = pt - j0 > (EMBER_QNV - 1) * EMBER_QVL;
            int width = full ? EMBER_QNR : EMBER_QVL;
            const uint8_t *x = X + j0 * 4;
            if (R > 1) {
                if (full) ember_qtile_full(acc, w, Kp, x);
#ifdef EMBER_QTILE23
                else if (pt - j0 > 2 * EMBER_QVL) ember_qtile_v3(acc, w, Kp, x), width = 3 * EMBER_QVL;
                else if (pt - j0 > EMBER_QVL) ember_qtile_v2(acc, w, Kp, x), width = 2 * EMBER_QVL;
#endif
                else ember_qtile_narrow(acc, w, Kp, x);
            } else {
                if (full) ember_qtile_row(acc, w, Kp, x);
                else ember_qtile_row_narrow(acc, w, Kp, x);
            }
            ember_qstore_rows(o, m0, R, pix + j0, j0, acc, pt - j0 < width ? pt - j0 : width);
            j0 += width;
        }
        for (j = 0; j < tail; ++j)
            ember_qgemv_rows(o, W, m0, m0 + R, Kp, o->row + (ptrdiff_t)j * Kp, pix + pt + j, pt + j, 1);
        m0 += R;
    }
}

/* All M output rows for the pb (<= EMBER_QPB) pixels of a packed block starting at pixel `pix`. */
static void ember_qgemm_block(const ember_qout *o, const int8_t *W, int M, int Kp, const uint8_t *X,
                              ptrdiff_t pix, int pb) {
    int32_t acc[EMBER_QMR * EMBER_QNR];
    int m0, j0;
#if EMBER_QAMX
    if (o->amx) {
        ember_qamx_block(o, W, M, Kp, X, pix, pb);
        return;
    }
#endif
    if (pb % EMBER_QNR) {
        ember_qgemm_part(o, W, M, Kp, X, pix, pb);
        return;
    }
#if defined(EMBER_QRQ) || defined(EMBER_QRQ2)
    ember_qrq_out range;
    if (ember_qrq_setup(o, &range, M)) { /* requantised in registers */
        for (m0 = 0; m0 < M;) {
            const int R = M - m0 >= EMBER_QMR ? EMBER_QMR : 1;
            const int8_t *w = W + (ptrdiff_t)m0 * Kp;
            for (j0 = 0; j0 < pb;) {
                const int full = pb - j0 > (EMBER_QNV - 1) * EMBER_QVL, width = full ? EMBER_QNR : EMBER_QVL;
                const int n = pb - j0 < width ? pb - j0 : width;
                const uint8_t *x = X + j0 * 4;
                if (R > 1) {
                    if (full) ember_qtile_full_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    else ember_qtile_narrow_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                } else {
                    if (full) ember_qtile_row_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                    else ember_qtile_row_narrow_rq(o, m0, w, Kp, x, pix + j0, n, &range);
                }
                j0 += width;
            }
            m0 += R;
        }
        return;
    }
#endif
    for (m0 = 0; m0 < M;) {
        const int R = M - m0 >= EMBER_QMR ? EMBER_QMR : 1;
        const int8_t *w = W + (ptrdiff_t)m0 * Kp;
        for (j0 = 0; j0 < pb;) {
            /* A full tile unless fewer pixels are left than it has (it would compute mostly waste). */
            const int full = pb - j0 > (EMBER_QNV - 1) * EMBER_QVL, width = full ? EMBER_QNR : EMBER_QVL;
            const int n = pb - j0 < width ? pb - j0 : width;
            const uint8_t *x = X + j0 * 4;
            if (R > 1) {
                if (full) ember_qtile_full(acc, w, Kp, x);
                else ember_qtile_narrow(acc, w, Kp, x);
            } else {
                if (full) ember_qtile_row(acc, w, Kp, x);
                else ember_qtile_row_narrow(acc, w, Kp, x);
            }
            ember_qstore_rows(o, m0, R, pix + j0, j0, acc, n);
            j0 += width;
        }
        m0 += R;
    }
}

/* The view of activations of signedness x_sgn: *flip to apply to their bytes; returns their zero point. */
static int32_t ember_qview(int x_sgn, int32_t xz, uint8_t *flip) {
    const int view_sgn = !EMBER_Q_UVIEW;
    *flip = x_sgn != view_sgn ? 0x80 : 0;
    return *flip ? (view_sgn ? xz - 128 : xz + 128) : xz;
}

/* Per-row constant part of the sums; each block pixel's activation sum (needed when wofs). */
static void ember_qcorr(int32_t *corr, int M, int K, int32_t zv, const int32_t *bias, const int32_t *rowsum,
                        const int32_t *wofs) {
    int m;
    for (m = 0; m < M; ++m) corr[m] = (bias ? bias[m] : 0) - zv * rowsum[m] - (wofs ? wofs[m] * K * zv : 0);
}
EMBER_INLINE void ember_qcolsum(int32_t *colsum, const uint8_t *X, int Kp, int pb) {
    int j, g;
    for (j = 0; j < pb; ++j) colsum[j] = 0;
    for (g = 0; g < Kp / 4; ++g) {
        const ember_qx *xg = (const ember_qx *)EMBER_QXG(X, g);
        for (j = 0; j < pb; ++j) colsum[j] += xg[4 * j] + xg[4 * j + 1] + xg[4 * j + 2] + xg[4 * j + 3];
    }
}
#define EMBER_QSCRATCH_X(Kp) ((ptrdiff_t)(Kp) * EMBER_QPB)
/*@end*/
