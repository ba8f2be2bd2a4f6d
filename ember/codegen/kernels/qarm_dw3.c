/* The Cortex-M int8 kernels (qarm.c lists their files): the depthwise 3x3 (ember_qarm_dw3), a channel's zero-
 * padded int16 plane (ember_qa_dw3_geo_tr, which the Helium and Cortex-M0/M3 kernels share), its fill, and the
 * rows of outputs from qarm_dw3step.c's steps. */

/*@kernel ember_qarm_dw3 requires ember_qarm ember_conv_geo ember_qa_dw3_steps*/
/* How ember_qarm_dw3 and ember_qarm_dw3_mve lay out a channel: a zero-padded int16 plane of Hp rows of Wp
 * (ops/qarm.py `dw3_plane`, which sizes the scratch). A layer of stride 1 with more output rows than
 * columns works on the transposed plane (`t`: its rows are the image's columns, the weights transposed),
 * so that its rows are the long axis: KWS's 25 x 5 maps are 5 rows of 25, not 25 rows of 5. The loops
 * then run over (oh, ow) of that plane and store output (oh, ow) at oh * ys_row + ow * ys_col (C times as far
 * on an NHWC side: ember_qa_dw3_geo_lay). */
typedef struct {
    int t, H, W, OH, OW, PH, PW, SH, SW, Hp, Wp;
    ptrdiff_t xs_row, xs_col, ys_row, ys_col;
} ember_qa_dw3_geo_t;
/* `hwc` (a constant where inlined): the layouts from EMBER_QA_LAY, otherwise NCHW (the strides constants). */
EMBER_INLINE ember_qa_dw3_geo_t ember_qa_dw3_geo_lay(const int32_t *p, int tr, int hwc) {
    ember_qa_dw3_geo_t g;
    const int s1 = p[EMBER_GEO_STRIDE_H] == 1 && p[EMBER_GEO_STRIDE_W] == 1;
    g.t = tr && s1 && p[EMBER_GEO_OUT_H] > p[EMBER_GEO_OUT_W];
    g.H = p[g.t ? EMBER_GEO_IN_W : EMBER_GEO_IN_H], g.W = p[g.t ? EMBER_GEO_IN_H : EMBER_GEO_IN_W];
    g.OH = p[g.t ? EMBER_GEO_OUT_W : EMBER_GEO_OUT_H], g.OW = p[g.t ? EMBER_GEO_OUT_H : EMBER_GEO_OUT_W];
    g.PH = p[g.t ? EMBER_GEO_PAD_W : EMBER_GEO_PAD_H], g.PW = p[g.t ? EMBER_GEO_PAD_H : EMBER_GEO_PAD_W];
    g.SH = p[EMBER_GEO_STRIDE_H], g.SW = p[EMBER_GEO_STRIDE_W];
    g.Hp = (g.OH - 1) * g.SH + 3;
    g.Wp = g.SW <= 2 ? g.SW * ((g.OW + 3) / 4 * 4) + 2 : ((g.OW - 1) * g.SW + 5) & ~1;
    const ptrdiff_t xc = hwc && EMBER_QA_HWC_IN(p) ? p[EMBER_GEO_C] : 1;
    const ptrdiff_t yc = hwc && EMBER_QA_HWC_OUT(p) ? p[EMBER_GEO_C] : 1;
    g.xs_row = (g.t ? 1 : p[EMBER_GEO_IN_W]) * xc, g.xs_col = (g.t ? p[EMBER_GEO_IN_W] : 1) * xc;
    g.ys_row = (g.t ? 1 : p[EMBER_GEO_OUT_W]) * yc, g.ys_col = (g.t ? p[EMBER_GEO_OUT_W] : 1) * yc;
    return g;
}
/* How far apart a side's channels start: a plane (plane bytes), or a byte where the side is NHWC (`hwc`, a constant
 * where inlined, and EMBER_QA_LAY's `bit`: 4 for the input, 8 for the output). */
EMBER_INLINE ptrdiff_t ember_qa_dw3_chan(const int32_t *p, int hwc, int bit, ptrdiff_t plane) {
    return hwc && (p[EMBER_QA_LAY] & bit) ? 1 : plane;
}
EMBER_INLINE ember_qa_dw3_geo_t ember_qa_dw3_geo_tr(const int32_t *p, int tr) {
    return ember_qa_dw3_geo_lay(p, tr, 0);
}
/* Helium's layout (ember_qarm_dw3_mve, _mve8): transposed where that makes the rows longer. The DSP kernels
 * keep the image's rows (`tr` 0): their steps of four and two fit short rows, and their stores stay in order. */
