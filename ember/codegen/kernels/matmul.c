/* Matrix multiplication: the workhorse of Gemm, MatMul, Conv (im2col) and ConvTranspose (col2im). */

/*@kernel ember_simd requires ember_prelude*/
/* The widest float vector the compiler targets, from its predefined macros (so --cpu/--target decide):
 * EMBER_VL floats per vector (1: plain scalar code) and EMBER_MR, the rows of a matmul register tile,
 * sized so that MR x 2 accumulators + 2 B vectors fit the register file. Vectors are GCC/clang vector
 * extensions with 4-byte alignment, so loads and stores may be unaligned. */
#if EMBER_HAVE_AVX512
#define EMBER_VL 16
#define EMBER_MR 12
#elif EMBER_HAVE_AVX
#define EMBER_VL 8
#define EMBER_MR 6
#elif EMBER_HAVE_NEON64
#define EMBER_VL 4
#define EMBER_MR 8
#elif EMBER_HAVE_SIMD128
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

/*@kernel ember_matmul_core requires ember_act_apply_f32 ember_simd*/
#ifndef EMBER_MM_KC /* NAME.c defines it from the CPU family (toolchain/cpus.py) */
#define EMBER_MM_KC 256
#endif
#ifndef EMBER_MM_PREFETCH /* the same: 1 prefetches the next block of compile-time panels */
#define EMBER_MM_PREFETCH 1
#endif
#ifndef EMBER_MM_PANEL /* columns per compile-time packed B panel: the CPU family's (16 or 32), else 32 */
#define EMBER_MM_PANEL 32
#endif
#ifndef EMBER_MM_STRIP_PREFETCH /* the same: 1 prefetches the next strip's B rows while packing this one's */
#define EMBER_MM_STRIP_PREFETCH 0
#endif
#ifndef EMBER_MM_BLOCK_N /* the same: 64 packs B whole per K block when N <= 64 (0: never; 64 KiB of stack) */
#define EMBER_MM_BLOCK_N 0
#endif
#ifndef EMBER_MM_ROW_PANELS /* the same: 1 where convolutions may have their weights in row panels (`apack`) */
#define EMBER_MM_ROW_PANELS 0
#endif
#ifndef EMBER_MM_OUT_PREFETCH /* the same: 1 prefetches the next strip's output and residual lines, row by row */
#define EMBER_MM_OUT_PREFETCH 0
#endif
#ifndef EMBER_MM_QUAD_STRIPS /* the same: 1 runs 4-vector strips over weights in row panels (AVX-512) */
#define EMBER_MM_QUAD_STRIPS 0
#endif
#if EMBER_MM_ROW_PANELS && EMBER_MR < 6
#error "weights in row panels need register tiles of 6 rows (EMBER_MR >= 6): a build without AVX/NEON vectors"
#endif
/* Clamp to [lo, hi] keeping NaN (the fused Relu/Clip epilogue, applied in registers). */
EMBER_INLINE float ember_sclamp(float x, float lo, float hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}
/* The same for vectors of type T (TI: int32 lanes of its size), lane by lane. */
#define EMBER_VCLAMP(NAME, T, TI)                                        \
    EMBER_INLINE T NAME(T x, float lo, float hi) {                       \
        const T lv = (T){0} + lo, hv = (T){0} + hi;                      \
        TI m = x < lv;                                                   \
        x = (T)(((TI)lv & m) | ((TI)x & ~m));                            \
        m = x > hv;                                                      \
        return (T)(((TI)hv & m) | ((TI)x & ~m));                         \
    }
#if EMBER_VL > 1
typedef int32_t ember_vi __attribute__((vector_size(EMBER_VL * 4)));
EMBER_VCLAMP(ember_vclamp, ember_vf, ember_vi)
#else
#define ember_vclamp ember_sclamp
#endif
/* acc[R][V] (+)= A[R rows, k0..k1) * B[k0..k1, V vectors of type T]; the tile lives in registers
 * (R, V constant per instantiation: MR, 13, 8, 6, 4 or 1 rows x 2 vectors, 1 vector or 1 column). `first`:
 * start from zero instead of the partial sums in C. On the last K block the fused epilogue runs in
 * registers before the store: `bias` (row i adds bias[i * bias_sm]; with bias_sm < 0, column j adds
 * bias[j]; NULL for none), then `res` (a
 * residual laid out as C: the tile adds its own elements of it; NULL for none), then, if `clamp`, a
 * clamp to [lo, hi] (Relu, Clip). Every loop over the tile's rows and vectors is unrolled whole (EMBER_UNROLL):
 * GCC 12 at -O3 unrolled only the K loop's, so acc lived on the stack around it, every accumulator stored and
 * reloaded once per call before the loop and once after (on Zen 3, 1x1 convs alone took 0.91-0.96x the time
 * with acc in registers throughout). */
#define EMBER_MM_TILE(NAME, T, CLAMP, R, V)                                                                            \
    EMBER_NOINLINE static void NAME(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,           \
                     ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, int kn, int first,                                \
                     const float *bias, ptrdiff_t bias_sm, int clamp, float lo, float hi,                              \
                     const float *res) {                                                                               \
        EMBER_MM_TILE_BODY(T, CLAMP, R, V, (void)0)                                                                    \
    }
/* The same with one prefetch per K step (k < pf_n): line pf_lo + k of rows of 4 lines (64 floats) pf_sk floats
 * apart from pf, a share of the next block of weights (ember_matmul_wide_f32), so they stream in while this block is
 * multiplied: issued in a burst between tiles, the prefetches waited on each other (16 lines in flight at most).
 * (The general matmul's tiles keep a burst per K block: spread there, BERT-base's products measured 0.995x.) */
#define EMBER_MM_TILE_PF(NAME, T, CLAMP, R, V)                                                                         \
    EMBER_NOINLINE static void NAME(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,           \
                     ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, int kn, int first,                                \
                     const float *bias, ptrdiff_t bias_sm, int clamp, float lo, float hi,                              \
                     const float *res, const float *pf, ptrdiff_t pf_sk, int pf_lo, int pf_n) {                        \
        EMBER_MM_TILE_BODY(T, CLAMP, R, V, if (k < pf_n) __builtin_prefetch(pf + (ptrdiff_t)((pf_lo + k) >> 2) * pf_sk \
                                                                             + ((pf_lo + k) & 3) * 16))                \
    }
#define EMBER_MM_TILE_BODY(T, CLAMP, R, V, PREFETCH)                                                                   \
        T acc[R][V];                                                                                                   \
        int i, j, k;                                                                                                   \
        EMBER_UNROLL for (i = 0; i < R; ++i)                                                                           \
            EMBER_UNROLL for (j = 0; j < V; ++j)                                                                       \
                acc[i][j] = first ? (T){0} : *(const T *)(C + i * c_sm + j * (ptrdiff_t)(sizeof(T) / 4));              \
        for (k = 0; k < kn; ++k) {                                                                                     \
            const float *b = B + (ptrdiff_t)k * b_sk;                                                                  \
            T bv[V];                                                                                                   \
            PREFETCH;                                                                                                  \
            EMBER_UNROLL for (j = 0; j < V; ++j) bv[j] = *(const T *)(b + j * (ptrdiff_t)(sizeof(T) / 4));             \
            EMBER_UNROLL for (i = 0; i < R; ++i) {                                                                     \
                const float a = A[i * a_sm + (ptrdiff_t)k * a_sk];                                                     \
                EMBER_UNROLL for (j = 0; j < V; ++j) acc[i][j] += a * bv[j];                                           \
            }                                                                                                          \
        }                                                                                                              \
        if (bias && bias_sm < 0) /* a bias per column (channels-last 1x1 convs, Gemm's bias row) */                    \
            EMBER_UNROLL for (i = 0; i < R; ++i)                                                                       \
                EMBER_UNROLL for (j = 0; j < V; ++j) acc[i][j] += *(const T *)(bias + j * (ptrdiff_t)(sizeof(T) / 4)); \
        else if (bias)                                                                                                 \
            EMBER_UNROLL for (i = 0; i < R; ++i)                                                                       \
                EMBER_UNROLL for (j = 0; j < V; ++j) acc[i][j] += bias[i * bias_sm];                                   \
        if (res)                                                                                                       \
            EMBER_UNROLL for (i = 0; i < R; ++i)                                                                       \
                EMBER_UNROLL for (j = 0; j < V; ++j)                                                                   \
                    acc[i][j] += *(const T *)(res + i * c_sm + j * (ptrdiff_t)(sizeof(T) / 4));                        \
        if (clamp)                                                                                                     \
            EMBER_UNROLL for (i = 0; i < R; ++i)                                                                       \
                EMBER_UNROLL for (j = 0; j < V; ++j) acc[i][j] = CLAMP(acc[i][j], lo, hi);                             \
        EMBER_UNROLL for (i = 0; i < R; ++i)                                                                           \
            EMBER_UNROLL for (j = 0; j < V; ++j) *(T *)(C + i * c_sm + j * (ptrdiff_t)(sizeof(T) / 4)) = acc[i][j];
