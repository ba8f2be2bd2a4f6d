/* int8 convolution, depthwise 3x3 and fully-connected kernels for Cortex-M cores with the DSP extension
 * (M4, M7, M33: SMLAD dual 16-bit multiply-accumulate, SXTB16 dual sign extension). passes/mcu_kernels.py
 * picks them per layer from the target table (Target.int8_isa), and packs their weights at compile time.
 *
 * Activations stay NCHW bytes. A layer first widens what one output needs into int16 minus the zero point
 * (a column of the convolution's window, or a padded plane of one channel), so that padding is 0 and the
 * sums need no zero-point correction; two int16 of a word are the two lanes SMLAD multiplies. Weights
 * are int8 in the order k0 k2 k1 k3 per group of 4 (ops/qarm.py `dsp_weights`): SXTB16 of the word gives
 * the lanes (k0, k1), of the word rotated by 8 (k2, k3), matching a column's two words. Convolutions
 * store them widened to int16 instead (`dsp_weights16`, twice the flash): no SXTB16 in the product loop,
 * 12.5 instructions per 16 multiply-adds where int8 weights take 17, and 11 with four output channels per
 * tile (their rows in quads: ember_qa_gemm4).
 *
 * Requantisation is quant.c's (acc * mult * 2^-shift rounded half to even, + zero point, clamped) for the
 * shifts 32..62 that the pass admits, from the 32-bit halves of one SMULL product: bit-exact with every
 * other path. Without the DSP extension (another --cpu) the same C computes with portable stand-ins. */

/*@kernel ember_qarm requires ember_prelude ember_qround*/
typedef uint32_t ember_qa_u32 __attribute__((may_alias, aligned(2)));
typedef uint32_t ember_qa_u8x4 __attribute__((may_alias, aligned(1)));
#if EMBER_HAVE_ARM_DSP
EMBER_UNUSED EMBER_INLINE uint32_t ember_qa_sx02(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
EMBER_UNUSED EMBER_INLINE uint32_t ember_qa_sx13(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
EMBER_UNUSED EMBER_INLINE int32_t ember_qa_smlad(uint32_t a, uint32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}
#else
EMBER_UNUSED EMBER_INLINE uint32_t ember_qa_sx02(uint32_t x) {
    return (uint32_t)(uint16_t)(int16_t)(int8_t)(x & 0xffu) | (uint32_t)(uint16_t)(int16_t)(int8_t)((x >> 16) & 0xffu) << 16;
}
EMBER_UNUSED EMBER_INLINE uint32_t ember_qa_sx13(uint32_t x) {
    return ember_qa_sx02(x >> 8 | x << 24);
}
EMBER_UNUSED EMBER_INLINE int32_t ember_qa_smlad(uint32_t a, uint32_t b, int32_t acc) {
    return acc + (int16_t)(a & 0xffffu) * (int16_t)(b & 0xffffu) + (int16_t)(a >> 16) * (int16_t)(b >> 16);
}
#endif
/* Requantisation of one output channel from its 4 table entries c = [mult, sh, ra, bias] and out = [zero
 * point, lo, hi, fast] (ops/qarm.py `rq_table`). fast (`fast_requant`): the real shift is 32 + sh with
 * sh >= 1, ra = 2^(sh-1), and no sum of the layer can be a tie, so that rounding half up (SMMLA's
 * multiply-high plus 2^(sh-1), then an arithmetic shift by sh) equals quant.c's half to even. Otherwise
 * quant.c's own computation: sh is the shift (1..62), floor((p + 2^(sh-1)) / 2^sh) for p = acc * mult in
 * 64 bits, made even where that sum is a multiple of 2^sh (a tie). `fast` is a constant where the callers
 * inline this, so each form is a loop of its own. The fast form is repeated in assembly in
 * ember_qa_gemm22s and in Helium vectors in ember_qa_mgemm22: a change of rounding changes all three. */
EMBER_INLINE int32_t ember_qa_smmla(int32_t a, int32_t b, int32_t ra) { /* (a * b + ra * 2^32) >> 32 */
#if EMBER_HAVE_ARM_DSP
    int32_t r;
    __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(ra));
    return r;
#else
    return (int32_t)(((int64_t)a * b + ((int64_t)ra << 32)) >> 32);
#endif
}
EMBER_INLINE uint8_t ember_qa_requant(int32_t acc, const int32_t *c, int32_t zp, int32_t lo, int32_t hi, int fast) {
    int32_t r;
    if (fast) {
        r = (ember_qa_smmla(acc, c[0], c[2]) >> c[1]) + zp;
#if EMBER_HAVE_ARM_DSP
        if (fast == 2) { /* the whole int8 range: one SSAT */
            __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(r));
            return (uint8_t)r;
        }
#endif
        return (uint8_t)(r < lo ? lo : r > hi ? hi : r);
    } else if (c[1] >= EMBER_Q_TFL) { /* TFLite's roundings (quant.c) */
        const int64_t v = ember_q_scale_tfl(acc, c[0], c[1]) + zp;
        return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
    } else {
        const int64_t p = (int64_t)acc * c[0] + ((int64_t)1 << (c[1] - 1));
        int64_t v = p >> c[1];
        if ((p & (((int64_t)1 << c[1]) - 1)) == 0) v &= ~(int64_t)1;
        v += zp;
        return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
    }
}
/* The requantisation form of a layer (the `fast` of ember_qa_requant): 0 exact, 1 fast, 2 fast onto the
 * whole int8 range (no activation clamp narrower than int8 fused). A mixed layer (out[3] = 3: convolutions
 * whose channels all lie in quads, the fast form but for the quads listed in out, ops/qarm.py `_tables`) is
 * 1 or 2 here; ember_qa_gemm4 tells it apart. */
EMBER_INLINE int ember_qa_mode(const int32_t *out) {
    return !out[3] ? 0 : out[1] == -128 && out[2] == 127 ? 2 : 1;
}
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
    __asm__("1:\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "ldrd %[x0], %[x1], [%[x]], #8\n\t"
            "sxtb16 %[t], %[wa]\n\t"
            "smlad %[a00], %[t], %[x0], %[a00]\n\t"
            "smlad %[a01], %[t], %[x1], %[a01]\n\t"
            "sxtb16 %[t], %[wb]\n\t"
            "smlad %[a10], %[t], %[x0], %[a10]\n\t"
            "smlad %[a11], %[t], %[x1], %[a11]\n\t"
            "ldrd %[x0], %[x1], [%[x]], #8\n\t"
            "sxtb16 %[t], %[wa], ror #8\n\t"
            "smlad %[a00], %[t], %[x0], %[a00]\n\t"
            "smlad %[a01], %[t], %[x1], %[a01]\n\t"
            "sxtb16 %[t], %[wb], ror #8\n\t"
            "smlad %[a10], %[t], %[x0], %[a10]\n\t"
            "smlad %[a11], %[t], %[x1], %[a11]\n\t"
            "cmp %[w], %[end]\n\t"
            "bne 1b"
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
/* The SMLAD loop of ember_qa_gemm22s over int8 weights (as ember_qa_dot22's). */
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
            __asm__("1:\n\t"
                    "ldr %[x0], [%[x]], #4\n\t"
                    "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                    "smlad %[s0], %[wa], %[x0], %[s0]\n\t"
                    "smlad %[s1], %[wb], %[x0], %[s1]\n\t"
                    "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                    "smlad %[s2], %[wa], %[x0], %[s2]\n\t"
                    "smlad %[s3], %[wb], %[x0], %[s3]\n\t"
                    "ldr %[x0], [%[x]], #4\n\t"
                    "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                    "smlad %[s0], %[wa], %[x0], %[s0]\n\t"
                    "smlad %[s1], %[wb], %[x0], %[s1]\n\t"
                    "ldrd %[wa], %[wb], [%[w]], #8\n\t"
                    "smlad %[s2], %[wa], %[x0], %[s2]\n\t"
                    "smlad %[s3], %[wb], %[x0], %[s3]\n\t"
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
/* Byte b of an int8 (flip 0x80) or uint8 (flip 0) tensor minus the zero point: (b ^ flip) - z2, where
 * z2 = zero point + (flip ? 128 : 0). */
#define EMBER_QA_VAL(b, flip, z2) ((int16_t)((int32_t)((b) ^ (flip)) - (z2)))
/* dst[i] = EMBER_QA_VAL(src[i]) for i < n: with the DSP extension four bytes per word, widened by UXTB16
 * into two halfword pairs, repaired to byte order by PKHBT/PKHTB, the zero point taken from both lanes by
 * SSUB16. Unaligned words: Cortex-M3 and up read and write them in normal memory. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif
EMBER_UNUSED static void ember_qa_widen(int16_t *EMBER_RESTRICT dst, const uint8_t *EMBER_RESTRICT src, int n, uint32_t flip,
                           int32_t z2) {
    int i = 0;
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
    /* Helium (ember_qarm_dw3_mve's planes): 8 bytes per step, zero-extended to int16 lanes, the last step
     * predicated: about 6 instructions per 8 where the DSP form takes 28. */
    const uint16x8_t f8 = vdupq_n_u16((uint16_t)flip), z8 = vdupq_n_u16((uint16_t)z2);
    for (; i < n; i += 8) {
        const mve_pred16_t live = vctp16q((uint32_t)(n - i));
        const uint16x8_t v = vsubq_u16(veorq_u16(vldrbq_z_u16(src + i, live), f8), z8);
        vstrhq_p_s16(dst + i, vreinterpretq_s16_u16(v), live);
    }
#elif EMBER_HAVE_ARM_DSP
    const uint32_t f4 = flip * 0x01010101u, zz = (uint32_t)(uint16_t)z2 * 0x10001u;
    const int n4 = n & ~3;
    for (; i < n4; i += 4) {
        const uint32_t w = *(const ember_qa_u8x4 *)(const void *)(src + i) ^ f4;
        uint32_t e, o, lo, hi;
        __asm__("uxtb16 %0, %1" : "=r"(e) : "r"(w));
        __asm__("uxtb16 %0, %1, ror #8" : "=r"(o) : "r"(w));
        __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(lo) : "r"(e), "r"(o));
        __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(hi) : "r"(o), "r"(e));
        __asm__("ssub16 %0, %1, %2" : "=r"(lo) : "r"(lo), "r"(zz));
        __asm__("ssub16 %0, %1, %2" : "=r"(hi) : "r"(hi), "r"(zz));
        ((ember_qa_u32 *)(void *)(dst + i))[0] = lo;
        ((ember_qa_u32 *)(void *)(dst + i))[1] = hi;
    }
