/* The Cortex-M int8 kernels (qarm.c lists their files): the convolution's columns (ember_qa_cols), an output
 * pixel's window widened to int16 less the zero point (ember_qa_col; from an NHWC image ember_qa_col_hwc), two
 * neighbouring windows from shared reads (ember_qa_col2, ember_qa_col2i_t), and a 1x1 layer's columns straight
 * from the channel planes (ember_qa_direct2, ember_qa_direct4). */

/*@kernel ember_qa_cols requires ember_qarm ember_conv_geo*/
#if EMBER_HAVE_ARM_DSP
/* The bytes of the word W as int16 lanes less the zero point (ZZ: in both lanes), E = (b0, b2) and O = (b1,
 * b3). A macro: as an inline function it changed ember_qa_col2's code in some bundles. */
#define EMBER_QA_EO(E, O, W, ZZ)                                         \
    do {                                                                 \
        __asm__("uxtb16 %0, %1" : "=r"(E) : "r"(W));                     \
        __asm__("uxtb16 %0, %1, ror #8" : "=r"(O) : "r"(W));             \
        __asm__("ssub16 %0, %1, %2" : "=r"(E) : "r"(E), "r"(ZZ));        \
        __asm__("ssub16 %0, %1, %2" : "=r"(O) : "r"(O), "r"(ZZ));        \
    } while (0)
#endif
/* col[0 .. Kp): the window of output pixel oh, ow of image xn (in the order channel, kernel row, kernel
 * column) minus the zero point, 0 where it leaves the image, zero-padded to Kp. */
static void ember_qa_col(int16_t *EMBER_RESTRICT col, const uint8_t *EMBER_RESTRICT xn, uint32_t flip, int32_t z2,
                         const int32_t *p, int oh, int ow, int Kp) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], Wd = p[EMBER_GEO_IN_W];
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], DH = p[EMBER_GEO_DIL_H], DW = p[EMBER_GEO_DIL_W];
    const int ih0 = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H], iw0 = ow * p[EMBER_GEO_STRIDE_W] - p[EMBER_GEO_PAD_W];
    const ptrdiff_t S = (ptrdiff_t)H * Wd;
    int16_t *d = col, *const end = col + Kp;
    int c, i, j;
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (KH - 1) * DH < H && iw0 + (KW - 1) * DW < Wd) {
        const uint8_t *xc = xn + (ptrdiff_t)ih0 * Wd + iw0;
#if EMBER_HAVE_ARM_DSP
        if (KW == 3 && DW == 1 && iw0 + 3 < Wd) { /* one 4-byte read per row (stays in the image), widened */
            const uint32_t f4 = flip * 0x01010101u, zz = (uint32_t)(uint16_t)z2 * 0x10001u;
            for (c = 0; c < C; ++c, xc += S)
                for (i = 0; i < KH; ++i, d += 3) {
                    const uint32_t w = *(const ember_qa_u8x4 *)(const void *)(xc + (ptrdiff_t)i * DH * Wd) ^ f4;
                    uint32_t e, o, a;
                    EMBER_QA_EO(e, o, w, zz);
                    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(a) : "r"(e), "r"(o));
                    *(ember_qa_u32 *)(void *)d = a;
                    d[2] = (int16_t)(e >> 16);
                }
        } else