EMBER_MM_TILE(ember_mm_tile_r2v, ember_vf, ember_vclamp, EMBER_MR, 2)
EMBER_MM_TILE(ember_mm_tile_r1v, ember_vf, ember_vclamp, EMBER_MR, 1)
EMBER_MM_TILE(ember_mm_tile_r1s, float, ember_sclamp, EMBER_MR, 1)
#if EMBER_MR == 12 /* 13 x 2 vectors: 26 accumulators, still no spills in 32 registers */
EMBER_MM_TILE(ember_mm_tile_132v, ember_vf, ember_vclamp, 13, 2)
EMBER_MM_TILE(ember_mm_tile_131v, ember_vf, ember_vclamp, 13, 1)
EMBER_MM_TILE(ember_mm_tile_131s, float, ember_sclamp, 13, 1)
#endif
#if EMBER_MR > 8
EMBER_MM_TILE(ember_mm_tile_82v, ember_vf, ember_vclamp, 8, 2)
EMBER_MM_TILE(ember_mm_tile_81v, ember_vf, ember_vclamp, 8, 1)
EMBER_MM_TILE(ember_mm_tile_81s, float, ember_sclamp, 8, 1)
#endif
#if EMBER_VL == 16
/* Half vectors (8 floats, AVX's ymm) for strips of 8 to 15 columns, which 16-float vectors would otherwise leave to
 * the one-column scalar tile: an NHWC 1x1 conv to 8 channels (TFLite's small models) took 10x the AVX2 build's time. */
typedef float ember_vh __attribute__((vector_size(32), aligned(4)));
typedef int32_t ember_vhi __attribute__((vector_size(32)));
EMBER_VCLAMP(ember_vhclamp, ember_vh, ember_vhi)
EMBER_MM_TILE(ember_mm_tile_r1h, ember_vh, ember_vhclamp, EMBER_MR, 1)
EMBER_MM_TILE(ember_mm_tile_131h, ember_vh, ember_vhclamp, 13, 1)
EMBER_MM_TILE(ember_mm_tile_81h, ember_vh, ember_vhclamp, 8, 1)
EMBER_MM_TILE(ember_mm_tile_61h, ember_vh, ember_vhclamp, 6, 1)
EMBER_MM_TILE(ember_mm_tile_41h, ember_vh, ember_vhclamp, 4, 1)
EMBER_MM_TILE(ember_mm_tile_11h, ember_vh, ember_vhclamp, 1, 1)
#define EMBER_MM_HALF(R_) else if (strip == 3) ember_mm_tile_##R_##1h(EMBER_MM_ARGS);
#else
#define EMBER_MM_HALF(R_)
#endif
#if EMBER_VL == 16 && EMBER_MM_ROW_PANELS && EMBER_MM_QUAD_STRIPS
/* 4-vector strips (64 columns) over weights in row panels, whose tiles are 6, 4 or 1 rows (ember_mm_rows6): per K
 * step 6 broadcasts and 4 loads feed 24 FMAs, where 12 x 2 loads 14 for 24 (see ember_matmul_wide_f32). */
#define EMBER_MM_QUAD 1
EMBER_MM_TILE(ember_mm_tile_64v, ember_vf, ember_vclamp, 6, 4)
EMBER_MM_TILE(ember_mm_tile_44v, ember_vf, ember_vclamp, 4, 4)
EMBER_MM_TILE(ember_mm_tile_14v, ember_vf, ember_vclamp, 1, 4)
#else
#define EMBER_MM_QUAD 0
#endif
#if EMBER_MR > 6
EMBER_MM_TILE(ember_mm_tile_62v, ember_vf, ember_vclamp, 6, 2)
EMBER_MM_TILE(ember_mm_tile_61v, ember_vf, ember_vclamp, 6, 1)
EMBER_MM_TILE(ember_mm_tile_61s, float, ember_sclamp, 6, 1)
#endif
EMBER_MM_TILE(ember_mm_tile_42v, ember_vf, ember_vclamp, 4, 2)
EMBER_MM_TILE(ember_mm_tile_41v, ember_vf, ember_vclamp, 4, 1)
EMBER_MM_TILE(ember_mm_tile_41s, float, ember_sclamp, 4, 1)
EMBER_MM_TILE(ember_mm_tile_12v, ember_vf, ember_vclamp, 1, 2)
EMBER_MM_TILE(ember_mm_tile_11v, ember_vf, ember_vclamp, 1, 1)
EMBER_MM_TILE(ember_mm_tile_11s, float, ember_sclamp, 1, 1)
/* C[i][j] (+)= A[i][0..kn) . b_j for `rows` rows and `cols` (< EMBER_VL) columns, b_j = b + j*kn (packed
 * contiguous), A rows contiguous: dot products in vectors along k. The columns a product of exact K blocks
 * leaves after its last whole vector (49 = 6 x 8 + 1 pixels of a 7x7 map) would otherwise go through the
 * one-column tile, a scalar FMA per row and k: 1 column of 49 took 1/7 of the FMAs. Epilogue as the tiles'
 * (`first`: start from zero; bias, res and clamp only on the last K block). */
#if EMBER_MM_BLOCK_N && EMBER_VL > 1 && EMBER_VL <= 8 /* used by the block path of ember_matmul_core_res */
static void ember_mm_dot_cols(float *C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm, const float *b, int kn,
                              int rows, int cols, int first, const float *bias, ptrdiff_t bias_sm, const float *res,
                              int clamp, float lo, float hi) {
    int i, j, k, t;
    for (i = 0; i < rows; ++i) {
        const float *a = A + (ptrdiff_t)i * a_sm;
        for (j = 0; j < cols; ++j) {
            const float *bj = b + (ptrdiff_t)j * kn;
            float sum = 0.0f;
            k = 0;
            {
                ember_vf acc0 = {0}, acc1 = {0};
                for (; k + 2 * EMBER_VL <= kn; k += 2 * EMBER_VL) {
                    acc0 += *(const ember_vf *)(a + k) * *(const ember_vf *)(bj + k);
                    acc1 += *(const ember_vf *)(a + k + EMBER_VL) * *(const ember_vf *)(bj + k + EMBER_VL);
                }
                acc0 += acc1;
                for (t = 0; t < EMBER_VL; ++t) sum += acc0[t];
            }
            for (; k < kn; ++k) sum += a[k] * bj[k];
            {
                float *c = C + (ptrdiff_t)i * c_sm + j;
                float v = first ? sum : *c + sum;
                if (bias) v += bias_sm < 0 ? bias[j] : bias[i * bias_sm];
                if (res) v += res[(ptrdiff_t)i * c_sm + j];
                *c = clamp ? ember_sclamp(v, lo, hi) : v;
            }
        }
    }
}
#endif
/* The same for a row tile of weights in row panels (`apack` below: Ap holds kn x rows floats, k-major): a vector
 * across the tile's rows (rows <= 6 < EMBER_VL lanes) times b_j[k] per k, where the scalar one-column tile took a
 * scalar FMA per row and k (1.09x the time of a 7x7 map's 1x1 conv, 49 = 48 + 1 columns, on Zen 3). A load of VL
 * floats at row k reads VL - rows floats of the rows after it: the last ones, which would pass the panel's end, go
 * one float at a time. */
