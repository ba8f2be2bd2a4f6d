/* The Cortex-M int8 kernels (qarm.c lists their files): the SMLAD product of int16 weights in quads of output
 * channels (ember_qa_gemm: ember_qa_dot42, the tiles' naked loops ember_qa_gemm42s/b, ember_qa_gemm4), and
 * ember_qa_gemm2_w, which splits a layer into quads and pairs (qarm_gemm2.c) and picks each one's requantisation
 * form. */

/*@kernel ember_qa_gemm requires ember_qa_pair*/
/* int16 weights in quads (ops/qarm.py dsp_weights16): the first M / 4 * 4 rows four at a time, per k pair the
 * words (k0, k1) of the four rows; the rest in pairs (above). Four channels times a column pair is 11
 * instructions per 16 multiply-adds (a pair of channels: 12), and a tile's requantisation and stores are
 * shared by 8 outputs. The product loop needs 14 registers (r7, the frame pointer, too), so it is a naked
 * function: EMBER_QA_BLOCK42 is one k pair, sums a00 .. a31 (channel, column) in r0 .. r7, the column words
 * in r8, r9, the weight words in r10, r11, the weights in r12, the columns in lr. EMBER_QA_LOOP42 runs eight
 * k pairs per pass up to the end at [sp, #END], entered where the rest of Kp / 4 pairs of them remain (bits 5
 * and 6 of the quad's bytes in r10, 8 * Kp, as EMBER_QA_LOOP22H's entries). */
#define EMBER_QA_BLOCK42                                  \
    "ldrd r8, r9, [lr], #8\n\t"                           \
    "ldrd r10, r11, [r12], #8\n\t"                        \
    "smlad r0, r10, r8, r0\n\t"                           \
    "smlad r1, r10, r9, r1\n\t"                           \
    "smlad r2, r11, r8, r2\n\t"                           \
    "smlad r3, r11, r9, r3\n\t"                           \
    "ldrd r10, r11, [r12], #8\n\t"                        \
    "smlad r4, r10, r8, r4\n\t"                           \
    "smlad r5, r10, r9, r5\n\t"                           \
    "smlad r6, r11, r8, r6\n\t"                           \
    "smlad r7, r11, r9, r7\n\t"
#define EMBER_QA_LOOP42(END)                              \
    "lsls r10, r10, #26\n\t" /* N: bit 5, C: bit 6 */     \
    "bcc 7f\n\t"                                          \
    "bmi 2f\n\t"                                          \
    "b 3f\n\t"                                            \
    "7:\n\t"                                              \
    "bmi 4f\n\t"                                          \
    EMBER_QA_PASSES42(END)
/* EMBER_QA_LOOP42 after its entry: the passes of eight k pairs (labels 1 .. 4, the entries). */
#define EMBER_QA_PASSES42(END)                            \
    "1:\n\t"                                              \
    EMBER_QA_BLOCK42 EMBER_QA_BLOCK42                     \
    "2:\n\t"                                              \
    EMBER_QA_BLOCK42 EMBER_QA_BLOCK42                     \
    "3:\n\t"                                              \
    EMBER_QA_BLOCK42 EMBER_QA_BLOCK42                     \
    "4:\n\t"                                              \
    EMBER_QA_BLOCK42 EMBER_QA_BLOCK42                     \
    "ldr r10, [sp, #" END "]\n\t"                         \
    "cmp r12, r10\n\t"                                    \
    "bne 1b\n\t"
