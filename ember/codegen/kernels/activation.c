/* Fused activation epilogues for Conv / ConvTranspose / Gemm / MatMul (node.attrs["_act"]).
 * The kind numbers are shared with ember/ops/epilogue.py (KIND_CODES). */

/*@kernel ember_act requires ember_prelude ember_sigmoidf ember_tanhf ember_expm1f ember_fabsf*/
#define EMBER_ACT_NONE 0
#define EMBER_ACT_RELU 1
#define EMBER_ACT_LEAKYRELU 2
#define EMBER_ACT_CLIP 3
#define EMBER_ACT_SIGMOID 4
#define EMBER_ACT_TANH 5
#define EMBER_ACT_HARDSIGMOID 6
#define EMBER_ACT_HARDSWISH 7
#define EMBER_ACT_ELU 8
#define EMBER_ACT_CELU 9
#define EMBER_ACT_SWISH 10
#define EMBER_ACT_SOFTSIGN 11
#define EMBER_ACT_THRESHOLDEDRELU 12
#define EMBER_ACT_SHRINK 13 /* alpha: bias, beta: lambd */
/* One activation on one value; with a constant `kind` the compiler folds the switch away.
 * Comparisons are written so that NaN propagates like the unfused ONNX ops. */
EMBER_INLINE float ember_act_f32(float x, int kind, float alpha, float beta) {
    float t;
    switch (kind) {
    case EMBER_ACT_RELU: return x < 0.0f ? 0.0f : x;
    case EMBER_ACT_LEAKYRELU: return x < 0.0f ? alpha * x : x;
    case EMBER_ACT_CLIP: t = x < alpha ? alpha : x; return t > beta ? beta : t;
    case EMBER_ACT_SIGMOID: return ember_sigmoidf(x);
    case EMBER_ACT_TANH: return ember_tanhf(x);
    case EMBER_ACT_HARDSIGMOID:
        t = alpha * x + beta; t = t < 0.0f ? 0.0f : t; return t > 1.0f ? 1.0f : t;
    case EMBER_ACT_HARDSWISH:
        t = x * (1.0f / 6.0f) + 0.5f; t = t < 0.0f ? 0.0f : t; return x * (t > 1.0f ? 1.0f : t);
    case EMBER_ACT_ELU: return x < 0.0f ? alpha * ember_expm1f(x) : x;
    case EMBER_ACT_CELU: return x < 0.0f ? alpha * ember_expm1f(x / alpha) : x;
    case EMBER_ACT_SWISH: return x * ember_sigmoidf(alpha * x);
    case EMBER_ACT_SOFTSIGN: return x / (1.0f + ember_fabsf(x));
    case EMBER_ACT_THRESHOLDEDRELU: return x > alpha ? x : 0.0f;
    case EMBER_ACT_SHRINK: return x < -beta ? x + alpha : x > beta ? x - alpha : 0.0f;
    default: return x;
    }
}
/*@end*/

/*@kernel ember_act_apply_f32 requires ember_act ember_simd*/
#if EMBER_VL > 1
typedef int ember_act_vi __attribute__((vector_size(EMBER_VL * 4)));
typedef unsigned ember_act_vu __attribute__((vector_size(EMBER_VL * 4)));
/* min(v, hi) and max(v, lo) keeping a NaN v: on x86 one MINPS/MAXPS (they return the second operand when either
 * is NaN), where GCC made a comparison and a blend of the generic form below (Swish 1.25x the time on Zen 3). */
#if EMBER_HAVE_AVX && EMBER_VL == 8
#define EMBER_ACT_VMIN(v, hi) __builtin_ia32_minps256(hi, v)
#define EMBER_ACT_VMAX(v, lo) __builtin_ia32_maxps256(lo, v)
#elif EMBER_HAVE_SSE2 && EMBER_VL == 4
#define EMBER_ACT_VMIN(v, hi) __builtin_ia32_minps(hi, v)
#define EMBER_ACT_VMAX(v, lo) __builtin_ia32_maxps(lo, v)
#else
EMBER_INLINE ember_vf ember_act_vsel(ember_act_vi m, ember_vf a, ember_vf b) {
    return (ember_vf)(((ember_act_vi)a & m) | ((ember_act_vi)b & ~m));
}
#define EMBER_ACT_VMIN(v, hi) ember_act_vsel((v) > (hi), hi, v)
#define EMBER_ACT_VMAX(v, lo) ember_act_vsel((v) < (lo), lo, v)
#endif
/* A fused multiply-add of 8 lanes where the compiler names one (GCC's builtin; clang's generic one). */
#if EMBER_HAVE_AVX && EMBER_VL == 8 && defined(__FMA__) && defined(__has_builtin)
#if __has_builtin(__builtin_ia32_vfmaddps256)
#define EMBER_ACT_VFMA(a, b, c) __builtin_ia32_vfmaddps256(a, b, c)
#elif __has_builtin(__builtin_elementwise_fma)
#define EMBER_ACT_VFMA(a, b, c) __builtin_elementwise_fma(a, b, c)
#endif
#endif
/* x * sigmoid(z) = x / (1 + e^-z), EMBER_VL lanes at a time (Sigmoid: x = 1; Swish: z = alpha * x). EfficientNet's
 * fused Swish took 2-3x its convolutions' matmul time in GCC's vectorization of ember_sigmoidf (0.8 ns an element
 * on Zen 3: e^-|x|, a degree-7 polynomial, a select of the sign and 2^k in two factors). Here: e^-z = 2^n e^r with
 * -z clamped to [-87.3, 88.8] (2^n stays a normal float or +inf: no sign select, no subnormal scaling), a degree-5
 * polynomial on |r| <= ln2/2 (relative error 9.5e-8, fitted for the least maximum relative error, e^0 = 1 exactly),
 * 2^n made from n's bits in kf, one division. Results are within 4 ulp for |z| <= 20 and 6 ulp (the one-rounding
 * reduction below) wherever they are normal floats (tests/ops/test_activations_more.py); below 2^-126 (sigmoid(z)
 * for z < -87.3, swish likewise) they may come out as 0, as float32's own 1 / (1 + exp(-z)) does. sigmoid(+-inf) = 1 and 0, swish(+inf) = +inf, swish(-inf) = NaN
 * (-inf * 0, the ONNX ops' value); NaN propagates (it passes the clamps and poisons e). */