#if EMBER_MM_BLOCK_N && EMBER_MM_ROW_PANELS && EMBER_VL == 8 /* a tile's rows (at most 6) in one vector */
static void ember_mm_dot_cols_ap(float *C, ptrdiff_t c_sm, const float *Ap, int rows, const float *b, int kn, int cols,
                                 int first, const float *bias, ptrdiff_t bias_sm, const float *res, int clamp, float lo,
                                 float hi) {
    int i, j, k;
    for (j = 0; j < cols; ++j) {
        const float *bj = b + (ptrdiff_t)j * kn;
        ember_vf acc = {0};
        float sum[EMBER_VL];
        for (k = 0; (ptrdiff_t)k * rows + EMBER_VL <= (ptrdiff_t)kn * rows; ++k)
            acc += *(const ember_vf *)(Ap + (ptrdiff_t)k * rows) * bj[k];
        for (i = 0; i < EMBER_VL; ++i) sum[i] = acc[i];
        for (; k < kn; ++k)
            for (i = 0; i < rows; ++i) sum[i] += Ap[(ptrdiff_t)k * rows + i] * bj[k];
        for (i = 0; i < rows; ++i) {
            float *c = C + (ptrdiff_t)i * c_sm + j;
            float v = first ? sum[i] : *c + sum[i];
            if (bias) v += bias_sm < 0 ? bias[j] : bias[i * bias_sm];
            if (res) v += res[(ptrdiff_t)i * c_sm + j];
            *c = clamp ? ember_sclamp(v, lo, hi) : v;
        }
    }
}
#endif
/* Rows of the next register tile when r rows are left: EMBER_MR while the rest is 0 or at least 6, then
 * 8 or 6 (still >= 12 accumulators, full speed), and only then 4 and 1 (too few independent
 * accumulators to hide the FMA latency). M = 64 goes 12, 12, 12, 12, 8, 8 instead of 5 x 12 + 4, and
 * with AVX-512 the 49 pixels of a 7x7 map 12, 12, 12, 13. With 8-float vectors (AVX2) 8 and 9 rows
 * go 4, 4 (+ 1) rather than 6, 1, 1 (+ 1): a 4 x 16 tile (8 accumulators) still keeps both FMA units
 * busy, a 1-row tile a quarter of them, so M = 128 (BERT's rows) and 32 (Attention's query block)
 * do a 6-row tile's work fewer. */
static int ember_mm_rows(int r) {
#if EMBER_MR == 12
    if (r == 13) return 13;
#endif
#if EMBER_MR == 6 && EMBER_VL == 8
    if (r == 8 || r == 9) return 4;
#endif
    if (r >= EMBER_MR && (r == EMBER_MR || r - EMBER_MR >= 6)) return EMBER_MR;
#if EMBER_MR > 8
    if (r >= 8) return 8;
#endif
#if EMBER_MR > 6
    if (r >= 6) return 6;
#endif
    if (r >= EMBER_MR) return EMBER_MR;
    return r >= 4 ? 4 : 1;
}
/* The row tiles over weights packed in row panels (`apack` below): AVX2's ember_mm_rows (EMBER_MR 6, 8 floats a
 * vector), whatever the build's, since the panels were laid out for these tiles at compile time
 * (passes/conv_algorithms.py row_tiles mirrors it). */
static int ember_mm_rows6(int r) {
    if (r == 8 || r == 9) return 4;
    return r >= 6 ? 6 : r >= 4 ? 4 : 1;
}
/* One tile: `rows` from ember_mm_rows, `strip` two vectors, one vector or one column. (Branches, not a
 * table of function pointers: a pointer table needs load-time relocations in PIC objects.) */
#define EMBER_MM_ARGS C, c_sm, A, a_sm, a_sk, B, b_sk, kn, first, bias, bias_sm, clamp, lo, hi, res
#define EMBER_MM_PICK(R_)                                             \
    do {                                                              \
        if (strip == 0) ember_mm_tile_##R_##2v(EMBER_MM_ARGS);        \
        else if (strip == 1) ember_mm_tile_##R_##1v(EMBER_MM_ARGS);   \
        EMBER_MM_HALF(R_)                                             \
        else ember_mm_tile_##R_##1s(EMBER_MM_ARGS);                   \
        return;                                                       \
    } while (0)
static void ember_mm_tile(int rows, int strip, float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A,
                          ptrdiff_t a_sm, ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, int kn, int first,
                          const float *bias, ptrdiff_t bias_sm, int clamp, float lo, float hi, const float *res) {
#if EMBER_MM_QUAD
    if (strip == 4) { /* rows from ember_mm_rows6 */
        if (rows == 6) ember_mm_tile_64v(EMBER_MM_ARGS);
        else if (rows == 4) ember_mm_tile_44v(EMBER_MM_ARGS);
        else ember_mm_tile_14v(EMBER_MM_ARGS);
        return;
    }
#endif
    if (rows == EMBER_MR) EMBER_MM_PICK(r);
#if EMBER_MR == 12
    if (rows == 13) EMBER_MM_PICK(13);
#endif
#if EMBER_MR > 8
    if (rows == 8) EMBER_MM_PICK(8);
#endif
#if EMBER_MR > 6
    if (rows == 6) EMBER_MM_PICK(6);
#endif
    if (rows == 4) EMBER_MM_PICK(4);
    EMBER_MM_PICK(1);
}
#undef EMBER_MM_PICK
#undef EMBER_MM_ARGS

/* The strip at column n0: two vectors, else one, else (AVX-512, N of 8 to 15) half of one, else one column
 * (scalar). A ragged last strip overlaps the previous one instead (starting at N - 2 vectors or N - 1 vector,
 * so *n0 may move back): the
 * shared columns are recomputed from scratch to the same values, at full vector speed. A rest of at
 * most one vector takes a one-vector strip, so fewer columns are computed twice (N = 196: 208, not 224). */
static int ember_mm_strip(int N, int *n0, int *nv) {
    const int rest = N - *n0;
    int strip;
    if (EMBER_VL > 1 && rest < 2 * EMBER_VL && rest > EMBER_VL && N >= 2 * EMBER_VL) *n0 = N - 2 * EMBER_VL;
    else if (EMBER_VL > 1 && rest < EMBER_VL && N >= EMBER_VL) *n0 = N - EMBER_VL;
    strip = N - *n0 >= 2 * EMBER_VL ? 0 : N - *n0 >= EMBER_VL && EMBER_VL > 1 ? 1 : 2;
    *nv = strip == 0 ? 2 * EMBER_VL : strip == 1 ? EMBER_VL : 1;
#if EMBER_VL == 16
    if (strip == 2 && N >= 8) { /* N of 8 to 15 (N >= 16 moved back to a whole vector above): half vectors */
        if (N - *n0 < 8) *n0 = N - 8;
        strip = 3;
        *nv = 8;
    }
#endif
    return strip;
}

/* The general epilogue on columns [n0, n0 + nv): alpha, beta * bias (any broadcast), the residual (laid out
 * as C; NULL for none), any activation. */
static void ember_mm_epilogue(float *C, ptrdiff_t c_sm, int M, int n0, int nv, float alpha, const float *bias,
                              ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta, const float *res, int act, float act_a,
                              float act_b) {
    int i, j;
    for (i = 0; i < M; ++i) {
        float *c = C + (ptrdiff_t)i * c_sm + n0;
        if (bias) {
            const float *bp = bias + (ptrdiff_t)i * bias_sm + (ptrdiff_t)n0 * bias_sn;
            for (j = 0; j < nv; ++j) c[j] = alpha * c[j] + beta * bp[(ptrdiff_t)j * bias_sn];
        } else if (alpha != 1.0f) {
            for (j = 0; j < nv; ++j) c[j] = alpha * c[j];
        }
        if (res)
            for (j = 0; j < nv; ++j) c[j] += res[(ptrdiff_t)i * c_sm + n0 + j];
        ember_act_apply_f32(c, nv, act, act_a, act_b);
    }
}

