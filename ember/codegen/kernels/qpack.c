/* Packing of convolution inputs into the activation blocks of qgemm.c (X[k/4][pixel][k%4] bytes, the
 * uint8 or int8 view): im2col by taps, by rows of words for channels in fours, or gathered words from a
 * channel-blocked input. */

/*@kernel ember_qinterleave requires ember_qgemm*/
typedef uint32_t ember_qu32a __attribute__((may_alias, aligned(4)));
#if EMBER_HAVE_SIMD128
typedef uint8_t ember_qzip __attribute__((vector_size(16)));
typedef uint8_t ember_qzipu __attribute__((vector_size(16), may_alias, aligned(1)));
#if EMBER_CLANG
#define EMBER_QSHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define EMBER_QSHUF(a, b, ...) __builtin_shuffle(a, b, (ember_qzip){__VA_ARGS__})
#endif
#define EMBER_QZIP8(a, b, h) EMBER_QSHUF(a, b, 8*h, 16+8*h, 8*h+1, 17+8*h, 8*h+2, 18+8*h, 8*h+3, 19+8*h, \
                                         8*h+4, 20+8*h, 8*h+5, 21+8*h, 8*h+6, 22+8*h, 8*h+7, 23+8*h)
#define EMBER_QZIP16(a, b, h) EMBER_QSHUF(a, b, 8*h, 8*h+1, 16+8*h, 17+8*h, 8*h+2, 8*h+3, 18+8*h, 19+8*h, \
                                          8*h+4, 8*h+5, 20+8*h, 21+8*h, 8*h+6, 8*h+7, 22+8*h, 23+8*h)
#endif

#if EMBER_HAVE_AVX512_VBMI
typedef uint8_t ember_qz64 __attribute__((vector_size(64)));
typedef uint8_t ember_qz64u __attribute__((vector_size(64), may_alias, aligned(1)));
/* Bytes idx[i] % 64 of a (idx[i] < 64) or b. */
EMBER_INLINE ember_qz64 ember_qz_perm2(ember_qz64 a, ember_qz64 idx, ember_qz64 b) {
    __asm__("vpermt2b %2, %1, %0" : "+v"(a) : "v"(idx), "v"(b));
    return a;
}
#endif

/* Four rows of pb bytes become pb words of X: byte t of word j is row t's byte j (XOR flip). */
static void ember_qinterleave(uint8_t *EMBER_RESTRICT X, const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                              const uint8_t *r3, int pb, uint32_t flip4) {
    ember_qu32a *d = (ember_qu32a *)(void *)X;
    int j = 0;
#if EMBER_HAVE_AVX512_VBMI
    /* 64 pixels at a time (the last ones under a mask): words 16k .. 16k+15 from rows (0, 1) and
     * (2, 3) by two-table permutes */
    {
        const ember_qz64 f = (ember_qz64){0} + (uint8_t)flip4;
        ember_qz64 idx, a0, a1, a2, a3;
        int i, k;
        for (i = 0; i < 64; ++i) idx[i] = (uint8_t)(i % 4 % 2 * 64 + i / 4);
        for (; j < pb; j += 64) {
            const int n = pb - j < 64 ? pb - j : 64;
            const unsigned long long in = n == 64 ? ~0ull : (1ull << n) - 1;
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(a0) : "m"(*(const ember_qz64u *)(r0 + j)), "Yk"(in));
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(a1) : "m"(*(const ember_qz64u *)(r1 + j)), "Yk"(in));
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(a2) : "m"(*(const ember_qz64u *)(r2 + j)), "Yk"(in));
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(a3) : "m"(*(const ember_qz64u *)(r3 + j)), "Yk"(in));
            for (k = 0; k < 4 && 16 * k < n; ++k) {
                const ember_qz64 ix = idx + (uint8_t)(16 * k);
                const int m = n - 16 * k < 16 ? n - 16 * k : 16;
                ember_qz64 w = ember_qz_perm2(a0, ix, a1);
                /* bytes 2 and 3 of each word from rows 2 and 3 */
                __asm__("vpblendmb %2, %1, %0%{%3%}" : "=v"(w) : "v"(w), "v"(ember_qz_perm2(a2, ix, a3)),
                        "Yk"(0xCCCCCCCCCCCCCCCCull));
                w ^= f;
                __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qz64u *)(void *)(d + j + 16 * k)) : "v"(w),
                        "Yk"((unsigned short)((1u << m) - 1)));
            }
        }
    }