#endif
        if (KW == 3 && DW == 1) { /* the common 3-wide window: no inner loop */
            for (c = 0; c < C; ++c, xc += S)
                for (i = 0; i < KH; ++i, d += 3) {
                    const uint8_t *xr = xc + (ptrdiff_t)i * DH * Wd;
                    d[0] = EMBER_QA_VAL(xr[0], flip, z2);
                    d[1] = EMBER_QA_VAL(xr[1], flip, z2);
                    d[2] = EMBER_QA_VAL(xr[2], flip, z2);
                }
        } else {
            for (c = 0; c < C; ++c, xc += S)
                for (i = 0; i < KH; ++i) {
                    const uint8_t *xr = xc + (ptrdiff_t)i * DH * Wd;
                    for (j = 0; j < KW; ++j) *d++ = EMBER_QA_VAL(xr[j * DW], flip, z2);
                }
        }
    } else if (KW == 3 && DW == 1) { /* a border window: branch-free per element, kernel rows outermost */
        /* Reads clamped into the image, masked to 0 outside it; the masks are the same for every channel. */
        const int16_t m0 = iw0 >= 0 && iw0 < Wd ? -1 : 0, m1 = iw0 + 1 >= 0 && iw0 + 1 < Wd ? -1 : 0;
        const int16_t m2 = iw0 + 2 >= 0 && iw0 + 2 < Wd ? -1 : 0;
        const int o0 = iw0 < 0 ? 0 : iw0 >= Wd ? Wd - 1 : iw0;
        const int o1 = iw0 + 1 < 0 ? 0 : iw0 + 1 >= Wd ? Wd - 1 : iw0 + 1;
        const int o2 = iw0 + 2 < 0 ? 0 : iw0 + 2 >= Wd ? Wd - 1 : iw0 + 2;
        const ptrdiff_t step = (ptrdiff_t)KH * 3;
        for (i = 0; i < KH; ++i) {
            const int ih = ih0 + i * DH;
            int16_t *dc = col + 3 * i;
            if (ih < 0 || ih >= H) {
                for (c = 0; c < C; ++c, dc += step) dc[0] = dc[1] = dc[2] = 0;
                continue;
            }
            {
                const uint8_t *xr = xn + (ptrdiff_t)ih * Wd;
                for (c = 0; c < C; ++c, dc += step, xr += S) {
                    dc[0] = (int16_t)(EMBER_QA_VAL(xr[o0], flip, z2) & m0);
                    dc[1] = (int16_t)(EMBER_QA_VAL(xr[o1], flip, z2) & m1);
                    dc[2] = (int16_t)(EMBER_QA_VAL(xr[o2], flip, z2) & m2);
                }
            }
        }
        d = col + (ptrdiff_t)C * step;
    } else { /* the window's columns inside the image, [jlo, jhi), are the same for every row */
        int jlo = 0, jhi = KW;
        while (jlo < KW && iw0 + jlo * DW < 0) ++jlo;
        while (jhi > jlo && iw0 + (jhi - 1) * DW >= Wd) --jhi;
        for (c = 0; c < C; ++c)
            for (i = 0; i < KH; ++i) {
                const int ih = ih0 + i * DH;
                const uint8_t *xr = xn + c * S + (ptrdiff_t)ih * Wd + iw0;
                if (ih < 0 || ih >= H) {
                    for (j = 0; j < KW; ++j) *d++ = 0;
                    continue;
                }
                for (j = 0; j < jlo; ++j) *d++ = 0;
                for (; j < jhi; ++j) *d++ = EMBER_QA_VAL(xr[j * DW], flip, z2);
                for (; j < KW; ++j) *d++ = 0;
            }
    }
    while (d != end) *d++ = 0;
}
/* ember_qa_col's window from an NHWC image (EMBER_QA_HWC_IN), in the order kernel row, kernel column, channel
 * (the weights are stored so: ops/qarm.py `tap_major`): a kernel row of a window inside the image's columns is
 * one run of KW * C bytes (dilation 1), otherwise each tap's C bytes, widened by ember_qa_widen. */