#endif
    for (; i < n; ++i) dst[i] = EMBER_QA_VAL(src[i], flip, z2);
}
/* A fully-connected layer's row of A at a0 (and the next when two) as the plain columns t0 (t1) of Kp int16,
 * zero past K. */
EMBER_UNUSED EMBER_INLINE void ember_qa_fc_rows(int16_t *t0, int16_t *t1, const uint8_t *a0, int K, int Kp, int two,
                                             uint32_t flip, int32_t z2) {
    int k;
    ember_qa_widen(t0, a0, K, flip, z2);
    for (k = K; k < Kp; ++k) t0[k] = 0;
    if (two) {
        ember_qa_widen(t1, a0 + K, K, flip, z2);
        for (k = K; k < Kp; ++k) t1[k] = 0;
    }
}
/* The columns t0, t1 (Kp int16 each, 4-byte aligned) as ember_qa_dot22 reads them: per 4 k, the words
 * (k0,k1) of both, then (k2,k3) of both. */
EMBER_UNUSED static void ember_qa_pair_cols(int16_t *EMBER_RESTRICT cols, const int16_t *t0, const int16_t *t1, int Kp) {
    const uint32_t *a = (const uint32_t *)(const void *)t0, *b = (const uint32_t *)(const void *)t1;
    uint32_t *d = (uint32_t *)(void *)cols;
#if EMBER_HAVE_ARM_DSP /* 6 instructions per 4 k (the compiler's unrolled copy: 10); Kp >= 4. The pointers are
                        * early-clobber: aend equals t1, which the compiler would otherwise put in b's register. */
    const uint32_t *const aend = a + Kp / 2;
    uint32_t a0, a1, b0, b1;
    __asm__("1:\n\t"
            "ldrd %[a0], %[a1], [%[a]], #8\n\t"
            "ldrd %[b0], %[b1], [%[b]], #8\n\t"
            "strd %[a0], %[b0], [%[d]], #16\n\t"
            "strd %[a1], %[b1], [%[d], #-8]\n\t"
            "cmp %[a], %[aend]\n\t"
            "bne 1b"
            : [a] "+&r"(a), [b] "+&r"(b), [d] "+&r"(d), [a0] "=&r"(a0), [a1] "=&r"(a1), [b0] "=&r"(b0), [b1] "=&r"(b1)
            : [aend] "r"(aend)
            : "cc", "memory");
#else
    int g;
    for (g = 0; g < Kp / 4; ++g, a += 2, b += 2, d += 4) {
        const uint32_t a0 = a[0], a1 = a[1], b0 = b[0], b1 = b[1];
        d[0] = a0;
        d[1] = b0;
        d[2] = a1;
        d[3] = b1;
    }
#endif
}
/*@end*/

/*@kernel ember_qarm_conv requires ember_qarm ember_conv_geo*/
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
                    __asm__("uxtb16 %0, %1" : "=r"(e) : "r"(w));
                    __asm__("uxtb16 %0, %1, ror #8" : "=r"(o) : "r"(w));
                    __asm__("ssub16 %0, %1, %2" : "=r"(e) : "r"(e), "r"(zz));
                    __asm__("ssub16 %0, %1, %2" : "=r"(o) : "r"(o), "r"(zz));
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
                __asm__("uxtb16 %0, %1" : "=r"(e) : "r"(w));
                __asm__("uxtb16 %0, %1, ror #8" : "=r"(o) : "r"(w));
                __asm__("ssub16 %0, %1, %2" : "=r"(e) : "r"(e), "r"(zz));
                __asm__("ssub16 %0, %1, %2" : "=r"(o) : "r"(o), "r"(zz));
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
                __asm__("uxtb16 %0, %1" : "=r"(e) : "r"(w));
                __asm__("uxtb16 %0, %1, ror #8" : "=r"(o) : "r"(w));
                __asm__("ssub16 %0, %1, %2" : "=r"(e) : "r"(e), "r"(zz));
                __asm__("ssub16 %0, %1, %2" : "=r"(o) : "r"(o), "r"(zz));
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
/* Convolution (2-D, one group) of N images: y[n][m][pixel] requantised from W times the windows, two output
 * pixels at a time: their columns built plainly in t (2 x Kp int16, Kp: K rounded up to `kq`), then
 * handed to `gemm` (qarm.c's SMLAD product, which interleaves them first, or Helium's). A 1x1 stride-1
 * unpadded convolution reads its columns straight from the channel planes (`dsp`: two at a time already
 * interleaved for ember_qa_gemm2, ember_qa_direct2). Scratch: 8 * Kp bytes. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE_COLS 1 /* Helium gathers for a 1x1 layer's columns (any product) */
#else
#define EMBER_QA_MVE_COLS 0
#endif
typedef void (*ember_qa_gemm_fn)(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                                 const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out);
/* A residual add fused into the requantisation (ember_qarm_conv_add): ember_qa_conv_t stores the outputs of
 * EMBER_QA_STAGE pixels in `stage` (M rows of EMBER_QA_STAGE bytes), then `fin` writes y[m * ys + j] =
 * QAdd(stage[m][j], r[m * ys + j]) for j < n: element by element, so y may be r (the output in place over
 * the residual, ops/qconv_add.py). */
#define EMBER_QA_STAGE 16
typedef void (*ember_qa_res_fn)(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n,
                                int sgn, const int32_t *radd);