#endif
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

/* d[i] = s[i] ^ flip4 for i < n: 16 words per masked AVX-512 move where there are such. */
EMBER_INLINE void ember_qwords(uint32_t *EMBER_RESTRICT d, const uint32_t *EMBER_RESTRICT s, ptrdiff_t n, uint32_t flip4) {
#if EMBER_HAVE_AVX512
    typedef uint32_t ember_qw16 __attribute__((vector_size(64), may_alias, aligned(4)));
    ptrdiff_t i;
    for (i = 0; i < n; i += 16) {
        const unsigned short m = n - i >= 16 ? 0xFFFF : (unsigned short)((1u << (n - i)) - 1);
        ember_qw16 v;
        __asm__("vmovdqu32 %1, %0%{%2%}%{z%}" : "=v"(v) : "m"(*(const ember_qw16 *)(const void *)(s + i)), "Yk"(m));
        v ^= flip4;
        __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qw16 *)(void *)(d + i)) : "v"(v), "Yk"(m));
    }
#else
    ptrdiff_t i;
    for (i = 0; i < n; ++i) d[i] = s[i] ^ flip4;
#endif
}

#if EMBER_HAVE_AVX512_VBMI
/* r[i] = x[2i] for i < count, 32 at a time (a masked 64-byte load, VPERMB, a masked store). */
#define EMBER_QGATHER2 1
static void ember_qgather2(uint8_t *r, const uint8_t *x, int count) {
    ember_qz64 idx, v;
    int i;
    for (i = 0; i < 64; ++i) idx[i] = (uint8_t)(2 * i % 64);
    for (i = 0; i < count; i += 32) {
        const int n = count - i < 32 ? count - i : 32;
        const unsigned long long in = (1ull << (2 * n - 1)) - 1; /* bytes 0 .. 2n-2 */
        __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(v) : "m"(*(const ember_qz64u *)(x + 2 * i)), "Yk"(in));
        __asm__("vpermb %1, %2, %0" : "=v"(v) : "v"(v), "v"(idx));
        __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qz64u *)(r + i)) : "v"(v), "Yk"((1ull << n) - 1));
    }
}
#elif EMBER_HAVE_AVX2
/* r[i] = x[2i] for i < count, 32 at a time from 64 bytes (each 16-bit lane's even byte, packed by
 * VPACKUSWB, whose 128-bit lanes VPERMQ puts back in order) while those bytes lie inside x[0 .. 2 count - 2],
 * then one by one. The byte loop was 45% of a stride-2 3x3's packing (ResNet-18's first one: 15% of it). */
#define EMBER_QGATHER2 1
EMBER_UNUSED static void ember_qgather2(uint8_t *r, const uint8_t *x, int count) {
    typedef short ember_qg2h __attribute__((vector_size(32)));
    typedef short ember_qg2hu __attribute__((vector_size(32), may_alias, aligned(1)));
    typedef long long ember_qg2q __attribute__((vector_size(32)));
    typedef long long ember_qg2qu __attribute__((vector_size(32), may_alias, aligned(1)));
    int i = 0;
    for (; i + 32 < count; i += 32) {
        const ember_qg2h lo = *(const ember_qg2hu *)(const void *)(x + 2 * i) & 255,
                         hi = *(const ember_qg2hu *)(const void *)(x + 2 * i + 32) & 255;
        const ember_qg2q v = (ember_qg2q)__builtin_ia32_packuswb256(lo, hi);
        *(ember_qg2qu *)(void *)(r + i) = __builtin_ia32_permdi256(v, 0xD8);
    }
    for (; i < count; ++i) r[i] = x[2 * i];
}
#endif
/*@end*/