EMBER_UNUSED EMBER_INLINE ember_qa_dw3_geo_t ember_qa_dw3_geo(const int32_t *p) {
    return ember_qa_dw3_geo_tr(p, 1);
}
/* The 9 weights' words wv (ember_qa_dw3_quad's A B C D per kernel row; w transposed with the plane). */
EMBER_INLINE void ember_qa_dw3_words(const ember_qa_dw3_geo_t *g, const int16_t *w, uint32_t wv[12]) {
    int i;
    for (i = 0; i < 3; ++i) {
        const int16_t *wr = g->t ? w + i : w + 3 * i;
        const ptrdiff_t ws = g->t ? 3 : 1;
        const uint32_t w0 = (uint16_t)wr[0], w1 = (uint16_t)wr[ws], w2 = (uint16_t)wr[2 * ws];
        wv[4 * i] = w0 | w1 << 16;
        wv[4 * i + 1] = w2;
        wv[4 * i + 2] = w0 << 16;
        wv[4 * i + 3] = w1 | w2 << 16;
    }
}
/* Widen channel xc into the plane (whose padding stays 0: only image positions are written) and build the
 * 9 weights' words wv (ember_qa_dw3_words). */
EMBER_UNUSED EMBER_INLINE void ember_qa_dw3_load(int16_t *plane, const ember_qa_dw3_geo_t *g, const uint8_t *xc, uint32_t flip,
                                    int32_t z2, const int16_t *w, uint32_t wv[12]) {
    const int r_end = g->H + g->PH < g->Hp ? g->H + g->PH : g->Hp, wd = g->W + g->PW < g->Wp ? g->W : g->Wp - g->PW;
    int r, j;
    if (g->xs_col == 1) {
        for (r = g->PH; r < r_end; ++r)
            ember_qa_widen(plane + (ptrdiff_t)r * g->Wp + g->PW, xc + (ptrdiff_t)(r - g->PH) * g->xs_row, wd, flip, z2);
    } else {
        for (r = g->PH; r < r_end; ++r) {
            int16_t *d = plane + (ptrdiff_t)r * g->Wp + g->PW;
            const uint8_t *s = xc + (ptrdiff_t)(r - g->PH) * g->xs_row;
            for (j = 0; j < wd; ++j, s += g->xs_col) d[j] = EMBER_QA_VAL(*s, flip, z2);
        }
    }
    ember_qa_dw3_words(g, w, wv);
}
#if EMBER_HAVE_ARM_DSP
/* ember_qa_dw3_t's plane rows without the zero point (ember_qa_dw3_fill): f = [rows, the passes of 8 bytes
 * (wd / 4 rounded up to even, halved), whether wd / 4 is odd (the first pass then does 4), wd % 4, the
 * plane's row bytes less 2 wd, the image's row bytes less wd], from d and s. Per row, four bytes at a time
 * sign- (int8) or zero- (uint8) extended by SXTB16/UXTB16 and put back in order by PKHBT/PKHTB (8
 * instructions per 4 where ember_qa_widen takes 13), then the wd % 4 others (TBB picks: two by one LDRH).
 * Naked: the rows loop in here, 8 instructions a row (ember_qa_widen's call and tail cost about 34). */
#define EMBER_QA_FILL4(EXT)                                                                                        \
            "ldr r12, [r1], #4\n\t"                                                                              \
            EXT " r2, r12\n\t"                                                                                   \
            EXT " lr, r12, ror #8\n\t"                                                                           \
            "pkhbt r12, r2, lr, lsl #16\n\t"                                                                     \
            "pkhtb lr, lr, r2, asr #16\n\t"                                                                      \
            "str r12, [r0], #4\n\t"                                                                              \
            "str lr, [r0], #4\n\t"
#define EMBER_QA_FILL1(LDB) LDB " r12, [r1], #1\n\tstrh r12, [r0], #2\n\t"
#define EMBER_QA_FILL2(EXT)                                                                                        \
            "ldrh r12, [r1], #2\n\t"                                                                             \
            EXT " r2, r12\n\t"                                                                                   \
            EXT " lr, r12, ror #8\n\t"                                                                           \
            "pkhbt r12, r2, lr, lsl #16\n\t"                                                                     \
            "str r12, [r0], #4\n\t"
