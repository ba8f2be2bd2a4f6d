/* The Cortex-M int8 kernels (qarm.c lists their files): the SMLAD product of a pair of output channels
 * (ember_qa_pair: ember_qa_dot22, ember_qa_dot21, the general ember_qa_gemm2_t and the common case's assembly
 * loop ember_qa_gemm22s), with C stand-ins without the DSP extension. */

/*@kernel ember_qa_pair requires ember_qa_rq*/
/* Weights W (dsp_weights): output channels in pairs, each pair's rows interleaved a word (4 k) at a
 * time, so that one LDRD reads both rows' words; an odd last channel is paired with a zero row.
 * Columns (int16, two pixels or rows of A; ember_qa_pair_cols): per 4 k, the words (k0,k1) of both, then
 * (k2,k3) of both, so that one LDRD reads the two columns' words. This keeps the loop's live values
 * (2 pointers, 4 sums, 2 weight words, 2 column words, an unpacked pair) within the core's registers. */
/* int16 weights (h, dsp_weights16): per 4 k of a channel pair the words (k0,k1) of both rows, then (k2,k3)
 * of both, as the columns. One half group: a word pair of each, four SMLAD. The loop runs four groups
 * (50 instructions per 64 multiply-adds), entered where the rest of G / 4 groups remain (bits 4 and 5 of
 * the bytes left); t is a scratch register. */
#define EMBER_QA_HALF22H                                  \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                   \
    "ldrd %[x0], %[x1], [%[x]], #8\n\t"                   \
    "smlad %[a00], %[wa], %[x0], %[a00]\n\t"              \
    "smlad %[a01], %[wa], %[x1], %[a01]\n\t"              \
    "smlad %[a10], %[wb], %[x0], %[a10]\n\t"              \
    "smlad %[a11], %[wb], %[x1], %[a11]\n\t"
#define EMBER_QA_LOOP22H(L)                               \
    "sub %[t], %[end], %[w]\n\t"                          \
    "lsls %[t], %[t], #27\n\t" /* G % 4: bit 4 N, bit 5 C */ \
    "bcc 6f\n\t"                                          \
    "bmi 2f\n\t"                                          \
    "b 3f\n\t"                                            \
    "6:\n\t"                                              \
    "bmi 4f\n\t"                                          \
    L ":\n\t"                                             \
    EMBER_QA_HALF22H EMBER_QA_HALF22H                      \
    "2:\n\t"                                              \
    EMBER_QA_HALF22H EMBER_QA_HALF22H                      \
    "3:\n\t"                                              \
    EMBER_QA_HALF22H EMBER_QA_HALF22H                      \
    "4:\n\t"                                              \
    EMBER_QA_HALF22H EMBER_QA_HALF22H                      \
    "cmp %[w], %[end]\n\t"                                \
    "bne " L "b\n\t"
/* The SMLAD loop of ember_qa_dot22 and ember_qa_gemm22s over int8 weights. */
#define EMBER_QA_LOOP22B                                                                                               \
        "1:\n\t"                                                                                                       \
        "ldrd %[wa], %[wb], [%[w]], #8\n\t"                                                                            \
        "ldrd %[x0], %[x1], [%[x]], #8\n\t"                                                                            \
        "sxtb16 %[t], %[wa]\n\t"                                                                                       \
        "smlad %[a00], %[t], %[x0], %[a00]\n\t"                                                                        \
        "smlad %[a01], %[t], %[x1], %[a01]\n\t"                                                                        \
        "sxtb16 %[t], %[wb]\n\t"                                                                                       \
        "smlad %[a10], %[t], %[x0], %[a10]\n\t"                                                                        \
        "smlad %[a11], %[t], %[x1], %[a11]\n\t"                                                                        \
        "ldrd %[x0], %[x1], [%[x]], #8\n\t"                                                                            \
        "sxtb16 %[t], %[wa], ror #8\n\t"                                                                               \
        "smlad %[a00], %[t], %[x0], %[a00]\n\t"                                                                        \
        "smlad %[a01], %[t], %[x1], %[a01]\n\t"                                                                        \
        "sxtb16 %[t], %[wb], ror #8\n\t"                                                                               \
        "smlad %[a10], %[t], %[x0], %[a10]\n\t"                                                                        \
        "smlad %[a11], %[t], %[x1], %[a11]\n\t"                                                                        \
        "cmp %[w], %[end]\n\t"                                                                                         \
        "bne 1b\n\t"
/* The four sums of a channel pair (wp: its G = Kp / 4 word pairs, or with h its G groups of int16) and a
 * column pair, from acc. `h` is a constant where inlined. */
