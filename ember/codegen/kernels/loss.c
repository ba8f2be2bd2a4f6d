/* Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ember/ops/loss.py). */

/*@kernel ember_nll_loss_impl requires ember_prelude*/
/* loss[b, d] = -x[b, t, d] * w[t] for t = target[b, d], over `batch` x `classes` x `inner` scores;
 * 0 (weight 0) where t == ignore_index (if has_ignore). A t outside [0, classes) that is not ignored is
 * bad run-time data: nothing is read, its loss and weight are NaN. reduction: 0 none (loss has
 * batch * inner elements), 1 sum, 2 mean = the weighted sum over the sum of the weights (1 each when
 * `weight` is null). */
#define EMBER_NLL_LOSS(NAME, T, IndexT, NAN_T)                                                      \
    static void NAME(T *EMBER_RESTRICT loss, const T *x, const IndexT *target, const T *weight,     \
                     size_t batch, size_t classes, size_t inner, int has_ignore, int64_t ignore_index, \
                     int reduction) {                                                               \
        T sum = 0, wsum = 0;                                                                        \
        size_t b, d;                                                                                \
        for (b = 0; b < batch; ++b) {                                                               \
            for (d = 0; d < inner; ++d) {                                                           \
                const int64_t t = (int64_t)target[b * inner + d];                                   \
                T l, w;                                                                             \
                if (has_ignore && t == ignore_index) {                                              \
                    l = 0;                                                                          \
                    w = 0;                                                                          \
                } else if (t < 0 || (uint64_t)t >= (uint64_t)classes) {                             \
                    l = NAN_T;                                                                      \
                    w = NAN_T;                                                                      \
                } else {                                                                            \
                    w = weight ? weight[t] : (T)1;                                                  \
                    l = -x[(b * classes + (size_t)t) * inner + d] * w;                              \
                }                                                                                   \
                if (reduction == 0) loss[b * inner + d] = l;                                        \
                sum += l;                                                                           \
                wsum += w;                                                                          \
            }                                                                                       \
        }                                                                                           \
        if (reduction == 1) loss[0] = sum;                                                          \
        if (reduction == 2) loss[0] = sum / wsum;                                                   \
    }
/*@end*/

/*@kernel ember_nll_loss_f32_i32 requires ember_nll_loss_impl*/
EMBER_NLL_LOSS(ember_nll_loss_f32_i32, float, int32_t, __builtin_nanf(""))
/*@end*/

/*@kernel ember_nll_loss_f32_i64 requires ember_nll_loss_impl*/
EMBER_NLL_LOSS(ember_nll_loss_f32_i64, float, int64_t, __builtin_nanf(""))
/*@end*/

/*@kernel ember_nll_loss_f64_i32 requires ember_nll_loss_impl*/
EMBER_NLL_LOSS(ember_nll_loss_f64_i32, double, int32_t, __builtin_nan(""))
/*@end*/

/*@kernel ember_nll_loss_f64_i64 requires ember_nll_loss_impl*/
EMBER_NLL_LOSS(ember_nll_loss_f64_i64, double, int64_t, __builtin_nan(""))
/*@end*/

/*@kernel ember_log_softmax_f32 requires ember_softmax_f32*/
/* LogSoftmax along the class axis of [batch, classes, inner] scores (SoftmaxCrossEntropyLoss). */
static void ember_log_softmax_f32(float *out, const float *in, size_t batch, size_t classes, size_t inner) {
    ember_softmax_f32(out, in, (ptrdiff_t)batch, (ptrdiff_t)classes, (ptrdiff_t)inner, 1);
}
/*@end*/

/*@kernel ember_log_softmax_f64 requires ember_expf ember_logf*/
/* The float64 LogSoftmax: the shift by the row maximum and the sums in double, exp and log through
 * ember's float math (the library has no double-precision versions). A row of -inf shifts by 0. */
static void ember_log_softmax_f64(double *out, const double *in, size_t batch, size_t classes, size_t inner) {
    size_t b, i, j;
    for (b = 0; b < batch; ++b) {
        for (i = 0; i < inner; ++i) {
            const double *x = in + b * classes * inner + i;
            double *y = out + b * classes * inner + i;
            double m = x[0], s = 0.0, ls;
            for (j = 1; j < classes; ++j)
                if (x[j * inner] > m || x[j * inner] != x[j * inner]) m = x[j * inner];
            if (m == -__builtin_inf()) m = 0.0;
            for (j = 0; j < classes; ++j) s += (double)ember_expf((float)(x[j * inner] - m));
            ls = m + (double)ember_logf((float)s);
            for (j = 0; j < classes; ++j) y[j * inner] = x[j * inner] - ls;
        }
    }
}
/*@end*/