EMBER_UNUSED static void ember_qa_col_hwc(int16_t *EMBER_RESTRICT col, const uint8_t *EMBER_RESTRICT xn, uint32_t flip,
                                          int32_t z2, const int32_t *p, int oh, int ow, int Kp) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], Wd = p[EMBER_GEO_IN_W];
    const int KH = p[EMBER_GEO_K_H], KW = p[EMBER_GEO_K_W], DH = p[EMBER_GEO_DIL_H], DW = p[EMBER_GEO_DIL_W];
    const int ih0 = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H], iw0 = ow * p[EMBER_GEO_STRIDE_W] - p[EMBER_GEO_PAD_W];
    const int run = DW == 1 && iw0 >= 0 && iw0 + KW <= Wd; /* every kernel row one run */
    int16_t *d = col, *const end = col + Kp;
    int i, j, c;
    for (i = 0; i < KH; ++i) {
        const int ih = ih0 + i * DH;
        if (ih < 0 || ih >= H) {
            for (c = 0; c < KW * C; ++c) *d++ = 0;
        } else if (run) {
            ember_qa_widen(d, xn + ((ptrdiff_t)ih * Wd + iw0) * C, KW * C, flip, z2);
            d += KW * C;
        } else {
            for (j = 0; j < KW; ++j, d += C) {
                const int iw = iw0 + j * DW;
                if (iw < 0 || iw >= Wd)
                    for (c = 0; c < C; ++c) d[c] = 0;
                else
                    ember_qa_widen(d, xn + ((ptrdiff_t)ih * Wd + iw) * C, C, flip, z2);
            }
        }
    }
    while (d != end) *d++ = 0;
}
#if EMBER_HAVE_ARM_DSP
/* ember_qa_col2's stride-2 columns straight in ember_qa_pair_cols' layout (cols: per k pair the word of
 * each column): the R = C * KH window rows (the first at xc, then RS apart within a channel, channels S
 * apart) two at a time, whose 6 k (x0 x1 x2, y0 y1 y2; the second column's x2 x3 x4, y2 y3 y4) are 3
 * k pairs: (x0, x1) (x2, x3), (x2, y0) (x4, y2), (y1, y2) (y3, y4); an odd last row's third k pairs with
 * the padding. `sg` (a constant where inlined): int8 bytes, sign-extended by SXTB16 (no flip). About 30
 * instructions per two rows where the plain columns and their interleaving took about 55. */
