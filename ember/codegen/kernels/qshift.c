/* Integer convolution with no im2col copy (QConvShifted; the int8 form of ConvShifted): the input is
 * laid out once, zero-point padded, as words of four channels (the qgemm.c byte view) split by stride
 * phase, Xp[c/4][phase][row][col][c%4]: padded input row r is row r / sh of row phase r % sh, column c
 * is column c / sw of column phase c % sw, and every phase plane has Wq columns. Output position
 * q = oh * Wq + ow (ow < Wq) then reads tap (kh, kw) at word q + (kh*dh / sh) * Wq + kw*dw / sw of the
 * plane of phase (kh*dh % sh, kw*dw % sw): for each quad and tap, the 64 positions of a block are one
 * contiguous run of words, which the AVX-512 tiles load directly, as they load a packed block (qgemm.c),
 * with K in the order (c/4, kh, kw, c%4) (a quad's taps re-read the same few cache lines). A strided
 * convolution is so a stride-1 one over its phases, and a 1x1 of stride 2 reads one phase: the input
 * subsampled once. Positions with ow >= OW (the columns the kernel's reach adds) are computed and
 * dropped: the valid lanes of a vector are compressed into consecutive output pixels before the store,
 * since raster order skips exactly them. The price is Wq - OW wasted columns per output row (2 of a
 * 56-wide 3x3's 58; qshifted.py takes only rows where it is under a tenth), against an im2col copy of
 * KH*KW times the input per block. The tiles need AVX-512 VNNI and qgemm.c's float requantisation
 * (qshifted.py checks that the layer takes it); elsewhere each block's pixels are gathered from the
 * planes into a packed block (runs of words, no per-tap bounds) for ember_qgemm_block. */

/*@kernel ember_qconv_shifted requires ember_qgemm ember_qblock ember_qinterleave ember_qnhwc_words ember_conv_geo*/
#define EMBER_QSH_TAPS 64 /* most kernel taps (qshifted.py checks) */
#if defined(EMBER_QRQ) && EMBER_QMR == 4
/* The first n words of w to channel quad m0 / 4 of the channel-blocked o at pixels pix .. pix + n - 1,
 * which may run into the next block of pixels. */
EMBER_INLINE void ember_qsh_put_words(const ember_qout *o, int m0, ptrdiff_t pix, ember_qv16_i w, int n) {
    const int room = 64 - (int)(pix & 63);
    ember_qv16_store_words(ember_qblk_at(o, m0, pix), w, n < room ? n : room);
    if (n > room) { /* the rest: lanes room .. n-1 moved down, to the next block's first pixels */
        ember_qv16_i idx = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
        idx += room;
        __asm__("vpermd %1, %2, %0" : "=v"(w) : "v"(w), "v"(idx));
        ember_qv16_store_words(ember_qblk_at(o, m0, pix + room), w, n - room);
    }
}
/* Sums of rows m0 .. m0+R-1 for the V*16 positions whose first words are at xq (plane stride qs bytes,
 * tap offsets toff), requantised; the positions whose bit of `valid` is set go to consecutive output
 * pixels from y + m * P. */
