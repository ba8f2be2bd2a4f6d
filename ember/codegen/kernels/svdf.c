/* TFLite's full-integer SVDF step (ember/ops/svdf.py): int8 input and feature weights, int16 or int8 time
 * weights and state, int32 bias, int8 output; bit-exact with TFLite's reference kernel and TFLite Micro's. */

/*@kernel ember_svdf_int requires ember_prelude*/
/* TFLite's MultiplyByQuantizedMultiplier: x x m x 2^shift / 2^31 as a rounding doubling high multiply
 * followed by a rounding right shift (two roundings, as its reference kernels compute it). */
static int32_t ember_svdf_requant(int32_t x, int32_t m, int shift) {
    int32_t a = (int32_t)((uint32_t)x << (shift > 0 ? shift : 0)); /* TFLite's x * (1 << left shift) */
    int right = shift > 0 ? 0 : -shift;
    int32_t high, mask, rem, threshold;
    if (a == INT32_MIN && m == INT32_MIN) {
        high = INT32_MAX;
    } else {
        int64_t ab = (int64_t)a * (int64_t)m;
        int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
        high = (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C division truncates toward zero, as TFLite's */
    }
    mask = (int32_t)(((int64_t)1 << right) - 1);
    rem = high & mask;
    threshold = (mask >> 1) + (high < 0 ? 1 : 0);
    return (high >> right) + (rem > threshold ? 1 : 0);
}

static int32_t ember_svdf_ld(const void *p, size_t i, int wide) {
    return wide ? ((const int16_t *)p)[i] : ((const int8_t *)p)[i];
}

/* One step for each of `batch` rows. Each filter's state row shifts left and takes this step's feature
 * (x - in_zp) . wf[f], rescaled to the state's scale and clamped to its type (written to `next` unless it
 * is 0: a bundle that does not return the state); each unit's output is its bias plus its `rank` filters'
 * shifted rows dotted with their time weights, rescaled to the output and clamped to int8. The filters of a
 * unit are consecutive, so every filter is finished before the next starts and no scratch is needed.
 * `wide`: the state is int16 (else int8); `wt_wide`: the time weights are. The sums wrap as TFLite's int32
 * sums do on two's-complement machines, but in unsigned arithmetic, so that a hostile model is no UB. */
static void ember_svdf_int(const int8_t *x, const int8_t *wf, const void *wt, const int32_t *bias,
                           const void *state, void *next, int8_t *y, int batch, int n_in, int n_filter,
                           int n_mem, int rank, int wide, int wt_wide, int32_t in_zp, int32_t state_zp,
                           int32_t m1, int s1, int32_t m2, int s2, int32_t out_zp) {
    const int32_t lo = wide ? -32768 : -128, hi = wide ? 32767 : 127;
    const int n_unit = n_filter / rank;
    int b, u, r, j, c;
    for (b = 0; b < batch; ++b) {
        const int8_t *xb = x + (size_t)b * (size_t)n_in;
        for (u = 0; u < n_unit; ++u) {
            uint32_t acc = bias ? (uint32_t)bias[u] : 0u;
            int64_t out;
            for (r = 0; r < rank; ++r) {
                const int f = u * rank + r;
                const size_t row = ((size_t)b * (size_t)n_filter + (size_t)f) * (size_t)n_mem;
                const size_t wrow = (size_t)f * (size_t)n_mem;
                uint32_t feat = 0u;
                int64_t v;
                for (j = 0; j + 1 < n_mem; ++j) {
                    const int32_t s = ember_svdf_ld(state, row + (size_t)j + 1, wide);
                    acc += (uint32_t)((int64_t)ember_svdf_ld(wt, wrow + (size_t)j, wt_wide) * ((int64_t)s - state_zp));
                    if (next && wide) ((int16_t *)next)[row + (size_t)j] = (int16_t)s;
                    else if (next) ((int8_t *)next)[row + (size_t)j] = (int8_t)s;
                }
                for (c = 0; c < n_in; ++c) {
                    feat += (uint32_t)((int64_t)wf[(size_t)f * (size_t)n_in + (size_t)c] * ((int64_t)xb[c] - in_zp));
                }
                v = (int64_t)state_zp + ember_svdf_requant((int32_t)feat, m1, s1);
                v = v < lo ? lo : (v > hi ? hi : v);
                acc += (uint32_t)((int64_t)ember_svdf_ld(wt, wrow + (size_t)n_mem - 1, wt_wide) * (v - state_zp));
                if (next && wide) ((int16_t *)next)[row + (size_t)n_mem - 1] = (int16_t)v;
                else if (next) ((int8_t *)next)[row + (size_t)n_mem - 1] = (int8_t)v;
            }
            out = (int64_t)ember_svdf_requant((int32_t)acc, m2, s2) + out_zp;
            y[(size_t)b * (size_t)n_unit + (size_t)u] = (int8_t)(out < -128 ? -128 : (out > 127 ? 127 : out));
        }
    }
}
/*@end*/
