/* Scans: running sums and products along one axis (CumSum, CumProd). */

/*@kernel ember_scan_impl requires ember_prelude*/
/* y = the running combination (OP: sum or product, starting from INIT) of x along an axis of n elements at
 * stride `inner`, outer * inner times over; `exclusive` leaves each element out of its own result,
 * `reverse` runs from the end. Integers accumulate in unsigned AccT, so an overflow wraps instead of being
 * undefined; half precision is LOADed to float and STOREd back, and its product ROUNDs to half after every
 * step (EMBER_SCAN_MUL_HALF), as a product of halves is rounded (numpy, onnxruntime). */
#define EMBER_SCAN(NAME, T, AccT, INIT, OP, LOAD, STORE)                                            \
    static void NAME(T *EMBER_RESTRICT y, const T *EMBER_RESTRICT x, size_t outer, size_t n,         \
                     size_t inner, int exclusive, int reverse) {                                    \
        for (size_t o = 0; o < outer; ++o) {                                                        \
            for (size_t i = 0; i < inner; ++i) {                                                    \
                AccT acc = INIT;                                                                    \
                for (size_t j = 0; j < n; ++j) {                                                    \
                    const size_t at = (o * n + (reverse ? n - 1 - j : j)) * inner + i;             \
                    const AccT v = (AccT)LOAD(x[at]);                                               \
                    if (exclusive) {                                                                \
                        y[at] = STORE(acc);                                                         \
                        acc = OP(acc, v);                                                           \
                    } else {                                                                        \
                        acc = OP(acc, v);                                                           \
                        y[at] = STORE(acc);                                                         \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }
#define EMBER_SCAN_SAME(x) (x)
#define EMBER_SCAN_ADD(a, b) ((a) + (b))
#define EMBER_SCAN_MUL(a, b) ((a) * (b))
/*@end*/

/*@kernel ember_cumsum_f32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_f32, float, float, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumsum_f64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_f64, double, double, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumsum_s32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_s32, int32_t, uint32_t, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, (int32_t))
/*@end*/

/*@kernel ember_cumsum_s64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_s64, int64_t, uint64_t, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, (int64_t))
/*@end*/

/*@kernel ember_cumsum_u32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_u32, uint32_t, uint32_t, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumsum_u64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumsum_u64, uint64_t, uint64_t, 0, EMBER_SCAN_ADD, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_f32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_f32, float, float, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_f64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_f64, double, double, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_f16 requires ember_scan_impl ember_f16*/
#define EMBER_SCAN_MUL_HALF(a, b) ember_f16_to_f32(ember_f32_to_f16((a) * (b)))
EMBER_SCAN(ember_cumprod_f16, uint16_t, float, 1, EMBER_SCAN_MUL_HALF, ember_f16_to_f32, ember_f32_to_f16)
/*@end*/

/*@kernel ember_cumprod_s32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_s32, int32_t, uint32_t, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, (int32_t))
/*@end*/

/*@kernel ember_cumprod_s64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_s64, int64_t, uint64_t, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, (int64_t))
/*@end*/

/*@kernel ember_cumprod_u32 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_u32, uint32_t, uint32_t, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/

/*@kernel ember_cumprod_u64 requires ember_scan_impl*/
EMBER_SCAN(ember_cumprod_u64, uint64_t, uint64_t, 1, EMBER_SCAN_MUL, EMBER_SCAN_SAME, EMBER_SCAN_SAME)
/*@end*/
