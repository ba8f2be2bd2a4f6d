/* Integer convolution (im2col into the packed layout of qgemm.c, then the int8 product) and integer
 * matrix product. Depthwise convolution is in qdwconv.c. */


/*@kernel ember_qbounds requires ember_prelude*/
/* The outputs [lo, hi) of a row whose input column ow*stride + off lies inside [0, W). */
static void ember_qbounds(int W, int OW, int stride, int off, int *lo, int *hi) {
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / stride + 1;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}
/*@end*/

/*@kernel ember_qconv requires ember_qgemm ember_qbounds*/
typedef uint32_t ember_qu32a __attribute__((may_alias, aligned(4)));
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__SSE2__) || defined(__ARM_NEON) || defined(__wasm_simd128__))
typedef uint8_t ember_qzip __attribute__((vector_size(16)));
typedef uint8_t ember_qzipu __attribute__((vector_size(16), may_alias, aligned(1)));
#if defined(__clang__)
#define EMBER_QSHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define EMBER_QSHUF(a, b, ...) __builtin_shuffle(a, b, (ember_qzip){__VA_ARGS__})
#endif
#define EMBER_QZIP8(a, b, h) EMBER_QSHUF(a, b, 8*h, 16+8*h, 8*h+1, 17+8*h, 8*h+2, 18+8*h, 8*h+3, 19+8*h, \
                                         8*h+4, 20+8*h, 8*h+5, 21+8*h, 8*h+6, 22+8*h, 8*h+7, 23+8*h)
#define EMBER_QZIP16(a, b, h) EMBER_QSHUF(a, b, 8*h, 8*h+1, 16+8*h, 17+8*h, 8*h+2, 8*h+3, 18+8*h, 19+8*h, \
                                          8*h+4, 8*h+5, 20+8*h, 21+8*h, 8*h+6, 8*h+7, 22+8*h, 23+8*h)
#endif

/* Four rows of pb bytes become pb words of X: byte t of word j is row t's byte j (XOR flip). */
static void ember_qinterleave(uint8_t *EMBER_RESTRICT X, const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                              const uint8_t *r3, int pb, uint32_t flip4) {
    ember_qu32a *d = (ember_qu32a *)(void *)X;
    int j = 0;
#ifdef EMBER_QZIP8
    /* 16 pixels at a time: byte pairs of rows 0,1 and 2,3 zipped, then the pairs zipped into words */
    const ember_qzip f = (ember_qzip){0} + (uint8_t)flip4;
    for (; j + 16 <= pb; j += 16) {
        const ember_qzip a0 = *(const ember_qzipu *)(r0 + j), a1 = *(const ember_qzipu *)(r1 + j);
        const ember_qzip a2 = *(const ember_qzipu *)(r2 + j), a3 = *(const ember_qzipu *)(r3 + j);
        const ember_qzip l01 = EMBER_QZIP8(a0, a1, 0), h01 = EMBER_QZIP8(a0, a1, 1);
        const ember_qzip l23 = EMBER_QZIP8(a2, a3, 0), h23 = EMBER_QZIP8(a2, a3, 1);
        ember_qzipu *o = (ember_qzipu *)(void *)(d + j);
        o[0] = EMBER_QZIP16(l01, l23, 0) ^ f;
        o[1] = EMBER_QZIP16(l01, l23, 1) ^ f;
        o[2] = EMBER_QZIP16(h01, h23, 0) ^ f;
        o[3] = EMBER_QZIP16(h01, h23, 1) ^ f;
    }
#endif
    for (; j < pb; ++j)
        d[j] = ((uint32_t)r0[j] | (uint32_t)r1[j] << 8 | (uint32_t)r2[j] << 16 | (uint32_t)r3[j] << 24) ^ flip4;
}

/* One tap's im2col row for the pb pixels from output pixel (od, oh, ow0): each output row's segment
 * is padding, a copy, padding ([lo, hi): the outputs whose input column is inside the row).
 * Returns the row: the input itself when the whole block is one stride-1 copy, else tmp. */
