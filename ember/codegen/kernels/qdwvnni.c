/* Depthwise integer convolution on AVX-512 VBMI + VNNI, channel-blocked: 16 output channels are the 16
 * lanes of a vector, so every tap is one byte dot product for 16 channels and nothing is per channel.
 *
 * The 16 channels' inputs are first transposed into a padded pixel-major block Xb[row][col][16 channels]
 * (bytes in the uint8 view: int8 ^ 0x80; zero point zv; padding holds zv, so it adds nothing to
 * sum w*(x - zv) = sum w*x - zv*sum w). For one output pixel and one kernel row, the 64 bytes at the
 * first tap's pixel are four consecutive pixels x 16 channels: one VPERMB turns them into each channel's
 * four tap bytes as one word, one VPDPBUSD adds that times the channel's four weights (a 4th weight of 0
 * for 3-wide kernels). Sixteen output pixels' sums are requantised in registers (exact 64-bit fixed point,
 * per channel multiplier and shift), transposed back with two-table permutes and stored channel by
 * channel. Needs: 2-D, kernel column dilation 1, weights that fit int8; anything else takes qdwconv.c's
 * general path.
 * Channel-blocked tensors (passes/int8_layout.py, qgemm.c ember_qblk_at; multiplier 1): the four channel
 * quads' words of 16 pixels are read as four vectors and transposed by dword permutes into Xb, and the
 * 16 pixels' outputs are transposed back into four quads' words, one store each, instead of the byte
 * transposes of NCHW planes. */

/*@kernel ember_qdw_vnni requires ember_qv16 ember_qblk ember_conv_geo*/
#if EMBER_HAVE_AVX512_VBMI && EMBER_HAVE_AVX512_VNNI && defined(EMBER_QV16)
#define EMBER_QDW_VNNI 1
typedef uint8_t ember_qdv_b64 __attribute__((vector_size(64)));
typedef uint8_t ember_qdv_b64u __attribute__((vector_size(64), aligned(1), may_alias));
typedef uint8_t ember_qdv_b16 __attribute__((vector_size(16)));
typedef uint8_t ember_qdv_b16u __attribute__((vector_size(16), aligned(1), may_alias));
typedef uint8_t ember_qdv_b8 __attribute__((vector_size(8)));
typedef int32_t ember_qdv_i16 __attribute__((vector_size(64)));
typedef unsigned long long ember_qdv_m64;

EMBER_INLINE ember_qdv_i16 ember_qdv_dot(ember_qdv_i16 acc, ember_qdv_b64 pixels, ember_qdv_b64 idx, ember_qdv_i16 w) {
    ember_qdv_b64 x;
    __asm__("vpermb %2, %1, %0" : "=v"(x) : "v"(idx), "v"(pixels));
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
    return acc;
}
/* Byte i of the result: byte idx[i] % 64 of a (idx[i] < 64) or of b. */
EMBER_INLINE ember_qdv_b64 ember_qdv_perm2(ember_qdv_b64 a, ember_qdv_b64 idx, ember_qdv_b64 b) {
    __asm__("vpermt2b %2, %1, %0" : "+v"(a) : "v"(idx), "v"(b));
    return a;
}
/* Bytes of b where mask is set, else of a. */
EMBER_INLINE ember_qdv_b64 ember_qdv_blend(ember_qdv_b64 a, ember_qdv_b64 b, ember_qdv_m64 mask) {
    ember_qdv_b64 r;
    __asm__("vpblendmb %2, %1, %0%{%3%}" : "=v"(r) : "v"(a), "v"(b), "Yk"(mask));
    return r;
}
/* 16 bytes at p where mask is set, else 0. */
EMBER_INLINE ember_qdv_b16 ember_qdv_load16(const uint8_t *p, unsigned short mask) {
    ember_qdv_b16 r;
    __asm__("vmovdqu8 %1, %0%{%2%}%{z%}" : "=v"(r) : "m"(*(const ember_qdv_b16u *)(const void *)p), "Yk"(mask));
    return r;
}
/* v with x copied into its 128-bit lanes whose dword mask bits are set. x is first inserted into the low
 * lane of a 512-bit register t (whose other lanes are never read): operands name their own registers,
 * no %g modifier for x's zmm register, which clang (zig cc, the x86_64 target's compiler) lacks. */