/* C[m, n] = act(alpha * sum_k A[m*a_sm + k*a_sk] * B[k*b_sk + n] + beta * bias[m*bias_sm + n*bias_sn]).
 * B rows are contiguous (unit n stride); A may be strided (transposed operands). Rows go in register
 * tiles of EMBER_MR, columns in strips of two vectors, K in blocks of EMBER_MM_KC; partial sums wait in
 * C between K blocks. Wide products (N > 4 vectors) run strip by strip: a B strip block, packed
 * contiguous, stays in L1 while all rows of A pass over it. Narrow ones (late CNN layers: 7x7 = 49
 * columns, big weight matrices) run row tile by row tile, so each block of A is fetched from memory
 * once for all strips. The epilogue runs in registers on the last K block when it is a per-row bias
 * and/or Relu/Clip (convolutions); anything else (alpha, beta, a bias varying along n, other
 * activations) runs on each strip after. `bias` may be NULL; bias_sm / bias_sn of 0 broadcast it.
 * `panels`: B was packed at compile time in panels of EMBER_MM_PANEL columns (or, where `panels` is more than 1, of
 * that many: ConvNarrow's 64 where its AVX-512 tiles are not built, kernels/conv.c) (panel j holds columns
 * [32j, 32j + 32) as K rows of 32, contiguous; N is a multiple of 32), so no strip is packed here and
 * the whole B streams from memory in order. b_sk is then unused.
 * `b_row` (else NULL): B row k starts at B + b_row[k] instead of B + k * b_sk, e.g. the shifted views
 * of the input's polyphase planes that make up a convolution's B (conv.c, ember_conv_shifted_f32). Each
 * strip of B is then always packed.
 * `res` (else NULL): a residual laid out as C (c_sm floats a row, not overlapping C), added after the bias
 * and before the activation, in registers when the epilogue is (a conv's Add(conv, shortcut) + Relu).
 * `apack`: A (a convolution's weights) was packed at compile time in row panels (passes/conv_algorithms.py
 * row_panels): K block by K block (EMBER_MM_KC), the row tiles (ember_mm_rows6) one after the other, each k-major
 * (kn x r floats), so a tile's broadcasts read consecutive floats and a pass of all row tiles over a K block
 * reads one forward stream, where rows a row apart are K floats apart (with K = 1024 or 2048 exactly 4 or 8
 * KiB: a tile's six rows in one L1 set). a_sm, a_sk are then unused. */