EMBER_INLINE void ember_qa_col2i_t(uint32_t *d, const uint8_t *xc, ptrdiff_t S, ptrdiff_t RS, int R, int KH,
                                   int32_t z2, int Kp, int sg) {
    const int32_t zv = sg ? z2 - 128 : z2; /* a value is the extended byte less zv (EMBER_QA_VAL) */
    const uint32_t zz = (uint32_t)(uint16_t)zv * 0x10001u;
    uint32_t *const end = d + Kp;
    const uint8_t *pr = xc;
    int i = 0, r;
#define EMBER_QA_NEXT_ROW (++i == KH ? (i = 0, pr += S - (ptrdiff_t)(KH - 1) * RS) : (pr += RS))
#define EMBER_QA_EXT(E, O, W)                                                     \
    do {                                                                          \
        if (sg) {                                                                 \
            __asm__("sxtb16 %0, %1" : "=r"(E) : "r"(W));                          \
            __asm__("sxtb16 %0, %1, ror #8" : "=r"(O) : "r"(W));                  \
        } else {                                                                  \
            __asm__("uxtb16 %0, %1" : "=r"(E) : "r"(W));                          \
            __asm__("uxtb16 %0, %1, ror #8" : "=r"(O) : "r"(W));                  \
        }                                                                         \
        __asm__("ssub16 %0, %1, %2" : "=r"(E) : "r"(E), "r"(zz));                 \
        __asm__("ssub16 %0, %1, %2" : "=r"(O) : "r"(O), "r"(zz));                 \
    } while (0)
#define EMBER_QA_B4(P) ((uint32_t)(uint16_t)((sg ? (int32_t)(int8_t)(P)[4] : (int32_t)(P)[4]) - zv))
#define EMBER_QA_PAIR(PA, PB)                                                                                          \
    do {                                                                                                               \
        const uint8_t *pa_ = (PA), *pb_ = (PB);                                                                        \
        const uint32_t wa = *(const ember_qa_u8x4 *)(const void *)pa_, wb = *(const ember_qa_u8x4 *)(const void *)pb_; \
        uint32_t ex, ox, ey, oy;                                                                                       \
        EMBER_QA_EXT(ex, ox, wa);                                                                                      \
        EMBER_QA_EXT(ey, oy, wb);                                                                                      \
        d[0] = (ex & 0xffffu) | ox << 16;               /* (x0, x1) */                                                 \
        d[1] = ex >> 16 | (ox & 0xffff0000u);           /* (x2, x3) */                                                 \
        d[2] = ex >> 16 | ey << 16;                     /* (x2, y0) */                                                 \
        d[3] = EMBER_QA_B4(pa_) | (ey & 0xffff0000u);   /* (x4, y2) */                                                 \
        d[4] = (oy & 0xffffu) | (ey & 0xffff0000u);     /* (y1, y2) */                                                 \
        d[5] = oy >> 16 | EMBER_QA_B4(pb_) << 16;       /* (y3, y4) */                                                 \
        d += 6;                                                                                                        \
    } while (0)
    if (KH == 3) { /* two channels' six rows a pair at a time, at fixed offsets */
        const int C = R / 3;
        int c;
        for (c = 0; c + 1 < C; c += 2, pr += 2 * S) {
            EMBER_QA_PAIR(pr, pr + RS);
            EMBER_QA_PAIR(pr + 2 * RS, pr + S);
            EMBER_QA_PAIR(pr + S + RS, pr + S + 2 * RS);
        }
        if (c < C) {
            EMBER_QA_PAIR(pr, pr + RS);
            pr += 2 * RS;
        }
        r = R - (C & 1);
    } else {
        for (r = 0; r + 1 < R; r += 2) {
            const uint8_t *pa = pr;
            EMBER_QA_NEXT_ROW;
            EMBER_QA_PAIR(pa, pr);
            EMBER_QA_NEXT_ROW;
        }
    }
    if (r < R) { /* the last row, its third k before the padding */
        uint32_t ex, ox;
        const uint32_t wa = *(const ember_qa_u8x4 *)(const void *)pr;
        EMBER_QA_EXT(ex, ox, wa);
        d[0] = (ex & 0xffffu) | ox << 16;
        d[1] = ex >> 16 | (ox & 0xffff0000u);
        d[2] = ex >> 16;
        d[3] = EMBER_QA_B4(pr);
        d += 4;
    }
    while (d != end) *d++ = 0;
#undef EMBER_QA_NEXT_ROW
#undef EMBER_QA_EXT
#undef EMBER_QA_B4
#undef EMBER_QA_PAIR
}
#endif
/* The columns of output pixels (oh, ow) and (oh, ow + 1) into t0, t1, as ember_qa_col, for a 3-wide window
 * of column stride 1 or 2 when both lie inside the image: one 4-byte read per channel and kernel row feeds
 * both (their windows share two bytes, or at stride 2 one, the fifth read apart), widened once. Returns 0 (nothing written) otherwise. Not
 * inlined: ember_qa_conv_t's direct (1x1) loop keeps its registers. */
