/* Data movement: dtype-agnostic copies described by dims and byte strides.
 * An "element" is `units` contiguous units of `unit` bytes (unit 1, 2, 4 or 8); the lowering picks
 * the widest unit that divides every offset and stride, so typed accesses are always aligned. */

/*@kernel ember_move_units requires ember_prelude*/
#define EMBER_MAX_RANK 8
#if EMBER_GNUC
/* may_alias: these units copy bytes that were written as float/int types; without it the compiler
 * may reorder the copy across those stores (strict aliasing) once everything is inlined. */
typedef uint64_t __attribute__((__may_alias__)) ember_unit64;
typedef uint32_t __attribute__((__may_alias__)) ember_unit32;
typedef uint16_t __attribute__((__may_alias__)) ember_unit16;
#define EMBER_WIDE_UNITS 1
#endif
/* Copy `units` units of `unit` bytes (pointers aligned to `unit`). */
EMBER_INLINE void ember_move_units(uint8_t *d, const uint8_t *s, int32_t unit, int32_t units) {
    int32_t i;
    switch (unit) {
#ifdef EMBER_WIDE_UNITS
    case 8: for (i = 0; i < units; ++i) ((ember_unit64 *)(void *)d)[i] = ((const ember_unit64 *)(const void *)s)[i]; break;
    case 4: for (i = 0; i < units; ++i) ((ember_unit32 *)(void *)d)[i] = ((const ember_unit32 *)(const void *)s)[i]; break;
    case 2: for (i = 0; i < units; ++i) ((ember_unit16 *)(void *)d)[i] = ((const ember_unit16 *)(const void *)s)[i]; break;
#endif
    default: for (i = 0; i < units * unit; ++i) d[i] = s[i]; break;
    }
}
/*@end*/

/*@kernel ember_strided_copy requires ember_move_units*/
/* dst[i0..ir] = src[i0..ir] at byte offsets sum(ik * dstr[k]) and sum(ik * sstr[k]) (strides may be
 * negative or zero: slices with negative steps, broadcasts). rank <= EMBER_MAX_RANK. */
static void ember_strided_copy(void *dst, const void *src, int rank, const int32_t *dims,
                               const int32_t *dstr, const int32_t *sstr, int32_t unit, int32_t units) {
    int32_t idx[EMBER_MAX_RANK];
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    int r, last = rank - 1;
    int32_t i, n;
    if (rank <= 0) {
        ember_move_units(d, s, unit, units);
        return;
    }
    for (r = 0; r < rank; ++r) idx[r] = 0;
    n = dims[last];
    for (;;) {
        for (i = 0; i < n; ++i)
            ember_move_units(d + (ptrdiff_t)i * dstr[last], s + (ptrdiff_t)i * sstr[last], unit, units);
        for (r = last - 1; r >= 0; --r) {
            if (++idx[r] < dims[r]) {
                d += dstr[r];
                s += sstr[r];
                break;
            }
            d -= (ptrdiff_t)(dims[r] - 1) * dstr[r];
            s -= (ptrdiff_t)(dims[r] - 1) * sstr[r];
            idx[r] = 0;
        }
        if (r < 0) return;
    }
}
/*@end*/

/*@kernel ember_index_copy requires ember_move_units*/
/* Contiguous dst[i0..ir] = src at byte offset sum(offs[base_k + ik]): one offset table per dim,
 * concatenated (pad reflect/edge/wrap, nearest resize). */
static void ember_index_copy(void *dst, const void *src, int rank, const int32_t *dims,
                             const int32_t *offs, int32_t unit, int32_t units) {
    int32_t idx[EMBER_MAX_RANK], base[EMBER_MAX_RANK];
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    ptrdiff_t step = (ptrdiff_t)unit * units, outer;
    int r, last = rank - 1;
    int32_t i;
    if (rank <= 0) {
        ember_move_units(d, s, unit, units);
        return;
    }
    base[0] = 0;
    for (r = 0; r < rank; ++r) {
        idx[r] = 0;
        if (r > 0) base[r] = base[r - 1] + dims[r - 1];
    }
    for (;;) {
        outer = 0;
        for (r = 0; r < last; ++r) outer += offs[base[r] + idx[r]];
        for (i = 0; i < dims[last]; ++i, d += step)
            ember_move_units(d, s + outer + offs[base[last] + i], unit, units);
        for (r = last - 1; r >= 0; --r) {
            if (++idx[r] < dims[r]) break;
            idx[r] = 0;
        }
        if (r < 0) return;
    }
}
/*@end*/

/*@kernel ember_fill requires ember_move_units*/
/* n copies of one `unit`-byte value (constant padding, dropout masks). */
static void ember_fill(void *dst, const void *value, int32_t unit, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    size_t i;
    for (i = 0; i < n; ++i, d += unit) ember_move_units(d, (const uint8_t *)value, unit, 1);
}
/*@end*/

/*@kernel ember_gather_impl requires ember_copy*/
/* Gather along one axis with run-time indices: negative ones count from the end, and out-of-range
 * ones are clamped so a bad index never reads outside the tensor. One body for both index types. */
#define EMBER_GATHER_BODY(IndexT)                                                                   \
    uint8_t *d = (uint8_t *)dst;                                                                    \
    const uint8_t *s = (const uint8_t *)src;                                                        \
    int32_t o, j;                                                                                   \
    for (o = 0; o < outer; ++o) {                                                                   \
        for (j = 0; j < n_idx; ++j, d += inner) {                                                   \
            int64_t v = (int64_t)((const IndexT *)ix)[j];                                           \
            if (v < 0) v += axis_n;                                                                 \
            if (v < 0) v = 0;                                                                       \
            if (v >= axis_n) v = axis_n - 1;                                                        \
            ember_copy(d, s + ((size_t)o * (size_t)axis_n + (size_t)v) * inner, inner);             \
        }                                                                                           \
    }
/*@end*/

/*@kernel ember_gather_i64 requires ember_gather_impl*/
static void ember_gather_i64(void *dst, const void *src, const int64_t *ix, int32_t outer, int32_t axis_n,
                             int32_t n_idx, size_t inner) {
    EMBER_GATHER_BODY(int64_t)
}
/*@end*/

/*@kernel ember_gather_i32 requires ember_gather_impl*/
static void ember_gather_i32(void *dst, const void *src, const int32_t *ix, int32_t outer, int32_t axis_n,
                             int32_t n_idx, size_t inner) {
    EMBER_GATHER_BODY(int32_t)
}
/*@end*/

/*@kernel ember_trilu requires ember_copy*/
/* Keep the upper (j - i >= k) or lower (j - i <= k) triangle of each rows x cols matrix, zero the rest
 * (all-zero bytes are zero in every element type). */
static void ember_trilu(void *dst, const void *src, int32_t batch, int32_t rows, int32_t cols, int32_t k,
                        int upper, size_t elem) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    size_t row = (size_t)cols * elem, z;
    int32_t b, i, lo, hi;
    for (b = 0; b < batch; ++b) {
        for (i = 0; i < rows; ++i, d += row, s += row) {
            /* kept columns are [lo, hi) */
            lo = upper ? i + k : 0;
            hi = upper ? cols : i + k + 1;
            if (lo < 0) lo = 0;
            if (hi > cols) hi = cols;
            if (hi < lo) hi = lo;
            for (z = 0; z < (size_t)lo * elem; ++z) d[z] = 0;
            ember_copy(d + (size_t)lo * elem, s + (size_t)lo * elem, (size_t)(hi - lo) * elem);
            for (z = (size_t)hi * elem; z < row; ++z) d[z] = 0;
        }
    }
}
/*@end*/
