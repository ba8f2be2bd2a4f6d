/* Matrix-vector products: the layers whose matmul has a single row or a single column, where the
 * general tiled kernel (matmul.c) keeps only one or two accumulators busy and walks the weights across
 * their rows. Squeeze-Excitation's two small FCs (1x1 convolutions of a 1x1 map: y = W x) and the
 * classifier heads (Gemm of one image: y = x B) are all weights and no reuse, so these loops stream
 * the weights once, in memory order, with enough independent accumulators to keep the FMA units fed. */

/*@kernel ember_gemv_common requires ember_simd ember_act_apply_f32*/
#if EMBER_VL > 1
#define EMBER_GV_LD(ptr) (*(const ember_vf *)(const void *)(ptr))
#define EMBER_GV_ST(ptr, v) (*(ember_vf *)(void *)(ptr) = (v))
#else
#define EMBER_GV_LD(ptr) (*(ptr))
#define EMBER_GV_ST(ptr, v) (*(ptr) = (v))
#endif
/* The sum of a vector's lanes. */
EMBER_INLINE float ember_gv_hsum(ember_vf v) {
#if EMBER_VL > 1
    float s = 0.0f;
    int i;
    for (i = 0; i < EMBER_VL; ++i) s += v[i];
    return s;
#else
    return v;
#endif
}
/*@end*/

/*@kernel ember_gemv_rows_f32 requires ember_gemv_common*/
/* y[m] = act(sum_k W[m, k] x[k] + bias[m]) for m < M: W is M x K, rows contiguous (a 1x1 convolution's
 * weights, its input one pixel of K channels). Four rows at a time, two vectors of each, so eight
 * independent FMA chains; each row's lanes are summed once at the end. `bias` may be NULL. */
static void ember_gemv_rows_f32(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT W, const float *EMBER_RESTRICT x,
                                const float *bias, int M, int K, int act, float act_a, float act_b) {
    const int kv = EMBER_VL > 1 ? K / (2 * EMBER_VL) * (2 * EMBER_VL) : K;
    int m = 0, r, k;
    for (; m + 4 <= M; m += 4) {
        const float *w0 = W + (ptrdiff_t)m * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
        ember_vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        float s[4];
        for (k = 0; k < kv; k += 2 * EMBER_VL) {
            const ember_vf xa = EMBER_GV_LD(x + k), xb = EMBER_GV_LD(x + k + EMBER_VL);
            a0 += EMBER_GV_LD(w0 + k) * xa;
            b0 += EMBER_GV_LD(w0 + k + EMBER_VL) * xb;
            a1 += EMBER_GV_LD(w1 + k) * xa;
            b1 += EMBER_GV_LD(w1 + k + EMBER_VL) * xb;
            a2 += EMBER_GV_LD(w2 + k) * xa;
            b2 += EMBER_GV_LD(w2 + k + EMBER_VL) * xb;
            a3 += EMBER_GV_LD(w3 + k) * xa;
            b3 += EMBER_GV_LD(w3 + k + EMBER_VL) * xb;
        }
        s[0] = ember_gv_hsum(a0 + b0);
        s[1] = ember_gv_hsum(a1 + b1);
        s[2] = ember_gv_hsum(a2 + b2);
        s[3] = ember_gv_hsum(a3 + b3);
        for (; k < K; ++k) {
            s[0] += w0[k] * x[k];
            s[1] += w1[k] * x[k];
            s[2] += w2[k] * x[k];
            s[3] += w3[k] * x[k];
        }
        for (r = 0; r < 4; ++r) y[m + r] = bias ? s[r] + bias[m + r] : s[r];
    }
    for (; m < M; ++m) {
        const float *w0 = W + (ptrdiff_t)m * K;
        ember_vf a0 = {0}, b0 = {0};
        float s;
        for (k = 0; k < kv; k += 2 * EMBER_VL) {
            a0 += EMBER_GV_LD(w0 + k) * EMBER_GV_LD(x + k);
            b0 += EMBER_GV_LD(w0 + k + EMBER_VL) * EMBER_GV_LD(x + k + EMBER_VL);
        }
        s = ember_gv_hsum(a0 + b0);
        for (; k < K; ++k) s += w0[k] * x[k];
        y[m] = bias ? s + bias[m] : s;
    }
    ember_act_apply_f32(y, M, act, act_a, act_b);
}
/*@end*/

/*@kernel ember_gemv_cols_f32 requires ember_gemv_common*/
/* y[n] = act(alpha * sum_k x[k] B[k, n] + beta * bias[n * bias_sn]) for n < N: B is K x N, rows contiguous
 * (a Gemm of one row). B streams row by row, four rows per pass over y (which stays in L1), so every
 * weight is read once and in order; bias may be NULL, bias_sn 0 broadcasts it. */
static void ember_gemv_cols_f32(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, const float *EMBER_RESTRICT B,
                                int N, int K, float alpha, const float *bias, ptrdiff_t bias_sn, float beta, int act,
                                float act_a, float act_b) {
    const int nv = EMBER_VL > 1 ? N / EMBER_VL * EMBER_VL : 0;
    int k = 0, n;
    for (n = 0; n < N; ++n) y[n] = 0.0f;
    for (; k + 4 <= K; k += 4) {
        const float *r0 = B + (ptrdiff_t)k * N, *r1 = r0 + N, *r2 = r1 + N, *r3 = r2 + N;
        const float x0 = x[k], x1 = x[k + 1], x2 = x[k + 2], x3 = x[k + 3];
        for (n = 0; n < nv; n += EMBER_VL) {
            ember_vf acc = EMBER_GV_LD(y + n);
            acc += x0 * EMBER_GV_LD(r0 + n) + x1 * EMBER_GV_LD(r1 + n);
            acc += x2 * EMBER_GV_LD(r2 + n) + x3 * EMBER_GV_LD(r3 + n);
            EMBER_GV_ST(y + n, acc);
        }
        for (; n < N; ++n) y[n] += x0 * r0[n] + x1 * r1[n] + x2 * r2[n] + x3 * r3[n];
    }
    for (; k < K; ++k) {
        const float *r0 = B + (ptrdiff_t)k * N, x0 = x[k];
        for (n = 0; n < N; ++n) y[n] += x0 * r0[n];
    }
    if (alpha != 1.0f || bias)
        for (n = 0; n < N; ++n) y[n] = alpha * y[n] + (bias ? beta * bias[(ptrdiff_t)n * bias_sn] : 0.0f);
    ember_act_apply_f32(y, N, act, act_a, act_b);
}
/*@end*/
