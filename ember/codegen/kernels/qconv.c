/* Integer convolution (im2col into the packed layout of qgemm.c by qpack.c, then the int8 product) and
 * integer matrix product. Depthwise convolution is in qdwconv.c. */

/*@kernel ember_qconv requires ember_qgemm ember_qblock ember_window_bounds ember_qpack ember_qpack_pixels ember_conv_geo*/
/* Integer convolution, groups G, NC(D)HW, on packed weights W (M x Kp; group g's rows from g*M/G). x: int8 (x_sgn)
 * or uint8 bytes with zero point xz. Per-row tables (offset by group): bias (or NULL), rowsum, wofs (or NULL),
 * mult/shift (kind 1); out = [zp, lo, hi, the sums are below 2^24 (qvec.c), then qgemm.c's float requantisation
 * holds, after a clamp to +-out[5] if out[5] (qlinear.py float_limit), no weight is -128 (-1: scan W)]. cl: the
 * weights' K order is (kd, kh, kw, c) (Cg % 4 == 0), else (c, kd, kh, kw). scratch: Kp * EMBER_QPB bytes, EMBER_QPB
 * + M int32, EMBER_QTAIL_ROWS * Kp bytes (qblock.c's tail pixels), then (from a 64-byte boundary) ember_qpack_rows'
 * words for a 2-D convolution (channels in fours: ember_qpack_rows; others: ember_qpack_rows1). lay: bit 0, x is
 * channel-blocked (qgemm.c ember_qblk_at; one group, channels in fours, 2-D); bit 1, y is (requantised, M % 4 == 0);
 * bit 2, x is stored channels-last (ops/shape.py NhwcView; one group, 2-D: packed by rows, ember_qpack_rows and
 * ember_qpack_rows1, or a direct 1x1's pixels, ember_qpack_pixels); bit 3, y is stored channels-last (an NhwcView of
 * a QConv's output: sums stored at the pixel stride M, none fused, y not blocked). p0, p1: the output pixels
 * [p0, p1) of each image are computed (0, P: all; a thread's part, ops/split.py: p0 on a whole block of EMBER_QPB
 * pixels), each block exactly as the whole call computes it, so the bytes do not depend on the split. my: the channels of a channel-blocked y's blocks (M, or more where y points at a
 * thread's part of its channels: the block stride stays 64 * my bytes). */
/* A residual add fused into the requantisation (ember_qconv_add): the outputs of each block of pixels go to
 * `stage` (M rows of EMBER_QPB bytes), then `fin` writes y[m * ys + j] = QAdd(stage[m][j], r[m * ys + j])
 * for j < n, element by element, so y may be r. */
typedef void (*ember_qconv_fin)(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n,
                                int sgn, const int32_t *radd);