/*@kernel ember_qpack_pixels requires ember_qgemm*/
/* A packed block (qgemm.c) of pb pixels whose K bytes each are a row of `a` (rows lda bytes apart): word g of pixel
 * j is bytes 4g .. 4g+3 of row j, XOR flip; the bytes of the last word past K are view zeros. A matrix product's
 * rows (ember_qmatmul), or a channels-last 1x1 convolution's pixels (ember_qconv). */
static void ember_qpack_pixels(uint8_t *X, const uint8_t *a, ptrdiff_t lda, int K, int pb, uint8_t flip) {
    const uint32_t flip4 = flip * 0x01010101u;
    int j, k, t;
    for (j = 0; j < pb; ++j) {
        const uint8_t *ar = a + (ptrdiff_t)j * lda;
        uint32_t *d = (uint32_t *)(void *)X + j;
        for (k = 0; k + 4 <= K; k += 4) d[(ptrdiff_t)k * EMBER_QPB / 4] = (uint32_t)*(const ember_qi32u *)(ar + k) ^ flip4;
        if (k < K) {
            uint32_t w = 0;
            for (t = 0; k + t < K; ++t) w |= (uint32_t)(uint8_t)(ar[k + t] ^ flip) << (8 * t);
            d[(ptrdiff_t)k * EMBER_QPB / 4] = w;
        }
    }
}
/*@end*/

/*@kernel ember_qnhwc_words requires ember_qinterleave*/
/* d[j] (j < n) = the word of channels 4 cq .. 4 cq + 3 of pixel j * s of the channels-last row px (at channel 4 cq;
 * C channels a pixel; channels past C repeat channel 4 cq, whose weights are 0), XOR flip4: a TFLite model's NHWC
 * image read as it is, with no Transpose before the convolution (qshift.c's planes, ember_qpack_rows' rows). With
 * AVX-512 VBMI, where 16 words span at most two vectors (C <= 4, s <= 2: an image's stem), 16 words per two-table
 * byte permute. */
static void ember_qnhwc_words(uint32_t *d, const uint8_t *px, int C, int cq, int s, int n, uint32_t flip4) {
    const int step = s * C, cn = C - 4 * cq < 4 ? C - 4 * cq : 4;
    int j = 0, t;
#if EMBER_HAVE_AVX512_VBMI
    if (C <= 4 && s <= 2) {
        const ember_qz64 f = (ember_qz64){0} + (uint8_t)flip4;
        ember_qz64 idx, a, b, w;
        for (t = 0; t < 64; ++t) idx[t] = (uint8_t)(t / 4 * step + (t % 4 < cn ? t % 4 : 0));
        for (; j < n; j += 16) {
            const int m = n - j < 16 ? n - j : 16, bytes = (m - 1) * step + cn; /* at most 15 * 8 + 4 */
            const unsigned long long ka = bytes >= 64 ? ~0ull : (1ull << bytes) - 1,
                                     kb = bytes <= 64 ? 0ull : (1ull << (bytes - 64)) - 1;
            const uint8_t *src = px + (ptrdiff_t)j * step;
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(a) : "m"(*(const ember_qz64u *)src), "Yk"(ka));
            __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(b) : "m"(*(const ember_qz64u *)(src + 64)), "Yk"(kb));
            w = ember_qz_perm2(a, idx, b) ^ f;
            __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qz64u *)(void *)(d + j)) : "v"(w),
                    "Yk"((unsigned short)((1u << m) - 1)));
        }
        return;
    }
#endif
    for (; j < n; ++j, px += step) {
        uint8_t w4[4];
        uint32_t w;
        if (cn == 4) { /* a whole quad: one load */
            __builtin_memcpy(&w, px, 4);
        } else {
            for (t = 0; t < 4; ++t) w4[t] = px[t < cn ? t : 0];
            __builtin_memcpy(&w, w4, 4);
        }
        d[j] = w ^ flip4;
    }
}
/*@end*/