#define EMBER_QSH_TILE(NAME, R, V)                                                                      \
    static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp, const uint8_t *xq,          \
                     const ptrdiff_t *toff, int taps, ptrdiff_t qs, int quads, unsigned long long valid, \
                     ptrdiff_t pix, const ember_qrq_out *range) {                                       \
        ember_qv a[R][V], x[V];                                                                         \
        const int8_t *w = W, *pf = W + (ptrdiff_t)R * Kp;                                              \
        int r, v, t, q, step = 0;                                                                       \
        for (r = 0; r < R; ++r)                                                                         \
            for (v = 0; v < V; ++v) a[r][v] = (ember_qv){0} + o->corr[m0 + r];                          \
        for (q = 0; q < quads; ++q, xq += qs) { /* K order (c/4, kh, kw, c%4): a quad's taps re-read   \
                                                    the same few lines, then the walk moves on */        \
            t = 0;                                                                                      \
            do { /* taps >= 2: no zero-trip path, so the sums stay in registers */                     \
                if ((step++ & 3) == 0) { /* the next tile's weights, as qgemm.c's tiles do */          \
                    __builtin_prefetch(pf, 0, 2);                                                       \
                    pf += 64;                                                                           \
                }                                                                                       \
                for (v = 0; v < V; ++v) x[v] = *(const ember_qv *)(const void *)(xq + toff[t] + 64 * v); \
                for (r = 0; r < R; ++r) {                                                               \
                    const ember_qv wr = (ember_qv){0} + *(const ember_qi32u *)(const void *)(w + (ptrdiff_t)r * Kp); \
                    for (v = 0; v < V; ++v) a[r][v] = ember_qdot(a[r][v], x[v], wr);                    \
                }                                                                                       \
                w += 4;                                                                                 \
            } while (++t < taps);                                                                       \
        }                                                                                               \
        if (R == 4 && o->blk) { /* a channel quad's words, compressed once (m0 % 4 == 0) */            \
            const ember_qrq_out rg = *range;                                                            \
            const int32_t *const mult = o->mult + m0, *const shift = o->shift + m0;                     \
            ember_qv16_f mf[4];                                                                         \
            EMBER_UNROLL for (r = 0; r < 4; ++r) mf[r] = (ember_qv16_f){0} + ember_qv16_mult(mult[r], shift[r]); \
            EMBER_UNROLL for (v = 0; v < V; ++v) {                                                      \
                const unsigned short k = (unsigned short)(valid >> (16 * v));                           \
                ember_qv16_i w = ember_qrq_words(a[0][v], a[1 % R][v], a[2 % R][v], a[3 % R][v], mf, &rg); \
                if (k != 0xFFFF)                                                                        \
                    w = (ember_qv16_i)__builtin_ia32_compresssi512_mask((ember_qv16i)w, (ember_qv16i){0}, k); \
                ember_qsh_put_words(o, m0, pix, w, __builtin_popcount(k));                              \
                pix += __builtin_popcount(k);                                                           \
            }                                                                                           \
        } else { /* the constants copied first, as in qgemm.c's tiles */                              \
            const ember_qrq_out rg = *range;                                                            \
            const int32_t *const mult = o->mult + m0, *const shift = o->shift + m0;                     \
            uint8_t *const y0 = o->y + m0 * o->rs + pix;                                                \
            const ptrdiff_t rs = o->rs;                                                                 \
            EMBER_UNROLL for (r = 0; r < R; ++r) {                                                      \
                const ember_qv16_f mf = (ember_qv16_f){0} + ember_qv16_mult(mult[r], shift[r]);          \
                uint8_t *y = y0 + r * rs;                                                               \
                EMBER_UNROLL for (v = 0; v < V; ++v) {                                                  \
                    const unsigned short k = (unsigned short)(valid >> (16 * v));                       \
                    ember_qv16_i s = (ember_qv16_i)a[r][v];                                             \
                    if (rg.limit) s = ember_qv16_limit(s, rg.lim);                                      \
                    if (k != 0xFFFF) /* drop the padding columns' lanes: the rest are consecutive pixels */ \
                        s = (ember_qv16_i)__builtin_ia32_compresssi512_mask((ember_qv16i)s, (ember_qv16i){0}, k); \
                    ember_qv16_store(y, ember_qv16_requant(s, mf, &rg.q), __builtin_popcount(k));       \
                    y += __builtin_popcount(k);                                                         \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
/* not inlined: each keeps its own registers */
#define EMBER_QSH_DECL(NAME)                                                                            \
    __attribute__((noinline)) static void NAME(const ember_qout *o, int m0, const int8_t *W, int Kp,    \
                                               const uint8_t *xq, const ptrdiff_t *toff, int taps,      \
                                               ptrdiff_t qs, int quads, unsigned long long valid,       \
                                               ptrdiff_t pix, const ember_qrq_out *range)
EMBER_QSH_DECL(ember_qsh_tile4);
EMBER_QSH_DECL(ember_qsh_tile3);
EMBER_QSH_DECL(ember_qsh_tile2);
EMBER_QSH_DECL(ember_qsh_tile1);
EMBER_QSH_DECL(ember_qsh_row);
EMBER_QSH_TILE(ember_qsh_tile4, 4, 4)
EMBER_QSH_TILE(ember_qsh_tile3, 4, 3)
EMBER_QSH_TILE(ember_qsh_tile2, 4, 2)
EMBER_QSH_TILE(ember_qsh_tile1, 4, 1)
EMBER_QSH_TILE(ember_qsh_row, 1, 4)
#endif

/* Stride phases: input row r (of the zero-point-padded image) is row r / sh of phase r % sh, column c
 * is column c / sw of phase c % sw. A tap (kh, kw) reads phase (kh*dh % sh, kw*dw % sw) at offset
 * (kh*dh / sh, kw*dw / sw) from the output position. Only the phases some tap reads get a plane: phase
 * ph's place among those of a dimension (k taps, dilation d, stride s); ph = s gives their count. */
EMBER_INLINE int ember_qsh_rank(int k, int d, int s, int ph) {
    int n = 0, f, t;
    for (f = 0; f < ph; ++f)
        for (t = 0; t < k; ++t)
            if (t * d % s == f) {
                ++n;
                break;
            }
    return n;
}
EMBER_INLINE int ember_qsh_planes(const int32_t *p) {
    return ember_qsh_rank(p[EMBER_GEO_K_H], p[EMBER_GEO_DIL_H], p[EMBER_GEO_STRIDE_H], p[EMBER_GEO_STRIDE_H]) *
           ember_qsh_rank(p[EMBER_GEO_K_W], p[EMBER_GEO_DIL_W], p[EMBER_GEO_STRIDE_W], p[EMBER_GEO_STRIDE_W]);
}
/* A phase plane's rows and columns: the output's plus the kernel's reach in that phase. */
EMBER_INLINE int ember_qsh_rows(const int32_t *p) {
    return p[EMBER_GEO_OUT_H] + (p[EMBER_GEO_K_H] - 1) * p[EMBER_GEO_DIL_H] / p[EMBER_GEO_STRIDE_H];
}
EMBER_INLINE int ember_qsh_cols(const int32_t *p) {
    return p[EMBER_GEO_OUT_W] + (p[EMBER_GEO_K_W] - 1) * p[EMBER_GEO_DIL_W] / p[EMBER_GEO_STRIDE_W];
}
/* Words of a plane: its image, then room for the last block's reads past it. */
EMBER_INLINE ptrdiff_t ember_qsh_plane(const int32_t *p) {
    return (ptrdiff_t)ember_qsh_rows(p) * ember_qsh_cols(p) + 64 +
           (p[EMBER_GEO_K_W] - 1) * p[EMBER_GEO_DIL_W] / p[EMBER_GEO_STRIDE_W];
}
/* r[i] = x[i * s] for i < n. */
static void ember_qsh_stride(uint8_t *r, const uint8_t *x, int n, int s) {
    int i;
#ifdef EMBER_QGATHER2
    if (s == 2) {
        ember_qgather2(r, x, n);
        return;
    }
#endif
    for (i = 0; i < n; ++i) r[i] = x[(ptrdiff_t)i * s];
}
/* d[i] = word (XOR flip4) of pixel p0 + i * s (i < n) of one channel quad of a channel-blocked tensor
 * (qgemm.c ember_qblk_at): xq is the quad's first word, bs the bytes per block of 64 pixels. */
static void ember_qblk_words(uint32_t *EMBER_RESTRICT d, const uint8_t *xq, ptrdiff_t bs, ptrdiff_t p0, int n, int s,
                             uint32_t flip4) {
    int i = 0;
    if (s == 1)
        while (i < n) { /* runs within a block are contiguous words */
            const ptrdiff_t q = p0 + i;
            const int k = n - i < 64 - (int)(q & 63) ? n - i : 64 - (int)(q & 63);
            ember_qwords(d + i, (const uint32_t *)(const void *)(xq + ember_qblk_off(q, 0, bs)), k, flip4);
            i += k;
        }
#if EMBER_HAVE_AVX512
    if (s == 2) { /* within a block, 16 words at a time from 32 by a two-table permute */
        typedef uint32_t ember_qw16 __attribute__((vector_size(64), may_alias, aligned(4)));
        const ember_qw16 idx = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
        while (i < n) {
            const ptrdiff_t q = p0 + 2 * (ptrdiff_t)i;
            const int left = 64 - (int)(q & 63), k0 = (left + 1) / 2, k = n - i < k0 ? n - i : k0;
            const uint32_t *src = (const uint32_t *)(const void *)(xq + ember_qblk_off(q, 0, bs));
            int j;
            for (j = 0; j < k; j += 16) {
                const int m = k - j < 16 ? k - j : 16, words = 2 * m - 1; /* read: words 0 .. 2m-2 */
                const unsigned short lo = words >= 16 ? 0xFFFF : (unsigned short)((1u << words) - 1);
                const unsigned short hi = words <= 16 ? 0 : (unsigned short)((1u << (words - 16)) - 1);
                ember_qw16 a, b;
                __asm__("vmovdqu32 %1, %0%{%2%}%{z%}" : "=v"(a) : "m"(*(const ember_qw16 *)(src + 2 * j)), "Yk"(lo));
                __asm__("vmovdqu32 %1, %0%{%2%}%{z%}" : "=v"(b) : "m"(*(const ember_qw16 *)(src + 2 * j + 16)), "Yk"(hi));
                __asm__("vpermt2d %2, %1, %0" : "+v"(a) : "v"(idx), "v"(b));
                a ^= flip4;
                __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qw16 *)(void *)(d + i + j)) : "v"(a),
                        "Yk"((unsigned short)(m == 16 ? 0xFFFF : (1u << m) - 1)));
            }
            i += k;
        }
    }
#else
    if (s == 2) /* within a block, every other word of one run (the loop below, with its block offset per
                   word, became AVX2 gathers: a ResNet downsample's planes took a sixth of its time) */
        while (i < n) {
            const ptrdiff_t q = p0 + 2 * (ptrdiff_t)i;
            const int left = 64 - (int)(q & 63), k0 = (left + 1) / 2, k = n - i < k0 ? n - i : k0;
            const ember_qu32a *src = (const ember_qu32a *)(const void *)(xq + ember_qblk_off(q, 0, bs));
            int j = 0;
#if EMBER_HAVE_AVX2
            typedef uint32_t ember_qw8 __attribute__((vector_size(32)));
            typedef uint32_t ember_qw8u __attribute__((vector_size(32), may_alias, aligned(4)));
            for (; j + 8 <= k && 2 * j + 16 <= left; j += 8) { /* 16 words of the run, its even ones kept */
                const ember_qw8 a = *(const ember_qw8u *)(src + 2 * j), b = *(const ember_qw8u *)(src + 2 * j + 8);
#if EMBER_CLANG
                const ember_qw8 e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
#else
                const ember_qw8 e = __builtin_shuffle(a, b, (ember_qw8){0, 2, 4, 6, 8, 10, 12, 14});
#endif
                *(ember_qw8u *)(void *)(d + i + j) = e ^ flip4;
            }
#endif
            for (; j < k; ++j) d[i + j] = src[2 * j] ^ flip4;
            i += k;
        }
#endif
    for (; i < n; ++i) {
        const ptrdiff_t q = p0 + (ptrdiff_t)i * s;
        d[i] = *(const ember_qu32a *)(const void *)(xq + ember_qblk_off(q, 0, bs)) ^ flip4;
    }
}

/* Xp for the C channels of one image x (zero point in the view: pad4's bytes): per channel quad, the
 * planes of the phases taps read, in row-phase then column-phase order. tmp: 4 * cols bytes. blk: x is
 * channel-blocked (qgemm.c ember_qblk_at; C % 4 == 0), its words copied instead of interleaved; nhwc: x is
 * channels-last (qpack.c ember_qnhwc_words). */
static void ember_qsh_fill(uint32_t *xp, const uint8_t *x, const int32_t *p, uint32_t flip4, uint32_t pad4,
                           uint8_t *tmp, int blk, int nhwc) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], sh = p[EMBER_GEO_STRIDE_H],
              sw = p[EMBER_GEO_STRIDE_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int Hq = ember_qsh_rows(p), Wq = ember_qsh_cols(p);
    const ptrdiff_t s_in = (ptrdiff_t)H * W, plane = ember_qsh_plane(p);
    int cq, a, b, r, c, t;
    for (cq = 0; cq < (C + 3) / 4; ++cq) {
        const uint8_t *xc = x + 4 * cq * s_in;
        uint32_t *d = xp + (ptrdiff_t)cq * ember_qsh_planes(p) * plane;
        ptrdiff_t ch[4]; /* the quad's channels from xc; those past C (their weights are 0) read the first */
        for (t = 0; t < 4; ++t) ch[t] = 4 * cq + t < C ? t * s_in : 0;
        for (a = 0; a < sh; ++a) {
            if (ember_qsh_rank(p[EMBER_GEO_K_H], p[EMBER_GEO_DIL_H], sh, a + 1) ==
                ember_qsh_rank(p[EMBER_GEO_K_H], p[EMBER_GEO_DIL_H], sh, a))
                continue; /* unread */
            for (b = 0; b < sw; ++b) {
                /* columns [c0, e1) hold input columns c * sw + b - pl */
                const int c00 = pl > b ? (pl - b + sw - 1) / sw : 0, c0 = c00 < Wq ? c00 : Wq;
                const int last = (W - 1 + pl - b) / sw, e1 = W - 1 + pl - b < 0 ? 0 : last + 1 < Wq ? last + 1 : Wq;
                if (ember_qsh_rank(p[EMBER_GEO_K_W], p[EMBER_GEO_DIL_W], sw, b + 1) ==
                    ember_qsh_rank(p[EMBER_GEO_K_W], p[EMBER_GEO_DIL_W], sw, b))
                    continue;
                for (r = 0; r < Hq; ++r, d += Wq) {
                    const int ih = r * sh + a - pt;
                    const uint8_t *src = xc + (ptrdiff_t)ih * W + (ptrdiff_t)c0 * sw + b - pl;
                    if (ih < 0 || ih >= H || e1 <= c0) {
                        for (c = 0; c < Wq; ++c) d[c] = pad4;
                        continue;
                    }
                    for (c = 0; c < c0; ++c) d[c] = pad4;
                    if (nhwc) {
                        ember_qnhwc_words(d + c0, x + ((ptrdiff_t)ih * W + (ptrdiff_t)c0 * sw + b - pl) * C + 4 * cq,
                                             C, cq, sw, e1 - c0, flip4);
                    } else if (blk) {
                        ember_qblk_words(d + c0, x + (ptrdiff_t)256 * cq, (ptrdiff_t)64 * C,
                                         (ptrdiff_t)ih * W + (ptrdiff_t)c0 * sw + b - pl, e1 - c0, sw, flip4);
                    } else if (sw == 1) {
                        ember_qinterleave((uint8_t *)(void *)(d + c0), src, src + ch[1], src + ch[2], src + ch[3],
                                          e1 - c0, flip4);
                    } else { /* every sw-th byte of the four channel rows first */
                        for (t = 0; t < 4; ++t) ember_qsh_stride(tmp + t * Wq, src + ch[t], e1 - c0, sw);
                        ember_qinterleave((uint8_t *)(void *)(d + c0), tmp, tmp + Wq, tmp + 2 * Wq, tmp + 3 * Wq,
                                          e1 - c0, flip4);
                    }
                    for (c = e1; c < Wq; ++c) d[c] = pad4;
                }
                for (c = 0; c < plane - (ptrdiff_t)Hq * Wq; ++c) d[c] = pad4; /* the margin */
                d += plane - (ptrdiff_t)Hq * Wq;
            }
        }
    }
}