#define EMBER_QA_FILLEND(L)                                                                                        \
            "add r0, r0, r10\n\t"                                                                                \
            "add r1, r1, r11\n\t"                                                                                \
            "subs r3, r3, #1\n\t"                                                                                \
            "bne " L "b\n\t"                                                                                     \
            "pop {r4, r5, r6, r9, r10, r11, pc}\n\t"
/* Rows of 4 to 7 bytes (one pass, odd: VWW's 6 x 6 maps) take a loop of their own, their last bytes inline. */
#define EMBER_QA_FILL(EXT, LDB)                                                                                     \
    __asm__("push {r4, r5, r6, r9, r10, r11, lr}\n\t"                                                           \
            "ldm r2, {r3, r4, r5, r9, r10, r11}\n\t"                                                             \
            "cmp r4, #1\n\t"                                                                                     \
            "it eq\n\t"                                                                                          \
            "cmpeq r5, #1\n\t"                                                                                   \
            "bne 0f\n\t"                                                                                         \
            "tbb [pc, r9]\n\t"                                                                                   \
            "9:\n\t"                                                                                             \
            ".byte (20f - 9b) / 2, (21f - 9b) / 2, (22f - 9b) / 2, (23f - 9b) / 2\n\t"                           \
            "20:\n\t" EMBER_QA_FILL4(EXT) EMBER_QA_FILLEND("20")                                                  \
            "21:\n\t" EMBER_QA_FILL4(EXT) EMBER_QA_FILL1(LDB) EMBER_QA_FILLEND("21")                              \
            "22:\n\t" EMBER_QA_FILL4(EXT) EMBER_QA_FILL2(EXT) EMBER_QA_FILLEND("22")                              \
            "23:\n\t" EMBER_QA_FILL4(EXT) EMBER_QA_FILL1(LDB) EMBER_QA_FILL2(EXT) EMBER_QA_FILLEND("23")          \
            "0:\n\t"                                                                                             \
            "movs r6, r4\n\t"                                                                                    \
            "beq 3f\n\t"                                                                                         \
            "cbnz r5, 2f\n\t" /* an odd count of 4 bytes: the first pass does one */                            \
            "1:\n\t"                                                                                             \
            EMBER_QA_FILL4(EXT)                                                                                  \
            "2:\n\t"                                                                                             \
            EMBER_QA_FILL4(EXT)                                                                                  \
            "subs r6, r6, #1\n\t"                                                                                \
            "bne 1b\n\t"                                                                                         \
            "3:\n\t"                                                                                             \
            "tbb [pc, r9]\n\t"                                                                                   \
            "4:\n\t"                                                                                             \
            ".byte (5f - 4b) / 2, (6f - 4b) / 2, (7f - 4b) / 2, (8f - 4b) / 2\n\t"                               \
            "5:\n\t"                                                                                             \
            "add r0, r0, r10\n\t"                                                                                \
            "add r1, r1, r11\n\t"                                                                                \
            "subs r3, r3, #1\n\t"                                                                                \
            "bne 0b\n\t"                                                                                         \
            "pop {r4, r5, r6, r9, r10, r11, pc}\n\t"                                                             \
            "6:\n\t" /* one byte left */                                                                         \
            LDB " r12, [r1], #1\n\t"                                                                             \
            "strh r12, [r0], #2\n\t"                                                                             \
            "b 5b\n\t"                                                                                           \
            "8:\n\t" /* three: one, then two */                                                                  \
            LDB " r12, [r1], #1\n\t"                                                                             \
            "strh r12, [r0], #2\n\t"                                                                             \
            "7:\n\t" /* two */                                                                                   \
            "ldrh r12, [r1], #2\n\t"                                                                             \
            EXT " r2, r12\n\t"                                                                                   \
            EXT " lr, r12, ror #8\n\t"                                                                           \
            "pkhbt r12, r2, lr, lsl #16\n\t"                                                                     \
            "str r12, [r0], #4\n\t"                                                                              \
            "b 5b")
EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void ember_qa_dw3_fill8(EMBER_UNUSED int16_t *d,
                                                                                 EMBER_UNUSED const uint8_t *s,
                                                                                 EMBER_UNUSED const int32_t *f) {
    EMBER_QA_FILL("sxtb16", "ldrsb");
}
EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void ember_qa_dw3_fill8u(EMBER_UNUSED int16_t *d,
                                                                                  EMBER_UNUSED const uint8_t *s,
                                                                                  EMBER_UNUSED const int32_t *f) {
    EMBER_QA_FILL("uxtb16", "ldrb");
}
#undef EMBER_QA_FILL
#undef EMBER_QA_FILL4
#undef EMBER_QA_FILL1
#undef EMBER_QA_FILL2
#undef EMBER_QA_FILLEND
#endif
/* ember_qa_dw3_t's plane of channel xc: the bytes as values (int8 sign-extended, uint8 as they are), the zero
 * point left in (the padding holds it, ember_qa_dw3_t; the bias takes its share). */
EMBER_INLINE void ember_qa_dw3_fill(int16_t *plane, const ember_qa_dw3_geo_t *g, const uint8_t *xc, uint32_t flip) {
    const int r_end = g->H + g->PH < g->Hp ? g->H + g->PH : g->Hp, wd = g->W + g->PW < g->Wp ? g->W : g->Wp - g->PW;
    int16_t *d0 = plane + (ptrdiff_t)g->PH * g->Wp + g->PW;
    int r, j;
    if (r_end <= g->PH || wd <= 0) return;
#if EMBER_HAVE_ARM_DSP
    if (!g->t && g->xs_col == 1) {
        const int32_t f[6] = {r_end - g->PH, ((wd >> 2) + 1) >> 1, (wd >> 2) & 1, wd & 3, 2 * (g->Wp - wd),
                              (int32_t)g->xs_row - wd};
        if (flip)
            ember_qa_dw3_fill8(d0, xc, f);
        else
            ember_qa_dw3_fill8u(d0, xc, f);
        return;
    }
#endif
    for (r = g->PH; r < r_end; ++r, d0 += g->Wp) {
        const uint8_t *s = xc + (ptrdiff_t)(r - g->PH) * g->xs_row;
        for (j = 0; j < wd; ++j, s += g->xs_col) d0[j] = EMBER_QA_VAL(*s, flip, (int32_t)flip);
    }
}
/* One channel's output rows from its plane (geometry g): `sw` (a constant where inlined) 1 or 2, steps of
 * four outputs, 0 any other stride, one at a time. The requantisation's constants are copied out of cq
 * first: the steps' assembly clobbers memory, which would reload them for every output. */
EMBER_INLINE void ember_qa_dw3_rows(uint8_t *yc, const int16_t *plane, const ember_qa_dw3_geo_t *g, const uint32_t *wv,
                                    const int16_t *w, const int32_t *cq, const int32_t *out, int fast, int sw) {
    const int OW = g->OW, Wp = g->Wp, SW = sw ? sw : g->SW;
    const ptrdiff_t cs = g->ys_col;
    const int32_t c[3] = {cq[0], cq[1], cq[2]}, b = cq[3], zp = out[0], lo = out[1], hi = out[2];
    int oh, ow, i;
    for (oh = 0; oh < g->OH; ++oh) {
        const int16_t *r0 = plane + (ptrdiff_t)oh * g->SH * Wp;
        uint8_t *yr = yc + oh * g->ys_row;
        if (sw) {
            for (ow = 0; ow < OW; ow += 4) {
                int32_t o[4];
                uint8_t *yq = yr + ow * cs;

                o[0] = o[1] = o[2] = o[3] = b;
                if (sw == 1)
                    ember_qa_dw3_quad(o, r0 + ow, Wp, wv);
                else
                    ember_qa_dw3_quad2(o, r0 + 2 * ow, Wp, wv);
                yq[0] = ember_qa_requant(o[0], c, zp, lo, hi, fast);
                if (ow + 4 <= OW) {
                    yq[cs] = ember_qa_requant(o[1], c, zp, lo, hi, fast);
                    yq[2 * cs] = ember_qa_requant(o[2], c, zp, lo, hi, fast);
                    yq[3 * cs] = ember_qa_requant(o[3], c, zp, lo, hi, fast);
                } else {
                    if (ow + 1 < OW) yq[cs] = ember_qa_requant(o[1], c, zp, lo, hi, fast);
                    if (ow + 2 < OW) yq[2 * cs] = ember_qa_requant(o[2], c, zp, lo, hi, fast);
                }
            }
        } else {
            for (ow = 0; ow < OW; ++ow) {
                const int16_t *s0 = r0 + ow * SW;
                int32_t a = b;
                for (i = 0; i < 3; ++i, s0 += Wp)
                    a = ember_qa_smlad(*(const ember_qa_u32 *)(const void *)s0, wv[4 * i], a) + s0[2] * w[3 * i + 2];
                yr[ow * cs] = ember_qa_requant(a, c, zp, lo, hi, fast);
            }
        }
    }
}
#if EMBER_HAVE_ARM_DSP
typedef void (*ember_qa_dw3_row_fn)(const int16_t *q, uint8_t *y, const uint32_t *wv, int n);
typedef void (*ember_qa_dw3_fill_fn)(int16_t *d, const uint8_t *s, const int32_t *f);
/* ember_qa_dw3_t's assembly case (the SSAT form, its zero point in ra, not transposed, stride 1 or 2) with its
 * per-channel work lean: the plane's rows and the weights' words straight (ember_qa_dw3_fill's for this
 * case), the geometry's words of wv once; rows of EMBER_QA_DW3_PITCH int16 where they fit (ops/qarm.py
 * conv_scratch sizes the plane so). Out of line: ember_qa_dw3_t's other loops keep their registers. */