EMBER_INLINE ember_qdv_b64 ember_qdv_put16(ember_qdv_b64 v, ember_qdv_b16 x, unsigned short lanes) {
    ember_qdv_b64 t;
    __asm__("vinserti32x4 $0, %1, %0, %0" : "=v"(t) : "v"(x));
    __asm__("vshufi32x4 $0, %1, %1, %0%{%2%}" : "+v"(v) : "v"(t), "Yk"(lanes));
    return v;
}
EMBER_INLINE void ember_qdv_store(uint8_t *p, ember_qdv_b64 v, ember_qdv_m64 mask) {
    __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qdv_b64u *)(void *)p) : "v"(v), "Yk"(mask));
}
/* Rows r of a 16 x 16 byte tile M, four to a vector (a[g]: rows 4g .. 4g+3, 16 bytes each), become its
 * columns in the same form (b[h] holds columns 4h .. 4h+3): two-table permutes of rows 0-7 and 8-15. */
EMBER_INLINE void ember_qdv_transpose(ember_qdv_b64 *b, const ember_qdv_b64 *a) {
    ember_qdv_b64 idx;
    int i, h;
    for (i = 0; i < 64; ++i) /* byte 16c + r of a column vector: row r % 8 of its half, column 4h + c */
        idx[i] = (uint8_t)((i % 16 % 8 / 4) * 64 + (i % 16 % 4) * 16 + i / 16);
    for (h = 0; h < 4; ++h, idx += 4)
        b[h] = ember_qdv_blend(ember_qdv_perm2(a[0], idx, a[1]), ember_qdv_perm2(a[2], idx, a[3]),
                               0xFF00FF00FF00FF00ull);
}

/* Dword i of the result: dword idx[i] % 16 of a (idx[i] < 16) or of b. */
EMBER_INLINE ember_qdv_i16 ember_qdv_perm2d(ember_qdv_i16 a, ember_qdv_i16 idx, ember_qdv_i16 b) {
    __asm__("vpermt2d %2, %1, %0" : "+v"(a) : "v"(idx), "v"(b));
    return a;
}
/* Dwords of b where mask is set, else of a. */
EMBER_INLINE ember_qdv_i16 ember_qdv_blendd(ember_qdv_i16 a, ember_qdv_i16 b, unsigned short mask) {
    ember_qdv_i16 r;
    __asm__("vpblendmd %2, %1, %0%{%3%}" : "=v"(r) : "v"(a), "v"(b), "Yk"(mask));
    return r;
}
/* Four channel quads' words of 16 pixels (w[q], lane j: pixel j) as pixels of 16 bytes (b[h]: pixels
 * 4h .. 4h+3, quad q's word at dword q of each). */