/*@kernel ember_qpack requires ember_qinterleave ember_qnhwc_words ember_window_bounds ember_conv_geo*/
/* One tap's im2col row for the pb pixels from output pixel (od, oh, ow0): each output row's segment
 * is padding, a copy, padding ([lo, hi): the outputs whose input column is inside the row).
 * Returns the row: the input itself when the whole block is one stride-1 copy, else tmp. */
static const uint8_t *ember_qtap(uint8_t *tmp, const uint8_t *xc, const int32_t *p, int od, int oh, int ow0, int pb,
                                 int kd, int kh, int off, int lo, int hi, uint8_t pad) {
    const int D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W], sw = p[EMBER_GEO_STRIDE_W];
    int j = 0, ow;
    while (j < pb) {
        const int n = OW - ow0 < pb - j ? OW - ow0 : pb - j;
        const int id = od * p[EMBER_GEO_STRIDE_D] - p[EMBER_GEO_PAD_D] + kd * p[EMBER_GEO_DIL_D],
                  ih = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H] + kh * p[EMBER_GEO_DIL_H];
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
#ifdef EMBER_QGATHER2
            else if (sw == 2) {
                ember_qgather2(r + ow, xr + 2 * ow + off, b - ow);
                ow = b;
            }
#endif
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
    const int KD = p[EMBER_GEO_K_D], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H],
              OW = p[EMBER_GEO_OUT_W];
    const ptrdiff_t s_in = (ptrdiff_t)p[EMBER_GEO_IN_D] * p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
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
                const int off = kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W];
                int lo, hi;
                if (kwb) {
                    lo = kwb[2 * kw];
                    hi = kwb[2 * kw + 1];
                } else {
                    ember_window_bounds(p[EMBER_GEO_IN_W], OW, p[EMBER_GEO_STRIDE_W], off, &lo, &hi);
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
    const int D = p[EMBER_GEO_IN_D], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KD = p[EMBER_GEO_K_D],
              KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W],
              sw = p[EMBER_GEO_STRIDE_W];
    const ptrdiff_t s_in = (ptrdiff_t)D * H * W;
    const uint32_t flip4 = flip * 0x01010101u, pad4 = (uint32_t)(uint8_t)(xz ^ flip) * 0x01010101u;
    const int od0 = (int)(pix / OW / OH), oh0 = (int)(pix / OW % OH), ow00 = (int)(pix % OW);
    int kd, kh, kw, cq, ow;
    for (kd = 0; kd < KD; ++kd)
        for (kh = 0; kh < KH; ++kh)
            for (kw = 0; kw < KW; ++kw, X += (ptrdiff_t)Cg * EMBER_QPB) {
                const int off = kw * p[EMBER_GEO_DIL_W] - p[EMBER_GEO_PAD_W];
                int lo, hi, j = 0, od = od0, oh = oh0, ow0 = ow00;
                if (kwb) {
                    lo = kwb[2 * kw];
                    hi = kwb[2 * kw + 1];
                } else {
                    ember_window_bounds(W, OW, sw, off, &lo, &hi);
                }
                while (j < pb) {
                    const int n = OW - ow0 < pb - j ? OW - ow0 : pb - j;
                    const int id = od * p[EMBER_GEO_STRIDE_D] - p[EMBER_GEO_PAD_D] + kd * p[EMBER_GEO_DIL_D],
                              ih = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H] + kh * p[EMBER_GEO_DIL_H];
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
/* X block for a 2-D convolution with the (kh, kw, c) K order (Cg % 4 == 0) by rows of words: for each
 * channel quad, every input row the block's taps read is interleaved once into a padded row of words
 * (padding: the zero point), split by column phase (column c at c % sw, index c / sw; each phase's bytes
 * gathered first) so that each tap's
 * words for an output row segment are one contiguous run, which is copied into the block. Interleaving
 * each row once instead of once per tap (qpack_conv_cl) is what makes it fast. wr: ember_qrows_words
 * words of scratch. */
static void ember_qrows_geometry(const int32_t *p, int *rows, int *wq) {
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W],
              sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H], dw = p[EMBER_GEO_DIL_W];
    const int out_rows = (EMBER_QPB - 1) / OW + 2 < OH ? (EMBER_QPB - 1) / OW + 2 : OH;
    *rows = (out_rows - 1) * sh + (KH - 1) * dh + 1;
    *wq = ((OW - 1) * sw + (KW - 1) * dw + 1 + sw - 1) / sw; /* words per phase */
}
static void ember_qpack_rows(uint8_t *X, const uint8_t *x, int Cg, const int32_t *p, ptrdiff_t pix, int pb,
                             uint8_t flip, uint8_t xz, uint32_t *EMBER_RESTRICT wr, int nhwc) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W],
              OW = p[EMBER_GEO_OUT_W], sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W];
    const int pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W], oh0 = (int)(pix / OW), ow0 = (int)(pix % OW),
              oh1 = (int)((pix + pb - 1) / OW);
    const int nrows = (oh1 - oh0) * sh + (KH - 1) * dh + 1, ih0 = oh0 * sh - pt;
    const ptrdiff_t s_in = (ptrdiff_t)H * W;
    const uint32_t flip4 = flip * 0x01010101u, pad4 = (uint32_t)(uint8_t)(xz ^ flip) * 0x01010101u;
    uint32_t *tmp;
    int rows, wq, cq, i, c, kh, kw;
    ember_qrows_geometry(p, &rows, &wq);
    tmp = wr + (ptrdiff_t)rows * sw * wq; /* stride > 1: four channel rows' bytes of one phase */
    for (cq = 0; cq < Cg / 4; ++cq) {
        const uint8_t *r = x + (ptrdiff_t)4 * cq * (nhwc ? 1 : s_in);
        for (i = 0; i < nrows; ++i) {
            const int ih = ih0 + i, len = sw * wq;
            uint32_t *row = wr + (ptrdiff_t)i * len;
            const uint8_t *xr;
            int ph, used = 0;
            for (kh = 0; kh < KH && !used; ++kh) /* a row some tap reads (not so for odd rows of a 1x1 stride 2) */
                used = i >= kh * dh && (i - kh * dh) % sh == 0;
            if (!used) continue;
            if (ih < 0 || ih >= H) {
                for (c = 0; c < len; ++c) row[c] = pad4;
                continue;
            }
            xr = r + (ptrdiff_t)ih * W * (nhwc ? Cg : 1);
            for (ph = 0; ph < sw; ++ph, row += wq) { /* index c: input column c * sw + ph - pl */
                const int c0 = pl - ph > 0 ? (pl - ph + sw - 1) / sw : 0;
                const int last = W - 1 + pl - ph < 0 ? -1 : (W - 1 + pl - ph) / sw;
                const int c1 = last + 1 < wq ? last + 1 : wq;
                const uint8_t *src = xr + ((ptrdiff_t)c0 * sw + ph - pl) * (nhwc ? Cg : 1);
                for (c = 0; c < c0 && c < wq; ++c) row[c] = pad4;
                if (c1 > c0 && nhwc) {
                    ember_qnhwc_words(row + c0, src, Cg, cq, sw, c1 - c0, flip4);
                } else if (c1 > c0 && sw == 1) {
                    ember_qinterleave((uint8_t *)(void *)(row + c0), src, src + s_in, src + 2 * s_in, src + 3 * s_in,
                                      c1 - c0, flip4);
                } else if (c1 > c0) { /* every sw-th byte of the four channel rows first (tmp: 4 rows of wq) */
                    uint8_t *b = (uint8_t *)(void *)tmp;
                    int t, q;
                    for (t = 0; t < 4; ++t)
#ifdef EMBER_QGATHER2
                        if (sw == 2) ember_qgather2(b + t * wq, src + t * s_in, c1 - c0);
                        else
#endif
                        for (q = 0; q < c1 - c0; ++q) b[t * wq + q] = src[t * s_in + (ptrdiff_t)q * sw];
                    ember_qinterleave((uint8_t *)(void *)(row + c0), b, b + wq, b + 2 * wq, b + 3 * wq, c1 - c0, flip4);
                }
                for (c = c1 > c0 ? c1 : (c0 < wq ? c0 : wq); c < wq; ++c) row[c] = pad4;
            }
        }
        for (kh = 0; kh < KH; ++kh)
            for (kw = 0; kw < KW; ++kw) {
                uint32_t *dst = (uint32_t *)(void *)(X + ((ptrdiff_t)(kh * KW + kw) * (Cg / 4) + cq) * EMBER_QPB * 4);
                const uint32_t *src0 = wr + (ptrdiff_t)kh * dh * sw * wq + (kw * dw % sw) * wq + kw * dw / sw;
                int j = 0, oh = oh0, ow = ow0;
                while (j < pb) {
                    const int n = OW - ow < pb - j ? OW - ow : pb - j;
                    const uint32_t *src = src0 + (ptrdiff_t)(oh - oh0) * sh * sw * wq + ow;
                    ember_qwords(dst + j, src, n, 0);
                    j += n;
                    ow = 0;
                    ++oh;
                }
            }
    }
}
/* X block for a 2-D convolution with the (kh, kw, c) K order from a channel-blocked input x (qgemm.c
 * ember_qblk_at; C % 4 == 0, one group): for each tap, the block's pixels' input word offsets (or -1:
 * padding, the zero point's word pad4) once, then each channel quad's words gathered by them, 16 at a
 * time on AVX-512. */