EMBER_NOINLINE static void ember_qa_dw3_fast(uint8_t *y, const uint8_t *x, uint32_t flip, int32_t xz,
                                             const ember_qa_dw3_geo_t *g, int C, int N, const int16_t *Wt,
                                             const int32_t *rq, int16_t *plane) {
    /* ops/qarm.py dw3_pitch: a fixed pitch unless it would more than double a plane of many short rows */
    const int pp = g->Wp <= EMBER_QA_DW3_PITCH && (g->Wp > 16 || g->Hp <= 16) ? EMBER_QA_DW3_PITCH : g->Wp;
    const int r_end = g->H + g->PH < g->Hp ? g->H + g->PH : g->Hp, wd = g->W + g->PW < g->Wp ? g->W : g->Wp - g->PW;
    const int32_t f[6] = {r_end - g->PH, ((wd >> 2) + 1) >> 1, (wd >> 2) & 1, wd & 3, 2 * (pp - wd),
                          (int32_t)g->xs_row - wd};
    const ptrdiff_t in_plane = (ptrdiff_t)g->H * g->W, out_plane = (ptrdiff_t)g->OH * g->OW;
    const uint32_t zz = (uint32_t)(uint16_t)xz * 0x10001u;
    static const ember_qa_dw3_row_fn rows[8] = {ember_qa_dw3_row1,   ember_qa_dw3_row2,   ember_qa_dw3_row1p,
                                                ember_qa_dw3_row2p,  ember_qa_dw3_row1s,  ember_qa_dw3_row2s,
                                                ember_qa_dw3_row1ps, ember_qa_dw3_row2ps}; /* _s: rows under 4 */
    const int p64 = pp == EMBER_QA_DW3_PITCH;
    const ember_qa_dw3_row_fn row3 = g->SW == 1 ? ember_qa_dw3_row3p : ember_qa_dw3_row32p;
    const ember_qa_dw3_row_fn row = p64 && g->SW == 1 && g->OW == 6 ? ember_qa_dw3_row6p
                                    : p64 && g->OW == 3              ? row3
                                                                     : rows[(g->SW == 2) + 2 * p64 + 4 * (g->OW < 4)];
    const ember_qa_dw3_fill_fn fill = f[0] > 0 && wd > 0 ? (flip ? ember_qa_dw3_fill8 : ember_qa_dw3_fill8u) : 0;
    int16_t *const d0 = plane + (ptrdiff_t)g->PH * pp + g->PW;
    uint32_t *pw = (uint32_t *)(void *)plane; /* Hp * pp is even (pp is) */
    const int OW = g->OW, words = g->Hp * pp / 2; /* read before the stores, which might alias g */
    uint32_t wv[16]; /* ember_qa_dw3_row1's: the bias four times, the weights' words, mult, sh, ra, geometry */
    int c, i, n;
    for (i = 0; i < words; ++i) pw[i] = zz;
    wv[13] = (uint32_t)(2 * pp), wv[14] = (uint32_t)g->OH, wv[15] = (uint32_t)(2 * g->SH * pp);
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c, x += in_plane, y += out_plane) {
            const int16_t *w = Wt + 9 * c;
            const int32_t *cq = rq + 4 * c;
            int32_t sw = 0;
            for (i = 0; i < 3; ++i) { /* A = (w0, w1), D = (w1, w2) */
                const uint32_t a = *(const ember_qa_u32 *)(const void *)(w + 3 * i);
                const uint32_t d = *(const ember_qa_u32 *)(const void *)(w + 3 * i + 1);
                wv[2 * i + 4] = a, wv[2 * i + 5] = d;
                sw = ember_qa_smlad(a, 0x10001u, sw) + (int16_t)(d >> 16);
            }
            wv[10] = (uint32_t)cq[0], wv[11] = (uint32_t)cq[1], wv[12] = (uint32_t)cq[2];
            wv[0] = wv[1] = wv[2] = wv[3] = (uint32_t)(cq[3] - xz * sw);
            if (fill) fill(d0, x, f);
            row(plane, y, wv, OW);
        }
}
#endif
/* Depthwise 3x3 (channel multiplier 1, dilation 1, any stride and padding) of N images. Each channel is
 * widened into a zero-padded int16 plane (ember_qa_dw3_geo; its border is zeroed once, as every
 * channel's is the same), whose rows SMLAD reads two pixels per word. Strides 1 and 2 make four outputs
 * per step (ember_qa_dw3_quad, _quad2; the plane's rows are long enough for the last step's reads), other
 * strides one from a word and a halfword per kernel row. Wt: C x 9 int16; rq: per channel [mult, s, ra, bias]
 * (ember_qa_requant). */