EMBER_INLINE void ember_qdv_quads_to_pixels(ember_qdv_b64 *b, const ember_qdv_i16 *w) {
    /* lane i: word i % 4 % 2 * 16 + 4 * h + i / 4 (dword 4i' + q: quad q, pixel 4h + i'), one vector constant */
    const ember_qdv_i16 base = {0, 16, 0, 16, 1, 17, 1, 17, 2, 18, 2, 18, 3, 19, 3, 19};
    int h;
    for (h = 0; h < 4; ++h) {
        const ember_qdv_i16 idx = base + 4 * h;
        b[h] = (ember_qdv_b64)ember_qdv_blendd(ember_qdv_perm2d(w[0], idx, w[1]), ember_qdv_perm2d(w[2], idx, w[3]), 0xCCCC);
    }
}
/* The inverse: pixels of 16 bytes (a[h]: pixels 4h .. 4h+3) as the four quads' words (w[q], lane j: pixel j). */
EMBER_INLINE void ember_qdv_pixels_to_quads(ember_qdv_i16 *w, const ember_qdv_b64 *a) {
    /* lane j: word j % 8 / 4 * 16 + j % 4 * 4 + q (lanes 0-7 from a[0..1], 8-15 from a[2..3]); one vector
     * constant, where lane-by-lane stores made GCC 12 warn that idx may be used uninitialized */
    const ember_qdv_i16 base = {0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28};
    int q;
    for (q = 0; q < 4; ++q) {
        const ember_qdv_i16 idx = base + q;
        w[q] = ember_qdv_blendd(ember_qdv_perm2d((ember_qdv_i16)a[0], idx, (ember_qdv_i16)a[1]),
                                ember_qdv_perm2d((ember_qdv_i16)a[2], idx, (ember_qdv_i16)a[3]), 0xFF00);
    }
}
/* The words of pixels pix .. pix + n - 1 (0 < n <= 16) of the channel quad of a channel-blocked tensor
 * whose first block is at xq (bs bytes per block of 64 pixels): lane j for pixel pix + j, the rest 0.
 * Pixels past the block are the next block's first: a load masked to their lanes from as many words
 * before it (masked-off lanes are not read). */
EMBER_INLINE ember_qdv_i16 ember_qdv_words(const uint8_t *xq, ptrdiff_t bs, ptrdiff_t pix, int n) {
    const int room = 64 - (int)(pix & 63), k = n < room ? n : room;
    const uint8_t *at = xq + ember_qblk_off(pix, 0, bs);
    ember_qdv_i16 r;
    __asm__("vmovdqu32 %1, %0%{%2%}%{z%}" : "=v"(r) : "m"(*(const ember_qv16_iu *)(const void *)at),
            "Yk"((unsigned short)((1u << k) - 1)));
    if (n > k) {
        const uint8_t *next = xq + ((pix >> 6) + 1) * bs - 4 * k;
        __asm__("vmovdqu32 %1, %0%{%2%}" : "+v"(r) : "m"(*(const ember_qv16_iu *)(const void *)next),
                "Yk"((unsigned short)((1u << n) - (1u << k))));
    }
    return r;
}
/* The first n lanes of w to those pixels' words, the same way. */
EMBER_INLINE void ember_qdv_put_words(uint8_t *yq, ptrdiff_t bs, ptrdiff_t pix, ember_qdv_i16 w, int n) {
    const int room = 64 - (int)(pix & 63), k = n < room ? n : room;
    uint8_t *at = yq + ember_qblk_off(pix, 0, bs);
    __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qv16_iu *)(void *)at) : "v"(w), "Yk"((unsigned short)((1u << k) - 1)));
    if (n > k) {
        uint8_t *next = yq + ((pix >> 6) + 1) * bs - 4 * k;
        __asm__("vmovdqu32 %1, %0%{%2%}" : "+m"(*(ember_qv16_iu *)(void *)next) : "v"(w),
                "Yk"((unsigned short)((1u << n) - (1u << k))));
    }
}

/* Xb: Hp x Wp pixels of 16 bytes, padded rows r0 .. r0 + Hp - 1, for the channels whose planes start at
 * rows[l]: input row ih, column iw at padded pixel (ih + pt, iw + pl); everything else zv. bs > 0: the
 * input is channel-blocked (bs bytes per block), rows[q] the first blocks of the four channel quads. cs > 0: the
 * input is stored channels-last (cs bytes per pixel), rows[0] at the block's first channel: each pixel's channels
 * are one load, of the L channels the block has. */
