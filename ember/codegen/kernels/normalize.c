/* LpNormalization and MeanVarianceNormalization helpers (float32 and float64). */

/*@kernel ember_sqrt_f64 requires ember_sqrtf*/
/* Square root in double: the float root refined by one Newton step (double precision to ~1 ulp for the
 * values float can hold; the double FPU, not libm, so float64 ops stay freestanding). */
static inline double ember_sqrt_f64(double x) {
    double s;
    if (!(x > 0.0) || x == __builtin_inf()) return x == 0.0 || x == __builtin_inf() ? x : __builtin_nan("");
    s = (double)ember_sqrtf((float)x);
    if (!(s > 0.0) || s == (double)__builtin_inff()) return s; /* outside float's range: keep float's answer */
    return 0.5 * (s + x / s);
}
/*@end*/

/*@kernel ember_lpnorm_impl requires ember_prelude*/
/* y = x / ||x||_p along an axis of n elements at stride `inner` (p = 1: sum of |x|, p = 2: Euclidean);
 * a zero norm gives 0, not 0/0. */
#define EMBER_LPNORM(NAME, T, SQRT)                                                                  \
    static void NAME(T *y, const T *x, ptrdiff_t outer, ptrdiff_t n, ptrdiff_t inner, int p) {       \
        ptrdiff_t o, i, j;                                                                           \
        for (o = 0; o < outer; ++o)                                                                  \
            for (i = 0; i < inner; ++i) {                                                            \
                const T *xs = x + o * n * inner + i;                                                 \
                T *ys = y + o * n * inner + i;                                                       \
                T s = 0;                                                                             \
                for (j = 0; j < n; ++j) {                                                            \
                    const T v = xs[j * inner];                                                       \
                    s += p == 1 ? (v < 0 ? -v : v) : v * v;                                          \
                }                                                                                    \
                if (p == 2) s = SQRT(s);                                                             \
                for (j = 0; j < n; ++j) ys[j * inner] = s == 0 ? (T)0 : xs[j * inner] / s;            \
            }                                                                                        \
    }
/*@end*/

/*@kernel ember_lpnorm_f32 requires ember_lpnorm_impl ember_sqrtf*/
EMBER_LPNORM(ember_lpnorm_f32, float, ember_sqrtf)
/*@end*/

/*@kernel ember_lpnorm_f64 requires ember_lpnorm_impl ember_sqrt_f64*/
EMBER_LPNORM(ember_lpnorm_f64, double, ember_sqrt_f64)
/*@end*/
