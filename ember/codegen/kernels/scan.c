/* Scans: running sums and products along one axis (CumSum, CumProd). */

/*@kernel ember_cumsum_impl requires ember_prelude*/
/* y = the running sums of x along an axis of n elements at stride `inner`, outer * inner times over;
 * `exclusive` leaves each element out of its own sum, `reverse` sums from the end. The sum is kept in
 * AccT: unsigned for the integer types, so that an overflow wraps instead of being undefined. */
#define EMBER_CUMSUM(NAME, T, AccT)                                                                 \
    static void NAME(T *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, size_t outer, size_t n,         \
                     size_t inner, int exclusive, int reverse) {                                    \
        for (size_t o = 0; o < outer; ++o) {                                                        \
            for (size_t i = 0; i < inner; ++i) {                                                    \
                AccT acc = 0;                                                                       \
                for (size_t j = 0; j < n; ++j) {                                                    \
                    const size_t at = (o * n + (reverse ? n - 1 - j : j)) * inner + i;             \
                    const AccT v = (AccT)x[at];                                                     \
                    if (exclusive) {                                                                \
                        y[at] = (T)acc;                                                             \
                        acc += v;                                                                   \
                    } else {                                                                        \
                        acc += v;                                                                   \
                        y[at] = (T)acc;                                                             \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }
/*@end*/

/*@kernel ember_cumsum_f32 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_f32, float, float)
/*@end*/

/*@kernel ember_cumsum_f64 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_f64, double, double)
/*@end*/

/*@kernel ember_cumsum_s32 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_s32, int32_t, uint32_t)
/*@end*/

/*@kernel ember_cumsum_s64 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_s64, int64_t, uint64_t)
/*@end*/

/*@kernel ember_cumsum_u32 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_u32, uint32_t, uint32_t)
/*@end*/

/*@kernel ember_cumsum_u64 requires ember_cumsum_impl*/
EMBER_CUMSUM(ember_cumsum_u64, uint64_t, uint64_t)
/*@end*/

/*@kernel ember_cumprod_impl requires ember_prelude*/
/* y = the running products of x along an axis, laid out as for EMBER_CUMSUM (exclusive: each element
 * left out of its own product, reverse: from the end). Integers multiply in unsigned AccT (overflow
 * wraps); half precision multiplies in float and ROUNDs the product to half after every step, as a
 * product of halves is rounded (numpy, onnxruntime). */
#define EMBER_CUMPROD(NAME, T, AccT, LOAD, ROUND, STORE)                                           \
    static void NAME(T *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, size_t outer, size_t n,         \
                     size_t inner, int exclusive, int reverse) {                                    \
        for (size_t o = 0; o < outer; ++o) {                                                        \
            for (size_t i = 0; i < inner; ++i) {                                                    \
                AccT acc = 1;                                                                       \
                for (size_t j = 0; j < n; ++j) {                                                    \
                    const size_t at = (o * n + (reverse ? n - 1 - j : j)) * inner + i;             \
                    const AccT v = (AccT)LOAD(x[at]);                                               \
                    if (exclusive) {                                                                \
                        y[at] = STORE(acc);                                                         \
                        acc = ROUND(acc * v);                                                       \
                    } else {                                                                        \
                        acc = ROUND(acc * v);                                                       \
                        y[at] = STORE(acc);                                                         \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }
#define EMBER_SCAN_SAME(x) (x)
/*@end*/

/*@kernel ember_cumprod_f32 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_f32, float, float, EMBER_SCAN_SAME, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_f64 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_f64, double, double, EMBER_SCAN_SAME, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_f16 requires ember_cumprod_impl ember_f16*/
#define EMBER_SCAN_HALF_ROUND(x) ember_f16_to_f32(ember_f32_to_f16(x))
EMBER_CUMPROD(ember_cumprod_f16, uint16_t, float, ember_f16_to_f32, EMBER_SCAN_HALF_ROUND, ember_f32_to_f16)
/*@end*/

/*@kernel ember_cumprod_s32 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_s32, int32_t, uint32_t, EMBER_SCAN_SAME, EMBER_SCAN_SAME, (int32_t))
/*@end*/

/*@kernel ember_cumprod_s64 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_s64, int64_t, uint64_t, EMBER_SCAN_SAME, EMBER_SCAN_SAME, (int64_t))
/*@end*/

/*@kernel ember_cumprod_u32 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_u32, uint32_t, uint32_t, EMBER_SCAN_SAME, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_u64 requires ember_cumprod_impl*/
EMBER_CUMPROD(ember_cumprod_u64, uint64_t, uint64_t, EMBER_SCAN_SAME, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/