static void ember_qdv_fill(uint8_t *EMBER_RESTRICT xb, const uint8_t *const *rows, ptrdiff_t bs, ptrdiff_t cs, int L,
                           const int32_t *p, int r0, int Hp, int Wp, uint8_t flip, uint8_t zv) {
    const int H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], pt = p[EMBER_GEO_PAD_H], pl = p[EMBER_GEO_PAD_W];
    const int w1 = pl + W < Wp ? pl + W : Wp;
    const ember_qdv_b64 fz = (ember_qdv_b64){0} + zv, ff = (ember_qdv_b64){0} + flip;
    int r, c, g, t;
    for (r = 0; r < Hp; ++r) {
        uint8_t *d = xb + (ptrdiff_t)r * Wp * 16;
        const int ih = r0 + r - pt;
        if (ih < 0 || ih >= H) {
            for (c = 0; c < Wp; c += 4)
                ember_qdv_store(d + 16 * c, fz, Wp - c >= 4 ? ~0ull : (1ull << (16 * (Wp - c))) - 1);
            continue;
        }
        for (c = 0; c < pl; ++c) ember_qdv_store(d + 16 * c, fz, 0xFFFF);
        for (c = w1; c < Wp; ++c) ember_qdv_store(d + 16 * c, fz, 0xFFFF);
        if (cs) {
            const ember_qdv_b16 f16 = (ember_qdv_b16){0} + flip;
            const uint8_t *src = rows[0] + ((ptrdiff_t)ih * W - pl) * cs;
            const unsigned short lanes = (unsigned short)((1u << L) - 1);
            for (c = pl; c < w1; ++c)
                *(ember_qdv_b16u *)(void *)(d + 16 * c) = ember_qdv_load16(src + (ptrdiff_t)c * cs, lanes) ^ f16;
            continue;
        }
        for (c = pl; c < w1; c += 16) { /* 16 columns of the 16 channels, transposed */
            const int n = w1 - c < 16 ? w1 - c : 16;
            const unsigned short in = (unsigned short)((1u << n) - 1);
            const ptrdiff_t at = (ptrdiff_t)ih * W + (c - pl);
            ember_qdv_b64 a[4], b[4];
            if (bs) {
                ember_qdv_i16 w[4];
                for (g = 0; g < 4; ++g) w[g] = ember_qdv_words(rows[g], bs, at, n);
                ember_qdv_quads_to_pixels(b, w);
            } else {
                for (g = 0; g < 4; ++g) { /* channel 4g + t's 16 bytes into 128-bit lane t */
                    a[g] = (ember_qdv_b64){0};
                    for (t = 0; t < 4; ++t)
                        a[g] = ember_qdv_put16(a[g], ember_qdv_load16(rows[4 * g + t] + at, in),
                                               (unsigned short)(0xF << (4 * t)));
                }
                ember_qdv_transpose(b, a);
            }
            for (g = 0; g < 4 && 4 * g < n; ++g) { /* pixels c + 4g .. c + 4g + 3 */
                const int k = n - 4 * g < 4 ? n - 4 * g : 4;
                ember_qdv_store(d + 16 * (c + 4 * g), b[g] ^ ff, k == 4 ? ~0ull : (1ull << (16 * k)) - 1);
            }
        }
    }
}
#define EMBER_QDV_LANE(v, k) __asm__("vextracti32x4 $" #k ", %1, %0" : "=v"(lane) : "v"(v))
/* 16 bytes of channel l (lane l % 4 of b[l / 4]) to y, the first n. */
EMBER_INLINE void ember_qdv_put(uint8_t *y, const ember_qdv_b64 *b, int l, int n) {
    ember_qdv_b16 lane;
    switch (l % 4) {
    case 0: EMBER_QDV_LANE(b[l / 4], 0); break;
    case 1: EMBER_QDV_LANE(b[l / 4], 1); break;
    case 2: EMBER_QDV_LANE(b[l / 4], 2); break;
    default: EMBER_QDV_LANE(b[l / 4], 3); break;
    }
    __asm__("vmovdqu8 %1, %0%{%2%}" : "+m"(*(ember_qdv_b16u *)(void *)y) : "v"(lane), "Yk"((unsigned short)((1u << n) - 1)));
}

