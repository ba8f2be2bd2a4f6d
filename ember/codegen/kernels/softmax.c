/* Softmax and LogSoftmax along one axis: `n` elements at stride `inner`, for outer*inner rows.
 * Numerically stable: the row maximum is subtracted before exponentiating, so large inputs do not
 * overflow. Each row is read completely before it is written, so out may equal in. */

/*@kernel ember_softmax_f32 requires ember_expf ember_logf ember_row_sum*/
/* Maximum of n values at `stride`, NaN if any is NaN. Contiguous rows (the usual last-axis softmax)
 * keep 16 running maxima and a NaN flag, loops that vectorize; the order of a max does not matter. */
static float ember_row_max_f32(const float *x, ptrdiff_t n, ptrdiff_t stride) {
    float m = x[0];
    ptrdiff_t j;
    if (stride == 1 && n >= 16) {
        float lane[16];
        int l, nan = 0;
        for (l = 0; l < 16; ++l) lane[l] = x[l];
        const ptrdiff_t full = n - n % 16;
        for (j = 16; j < full; j += 16)
            for (l = 0; l < 16; ++l) {
                lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
                nan |= x[j + l] != x[j + l];
            }
        for (j = full; j < n; ++j) {
            lane[0] = x[j] > lane[0] ? x[j] : lane[0];
            nan |= x[j] != x[j];
        }
        for (l = 0; l < 16; ++l) {
            nan |= lane[l] != lane[l];
            m = lane[l] > m ? lane[l] : m;
        }
        return nan ? __builtin_nanf("") : m;
    }
    for (j = 1; j < n; ++j)
        if (x[j * stride] > m || x[j * stride] != x[j * stride]) m = x[j * stride];
    return m;
}

static void ember_softmax_f32(float *out, const float *in, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner,
                              int log_softmax) {
    ptrdiff_t o, i, j;
    for (o = 0; o < outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const float *x = in + o * n * inner + i;
            float *y = out + o * n * inner + i;
            float m = ember_row_max_f32(x, n, inner), s = 0.0f;
            /* A row of -inf would give (-inf) - (-inf) = NaN: shift by 0 instead. */
            if (m == -__builtin_inff()) m = 0.0f;
            if (log_softmax) {
                float ls;
                for (j = 0; j < n; ++j) s += ember_expf(x[j * inner] - m);
                ls = m + ember_logf(s);
                for (j = 0; j < n; ++j) y[j * inner] = x[j * inner] - ls;
            } else if (inner == 1) {
                float r;
                /* Exponentials first (a loop that vectorizes), then the sum, in 16 fixed lanes: the
                 * order is the code's, not the vectorizer's, so every target rounds alike. */
                for (j = 0; j < n; ++j) y[j] = ember_expf(x[j] - m);
                s = ember_row_sum_f32(y, n);
                r = 1.0f / s;
                for (j = 0; j < n; ++j) y[j] *= r;
            } else {
                float r;
                for (j = 0; j < n; ++j) y[j * inner] = ember_expf(x[j * inner] - m);
                for (j = 0; j < n; ++j) s += y[j * inner];
                r = 1.0f / s;
                for (j = 0; j < n; ++j) y[j * inner] *= r;
            }
        }
    }
}
/*@end*/