static const uint8_t *ember_qtap(uint8_t *tmp, const uint8_t *xc, const int32_t *p, int od, int oh, int ow0, int pb,
                                 int kd, int kh, int off, int lo, int hi, uint8_t pad) {
    const int D = p[1], H = p[2], W = p[3], OH = p[8], OW = p[9], sw = p[12];
    int j = 0, ow;
    while (j < pb) {
        const int n = OW - ow0 < pb - j ? OW - ow0 : pb - j;
        const int id = od * p[10] - p[16] + kd * p[13], ih = oh * p[11] - p[17] + kh * p[14];
        uint8_t *r = tmp + j - ow0; /* output ow at r[ow] */
        ow = ow0;
        if (id >= 0 && id < D && ih >= 0 && ih < H) {
            const uint8_t *xr = xc + ((ptrdiff_t)id * H + ih) * W;
            const int a = lo > ow0 ? (lo < ow0 + n ? lo : ow0 + n) : ow0;
            const int b = hi < ow0 + n ? (hi > a ? hi : a) : ow0 + n;
            if (n == pb && a == ow0 && b == ow0 + n && sw == 1) return xr + ow0 + off;
            for (; ow < a; ++ow) r[ow] = pad;
            if (sw == 1)
                for (; ow < b; ++ow) r[ow] = xr[ow + off];
            else
                for (; ow < b; ++ow) r[ow] = xr[(ptrdiff_t)ow * sw + off];
        }
        for (; ow < ow0 + n; ++ow) r[ow] = pad;
        j += n;
        ow0 = 0;
        if (++oh == OH) {
            oh = 0;
            ++od;
        }
    }
    return tmp;
}

/* X block for a convolution: rows k = (c, kd, kh, kw) of the taps (K of them, then zero rows up to Kp),
 * the pb pixels from output pixel `pix` (conv.c geometry table p). Taps outside the input read the
 * zero point xz. `kwb`: each kw's [lo, hi) (NULL: solved per tap). `direct`: a 1x1, stride-1, unpadded
 * convolution, whose rows are the input channels themselves. */
static void ember_qpack_conv(uint8_t *X, const uint8_t *x, const int32_t *p, ptrdiff_t pix, int pb, int K,
                             int Kp, uint8_t flip, uint8_t xz, const int *kwb, int direct) {
    const int KD = p[4], KH = p[5], KW = p[6], OH = p[8], OW = p[9];
    const ptrdiff_t s_in = (ptrdiff_t)p[1] * p[2] * p[3];
    const int od = (int)(pix / OW / OH), oh = (int)(pix / OW % OH), ow0 = (int)(pix % OW);
    uint8_t tmp[4][EMBER_QPB];
    const uint8_t *rows[4];
    int c = 0, kd = 0, kh = 0, kw = 0, k, t, j;
    for (k = 0; k < Kp; k += 4) {
        for (t = 0; t < 4; ++t) {
            const uint8_t *xc = x + (ptrdiff_t)c * s_in;
            if (k + t >= K) { /* zero rows: bytes that the flip turns into 0 */
                for (j = 0; j < pb; ++j) tmp[t][j] = flip;
                rows[t] = tmp[t];
                continue;
            }
            if (direct) {
                rows[t] = xc + pix;
            } else {
                const int off = kw * p[15] - p[18];
                int lo, hi;
                if (kwb) {
                    lo = kwb[2 * kw];
                    hi = kwb[2 * kw + 1];
                } else {
                    ember_qbounds(p[3], OW, p[12], off, &lo, &hi);
                }
                rows[t] = ember_qtap(tmp[t], xc, p, od, oh, ow0, pb, kd, kh, off, lo, hi, xz);
            }
            if (++kw == KW) {
                kw = 0;
                if (++kh == KH) {
                    kh = 0;
                    if (++kd == KD) {
                        kd = 0;
                        ++c;
                    }
                }
            }
        }
        ember_qinterleave(X + (ptrdiff_t)k * EMBER_QPB, rows[0], rows[1], rows[2], rows[3], pb, flip * 0x01010101u);
    }
}

/* X block with rows ordered (kd, kh, kw, c), for Cg % 4 == 0: each word holds four consecutive channels
 * at one tap, so one walk over the block's output-row segments per tap serves every channel, and the
 * words interleave four input planes directly (padding words hold the zero point). */