EMBER_INLINE void ember_qa_conv_t(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                  const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols, int kq,
                                  ember_qa_gemm_fn gemm, int dsp, ember_qa_res_fn fin, const uint8_t *res,
                                  const int32_t *radd, uint8_t *stage) {
    const int C = p[EMBER_GEO_C], OH = p[EMBER_GEO_OUT_H], OW = p[EMBER_GEO_OUT_W];
    const int K = C * p[EMBER_GEO_K_H] * p[EMBER_GEO_K_W], Kp = (K + kq - 1) / kq * kq, P = OH * OW;
    const ptrdiff_t S = (ptrdiff_t)p[EMBER_GEO_IN_H] * p[EMBER_GEO_IN_W];
    const int direct = K == C && S == P && p[EMBER_GEO_PAD_H] == 0 && p[EMBER_GEO_PAD_W] == 0;
    const int pairs = p[EMBER_GEO_STRIDE_W] <= 2 && p[EMBER_GEO_K_W] == 3 && p[EMBER_GEO_DIL_W] == 1; /* col2's */
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    int16_t *t0 = cols + 2 * Kp, *t1 = t0 + Kp;
    int n, q, c, oh = 0, ow = 0, built;
    int16_t *il = 0; /* ember_qa_col2's interleaved columns (cols) where ember_qa_gemm42b takes them */
#if EMBER_HAVE_ARM_DSP
    /* the common case: ember_qa_gemm42s straight, its context set once (ember_qa_gemm2h's checks and context
     * cost about 80 instructions per column pair) */
    ember_qa_q42_t q42;
    const int s42 = dsp && M % 4 == 0 && out[3] != 3 && ember_qa_mode(out) == 2 && out[0] == 0;
    q42.cols = cols, q42.kb = 8 * Kp, q42.rq = rq, q42.w = (const int16_t *)(const void *)W;
    q42.wend = q42.w + (ptrdiff_t)M * Kp, q42.entry = 0, q42.bq = rq + 4 * M; /* ops/qarm.py `_tables`' pairs */
    const ember_qa_q42_fn g42b = Kp <= 64 ? ember_qa_gemm42b1 : ember_qa_gemm42b; /* one pass, or more */
    /* ops/qarm.py `_tables`' fold: a 1x1 layer's bias pairs hold the zero point's share (rq[6 M] = 1), so that
     * ember_qa_direct2 leaves the bytes' values as they are */
    const int fz = s42 && direct && rq[6 * M];
    if (s42) il = cols;
    const int s2i = s42 && !direct && p[EMBER_GEO_STRIDE_W] == 2 && p[EMBER_GEO_K_W] == 3 && p[EMBER_GEO_DIL_W] == 1;
    const int SH = p[EMBER_GEO_STRIDE_H], PH = p[EMBER_GEO_PAD_H], PW = p[EMBER_GEO_PAD_W], KH = p[EMBER_GEO_K_H];
    const int DH = p[EMBER_GEO_DIL_H], IH = p[EMBER_GEO_IN_H], IW = p[EMBER_GEO_IN_W];
    const ptrdiff_t RS = (ptrdiff_t)DH * IW;
#endif
    for (n = 0; n < N; ++n) {
        const uint8_t *xn = x + (ptrdiff_t)n * C * S;
        uint8_t *yn = y + (ptrdiff_t)n * M * P;
        const uint8_t *rn = res ? res + (ptrdiff_t)n * M * P : 0;
        q = 0;
#if EMBER_HAVE_ARM_DSP
        if (s42 && direct && !res) { /* a 1x1 layer's column pairs, nothing else to track */
            q42.rs = (int32_t)P;
            if (fz && C % 4 == 0) { /* four pixels' columns at a time, the second pair's where t0, t1 would be */
                for (; q + 3 < P; q += 4) {
                    ember_qa_direct4(cols, t0, xn + q, S, C, flip);
                    q42.y = yn + q, q42.cols = cols;
                    g42b(&q42);
                    q42.y = yn + q + 2, q42.cols = t0;
                    g42b(&q42);
                }
                q42.cols = cols;
            }
            for (; q + 1 < P; q += 2) {
                ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, fz);
                q42.y = yn + q;
                g42b(&q42);
            }
        }
#endif
        for (; q < P; q += 2) {
            const int two = q + 1 < P;
            built = 0;
            /* a fused residual add (ember_qarm_conv_add): the outputs go to the stage first */
            uint8_t *const yq = res ? stage + (q & (EMBER_QA_STAGE - 1)) : yn + q;
            const ptrdiff_t rs = res ? EMBER_QA_STAGE : P;
            if (res && q && (q & (EMBER_QA_STAGE - 1)) == 0)
                fin(yn + q - EMBER_QA_STAGE, P, stage, rn + q - EMBER_QA_STAGE, M, EMBER_QA_STAGE, sgn, radd);
            if (dsp && direct && two) { /* SMLAD's interleaved columns straight from the planes */
#if EMBER_HAVE_ARM_DSP
                if (s42) {
                    ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, fz);
                    q42.y = yq, q42.rs = (int32_t)rs;
                    g42b(&q42);
                    continue;
                }
#endif
                ember_qa_direct2(cols, xn + q, S, C, Kp, flip, z2, 0);
                ember_qa_gemm2h(yq, rs, 1, 2, (const int16_t *)(const void *)W, M, Kp, cols, rq, out);
                continue;
            }
            if (direct) {
                const uint8_t *xq = xn + q;
                c = 0;
#if EMBER_QA_MVE_COLS /* byte gathers S apart, widened: eight channels of both pixels per step where
                       * the offsets fit 16-bit lanes, otherwise four */
                if ((uint32_t)S <= 0xffffu / 7) {
                    const uint16x8_t offs = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)S);
                    const uint16x8_t vf = vdupq_n_u16((uint16_t)flip), vz = vdupq_n_u16((uint16_t)z2);
                    for (; c < C; c += 8, xq += 8 * S) {
                        const mve_pred16_t live = vctp16q((uint32_t)(C - c));
                        const uint16x8_t b0 = vldrbq_gather_offset_z_u16(xq, offs, live);
                        const uint16x8_t b1 = vldrbq_gather_offset_z_u16(xq + two, offs, live);
                        vstrhq_p_s16(t0 + c, vreinterpretq_s16_u16(vsubq_u16(veorq_u16(b0, vf), vz)), live);
                        vstrhq_p_s16(t1 + c, vreinterpretq_s16_u16(vsubq_u16(veorq_u16(b1, vf), vz)), live);
                    }
                    c = C;
                } else {
                    const uint32x4_t offs = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)S);
                    const int32x4_t vf = vdupq_n_s32((int32_t)flip), vz = vdupq_n_s32(z2);
                    for (; c < C; c += 4, xq += 4 * S) {
                        const mve_pred16_t live = vctp32q((uint32_t)(C - c));
                        const int32x4_t b0 = vreinterpretq_s32_u32(vldrbq_gather_offset_z_u32(xq, offs, live));
                        const int32x4_t b1 = vreinterpretq_s32_u32(vldrbq_gather_offset_z_u32(xq + two, offs, live));
                        vstrhq_p_s32(t0 + c, vsubq_s32(veorq_s32(b0, vf), vz), live);
                        vstrhq_p_s32(t1 + c, vsubq_s32(veorq_s32(b1, vf), vz), live);
                    }
                    c = C;
                }
#else
                for (; c < C; ++c, xq += S) {
                    t0[c] = EMBER_QA_VAL(xq[0], flip, z2);
                    t1[c] = EMBER_QA_VAL(xq[two], flip, z2);
                }
#endif
                for (; c < Kp; ++c) t0[c] = t1[c] = 0;
            }
#if EMBER_HAVE_ARM_DSP
            else if (s2i && two && ow + 1 < OW && oh * SH - PH >= 0 && oh * SH - PH + (KH - 1) * DH < IH &&
                     ow * 2 - PW >= 0 && ow * 2 - PW + 4 < IW) {
                /* a stride-2 pair inside the image: ember_qa_col2's interleaved columns with its checks here */
                const uint8_t *xc = xn + (ptrdiff_t)(oh * SH - PH) * IW + ow * 2 - PW;
                if (flip)
                    ember_qa_col2i_t((uint32_t *)(void *)cols, xc, S, RS, C * KH, KH, z2, Kp, 1);
                else
                    ember_qa_col2i_t((uint32_t *)(void *)cols, xc, S, RS, C * KH, KH, z2, Kp, 0);
                if ((ow += 2) == OW) ow = 0, ++oh;
                q42.y = yq, q42.rs = (int32_t)rs;
                g42b(&q42);
                continue;
            }
#endif
            else if (pairs && two && ow + 1 < OW && (built = ember_qa_col2(t0, t1, il, xn, flip, z2, p, oh, ow, Kp))) {
                if ((ow += 2) == OW) ow = 0, ++oh;
            } else {
                ember_qa_col(t0, xn, flip, z2, p, oh, ow, Kp);
                if (++ow == OW) ow = 0, ++oh;
                if (two) {
                    ember_qa_col(t1, xn, flip, z2, p, oh, ow, Kp);
                    if (++ow == OW) ow = 0, ++oh;
                }
            }
#if EMBER_HAVE_ARM_DSP
            if (s42 && two) {
                if (built != 2) ember_qa_pair_cols(cols, t0, t1, Kp);
                q42.y = yq, q42.rs = (int32_t)rs;
                g42b(&q42);
                continue;
            }