EMBER_INLINE void ember_qa_dot22(int32_t acc[4], const int8_t *wp, const int16_t *cols, int G, int h) {
    const ember_qa_u32 *w = (const ember_qa_u32 *)(const void *)wp, *x = (const ember_qa_u32 *)(const void *)cols;
    const ember_qa_u32 *const end = w + 2 * G * (1 + h);
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
#if EMBER_HAVE_ARM_DSP
    if (h) {
        uint32_t wa, wb, x0, x1, t;
        __asm__(EMBER_QA_LOOP22H("1")
                : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w] "+r"(w), [x] "+r"(x),
                  [wa] "=&r"(wa), [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(t)
                : [end] "r"(end)
                : "cc", "memory");
        acc[0] = a00;
        acc[1] = a01;
        acc[2] = a10;
        acc[3] = a11;
        return;
    }
    /* 18 instructions per 16 multiply-adds. In assembly: compilers spill a sum or the end pointer here
     * (12 live values, a frame pointer). G >= 1 (K >= 1). */
    uint32_t wa, wb, x0, x1, t;
    __asm__(EMBER_QA_LOOP22B
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w] "+r"(w), [x] "+r"(x),
              [wa] "=&r"(wa), [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(t)
            : [end] "r"(end)
            : "cc", "memory");
#else
    while (h && w != end) {
        a00 = ember_qa_smlad(w[0], x[0], a00);
        a01 = ember_qa_smlad(w[0], x[1], a01);
        a10 = ember_qa_smlad(w[1], x[0], a10);
        a11 = ember_qa_smlad(w[1], x[1], a11);
        w += 2;
        x += 2;
    }
    while (w != end) {
        const uint32_t wa = w[0], wb = w[1];
        uint32_t x0 = x[0], x1 = x[1], t;
        t = ember_qa_sx02(wa);
        a00 = ember_qa_smlad(t, x0, a00);
        a01 = ember_qa_smlad(t, x1, a01);
        t = ember_qa_sx02(wb);
        a10 = ember_qa_smlad(t, x0, a10);
        a11 = ember_qa_smlad(t, x1, a11);
        x0 = x[2];
        x1 = x[3];
        t = ember_qa_sx13(wa);
        a00 = ember_qa_smlad(t, x0, a00);
        a01 = ember_qa_smlad(t, x1, a01);
        t = ember_qa_sx13(wb);
        a10 = ember_qa_smlad(t, x0, a10);
        a11 = ember_qa_smlad(t, x1, a11);
        w += 2;
        x += 4;
    }
#endif
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
/* The two sums of a channel pair (wp, as ember_qa_dot22) and one plain column x (Kp int16, 4-byte aligned),
 * from acc: 12 instructions per 8 multiply-adds, where a pair of columns would waste half of them. */
EMBER_INLINE void ember_qa_dot21(int32_t acc[2], const int8_t *wp, const int16_t *col, int G, int h) {
    const ember_qa_u32 *w = (const ember_qa_u32 *)(const void *)wp, *x = (const ember_qa_u32 *)(const void *)col;
    const ember_qa_u32 *const end = w + 2 * G * (1 + h);
    int32_t a0 = acc[0], a1 = acc[1];
#if EMBER_HAVE_ARM_DSP
    if (h) { /* int16 weights: 9 instructions per 8 multiply-adds */
        uint32_t wa, wb, x0, x1;
        __asm__("1:\n\t"
                "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                "ldrd %[x0], %[x1], [%[x]], #8\n\t"
                "smlad %[a0], %[wa], %[x0], %[a0]\n\t"
                "smlad %[a1], %[wb], %[x0], %[a1]\n\t"
                "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                "smlad %[a0], %[wa], %[x1], %[a0]\n\t"
                "smlad %[a1], %[wb], %[x1], %[a1]\n\t"
                "cmp %[w], %[end]\n\t"
                "bne 1b"
                : [a0] "+r"(a0), [a1] "+r"(a1), [w] "+r"(w), [x] "+r"(x), [wa] "=&r"(wa), [wb] "=&r"(wb),
                  [x0] "=&r"(x0), [x1] "=&r"(x1)
                : [end] "r"(end)
                : "cc", "memory");
        acc[0] = a0;
        acc[1] = a1;
        return;
    }
    uint32_t wa, wb, x0, x1, t;
    __asm__("1:\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "ldrd %[x0], %[x1], [%[x]], #8\n\t"
            "sxtb16 %[t], %[wa]\n\t"
            "smlad %[a0], %[t], %[x0], %[a0]\n\t"
            "sxtb16 %[t], %[wb]\n\t"
            "smlad %[a1], %[t], %[x0], %[a1]\n\t"
            "sxtb16 %[t], %[wa], ror #8\n\t"
            "smlad %[a0], %[t], %[x1], %[a0]\n\t"
            "sxtb16 %[t], %[wb], ror #8\n\t"
            "smlad %[a1], %[t], %[x1], %[a1]\n\t"
            "cmp %[w], %[end]\n\t"
            "bne 1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [w] "+r"(w), [x] "+r"(x), [wa] "=&r"(wa), [wb] "=&r"(wb),
              [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(t)
            : [end] "r"(end)
            : "cc", "memory");
#else
    for (; h && w != end; w += 4, x += 2) {
        a0 = ember_qa_smlad(w[2], x[1], ember_qa_smlad(w[0], x[0], a0));
        a1 = ember_qa_smlad(w[3], x[1], ember_qa_smlad(w[1], x[0], a1));
    }
    for (; w != end; w += 2, x += 2) {
        a0 = ember_qa_smlad(ember_qa_sx13(w[0]), x[1], ember_qa_smlad(ember_qa_sx02(w[0]), x[0], a0));
        a1 = ember_qa_smlad(ember_qa_sx13(w[1]), x[1], ember_qa_smlad(ember_qa_sx02(w[1]), x[0], a1));
    }
#endif
    acc[0] = a0;
    acc[1] = a1;
}
/* y[m * rs + j * cs] for the M output channels and the n (1 or 2) columns of cols. */
/* y[m * rs + j * cs] for the M output channels and the n columns: two interleaved (ember_qa_pair_cols) in
 * cols, or one plain column (n = 1). */
EMBER_INLINE void ember_qa_gemm2_t(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int8_t *W, int M, int Kp,
                                   const int16_t *cols, const int32_t *rq, const int32_t *out, int fast, int h) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    int m;
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp * (1 + h), rq += 8) {
        const int two = m + 1 < M;
        int32_t acc[4];
        if (n == 1) {
            acc[0] = rq[3];
            acc[1] = two ? rq[7] : 0;
            ember_qa_dot21(acc, W, cols, Kp / 4, h);
            y[0] = ember_qa_requant(acc[0], rq, zp, lo, hi, fast);
            if (two) y[rs] = ember_qa_requant(acc[1], rq + 4, zp, lo, hi, fast);
            continue;
        }
        acc[0] = acc[1] = rq[3];
        acc[2] = acc[3] = two ? rq[7] : 0;
        ember_qa_dot22(acc, W, cols, Kp / 4, h);
        y[0] = ember_qa_requant(acc[0], rq, zp, lo, hi, fast);
        y[cs] = ember_qa_requant(acc[1], rq, zp, lo, hi, fast);
        if (two) {
            y[rs] = ember_qa_requant(acc[2], rq + 4, zp, lo, hi, fast);
            y[rs + cs] = ember_qa_requant(acc[3], rq + 4, zp, lo, hi, fast);
        }
    }
}
/* ember_qa_gemm22s's assembly, its products' loop LOOP. */
#define EMBER_QA_GEMM22S(LOOP)                                                                                         \
    __asm__ volatile("0:\n\t"                                                                                      \
        "ldr %[t], [%[ctx], #20]\n\t" /* rq: the pair's biases */                                                      \
        "ldr %[a00], [%[t], #12]\n\t"                                                                                  \
        "mov %[a01], %[a00]\n\t"                                                                                       \
        "ldr %[a10], [%[t], #28]\n\t"                                                                                  \
        "mov %[a11], %[a10]\n\t"                                                                                       \
        "ldr %[x], [%[ctx]]\n\t"                                                                                       \
        "ldr %[end], [%[ctx], #4]\n\t"                                                                                 \
        "add %[end], %[end], %[w]\n\t"                                                                                 \
        LOOP                                                                                                           \
        /* ember_qa_requant's SSAT form: (SMMLA(acc, mult, ra) >> sh) + zero point, saturated to int8 */               \
        "ldr %[t], [%[ctx], #20]\n\t"                                                                                  \
        "ldr %[x0], [%[ctx], #24]\n\t"                                                                                 \
        "ldrd %[wa], %[wb], [%[t]]\n\t"                                                                                \
        "ldr %[x1], [%[t], #8]\n\t"                                                                                    \
        "smmla %[a00], %[a00], %[wa], %[x1]\n\t"                                                                       \
        "asr %[a00], %[a00], %[wb]\n\t"                                                                                \
        "add %[a00], %[a00], %[x0]\n\t"                                                                                \
        "ssat %[a00], #8, %[a00]\n\t"                                                                                  \
        "smmla %[a01], %[a01], %[wa], %[x1]\n\t"                                                                       \
        "asr %[a01], %[a01], %[wb]\n\t"                                                                                \
        "add %[a01], %[a01], %[x0]\n\t"                                                                                \
        "ssat %[a01], #8, %[a01]\n\t"                                                                                  \
        "ldrd %[wa], %[wb], [%[t], #16]\n\t"                                                                           \
        "ldr %[x1], [%[t], #24]\n\t"                                                                                   \
        "smmla %[a10], %[a10], %[wa], %[x1]\n\t"                                                                       \
        "asr %[a10], %[a10], %[wb]\n\t"                                                                                \
        "add %[a10], %[a10], %[x0]\n\t"                                                                                \
        "ssat %[a10], #8, %[a10]\n\t"                                                                                  \
        "smmla %[a11], %[a11], %[wa], %[x1]\n\t"                                                                       \
        "asr %[a11], %[a11], %[wb]\n\t"                                                                                \
        "add %[a11], %[a11], %[x0]\n\t"                                                                                \
        "ssat %[a11], #8, %[a11]\n\t"                                                                                  \
        "add %[t], %[t], #32\n\t"                                                                                      \
        "str %[t], [%[ctx], #20]\n\t"                                                                                  \
        "ldr %[t], [%[ctx], #8]\n\t" /* y */                                                                           \
        "ldr %[x1], [%[ctx], #12]\n\t" /* rs */                                                                        \
        "ldr %[end], [%[ctx], #16]\n\t" /* cs */                                                                       \
        "strb %[a00], [%[t]]\n\t"                                                                                      \
        "strb %[a01], [%[t], %[end]]\n\t"                                                                              \
        "add %[x0], %[t], %[x1]\n\t"                                                                                   \
        "strb %[a10], [%[x0]]\n\t"                                                                                     \
        "strb %[a11], [%[x0], %[end]]\n\t"                                                                             \
        "add %[t], %[x0], %[x1]\n\t"                                                                                   \
        "str %[t], [%[ctx], #8]\n\t"                                                                                   \
        "ldr %[t], [%[ctx], #28]\n\t" /* wend */                                                                       \
        "cmp %[w], %[t]\n\t"                                                                                           \
        "bne 0b"                                                                                                       \
        : [a00] "=&r"(a00), [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11), [w] "+&r"(w), [x] "=&r"(x),          \
          [end] "=&r"(end), [wa] "=&r"(wa), [wb] "=&r"(wb), [x0] "=&r"(x0), [x1] "=&r"(x1), [t] "=&r"(t)               \
        : [ctx] "r"(&ctx)                                                                                              \
        : "cc", "memory")