#if EMBER_HAVE_ARM_DSP
/* acc[2 * r + j] += row r of the quad at w times column j of the pair cols, for w up to wend. */
EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void ember_qa_dot42(EMBER_UNUSED int32_t *acc,
                                                                             EMBER_UNUSED const int16_t *w,
                                                                             EMBER_UNUSED const int16_t *cols,
                                                                             EMBER_UNUSED const int16_t *wend) {
    __asm__("push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
            "mov r12, r1\n\t"
            "mov lr, r2\n\t"
            "sub r10, r3, r1\n\t"
            "push {r0, r3}\n\t"
            "ldm r0, {r0, r1, r2, r3, r4, r5, r6, r7}\n\t"
            EMBER_QA_LOOP42("4")
            "ldr r8, [sp]\n\t"
            "stm r8, {r0, r1, r2, r3, r4, r5, r6, r7}\n\t"
            "add sp, sp, #8\n\t"
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}");
}
#endif
/* One k pair of ember_qa_gemm4_t's one plain column: its word times the four rows' words. */
#define EMBER_QA_STEP41                               \
    "ldr %[x0], [%[x]], #4\n\t"                       \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"               \
    "smlad %[s0], %[wa], %[x0], %[s0]\n\t"            \
    "smlad %[s1], %[wb], %[x0], %[s1]\n\t"            \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"               \
    "smlad %[s2], %[wa], %[x0], %[s2]\n\t"            \
    "smlad %[s3], %[wb], %[x0], %[s3]\n\t"
/* The general form (any requantisation, one or two columns: interleaved, or one plain). */
EMBER_INLINE void ember_qa_gemm4_t(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int16_t *W, int M4, int Kp,
                                   const int16_t *cols, const int32_t *rq, const int32_t *out, int fast) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    const ember_qa_u32 *w = (const ember_qa_u32 *)(const void *)W;
    int m, t, r;
    for (m = 0; m < M4; m += 4, y += 4 * rs, rq += 16) {
        const ember_qa_u32 *x = (const ember_qa_u32 *)(const void *)cols;
        int32_t a[8];
        for (r = 0; r < 4; ++r) a[2 * r] = a[2 * r + 1] = rq[4 * r + 3];
#if EMBER_HAVE_ARM_DSP
        if (n == 2) {
            ember_qa_dot42(a, (const int16_t *)(const void *)w, cols, (const int16_t *)(const void *)(w + 2 * Kp));
            w += 2 * Kp;
        } else
#endif
        if (n == 1) { /* the one plain column: its sums alone, in locals (the compiler stored a[] each step) */
            int32_t s0 = a[0], s1 = a[2], s2 = a[4], s3 = a[6];
#if EMBER_HAVE_ARM_DSP /* 16 instructions per two k pairs (compiled from C: 22); Kp / 2 is even (Kp % 4 == 0) */
            const ember_qa_u32 *const xend = x + Kp / 2;
            uint32_t x0, wa, wb;
            __asm__("1:\n\t" EMBER_QA_STEP41 EMBER_QA_STEP41
                    "cmp %[x], %[xend]\n\t"
                    "bne 1b"
                    : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
                      [x0] "=&r"(x0), [wa] "=&r"(wa), [wb] "=&r"(wb)
                    : [xend] "r"(xend)
                    : "cc", "memory");
#else
            for (t = 0; t < Kp / 2; ++t, w += 4) {
                const uint32_t x0 = x[t];
                s0 = ember_qa_smlad(w[0], x0, s0);
                s1 = ember_qa_smlad(w[1], x0, s1);
                s2 = ember_qa_smlad(w[2], x0, s2);
                s3 = ember_qa_smlad(w[3], x0, s3);
            }
#endif
            a[0] = s0, a[2] = s1, a[4] = s2, a[6] = s3;
        } else {
            for (t = 0; t < Kp / 2; ++t, w += 4) {
                const uint32_t x0 = x[2 * t], x1 = x[2 * t + 1];
                for (r = 0; r < 4; ++r) {
                    a[2 * r] = ember_qa_smlad(w[r], x0, a[2 * r]);
                    a[2 * r + 1] = ember_qa_smlad(w[r], x1, a[2 * r + 1]);
                }
            }
        }
        for (r = 0; r < 4; ++r) {
            y[r * rs] = ember_qa_requant(a[2 * r], rq + 4 * r, zp, lo, hi, fast);
            if (n == 2) y[r * rs + cs] = ember_qa_requant(a[2 * r + 1], rq + 4 * r, zp, lo, hi, fast);
        }
    }
}
#if EMBER_HAVE_ARM_DSP
/* ember_qa_gemm4_t's common case, in assembly: two columns, cs = 1, the SSAT requantisation with the zero
 * point in ra (ops/qarm.py `fold_zp`, out[0] = 0: one LDM reads a channel's mult, sh, ra). The context is
 * copied onto the stack (sp + 0: cols, 4: bq, 8: y, 12: rs, 16: rq, 20: the end
 * of the columns, where each quad's products end, 24: the end of W, 28: the product loop's entry for Kp). The entry (Thumb bit
 * set) is found by the first call and kept in ctx->entry (0 until then), so that a layer calling once per
 * column pair (ember_qa_conv_t's 1x1 loop) pays for it once; one LDR PC per tile takes it. The product loop
 * runs 32 k pairs per pass (EMBER_QA_BLOCK42, 44 bytes of code each; the entry skips the blocks that the
 * first pass lacks), so that its end test (3 instructions) comes once per 512 multiply-adds. About 61
 * instructions per tile outside the products (under 8 per output; ember_qa_gemm22s: 11). */
