/*@kernel ember_qarm_conv_mul requires ember_qarm_conv*/
/* Convolution on cores without the DSP extension (Cortex-M0/M3, the target table's int8_isa "mul"; chosen
 * per layer by passes/mcu_kernels.py): qarm.c's ember_qa_conv_t builds the columns as it does for the DSP
 * cores, and ember_qa_gemm_mul multiplies them by int8 weights (ops/qarm.py `mul_weights`: output channels
 * in pairs, per pair and pair of k the bytes a0 a1 b0 b1 of its rows a and b), so the weights take the
 * flash of int8 ones (the DSP cores' int16 copy, which SMLAD reads without unpacking, would double it).
 * Two columns at a time, interleaved as ember_qa_pair_cols lays them (per pair of k the int16 (k0, k1) of
 * the first column, then of the second); the four sums of a row pair and a column pair stay in registers:
 * on ARMv7-M (Cortex-M3) LDRSB/LDRSH and one MLA per product, 20 instructions per 8 multiply-adds; on
 * ARMv6-M (Cortex-M0: MULS only, 8 low registers) one weight word and one column word unpacked by shifts,
 * the sums in high registers, 41 instructions per 8. Requantised by qarm.c's ember_qa_requant: the bytes
 * of every other path. Scratch: 8 * Kp bytes (the interleaved pair, then the two plain columns). */
