/* Softmax and LogSoftmax along one axis: `n` elements at stride `inner`, for outer*inner rows.
 * Numerically stable: the row maximum is subtracted before exponentiating, so large inputs do not
 * overflow. Each row is read completely before it is written, so out may equal in. */

/*@kernel ember_softmax_f32 requires ember_expf ember_logf*/
static void ember_softmax_f32(float *out, const float *in, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                              int log_softmax) {
    ptrdiff_t o, i, j;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const float *x = in + o * n * inner + i;
            float *y = out + o * n * inner + i;
            float m = x[0], s = 0.0f;
            for (j = 1; j < n; ++j) {
                if (x[j * inner] > m || x[j * inner] != x[j * inner]) m = x[j * inner];
            }
            /* A row of -inf would give (-inf) - (-inf) = NaN: shift by 0 instead. */
            if (m == -__builtin_inff()) m = 0.0f;
            if (log_softmax) {
                float ls;
                for (j = 0; j < n; ++j) s += ember_expf(x[j * inner] - m);
                ls = m + ember_logf(s);
                for (j = 0; j < n; ++j) y[j * inner] = x[j * inner] - ls;
            } else {
                float r;
                /* Exponentials first (a loop that vectorizes), then the sum in order. */
                for (j = 0; j < n; ++j) y[j * inner] = ember_expf(x[j * inner] - m);
                for (j = 0; j < n; ++j) s += y[j * inner];
                r = 1.0f / s;
                for (j = 0; j < n; ++j) y[j * inner] *= r;
            }
        }
    }
}
/*@end*/
