/* Matrix multiplication: the workhorse of Gemm, MatMul, Conv (im2col) and ConvTranspose (col2im). */

/*@kernel ember_matmul_f32 requires ember_act_apply_f32*/
#define EMBER_MM_MR 4
#define EMBER_MM_NR 64
/* C[m, n] = act(alpha * sum_k A[m*a_sm + k*a_sk] * B[k*b_sk + n] + beta * bias[m*bias_sm + n*bias_sn]).
 * B rows are contiguous (unit n stride), so the inner loop is a vectorizable axpy over a register/L1
 * tile of EMBER_MM_MR x EMBER_MM_NR accumulators; A may be strided (transposed operands).
 * `bias` may be NULL; bias_sm / bias_sn of 0 broadcast it along rows / columns. */
static void ember_matmul_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm,
                             const float *A, ptrdiff_t a_sm, ptrdiff_t a_sk,
                             const float *B, ptrdiff_t b_sk,
                             int M, int N, int K, float alpha,
                             const float *bias, ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta,
                             int act, float act_a, float act_b) {
    float acc[EMBER_MM_MR][EMBER_MM_NR];
    int m0, n0, k, i, j;
    for (m0 = 0; m0 < M; m0 += EMBER_MM_MR) {
        int mr = M - m0 < EMBER_MM_MR ? M - m0 : EMBER_MM_MR;
        for (n0 = 0; n0 < N; n0 += EMBER_MM_NR) {
            int nr = N - n0 < EMBER_MM_NR ? N - n0 : EMBER_MM_NR;
            for (i = 0; i < EMBER_MM_MR; ++i)
                for (j = 0; j < EMBER_MM_NR; ++j) acc[i][j] = 0.0f;
            if (mr == EMBER_MM_MR) {
                const float *a0 = A + (ptrdiff_t)m0 * a_sm;
                const float *a1 = a0 + a_sm, *a2 = a1 + a_sm, *a3 = a2 + a_sm;
                for (k = 0; k < K; ++k) {
                    const float *b = B + (ptrdiff_t)k * b_sk + n0;
                    ptrdiff_t ak = (ptrdiff_t)k * a_sk;
                    float v0 = a0[ak], v1 = a1[ak], v2 = a2[ak], v3 = a3[ak];
                    for (j = 0; j < nr; ++j) {
                        float bj = b[j];
                        acc[0][j] += v0 * bj;
                        acc[1][j] += v1 * bj;
                        acc[2][j] += v2 * bj;
                        acc[3][j] += v3 * bj;
                    }
                }
            } else {
                for (i = 0; i < mr; ++i) {
                    const float *a = A + (ptrdiff_t)(m0 + i) * a_sm;
                    for (k = 0; k < K; ++k) {
                        const float *b = B + (ptrdiff_t)k * b_sk + n0;
                        float v = a[(ptrdiff_t)k * a_sk];
                        for (j = 0; j < nr; ++j) acc[i][j] += v * b[j];
                    }
                }
            }
            for (i = 0; i < mr; ++i) {
                float *c = C + (ptrdiff_t)(m0 + i) * c_sm + n0;
                if (bias) {
                    const float *bp = bias + (ptrdiff_t)(m0 + i) * bias_sm + (ptrdiff_t)n0 * bias_sn;
                    for (j = 0; j < nr; ++j) c[j] = alpha * acc[i][j] + beta * bp[(ptrdiff_t)j * bias_sn];
                } else {
                    for (j = 0; j < nr; ++j) c[j] = alpha * acc[i][j];
                }
                ember_act_apply_f32(c, nr, act, act_a, act_b);
            }
        }
    }
}
/*@end*/

/*@kernel ember_transpose2d_f32 requires ember_prelude*/
/* dst[c][r] = src[r][c] for a rows x cols matrix (makes a run-time B operand row-contiguous). */
static void ember_transpose2d_f32(float *EMBER_RESTRICT dst, const float *EMBER_RESTRICT src, int rows, int cols) {
    int r, c;
    for (r = 0; r < rows; ++r)
        for (c = 0; c < cols; ++c) dst[(ptrdiff_t)c * rows + r] = src[(ptrdiff_t)r * cols + c];
}
/*@end*/

/*@kernel ember_f16_arrays requires ember_f16*/
/* Whole-array half <-> float conversion: float16 nodes of the float32-only kernels compute in float. */
static void ember_f16_to_f32_n(float *EMBER_RESTRICT d, const uint16_t *EMBER_RESTRICT s, ptrdiff_t n) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) d[i] = ember_f16_to_f32(s[i]);
}
static void ember_f32_to_f16_n(uint16_t *EMBER_RESTRICT d, const float *EMBER_RESTRICT s, ptrdiff_t n) {
    ptrdiff_t i;
    for (i = 0; i < n; ++i) d[i] = ember_f32_to_f16(s[i]);
}
/*@end*/