typedef struct {
    const int16_t *cols;
    int32_t kb;
    uint8_t *y;
    int32_t rs;
    const int32_t *rq;
    const int16_t *w, *wend;
    uint32_t entry;
    const int32_t *bq; /* ember_qa_gemm42b's biases */
} ember_qa_q42_t;
#define EMBER_QA_RQ42(A, B)                               \
    "ldm lr!, {r8, r9, r10, r11}\n\t"                     \
    "smmla " A ", " A ", r8, r10\n\t"                     \
    "asr " A ", " A ", r9\n\t"                            \
    "ssat " A ", #8, " A "\n\t"                           \
    "smmla " B ", " B ", r8, r10\n\t"                     \
    "asr " B ", " B ", r9\n\t"                            \
    "ssat " B ", #8, " B "\n\t"
#define EMBER_QA_ST42(A, B)                               \
    "strb " A ", [r10]\n\t"                               \
    "strb " B ", [r10, #1]\n\t"                           \
    "add r10, r10, r11\n\t"
#define EMBER_QA_BLOCK42X4 EMBER_QA_BLOCK42 EMBER_QA_BLOCK42 EMBER_QA_BLOCK42 EMBER_QA_BLOCK42
#define EMBER_QA_BLOCK42X16 EMBER_QA_BLOCK42X4 EMBER_QA_BLOCK42X4 EMBER_QA_BLOCK42X4 EMBER_QA_BLOCK42X4
#define EMBER_QA_GEMM42S(BIAS, TEST)                                                                               \
    __asm__("push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t" \
            "ldm r0, {r1, r2, r3, r4, r5, r6, r7, r8}\n\t" \
            "cmp r8, #0\n\t" \
            "bne 9f\n\t" \
            /* the entry: 5f less 44 bytes per block of the first pass, (kb / 16) % 32 of them or 32 */ \
            "lsrs r9, r2, #4\n\t" \
            "ands r9, r9, #31\n\t" \
            "bne 8f\n\t" \
            "movs r9, #32\n\t" \
            "8:\n\t" \
            "movs r10, #44\n\t" \
            "adr.w r11, 5f\n\t" \
            "mls r8, r9, r10, r11\n\t" \
            "orr r8, r8, #1\n\t" \
            "str r8, [r0, #28]\n\t" \
            "9:\n\t" \
            "mov r12, r6\n\t" /* the weights */ \
            "add r6, r1, r2, lsr #1\n\t" /* the end of the columns (4 * Kp bytes), at sp + 20 */ \
            "ldr r2, [r0, #32]\n\t" /* bq, at sp + 4 */ \
            "push {r1, r2, r3, r4, r5, r6, r7, r8}\n\t" \
            "0:\n\t" \
            BIAS \
            "ldr lr, [sp]\n\t" \
            "ldr pc, [sp, #28]\n\t" \
            "1:\n\t" \
            EMBER_QA_BLOCK42X16 EMBER_QA_BLOCK42X16 \
            "5:\n\t" \
            TEST \
            "ldr lr, [sp, #16]\n\t" \
            EMBER_QA_RQ42("r0", "r1") EMBER_QA_RQ42("r2", "r3") EMBER_QA_RQ42("r4", "r5") EMBER_QA_RQ42("r6", "r7") \
            "str lr, [sp, #16]\n\t" \
            "ldrd r10, r11, [sp, #8]\n\t" \
            EMBER_QA_ST42("r0", "r1") EMBER_QA_ST42("r2", "r3") EMBER_QA_ST42("r4", "r5") EMBER_QA_ST42("r6", "r7") \
            "str r10, [sp, #8]\n\t" \
            "ldr r10, [sp, #24]\n\t" \
            "cmp r12, r10\n\t" \
            "bne 0b\n\t" \
            "add sp, sp, #32\n\t" \
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}")
/* The sums' start: the biases, each channel's twice, from the per-quad words at bq (sp + 4; ops/qarm.py
 * `_tables`' pairs: appended to rq), or from rq's (9 instructions where LDM takes 3). The end test of the
 * passes: the `1` variants (Kp <= 64, one pass) go on without it, 3 instructions a tile less. */