static void ember_qpack_conv_cl(uint8_t *X, const uint8_t *x, int Cg, const int32_t *p, ptrdiff_t pix, int pb,
                                uint8_t flip, uint8_t xz, const int *kwb) {
    const int D = p[1], H = p[2], W = p[3], KD = p[4], KH = p[5], KW = p[6], OH = p[8], OW = p[9], sw = p[12];
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W;
    const uint32_t flip4 = flip * 0x01010101u, pad4 = (uint32_t)(uint8_t)(xz ^ flip) * 0x01010101u;
    const int od0 = (int)(pix / OW / OH), oh0 = (int)(pix / OW % OH), ow00 = (int)(pix % OW);
    int kd, kh, kw, cq, ow;
    for (kd = 0; kd < KD; ++kd)
        for (kh = 0; kh < KH; ++kh)
            for (kw = 0; kw < KW; ++kw, X += (ptrdiff_t)Cg * EMBER_QPB) {
                const int off = kw * p[15] - p[18];
                int lo, hi, j = 0, od = od0, oh = oh0, ow0 = ow00;
                if (kwb) {
                    lo = kwb[2 * kw];
                    hi = kwb[2 * kw + 1];
                } else {
                    ember_qbounds(W, OW, sw, off, &lo, &hi);
                }
                while (j < pb) {
                    const int n = OW - ow0 < pb - j ? OW - ow0 : pb - j;
                    const int id = od * p[10] - p[16] + kd * p[13], ih = oh * p[11] - p[17] + kh * p[14];
                    const int valid = id >= 0 && id < D && ih >= 0 && ih < H;
                    const int a = !valid ? ow0 : lo > ow0 ? (lo < ow0 + n ? lo : ow0 + n) : ow0;
                    const int b = !valid ? ow0 : hi < ow0 + n ? (hi > a ? hi : a) : ow0 + n;
                    for (cq = 0; cq < Cg / 4; ++cq) {
                        ember_qu32a *d = (ember_qu32a *)(void *)(X + (ptrdiff_t)cq * EMBER_QPB * 4);
                        const ptrdiff_t e = j - ow0; /* output ow is word e + ow */
                        const uint8_t *r = x + (ptrdiff_t)4 * cq * s_in + ((ptrdiff_t)id * H + ih) * W;
                        for (ow = ow0; ow < a; ++ow) d[e + ow] = pad4;
                        if (b > a && sw == 1) {
                            ember_qinterleave((uint8_t *)(void *)(d + e + a), r + a + off, r + s_in + a + off,
                                              r + 2 * s_in + a + off, r + 3 * s_in + a + off, b - a, flip4);
                        } else {
                            for (ow = a; ow < b; ++ow) {
                                const ptrdiff_t i = (ptrdiff_t)ow * sw + off;
                                d[e + ow] = ((uint32_t)r[i] | (uint32_t)r[s_in + i] << 8 |
                                             (uint32_t)r[2 * s_in + i] << 16 |
                                         (uint32_t)r[3 * s_in + i] << 24) ^ flip4;
                            }
                        }
                        for (ow = b; ow < ow0 + n; ++ow) d[e + ow] = pad4;
                    }
                    j += n;
                    ow0 = 0;
                    if (++oh == OH) {
                        oh = 0;
                        ++od;
                    }
                }
            }
}

/* Integer convolution, groups G, NC(D)HW, on packed weights W (M x Kp; group g's rows from g*M/G).
 * x: int8 (x_sgn) or uint8 bytes with zero point xz. Per-row tables (offset by group): bias (or NULL),
 * rowsum, wofs (or NULL), mult/shift (kind 1); out = [zp, lo, hi]. cl: the weights' K order is (kd, kh, kw, c)
 * (Cg % 4 == 0), else (c, kd, kh, kw). scratch: Kp * EMBER_QPB bytes, EMBER_QPB + M int32, Kp bytes. */