/* ember_qa_gemm2's common case: two columns, the SSAT requantisation (mode 2) and M2 whole channel pairs. With
 * the DSP extension one assembly loop over the pairs, products and requantisation both, whose values
 * beyond the product's 12 registers live in a small context block (ctx) read once per pair: compiled from
 * C, the loop spent 77 to 87 instructions per pair outside the products (VWW's 1x1 layers: 3.0 M of 13 M),
 * now 44. `h` (a constant where inlined): int16 weights (EMBER_QA_LOOP22H). */
EMBER_INLINE void ember_qa_gemm22s(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, const int8_t *W, int M2, int Kp,
                                   const int16_t *cols, const int32_t *rq, int32_t zp, int h) {
#if EMBER_HAVE_ARM_DSP
    struct {
        const int16_t *cols;
        int32_t k2;
        uint8_t *y;
        int32_t rs, cs;
        const int32_t *rq;
        int32_t zp;
        const int8_t *wend;
    } ctx;
    const int8_t *w = W;
    uint32_t a00, a01, a10, a11, wa, wb, x0, x1, t;
    const uint32_t *x, *end;
    ctx.cols = cols, ctx.k2 = 2 * Kp * (1 + h), ctx.y = y, ctx.rs = (int32_t)rs, ctx.cs = (int32_t)cs, ctx.rq = rq, ctx.zp = zp;
    ctx.wend = W + (ptrdiff_t)M2 * 2 * Kp * (1 + h);
    if (M2 <= 0) return;
    if (h)
        EMBER_QA_GEMM22S(EMBER_QA_LOOP22H("1"));
    else
        EMBER_QA_GEMM22S(EMBER_QA_LOOP22B);
#else
    const int8_t *const wend = W + (ptrdiff_t)M2 * 2 * Kp * (1 + h);
    while (W != wend) {
        int32_t acc[4];
        acc[0] = acc[1] = rq[3];
        acc[2] = acc[3] = rq[7];
        ember_qa_dot22(acc, W, cols, Kp / 4, h);
        W += 2 * Kp * (1 + h);
        y[0] = ember_qa_requant(acc[0], rq, zp, -128, 127, 2);
        y[cs] = ember_qa_requant(acc[1], rq, zp, -128, 127, 2);
        y[rs] = ember_qa_requant(acc[2], rq + 4, zp, -128, 127, 2);
        y[rs + cs] = ember_qa_requant(acc[3], rq + 4, zp, -128, 127, 2);
        y += 2 * rs;
        rq += 8;
    }
#endif
}
/*@end*/
