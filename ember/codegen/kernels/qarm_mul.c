/*@kernel ember_qa_mul requires ember_qarm*/
/* Integer kernels for cores without the DSP extension (Cortex-M0/M3, the target table's int8_isa "mul";
 * chosen per layer by passes/mcu_kernels.py, nodes marked `_mul8`), on qarm.c's columns, planes and
 * requantisation. Products of int8 weights (ops/qarm.py `mul_weights`: output channels in pairs, per pair
 * and pair of k the bytes a0 a1 b0 b1 of its rows a and b), so the weights take the flash of int8 ones (the
 * DSP cores' int16 copy, which SMLAD reads without unpacking, would double it), and int16 columns: two at a
 * time, interleaved as ember_qa_pair_cols lays them (per pair of k the int16 (k0, k1) of the first column,
 * then of the second), the four sums of a row pair and a column pair in registers: on ARMv7-M (Cortex-M3)
 * LDRSB/LDRSH and one MLA per product, 20 instructions per 8 multiply-adds; on ARMv6-M (Cortex-M0: MULS
 * only, 8 low registers) one weight word and one column word unpacked by shifts, the sums in high
 * registers, 41 instructions per 8. The sums are those of every other path, and so are the bytes. */
#if EMBER_GNUC && defined(__ARM_ARCH_6M__)
#define EMBER_QM_MAC(ACC, EXT_W, EXT_X) EXT_W "\n\t" EXT_X "\n\tmuls %[u], %[t]\n\tadd %[" ACC "], %[u]\n\t"
#define EMBER_QM_ALIGNED(w, x) ((((uintptr_t)(w) | (uintptr_t)(x)) & 3u) == 0) /* ARMv6-M: no unaligned LDR */
/* GCC hands Thumb-1 inline assembly to the assembler in divided syntax (MULS, LSLS are unified names) and
 * restores its own after the statement; clang's is unified already */