#define EMBER_QA_BIAS42S                                                                                         \
    "ldr lr, [sp, #16]\n\t"                                                                                      \
    "ldr r0, [lr, #12]\n\t"                                                                                      \
    "mov r1, r0\n\t"                                                                                             \
    "ldr r2, [lr, #28]\n\t"                                                                                      \
    "mov r3, r2\n\t"                                                                                             \
    "ldr r4, [lr, #44]\n\t"                                                                                      \
    "mov r5, r4\n\t"                                                                                             \
    "ldr r6, [lr, #60]\n\t"                                                                                      \
    "mov r7, r6\n\t"
#define EMBER_QA_BIAS42B "ldr lr, [sp, #4]\n\tldm lr!, {r0, r1, r2, r3, r4, r5, r6, r7}\n\tstr lr, [sp, #4]\n\t"
#define EMBER_QA_TEST42 "ldr r10, [sp, #20]\n\tcmp lr, r10\n\tbne 1b\n\t"
#define EMBER_QA_GEMM42FN(NAME, BIAS, TEST)                                                                       \
    EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void NAME(EMBER_UNUSED ember_qa_q42_t *ctx) {       \
        EMBER_QA_GEMM42S(BIAS, TEST);                                                                            \
    }
EMBER_QA_GEMM42FN(ember_qa_gemm42s, EMBER_QA_BIAS42S, EMBER_QA_TEST42)
EMBER_QA_GEMM42FN(ember_qa_gemm42s1, EMBER_QA_BIAS42S, "")
EMBER_QA_GEMM42FN(ember_qa_gemm42b, EMBER_QA_BIAS42B, EMBER_QA_TEST42)
EMBER_QA_GEMM42FN(ember_qa_gemm42b1, EMBER_QA_BIAS42B, "")
typedef void (*ember_qa_q42_fn)(ember_qa_q42_t *ctx);
#undef EMBER_QA_GEMM42FN
#undef EMBER_QA_TEST42
#undef EMBER_QA_BIAS42B
#undef EMBER_QA_BIAS42S
#undef EMBER_QA_GEMM42S
#undef EMBER_QA_BLOCK42X4
#undef EMBER_QA_BLOCK42X16
#undef EMBER_QA_RQ42
#undef EMBER_QA_ST42
#endif
EMBER_UNUSED EMBER_NOINLINE static void ember_qa_gemm4x(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int16_t *W,
                                                        int M4, int Kp, const int16_t *cols, const int32_t *rq,
                                                        const int32_t *out);
/* The M4 (a multiple of 4) rows of quads times the n columns. */
EMBER_INLINE void ember_qa_gemm4(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int16_t *W, int M4, int Kp,
                                 const int16_t *cols, const int32_t *rq, const int32_t *out, int mode) {
#if EMBER_HAVE_ARM_DSP
    if (mode == 2 && n == 2 && cs == 1 && out[0] == 0) {
        ember_qa_q42_t ctx;
        ctx.cols = cols, ctx.kb = 8 * Kp, ctx.y = y, ctx.rs = (int32_t)rs, ctx.rq = rq, ctx.w = W;
        ctx.wend = W + (ptrdiff_t)M4 * Kp, ctx.entry = 0, ctx.bq = 0;
        (Kp <= 64 ? ember_qa_gemm42s1 : ember_qa_gemm42s)(&ctx);
        return;
    }
#endif
    if (out[3] == 3) /* a mixed layer (its out[0] is 1, not the tile's 0) */
        ember_qa_gemm4x(y, rs, cs, n, W, M4, Kp, cols, rq, out);
    else if (mode) /* the SSAT form's results are the clamped fast form's (lo, hi = -128, 127): one copy less */
        ember_qa_gemm4_t(y, rs, cs, n, W, M4, Kp, cols, rq, out, 1);
    else
        ember_qa_gemm4_t(y, rs, cs, n, W, M4, Kp, cols, rq, out, 0);
}
/* A mixed layer (out = [1, lo, hi, 3, zero point, count, quads...]): the fast form (its zero point in ra, out's
 * 0) between the quads listed, the exact one, with the zero point apart, on those. Out of line: the other
 * layers' callers keep their registers. */