static void ember_qpack_gather(uint8_t *X, const uint8_t *x, int C, const int32_t *p, ptrdiff_t pix, int pb,
                               uint32_t flip4, uint32_t pad4) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W],
              OW = p[EMBER_GEO_OUT_W], sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W];
    int32_t offs[EMBER_QPB], ih0[EMBER_QPB], iw0[EMBER_QPB]; /* ih0, iw0: pixel j's window corner */
    unsigned long long in; /* bit j: pixel j's tap is inside the input */
    int kh, kw, cq, j;
    for (j = 0; j < pb; ++j) {
        ih0[j] = (int)((pix + j) / OW) * sh - p[EMBER_GEO_PAD_H];
        iw0[j] = (int)((pix + j) % OW) * sw - p[EMBER_GEO_PAD_W];
    }
    for (kh = 0; kh < KH; ++kh)
        for (kw = 0; kw < KW; ++kw) {
            uint32_t *d = (uint32_t *)(void *)(X + (ptrdiff_t)(kh * KW + kw) * (C / 4) * EMBER_QPB * 4);
            for (j = 0, in = 0; j < pb; ++j) {
                const int ih = ih0[j] + kh * dh, iw = iw0[j] + kw * dw;
                const int q = ih * W + iw, inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                offs[j] = inside ? (int32_t)ember_qblk_off(q, 0, 64 * (ptrdiff_t)C) : -1;
                in |= (unsigned long long)inside << j;
            }
            for (cq = 0; cq < C / 4; ++cq, d += EMBER_QPB) {
                const uint8_t *xq = x + (ptrdiff_t)256 * cq;
                j = 0;
#if EMBER_HAVE_AVX512
                for (; j + 16 <= pb; j += 16) {
                    typedef int ember_qg16 __attribute__((vector_size(64)));
                    typedef int ember_qg16u __attribute__((vector_size(64), may_alias, aligned(4)));
                    const ember_qg16 o16 = *(const ember_qg16u *)(const void *)(offs + j);
                    ember_qg16 v = (ember_qg16){0} + (int)(pad4 ^ flip4); /* padding: pad4 after the flip */
                    v = __builtin_ia32_gathersiv16si(v, xq, o16, (unsigned short)(in >> j), 1);
                    *(ember_qg16u *)(void *)(d + j) = v ^ (int)flip4;
                }
#endif
                for (; j < pb; ++j)
                    d[j] = offs[j] < 0 ? pad4 : *(const ember_qu32a *)(const void *)(xq + offs[j]) ^ flip4;
            }
        }
}
/* X block for a 2-D convolution with the (c, kh, kw) K order (any channel count) by rows: per output row
 * segment of the block, each (channel, kernel row) input row is split once into its column phases
 * (column c at phase c % sw, index c / sw; padding: the zero point), so that every tap's run of pixels is
 * a slice of a phase row, and four taps' slices interleave into the block's words. rowbuf: Cg * KH * sw *
 * ember_qrows_geometry's wq bytes. nhwc: x is stored channels-last (one group). */