#endif
            gemm(yq, rs, 1 + two, W, M, Kp, cols, t0, t1, rq, out);
        }
        if (res && P) { /* the last, maybe partial, stage */
            const int q0 = (P - 1) & ~(EMBER_QA_STAGE - 1);
            fin(yn + q0, P, stage, rn + q0, M, P - q0, sgn, radd);
        }
        oh = ow = 0;
    }
}
/* The SMLAD product of ember_qa_conv_t's two plain columns (interleaved first when there are two). */
EMBER_UNUSED static void ember_qa_gemm_dsp(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    if (n == 2) ember_qa_pair_cols(cols, t0, t1, Kp);
    ember_qa_gemm2h(y, rs, 1, n, (const int16_t *)(const void *)W, M, Kp, n == 2 ? cols : t0, rq, out);
}
EMBER_UNUSED static void ember_qarm_conv(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                            const int16_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    /* W: int16 (dsp_weights16), carried through ember_qa_conv_t's byte pointer to ember_qa_gemm2h */
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, (const int8_t *)(const void *)W, rq, out, cols, 4, ember_qa_gemm_dsp, 1,
                    0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_fc requires ember_qarm*/
/* Fully connected: y[r][n] requantised from sum_k (a[r][k] - zero point) W[n][k] + bias[n], rows of A in
 * pairs (the two columns of ember_qa_gemm2). Scratch: cols then two plain columns, 8 * Kp bytes; one row of A
 * only its plain column, 2 * Kp bytes (ops/qarm.py `fc_scratch`). */
static void ember_qarm_fc(uint8_t *y, const uint8_t *a, int sgn, int32_t az, int R, int Nout, int K,
                          const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    const int Kp = (K + 3) & ~3;
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = az + (sgn ? 128 : 0);
    int16_t *t0 = R > 1 ? cols + 2 * Kp : cols, *t1 = t0 + Kp;
    int r;
    for (r = 0; r < R; r += 2) {
        const int two = r + 1 < R;
        ember_qa_fc_rows(t0, t1, a + (ptrdiff_t)r * K, K, Kp, two, flip, z2);
        if (two) ember_qa_pair_cols(cols, t0, t1, Kp);
        ember_qa_gemm2(y + (ptrdiff_t)r * Nout, 1, Nout, 1 + two, W, Nout, Kp, two ? cols : t0, rq, out);
    }
}
/*@end*/

/*@kernel ember_qarm_dw3 requires ember_qarm ember_conv_geo*/
/* Outputs ow .. ow + 3 of a stride-1 3x3 window: o[0..3] plus three plane rows (from p, Wp int16 apart, p
 * 4-byte aligned; it reads p[0 .. 5] of each) times wv = per kernel row the pairs A (w0,w1) B (w2,0)
 * C (0,w0) D (w1,w2): with X0 X1 X2 the row's words (p0,p1) (p2,p3) (p4,p5), o0 += X0.A + X1.B,
 * o1 += X0.C + X1.D, o2 += X1.A + X2.B, o3 += X1.C + X2.D. 38 instructions for 36 multiply-adds (two
 * outputs at a time took 48); in assembly: the compiler spills around the weight words. */
#define EMBER_QA_DW3_ROW(OFS)                        \
    "ldrd %[x0], %[x1], [%[q]]\n\t"                  \
    "ldr %[x2], [%[q], #8]\n\t"                      \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "]\n\t"      \
    "smlad %[o0], %[x0], %[wa], %[o0]\n\t"           \
    "smlad %[o0], %[x1], %[wb], %[o0]\n\t"           \
    "smlad %[o2], %[x1], %[wa], %[o2]\n\t"           \
    "smlad %[o2], %[x2], %[wb], %[o2]\n\t"           \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "+8]\n\t"    \
    "smlad %[o1], %[x0], %[wa], %[o1]\n\t"           \
    "smlad %[o1], %[x1], %[wb], %[o1]\n\t"           \
    "smlad %[o3], %[x1], %[wa], %[o3]\n\t"           \
    "smlad %[o3], %[x2], %[wb], %[o3]\n\t"
/* Outputs ow .. ow + 3 of a stride-2 3x3 window, as ember_qa_dw3_quad (p: the plane at column 2 * ow; it
 * reads p[0 .. 9] of each row): with X0 .. X4 the row's words, o0 += X0.A + X1.B, o1 += X1.A + X2.B,
 * o2 += X2.A + X3.B, o3 += X3.A + X4.B. 39 instructions for 36 multiply-adds (one output at a time: 33
 * per output). */
#define EMBER_QA_DW3_ROW2(OFS)                       \
    "ldrd %[x0], %[x1], [%[q]]\n\t"                  \
    "ldr %[x2], [%[q], #8]\n\t"                      \
    "ldrd %[wa], %[wb], [%[wv], #" #OFS "]\n\t"      \
    "smlad %[o0], %[x0], %[wa], %[o0]\n\t"           \
    "smlad %[o0], %[x1], %[wb], %[o0]\n\t"           \
    "smlad %[o1], %[x1], %[wa], %[o1]\n\t"           \
    "smlad %[o1], %[x2], %[wb], %[o1]\n\t"           \
    "ldrd %[x0], %[x1], [%[q], #12]\n\t"             \
    "smlad %[o2], %[x2], %[wa], %[o2]\n\t"           \
    "smlad %[o2], %[x0], %[wb], %[o2]\n\t"           \
    "smlad %[o3], %[x0], %[wa], %[o3]\n\t"           \
    "smlad %[o3], %[x1], %[wb], %[o3]\n\t"
/* One of them from its kernel row ROW; without the DSP extension the same sums in C, output j from the
 * words X[XS[j]], X[XS[j] + 1] (X[k] at p + 2 k) and the weight pairs wv[WS[j]], wv[WS[j] + 1]. */
#if EMBER_HAVE_ARM_DSP
#define EMBER_QA_DW3_QUADFN(NAME, ROW, XS, WS)                                                                     \
    EMBER_INLINE void NAME(int32_t o[4], const int16_t *p, int Wp, const uint32_t *wv) {                          \
        int32_t o0 = o[0], o1 = o[1], o2 = o[2], o3 = o[3];                                                      \
        uint32_t x0, x1, x2, wa, wb;                                                                              \
        const int16_t *q = p;                                                                                     \
        __asm__(ROW(0) "add %[q], %[q], %[rs]\n\t" ROW(16) "add %[q], %[q], %[rs]\n\t" ROW(32)                    \
                : [o0] "+r"(o0), [o1] "+r"(o1), [o2] "+r"(o2), [o3] "+r"(o3), [q] "+r"(q), [x0] "=&r"(x0),      \
                  [x1] "=&r"(x1), [x2] "=&r"(x2), [wa] "=&r"(wa), [wb] "=&r"(wb)                                  \
                : [rs] "r"(2 * Wp), [wv] "r"(wv)                                                                  \
                : "memory");                                                                                      \
        o[0] = o0, o[1] = o1, o[2] = o2, o[3] = o3;                                                               \
    }
#else
#define EMBER_QA_DW3_QUADFN(NAME, ROW, XS, WS)                                                                     \
    EMBER_INLINE void NAME(int32_t o[4], const int16_t *p, int Wp, const uint32_t *wv) {                          \
        static const int xs[4] = {XS}, ws[4] = {WS};                                                              \
        int i, j;                                                                                                 \
        for (i = 0; i < 3; ++i, p += Wp, wv += 4) {                                                               \
            const ember_qa_u32 *x = (const ember_qa_u32 *)(const void *)p;                                        \
            for (j = 0; j < 4; ++j)                                                                               \
                o[j] = ember_qa_smlad(x[xs[j] + 1], wv[ws[j] + 1], ember_qa_smlad(x[xs[j]], wv[ws[j]], o[j]));    \
        }                                                                                                         \
    }
#endif
#define EMBER_QA_DW3_XS1 0, 0, 1, 1
#define EMBER_QA_DW3_WS1 0, 2, 0, 2
#define EMBER_QA_DW3_XS2 0, 1, 2, 3
#define EMBER_QA_DW3_WS2 0, 0, 0, 0
EMBER_QA_DW3_QUADFN(ember_qa_dw3_quad, EMBER_QA_DW3_ROW, EMBER_QA_DW3_XS1, EMBER_QA_DW3_WS1)
EMBER_QA_DW3_QUADFN(ember_qa_dw3_quad2, EMBER_QA_DW3_ROW2, EMBER_QA_DW3_XS2, EMBER_QA_DW3_WS2)
#undef EMBER_QA_DW3_QUADFN
#undef EMBER_QA_DW3_XS1
#undef EMBER_QA_DW3_WS1
#undef EMBER_QA_DW3_XS2
#undef EMBER_QA_DW3_WS2
#undef EMBER_QA_DW3_ROW
#undef EMBER_QA_DW3_ROW2
#if EMBER_HAVE_ARM_DSP
/* A channel's output rows of n >= 1 outputs each (stored one row after the other from y) from the plane rows
 * q, q + wv[15] bytes, ..., each output requantised by the SSAT form with the zero point in ra (ops/qarm.py
 * `fold_zp`). wv: [0 .. 3] the bias four times (one LDM starts a step's sums), [4 .. 9] per kernel row the
 * words A = (w0, w1) and D = (w1, w2), [10 .. 12] mult, sh, ra, [13] the plane's row in bytes, [14] the rows
 * (>= 1), [15] the plane's bytes from one output row to the next. A row: n / 4 steps of four outputs, then its
 * n % 4 last from a step of two (n % 4 <= 2) or four (TBB picks). With X0 X1 X2 a kernel row's words (p0, p1)
 * (p2, p3) (p4, p5) at the step's first column, o0 += X0.A + p2 w2, o1 += p1 w0 + X1.D, o2 += X1.A + p4 w2,
 * o3 += p3 w0 + X2.D (stride 2, with the words X0 .. X4: o_j += X_j.A + X_{j+1}.lo w2): SMLAD for a pair of
 * products, SMLABT / SMLATB for one, so two weight words per kernel row (the pairs (w2, 0) and (0, w0) took
 * another load). Naked, all in registers (o0 .. o3 in r0 .. r3, q r4, row words r5 r6 r8, weight words r9 r10,
 * r11 the plane's row bytes, wv r12, y lr, the steps left r7; y's end and the step to the next row on the
 * stack): 54 instructions per step of stride 1 on a plane of fixed pitch (_row1p, where r11 keeps ra; stride 2,
 * _row2p: 57), 4 more where the rows lie r11 bytes apart; 6 a row (the _s variants, for rows under 4: 8). */
/* Three outputs of a kernel row (EMBER_QA_DW3_R1 without o3; ember_qa_dw3_row3p below). */
#define EMBER_QA_DW3_R3(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldr r8, [r4, #" B "+8]\n\t"                     \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlatb r1, r5, r9, r1\n\t"                      \
    "smlad r1, r6, r10, r1\n\t"                      \
    "smlad r2, r6, r9, r2\n\t"                       \
    "smlabt r2, r8, r10, r2\n\t"
#define EMBER_QA_DW3_R1(OFS, B)                      \
    EMBER_QA_DW3_R3(OFS, B)                          \
    "smlatb r3, r6, r9, r3\n\t"                      \
    "smlad r3, r8, r10, r3\n\t"
/* The same for o0 and o1 alone (a row's last one or two outputs). */
#define EMBER_QA_DW3_T1(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlatb r1, r5, r9, r1\n\t"                      \
    "smlad r1, r6, r10, r1\n\t"
#define EMBER_QA_DW3_T2(OFS, B)                      \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldr r8, [r4, #" B "+8]\n\t"                     \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlad r1, r6, r9, r1\n\t"                       \
    "smlabt r1, r8, r10, r1\n\t"
#define EMBER_QA_DW3_R2(OFS, B)                      \
    EMBER_QA_DW3_T2(OFS, B)                          \
    "ldrd r5, r6, [r4, #" B "+12]\n\t"               \
    "smlad r2, r8, r9, r2\n\t"                       \
    "smlabt r2, r5, r10, r2\n\t"                     \
    "smlad r3, r5, r9, r3\n\t"                       \
    "smlabt r3, r6, r10, r3\n\t"
/* The three kernel rows of a step: r11 bytes apart, or EMBER_QA_DW3_PITCH int16 (immediate offsets). */
#define EMBER_QA_DW3_ROWS(ROW)                                                                                      \
    ROW(16, "0") "add r4, r4, r11\n\t" ROW(24, "0") "add r4, r4, r11\n\t" ROW(32, "0") "sub r4, r4, r11, lsl #1\n\t"
#define EMBER_QA_DW3_ROWSP(ROW) ROW(16, "0") ROW(24, "128") ROW(32, "256")
#define EMBER_QA_DW3_RQ(O, RA)                       \
    "smmla " O ", " O ", r9, " RA "\n\t"              \
    "asr " O ", " O ", r10\n\t"                       \
    "ssat " O ", #8, " O "\n\t"
/* The row functions' signature (naked: their assembly saves and restores what it uses) and the first steps
 * of most: r4 = q, lr = y, r12 = wv. */
#define EMBER_QA_DW3_NAKED(NAME)                                                                                    \
    EMBER_UNUSED EMBER_NOINLINE __attribute__((naked)) static void NAME(                                           \
        EMBER_UNUSED const int16_t *q, EMBER_UNUSED uint8_t *y, EMBER_UNUSED const uint32_t *wv, EMBER_UNUSED int n)
#define EMBER_QA_DW3_ENTRY "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\tmov r4, r0\n\tmov lr, r1\n\tmov r12, r2\n\t"
/* One naked row function: ROWS (EMBER_QA_DW3_ROWS or _ROWSP), STEP and TWO (a step of four and of two, as
 * EMBER_QA_DW3_R1 and _T1), ADV (a step's bytes along the plane's row, 2^LOG), R11 (wv's byte offset for r11),
 * RQP (loads ra into RA where r11 does not keep it), CHK (a row's test for no step of four: the _s variants,
 * for n < 4, have it). */
#define EMBER_QA_DW3_CHK "cmp r7, #0\n\tbeq 3f\n\t"
#define EMBER_QA_DW3_ROWFN(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, CHK)                                    \
    EMBER_QA_DW3_NAKED(NAME) {                                                                                   \
    __asm__(EMBER_QA_DW3_ENTRY                                                                                   \
            "ldr r11, [r12, #" R11 "]\n\t"                                                                       \
            "ldr r1, [r12, #56]\n\t"                                                                             \
            "ldr r2, [r12, #60]\n\t"                                                                             \
            "mul r1, r1, r3\n\t"                                                                                 \
            "add r0, lr, r1\n\t" /* y's end */                                                                   \
            "lsrs r7, r3, #2\n\t"                                                                                \
            "sub r1, r2, r7, lsl #" LOG "\n\t" /* from a row's last step of four to the next row */              \
            "mov r2, r7\n\t"                                                                                     \
            "and r3, r3, #3\n\t"                                                                                 \
            /* sp + 0: y's end, 4: the step to the next row, 8: steps of four a row, 12: the last outputs */       \
            "push {r0, r1, r2, r3}\n\t"                                                                          \
            "1:\n\t"                                                                                             \
            CHK                                                                                                  \
            "0:\n\t"                                                                                             \
            "ldm r12, {r0, r1, r2, r3}\n\t"                                                                      \
            ROWS(STEP)                                                                                           \
            "add r4, r4, #" ADV "\n\t"                                                                           \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA) EMBER_QA_DW3_RQ("r2", RA) EMBER_QA_DW3_RQ("r3", RA)\
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r2, [lr, #2]\n\t"                                                                              \
            "strb r3, [lr, #3]\n\t"                                                                              \
            "strb r0, [lr], #4\n\t"                                                                              \
            "subs r7, r7, #1\n\t"                                                                                \
            "bne 0b\n\t"                                                                                         \
            "3:\n\t"                                                                                             \
            "ldr r7, [sp, #12]\n\t"                                                                              \
            "tbb [pc, r7]\n\t"                                                                                   \
            "4:\n\t"                                                                                             \
            ".byte (6f - 4b) / 2, (7f - 4b) / 2, (8f - 4b) / 2, (9f - 4b) / 2\n\t"                               \
            "6:\n\t" /* the next output row: y is right after this one's last output */                         \
            "ldm sp, {r5, r6, r7}\n\t"                                                                           \
            "add r4, r4, r6\n\t"                                                                                 \
            "cmp lr, r5\n\t"                                                                                     \
            "bne 1b\n\t"                                                                                         \
            "add sp, sp, #16\n\t"                                                                                \
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"                                                     \
            "7:\n\t" /* one output left */                                                                       \
            "ldm r12, {r0, r1}\n\t"                                                                              \
            ROWS(TWO)                                                                                            \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA)                                                                            \
            "strb r0, [lr], #1\n\t"                                                                              \
            "b 6b\n\t"                                                                                           \
            "8:\n\t" /* two */                                                                                   \
            "ldm r12, {r0, r1}\n\t"                                                                              \
            ROWS(TWO)                                                                                            \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA)                                                  \
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r0, [lr], #2\n\t"                                                                              \
            "b 6b\n\t"                                                                                           \
            "9:\n\t" /* three: a step of four */                                                                 \
            "ldm r12, {r0, r1, r2, r3}\n\t"                                                                      \
            ROWS(STEP)                                                                                           \
            "ldrd r9, r10, [r12, #40]\n\t"                                                                       \
            RQP                                                                                                  \
            EMBER_QA_DW3_RQ("r0", RA) EMBER_QA_DW3_RQ("r1", RA) EMBER_QA_DW3_RQ("r2", RA)                        \
            "strb r1, [lr, #1]\n\t"                                                                              \
            "strb r2, [lr, #2]\n\t"                                                                              \
            "strb r0, [lr], #3\n\t"                                                                              \
            "b 6b");                                                                                             \
    }