EMBER_NOINLINE static int ember_qa_col2(int16_t *EMBER_RESTRICT t0, int16_t *EMBER_RESTRICT t1, int16_t *EMBER_RESTRICT il,
                                       const uint8_t *EMBER_RESTRICT xn, uint32_t flip, int32_t z2, const int32_t *p,
                                       int oh, int ow, int Kp) {
    const int C = p[EMBER_GEO_C], H = p[EMBER_GEO_IN_H], Wd = p[EMBER_GEO_IN_W], KH = p[EMBER_GEO_K_H];
    const int DH = p[EMBER_GEO_DIL_H];
    const int ih0 = oh * p[EMBER_GEO_STRIDE_H] - p[EMBER_GEO_PAD_H], iw0 = ow * p[EMBER_GEO_STRIDE_W] - p[EMBER_GEO_PAD_W];
    const ptrdiff_t S = (ptrdiff_t)H * Wd, RS = (ptrdiff_t)DH * Wd;
    const int K = C * KH * 3;
    const uint8_t *xc;
    int c, i, k;
    const int s2 = p[EMBER_GEO_STRIDE_W] == 2;
    if ((p[EMBER_GEO_STRIDE_W] != 1 && !s2) || p[EMBER_GEO_K_W] != 3 || p[EMBER_GEO_DIL_W] != 1 || ih0 < 0 ||
        iw0 < 0 || ih0 + (KH - 1) * DH >= H || iw0 + 3 + s2 >= Wd)
        return 0;
    xc = xn + (ptrdiff_t)ih0 * Wd + iw0;
#if EMBER_HAVE_ARM_DSP
    if (s2 && il) { /* interleaved straight into il (returns 2) */
        if (flip)
            ember_qa_col2i_t((uint32_t *)(void *)il, xc, S, RS, C * KH, KH, z2, Kp, 1);
        else
            ember_qa_col2i_t((uint32_t *)(void *)il, xc, S, RS, C * KH, KH, z2, Kp, 0);
        return 2;
    }
#else
    (void)il;
#endif
    if (s2) { /* column stride 2: the windows b0 b1 b2 and b2 b3 b4 from one word and a byte */
        int16_t *d0 = t0, *d1 = t1;
#if EMBER_HAVE_ARM_DSP
        const uint32_t f4 = flip * 0x01010101u, zz = (uint32_t)(uint16_t)z2 * 0x10001u;
#endif
        for (c = 0; c < C; ++c, xc += S) {
            const uint8_t *xr = xc;
            for (i = 0; i < KH; ++i, xr += RS, d0 += 3, d1 += 3) {
#if EMBER_HAVE_ARM_DSP /* e = (b0, b2), o = (b1, b3) less the zero point */
                const uint32_t w = *(const ember_qa_u8x4 *)(const void *)xr ^ f4;
                uint32_t e, o, a, b;
                EMBER_QA_EO(e, o, w, zz);
                __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(a) : "r"(e), "r"(o));
                __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(b) : "r"(o), "r"(e));
                *(ember_qa_u32 *)(void *)d0 = a;
                d0[2] = (int16_t)(e >> 16);
                *(ember_qa_u32 *)(void *)d1 = b;
                d1[2] = EMBER_QA_VAL(xr[4], flip, z2);
#else
                const int16_t v2 = EMBER_QA_VAL(xr[2], flip, z2);
                d0[0] = EMBER_QA_VAL(xr[0], flip, z2);
                d0[1] = EMBER_QA_VAL(xr[1], flip, z2);
                d0[2] = d1[0] = v2;
                d1[1] = EMBER_QA_VAL(xr[3], flip, z2);
                d1[2] = EMBER_QA_VAL(xr[4], flip, z2);
#endif
            }
        }
    } else {
        int16_t *d0 = t0, *d1 = t1;
#if EMBER_HAVE_ARM_DSP
        const uint32_t f4 = flip * 0x01010101u, zz = (uint32_t)(uint16_t)z2 * 0x10001u;
#endif
        for (c = 0; c < C; ++c, xc += S) {
            const uint8_t *xr = xc;
            for (i = 0; i < KH; ++i, xr += RS, d0 += 3, d1 += 3) {
#if EMBER_HAVE_ARM_DSP /* bytes b0..b3: e = (b0, b2), o = (b1, b3) less the zero point */
                const uint32_t w = *(const ember_qa_u8x4 *)(const void *)xr ^ f4;
                uint32_t e, o, a, b;
                EMBER_QA_EO(e, o, w, zz);
                __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(a) : "r"(e), "r"(o));
                __asm__("pkhbt %0, %1, %2" : "=r"(b) : "r"(o), "r"(e));
                *(ember_qa_u32 *)(void *)d0 = a;
                d0[2] = (int16_t)(e >> 16);
                *(ember_qa_u32 *)(void *)d1 = b;
                d1[2] = (int16_t)(o >> 16);
#else
                const int16_t v1 = EMBER_QA_VAL(xr[1], flip, z2), v2 = EMBER_QA_VAL(xr[2], flip, z2);
                d0[0] = EMBER_QA_VAL(xr[0], flip, z2);
                d0[1] = d1[0] = v1;
                d0[2] = d1[1] = v2;
                d1[2] = EMBER_QA_VAL(xr[3], flip, z2);
#endif
            }
        }
    }
    for (k = K; k < Kp; ++k) t0[k] = t1[k] = 0;
    return 1;
}
/* The columns of pixels q and q + 1 of a 1x1 stride-1 layer (xq: pixel q of channel 0; channel planes S
 * bytes apart) straight in ember_qa_pair_cols' interleaved layout: per two channels c, c + 1 the words
 * (c, c + 1) of pixel q, then of pixel q + 1, zero-padded to Kp. With the DSP extension one halfword read
 * per channel (both pixels) and SXTB16/UXTB16 to split the pixels: 11 instructions per channel pair where
 * widening each pixel and interleaving took about 36. */