EMBER_INLINE ember_vf ember_act_vsig(ember_vf x, ember_vf t) {
    const ember_vf zero = (ember_vf){0}, shift = zero + 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    ember_vf kf, k, r, p;
    t = EMBER_ACT_VMAX(EMBER_ACT_VMIN(t, zero + 88.8f), zero - 87.3f); /* t = -z */
    kf = t * 1.44269502162933349609f + shift; /* n = round(t / ln2) in the low bits */
    k = kf - shift;
#ifdef EMBER_ACT_VFMA
    /* t - n ln2 rounded once: within 2.5e-7 of r where n = 127, 5.5e-8 for |z| < 20 */
    r = EMBER_ACT_VFMA(k, zero - 0.693147182464599609375f, t);
#else
    r = t - k * 0.693145751953125f; /* ln2 in two parts: exact without a fused multiply-add */
    r = r - k * 1.428606765330187045e-06f;
#endif
    p = 1.0f + r * (0.99999970f + r * (0.49999151f + r * (0.16667636f + r * (0.041897930f + r * 0.0082903150f))));
    return x / (1.0f + p * (ember_vf)(((ember_act_vu)kf << 23) + 0x3f800000u)); /* 2^n: n < 512 sits in kf's low bits */
}
/* Sigmoid (swish 0) or Swish over n floats in place; the last n % EMBER_VL through a vector in registers, so
 * every element is computed alike wherever it lies. Inlined with constant swish and alpha (1: EfficientNet's). */
EMBER_INLINE void ember_act_vsig_run(float *x, ptrdiff_t n, int swish, float alpha) {
    const ember_vf one = (ember_vf){0} + 1.0f;
    ptrdiff_t i;
    int j;
    for (i = 0; i + EMBER_VL <= n; i += EMBER_VL) {
        const ember_vf v = *(const ember_vf *)(x + i);
        *(ember_vf *)(x + i) = swish ? ember_act_vsig(v, v * -alpha) : ember_act_vsig(one, -v);
    }
    if (i < n) {
        ember_vf v = (ember_vf){0};
        for (j = 0; j < n - i; ++j) v[j] = x[i + j];
        v = swish ? ember_act_vsig(v, v * -alpha) : ember_act_vsig(one, -v);
        for (j = 0; j < n - i; ++j) x[i + j] = v[j];
    }
}
/* HardSwish, x * clamp(x / 6 + 1/2, 0, 1), the same operations as ember_act_f32's in vectors: GCC's vectorization
 * of that made a three-way select (three compares and blends) of the two clamps. */
EMBER_INLINE ember_vf ember_act_vhswish(ember_vf v) {
    const ember_vf zero = (ember_vf){0};
    return v * EMBER_ACT_VMIN(EMBER_ACT_VMAX(v * (1.0f / 6.0f) + 0.5f, zero), zero + 1.0f);
}
EMBER_INLINE void ember_act_vhswish_run(float *x, ptrdiff_t n) {
    ptrdiff_t i;
    int j;
    for (i = 0; i + EMBER_VL <= n; i += EMBER_VL) *(ember_vf *)(x + i) = ember_act_vhswish(*(const ember_vf *)(x + i));
    if (i < n) {
        ember_vf v = (ember_vf){0};
        for (j = 0; j < n - i; ++j) v[j] = x[i + j];
        v = ember_act_vhswish(v);
        for (j = 0; j < n - i; ++j) x[i + j] = v[j];
    }
}
#endif
/* Applies an activation in place to n contiguous values: one switch per call, a tight loop per kind,
 * called by kernels on each tile while it is still in cache. */
static void ember_act_apply_f32(float *x, ptrdiff_t n, int kind, float alpha, float beta) {
    ptrdiff_t i;
    switch (kind) {
    case EMBER_ACT_NONE: return;
    case EMBER_ACT_RELU:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_RELU, alpha, beta);
        return;
    case EMBER_ACT_LEAKYRELU:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_LEAKYRELU, alpha, beta);
        return;
    case EMBER_ACT_CLIP:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_CLIP, alpha, beta);
        return;
    case EMBER_ACT_HARDSIGMOID:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_HARDSIGMOID, alpha, beta);
        return;
#if EMBER_VL > 1
    case EMBER_ACT_HARDSWISH: ember_act_vhswish_run(x, n); return;
    case EMBER_ACT_SIGMOID: ember_act_vsig_run(x, n, 0, 0.0f); return;
    case EMBER_ACT_SWISH:
        if (alpha == 1.0f) ember_act_vsig_run(x, n, 1, 1.0f);
        else ember_act_vsig_run(x, n, 1, alpha);
        return;
#else
    case EMBER_ACT_HARDSWISH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_HARDSWISH, alpha, beta);
        return;
    /* The transcendental ones too: their branch-free exp vectorizes only in a loop of one kind. */
    case EMBER_ACT_SIGMOID:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_SIGMOID, alpha, beta);
        return;
    case EMBER_ACT_SWISH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_SWISH, alpha, beta);
        return;
#endif
    case EMBER_ACT_TANH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_TANH, alpha, beta);
        return;
    default:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], kind, alpha, beta);
        return;
    }
}
/*@end*/