static void ember_matmul_core_ap(float *EMBER_RESTRICT C, ptrdiff_t c_sm,
                                 const float *A, ptrdiff_t a_sm, ptrdiff_t a_sk,
                                 const float *B, ptrdiff_t b_sk, const int32_t *b_row, int panels,
                                 int M, int N, int K, float alpha,
                                 const float *bias, ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta,
                                 const float *res, int act, float act_a, float act_b, int apack) {
    /* a bias along n only (one value per column) is added in the tiles too: at bias + n0, flagged by a
     * negative row stride */
    const int colb = bias && beta == 1.0f && bias_sm == 0 && bias_sn == 1;
    const ptrdiff_t tile_sm = colb ? -1 : bias_sm;
    const int pw = panels > 1 ? panels : EMBER_MM_PANEL; /* columns per compile-time panel */
    const int simple = alpha == 1.0f && (!bias || (beta == 1.0f && bias_sn == 0) || colb);
    const int clamp = simple && (act == EMBER_ACT_RELU || act == EMBER_ACT_CLIP);
    const int in_tile = simple && (clamp || act == EMBER_ACT_NONE);
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act == EMBER_ACT_CLIP ? act_b : __builtin_inff();
    int n0, nv, k0, m0, strip, rows;
#define EMBER_MM_CALL(B_, BS_)                                                                            \
    ember_mm_tile(rows, strip, C + (ptrdiff_t)m0 * c_sm + n0, c_sm, EMBER_MM_A_AT(m0, k0),                       \
                  apack ? 1 : a_sm, apack ? rows : a_sk, B_, BS_, kn, k0 == 0,                                \
                  in_tile && k0 + kn >= K && bias ? bias + (colb ? (ptrdiff_t)n0 : (ptrdiff_t)m0 * bias_sm) : 0,  \
                  tile_sm, in_tile && k0 + kn >= K && clamp, lo, hi,                                          \
                  in_tile && k0 + kn >= K && res ? res + (ptrdiff_t)m0 * c_sm + n0 : 0)
/* A row tile's first float in K block k0 (kn long): with `apack`, the block's rows [m0, m0 + rows) are kn x rows
 * floats at A + k0 * M + m0 * kn. */
#define EMBER_MM_A_AT(M0, K0) \
    (apack ? A + (ptrdiff_t)(K0) * M + (ptrdiff_t)(M0) * kn : A + (ptrdiff_t)(M0) * a_sm + (ptrdiff_t)(K0) * a_sk)
#define EMBER_MM_ROWS(R) (apack ? ember_mm_rows6(R) : ember_mm_rows(R))
#define EMBER_MM_PANEL_AT(N0, K0) \
    (B + (ptrdiff_t)((N0) / pw) * K * pw + (ptrdiff_t)(K0) * pw + (N0) % pw)
#if EMBER_MM_BLOCK_N && EMBER_VL > 1 && EMBER_VL <= 8 /* at most 64 columns of strips: see below */
    /* A few strips (the 49 pixels of a 7x7 map, ConvShifted's 61 columns there), many rows (the output
     * channels) and a long K: A, the weights (4-9 MiB in ResNet-50's last stage), would stream from memory
     * once per strip in the loop below. Here each K block of B is packed whole (every strip, contiguous),
     * then each row tile of A runs over all strips while it is in L1: A is read once. N <= 64 makes at
     * most 64 columns of strips with vectors of 4 or 8 floats (the strips before the last end at a multiple
     * of two vectors below N, so at 64 - 2 vectors at most, and the last one is at most 2 vectors). With several K blocks
     * the strips must not overlap (a tile adds its block to the partial sums in C, which the overlapped
     * strip has already advanced in this block): the rest after the whole strips then goes as one vector
     * and single columns. */
    if (N > 4 * EMBER_VL && N <= EMBER_MM_BLOCK_N && M > EMBER_MR && K > 0 && !panels) {
        float bblk[EMBER_MM_KC * EMBER_MM_BLOCK_N] __attribute__((aligned(64)));
        const int exact = K > EMBER_MM_KC;
#define EMBER_MM_BLOCK_STRIP()                                                                   \
    (exact ? (nv = N - n0 >= 2 * EMBER_VL ? 2 * EMBER_VL : N - n0 >= EMBER_VL ? EMBER_VL : 1,     \
              nv == 2 * EMBER_VL ? 0 : nv == EMBER_VL ? 1 : 2)                                    \
           : ember_mm_strip(N, &n0, &nv))
        for (k0 = 0; k0 < K; k0 += EMBER_MM_KC) {
            const int kn = K - k0 < EMBER_MM_KC ? K - k0 : EMBER_MM_KC;
            float *dst = bblk;
            for (n0 = 0; n0 < N; n0 += nv, dst += kn * nv) {
                int k, j;
                strip = EMBER_MM_BLOCK_STRIP();
                for (k = 0; k < kn; ++k) {
                    const float *bk = b_row ? B + b_row[k0 + k] + n0 : B + (ptrdiff_t)(k0 + k) * b_sk + n0;
                    for (j = 0; j < nv; ++j) dst[k * nv + j] = bk[j];
                }
            }
            for (m0 = 0; m0 < M; m0 += rows) {
                const float *src = bblk;
                rows = EMBER_MM_ROWS(M - m0);
                for (n0 = 0; n0 < N; n0 += nv, src += kn * nv) {
                    strip = EMBER_MM_BLOCK_STRIP();
                    /* the columns after the last whole vector (with `apack` and other vectors than AVX's: the tile) */
                    if (strip == 2 && ((a_sk == 1 && !apack) || (EMBER_MM_ROW_PANELS && EMBER_VL == 8 && apack))) {
                        const int last = in_tile && k0 + kn >= K;
#if EMBER_MM_ROW_PANELS && EMBER_VL == 8
                        if (apack) {
                            ember_mm_dot_cols_ap(C + (ptrdiff_t)m0 * c_sm + n0, c_sm, EMBER_MM_A_AT(m0, k0), rows, src,
                                                 kn, N - n0, k0 == 0,
                                                 last && bias ? bias + (colb ? (ptrdiff_t)n0 : (ptrdiff_t)m0 * bias_sm)
                                                              : 0,
                                                 tile_sm, last && res ? res + (ptrdiff_t)m0 * c_sm + n0 : 0,
                                                 last && clamp, lo, hi);
                            break;
                        }
#endif
                        ember_mm_dot_cols(C + (ptrdiff_t)m0 * c_sm + n0, c_sm, A + (ptrdiff_t)m0 * a_sm + k0, a_sm, src,
                                          kn, rows, N - n0, k0 == 0,
                                          last && bias ? bias + (colb ? (ptrdiff_t)n0 : (ptrdiff_t)m0 * bias_sm) : 0,
                                          tile_sm, last && res ? res + (ptrdiff_t)m0 * c_sm + n0 : 0, last && clamp,
                                          lo, hi);
                        break;
                    }
                    EMBER_MM_CALL(src, nv);
                }
            }
        }
#undef EMBER_MM_BLOCK_STRIP
        if (!in_tile) ember_mm_epilogue(C, c_sm, M, 0, N, alpha, bias, bias_sm, bias_sn, beta, res, act, act_a, act_b);
        return;
    }
#endif
    if (N <= 4 * EMBER_VL && M > EMBER_MR && !b_row) {
        for (m0 = 0; m0 < M; m0 += rows) {
            rows = EMBER_MM_ROWS(M - m0);
            for (n0 = 0; n0 < N; n0 += nv) {
                strip = ember_mm_strip(N, &n0, &nv);
                for (k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += EMBER_MM_KC) {
                    const int kn = K - k0 < EMBER_MM_KC ? K - k0 : EMBER_MM_KC;
                    if (panels)
                        EMBER_MM_CALL(EMBER_MM_PANEL_AT(n0, k0), pw);
                    else
                        EMBER_MM_CALL(B + (ptrdiff_t)k0 * b_sk + n0, b_sk);
                    if (K == 0) break;
                }
            }
        }
        if (!in_tile) ember_mm_epilogue(C, c_sm, M, 0, N, alpha, bias, bias_sm, bias_sn, beta, res, act, act_a, act_b);
        return;
    }
    for (n0 = 0; n0 < N; n0 += nv) {
        /* The B strip block, copied contiguous when several row tiles will read it: rows of B that are
         * a power-of-two bytes apart would otherwise share a few L1 sets and evict each other. */
        float bpack[EMBER_MM_KC * (EMBER_MM_QUAD ? 4 : 2) * EMBER_VL] __attribute__((aligned(64)));
        strip = ember_mm_strip(N, &n0, &nv);
#if EMBER_MM_QUAD
        if (apack && !panels && strip == 0 && N - n0 >= 4 * EMBER_VL) {
            strip = 4;
            nv = 4 * EMBER_VL;
        }
#endif
        for (k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += EMBER_MM_KC) {
            const int kn = K - k0 < EMBER_MM_KC ? K - k0 : EMBER_MM_KC;
            const float *b = panels ? EMBER_MM_PANEL_AT(n0, k0) : B + (ptrdiff_t)k0 * b_sk + n0;
            ptrdiff_t bs = panels ? pw : b_sk;
#if EMBER_GNUC && EMBER_MM_PREFETCH
            /* Compile-time panels stream through memory in this loop's order: ask for the next block
             * while this one is multiplied (the weights of late layers come from L3 or DRAM). */
            if (panels && (n0 + nv < N || k0 + kn < K)) {
                const float *next = b + (ptrdiff_t)kn * pw;
                int line;
                for (line = 0; line < kn * pw; line += 16) __builtin_prefetch(next + line);
            }
#endif
            if (b_row || (EMBER_VL > 1 && !panels && M > EMBER_MR && strip != 2)) {
                int k, j;
                for (k = 0; k < kn; ++k) {
                    const float *bk = b_row ? B + b_row[k0 + k] + n0 : b + (ptrdiff_t)k * b_sk;
#if EMBER_VL > 1
                    if (nv == 2 * EMBER_VL) { /* a whole strip (nearly every one): two vector copies, not a loop */
                        *(ember_vf *)(bpack + k * nv) = *(const ember_vf *)bk;
                        *(ember_vf *)(bpack + k * nv + EMBER_VL) = *(const ember_vf *)(bk + EMBER_VL);
                    } else if (EMBER_MM_QUAD && nv == 4 * EMBER_VL) {
                        int v;
                        for (v = 0; v < 4; ++v)
                            *(ember_vf *)(bpack + k * nv + v * EMBER_VL) = *(const ember_vf *)(bk + v * EMBER_VL);
                    } else
#endif
                        for (j = 0; j < nv; ++j) bpack[k * nv + j] = bk[j];
#if EMBER_GNUC && EMBER_MM_STRIP_PREFETCH
                    /* The rows of B are a whole output row of pixels apart (im2col's columns, a 1x1 conv's
                     * input planes): each row is its own stream, which the hardware prefetcher does not
                     * follow, so the packing copy waited on L3 for every line. The next strip's lines (the
                     * first and last float of it) are fetched to L2 now, a strip's multiplies ahead. */
                    if (!b_row && n0 + nv < N) {
                        __builtin_prefetch(bk + nv, 0, 2);
                        __builtin_prefetch(bk + (N - n0 < 2 * nv ? N - n0 : 2 * nv) - 1, 0, 2);
                    }
#endif
                }
                b = bpack;
                bs = nv;
            }
            for (m0 = 0; m0 < M; m0 += rows) {
                rows = EMBER_MM_ROWS(M - m0);
#if EMBER_GNUC && EMBER_MM_OUT_PREFETCH
                /* On the last K block, the next strip's output lines (to write) and its residual's, a strip ahead:
                 * a strip writes a short run of every row of C, rows a whole output plane apart, one stream each,
                 * more than the hardware prefetchers follow. The first 32 floats of the next strip (two lines). */
                if (k0 + kn >= K && n0 + nv < N) {
                    const int more = n0 + nv + 16 < N;
                    int i;
                    for (i = 0; i < rows; ++i) {
                        const ptrdiff_t at = (ptrdiff_t)(m0 + i) * c_sm + n0 + nv;
                        __builtin_prefetch(C + at, 1, 2);
                        if (more) __builtin_prefetch(C + at + 16, 1, 2);
                        if (res) __builtin_prefetch(res + at, 0, 2);
                        if (res && more) __builtin_prefetch(res + at + 16, 0, 2);
                    }
                }
#endif
                EMBER_MM_CALL(b, bs);
            }
            if (K == 0) break;
        }
        if (!in_tile) ember_mm_epilogue(C, c_sm, M, n0, nv, alpha, bias, bias_sm, bias_sn, beta, res, act, act_a, act_b);
    }
#undef EMBER_MM_CALL
#undef EMBER_MM_PANEL_AT
#undef EMBER_MM_A_AT
#undef EMBER_MM_ROWS
}
/* A as a_sm / a_sk say (every product but a convolution's with weights in row panels). Inline and EMBER_UNUSED: a
 * kernel that calls only ember_matmul_core_ap (Winograd's) leaves these wrappers unused, which must not warn (clang
 * warns of an unused always_inline one). */
EMBER_INLINE EMBER_UNUSED
void ember_matmul_core_res(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,
                           ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, const int32_t *b_row,
                           int panels, int M, int N, int K, float alpha, const float *bias,
                           ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta, const float *res, int act,
                           float act_a, float act_b) {
    ember_matmul_core_ap(C, c_sm, A, a_sm, a_sk, B, b_sk, b_row, panels, M, N, K, alpha, bias, bias_sm, bias_sn, beta,
                         res, act, act_a, act_b, 0);
}
/* Without a residual (every product but a convolution's fused residual Add). */
EMBER_INLINE EMBER_UNUSED
void ember_matmul_core(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,
                       ptrdiff_t a_sk, const float *B, ptrdiff_t b_sk, const int32_t *b_row, int panels,
                       int M, int N, int K, float alpha, const float *bias, ptrdiff_t bias_sm,
                       ptrdiff_t bias_sn, float beta, int act, float act_a, float act_b) {
    ember_matmul_core_res(C, c_sm, A, a_sm, a_sk, B, b_sk, b_row, panels, M, N, K, alpha, bias, bias_sm, bias_sn,
                          beta, 0, act, act_a, act_b);
}

