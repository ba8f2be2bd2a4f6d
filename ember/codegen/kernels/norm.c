/* Normalizations, float32. Statistics are two-pass (mean, then mean squared deviation) for accuracy. */

/*@kernel ember_batchnorm_f32 requires ember_sqrtf*/
/* y = scale * (x - mean) / sqrt(var + eps) + bias per channel of NC(S) data. In training mode the batch
 * statistics (biased variance) are used and the running ones are written to out_mean / out_var. */
static void ember_batchnorm_f32(float *y, const float *x, const float *scale, const float *bias,
                                const float *mean, const float *var, int N, int C, ptrdiff_t S, float eps,
                                int training, float momentum, float *out_mean, float *out_var) {
    int n, c;
    ptrdiff_t s;
    for (c = 0; c < C; ++c) {
        float mu = mean[c], v = var[c], a, b;
        if (training) {
            float sum = 0.0f, sq = 0.0f, cnt = (float)N * (float)S;
            for (n = 0; n < N; ++n)
                for (s = 0; s < S; ++s) sum += x[((ptrdiff_t)n * C + c) * S + s];
            sum /= cnt;
            for (n = 0; n < N; ++n)
                for (s = 0; s < S; ++s) {
                    float d = x[((ptrdiff_t)n * C + c) * S + s] - sum;
                    sq += d * d;
                }
            sq /= cnt;
            if (out_mean) out_mean[c] = mu * momentum + sum * (1.0f - momentum);
            if (out_var) out_var[c] = v * momentum + sq * (1.0f - momentum);
            mu = sum;
            v = sq;
        }
        a = scale[c] / ember_sqrtf(v + eps);
        b = bias[c] - mu * a;
        for (n = 0; n < N; ++n) {
            const float *xc = x + ((ptrdiff_t)n * C + c) * S;
            float *yc = y + ((ptrdiff_t)n * C + c) * S;
            for (s = 0; s < S; ++s) yc[s] = xc[s] * a + b;
        }
    }
}
/*@end*/

/*@kernel ember_norm_rows_f32 requires ember_sqrtf ember_row_sum ember_row_sqdev*/
/* Normalizes `rows` rows of `len` contiguous values: y = (x - mean) * invstd * scale + bias, where
 * scale/bias are indexed per element (elem_step 1, LayerNorm) or one value per row
 * (row_step 1, elem_step 0: InstanceNorm/GroupNorm channel). Writes mean / invstd per row if non-NULL. */
static void ember_norm_rows_f32(float *y, const float *x, ptrdiff_t rows, ptrdiff_t len, float eps,
                                const float *scale, const float *bias, int bias_present,
                                ptrdiff_t row_step, ptrdiff_t row_period, ptrdiff_t elem_step,
                                float *mean_out, float *invstd_out) {
    ptrdiff_t r, i;
    for (r = 0; r < rows; ++r) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        const ptrdiff_t pofs = (r % row_period) * row_step;
        const float mu = ember_row_sum_f32(xr, len) / (float)len;
        const float var = ember_row_sqdev_f32(xr, len, mu) / (float)len;
        const float inv = 1.0f / ember_sqrtf(var + eps);
        if (mean_out) mean_out[r] = mu;
        if (invstd_out) invstd_out[r] = inv;
        if (elem_step == 1 && bias_present) /* LayerNorm: the loop vectorizes */
            for (i = 0; i < len; ++i) yr[i] = (xr[i] - mu) * inv * scale[pofs + i] + bias[pofs + i];
        else
            for (i = 0; i < len; ++i) {
                float v = (xr[i] - mu) * inv * scale[pofs + i * elem_step];
                yr[i] = bias_present ? v + bias[pofs + i * elem_step] : v;
            }
    }
}
/*@end*/

/*@kernel ember_skip_norm_rows_f32 requires ember_sqrtf ember_row_sum ember_row_sqdev*/
/* Skip LayerNorm: s = x + skip (+ add_bias per element), then y = (s - mean) * invstd * scale (+ bias) over
 * rows of `len` values. s goes to `sum` when another consumer needs it, else it is staged in y's own row
 * (normalized there in place), so the sum costs no buffer and no extra pass over memory. */
static void ember_skip_norm_rows_f32(float *y, float *sum, const float *x, const float *skip,
                                     const float *add_bias, ptrdiff_t rows, ptrdiff_t len, float eps,
                                     const float *scale, const float *bias, float *mean_out, float *invstd_out) {
    ptrdiff_t r, i;
    for (r = 0; r < rows; ++r) {
        const float *xr = x + r * len, *kr = skip + r * len;
        float *yr = y + r * len;
        float *sr = sum ? sum + r * len : yr;
        float mu, var, inv;
        if (add_bias)
            for (i = 0; i < len; ++i) sr[i] = xr[i] + kr[i] + add_bias[i];
        else
            for (i = 0; i < len; ++i) sr[i] = xr[i] + kr[i];
        mu = ember_row_sum_f32(sr, len) / (float)len;
        var = ember_row_sqdev_f32(sr, len, mu) / (float)len;
        inv = 1.0f / ember_sqrtf(var + eps);
        if (mean_out) mean_out[r] = mu;
        if (invstd_out) invstd_out[r] = inv;
        if (bias)
            for (i = 0; i < len; ++i) yr[i] = (sr[i] - mu) * inv * scale[i] + bias[i];
        else
            for (i = 0; i < len; ++i) yr[i] = (sr[i] - mu) * inv * scale[i];
    }
}
/*@end*/

/*@kernel ember_groupnorm_f32 requires ember_sqrtf*/
/* GroupNorm: statistics over each group of C/G channels x S values, then the per-channel affine
 * (scale/bias indexed per channel, or per group when per_group is set: opset 18's form). */
static void ember_groupnorm_f32(float *y, const float *x, const float *scale, const float *bias,
                                int N, int C, ptrdiff_t S, int G, float eps, int per_group) {
    const int Cg = C / G;
    const ptrdiff_t len = (ptrdiff_t)Cg * S;
    int n, g, c;
    ptrdiff_t i;
    for (n = 0; n < N; ++n)
        for (g = 0; g < G; ++g) {
            const float *xg = x + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * S;
            float *yg = y + ((ptrdiff_t)n * C + (ptrdiff_t)g * Cg) * S;
            float mu = 0.0f, var = 0.0f, inv;
            for (i = 0; i < len; ++i) mu += xg[i];
            mu /= (float)len;
            for (i = 0; i < len; ++i) {
                float d = xg[i] - mu;
                var += d * d;
            }
            var /= (float)len;
            inv = 1.0f / ember_sqrtf(var + eps);
            for (c = 0; c < Cg; ++c) {
                int ch = per_group ? g : g * Cg + c;
                float a = scale[ch] * inv, b = bias[ch] - mu * a;
                for (i = 0; i < S; ++i) yg[(ptrdiff_t)c * S + i] = xg[(ptrdiff_t)c * S + i] * a + b;
            }
        }
}
/*@end*/