#define EMBER_QM_UNIFIED ".syntax unified\n\t"
EMBER_INLINE void ember_qm_tile22_asm(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t wv, xv, t, u;
    /* wv = (a0, a1, b0, b1) bytes; xv = (k0, k1) of column 0, then of column 1. MULS keeps t (the weight). */
    __asm__(EMBER_QM_UNIFIED "1:\n\t"
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
/* ember_qm_tile21 (one column: a fully-connected layer's one row): MULS into t keeps u, the column's value,
 * for the other row: 22 instructions per 4 multiply-adds. */
#define EMBER_QM_TILE21 1
EMBER_INLINE void ember_qm_tile21_asm(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
    int32_t a0 = acc[0], a1 = acc[2];
    uint32_t wv, xv, t, u;
    __asm__(EMBER_QM_UNIFIED "1:\n\t"
            "ldr %[wv], [%[w], #0]\n\tldr %[xv], [%[x], #0]\n\t"
            "sxtb %[t], %[wv]\n\tsxth %[u], %[xv]\n\tmuls %[t], %[u]\n\tadd %[a0], %[t]\n\t"
            "lsls %[t], %[wv], #8\n\tasrs %[t], %[t], #24\n\tmuls %[t], %[u]\n\tadd %[a1], %[t]\n\t"
            "lsls %[t], %[wv], #16\n\tasrs %[t], %[t], #24\n\tasrs %[u], %[xv], #16\n\tmuls %[t], %[u]\n\t"
            "add %[a0], %[t]\n\t"
            "asrs %[t], %[wv], #24\n\tmuls %[t], %[u]\n\tadd %[a1], %[t]\n\t"
            "adds %[w], #4\n\tadds %[x], #4\n\tcmp %[x], %[xend]\n\tbne 1b"
            : [a0] "+h"(a0), [a1] "+h"(a1), [w] "+l"(w), [x] "+l"(x), [wv] "=&l"(wv), [xv] "=&l"(xv),
              [t] "=&l"(t), [u] "=&l"(u)
            : [xend] "r"(xend)
            : "cc", "memory");
    acc[0] = a0, acc[2] = a1;
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
/* qarm.c's ember_qa_requant, its fast form's (a * b + ra * 2^32) >> 32 on ARMv6-M (no SMULL: the compiler
 * calls __muldi3, a 64 x 64-bit product, about 40 instructions) from 16-bit halves: a = ah 2^16 + al, b likewise,
 * the high word is ah bh + the high halves of ah bl and al bh + the carry of the low halves (t), exact. */
EMBER_INLINE int32_t ember_qm_smmla(int32_t a, int32_t b, int32_t ra) {
#if defined(__ARM_ARCH_6M__)
    const int32_t ah = a >> 16, bh = b >> 16;
    const uint32_t al = (uint32_t)a & 0xffffu, bl = (uint32_t)b & 0xffffu;
    const int32_t m1 = ah * (int32_t)bl, m2 = (int32_t)al * bh;
    const uint32_t t = ((al * bl) >> 16) + ((uint32_t)m1 & 0xffffu) + ((uint32_t)m2 & 0xffffu);
    return (int32_t)((uint32_t)ra + (uint32_t)(ah * bh) + (uint32_t)(m1 >> 16) + (uint32_t)(m2 >> 16) + (t >> 16));
#else
    return ember_qa_smmla(a, b, ra);
#endif
}
EMBER_INLINE uint8_t ember_qm_requant(int32_t acc, const int32_t *c, int32_t zp, int32_t lo, int32_t hi, int fast) {
    if (fast) {
        const int32_t r = (ember_qm_smmla(acc, c[0], c[2]) >> c[1]) + zp;
        return (uint8_t)(r < lo ? lo : r > hi ? hi : r);
    }
    return ember_qa_requant(acc, c, zp, lo, hi, 0);
}
/* acc[0], acc[2] (rows a, b) += the products of one column x .. xend (2 k per 4 bytes) with the row pair w. */
EMBER_INLINE void ember_qm_tile21(int32_t acc[4], const int8_t *w, const int16_t *x, const int16_t *xend) {
#ifdef EMBER_QM_TILE21
    if (x != xend && EMBER_QM_ALIGNED(w, x)) {
        ember_qm_tile21_asm(acc, w, x, xend);
        return;
    }
#endif
    for (; x != xend; x += 2, w += 4) {
        acc[0] += w[0] * x[0] + w[1] * x[1];
        acc[2] += w[2] * x[0] + w[3] * x[1];
    }
}
/* y[m * rs + j * cs] for the M channels and the n (1 or 2) plain columns t0, t1. */
EMBER_INLINE void ember_qm_gemm(uint8_t *y, ptrdiff_t rs, ptrdiff_t cs, int n, const int8_t *W, int M, int Kp,
                                int16_t *cols, const int16_t *t0, const int16_t *t1, const int32_t *rq,
                                const int32_t *out) {
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    const int fast = ember_qa_mode(out);
    int m;
    if (n == 2) ember_qa_pair_cols(cols, t0, t1, Kp);
    for (m = 0; m < M; m += 2, y += 2 * rs, W += 2 * Kp, rq += 8) {
        const int two = m + 1 < M;
        int32_t acc[4];
        acc[0] = acc[1] = rq[3];
        acc[2] = acc[3] = two ? rq[7] : 0;
        if (n == 2) {
            ember_qm_tile22(acc, W, cols, cols + 2 * Kp);
            y[cs] = ember_qm_requant(acc[1], rq, zp, lo, hi, fast);
            if (two) y[rs + cs] = ember_qm_requant(acc[3], rq + 4, zp, lo, hi, fast);
        } else
            ember_qm_tile21(acc, W, t0, t0 + Kp);
        y[0] = ember_qm_requant(acc[0], rq, zp, lo, hi, fast);
        if (two) y[rs] = ember_qm_requant(acc[2], rq + 4, zp, lo, hi, fast);
    }
    (void)t1;
}
/*@end*/

/*@kernel ember_qarm_conv_mul requires ember_qa_mul ember_qarm_conv*/
/* Convolution: qarm_conv.c's ember_qa_conv_t builds the columns as for the DSP cores, ember_qm_gemm multiplies.
 * Scratch: 8 * Kp bytes (the interleaved pair, then the two plain columns). ember_qa_gemm_fn: the output
 * pixels of a channel are consecutive. */
static void ember_qa_gemm_mul(uint8_t *y, ptrdiff_t rs, int n, const int8_t *W, int M, int Kp, int16_t *cols,
                              const int16_t *t0, const int16_t *t1, const int32_t *rq, const int32_t *out) {
    ember_qm_gemm(y, rs, 1, n, W, M, Kp, cols, t0, t1, rq, out);
}
EMBER_UNUSED static void ember_qarm_conv_mul(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                             int M, const int8_t *W, const int32_t *rq, const int32_t *out,
                                             int16_t *cols) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 4, ember_qa_gemm_mul, 0, 0, 0, 0, 0);
}
/*@end*/

/*@kernel ember_qarm_conv_mul_hwc requires ember_qarm_conv_mul ember_qarm_conv_hwc*/
/* ember_qarm_conv_mul at a channels-last model's edge, as qarm_conv.c's ember_qarm_conv_hwc. */
static void ember_qarm_conv_mul_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N, int M,
                                    const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    ember_qa_conv_hwc_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, ember_qa_gemm_mul, 0);
}
/*@end*/

