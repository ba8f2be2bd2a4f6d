/* Resize: separable, one axis at a time. Interpolation weights are computed at compile time
 * (coordinate transformation, nearest rounding, cubic/antialias filters, exclude_outside) and
 * passed as a tap table, so the kernel is the same for every mode. */

/*@kernel ember_resize_axis_f32 requires ember_prelude*/
/* x viewed as [outer, in_n, inner] -> y [outer, out_n, inner]:
 * y[o, j, :] = bias[j] + sum_t w[j*taps + t] * x[o, idx[j*taps + t], :]
 * (bias carries tf_crop_and_resize's extrapolation value for rows outside the crop). */
static void ember_resize_axis_f32(float *EMBER_RESTRICT y, const float *EMBER_RESTRICT x, int32_t outer,
                                  int32_t in_n, int32_t out_n, int32_t inner, int32_t taps,
                                  const int32_t *idx, const float *w, const float *bias) {
    int32_t o, j, t, e;
    for (o = 0; o < outer; ++o) {
        const float *xo = x + (ptrdiff_t)o * in_n * inner;
        for (j = 0; j < out_n; ++j) {
            float *yr = y + ((ptrdiff_t)o * out_n + j) * inner;
            for (e = 0; e < inner; ++e) yr[e] = bias[j];
            for (t = 0; t < taps; ++t) {
                const float wt = w[j * taps + t];
                const float *xr = xo + (ptrdiff_t)idx[j * taps + t] * inner;
                if (wt == 0.0f) continue;
                for (e = 0; e < inner; ++e) yr[e] += wt * xr[e];
            }
        }
    }
}
/*@end*/