/*@end*/

/*@kernel ember_matmul_res_f32 requires ember_matmul_core*/
/* C = act(A * B + bias[m] + res), res laid out as C (a convolution with its residual Add fused). */
static void ember_matmul_res_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm, ptrdiff_t a_sk,
                                 const float *B, ptrdiff_t b_sk, int M, int N, int K, const float *bias,
                                 const float *res, int act, float act_a, float act_b) {
    ember_matmul_core_res(C, c_sm, A, a_sm, a_sk, B, b_sk, 0, 0, M, N, K, 1.0f, bias, 1, 0, 1.0f, res, act, act_a,
                          act_b);
}
/*@end*/

/*@kernel ember_matmul_f32 requires ember_matmul_core*/
static void ember_matmul_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm, ptrdiff_t a_sk,
                             const float *B, ptrdiff_t b_sk, int M, int N, int K, float alpha, const float *bias,
                             ptrdiff_t bias_sm, ptrdiff_t bias_sn, float beta, int act, float act_a, float act_b) {
    ember_matmul_core(C, c_sm, A, a_sm, a_sk, B, b_sk, 0, 0, M, N, K, alpha, bias, bias_sm, bias_sn, beta, act, act_a,
                      act_b);
}
/*@end*/

/*@kernel ember_matmul_panels_f32 requires ember_matmul_core ember_matmul_wide_f32*/
/* The same with B packed in panels of pw columns (see `panels` above; N a multiple of pw): on AVX-512, panels of a
 * multiple of 64 columns go to the 4-vector tiles of ember_matmul_wide_f32 (a bias along n only). */
static void ember_matmul_panels_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,
                                    ptrdiff_t a_sk, const float *Bp, int pw, int M, int N, int K, const float *bias,
                                    ptrdiff_t bias_sm, ptrdiff_t bias_sn, int act, float act_a, float act_b) {
#if EMBER_VL == 16
    if (pw % 64 == 0 && (!bias || (bias_sm == 0 && bias_sn == 1))) {
        ember_matmul_wide_f32(C, c_sm, A, a_sm, a_sk, Bp, pw, M, N, K, bias, 0, act, act_a, act_b);
        return;
    }
#endif
    ember_matmul_core(C, c_sm, A, a_sm, a_sk, Bp, 0, 0, pw, M, N, K, 1.0f, bias, bias_sm, bias_sn, 1.0f, act, act_a,
                      act_b);
}
/*@end*/

/*@kernel ember_matmul_wide_f32 requires ember_matmul_core*/
#if EMBER_VL == 16
/* Register tiles of R rows x 4 vectors (64 columns), R = 1 .. 7: 28 accumulators and the 4 vectors of B fill AVX-512's
 * 32 registers, A broadcast from memory. Per K step 4 loads of B and R broadcasts feed 4R FMAs, where the 12 x 2 tile
 * loads 14 for 24: alone in L1, 6 x 4 ran at 207 GFLOP/s and 12 x 2 at 188 on a Sapphire Rapids core, and the 49
 * pixels of a 7x7 map are seven tiles of 7 rows with no lane or row wasted (a 49 x 1152 x 128 product: 159 GFLOP/s
 * against 136 in 12 x 2 tiles). */
EMBER_MM_TILE_PF(ember_mm_tile_74w, ember_vf, ember_vclamp, 7, 4)
EMBER_MM_TILE_PF(ember_mm_tile_64w, ember_vf, ember_vclamp, 6, 4)
EMBER_MM_TILE_PF(ember_mm_tile_54w, ember_vf, ember_vclamp, 5, 4)
EMBER_MM_TILE_PF(ember_mm_tile_44w, ember_vf, ember_vclamp, 4, 4)
EMBER_MM_TILE_PF(ember_mm_tile_34w, ember_vf, ember_vclamp, 3, 4)
EMBER_MM_TILE_PF(ember_mm_tile_24w, ember_vf, ember_vclamp, 2, 4)
EMBER_MM_TILE_PF(ember_mm_tile_14w, ember_vf, ember_vclamp, 1, 4)
/* C (M x N, c_sm floats a row) = A (a_sm, a_sk) times B packed in panels of pw columns (N / pw panels of K rows of
 * pw, pw a multiple of 64: conv_algorithms.py narrow_panels), plus bias[n] and res (laid out as C; each NULL for
 * none), then the activation: strips of
 * 64 columns, each K block of a strip (EMBER_MM_KC x 64, 64 KiB, in L2) read by every row tile in turn, the rows
 * split evenly in tiles of at most 7 (64 = 7 x 8 + 4 x 2 rather than 7 x 9 + 1). ConvNarrow's pixel-major products
 * (ResNet's 7x7 stage: 49 x 4608 x 512) took 1.16-1.22x onnxruntime's time in 2-vector strips of 12 and 13 rows. */
static void ember_matmul_wide_f32(float *EMBER_RESTRICT C, ptrdiff_t c_sm, const float *A, ptrdiff_t a_sm,
                                  ptrdiff_t a_sk, const float *Bp, int pw, int M, int N, int K, const float *bias,
                                  const float *res, int act, float act_a, float act_b) {
    const int clamp = act == EMBER_ACT_RELU || act == EMBER_ACT_CLIP, in_tile = clamp || act == EMBER_ACT_NONE;
    const float lo = act == EMBER_ACT_CLIP ? act_a : 0.0f, hi = act == EMBER_ACT_CLIP ? act_b : __builtin_inff();
    int n0, k0, m0, rows;
    for (n0 = 0; n0 < N; n0 += 64) {
        const float *panel = Bp + (ptrdiff_t)(n0 / pw) * K * pw + n0 % pw;
        for (k0 = 0; k0 < K || (K == 0 && k0 == 0); k0 += EMBER_MM_KC) {
            const int kn = K - k0 < EMBER_MM_KC ? K - k0 : EMBER_MM_KC, last = k0 + kn >= K;
            const float *b = panel + (ptrdiff_t)k0 * pw, *tb = last && bias ? bias + n0 : 0;
            /* The next K block of this strip, or the next strip's first: its rows of 64 floats, 4 lines each. The
             * weights stream from memory (ResNet-50's 3x3 at 7x7: 9 MiB), so each row tile prefetches the next
             * block's lines, one per K step, while it multiplies this one: issued in a burst of a tile's share
             * between tiles, they took ResNet-50's 7x7 stage 1.16-1.21x the time it takes now (per-node sums, paired). */
            const float *next = !last ? b + (ptrdiff_t)kn * pw
                                : n0 + 64 < N ? Bp + (ptrdiff_t)((n0 + 64) / pw) * K * pw + (n0 + 64) % pw : 0;
            const int next_lines = EMBER_GNUC && EMBER_MM_PREFETCH && next
                                       ? 4 * (!last ? (K - k0 - kn < EMBER_MM_KC ? K - k0 - kn : EMBER_MM_KC)
                                                    : K < EMBER_MM_KC ? K : EMBER_MM_KC) : 0;
            int pf = 0;
            for (m0 = 0; m0 < M; m0 += rows) {
                const int r = M - m0, tiles = (r + 6) / 7, cl = last && in_tile && clamp;
                const int pf_n = next_lines - pf < kn ? next_lines - pf : kn;
                float *c = C + (ptrdiff_t)m0 * c_sm + n0;
                const float *tr = last && in_tile && res ? res + (ptrdiff_t)m0 * c_sm + n0 : 0;
                const float *a = A + (ptrdiff_t)m0 * a_sm + (ptrdiff_t)k0 * a_sk;
                rows = (r + tiles - 1) / tiles;
#define EMBER_MM_WIDE_TILE(R_) \
    ember_mm_tile_##R_##4w(c, c_sm, a, a_sm, a_sk, b, pw, kn, k0 == 0, tb, -1, cl, lo, hi, tr, next, pw, pf, pf_n)
                if (rows == 7) EMBER_MM_WIDE_TILE(7);
                else if (rows == 6) EMBER_MM_WIDE_TILE(6);
                else if (rows == 5) EMBER_MM_WIDE_TILE(5);
                else if (rows == 4) EMBER_MM_WIDE_TILE(4);
                else if (rows == 3) EMBER_MM_WIDE_TILE(3);
                else if (rows == 2) EMBER_MM_WIDE_TILE(2);
                else EMBER_MM_WIDE_TILE(1);
#undef EMBER_MM_WIDE_TILE
                pf += pf_n;
            }
            if (K == 0) break;
        }
        if (!in_tile) ember_mm_epilogue(C, c_sm, M, n0, 64, 1.0f, 0, 0, 0, 1.0f, res, act, act_a, act_b);
    }
}
#endif
/*@end*/