/* X block (qgemm.c) of output pixels pix .. pix + pb - 1 from the planes: for each (quad, tap) row
 * of K, the pixels' words as one run per output row. */
static void ember_qsh_gather(uint8_t *X, const uint32_t *xp, const int32_t *p, const ptrdiff_t *toff, ptrdiff_t pix,
                             int pb) {
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], OW = p[EMBER_GEO_OUT_W], Wq = ember_qsh_cols(p);
    const ptrdiff_t qs = ember_qsh_planes(p) * ember_qsh_plane(p);
    int cq, t;
    for (cq = 0; cq < (p[EMBER_GEO_C] + 3) / 4; ++cq)
        for (t = 0; t < KH * KW; ++t, X += 4 * EMBER_QPB) {
            const uint32_t *src = xp + cq * qs + toff[t] / 4;
            int j = 0, oh = (int)(pix / OW), ow = (int)(pix % OW);
            while (j < pb) {
                const int n = OW - ow < pb - j ? OW - ow : pb - j;
                ember_qwords((uint32_t *)(void *)X + j, src + (ptrdiff_t)oh * Wq + ow, n, 0);
                j += n;
                ow = 0;
                ++oh;
            }
        }
}

/* ember_qconv's arguments for a 2-D, one-group convolution with C % 4 == 0, requantised, no weight
 * offsets, its weights in the K order (c/4, kh, kw, c%4) (qshifted.py qconv_shifted_fits); lay as for
 * ember_qconv (x channel-blocked: C % 4 == 0; y: M % 4 == 0), and bit 2: x stored channels-last (ops/shape.py
 * NhwcView: a TFLite model's NHWC image); scratch:
 * Kp * EMBER_QPB bytes, EMBER_QPB + M int32, then (from a 64-byte boundary) C/4 times ember_qsh_planes
 * planes of ember_qsh_plane words, then 4 * ember_qsh_cols bytes. With AVX-512 VNNI and the float
 * requantisation, tiles read the planes directly; elsewhere each block of pixels is gathered from them
 * (still no per-tap bounds) and multiplied as ember_qconv does. p0, p1: the output pixels [p0, p1) of each
 * image are computed (0, P: all; a thread's part, ops/split.py, from a whole block of EMBER_QPB pixels),
 * each exactly as the whole call computes it (a lane's sum does not depend on its block), though every
 * part fills the whole planes. my: the channels of a channel-blocked y's blocks (M, or more where y points
 * at a thread's part of its channels: the block stride stays 64 * my bytes). */