EMBER_INLINE void ember_qconv_t(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int G,
                                int M, int cl, const int8_t *W, const int32_t *bias, const int32_t *rowsum,
                                const int32_t *wofs, const int32_t *mult, const int32_t *shift, const int32_t *out,
                                int lay, uint8_t *scratch, ember_qconv_fin fin, const uint8_t *res,
                                const int32_t *radd, uint8_t *stage, ptrdiff_t p0, ptrdiff_t p1, int my) {
    const int C = p[EMBER_GEO_C], Cg = C / G, Mg = M / G,
              K = Cg * p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + 3) & ~3;
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W],
                    P = (ptrdiff_t)p[EMBER_GEO_OUT_D] * p[EMBER_GEO_OUT_H] * p[EMBER_GEO_OUT_W],
                    pend = p1 < P ? p1 : P;
    /* bytes per image: channel-blocked ones are whole blocks of pixels */
    const ptrdiff_t x_img = lay & 1 ? (s_in + 63) / 64 * 64 * C : C * s_in, y_img = lay & 2 ? (P + 63) / 64 * 64 * my : M * P;
    uint8_t *X = scratch;
    const uint8_t *Xb;
    int32_t *colsum = (int32_t *)(void *)(scratch + EMBER_QSCRATCH_X(Kp)), *corr = colsum + EMBER_QPB;
    uint8_t flip;
    const int32_t zv = ember_qview(x_sgn, xz, &flip);
    /* 1x1, stride 1, no padding, same size: the input channels are the im2col rows */
    const int direct = p[EMBER_GEO_K_D] * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W] == 1 && p[EMBER_GEO_STRIDE_D] == 1 &&
                       p[EMBER_GEO_STRIDE_H] == 1 && p[EMBER_GEO_STRIDE_W] == 1 && p[EMBER_GEO_PAD_D] == 0 &&
                       p[EMBER_GEO_PAD_H] == 0 && p[EMBER_GEO_PAD_W] == 0 && p[EMBER_GEO_IN_D] == p[EMBER_GEO_OUT_D] &&
                       p[EMBER_GEO_IN_H] == p[EMBER_GEO_OUT_H] && p[EMBER_GEO_IN_W] == p[EMBER_GEO_OUT_W];
    /* by rows of words (qpack.c): 2-D, channels in fours (a 1x1's K order is the same either way) */
    const int rows =
        Cg % 4 == 0 && !direct && p[EMBER_GEO_IN_D] == 1 && p[EMBER_GEO_K_D] == 1 && p[EMBER_GEO_OUT_D] == 1;
    uint32_t *wr = (uint32_t *)(void *)(scratch + ((EMBER_QSCRATCH_X(Kp) + 4 * EMBER_QPB + 4 * M + EMBER_QTAIL_ROWS * Kp + 63) & ~63));
    int kwb[32];
    ember_qout o;
    int n, g, kw;
    ptrdiff_t pix;
    for (kw = 0; kw < p[EMBER_GEO_K_W] && kw < 16; ++kw)
        ember_window_bounds(p[EMBER_GEO_IN_W], p[EMBER_GEO_OUT_W], p[EMBER_GEO_STRIDE_W],
                            kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W], &kwb[2 * kw], &kwb[2 * kw + 1]);
    ember_qout_init(&o, kind, mult, shift, out);
#ifdef EMBER_QRQ2
    o.w127 = ember_qw127(out, W, (ptrdiff_t)M * Kp);
#endif
    o.blk = lay >> 1 & 1;
    o.rs = o.blk ? 64 * my : res ? EMBER_QPB : lay & 8 ? 1 : P;
    o.ps = o.blk ? 4 : lay & 8 ? M : 1;
    o.corr = corr;
    o.colsum = colsum;
    o.row = (uint8_t *)(corr + M);
#if EMBER_QAMX
    o.amx = P > 2 && ember_qamx_ok(Mg, Kp);
