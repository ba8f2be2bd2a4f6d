/* Matrix multiplication: the workhorse of Gemm, MatMul, Conv (im2col) and ConvTranspose (col2im). */

/*@kernel ember_simd requires ember_prelude*/
/* The widest float vector the compiler targets, from its predefined macros (so --cpu/--target decide):
 * EMBER_VL floats per vector (1: plain scalar code) and EMBER_MR, the rows of a matmul register tile,
 * sized so that MR x 2 accumulators + 2 B vectors fit the register file. Vectors are GCC/clang vector
 * extensions with 4-byte alignment, so loads and stores may be unaligned. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__AVX512F__)
#define EMBER_VL 16
#define EMBER_MR 12
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__AVX__)
#define EMBER_VL 8
#define EMBER_MR 6
#elif (defined(__GNUC__) || defined(__clang__)) && (defined(__aarch64__) && defined(__ARM_NEON))
#define EMBER_VL 4
#define EMBER_MR 8
#elif (defined(__GNUC__) || defined(__clang__)) && (defined(__SSE2__) || defined(__ARM_NEON) || defined(__wasm_simd128__))
#define EMBER_VL 4
#define EMBER_MR 6
#else
#define EMBER_VL 1
#define EMBER_MR 4
#endif
#if EMBER_VL > 1
typedef float ember_vf __attribute__((vector_size(EMBER_VL * 4), aligned(4)));
#else
typedef float ember_vf;
#endif
/*@end*/

/*@kernel ember_matmul_f32 requires ember_act_apply_f32 ember_simd*/
#define EMBER_MM_KC 256
/* acc[R][V] (+)= A[R rows, k0..k1) * B[k0..k1, V vectors of type T]; the tile lives in registers
 * (R, V constant per instantiation: MR, 4 or 1 rows x 2 vectors, 1 vector or 1 column). `first`: start from zero instead of the partial sums in C. */
#define EMBER_MM_TILE(NAME, T, R, V)                                                                   \
    static void NAME(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,       \
                     ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, int kn, int first) {            \
        T acc[R][V];                                                                                 \
        int i, j, k;                                                                                 \
        for (i = 0; i < R; ++i)                                                                      \
            for (j = 0; j < V; ++j)                                                                  \
                acc[i][j] = first ? (T){0} : *(const T *)(C + i * c_sm + j * (ptrdiff_t)(sizeof(T) / 4)); \
        for (k = 0; k < kn; ++k) {                                                                   \
            const float *b = B + (ptrdiff_t)k * b_sk;                                                \
            T bv[V];                                                                                 \
            for (j = 0; j < V; ++j) bv[j] = *(const T *)(b + j * (ptrdiff_t)(sizeof(T) / 4));       \
            for (i = 0; i < R; ++i) {                                                                \
                const float a = A[i * a_sm + (ptrdiff_t)k * a_sk];                                   \
                for (j = 0; j < V; ++j) acc[i][j] += a * bv[j];                                      \
            }                                                                                        \
        }                                                                                            \
        for (i = 0; i < R; ++i)                                                                      \
            for (j = 0; j < V; ++j) *(T *)(C + i * c_sm + j * (ptrdiff_t)(sizeof(T) / 4)) = acc[i][j]; \
    }
EMBER_MM_TILE(ember_mm_tile_r2v, ember_vf, EMBER_MR, 2)
EMBER_MM_TILE(ember_mm_tile_r1v, ember_vf, EMBER_MR, 1)
EMBER_MM_TILE(ember_mm_tile_r1s, float, EMBER_MR, 1)
EMBER_MM_TILE(ember_mm_tile_42v, ember_vf, 4, 2)
EMBER_MM_TILE(ember_mm_tile_41v, ember_vf, 4, 1)
EMBER_MM_TILE(ember_mm_tile_41s, float, 4, 1)
EMBER_MM_TILE(ember_mm_tile_12v, ember_vf, 1, 2)
EMBER_MM_TILE(ember_mm_tile_11v, ember_vf, 1, 1)
EMBER_MM_TILE(ember_mm_tile_11s, float, 1, 1)
/* One tile: `tall` picks MR, 4 or 1 rows, `strip` two vectors, one vector or one column. (A switch,
 * not a table of function pointers: a pointer table needs load-time relocations in PIC objects.) */
static void ember_mm_tile(int tall, int strip, float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A,
                          ptrdiff_t a_sm, ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, int kn, int first) {
    switch (tall * 3 + strip) {
    case 0: ember_mm_tile_r2v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 1: ember_mm_tile_r1v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 2: ember_mm_tile_r1s(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 3: ember_mm_tile_42v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 4: ember_mm_tile_41v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 5: ember_mm_tile_41s(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 6: ember_mm_tile_12v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    case 7: ember_mm_tile_11v(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    default: ember_mm_tile_11s(C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first); break;
    }
}

/* C[m, n] = act(alpha * sum_k A[m*a_sm + k*a_sk] * B[k*b_sk + n] + beta * bias[m*bias_sm + n*bias_sn]).
 * B rows are contiguous (unit n stride); A may be strided (transposed operands). Columns go in strips
 * of two vectors, K in blocks of EMBER_MM_KC (a B strip block stays in L1 while all rows of A pass
 * over it), rows in register tiles of EMBER_MR; partial sums wait in C between K blocks, and the
 * epilogue (alpha, bias, activation) runs on each strip once its sums are final.
 * `bias` may be NULL; bias_sm / bias_sn of 0 broadcast it along rows / columns. */
static void ember_matmul_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm,
                             const float *A, ptrdiff_t a_sm, ptrdiff_t a_sk,
                             const float *B, ptrdiff_t b_sk,
                             int M, int N, int K, float alpha,
                             const float *bias, ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta,
                             int act, float act_a, float act_b) {
    int n0, k0, m0, i, j;
    for (n0 = 0; n0 < N;) {
        /* Strip width: two vectors, else one, else one column (scalar). */
        const int strip = N - n0 >= 2 * EMBER_VL ? 0 : N - n0 >= EMBER_VL && EMBER_VL > 1 ? 1 : 2;
        const int nv = strip == 0 ? 2 * EMBER_VL : strip == 1 ? EMBER_VL : 1;
        for (k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += EMBER_MM_KC) {
            const int kn = K - k0 < EMBER_MM_KC ? K - k0 : EMBER_MM_KC;
            const float *b = B + (ptrdiff_t)k0 * b_sk + n0;
            for (m0 = 0; m0 < M;) {
                const int tall = M - m0 >= EMBER_MR ? 0 : M - m0 >= 4 ? 1 : 2;
                ember_mm_tile(tall, strip, C + (ptrdiff_t)m0 * c_sm + n0, c_sm,
                              A + (ptrdiff_t)m0 * a_sm + (ptrdiff_t)k0 * a_sk, a_sm, a_sk, b, b_sk, kn, k0 == 0);
                m0 += tall == 0 ? EMBER_MR : tall == 1 ? 4 : 1;
            }
            if (K == 0) break;
        }
        for (i = 0; i < M; ++i) {
            float *c = C + (ptrdiff_t)i * c_sm + n0;
            if (bias) {
                const float *bp = bias + (ptrdiff_t)i * bias_sm + (ptrdiff_t)n0 * bias_sn;
                for (j = 0; j < nv; ++j) c[j] = alpha * c[j] + beta * bp[(ptrdiff_t)j * bias_sn];
            } else if (alpha != 1.0f) {
                for (j = 0; j < nv; ++j) c[j] = alpha * c[j];
            }
            ember_act_apply_f32(c, nv, act, act_a, act_b);
        }
        n0 += nv;
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