/*@kernel ember_qarm_conv_mul_add requires ember_qarm_conv_mul ember_qa_res*/
/* ember_qarm_conv_mul, then y = QAdd(y, res) as qarm_conv.c's ember_qarm_conv_add. */
static void ember_qarm_conv_mul_add(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                    int M, const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols,
                                    const uint8_t *res, const int32_t *radd, uint8_t *stage) {
    ember_qa_conv_t(y, x, sgn, xz, p, N, M, W, rq, out, cols, 4, ember_qa_gemm_mul, 0, ember_qa_res_rows, res, radd,
                    stage);
}
/*@end*/

/*@kernel ember_qarm_dw3_mul requires ember_qa_mul ember_qarm_dw3*/
/* Depthwise 3x3 on cores without the DSP extension (Cortex-M0/M3): each channel copied into a zero-padded
 * byte plane (ember_qa_dw3_geo_tr's layout), the bytes b ^ flip (int8 ones biased by 128: every value
 * 0..255, so a plain LDRB with an immediate offset reads it, where int16 would need a sign extension on
 * ARMv6-M), the padding the zero point as such a byte (zb), and each output's nine products straight from
 * its three plane rows. sum w (b ^ flip) less zb times the weights' sum (taken from the bias) is the sum of
 * w (x - zero point) of every other path. Wt: C x 9 int16; scratch: the plane, Hp * Wp bytes. */
