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

/*@kernel ember_resize_tfl_tpl requires ember_prelude*/
/* TFLite's integer RESIZE_BILINEAR (ResizeBilinearInteger, int8 and int16 alike): x viewed as
 * [outer, in_h, in_w, inner] -> y [outer, out_h, out_w, inner]. Output row j reads input rows
 * rows[3j], rows[3j+1] with weights 1024 - rows[3j+2] and rows[3j+2] (1/1024 units, computed at compile
 * time as TFLite does; the second may be negative at a half-pixel border, where both rows are row 0), the
 * same for columns; the 2^-20 sum of the stored integers rounds half away from zero. */
#define EMBER_RESIZE_TFL(SUFFIX, T)                                                                  \
    static void ember_resize_tfl_##SUFFIX(T *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, int32_t outer, \
                                          int32_t in_h, int32_t in_w, int32_t out_h, int32_t out_w,      \
                                          int32_t inner, const int32_t *rows, const int32_t *cols) {     \
        int32_t o, j, i, e;                                                                          \
        for (o = 0; o < outer; ++o)                                                                  \
            for (j = 0; j < out_h; ++j) {                                                            \
                const T *r0 = x + ((ptrdiff_t)o * in_h + rows[3 * j]) * in_w * inner;                 \
                const T *r1 = x + ((ptrdiff_t)o * in_h + rows[3 * j + 1]) * in_w * inner;             \
                const int64_t dy = rows[3 * j + 2];                                                  \
                T *yr = y + ((ptrdiff_t)o * out_h + j) * out_w * inner;                              \
                for (i = 0; i < out_w; ++i) {                                                        \
                    const ptrdiff_t c0 = (ptrdiff_t)cols[3 * i] * inner;                             \
                    const ptrdiff_t c1 = (ptrdiff_t)cols[3 * i + 1] * inner;                         \
                    const int64_t dx = cols[3 * i + 2];                                              \
                    for (e = 0; e < inner; ++e) {                                                    \
                        const int64_t s = (int64_t)r0[c0 + e] * (1024 - dy) * (1024 - dx) +          \
                                          (int64_t)r1[c0 + e] * dy * (1024 - dx) +                   \
                                          (int64_t)r0[c1 + e] * (1024 - dy) * dx +                   \
                                          (int64_t)r1[c1 + e] * dy * dx;                             \
                        yr[(ptrdiff_t)i * inner + e] =                                               \
                            (T)((s + (s > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20));                 \
                    }                                                                                \
                }                                                                                    \
            }                                                                                        \
    }
/*@end*/

/*@kernel ember_resize_tfl_s8 requires ember_resize_tfl_tpl*/
EMBER_RESIZE_TFL(s8, int8_t)
/*@end*/

/*@kernel ember_resize_tfl_s16 requires ember_resize_tfl_tpl*/
EMBER_RESIZE_TFL(s16, int16_t)
/*@end*/