#endif
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const ptrdiff_t m0 = (ptrdiff_t)g * Mg;
            const uint8_t *xg = (const uint8_t *)x + n * x_img + (ptrdiff_t)g * Cg * s_in;
            ember_qcorr(corr, Mg, K, zv, bias ? bias + m0 : bias, rowsum + m0, wofs ? wofs + m0 : wofs);
            uint8_t *const yg = (uint8_t *)y + (n * y_img + m0 * (lay & 8 ? 1 : P)) * (kind == 0 ? 4 : 1);
            const uint8_t *const rg = res ? res + n * y_img + m0 * P : 0;
            o.y = res ? stage : yg;
            o.wofs = wofs ? wofs + m0 : wofs;
            o.mult = mult ? mult + m0 : mult;
            o.shift = shift ? shift + m0 : shift;
            for (pix = p0; pix < pend; pix += EMBER_QPB) {
                const int pb = pend - pix < EMBER_QPB ? (int)(pend - pix) : EMBER_QPB;
                const ptrdiff_t at = res ? 0 : pix; /* the block's first output pixel in o.y */
                Xb = X;
                if (lay & 1 && direct) { /* the input's block is the packed block */
                    if (flip) ember_qwords((uint32_t *)(void *)X, (const uint32_t *)(const void *)(xg + pix * C),
                                           Kp * EMBER_QPB / 4, flip * 0x01010101u);
                    else Xb = xg + pix * C;
                } else if (lay & 4 && direct) /* a channels-last 1x1's pixels are the product's rows */
                    ember_qpack_pixels(X, xg + pix * C, C, K, pb, flip);
                else if (lay & 1)
                    ember_qpack_gather(X, xg, C, p, pix, pb, flip * 0x01010101u, (uint32_t)(uint8_t)(xz ^ flip) * 0x01010101u);
                else if (rows)
                    ember_qpack_rows(X, xg, Cg, p, pix, pb, flip, (uint8_t)xz, wr, lay >> 2 & 1);
                else if (!direct && p[EMBER_GEO_IN_D] == 1 && p[EMBER_GEO_K_D] == 1 && p[EMBER_GEO_OUT_D] == 1)
                    ember_qpack_rows1(X, xg, Cg, p, pix, pb, K, Kp, flip, (uint8_t)xz, (uint8_t *)wr, lay >> 2 & 1);
                else if (cl && !direct)
                    ember_qpack_conv_cl(X, xg, Cg, p, pix, pb, flip, (uint8_t)xz, p[EMBER_GEO_K_W] <= 16 ? kwb : 0);
                else
                    ember_qpack_conv(X, xg, p, pix, pb, K, Kp, flip, (uint8_t)xz, p[EMBER_GEO_K_W] <= 16 ? kwb : 0,
                                     direct);
                if (wofs || P <= 2) ember_qcolsum(colsum, Xb, Kp, pb);
                if (P <= 2) { /* one or two pixels: matrix-vector products on each pixel's words */
                    uint8_t *row = (uint8_t *)(corr + M);
                    int j, k;
                    for (j = 0; j < pb; ++j) {
                        for (k = 0; k < Kp; k += 4)
                            *(ember_qu32a *)(void *)(row + k) =
                                *(const ember_qu32a *)(const void *)(Xb + (ptrdiff_t)k * EMBER_QPB + 4 * j);
                        ember_qgemv(&o, W + m0 * Kp, Mg, Kp, row, at + j, j);
                    }
                } else
                    ember_qgemm_block(&o, W + m0 * Kp, Mg, Kp, Xb, at, pb);
                if (res) fin(yg + pix, P, stage, rg + pix, Mg, pb, x_sgn, radd);
            }
        }
}
EMBER_UNUSED static void ember_qconv(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N,
                                     int G, int M, int cl, const int8_t *W, const int32_t *bias, const int32_t *rowsum,
                                     const int32_t *wofs, const int32_t *mult, const int32_t *shift, const int32_t *out,
                                     int lay, uint8_t *scratch, ptrdiff_t p0, ptrdiff_t p1, int my) {
    ember_qconv_t(y, kind, x, x_sgn, xz, p, N, G, M, cl, W, bias, rowsum, wofs, mult, shift, out, lay, scratch, 0, 0,
                  0, 0, p0, p1, my);
}
/*@end*/

/*@kernel ember_qconv_add requires ember_qconv ember_qadd*/
static void ember_qconv_rows(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n, int sgn,
                             const int32_t *radd) {
    int m;
    for (m = 0; m < M; ++m) ember_qadd(y + m * ys, stage + m * EMBER_QPB, r + m * ys, n, 1, n, sgn, radd);
}
/* ember_qconv (kind 1, an unblocked output), then y = QAdd(y, res) (ops/qconv_add.py): res's element read
 * before y's is written, so y may be res. stage: M * EMBER_QPB bytes. */
static void ember_qconv_add(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int G,
                            int M, int cl, const int8_t *W, const int32_t *bias, const int32_t *rowsum,
                            const int32_t *wofs, const int32_t *mult, const int32_t *shift, const int32_t *out, int lay,
                            uint8_t *scratch, const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qconv_t(y, kind, x, x_sgn, xz, p, N, G, M, cl, W, bias, rowsum, wofs, mult, shift, out, lay, scratch,
                  ember_qconv_rows, res, radd, stage, 0, PTRDIFF_MAX, M);
}
/*@end*/