static void ember_qconv_shifted(void *y, int kind, const void *x, int x_sgn, int32_t xz, const int32_t *p, int N,
                                int M, const int8_t *W, const int32_t *bias, const int32_t *rowsum,
                                const int32_t *mult, const int32_t *shift, const int32_t *out, int lay, uint8_t *scratch,
                                ptrdiff_t p0, ptrdiff_t p1, int my) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W],
              OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W], taps = KH * KW, quads = (C + 3) / 4;
    const int Kp = 4 * quads * taps;
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], Wq = ember_qsh_cols(p),
              ncol = ember_qsh_rank(KW, p[EMBER_GEO_DIL_W], sw, sw);
    const ptrdiff_t P = (ptrdiff_t)OH * OW, pend = p1 < P ? p1 : P, plane = ember_qsh_plane(p), qs = ember_qsh_planes(p) * plane;
    uint8_t *X = scratch;
    int32_t *colsum = (int32_t *)(void *)(scratch + EMBER_QSCRATCH_X(Kp)), *corr = colsum + EMBER_QPB;
    uint32_t *xp = (uint32_t *)(void *)(scratch + ((EMBER_QSCRATCH_X(Kp) + 4 * EMBER_QPB + 4 * M + 63) & ~63));
    uint8_t *tmp = (uint8_t *)(xp + quads * qs);
    ptrdiff_t toff[EMBER_QSH_TAPS], pix;
    ember_qout o;
    uint8_t flip;
    const int32_t zv = ember_qview(x_sgn, xz, &flip);
    int n, t;
    ember_qout_init(&o, kind, mult, shift, out);