#define EMBER_QA_DW3_PITCH 64 /* int16: ember_qa_dw3_row1p/2p's plane rows, 128 bytes (EMBER_QA_DW3_ROWSP) */
#define EMBER_QA_DW3_ROWFNS(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA)                                        \
    EMBER_QA_DW3_ROWFN(NAME, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, "")                                         \
    EMBER_QA_DW3_ROWFN(NAME##s, ROWS, STEP, TWO, ADV, LOG, R11, RQP, RA, EMBER_QA_DW3_CHK)
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row1, EMBER_QA_DW3_ROWS, EMBER_QA_DW3_R1, EMBER_QA_DW3_T1, "8", "3", "52",
                    "ldr r8, [r12, #48]\n\t", "r8")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row2, EMBER_QA_DW3_ROWS, EMBER_QA_DW3_R2, EMBER_QA_DW3_T2, "16", "4", "52",
                    "ldr r8, [r12, #48]\n\t", "r8")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row1p, EMBER_QA_DW3_ROWSP, EMBER_QA_DW3_R1, EMBER_QA_DW3_T1, "8", "3", "48", "",
                    "r11")
EMBER_QA_DW3_ROWFNS(ember_qa_dw3_row2p, EMBER_QA_DW3_ROWSP, EMBER_QA_DW3_R2, EMBER_QA_DW3_T2, "16", "4", "48", "",
                    "r11")