EMBER_INLINE void ember_qm_dw3_rows(uint8_t *yc, const uint8_t *plane, const ember_qa_dw3_geo_t *g, const int16_t *w,
                                   const int32_t *cq, const int32_t *out, int fast) {
    const int Wp = g->Wp, SW = g->SW, OW = g->OW;
    const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
    const int32_t zp = out[0], lo = out[1], hi = out[2];
    int oh, ow;
    for (oh = 0; oh < g->OH; ++oh) {
        const uint8_t *r0 = plane + (ptrdiff_t)oh * g->SH * Wp, *r1 = r0 + Wp, *r2 = r1 + Wp;
        uint8_t *yr = yc + oh * g->ys_row;
        for (ow = 0; ow < OW; ++ow, r0 += SW, r1 += SW, r2 += SW) {
            const int32_t a = cq[3] + w0 * r0[0] + w1 * r0[1] + w2 * r0[2] + w3 * r1[0] + w4 * r1[1] + w5 * r1[2] +
                              w6 * r2[0] + w7 * r2[1] + w8 * r2[2];
            yr[ow * g->ys_col] = ember_qm_requant(a, cq, zp, lo, hi, fast);
        }
    }
}
EMBER_INLINE void ember_qm_dw3_t(uint8_t *y, const uint8_t *x, uint32_t flip, int32_t xz, const int32_t *p, int N,
                                 const int16_t *Wt, const int32_t *rq, const int32_t *out, uint8_t *plane, int fast,
                                 int hwc) {
    const ember_qa_dw3_geo_t g = ember_qa_dw3_geo_lay(p, 0, hwc);
    const int C = p[EMBER_GEO_C], Wp = g.Wp;
    const int r_end = g.H + g.PH < g.Hp ? g.H + g.PH : g.Hp, wd = g.W + g.PW < Wp ? g.W : Wp - g.PW;
    const ptrdiff_t in_plane = (ptrdiff_t)g.H * g.W, out_plane = (ptrdiff_t)g.OH * g.OW;
    const ptrdiff_t xs_ch = ember_qa_dw3_chan(p, hwc, 4, in_plane), ys_ch = ember_qa_dw3_chan(p, hwc, 8, out_plane);
    const int32_t zb = xz + (int32_t)flip; /* the zero point as a byte b ^ flip */
    int n, c, i, r, j;
    for (i = 0; i < g.Hp * Wp; ++i) plane[i] = (uint8_t)zb;
    for (n = 0; n < N; ++n)
        for (c = 0; c < C; ++c) {
            const int16_t *w = Wt + 9 * c;
            const uint8_t *xc = x + (ptrdiff_t)n * C * in_plane + c * xs_ch;
            int32_t cq[4], sw = 0;
            for (i = 0; i < 9; ++i) sw += w[i];
            cq[0] = rq[4 * c], cq[1] = rq[4 * c + 1], cq[2] = rq[4 * c + 2], cq[3] = rq[4 * c + 3] - zb * sw;
            for (r = g.PH; r < r_end; ++r) {
                uint8_t *d = plane + (ptrdiff_t)r * Wp + g.PW;
                const uint8_t *s = xc + (ptrdiff_t)(r - g.PH) * g.xs_row;
                for (j = 0; j < wd; ++j) d[j] = (uint8_t)(s[j * g.xs_col] ^ flip);
            }
            ember_qm_dw3_rows(y + (ptrdiff_t)n * C * out_plane + c * ys_ch, plane, &g, w, cq, out, fast);
        }
}
/* `hwc` (a constant where inlined): ember_qarm_dw3_mul_hwc's layouts. */
EMBER_INLINE void ember_qm_dw3_any(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                   const int16_t *Wt, const int32_t *rq, const int32_t *out, uint8_t *plane, int hwc) {
    const uint32_t flip = sgn ? 0x80u : 0u;
    const int mode = ember_qa_mode(out);
    if (mode == 2)
        ember_qm_dw3_t(y, x, flip, xz, p, N, Wt, rq, out, plane, 2, hwc);
    else if (mode == 1)
        ember_qm_dw3_t(y, x, flip, xz, p, N, Wt, rq, out, plane, 1, hwc);
    else
        ember_qm_dw3_t(y, x, flip, xz, p, N, Wt, rq, out, plane, 0, hwc);
}
EMBER_UNUSED static void ember_qarm_dw3_mul(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                            const int16_t *Wt, const int32_t *rq, const int32_t *out, uint8_t *plane) {
    ember_qm_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 0);
}
/*@end*/

/*@kernel ember_qarm_dw3_mul_hwc requires ember_qarm_dw3_mul*/
/* ember_qarm_dw3_mul at a channels-last model's edge, as qarm_dw3.c's ember_qarm_dw3_hwc. */
static void ember_qarm_dw3_mul_hwc(uint8_t *y, const uint8_t *x, int sgn, int32_t xz, const int32_t *p, int N,
                                   const int16_t *Wt, const int32_t *rq, const int32_t *out, uint8_t *plane) {
    ember_qm_dw3_any(y, x, sgn, xz, p, N, Wt, rq, out, plane, 1);
}
/*@end*/

/*@kernel ember_qarm_fc_mul requires ember_qa_mul*/
/* Fully connected on Cortex-M0/M3: y[r][n] from sum_k (a[r][k] - zero point) W[n][k] + bias[n] as qarm.c's
 * ember_qarm_fc, the rows of A widened to int16 in pairs (one row: its plain column alone), times
 * `mul_weights` (int8) by ember_qm_gemm. Scratch: 8 * Kp bytes, 2 * Kp for one row (ops/qarm.py `fc_scratch`). */
static void ember_qarm_fc_mul(uint8_t *y, const uint8_t *a, int sgn, int32_t az, int R, int Nout, int K,
                              const int8_t *W, const int32_t *rq, const int32_t *out, int16_t *cols) {
    EMBER_QA_FC(ember_qm_gemm(y + (ptrdiff_t)r * Nout, 1, Nout, 1 + two, W, Nout, Kp, cols, t0, t1, rq, out));
}
/*@end*/