/*@kernel ember_transpose2d_ld_f32 requires ember_simd*/
/* dst[c * ldd + r] = src[r * lds + c] for a rows x cols matrix: a run-time B operand made row-contiguous, ConvNarrow's
 * pixel-major result turned back to NCHW, a region boundary's NCHW <-> NHWC reorder of one image, a convolution's block
 * of output channels stored channels-last, an NHWC input's pixels gathered into im2col rows. Blocks of EMBER_VL x
 * EMBER_VL are transposed in registers (log2(VL) rounds of zipping row i with row i + VL/2), so each load and store
 * moves a whole vector; the ragged edges go one element at a time. Without vectors, a plain loop over the columns. */
#if EMBER_VL > 1
#if EMBER_VL == 16
#define EMBER_TR_ZIPLO 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define EMBER_TR_ZIPHI 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#elif EMBER_VL == 8
#define EMBER_TR_ZIPLO 0, 8, 1, 9, 2, 10, 3, 11
#define EMBER_TR_ZIPHI 4, 12, 5, 13, 6, 14, 7, 15
#else
#define EMBER_TR_ZIPLO 0, 4, 1, 5
#define EMBER_TR_ZIPHI 2, 6, 3, 7
#endif
#if EMBER_CLANG
#define EMBER_TR_PICK(a, b, IDX) __builtin_shufflevector(a, b, IDX)
#else
typedef int ember_tr_vidx __attribute__((vector_size(EMBER_VL * 4)));
#define EMBER_TR_PICK(a, b, IDX) __builtin_shuffle(a, b, (ember_tr_vidx){IDX})
#endif
#endif
static void ember_transpose2d_ld_f32(float *EMBER_RESTRICT dst, ptrdiff_t ldd, const float *EMBER_RESTRICT src,
                                     ptrdiff_t lds, int rows, int cols) {
    /* rv rows and cv columns in whole blocks (computed up front, so that with constant sizes the compiler sees
     * the edge loops' bounds: GCC warned of undefined iterations in a tail loop after the block loop) */
    const int rv = EMBER_VL > 1 ? rows - rows % EMBER_VL : 0, cv = EMBER_VL > 1 ? cols - cols % EMBER_VL : 0;
    int r, c;
#if EMBER_VL > 1
    int c0, r0;
    /* a block of VL columns at a time, all its rows: each store fills the destination's lines in turn (rows
     * outermost, every pass over the columns wrote a part of each line: 0.11 ms for MobileNetV2's stem output) */
    for (c0 = 0; c0 < cv; c0 += EMBER_VL)
        for (r0 = 0; r0 < rv; r0 += EMBER_VL) {
            ember_vf v[EMBER_VL], u[EMBER_VL];
            int i, round;
            for (i = 0; i < EMBER_VL; ++i) v[i] = *(const ember_vf *)(const void *)(src + (r0 + i) * lds + c0);
            for (round = 1; round < EMBER_VL; round *= 2) {
                for (i = 0; i < EMBER_VL / 2; ++i) {
                    u[2 * i] = EMBER_TR_PICK(v[i], v[i + EMBER_VL / 2], EMBER_TR_ZIPLO);
                    u[2 * i + 1] = EMBER_TR_PICK(v[i], v[i + EMBER_VL / 2], EMBER_TR_ZIPHI);
                }
                for (i = 0; i < EMBER_VL; ++i) v[i] = u[i];
            }
            for (i = 0; i < EMBER_VL; ++i) *(ember_vf *)(void *)(dst + (c0 + i) * ldd + r0) = v[i];
        }
#endif
    for (r = rv; r < rows; ++r) /* the rows after the whole blocks (all of them without vectors), every column */
        for (c = 0; c < cols; ++c) dst[c * ldd + r] = src[r * lds + c];
    for (c = cv; c < cols; ++c) /* the columns after the whole blocks, of the rows in blocks */
        for (r = 0; r < rv; ++r) dst[c * ldd + r] = src[r * lds + c];
}
/*@end*/