EMBER_UNUSED EMBER_NOINLINE static void ember_qa_gemm4x(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int16_t *W,
                                                        int M4, int Kp, const int16_t *cols, const int32_t *rq,
                                                        const int32_t *out) {
    const int32_t fast[4] = {0, out[1], out[2], 1}, ex[4] = {out[4], out[1], out[2], 0};
    const int mode = ember_qa_mode(fast);
    int m0 = 0, i;
    for (i = 0; i <= out[5]; ++i) {
        const int m1 = i < out[5] ? 4 * out[6 + i] : M4;
        if (m1 > m0)
            ember_qa_gemm4(y + m0 * rs, rs, cs, n, W + (ptrdiff_t)m0 * Kp, m1 - m0, Kp, cols, rq + 4 * m0, fast, mode);
        if (i < out[5])
            ember_qa_gemm4_t(y + m1 * rs, rs, cs, n, W + (ptrdiff_t)m1 * Kp, 4, Kp, cols, rq + 4 * m1, ex, 0);
        m0 = m1 + 4;
    }
}
/* y = W times the n columns, requantised (ember_qa_gemm2_t); `h` (a constant where inlined): int16 weights. */
EMBER_INLINE void ember_qa_gemm2_w(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int8_t *W, int M, int Kp,
                                   const int16_t *cols, const int32_t *rq, const int32_t *out, int h) {
    const int mode = ember_qa_mode(out);
    if (h && M >= 4) { /* int16 weights: the quads first, then the pairs of the last M % 4 rows */
        const int M4 = M & ~3;
        ember_qa_gemm4(y, rs, cs, n, (const int16_t *)(const void *)W, M4, Kp, cols, rq, out, mode);
        if (M == M4) return;
        y += M4 * rs, W += (ptrdiff_t)M4 * Kp * 2, rq += 4 * M4, M -= M4;
    }
    if (mode == 2 && n == 2) {
        const int M2 = M / 2;
        ember_qa_gemm22s(y, rs, cs, W, M2, Kp, cols, rq, out[0], h);
        if (M & 1)
            ember_qa_gemm2_t(y + 2 * M2 * rs, rs, cs, n, W + (ptrdiff_t)M2 * 2 * Kp * (1 + h), 1, Kp, cols,
                             rq + 8 * M2, out, 2, h);
    } else if (mode == 2)
        ember_qa_gemm2_t(y, rs, cs, n, W, M, Kp, cols, rq, out, 2, h);
    else if (mode == 1)
        ember_qa_gemm2_t(y, rs, cs, n, W, M, Kp, cols, rq, out, 1, h);
    else
        ember_qa_gemm2_t(y, rs, cs, n, W, M, Kp, cols, rq, out, 0, h);
}
/* int8 weights (fully-connected layers: dsp_weights) and int16 ones (convolutions: dsp_weights16). */
EMBER_UNUSED static void ember_qa_gemm2(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int8_t *W, int M, int Kp,
                                        const int16_t *cols, const int32_t *rq, const int32_t *out) {
    ember_qa_gemm2_w(y, rs, cs, n, W, M, Kp, cols, rq, out, 0);
}
EMBER_UNUSED static void ember_qa_gemm2h(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int16_t *W, int M, int Kp,
                                         const int16_t *cols, const int32_t *rq, const int32_t *out) {
    ember_qa_gemm2_w(y, rs, cs, n, (const int8_t *)(const void *)W, M, Kp, cols, rq, out, 1);
}
/*@end*/