#undef EMBER_QA_DW3_ROWFNS
#undef EMBER_QA_DW3_CHK
#undef EMBER_QA_DW3_ROWFN
/* ember_qa_dw3_row1p for rows of 6 outputs (VWW's 6 x 6 maps), each row one step of six where a step of four and
 * one of two took 89 instructions: 80, the sums in r0 .. r3, r5, r6, the row words in r7 .. r10, the weight
 * words in r11, lr, y and y's end and the plane's row step on the stack. */
#define EMBER_QA_DW3_R6(OFS, B)                      \
    "ldrd r7, r8, [r4, #" B "]\n\t"                  \
    "ldrd r9, r10, [r4, #" B "+8]\n\t"               \
    "ldrd r11, lr, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r7, r11, r0\n\t"                      \
    "smlabt r0, r8, lr, r0\n\t"                      \
    "smlatb r1, r7, r11, r1\n\t"                     \
    "smlad r1, r8, lr, r1\n\t"                       \
    "smlad r2, r8, r11, r2\n\t"                      \
    "smlabt r2, r9, lr, r2\n\t"                      \
    "smlatb r3, r8, r11, r3\n\t"                     \
    "smlad r3, r9, lr, r3\n\t"                       \
    "smlad r5, r9, r11, r5\n\t"                      \
    "smlabt r5, r10, lr, r5\n\t"                     \
    "smlatb r6, r9, r11, r6\n\t"                     \
    "smlad r6, r10, lr, r6\n\t"
#define EMBER_QA_DW3_RQ6(O) "smmla " O ", " O ", r7, r9\n\tasr " O ", " O ", r8\n\tssat " O ", #8, " O "\n\t"
EMBER_QA_DW3_NAKED(ember_qa_dw3_row6p) {
    __asm__("push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"
            "mov r4, r0\n\t"
            "mov r12, r2\n\t"
            "mov r0, r1\n\t"
            "ldr r1, [r12, #56]\n\t"
            "add r1, r1, r1, lsl #1\n\t"
            "add r1, r0, r1, lsl #1\n\t" /* y's end: 6 outputs a row */
            "ldr r2, [r12, #60]\n\t"
            "push {r0, r1, r2}\n\t" /* sp + 0: y, 4: y's end, 8: the plane's row step */
            "0:\n\t"
            "ldm r12, {r0, r1, r2, r3}\n\t"
            "mov r5, r0\n\t"
            "mov r6, r0\n\t"
            EMBER_QA_DW3_R6(16, "0") EMBER_QA_DW3_R6(24, "128") EMBER_QA_DW3_R6(32, "256")
            "ldrd r7, r8, [r12, #40]\n\t"
            "ldr r9, [r12, #48]\n\t"
            EMBER_QA_DW3_RQ6("r0") EMBER_QA_DW3_RQ6("r1") EMBER_QA_DW3_RQ6("r2") EMBER_QA_DW3_RQ6("r3")
            EMBER_QA_DW3_RQ6("r5") EMBER_QA_DW3_RQ6("r6")
            "ldr r10, [sp]\n\t"
            "strb r1, [r10, #1]\n\t"
            "strb r2, [r10, #2]\n\t"
            "strb r3, [r10, #3]\n\t"
            "strb r5, [r10, #4]\n\t"
            "strb r6, [r10, #5]\n\t"
            "strb r0, [r10], #6\n\t"
            "ldrd r7, r8, [sp, #4]\n\t"
            "str r10, [sp]\n\t"
            "add r4, r4, r8\n\t"
            "cmp r10, r7\n\t"
            "bne 0b\n\t"
            "add sp, sp, #12\n\t"
            "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}");
}
#undef EMBER_QA_DW3_R6
#undef EMBER_QA_DW3_RQ6
/* Rows of 3 outputs (VWW's 3 x 3 maps, and its 6 x 6 to 3 x 3 stride 2) in one step of three: about 45
 * instructions a row where the _s variants' step of four took 64. r3 holds the fourth row word at stride 2. */
#define EMBER_QA_DW3_R32(OFS, B)                     \
    "ldrd r5, r6, [r4, #" B "]\n\t"                  \
    "ldrd r8, r3, [r4, #" B "+8]\n\t"                \
    "ldrd r9, r10, [r12, #" #OFS "]\n\t"             \
    "smlad r0, r5, r9, r0\n\t"                       \
    "smlabt r0, r6, r10, r0\n\t"                     \
    "smlad r1, r6, r9, r1\n\t"                       \
    "smlabt r1, r8, r10, r1\n\t"                     \
    "smlad r2, r8, r9, r2\n\t"                       \
    "smlabt r2, r3, r10, r2\n\t"
#define EMBER_QA_DW3_ROW3FN(NAME, ROW)                                                                            \
    EMBER_QA_DW3_NAKED(NAME) {                                                                                   \
        __asm__(EMBER_QA_DW3_ENTRY                                                                               \
                "ldr r7, [r12, #56]\n\t"                                                                         \
                "add r7, r7, r7, lsl #1\n\t"                                                                     \
                "add r7, lr, r7\n\t" /* y's end: 3 outputs a row */                                              \
                "ldr r11, [r12, #48]\n\t"                                                                        \
                "ldr r0, [r12, #60]\n\t"                                                                         \
                "push {r0, r1}\n\t" /* sp + 0: the plane's row step */                                           \
                "0:\n\t"                                                                                         \
                "ldm r12, {r0, r1, r2}\n\t"                                                                      \
                ROW(16, "0") ROW(24, "128") ROW(32, "256")                                                       \
                "ldrd r9, r10, [r12, #40]\n\t"                                                                   \
                EMBER_QA_DW3_RQ("r0", "r11") EMBER_QA_DW3_RQ("r1", "r11") EMBER_QA_DW3_RQ("r2", "r11")           \
                "strb r1, [lr, #1]\n\t"                                                                          \
                "strb r2, [lr, #2]\n\t"                                                                          \
                "strb r0, [lr], #3\n\t"                                                                          \
                "ldr r5, [sp]\n\t"                                                                               \
                "add r4, r4, r5\n\t"                                                                             \
                "cmp lr, r7\n\t"                                                                                 \
                "bne 0b\n\t"                                                                                     \
                "add sp, sp, #8\n\t"                                                                             \
                "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}");                                                   \
    }
EMBER_QA_DW3_ROW3FN(ember_qa_dw3_row3p, EMBER_QA_DW3_R3)
EMBER_QA_DW3_ROW3FN(ember_qa_dw3_row32p, EMBER_QA_DW3_R32)
#undef EMBER_QA_DW3_ROW3FN
#undef EMBER_QA_DW3_R3
#undef EMBER_QA_DW3_R32
#undef EMBER_QA_DW3_RQ
#undef EMBER_QA_DW3_R1
#undef EMBER_QA_DW3_R2
#undef EMBER_QA_DW3_T1
#undef EMBER_QA_DW3_T2
#undef EMBER_QA_DW3_ROWS
#undef EMBER_QA_DW3_ROWSP
#endif
/* How ember_qarm_dw3 and ember_qarm_dw3_mve lay out a channel: a zero-padded int16 plane of Hp rows of Wp
 * (ops/qarm.py `dw3_plane`, which sizes the scratch). A layer of stride 1 with more output rows than
 * columns works on the transposed plane (`t`: its rows are the image's columns, the weights transposed),
 * so that its rows are the long axis: KWS's 25 x 5 maps are 5 rows of 25, not 25 rows of 5. The loops
 * then run over (oh, ow) of that plane and store output (oh, ow) at oh * ys_row + ow * ys_col. */