/*@kernel ember_transpose2d_f32 requires ember_transpose2d_ld_f32*/
/* The same for a contiguous matrix: dst (cols x rows) = src (rows x cols)^T. */
EMBER_INLINE void ember_transpose2d_f32(float *EMBER_RESTRICT dst, const float *EMBER_RESTRICT src, int rows, int cols) {
    ember_transpose2d_ld_f32(dst, rows, src, cols, rows, cols);
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

/*@kernel ember_matmul_int4 requires ember_simd*/
/* Weight-only int4 (MatMulInt4: MatMulNBits, DequantizeLinear(int4) -> MatMul):
 *   Y[i, j] = bias[j] + sum_k X[i, k] * (q[j, k] - z[j, b]) * s[j, b],  b = k / block.
 * W stays packed as it is in the constant region: row j holds its codes q (0..15) two per byte, low nibble
 * first (ONNX's order), `bb` bytes per block, `row_bytes` per row. The zero point z of a block is the
 * 4-bit code zp4[j * zp_bytes + b / 2] (packed the same way), else zpf[j * nblk + b], else zdef.
 * No float copy of W exists: X is split once into its even and odd elements (xe, xo: the low and high
 * nibbles' partners, zero beyond K) plus per-block sums (xs), so a block's dot product reads nibbles
 * straight into float vectors, and sum x * (q - z) = sum x * q - z * xs. Scratch: m * (2 * nblk * bb + nblk)
 * floats. Accumulates in float32. */
#define EMBER_I4_NC 4 /* columns of W per pass over a row of X: their blocks share X's loads */
#if EMBER_VL > 1
typedef uint8_t ember_vnib __attribute__((vector_size(EMBER_VL), aligned(1)));
typedef int32_t ember_vnib32 __attribute__((vector_size(EMBER_VL * 4)));
/* Bytes reach floats through int32 lanes (a direct uint8 -> float conversion is scalarized by GCC), masked
 * first (GCC widens a masked byte vector with one instruction, a loaded one byte by byte) and shifted after
 * (x86 has no byte-vector shift). */
#define EMBER_I4_F32(v) __builtin_convertvector((v), ember_vf)
#endif
/* The zero points' share of y[j], sum_b s[j, b] * z[j, b] * xs[b] (subtracted once per column). */
EMBER_INLINE float ember_int4_zero_share(ptrdiff_t j, const float *xs, const float *scales, const uint8_t *zp4,
                                         const float *zpf, float zdef, int nblk, int zp_bytes) {
    const float *sc = scales + j * nblk;
    float zs = 0.0f;
    int b;
    if (zp4) {
        const uint8_t *zr = zp4 + j * zp_bytes;
        for (b = 0; b < nblk; ++b) zs += sc[b] * xs[b] * (float)((zr[b >> 1] >> ((b & 1) * 4)) & 15);
    } else if (zpf) {
        for (b = 0; b < nblk; ++b) zs += sc[b] * xs[b] * zpf[j * nblk + b];
    } else {
        for (b = 0; b < nblk; ++b) zs += sc[b] * xs[b];
        zs *= zdef;
    }
    return zs;
}
/* y[j0 .. j0 + nc) of one row of X (xe, xo, xs: its split and block sums), nc <= EMBER_I4_NC (a constant
 * at each call site, so the column arrays live in registers). */
EMBER_INLINE void ember_int4_cols(float *EMBER_RESTRICT y, const float *xe, const float *xo, const float *xs,
                                  const uint8_t *w, const float *scales, const uint8_t *zp4, const float *zpf,
                                  float zdef, const float *bias, int j0, int nc, int nblk, int bb, int row_bytes,
                                  int zp_bytes) {
    float total[EMBER_I4_NC];
#if EMBER_VL > 1
    ember_vf acc[EMBER_I4_NC];
#endif
    int b, c, t;
    for (c = 0; c < nc; ++c) {
        total[c] = bias ? bias[j0 + c] : 0.0f;
#if EMBER_VL > 1
        acc[c] = (ember_vf){0};
#endif
    }
    for (b = 0; b < nblk; ++b) {
        const float *e = xe + (ptrdiff_t)b * bb, *o = xo + (ptrdiff_t)b * bb;
        const ptrdiff_t off = (ptrdiff_t)b * bb;
        t = 0;
#if EMBER_VL > 1
        if (bb >= EMBER_VL) {
            ember_vf part[EMBER_I4_NC];
            for (c = 0; c < nc; ++c) part[c] = (ember_vf){0};
            for (; t + EMBER_VL <= bb; t += EMBER_VL) {
                const ember_vf ev = *(const ember_vf *)(e + t), ov = *(const ember_vf *)(o + t);
                for (c = 0; c < nc; ++c) {
                    const ember_vnib v = *(const ember_vnib *)(w + (ptrdiff_t)(j0 + c) * row_bytes + off + t);
                    const ember_vnib32 lo = __builtin_convertvector(v & 15, ember_vnib32);
                    const ember_vnib32 hi = __builtin_convertvector(v & 0xF0, ember_vnib32) >> 4;
                    part[c] += EMBER_I4_F32(lo) * ev + EMBER_I4_F32(hi) * ov;
                }
            }
            for (c = 0; c < nc; ++c) acc[c] += part[c] * scales[(ptrdiff_t)(j0 + c) * nblk + b];
        }
#endif
        if (t < bb)
            for (c = 0; c < nc; ++c) {
                const ptrdiff_t j = j0 + c;
                const uint8_t *p = w + j * row_bytes + off;
                float part = 0.0f;
                int u;
                for (u = t; u < bb; ++u) part += (float)(p[u] & 15) * e[u] + (float)(p[u] >> 4) * o[u];
                total[c] += scales[j * nblk + b] * part;
            }
    }
    for (c = 0; c < nc; ++c) total[c] -= ember_int4_zero_share(j0 + c, xs, scales, zp4, zpf, zdef, nblk, zp_bytes);
    for (c = 0; c < nc; ++c) {
#if EMBER_VL > 1
        for (t = 0; t < EMBER_VL; ++t) total[c] += acc[c][t];
#endif
        y[j0 + c] = total[c];
    }
}
#if EMBER_VL > 1
#define EMBER_I4_TR 4 /* rows x columns of a tile: the nibbles of a block are widened once for 4 rows of X */
#define EMBER_I4_TC 2
/* y[i0 .. i0 + 4, j0 .. j0 + 2) (bb a multiple of EMBER_VL): like ember_int4_cols, with the block's scale
 * applied to the widened codes so the 8 accumulators are all the tile keeps in registers. xsp: row i0's
 * split of X; rows are `xstride` floats apart. */
static void ember_int4_tile(float *EMBER_RESTRICT y, int n, const float *xsp, ptrdiff_t xstride, const uint8_t *w,
                            const float *scales, const uint8_t *zp4, const float *zpf, float zdef,
                            const float *bias, int j0, int nblk, int bb, int row_bytes, int zp_bytes) {
    const int h = nblk * bb;
    ember_vf acc[EMBER_I4_TR][EMBER_I4_TC];
    int b, c, r, t;
    for (r = 0; r < EMBER_I4_TR; ++r)
        for (c = 0; c < EMBER_I4_TC; ++c) acc[r][c] = (ember_vf){0};
    for (b = 0; b < nblk; ++b) {
        const ptrdiff_t off = (ptrdiff_t)b * bb;
        float s[EMBER_I4_TC];
        for (c = 0; c < EMBER_I4_TC; ++c) s[c] = scales[(ptrdiff_t)(j0 + c) * nblk + b];
        for (t = 0; t < bb; t += EMBER_VL) {
            for (c = 0; c < EMBER_I4_TC; ++c) {
                const ember_vnib v = *(const ember_vnib *)(w + (ptrdiff_t)(j0 + c) * row_bytes + off + t);
                const ember_vnib32 lo = __builtin_convertvector(v & 15, ember_vnib32);
                const ember_vnib32 hi = __builtin_convertvector(v & 0xF0, ember_vnib32) >> 4;
                const ember_vf lf = EMBER_I4_F32(lo) * s[c], hf = EMBER_I4_F32(hi) * s[c];
                for (r = 0; r < EMBER_I4_TR; ++r) {
                    const float *xe = xsp + r * xstride + off + t;
                    acc[r][c] += lf * *(const ember_vf *)xe + hf * *(const ember_vf *)(xe + h);
                }
            }
        }
    }
    for (r = 0; r < EMBER_I4_TR; ++r)
        for (c = 0; c < EMBER_I4_TC; ++c) {
            const float *xs = xsp + r * xstride + 2 * h;
            float total = bias ? bias[j0 + c] : 0.0f;
            total -= ember_int4_zero_share(j0 + c, xs, scales, zp4, zpf, zdef, nblk, zp_bytes);
            for (t = 0; t < EMBER_VL; ++t) total += acc[r][c][t];
            y[(ptrdiff_t)r * n + j0 + c] = total;
        }
}
#endif
static void ember_matmul_int4(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const uint8_t *w,
                              const float *scales, const uint8_t *zp4, const float *zpf, float zdef,
                              const float *bias, int m, int n, int k, int nblk, int bb, int row_bytes,
                              int zp_bytes, float *EMBER_RESTRICT scratch) {
    const int h = nblk * bb; /* floats per row in xe and in xo */
    int i, j, b, t;
    for (i = 0; i < m; ++i) {
        const float *xr = x + (ptrdiff_t)i * k;
        float *xe = scratch + (ptrdiff_t)i * (2 * h + nblk), *xo = xe + h, *xs = xo + h;
        for (t = 0; t < h; ++t) {
            xe[t] = 2 * t < k ? xr[2 * t] : 0.0f;
            xo[t] = 2 * t + 1 < k ? xr[2 * t + 1] : 0.0f;
        }
        for (b = 0; b < nblk; ++b) {
            float sum = 0.0f;
            for (t = b * bb; t < (b + 1) * bb; ++t) sum += xe[t] + xo[t];
            xs[b] = sum;
        }
    }
    /* Column groups outermost: their rows of W (K / 2 bytes each) stay in cache across the rows of X. Four
     * rows at a time share each widened block (when blocks are whole vectors); the rest go one row at a time. */
    for (j = 0; j < n; j += EMBER_I4_NC) {
        i = 0;
#if EMBER_VL > 1
        if (bb % EMBER_VL == 0 && j + EMBER_I4_NC <= n)
            for (; i + EMBER_I4_TR <= m; i += EMBER_I4_TR)
                for (t = j; t < j + EMBER_I4_NC; t += EMBER_I4_TC)
                    ember_int4_tile(y + (ptrdiff_t)i * n, n, scratch + (ptrdiff_t)i * (2 * h + nblk), 2 * h + nblk,
                                    w, scales, zp4, zpf, zdef, bias, t, nblk, bb, row_bytes, zp_bytes);
#endif
        for (; i < m; ++i) {
            const float *xe = scratch + (ptrdiff_t)i * (2 * h + nblk), *xo = xe + h, *xs = xo + h;
            float *yr = y + (ptrdiff_t)i * n;
            if (j + EMBER_I4_NC <= n)
                ember_int4_cols(yr, xe, xo, xs, w, scales, zp4, zpf, zdef, bias, j, EMBER_I4_NC, nblk, bb,
                                row_bytes, zp_bytes);
            else
                for (t = j; t < n; ++t)
                    ember_int4_cols(yr, xe, xo, xs, w, scales, zp4, zpf, zdef, bias, t, 1, nblk, bb, row_bytes,
                                    zp_bytes);
        }
    }
}
/*@end*/