/* One 16-channel block's constants. */
typedef struct {
    ember_qdv_b64 idx;     /* VPERMB: channel l's word from pixels 0 .. 3 of a 64-byte load */
    ember_qdv_i16 wv[16];  /* per kernel row and group of four taps: each channel's four weights */
    ember_qdv_i16 c;       /* bias - zv * sum(w) */
    ember_qv16_f mf;       /* ember_qv16_mult */
    ember_qv16_out range;
    ember_qt16 tq;         /* TFLite's requantisation instead (tfl) */
    ptrdiff_t rs;          /* bytes from one kernel row to the next in Xb */
    int KH, G, tfl;
} ember_qdv_blk;
/* The 16 channels' requantised output at the pixel whose first tap is at px; k3: a 3x3 (or narrower). */
EMBER_INLINE ember_qv16_b ember_qdv_pixel(const uint8_t *px, const ember_qdv_blk *k, int k3) {
    ember_qdv_i16 acc = k->c; /* the sums start at the channels' corrections */
    int kh, t;
    if (k3) {
        acc = ember_qdv_dot(acc, *(const ember_qdv_b64u *)(const void *)px, k->idx, k->wv[0]);
        acc = ember_qdv_dot(acc, *(const ember_qdv_b64u *)(const void *)(px + k->rs), k->idx, k->wv[1]);
        acc = ember_qdv_dot(acc, *(const ember_qdv_b64u *)(const void *)(px + 2 * k->rs), k->idx, k->wv[2]);
    } else {
        for (kh = 0; kh < k->KH; ++kh)
            for (t = 0; t < k->G; ++t)
                acc = ember_qdv_dot(acc, *(const ember_qdv_b64u *)(const void *)(px + kh * k->rs + 64 * t), k->idx,
                                    k->wv[kh * k->G + t]);
    }
    if (k->tfl) return __builtin_convertvector(ember_qt16_rq(acc, &k->tq), ember_qv16_b);
    return ember_qv16_requant(acc, k->mf, &k->range);
}
/* Four 16-byte pixels as the 128-bit lanes of one vector. */
EMBER_INLINE ember_qdv_b64 ember_qdv_join(ember_qv16_b p0, ember_qv16_b p1, ember_qv16_b p2, ember_qv16_b p3) {
    ember_qdv_b64 r;
    /* each lane inserted, the first too (no %g modifier: clang has none) */
    __asm__("vinserti32x4 $0, %1, %0, %0\n\tvinserti32x4 $1, %2, %0, %0\n\tvinserti32x4 $2, %3, %0, %0\n\t"
            "vinserti32x4 $3, %4, %0, %0"
            : "=&v"(r) : "v"(p0), "v"(p1), "v"(p2), "v"(p3));
    return r;
}
#define EMBER_QDV_PX(j) ember_qdv_pixel(px[j], k, k3)
/* Sixteen output pixels (first taps at px[j]) of the block's L channels, the first nq stored at y
 * (channel l at y + l * P); bs > 0: y is channel-blocked (bs bytes per block), y the first block of the
 * first quad, the pixels from pix; ps > 0: y is stored channels-last (ps bytes per pixel), y at the first pixel's
 * first channel of the block. */
EMBER_INLINE void ember_qdv_tile(uint8_t *y, ptrdiff_t P, ptrdiff_t bs, ptrdiff_t ps, ptrdiff_t pix, int L, int nq,
                                 const uint8_t *const *px, const ember_qdv_blk *k, int k3) {
    ember_qdv_b64 a[4], b[4];
    int l;
    a[0] = ember_qdv_join(EMBER_QDV_PX(0), EMBER_QDV_PX(1), EMBER_QDV_PX(2), EMBER_QDV_PX(3));
    a[1] = ember_qdv_join(EMBER_QDV_PX(4), EMBER_QDV_PX(5), EMBER_QDV_PX(6), EMBER_QDV_PX(7));
    a[2] = ember_qdv_join(EMBER_QDV_PX(8), EMBER_QDV_PX(9), EMBER_QDV_PX(10), EMBER_QDV_PX(11));
    a[3] = ember_qdv_join(EMBER_QDV_PX(12), EMBER_QDV_PX(13), EMBER_QDV_PX(14), EMBER_QDV_PX(15));
    if (ps) { /* pixel j's channels are lane j % 4 of a[j / 4] */
        for (l = 0; l < nq; ++l) ember_qdv_put(y + l * ps, a, l, L);
        return;
    }
    if (bs) {
        ember_qdv_i16 w[4];
        ember_qdv_pixels_to_quads(w, a);
        for (l = 0; l < L; l += 4) ember_qdv_put_words(y + 64 * l, bs, pix, w[l / 4], nq);
        return;
    }
    ember_qdv_transpose(b, a);
    for (l = 0; l < L; ++l) ember_qdv_put(y + l * P, b, l, nq);
}