EMBER_INLINE void ember_qa_direct2(int16_t *EMBER_RESTRICT cols, const uint8_t *EMBER_RESTRICT xq, ptrdiff_t S, int C, int Kp,
                               uint32_t flip, int32_t z2, int fz) {
    int c = 0;
    if (fz) z2 = (int32_t)flip; /* the zero point in the biases (`fz`, ember_qa_conv_t): the bytes' values as they are */
#if EMBER_HAVE_ARM_DSP
    /* In assembly, 11 instructions per channel pair (compiled from C: 16; the zero point folded, 9 or 8).
     * int8 bytes are sign-extended (SXTB16) and less the zero point, uint8 ones zero-extended: the same
     * values as EMBER_QA_VAL. */
    if (C >= 2) {
        uint32_t *d = (uint32_t *)(void *)cols;
        const uint32_t *const dend = d + (C & ~1);
        const uint32_t zz = (uint32_t)(uint16_t)(flip ? z2 - 128 : z2) * 0x10001u;
        uint32_t a, b, e, o;
#define EMBER_QA_STEP2(EXT, SUB)                                                                     \
            "ldrh %[a], [%[x]]\n\t"                                                                  \
            "ldrh %[b], [%[x], %[s]]\n\t"                                                            \
            "add %[x], %[x], %[s2]\n\t"                                                              \
            "orr %[a], %[a], %[b], lsl #16\n\t"                                                      \
            EXT " %[e], %[a]\n\t"                                                                    \
            EXT " %[o], %[a], ror #8\n\t"                                                            \
            SUB                                                                                      \
            "strd %[e], %[o], [%[d]], #8\n\t"
#define EMBER_QA_DIRECT2(BODY)                                                                       \
    __asm__("1:\n\t"                                                                                 \
            BODY                                                                                     \
            "cmp %[d], %[dend]\n\t"                                                                  \
            "bne 1b"                                                                                 \
            : [x] "+&r"(xq), [d] "+&r"(d), [a] "=&r"(a), [b] "=&r"(b), [e] "=&r"(e), [o] "=&r"(o)   \
            : [s] "r"(S), [s2] "r"(2 * S), [zz] "r"(zz), [dend] "r"(dend)                            \
            : "cc", "memory")
#define EMBER_QA_SUB2 "ssub16 %[e], %[e], %[zz]\n\tssub16 %[o], %[o], %[zz]\n\t"
        if (fz && (C & 3) == 0) { /* the zero point folded, two channel pairs per pass: 8 instructions a pair */
            if (flip)
                EMBER_QA_DIRECT2(EMBER_QA_STEP2("sxtb16", "") EMBER_QA_STEP2("sxtb16", ""));
            else
                EMBER_QA_DIRECT2(EMBER_QA_STEP2("uxtb16", "") EMBER_QA_STEP2("uxtb16", ""));
        } else if (fz && flip)
            EMBER_QA_DIRECT2(EMBER_QA_STEP2("sxtb16", ""));
        else if (fz)
            EMBER_QA_DIRECT2(EMBER_QA_STEP2("uxtb16", ""));
        else if (flip)
            EMBER_QA_DIRECT2(EMBER_QA_STEP2("sxtb16", EMBER_QA_SUB2));
        else
            EMBER_QA_DIRECT2(EMBER_QA_STEP2("uxtb16", EMBER_QA_SUB2));
#undef EMBER_QA_SUB2
#undef EMBER_QA_STEP2
#undef EMBER_QA_DIRECT2
        c = C & ~1;
    }
#endif
    for (; c < C; ++c, xq += S) {
        int16_t *d2 = cols + 2 * (c & ~1) + (c & 1);
        d2[0] = EMBER_QA_VAL(xq[0], flip, z2);
        d2[2] = EMBER_QA_VAL(xq[1], flip, z2);
    }
    for (c = C; c < Kp; ++c) {
        int16_t *d2 = cols + 2 * (c & ~1) + (c & 1);
        d2[0] = d2[2] = 0;
    }
}
#if EMBER_HAVE_ARM_DSP
/* ember_qa_direct2's folded case (`fz`, C % 4 == 0, so Kp = C) for pixels q .. q + 3 at once: q and q + 1 into
 * ca, q + 2 and q + 3 into cb. One word read per channel (four pixels), split by SXTB16/UXTB16 into (p0, p2)
 * and (p1, p3), the channel pair's words put together by PKHBT/PKHTB: 14 instructions per channel pair where
 * ember_qa_direct2 takes 18 for the same columns. */