EMBER_INLINE void ember_qa_dw3_t(uint8_t *y, const uint8_t *x, uint32_t flip, int32_t z2, const int32_t *p, int N,
                                 const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane, int fast,
                                 int tr, int hwc) {
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo_lay(p, tr, hwc);
    const int C = p[EMBER_GEO_C], SW = g.SW;
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    const ptrdiff_t xs_ch = ember_qa_dw3_chan(p, hwc, 4, in_plane), ys_ch = ember_qa_dw3_chan(p, hwc, 8, out_plane);
    /* the plane holds the bytes' values, zero point included (ember_qa_dw3_fill), and the padding the zero
     * point itself, so that each channel's sums exceed those of (x - zero point) by zero point times the
     * sum of its weights, which its bias gives back: exactly the same sums, without a subtraction per pixel */
    const int32_t xz = z2 - (int32_t)flip;
    const uint32_t zz = (uint32_t)(uint16_t)xz * 0x10001u;
    uint32_t *pw = (uint32_t *)(void *)plane; /* Hp * Wp is even (Wp is) */
    int n, c, i;
#if EMBER_HAVE_ARM_DSP
    if (fast == 2 && !tr && !hwc && out[0] == 0 && (SW == 1 || SW == 2)) {
        ember_qa_dw3_fast(y, x, flip, xz, &g, C, N, Wt, rq, plane);
        return;
    }
#endif
    for (i = 0; i < g.Hp * g.Wp / 2; ++i) pw[i] = zz;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int16_t *w = Wt + 9 * c;
            int32_t cq[4], sw = 0;
            uint8_t *yc = y + (ptrdiff_t)n * C * out_plane + c * ys_ch;
            uint32_t wv[12]; /* the weights' words */
            for (i = 0; i < 9; ++i) sw += w[i];
            cq[0] = rq[4 * c], cq[1] = rq[4 * c + 1], cq[2] = rq[4 * c + 2], cq[3] = rq[4 * c + 3] - xz * sw;
            ember_qa_dw3_fill(plane, &g, x + (ptrdiff_t)n * C * in_plane + c * xs_ch, flip);
            ember_qa_dw3_words(&g, w, wv);
            if (SW == 1)
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 1);
            else if (SW == 2)
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 2);
            else
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 0);
        }
}
/* `tr`: Helium's plane layout (ember_qa_dw3_geo), for ember_qarm_dw3_mve's layers; `hwc`: ember_qarm_dw3_hwc's. */
EMBER_UNUSED static void ember_qa_dw3_any(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                          const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane,
                                          int tr, int hwc) {
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    const int mode = ember_qa_mode(out);
    if (mode == 2)
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 2, tr, hwc);
    else if (mode == 1)
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 1, tr, hwc);
    else
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 0, tr, hwc);
}
EMBER_UNUSED static void ember_qarm_dw3(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                           const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
    ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_hwc requires ember_qarm_dw3*/
/* ember_qarm_dw3 at a channels-last model's edge (EMBER_QA_LAY): the planes filled from, the rows stored at, the
 * pixel stride C where a side is NHWC. Its own kernel, so that the NCHW layers keep their constant strides. */
static void ember_qarm_dw3_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                               const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
    ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 0, 1);
}
/*@end*/