/* Whether ember_qdv_conv takes geometry p. */
static int ember_qdv_fits(const int32_t *p) {
    return p[EMBER_GEO_IN_D] == 1 && p[EMBER_GEO_K_D] == 1 && p[EMBER_GEO_OUT_D] == 1 && p[EMBER_GEO_DIL_W] == 1 &&
           p[EMBER_GEO_K_H] * ((p[EMBER_GEO_K_W] + 3) / 4) <= 16;
}
/* Depthwise, kind 1 (requantised int8/uint8 outputs), M = C * multiplier channels; w: M x kh x kw int16
 * weights (minus their zero point) that fit int8; out = [zp, lo, hi, sums below 2^24 (qvec.c)], or TFLite's shift
 * codes that ember_qt16_kind takes (tkind, its result; -1: ember's own, then out[3] holds). scratch: `room` bytes,
 * at least one band of input rows (Xb pixel rows for one output row). lay: bit 0, x is channel-blocked, bit 1, y
 * (channels in fours; for x, multiplier 1); bit 2, x is stored channels-last (multiplier 1), bit 3, y (ops/shape.py
 * NhwcView); blocks of mb channels (M, or more where x and y point at a
 * thread's part of the channel quads). words (or NULL): each block's wv and c as ember_qdv_blk holds them, made at
 * compile time (ops/qlinear.py dw_words): (KH * G + 1) x 16 int32 a block. */
