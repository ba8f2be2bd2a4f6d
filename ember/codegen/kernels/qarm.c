/* int8 convolution, depthwise 3x3 and fully-connected kernels for Cortex-M cores with the DSP extension
 * (M4, M7, M33: SMLAD dual 16-bit multiply-accumulate, SXTB16 dual sign extension). passes/mcu_kernels.py
 * picks them per layer from the target table (Target.int8_isa), and packs their weights at compile time.
 *
 * Activations are NCHW bytes, or NHWC at a channels-last model's edges (EMBER_QA_LAY). A layer first
 * widens what one output needs into int16 minus the zero point (a column of the convolution's window, or a
 * padded plane of one channel), so that padding is 0 and the sums need no zero-point correction; two int16
 * of a word are the two lanes SMLAD multiplies. Weights
 * are int8 in the order k0 k2 k1 k3 per group of 4 (ops/qarm.py `dsp_weights`): SXTB16 of the word gives
 * the lanes (k0, k1), of the word rotated by 8 (k2, k3), matching a column's two words. Convolutions
 * store them widened to int16 instead (`dsp_weights16`, twice the flash): no SXTB16 in the product loop,
 * 12.5 instructions per 16 multiply-adds where int8 weights take 17, and 11 with four output channels per
 * tile (their rows in quads: ember_qa_gemm4).
 *
 * Requantisation is quant.c's (acc * mult * 2^-shift rounded half to even, + zero point, clamped) for the
 * shifts 32..62 that the pass admits, from the 32-bit halves of one SMULL product: bit-exact with every
 * other path. Without the DSP extension (another --cpu) the same C computes with portable stand-ins.
 *
 * The family's files: this one (the requantisation, the widening of bytes into int16 columns, the
 * fully-connected layer), qarm_gemm2.c and qarm_gemm4.c (the SMLAD products of channel pairs and quads),
 * qarm_cols.c and qarm_conv.c (the convolution), qarm_dw3step.c and qarm_dw3.c (the depthwise 3x3),
 * qarm_mve16.c and qarm_mve.c (Cortex-M55's Helium kernels), qarm_mul.c (Cortex-M0/M3, without DSP). */

/*@kernel ember_qa_rq requires ember_prelude ember_qround*/
typedef uint32_t ember_qa_u32 __attribute__((may_alias, aligned(2)));
typedef uint32_t ember_qa_u8x4 __attribute__((may_alias, aligned(1)));
/* The geometry tables of this family's convolutions end with the layouts (ops/qarm.py `geo_table`): bit 2, the
 * input is stored channels-last (NHWC), bit 3, the output (passes/nhwc_views.py). */
#define EMBER_QA_LAY 19
#define EMBER_QA_HWC_IN(p) ((p)[EMBER_QA_LAY] & 4)
#define EMBER_QA_HWC_OUT(p) ((p)[EMBER_QA_LAY] & 8)
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
/*@end*/

/*@kernel ember_qa_widen requires ember_qa_rq*/
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
/* A fully-connected layer's loop (ember_qarm_fc; qarm_mul.c's ember_qarm_fc_mul), in a function of their
 * parameters (y, a, sgn, az, R, Nout, K, cols): K rounded up to Kp = 4 k, the rows of A in pairs as the plain
 * columns t0, t1 (after cols' interleaved pair, or for one row t0 at cols), then PRODUCT, which computes y's
 * rows r and, where `two`, r + 1 from them. A macro: a function pointer would cost the M0 a call per row. */
#define EMBER_QA_FC(PRODUCT)                                                      \
    do {                                                                          \
        const int Kp = (K + 3) & ~3;                                              \
        const uint32_t flip = sgn ? 0x80u : 0u;                                   \
        const int32_t z2 = az + (sgn ? 128 : 0);                                  \
        int16_t *t0 = R > 1 ? cols + 2 * Kp : cols, *t1 = t0 + Kp;                \
        int r;                                                                    \
        for (r = 0; r < R; r += 2) {                                              \
            const int two = r + 1 < R;                                            \
            ember_qa_fc_rows(t0, t1, a + (ptrdiff_t)r * K, K, Kp, two, flip, z2); \
            PRODUCT;                                                              \
        }                                                                         \
    } while (0)
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

/* ember_qarm: the family's shared part, which each of its kernels requires whole (ember_qa_rq, ember_qa_pair,
 * ember_qa_gemm, ember_qa_widen, emitted in this order). */
/*@kernel ember_qarm requires ember_qa_gemm ember_qa_widen*/
/*@end*/

/*@kernel ember_qarm_fc requires ember_qarm*/
/* Fully connected: y[r][n] requantised from sum_k (a[r][k] - zero point) W[n][k] + bias[n], rows of A in
 * pairs (the two columns of ember_qa_gemm2). Scratch: cols then two plain columns, 8 * Kp bytes; one row of A
 * only its plain column, 2 * Kp bytes (ops/qarm.py `fc_scratch`). */
static void ember_qarm_fc(uint8_t *y, const uint8_t *a, int sgn, int32_t az, int R, int Nout, int K,
                          const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    EMBER_QA_FC(if (two) ember_qa_pair_cols(cols, t0, t1, Kp);
                ember_qa_gemm2(y + (ptrdiff_t)r * Nout, 1, Nout, 1 + two, W, Nout, Kp, two ? cols : t0, rq, out));
}
/*@end*/