static void ember_qpack_rows1(uint8_t *X, const uint8_t *x, int Cg, const int32_t *p, ptrdiff_t pix, int pb, int K,
                              int Kp, uint8_t flip, uint8_t xz, uint8_t *EMBER_RESTRICT rowbuf, int nhwc) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W],
              OW = p[EMBER_GEO_OUT_W], sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H],
              dw = p[EMBER_GEO_DIL_W];
    const int pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    /* where channel c's pixel (ih, iw) is: NCHW, or channels-last (nhwc: one group, Cg = C) */
    const ptrdiff_t s_in = (ptrdiff_t)H * W, cs = nhwc ? 1 : s_in, ps = nhwc ? Cg : 1;
    const uint8_t *rows[4];
    uint8_t zero[EMBER_QPB]; /* rows past K: bytes that the flip turns into 0 (the column sums need them) */
    int rws, wq, oh = (int)(pix / OW), ow0 = (int)(pix % OW), j = 0, c, kh, ph, i, k0, t;
    ember_qrows_geometry(p, &rws, &wq);
    for (i = 0; i < EMBER_QPB; ++i) zero[i] = flip;
    while (j < pb) {
        const int n = OW - ow0 < pb - j ? OW - ow0 : pb - j;
        for (c = 0; c < Cg; ++c)
            for (kh = 0; kh < KH; ++kh) {
                uint8_t *pr = rowbuf + ((ptrdiff_t)c * KH + kh) * sw * wq;
                const int ih = oh * sh - pt + kh * dh;
                const uint8_t *xr = x + c * cs + (ptrdiff_t)ih * W * ps;
                if (ih < 0 || ih >= H) {
                    for (i = 0; i < sw * wq; ++i) pr[i] = xz;
                    continue;
                }
                for (ph = 0; ph < sw; ++ph, pr += wq) { /* index i: input column i * sw + ph - pl */
                    const int i0 = pl - ph > 0 ? (pl - ph + sw - 1) / sw : 0;
                    const int last = W - 1 + pl - ph < 0 ? -1 : (W - 1 + pl - ph) / sw;
                    const int i1 = last + 1 < wq ? last + 1 : wq;
                    for (i = 0; i < i0 && i < wq; ++i) pr[i] = xz;
                    if (i1 > i0) {
                        const uint8_t *src = xr + ((ptrdiff_t)i0 * sw + ph - pl) * ps;
                        if (ps > 1)
                            for (i = i0; i < i1; ++i) pr[i] = src[(ptrdiff_t)(i - i0) * sw * ps];
                        else if (sw == 1)
                            for (i = i0; i < i1; ++i) pr[i] = src[i - i0];
#ifdef EMBER_QGATHER2
                        else if (sw == 2)
                            ember_qgather2(pr + i0, src, i1 - i0);
#endif
                        else
                            for (i = i0; i < i1; ++i) pr[i] = src[(ptrdiff_t)(i - i0) * sw];
                    }
                    for (i = i1 > i0 ? i1 : (i0 < wq ? i0 : wq); i < wq; ++i) pr[i] = xz;
                }
            }
        for (k0 = 0; k0 < Kp; k0 += 4) {
            for (t = 0; t < 4; ++t) {
                const int k = k0 + t, kw = k % KW;
                rows[t] = k >= K ? zero : rowbuf + ((ptrdiff_t)(k / KW) * sw + kw * dw % sw) * wq + kw * dw / sw + ow0;
            }
            ember_qinterleave(X + (ptrdiff_t)k0 * EMBER_QPB + 4 * j, rows[0], rows[1], rows[2], rows[3], n,
                              flip * 0x01010101u);
        }
        j += n;
        ow0 = 0;
        ++oh;
    }
}
/*@end*/