EMBER_INLINE void ember_qa_direct4(int16_t *EMBER_RESTRICT ca, int16_t *EMBER_RESTRICT cb,
                                   const uint8_t *EMBER_RESTRICT xq, ptrdiff_t S, int C, uint32_t flip) {
    uint32_t *da = (uint32_t *)(void *)ca, *db = (uint32_t *)(void *)cb;
    const uint32_t *const dend = da + C;
    uint32_t a, b, oa, ob, t0, t1;
#define EMBER_QA_STEP4(EXT)                                                                          \
            "ldr %[b], [%[x], %[s]]\n\t"                                                            \
            "ldr %[a], [%[x]]\n\t"                                                                  \
            "add %[x], %[x], %[s], lsl #1\n\t"                                                      \
            EXT " %[oa], %[a], ror #8\n\t"                                                          \
            EXT " %[a], %[a]\n\t"                                                                   \
            EXT " %[ob], %[b], ror #8\n\t"                                                          \
            EXT " %[b], %[b]\n\t"                                                                   \
            "pkhbt %[t0], %[a], %[b], lsl #16\n\t"                                                  \
            "pkhbt %[t1], %[oa], %[ob], lsl #16\n\t"                                                \
            "strd %[t0], %[t1], [%[da]], #8\n\t"                                                    \
            "pkhtb %[t0], %[b], %[a], asr #16\n\t"                                                  \
            "pkhtb %[t1], %[ob], %[oa], asr #16\n\t"                                                \
            "strd %[t0], %[t1], [%[db]], #8\n\t"
#define EMBER_QA_DIRECT4(EXT)                                                                        \
    __asm__("1:\n\t"                                                                                \
            EMBER_QA_STEP4(EXT) EMBER_QA_STEP4(EXT)                                                  \
            "cmp %[da], %[dend]\n\t"                                                                \
            "bne 1b"                                                                                 \
            : [x] "+&r"(xq), [da] "+&r"(da), [db] "+&r"(db), [a] "=&r"(a), [b] "=&r"(b), [oa] "=&r"(oa), \
              [ob] "=&r"(ob), [t0] "=&r"(t0), [t1] "=&r"(t1)                                          \
            : [s] "r"(S), [dend] "r"(dend)                                                           \
            : "cc", "memory")
    if (flip)
        EMBER_QA_DIRECT4("sxtb16");
    else
        EMBER_QA_DIRECT4("uxtb16");
#undef EMBER_QA_DIRECT4
#undef EMBER_QA_STEP4
}
#endif
/*@end*/