typedef struct {
    int t, H, W, OH, OW, PH, PW, SH, SW, Hp, Wp;
    ptrdiff_t xs_row, xs_col, ys_row, ys_col;
} ember_qa_dw3_geo_t;
EMBER_INLINE ember_qa_dw3_geo_t ember_qa_dw3_geo_tr(const int32_t *p, int tr) {
    ember_qa_dw3_geo_t g;
    const int s1 = p[EMBER_GEO_STRIDE_H] == 1 && p[EMBER_GEO_STRIDE_W] == 1;
    g.t = tr && s1 && p[EMBER_GEO_OUT_H] > p[EMBER_GEO_OUT_W];
    g.H = p[g.t ? EMBER_GEO_IN_W : EMBER_GEO_IN_H], g.W = p[g.t ? EMBER_GEO_IN_H : EMBER_GEO_IN_W];
    g.OH = p[g.t ? EMBER_GEO_OUT_W : EMBER_GEO_OUT_H], g.OW = p[g.t ? EMBER_GEO_OUT_H : EMBER_GEO_OUT_W];
    g.PH = p[g.t ? EMBER_GEO_PAD_W : EMBER_GEO_PAD_H], g.PW = p[g.t ? EMBER_GEO_PAD_H : EMBER_GEO_PAD_W];
    g.SH = p[EMBER_GEO_STRIDE_H], g.SW = p[EMBER_GEO_STRIDE_W];
    g.Hp = (g.OH - 1) * g.SH + 3;
    g.Wp = g.SW <= 2 ? g.SW * ((g.OW + 3) / 4 * 4) + 2 : ((g.OW - 1) * g.SW + 5) & ~1;
    g.xs_row = g.t ? 1 : p[EMBER_GEO_IN_W], g.xs_col = g.t ? p[EMBER_GEO_IN_W] : 1;
    g.ys_row = g.t ? 1 : p[EMBER_GEO_OUT_W], g.ys_col = g.t ? p[EMBER_GEO_OUT_W] : 1;
    return g;
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
    if (!g->t) {
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
    if (!g->t) {
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
                yr[ow] = ember_qa_requant(a, c, zp, lo, hi, fast);
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
                                 int tr) {
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo_tr(p, tr);
    const int C = p[EMBER_GEO_C], SW = g.SW;
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    /* the plane holds the bytes' values, zero point included (ember_qa_dw3_fill), and the padding the zero
     * point itself, so that each channel's sums exceed those of (x - zero point) by zero point times the
     * sum of its weights, which its bias gives back: exactly the same sums, without a subtraction per pixel */
    const int32_t xz = z2 - (int32_t)flip;
    const uint32_t zz = (uint32_t)(uint16_t)xz * 0x10001u;
    uint32_t *pw = (uint32_t *)(void *)plane; /* Hp * Wp is even (Wp is) */
    int n, c, i;
#if EMBER_HAVE_ARM_DSP
    if (fast == 2 && !tr && out[0] == 0 && (SW == 1 || SW == 2)) {
        ember_qa_dw3_fast(y, x, flip, xz, &g, C, N, Wt, rq, plane);
        return;
    }
#endif
    for (i = 0; i < g.Hp * g.Wp / 2; ++i) pw[i] = zz;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int16_t *w = Wt + 9 * c;
            int32_t cq[4], sw = 0;
            uint8_t *yc = y + ((ptrdiff_t)n * C + c) * out_plane;
            uint32_t wv[12]; /* the weights' words */
            for (i = 0; i < 9; ++i) sw += w[i];
            cq[0] = rq[4 * c], cq[1] = rq[4 * c + 1], cq[2] = rq[4 * c + 2], cq[3] = rq[4 * c + 3] - xz * sw;
            ember_qa_dw3_fill(plane, &g, x + ((ptrdiff_t)n * C + c) * in_plane, flip);
            ember_qa_dw3_words(&g, w, wv);
            if (SW == 1)
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 1);
            else if (SW == 2)
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 2);
            else
                ember_qa_dw3_rows(yc, plane, &g, wv, w, cq, out, fast, 0);
        }
}
/* `tr`: Helium's plane layout (ember_qa_dw3_geo), for ember_qarm_dw3_mve's layers. */
EMBER_UNUSED static void ember_qa_dw3_any(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                          const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane,
                                          int tr) {
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    const int mode = ember_qa_mode(out);
    if (mode == 2)
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 2, tr);
    else if (mode == 1)
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 1, tr);
    else
        ember_qa_dw3_t(y, x, flip, z2, p, N, Wt, rq, out, plane, 0, tr);
}
EMBER_UNUSED static void ember_qarm_dw3(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                           const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
    ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 0);
}
/*@end*/

/*@kernel ember_qarm_conv_mve requires ember_qarm_conv*/
/* Cortex-M55 (Helium): ember_qa_conv_t's columns times W, plain int8 rows of Kp (K rounded up to 8;
 * ops/qarm.py `mve_weights`, rows in pairs with a zero row after an odd last one): VLDRB.S16 widens 8
 * weights, VMLADAVA.S16 adds 8 products of a weight vector and a column vector to a scalar sum, so a
 * pair of channels times a pair of pixels is 8 instructions per 32 multiply-adds. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE 1
#else
#define EMBER_QA_MVE 0
#endif
EMBER_INLINE void ember_qa_mgemm_t(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp,
                                   const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out, int fast) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    int m, k;
#if EMBER_QA_MVE
    const uint32_t po[4] = {0, 0, 4, 4}, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32x4_t pairs = vld1q_u32(po), yoff = vld1q_u32(yo);
    const int32x4_t vzp = vdupq_n_s32(zp), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
#endif
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp, rq += 8) {
        const int two = m + 1 < M;
        const int8_t *w0 = W, *w1 = W + Kp;
        int32_t a00 = rq[3], a01 = rq[3], a10 = two ? rq[7] : 0, a11 = a10;
#if EMBER_QA_MVE
        for (k = 0; k < Kp; k += 8) {
            const int16x8_t wa = vldrbq_s16(w0 + k), wb = vldrbq_s16(w1 + k);
            const int16x8_t x0 = vld1q_s16(t0 + k), x1 = vld1q_s16(t1 + k);
            a00 = vmladavaq_s16(a00, wa, x0);
            a01 = vmladavaq_s16(a01, wa, x1);
            a10 = vmladavaq_s16(a10, wb, x0);
            a11 = vmladavaq_s16(a11, wb, x1);
        }
#else
        for (k = 0; k < Kp; ++k) {
            a00 += w0[k] * t0[k];
            a01 += w0[k] * t1[k];
            a10 += w1[k] * t0[k];
            a11 += w1[k] * t1[k];
        }
#endif
#if EMBER_QA_MVE
        if (fast && n > 1 && two) { /* the four sums requantised in one vector: lanes (m, p) (m, p+1) (m+1, p) (m+1, p+1) */
            int32x4_t v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
            const int32x4_t mult = vldrwq_gather_shifted_offset_s32(rq, pairs);
            const int32x4_t sh = vldrwq_gather_shifted_offset_s32(rq + 1, pairs);
            v = vaddq_s32(vrshlq_s32(vmulhq_s32(v, mult), vnegq_s32(sh)), vzp); /* VRSHL adds ra itself */
            vstrbq_scatter_offset_s32((int8_t *)y, yoff, vminq_s32(vmaxq_s32(v, vlo), vhi));
            continue;
        }
#endif
        y[0] = ember_qa_requant(a00, rq, zp, lo, hi, fast);
        if (n > 1) y[1] = ember_qa_requant(a01, rq, zp, lo, hi, fast);
        if (two) {
            y[rs] = ember_qa_requant(a10, rq + 4, zp, lo, hi, fast);
            if (n > 1) y[rs + 1] = ember_qa_requant(a11, rq + 4, zp, lo, hi, fast);
        }
    }
}
#if EMBER_QA_MVE
/* ember_qa_mgemm_t's common case: two columns, the fast requantisation, M2 whole channel pairs; one branch-free
 * loop (the general one spent about 78 instructions per pair outside the products, mostly reloads around
 * its branches). */
