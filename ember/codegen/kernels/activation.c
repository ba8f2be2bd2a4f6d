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

/*@kernel ember_act_apply_f32 requires ember_act*/
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
    case EMBER_ACT_HARDSWISH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_HARDSWISH, alpha, beta);
        return;
    /* The transcendental ones too: their branch-free exp vectorizes only in a loop of one kind. */
    case EMBER_ACT_SIGMOID:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_SIGMOID, alpha, beta);
        return;
    case EMBER_ACT_TANH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_TANH, alpha, beta);
        return;
    case EMBER_ACT_SWISH:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], EMBER_ACT_SWISH, alpha, beta);
        return;
    default:
        for (i = 0; i < n; ++i) x[i] = ember_act_f32(x[i], kind, alpha, beta);
        return;
    }
}
/*@end*/
