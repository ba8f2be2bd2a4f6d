/* Linear algebra on small matrices: determinants (Det). */

/*@kernel ember_det_impl requires ember_prelude*/
/* y[b] = det of the b-th n x n matrix of x, by Gaussian elimination with partial pivoting on a copy in
 * `work` (n * n elements). A zero pivot column gives 0; each row swap flips the sign. */
#define EMBER_DET(NAME, T)                                                                          \
    static void NAME(T *y, const T *x, ptrdiff_t batch, int n, T *work) {                          \
        ptrdiff_t b;                                                                                \
        int i, j, r;                                                                                \
        for (b = 0; b < batch; ++b) {                                                               \
            const T *m = x + b * n * n;                                                             \
            T det = 1;                                                                              \
            for (i = 0; i < n * n; ++i) work[i] = m[i];                                             \
            for (i = 0; i < n && det != 0; ++i) {                                                   \
                int p = i;                                                                          \
                T best = work[i * n + i] < 0 ? -work[i * n + i] : work[i * n + i];                  \
                for (r = i + 1; r < n; ++r) {                                                       \
                    const T v = work[r * n + i] < 0 ? -work[r * n + i] : work[r * n + i];           \
                    if (v > best) {                                                                 \
                        best = v;                                                                   \
                        p = r;                                                                      \
                    }                                                                               \
                }                                                                                   \
                if (best == 0) {                                                                    \
                    det = 0;                                                                        \
                    break;                                                                          \
                }                                                                                   \
                if (p != i) {                                                                       \
                    for (j = 0; j < n; ++j) {                                                       \
                        const T t = work[i * n + j];                                                \
                        work[i * n + j] = work[p * n + j];                                          \
                        work[p * n + j] = t;                                                        \
                    }                                                                               \
                    det = -det;                                                                     \
                }                                                                                   \
                det *= work[i * n + i];                                                             \
                for (r = i + 1; r < n; ++r) {                                                       \
                    const T f = work[r * n + i] / work[i * n + i];                                  \
                    for (j = i + 1; j < n; ++j) work[r * n + j] -= f * work[i * n + j];             \
                }                                                                               \
            }                                                                                       \
            y[b] = det;                                                                             \
        }                                                                                           \
    }
/*@end*/

/*@kernel ember_det_f32 requires ember_det_impl*/
EMBER_DET(ember_det_f32, float)
/*@end*/

/*@kernel ember_det_f64 requires ember_det_impl*/
EMBER_DET(ember_det_f64, double)
/*@end*/