#ifdef EMBER_QRQ2
    o.w127 = ember_qw127(out, W, (ptrdiff_t)M * Kp);
#endif
    o.blk = lay >> 1 & 1;
    o.rs = o.blk ? 64 * my : P;
    o.ps = o.blk ? 4 : 1;
    o.corr = corr;
    o.wofs = 0;
    o.colsum = colsum; /* unread (no weight offsets), but a real array */
    o.row = 0;
    for (t = 0; t < taps; ++t) { /* tap (kh, kw): bytes from a position's word to its input word */
        const int rh = t / KW * p[EMBER_GEO_DIL_H], rw = t % KW * p[EMBER_GEO_DIL_W];
        const int slot = ember_qsh_rank(KH, p[EMBER_GEO_DIL_H], sh, rh % sh) * ncol +
                         ember_qsh_rank(KW, p[EMBER_GEO_DIL_W], sw, rw % sw);
        toff[t] = 4 * (slot * plane + (ptrdiff_t)(rh / sh) * Wq + rw / sw);
    }
    ember_qcorr(corr, M, Kp, zv, bias, rowsum, 0);
    for (n = 0; n < N; ++n) {
        const ptrdiff_t s_in = (ptrdiff_t)H * p[EMBER_GEO_IN_W];
        o.y = (uint8_t *)y + n * (o.blk ? (P + 63) / 64 * 64 * my : P * M);
        ember_qsh_fill(xp, (const uint8_t *)x + n * (lay & 1 ? (s_in + 63) / 64 * 64 : s_in) * C, p,
                       flip * 0x01010101u, (uint32_t)(uint8_t)(xz ^ flip) * 0x01010101u, tmp, lay & 1, lay >> 2 & 1);
#if defined(EMBER_QRQ) && EMBER_QMR == 4
        {
            ember_qrq_out range;
            /* the positions of output pixels p0 and pend (the end of the output: OH * Wq); bytes between quads */
            const ptrdiff_t Q = pend / OW * Wq + pend % OW, qb = 4 * qs;
            ptrdiff_t q0;
            if (ember_qrq_setup(&o, &range, M) && range.tfl < 0) { /* the float path's (TFLite's: below) */
                for (q0 = p0 / OW * Wq + p0 % OW, pix = p0; q0 < Q; q0 += 64) {
                    const uint8_t *xq = (const uint8_t *)(xp + q0);
                    const int nv = Q - q0 >= 64 ? 4 : (int)((Q - q0 + 15) / 16);
                    unsigned long long valid = 0;
                    int j, m0;
                    for (j = 0; j < 64; ++j) /* positions inside the output (not past it, not a padding column) */
                        if (q0 + j < Q && (q0 + j) % Wq < OW) valid |= 1ull << j;
                    for (m0 = 0; m0 + 4 <= M; m0 += 4) {
                        const int8_t *w = W + (ptrdiff_t)m0 * Kp;
                        if (nv == 4) ember_qsh_tile4(&o, m0, w, Kp, xq, toff, taps, qb, quads, valid, pix, &range);
                        else if (nv == 3) ember_qsh_tile3(&o, m0, w, Kp, xq, toff, taps, qb, quads, valid, pix, &range);
                        else if (nv == 2) ember_qsh_tile2(&o, m0, w, Kp, xq, toff, taps, qb, quads, valid, pix, &range);
                        else ember_qsh_tile1(&o, m0, w, Kp, xq, toff, taps, qb, quads, valid, pix, &range);
                    }
                    for (; m0 < M; ++m0)
                        ember_qsh_row(&o, m0, W + (ptrdiff_t)m0 * Kp, Kp, xq, toff, taps, qb, quads, valid, pix,
                                      &range);
                    pix += __builtin_popcountll(valid);
                }
                continue;
            }
        }
#endif
        for (pix = p0; pix < pend; pix += EMBER_QPB) {
            const int pb = pend - pix < EMBER_QPB ? (int)(pend - pix) : EMBER_QPB;
            ember_qsh_gather(X, xp, p, toff, pix, pb);
            ember_qgemm_block(&o, W, M, Kp, X, pix, pb);
        }
    }
}
/*@end*/