#if EMBER_GNUC && defined(__ARM_ARCH_6M__)
#define EMBER_QM_MAC(ACC, EXT_W, EXT_X) EXT_W "\n\t" EXT_X "\n\tmuls %[u], %[t]\n\tadd %[" ACC "], %[u]\n\t"
#define EMBER_QM_ALIGNED(w, x) ((((uintptr_t)(w) | (uintptr_t)(x)) & 3u) == 0) /* ARMv6-M: no unaligned LDR */
EMBER_INLINE void ember_qm_tile22_asm(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t wv, xv, t, u;
    /* wv = (a0, a1, b0, b1) bytes; xv = (k0, k1) of column 0, then of column 1. MULS keeps t (the weight). */
    __asm__("1:\n\t"
            "ldr %[wv], [%[w], #0]\n\tldr %[xv], [%[x], #0]\n\t"
            EMBER_QM_MAC("a00", "sxtb %[t], %[wv]", "sxth %[u], %[xv]")
            EMBER_QM_MAC("a00", "lsls %[t], %[wv], #16\n\tasrs %[t], %[t], #24", "asrs %[u], %[xv], #16")
            EMBER_QM_MAC("a10", "asrs %[t], %[wv], #24", "asrs %[u], %[xv], #16")
            EMBER_QM_MAC("a10", "lsls %[t], %[wv], #8\n\tasrs %[t], %[t], #24", "sxth %[u], %[xv]")
            "ldr %[xv], [%[x], #4]\n\t"
            EMBER_QM_MAC("a11", "", "sxth %[u], %[xv]")
            EMBER_QM_MAC("a11", "asrs %[t], %[wv], #24", "asrs %[u], %[xv], #16")
            EMBER_QM_MAC("a01", "lsls %[t], %[wv], #16\n\tasrs %[t], %[t], #24", "asrs %[u], %[xv], #16")
            EMBER_QM_MAC("a01", "sxtb %[t], %[wv]", "sxth %[u], %[xv]")
            "adds %[w], #4\n\tadds %[x], #8\n\tcmp %[x], %[xend]\n\tbne 1b"
            : [a00] "+h"(a00), [a01] "+h"(a01), [a10] "+h"(a10), [a11] "+h"(a11), [w] "+l"(w), [x] "+l"(x),
              [wv] "=&l"(wv), [xv] "=&l"(xv), [t] "=&l"(t), [u] "=&l"(u)
            : [xend] "r"(xend)
            : "cc", "memory");
    acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
}
#elif EMBER_GNUC && defined(__ARM_ARCH_7M__)
#define EMBER_QM_ALIGNED(w, x) 1 /* byte and halfword loads */
EMBER_INLINE void ember_qm_tile22_asm(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    int32_t wa0, wa1, wb0, wb1, x0, x1;
    __asm__("1:\n\t"
            "ldrsb %[wa0], [%[w], #0]\n\tldrsb %[wa1], [%[w], #1]\n\t"
            "ldrsb %[wb0], [%[w], #2]\n\tldrsb %[wb1], [%[w], #3]\n\t"
            "ldrsh %[x0], [%[x], #0]\n\tldrsh %[x1], [%[x], #2]\n\t"
            "mla %[a00], %[wa0], %[x0], %[a00]\n\tmla %[a00], %[wa1], %[x1], %[a00]\n\t"
            "mla %[a10], %[wb0], %[x0], %[a10]\n\tmla %[a10], %[wb1], %[x1], %[a10]\n\t"
            "ldrsh %[x0], [%[x], #4]\n\tldrsh %[x1], [%[x], #6]\n\t"
            "mla %[a01], %[wa0], %[x0], %[a01]\n\tmla %[a01], %[wa1], %[x1], %[a01]\n\t"
            "mla %[a11], %[wb0], %[x0], %[a11]\n\tmla %[a11], %[wb1], %[x1], %[a11]\n\t"
            "add %[w], %[w], #4\n\tadd %[x], %[x], #8\n\tcmp %[x], %[xend]\n\tbne 1b"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [w] "+r"(w), [x] "+r"(x),
              [wa0] "=&r"(wa0), [wa1] "=&r"(wa1), [wb0] "=&r"(wb0), [wb1] "=&r"(wb1), [x0] "=&r"(x0), [x1] "=&r"(x1)
            : [xend] "r"(xend)
            : "cc", "memory");
    acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
}
#else
#define EMBER_QM_ALIGNED(w, x) 0
#define ember_qm_tile22_asm(acc, w, x, xend) ((void)0)
#endif
/* acc[0..3] (rows a, b x columns 0, 1) += the products of x .. xend (2 k per 8 bytes) with the row pair w. */
EMBER_INLINE void ember_qm_tile22(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
    if (x == xend) return;
    if (EMBER_QM_ALIGNED(w, x)) {
        ember_qm_tile22_asm(acc, w, x, xend);
        return;
    }
    for (; x != xend; x += 4, w += 4) {
        acc[0] += w[0] * x[0] + w[1] * x[1];
        acc[1] += w[0] * x[2] + w[1] * x[3];
        acc[2] += w[2] * x[0] + w[3] * x[1];
        acc[3] += w[2] * x[2] + w[3] * x[3];
    }
}
/* ember_qa_gemm_fn: y[m * rs + j] for the M channels and the n (1 or 2) plain columns t0, t1. */
static void ember_qa_gemm_mul(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    const int fast = ember_qa_mode(out);
    int m, k;
    if (n == 2) ember_qa_pair_cols(cols, t0, t1, Kp);
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp, rq += 8) {
        const int two = m + 1 < M;
        int32_t acc[4];
        acc[0] = acc[1] = rq[3];
        acc[2] = acc[3] = two ? rq[7] : 0;
        if (n == 2) {
            ember_qm_tile22(acc, W, cols, cols + 2 * Kp);
            y[1] = ember_qa_requant(acc[1], rq, zp, lo, hi, fast);
            if (two) y[rs + 1] = ember_qa_requant(acc[3], rq + 4, zp, lo, hi, fast);
        } else {
            const int8_t *w = W;
            for (k = 0; k < Kp; k += 2, w += 4) {
                acc[0] += w[0] * t0[k] + w[1] * t0[k + 1];
                acc[2] += w[2] * t0[k] + w[3] * t0[k + 1];
            }
        }
        y[0] = ember_qa_requant(acc[0], rq, zp, lo, hi, fast);
        if (two) y[rs] = ember_qa_requant(acc[2], rq + 4, zp, lo, hi, fast);
    }
    (void)t1;
}
static void ember_qarm_conv_mul(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 4, ember_qa_gemm_mul, 0, 0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_conv_mul_add requires ember_qarm_conv_mul ember_qa_res*/
/* ember_qarm_conv_mul, then y = QAdd(y, res) as qarm.c's ember_qarm_conv_add. */
static void ember_qarm_conv_mul_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                    int M, const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                    const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 4, ember_qa_gemm_mul, 0, ember_qa_res_rows, res, radd,
                    stage);
}
/*@end*/