EMBER_INLINE void ember_qa_mgemm22(uint8_t *y, ptrdiff_t rs, const int8_t *W, int M2, int Kp, const int16_t *t0,
                                   const int16_t *t1, const int32_t *rq, const int32_t *out) {
    /* The pair's multipliers and shifts by gathers from a vector of addresses (rq[0] rq[0] rq[4] rq[4]) that
     * each pair's first gather advances by 32 bytes (VLDRW with writeback): no offsets vector to reload. */
    const uint32_t r0 = (uint32_t)(uintptr_t)rq - 32, yo[4] = {0, 1, (uint32_t)rs, (uint32_t)rs + 1};
    const uint32_t bo[4] = {r0, r0, r0 + 16, r0 + 16};
    const uint32x4_t yoff = vld1q_u32(yo);
    uint32x4_t base = vld1q_u32(bo);
    const int32_t zp = out[0];
    const int32x4_t vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int8_t *const wend = W + (ptrdiff_t)M2 * 2 * Kp;
    while (W != wend) {
        const int8_t *w0 = W, *w1 = W + Kp;
        int32_t a00 = rq[3], a01 = rq[3], a10 = rq[7], a11 = rq[7];
        int k;
        int32x4_t v;
        for (k = 0; k < Kp; k += 8) {
            const int16x8_t wa = vldrbq_s16(w0 + k), wb = vldrbq_s16(w1 + k);
            const int16x8_t x0 = vld1q_s16(t0 + k), x1 = vld1q_s16(t1 + k);
            a00 = vmladavaq_s16(a00, wa, x0);
            a01 = vmladavaq_s16(a01, wa, x1);
            a10 = vmladavaq_s16(a10, wb, x0);
            a11 = vmladavaq_s16(a11, wb, x1);
        }
        v = vsetq_lane_s32(a11, vsetq_lane_s32(a10, vsetq_lane_s32(a01, vdupq_n_s32(a00), 1), 2), 3);
        v = vmulhq_s32(v, vldrwq_gather_base_wb_s32(&base, 32));
        /* the fast form's + ra (2^(sh-1)) and >> sh in one rounding shift */
        v = vrshlq_s32(v, vnegq_s32(vldrwq_gather_base_s32(base, 4)));
        v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zp), vlo), vhi);
        vstrbq_scatter_offset_s32((int8_t *)y, yoff, v);
        W += 2 * Kp;
        y += 2 * rs;
        rq += 8;
    }
}
#endif
static void ember_qa_gemm_mve(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    const int mode = ember_qa_mode(out);
    (void)cols;
#if EMBER_QA_MVE
    if (mode && n == 2) {
        const int M2 = M / 2;
        ember_qa_mgemm22(y, rs, W, M2, Kp, t0, t1, rq, out);
        if (M & 1)
            ember_qa_mgemm_t(y + 2 * M2 * rs, rs, n, W + (ptrdiff_t)M2 * 2 * Kp, 1, Kp, t0, t1, rq + 8 * M2, out, mode);
        return;
    }
#endif
    if (mode == 2)
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 2);
    else if (mode == 1)
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 1);
    else
        ember_qa_mgemm_t(y, rs, n, W, M, Kp, t0, t1, rq, out, 0);
}
EMBER_UNUSED static void ember_qarm_conv_mve(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 8, ember_qa_gemm_mve, 0, 0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_mve requires ember_qarm_dw3*/
/* Cortex-M55 (Helium) depthwise 3x3: ember_qarm_dw3's zero-padded int16 plane, four outputs of a row per
 * vector (each tap a halfword gather widened to int32 lanes, VMLA by the tap's weight), requantised in the
 * vector by the fast form (VMULH.S32 is SMMLA's floor((acc * mult) / 2^32)), the row's last lanes
 * predicated. Layers that need the exact form (possible ties) take ember_qarm_dw3. */
#if EMBER_GNUC && defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define EMBER_QA_MVE_DW 1
#else
#define EMBER_QA_MVE_DW 0
#endif
#if EMBER_QA_MVE_DW
/* One channel's output rows from its plane (geometry g), 4 outputs per vector; `s1` (a constant where
 * inlined): stride 1, whose taps are contiguous loads (the plane's rows reach 2 past the last vector's
 * lanes), otherwise gathers. */
EMBER_INLINE void ember_qa_dw3_mve_rows(uint8_t *yc, const int16_t *plane, const ember_qa_dw3_geo_t *g,
                                        const int16_t *wk, const int32_t *cq, const int32_t *out, int s1, int t) {
    const int OW = g->OW, Wp = g->Wp, SW = s1 ? 1 : g->SW;
    const int32x4_t vzp = vdupq_n_s32(out[0]), vlo = vdupq_n_s32(out[1]), vhi = vdupq_n_s32(out[2]);
    const int32x4_t vb = vdupq_n_s32(cq[3]), vm = vdupq_n_s32(cq[0]);
    const int32x4_t vsh = vdupq_n_s32(-cq[1]);
    const uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)SW);
    const uint32x4_t ylanes = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)g->ys_col); /* outputs ys_col apart */
    int oh, ow, i;
    for (oh = 0; oh < g->OH; ++oh) {
        const int16_t *r0 = plane + (ptrdiff_t)oh * g->SH * Wp;
        uint8_t *yr = yc + oh * g->ys_row;
        for (ow = 0; ow < OW; ow += 4) {
            const mve_pred16_t live = vctp32q((uint32_t)(OW - ow));
            const int16_t *s0 = r0 + ow * SW;
            int32x4_t a = vb, v;
            for (i = 0; i < 3; ++i, s0 += Wp) {
                if (s1) {
                    a = vmlaq_n_s32(a, vldrhq_s32(s0), wk[3 * i]);
                    a = vmlaq_n_s32(a, vldrhq_s32(s0 + 1), wk[3 * i + 1]);
                    a = vmlaq_n_s32(a, vldrhq_s32(s0 + 2), wk[3 * i + 2]);
                } else {
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0, lanes, live), wk[3 * i]);
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0 + 1, lanes, live), wk[3 * i + 1]);
                    a = vmlaq_n_s32(a, vldrhq_gather_shifted_offset_z_s32(s0 + 2, lanes, live), wk[3 * i + 2]);
                }
            }
            v = vaddq_s32(vrshlq_s32(vmulhq_s32(a, vm), vsh), vzp); /* VRSHL: + 2^(sh-1), >> sh (ra's) */
            v = vminq_s32(vmaxq_s32(v, vlo), vhi);
            if (t) /* the transposed plane's outputs: a column of the map */
                vstrbq_scatter_offset_p_s32((int8_t *)(yr + ow * g->ys_col), ylanes, v, live);
            else /* contiguous: no offsets vector to keep */
                vstrbq_p_s32((int8_t *)(yr + ow), v, live);
        }
    }
}
#endif
static void ember_qarm_dw3_mve(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                               const int16_t *Wt, const int32_t *rq, const int32_t *out, int16_t *plane) {
#if EMBER_QA_MVE_DW
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo(p);
    const int C = p[EMBER_GEO_C];
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int32_t z2 = xz + (sgn ? 128 : 0);
    int n, c, i;
    if (!out[3]) {
        ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1);
        return;
    }
    for (i = 0; i < g.Hp * g.Wp; ++i) plane[i] = 0;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int16_t *w = Wt + 9 * c;
            uint8_t *yc = y + ((ptrdiff_t)n * C + c) * out_plane;
            int16_t wk[9];
            uint32_t wv[12];
            ember_qa_dw3_load(plane, &g, x + ((ptrdiff_t)n * C + c) * in_plane, flip, z2, w, wv);
            for (i = 0; i < 9; ++i) wk[i] = g.t ? w[i % 3 * 3 + i / 3] : w[i]; /* (kernel row, column) of the plane */
            if (g.t) /* stride 1 */
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 1, 1);
            else if (g.SW == 1)
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 1, 0);
            else
                ember_qa_dw3_mve_rows(yc, plane, &g, wk, rq + 4 * c, out, 0, 0);
        }
#else
    ember_qa_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1);
#endif
}
/*@end*/

/*@kernel ember_qa_res requires ember_qarm_conv ember_qadd*/
/* ember_qa_res_fn: the staged outputs plus the residual, by qpointwise.c's QAdd one channel row at a time. */
static void ember_qa_res_rows(uint8_t *y, ptrdiff_t ys, const uint8_t *stage, const uint8_t *r, int M, int n, int sgn,
                              const int32_t *radd) {
    int m;
    for (m = 0; m < M; ++m) ember_qadd(y + m * ys, stage + m * EMBER_QA_STAGE, r + m * ys, n, 1, n, sgn, radd);
}
/*@end*/

/*@kernel ember_qarm_conv_add requires ember_qa_res*/
/* ember_qarm_conv, then y = QAdd(y, res) (ops/qconv_add.py): res's element read before y's is written, so
 * y may be res. stage: M * EMBER_QA_STAGE bytes. */
static void ember_qarm_conv_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                const int16_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, (const int8_t *)(const void *)W, rq, out, cols, 4, ember_qa_gemm_dsp, 1,
                    ember_qa_res_rows, res, radd, stage);
}
/*@end*/

/*@kernel ember_qarm_conv_mve_add requires ember_qarm_conv_mve ember_qa_res*/
/* ember_qarm_conv_mve, then y = QAdd(y, res) as ember_qarm_conv_add. */
static void ember_qarm_conv_mve_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                    int M, const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                    const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 8, ember_qa_gemm_mve, 0, ember_qa_res_rows, res, radd,
                    stage);
}
/*@end*/