static void ember_qconv(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N, int G,
                        int M, int cl, const int8_t *W, const int32_t *bias, const int32_t *rowsum, const int32_t *wofs,
                        const int32_t *mult, const int32_t *shift, const int32_t *out, uint8_t *scratch) {
    const int C = p[0], Cg = C / G, Mg = M / G, K = Cg * p[4] * p[5] * p[6], Kp = (K + 3) & ~3;
    const ptrdiff_t s_in = (ptrdiff_t)p[1] * p[2] * p[3], P = (ptrdiff_t)p[7] * p[8] * p[9];
    uint8_t *X = scratch;
    int32_t *colsum = (int32_t *)(void *)(scratch + EMBER_QSCRATCH_X(Kp)), *corr = colsum + EMBER_QPB;
    uint8_t flip;
    const int32_t zv = ember_qview(x_sgn, xz, &flip);
    /* 1x1, stride 1, no padding, same size: the input channels are the im2col rows */
    const int direct = p[4] * p[5] * p[6] == 1 && p[10] == 1 && p[11] == 1 && p[12] == 1 && p[16] == 0 &&
                       p[17] == 0 && p[18] == 0 && p[1] == p[7] && p[2] == p[8] && p[3] == p[9];
    int kwb[32];
    ember_qout o;
    int n, g, kw;
    ptrdiff_t pix;
    for (kw = 0; kw < p[6] && kw < 16; ++kw)
        ember_qbounds(p[3], p[9], p[12], kw * p[15] - p[18], &kwb[2 * kw], &kwb[2 * kw + 1]);
    o.kind = kind;
    o.rs = P;
    o.ps = 1;
    o.corr = corr;
    o.colsum = colsum;
    o.zp = out[0];
    o.lo = out[1];
    o.hi = out[2];
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const ptrdiff_t m0 = (ptrdiff_t)g * Mg;
            const uint8_t *xg = (const uint8_t *)x + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * s_in;
            ember_qcorr(corr, Mg, K, zv, bias ? bias + m0 : bias, rowsum + m0, wofs ? wofs + m0 : wofs);
            o.y = (uint8_t *)y + ((ptrdiff_t)n * M + m0) * P * (kind == 0 ? 4 : 1);
            o.wofs = wofs ? wofs + m0 : wofs;
            o.mult = mult ? mult + m0 : mult;
            o.shift = shift ? shift + m0 : shift;
            for (pix = 0; pix < P; pix += EMBER_QPB) {
                const int pb = P - pix < EMBER_QPB ? (int)(P - pix) : EMBER_QPB;
                if (cl && !direct)
                    ember_qpack_conv_cl(X, xg, Cg, p, pix, pb, flip, (uint8_t)xz, p[6] <= 16 ? kwb : 0);
                else
                    ember_qpack_conv(X, xg, p, pix, pb, K, Kp, flip, (uint8_t)xz, p[6] <= 16 ? kwb : 0, direct);
                if (wofs || P <= 2) ember_qcolsum(colsum, X, Kp, pb);
                if (P <= 2) { /* one or two pixels: matrix-vector products on each pixel's words */
                    uint8_t *row = (uint8_t *)(corr + M);
                    int j, k;
                    for (j = 0; j < pb; ++j) {
                        for (k = 0; k < Kp; k += 4)
                            *(ember_qu32a *)(void *)(row + k) =
                                *(const ember_qu32a *)(const void *)(X + (ptrdiff_t)k * EMBER_QPB + 4 * j);
                        ember_qgemv(&o, W + m0 * Kp, Mg, Kp, row, pix + j, j);
                    }
                    continue;
                }
                ember_qgemm_block(&o, W + m0 * Kp, Mg, Kp, X, pix, pb);
            }
        }
}
/*@end*/

/*@kernel ember_qmatmul requires ember_qgemm*/
/* Y (M x N, row-major) = A (M x K, row-major bytes, int8 if a_sgn, zero point az) times the weights W
 * packed N x Kp (tables per output column n as for ember_qconv). Pixels of the product are A's rows. */
static void ember_qmatmul(void *y, int kind, const void *a, int a_sgn, int32_t az, int M, int N, int K,
                          const int8_t *W, const int32_t *bias, const int32_t *rowsum, const int32_t *wofs,
                          const int32_t *mult, const int32_t *shift, const int32_t *out, uint8_t *scratch) {
    const int Kp = (K + 3) & ~3;
    uint8_t *X = scratch;
    int32_t *colsum = (int32_t *)(void *)(scratch + EMBER_QSCRATCH_X(Kp)), *corr = colsum + EMBER_QPB;
    uint8_t flip;
    const int32_t zv = ember_qview(a_sgn, az, &flip);
    const uint32_t flip4 = flip * 0x01010101u;
    ember_qout o;
    int m0, j, k;
    o.y = (uint8_t *)y;
    o.kind = kind;
    o.rs = 1;
    o.ps = N;
    o.corr = corr;
    o.wofs = wofs;
    o.colsum = colsum;
    o.mult = mult;
    o.shift = shift;
    o.zp = out[0];
    o.lo = out[1];
    o.hi = out[2];
    ember_qcorr(corr, N, K, zv, bias, rowsum, wofs);
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
        /* word g of pixel j: A[m0 + j][4g .. 4g+3], already four consecutive bytes */
        for (j = 0; j < pb; ++j) {
            const uint8_t *ar = (const uint8_t *)a + (ptrdiff_t)(m0 + j) * K;
            uint32_t *d = (uint32_t *)(void *)X + j;
            for (k = 0; k + 4 <= K; k += 4)
                d[(ptrdiff_t)k * EMBER_QPB / 4] = (uint32_t)*(const ember_qi32u *)(ar + k) ^ flip4;
            if (k < K) { /* the last partial word: bytes past K are view zeros */
                uint32_t w = 0;
                int t;
                for (t = 0; k + t < K; ++t) w |= (uint32_t)(uint8_t)(ar[k + t] ^ flip) << (8 * t);
                d[(ptrdiff_t)k * EMBER_QPB / 4] = w;
            }
        }
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