static void ember_qdv_conv(uint8_t *y, const uint8_t *x, int x_sgn, int32_t xz, const int32_t *p, int N, int M,
                           const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *shift,
                           const int32_t *out, int tkind, int lay, uint8_t *scratch, ptrdiff_t room, int mb,
                           const int32_t *words) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], W = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H],
              KW = p[EMBER_GEO_K_W], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int sh = p[EMBER_GEO_STRIDE_H], sw = p[EMBER_GEO_STRIDE_W], dh = p[EMBER_GEO_DIL_H], G = (KW + 3) / 4,
              mult_c = M / C;
    const int Wp = (OW - 1) * sw + 4 * G, span = (KH - 1) * dh + 1; /* Xb width; input rows of one output row */
    const ptrdiff_t P = (ptrdiff_t)OH * OW, prow = (ptrdiff_t)Wp * 16;
    const ptrdiff_t xbs = lay & 1 ? 64 * (ptrdiff_t)mb : 0, ybs = lay & 2 ? 64 * (ptrdiff_t)mb : 0; /* bytes per block */
    const ptrdiff_t x_img = xbs ? ((ptrdiff_t)H * W + 63) / 64 * xbs : (ptrdiff_t)C * H * W;
    const ptrdiff_t y_img = ybs ? (P + 63) / 64 * ybs : M * P;
    const int band = (int)((room / prow - span) / sh + 1) < OH ? (int)((room / prow - span) / sh + 1) : OH;
    const uint8_t flip = x_sgn ? 0x80 : 0, zv = (uint8_t)(xz + (x_sgn ? 128 : 0));
    ember_qdv_blk blk, *k = &blk;
    int32_t lane_mult[16], lane_shift[16];
    int n, m0, l, kh, t, b, oh0, j;
    for (l = 0; l < 16; ++l) /* the word of channel l: its bytes at pixels 0 .. 3 of a 64-byte load */
        for (b = 0; b < 4; ++b) k->idx[4 * l + b] = (uint8_t)(16 * b + l);
    k->range = ember_qv16_range(out);
    k->rs = (ptrdiff_t)dh * prow;
    k->KH = KH;
    k->G = G;
    k->tfl = tkind >= 0;
    for (n = 0; n < N; ++n)
        for (m0 = 0; m0 < M; m0 += 16) {
            const int L = M - m0 < 16 ? M - m0 : 16;
            const uint8_t *rows[16];
            int32_t sumw;
            for (l = 0; l < 16; ++l) {
                const int m = m0 + (l < L ? l : 0);
                const int16_t *wm = w + (ptrdiff_t)m * KH * KW;
                rows[l] = xbs      ? x + n * x_img + (l < 4 ? (m0 + 4 * l < M ? m0 + 4 * l : m0) : 0) / 4 * 256
                          : lay & 4 ? x + n * x_img + m0
                                    : x + n * x_img + (ptrdiff_t)(m / mult_c) * H * W;
                k->mf[l] = k->tfl ? 0.0f : ember_qv16_mult(mult[m], shift[m]);
                lane_mult[l] = mult[m];
                lane_shift[l] = shift[m];
                if (words) continue;
                sumw = 0;
                for (kh = 0; kh < KH; ++kh)
                    for (t = 0; t < G; ++t) {
                        uint32_t word = 0;
                        for (b = 0; b < 4 && 4 * t + b < KW && l < L; ++b) {
                            word |= (uint32_t)(uint8_t)(int8_t)wm[kh * KW + 4 * t + b] << (8 * b);
                            sumw += wm[kh * KW + 4 * t + b];
                        }
                        k->wv[kh * G + t][l] = (int32_t)word;
                    }
                k->c[l] = (bias ? bias[m] : 0) - (int32_t)zv * sumw;
            }
            if (words) { /* the block's words and corrections, made at compile time (ops/qlinear.py dw_words) */
                const int32_t *bw = words + (ptrdiff_t)(m0 / 16) * (KH * G + 1) * 16;
                for (t = 0; t < KH * G; ++t) k->wv[t] = *(const ember_qv16_iu *)(const void *)(bw + 16 * t);
                k->c = *(const ember_qv16_iu *)(const void *)(bw + 16 * KH * G);
            }
            if (k->tfl)
                ember_qt16_init(&k->tq, tkind, *(const ember_qv16_iu *)(const void *)lane_mult,
                                *(const ember_qv16_iu *)(const void *)lane_shift, out);
            for (oh0 = 0; oh0 < OH; oh0 += band) { /* output rows [oh0, oh0 + band): Xb from input row oh0*sh */
                const int nr = OH - oh0 < band ? OH - oh0 : band;
                const ptrdiff_t q0 = (ptrdiff_t)oh0 * OW, q1 = q0 + (ptrdiff_t)nr * OW;
                ptrdiff_t qb;
                ember_qdv_fill(scratch, rows, xbs, lay & 4 ? C : 0, L, p, oh0 * sh, (nr - 1) * sh + span, Wp, flip, zv);
                for (qb = q0; qb < q1; qb += 16) {
                    const int nq = q1 - qb < 16 ? (int)(q1 - qb) : 16;
                    const uint8_t *px[16]; /* each pixel's first tap (past nq: the last pixel again) */
                    int oh = (int)(qb / OW) - oh0, ow = (int)(qb % OW);
                    uint8_t *yb = ybs ? y + n * y_img + m0 / 4 * 256
                                : lay & 8 ? y + n * y_img + qb * M + m0
                                          : y + n * y_img + m0 * P + qb;
                    for (j = 0; j < 16; ++j) {
                        px[j] = scratch + (ptrdiff_t)oh * sh * prow + (ptrdiff_t)ow * sw * 16;
                        if (j + 1 < nq && ++ow == OW) {
                            ow = 0;
                            ++oh;
                        }
                    }
                    if (KH == 3 && G == 1) ember_qdv_tile(yb, P, ybs, lay & 8 ? M : 0, qb, L, nq, px, k, 1);
                    else ember_qdv_tile(yb, P, ybs, lay & 8 ? M : 0, qb, L, nq, px, k, 0);
                }
            }
        }
}
#endif
/*@end*/