/*@kernel ember_qmatmul requires ember_qgemm ember_qblock ember_qpack_pixels*/
/* Y (M x N, row-major) = A (M x K, row-major bytes, int8 if a_sgn, zero point az) times the weights W
 * packed N x Kp (tables per output column n as for ember_qconv). Pixels of the product are A's rows. */
static void ember_qmatmul(void *y, int kind, const void *a, int a_sgn, int32_t az, int M, int N, int K,
                          const int8_t *W, const int32_t *bias, const int32_t *rowsum, const int32_t *wofs,
                          const int32_t *mult, const int32_t *shift, const int32_t *out, uint8_t *scratch) {
    const int Kp = (K + 3) & ~3;
    uint8_t *X = scratch;
    /* M <= 2 packs one row of Kp bytes at a time, not a block (ops/qlinear.py qmatmul_x_bytes sizes the same) */
    int32_t *colsum = (int32_t *)(void *)(scratch + (M <= 2 ? Kp : EMBER_QSCRATCH_X(Kp))), *corr = colsum + EMBER_QPB;
    uint8_t flip;
    const int32_t zv = ember_qview(a_sgn, az, &flip);
    ember_qout o;
    int m0, k;
    ember_qout_init(&o, kind, mult, shift, out);
#ifdef EMBER_QRQ2
    o.w127 = ember_qw127(out, W, (ptrdiff_t)N * Kp);
#endif
    o.y = (uint8_t *)y;
    o.rs = 1;
    o.ps = N;
    o.corr = corr;
    o.wofs = wofs;
    o.colsum = colsum;
    o.row = 0;
    ember_qcorr(corr, N, K, zv, bias, rowsum, wofs);
#if EMBER_QAMX
    o.amx = M > 2 && ember_qamx_ok(N, Kp);
#endif
    if (M <= 2) { /* one or two rows of A: matrix-vector products, each row packed as plain view bytes */
        for (m0 = 0; m0 < M; ++m0) {
            const uint8_t *ar = (const uint8_t *)a + (ptrdiff_t)m0 * K;
            colsum[m0] = 0;
            for (k = 0; k < Kp; ++k) {
                X[k] = k < K ? (uint8_t)(ar[k] ^ flip) : 0;
                colsum[m0] += ((const ember_qx *)X)[k];
            }
            ember_qgemv(&o, W, N, Kp, X, m0, m0);
        }
        return;
    }
    for (m0 = 0; m0 < M; m0 += EMBER_QPB) {
        const int pb = M - m0 < EMBER_QPB ? M - m0 : EMBER_QPB;
        ember_qpack_pixels(X, (const uint8_t *)a + (ptrdiff_t)m0 * K, K, K, pb, flip);
        if (wofs) ember_qcolsum(colsum, X, Kp, pb);
        ember_qgemm_block(&o, W, N, Kp, X, m0, pb);
    }
}
/*@end*/

/*@kernel ember_qpack_b requires ember_prelude*/
/* Packs a run-time B (K x N bytes, int8 if b_sgn) as weights: W[n][k] = B[k][n] (uint8 minus 128, the
 * offset going to wofs, which the caller's table holds) and rowsum[n]. */
static void ember_qpack_b(int8_t *W, int32_t *rowsum, const void *b, int b_sgn, int K, int N) {
    const int Kp = (K + 3) & ~3;
    const uint8_t flip = b_sgn ? 0 : 0x80;
    int n, k;
    for (n = 0; n < N; ++n) {
        int32_t s = 0;
        for (k = 0; k < Kp; ++k) {
            const int8_t v = k < K ? (int8_t)(((const uint8_t *)b)[(ptrdiff_t)k * N + n] ^ flip) : 0;
            W[(ptrdiff_t)n * Kp + k] = v;
            s += v;
        }
        rowsum[n] = s;
    }
}
/*@end*/
