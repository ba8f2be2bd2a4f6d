/* Indexing with run-time indices (GatherElements, GatherND, ScatterElements, ScatterND, OneHot,
 * ReverseSequence), selection along an axis (TopK, Hardmax) and the identity matrix (EyeLike).
 *
 * Indices are data: a bad one must never read or write outside a tensor. The spec leaves out-of-range
 * indices undefined; ember wraps negative ones once (i + n) as the spec says, then
 *   - gathers clamp what is still out of range to [0, n - 1] (as Gather does),
 *   - scatters skip the update (it writes nothing rather than corrupting another element),
 *   - OneHot writes no on-value (the spec's rule), ReverseSequence clamps each length to [0, time].
 * Gathers and scatters work in two steps: an offsets kernel turns the index tensor into one element
 * offset per update (int32, -1 for a skipped one) in scratch memory, then a copy or a typed combine
 * kernel moves the elements. */

/*@kernel ember_element_offsets_impl requires ember_prelude*/
#define EMBER_INDEX_MAX_RANK 8
/* GatherElements / ScatterElements: offs[e] = the element offset in data of index element e, whose
 * position in the index tensor (dims, row-major) gives every coordinate except the axis, and whose
 * value gives that one. `strides` are data's element strides with 0 at the axis (axis_stride apart). */
#define EMBER_ELEMENT_OFFSETS(NAME, IndexT)                                                         \
    static void NAME(int32_t *offs, const IndexT *ix, int32_t n, int rank, const int32_t *dims,    \
                     const int32_t *strides, int32_t axis_n, int32_t axis_stride, int skip) {       \
        int32_t idx[EMBER_INDEX_MAX_RANK];                                                         \
        int32_t e, base = 0;                                                                       \
        int r;                                                                                     \
        for (r = 0; r < rank; ++r) idx[r] = 0;                                                     \
        for (e = 0; e < n; ++e) {                                                                  \
            int64_t v = (int64_t)ix[e];                                                            \
            if (v < 0) v += axis_n;                                                                \
            if (v < 0 || v >= axis_n) {                                                            \
                if (skip) v = -1;                                                                  \
                else v = v < 0 ? 0 : axis_n - 1;                                                   \
            }                                                                                      \
            offs[e] = v < 0 ? -1 : base + (int32_t)v * axis_stride;                                \
            for (r = rank - 1; r >= 0; --r) {                                                      \
                if (++idx[r] < dims[r]) {                                                          \
                    base += strides[r];                                                            \
                    break;                                                                         \
                }                                                                                  \
                base -= (dims[r] - 1) * strides[r];                                                \
                idx[r] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
/*@end*/

/*@kernel ember_element_offsets_i32 requires ember_element_offsets_impl*/
EMBER_ELEMENT_OFFSETS(ember_element_offsets_i32, int32_t)
/*@end*/

/*@kernel ember_element_offsets_i64 requires ember_element_offsets_impl*/
EMBER_ELEMENT_OFFSETS(ember_element_offsets_i64, int64_t)
/*@end*/

/*@kernel ember_nd_offsets requires ember_prelude*/
/* GatherND / ScatterND: for each of batch * per_batch index tuples of k int64 coordinates, the element
 * offset in data of the slice they name: b * batch_stride + sum(coord_j * strides[j]), each coordinate
 * checked against dims[j]. */
static void ember_nd_offsets(int32_t *offs, const int64_t *ix, int32_t batch, int32_t per_batch, int32_t k,
                             const int32_t *dims, const int32_t *strides, int32_t batch_stride, int skip) {
    int32_t b, t, j;
    for (b = 0; b < batch; ++b) {
        for (t = 0; t < per_batch; ++t, ix += k) {
            int32_t off = b * batch_stride;
            for (j = 0; j < k && off >= 0; ++j) {
                int64_t v = ix[j];
                if (v < 0) v += dims[j];
                if (v < 0 || v >= dims[j]) {
                    if (skip) {
                        off = -1;
                        break;
                    }
                    v = v < 0 ? 0 : dims[j] - 1;
                }
                off += (int32_t)v * strides[j];
            }
            *offs++ = off;
        }
    }
}
/*@end*/

/*@kernel ember_take requires ember_copy*/
/* Gathers: n slices of `slice` elements of `elem` bytes, slice e from data's element offset offs[e]. */
static void ember_take(void *dst, const void *src, const int32_t *offs, int32_t n, int32_t slice, size_t elem) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    const size_t bytes = (size_t)slice * elem;
    int32_t e;
    for (e = 0; e < n; ++e, d += bytes) ember_copy(d, s + (size_t)offs[e] * elem, bytes);
}
/*@end*/

/*@kernel ember_put requires ember_copy*/
/* Scatters without reduction: slice e of `upd` replaces the slice at offs[e] (skipped where -1); later
 * updates win over earlier ones at the same place. */
static void ember_put(void *dst, const void *upd, const int32_t *offs, int32_t n, int32_t slice, size_t elem) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *u = (const uint8_t *)upd;
    const size_t bytes = (size_t)slice * elem;
    int32_t e;
    for (e = 0; e < n; ++e, u += bytes)
        if (offs[e] >= 0) ember_copy(d + (size_t)offs[e] * elem, u, bytes);
}
/*@end*/

/*@kernel ember_scatter_reduce_impl requires ember_prelude*/
/* Scatters with reduction 1 add, 2 mul, 3 max, 4 min: out[offs[e] + s] = out[...] op upd[e * slice + s],
 * in CT (float for half). Integers add and multiply in UT, unsigned, so overflow wraps instead of being
 * undefined; NaN wins max and min (numpy's maximum/minimum). */
#define EMBER_SCATTER_REDUCE(NAME, T, CT, UT, LOAD, STORE, ADD, MUL, ISNAN)                           \
    static void NAME(T *out, const T *upd, const int32_t *offs, int32_t n, int32_t slice, int reduction) { \
        int32_t e, s;                                                                              \
        for (e = 0; e < n; ++e, upd += slice) {                                                    \
            T *o;                                                                                  \
            if (offs[e] < 0) continue;                                                             \
            o = out + offs[e];                                                                     \
            for (s = 0; s < slice; ++s) {                                                          \
                const CT a = LOAD(o[s]), b = LOAD(upd[s]);                                         \
                CT r;                                                                              \
                switch (reduction) {                                                               \
                case 1: r = ADD(a, b); break;                                                      \
                case 2: r = MUL(a, b); break;                                                      \
                case 3: r = (b > a || ISNAN(b)) ? b : a; break;                                    \
                default: r = (b < a || ISNAN(b)) ? b : a; break;                                   \
                }                                                                                  \
                o[s] = STORE(r);                                                                   \
            }                                                                                      \
        }                                                                                          \
    }
#define EMBER_SR_SAME(x) (x)
#define EMBER_SR_FADD(a, b) ((a) + (b))
#define EMBER_SR_FMUL(a, b) ((a) * (b))
#define EMBER_SR_FNAN(x) ((x) != (x))
#define EMBER_SR_NONAN(x) 0
#define EMBER_SR_OR(a, b) ((a) | (b))
#define EMBER_SR_AND(a, b) ((a) & (b))
/*@end*/

/*@kernel ember_scatter_reduce_f32 requires ember_scatter_reduce_impl*/
EMBER_SCATTER_REDUCE(ember_scatter_reduce_f32, float, float, float, EMBER_SR_SAME, EMBER_SR_SAME, EMBER_SR_FADD,
                     EMBER_SR_FMUL, EMBER_SR_FNAN)
/*@end*/

/*@kernel ember_scatter_reduce_f64 requires ember_scatter_reduce_impl*/
EMBER_SCATTER_REDUCE(ember_scatter_reduce_f64, double, double, double, EMBER_SR_SAME, EMBER_SR_SAME,
                     EMBER_SR_FADD, EMBER_SR_FMUL, EMBER_SR_FNAN)
/*@end*/

/*@kernel ember_scatter_reduce_f16 requires ember_scatter_reduce_impl ember_f16*/
EMBER_SCATTER_REDUCE(ember_scatter_reduce_f16, uint16_t, float, float, ember_f16_to_f32, ember_f32_to_f16,
                     EMBER_SR_FADD, EMBER_SR_FMUL, EMBER_SR_FNAN)
/*@end*/

/*@kernel ember_scatter_reduce_b8 requires ember_scatter_reduce_impl*/
/* bool: add is or, mul is and (numpy's bool arithmetic). */
EMBER_SCATTER_REDUCE(ember_scatter_reduce_b8, uint8_t, uint8_t, uint8_t, EMBER_SR_SAME, EMBER_SR_SAME, EMBER_SR_OR,
                     EMBER_SR_AND, EMBER_SR_NONAN)
/*@end*/

/*@kernel ember_scatter_reduce_int requires ember_scatter_reduce_impl*/
#define EMBER_SR_IADD32(a, b) ((uint32_t)(a) + (uint32_t)(b))
#define EMBER_SR_IMUL32(a, b) ((uint32_t)(a) * (uint32_t)(b))
#define EMBER_SR_IADD64(a, b) ((uint64_t)(a) + (uint64_t)(b))
#define EMBER_SR_IMUL64(a, b) ((uint64_t)(a) * (uint64_t)(b))
/* The wrapped unsigned result back in T (modulo 2^bits on every two's-complement target). */
#define EMBER_SCATTER_REDUCE_INT(NAME, T, W)                                                       \
    EMBER_SCATTER_REDUCE(NAME, T, T, uint##W##_t, EMBER_SR_SAME, (T), EMBER_SR_IADD##W, EMBER_SR_IMUL##W, \
                         EMBER_SR_NONAN)
/*@end*/

/*@kernel ember_scatter_reduce_s8 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_s8, int8_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_s16 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_s16, int16_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_s32 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_s32, int32_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_s64 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_s64, int64_t, 64)
/*@end*/

/*@kernel ember_scatter_reduce_u8 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_u8, uint8_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_u16 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_u16, uint16_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_u32 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_u32, uint32_t, 32)
/*@end*/

/*@kernel ember_scatter_reduce_u64 requires ember_scatter_reduce_int*/
EMBER_SCATTER_REDUCE_INT(ember_scatter_reduce_u64, uint64_t, 64)
/*@end*/

/*@kernel ember_onehot_impl requires ember_copy*/
/* OneHot: out (already filled with the off value) gets the `elem`-byte on value at
 * [o, ix[o, i], i] for each index (outer x inner of them), over an inserted axis of `depth`.
 * INDEX(x, v) sets v to the index truncated toward zero and is 0 when it lies outside
 * (-depth - 1, depth) or is NaN; negative indices count from the end when `wrap` (opset 11 on). */
#define EMBER_ONEHOT(NAME, IndexT, INDEX)                                                           \
    static void NAME(void *out, const IndexT *ix, int32_t outer, int32_t depth, int32_t inner,      \
                     const void *on, size_t elem, int wrap) {                                       \
        uint8_t *d = (uint8_t *)out;                                                               \
        int32_t o, i, v;                                                                           \
        for (o = 0; o < outer; ++o) {                                                              \
            for (i = 0; i < inner; ++i) {                                                          \
                const IndexT x = *ix++;                                                            \
                if (!INDEX(x, v)) continue;                                                        \
                if (v < 0 && wrap) v += depth;                                                     \
                if (v < 0 || v >= depth) continue;                                                 \
                ember_copy(d + (((size_t)o * (size_t)depth + (size_t)v) * (size_t)inner + (size_t)i) * elem, on, \
                           elem);                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
#define EMBER_OH_SIGNED(x, v) \
    ((int64_t)(x) > -(int64_t)depth - 1 && (int64_t)(x) < (int64_t)depth ? ((v) = (int32_t)(x), 1) : 0)
#define EMBER_OH_UNSIGNED(x, v) ((uint64_t)(x) < (uint64_t)depth ? ((v) = (int32_t)(x), 1) : 0)
#define EMBER_OH_FLOAT(x, v) \
    ((x) > -(float)depth - 1.0f && (x) < (float)depth ? ((v) = (int32_t)(x), 1) : 0)
#define EMBER_OH_DOUBLE(x, v) \
    ((x) > -(double)depth - 1.0 && (x) < (double)depth ? ((v) = (int32_t)(x), 1) : 0)
/*@end*/

/*@kernel ember_onehot_s8 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_s8, int8_t, EMBER_OH_SIGNED)
/*@end*/

/*@kernel ember_onehot_s16 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_s16, int16_t, EMBER_OH_SIGNED)
/*@end*/

/*@kernel ember_onehot_s32 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_s32, int32_t, EMBER_OH_SIGNED)
/*@end*/

/*@kernel ember_onehot_s64 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_s64, int64_t, EMBER_OH_SIGNED)
/*@end*/

/*@kernel ember_onehot_u8 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_u8, uint8_t, EMBER_OH_UNSIGNED)
/*@end*/

/*@kernel ember_onehot_u16 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_u16, uint16_t, EMBER_OH_UNSIGNED)
/*@end*/

/*@kernel ember_onehot_u32 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_u32, uint32_t, EMBER_OH_UNSIGNED)
/*@end*/

/*@kernel ember_onehot_u64 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_u64, uint64_t, EMBER_OH_UNSIGNED)
/*@end*/

/*@kernel ember_onehot_f32 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_f32, float, EMBER_OH_FLOAT)
/*@end*/

/*@kernel ember_onehot_f64 requires ember_onehot_impl*/
EMBER_ONEHOT(ember_onehot_f64, double, EMBER_OH_DOUBLE)
/*@end*/

/*@kernel ember_onehot_f16 requires ember_onehot_impl ember_f16*/
#define EMBER_OH_HALF(x, v) EMBER_OH_FLOAT(ember_f16_to_f32(x), v)
EMBER_ONEHOT(ember_onehot_f16, uint16_t, EMBER_OH_HALF)
/*@end*/

/*@kernel ember_reverse_sequence requires ember_copy*/
/* For each batch entry b: time steps t < lens[b] come from lens[b] - 1 - t, the rest stay; a step is a
 * slice of `slice` bytes, the batch and time axes `bstride` and `tstride` bytes apart (the same in
 * input and output). lens[b] is clamped to [0, time]. */
static void ember_reverse_sequence(void *dst, const void *src, const int64_t *lens, int32_t batch, int32_t time,
                                   size_t bstride, size_t tstride, size_t slice) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    int32_t b, t;
    for (b = 0; b < batch; ++b) {
        int64_t len = lens[b];
        if (len < 0) len = 0;
        if (len > time) len = time;
        for (t = 0; t < time; ++t) {
            const int32_t from = t < len ? (int32_t)len - 1 - t : t;
            ember_copy(d + b * bstride + t * tstride, s + b * bstride + (size_t)from * tstride, slice);
        }
    }
}
/*@end*/

/*@kernel ember_topk_impl requires ember_prelude*/
/* TopK along an axis of n elements at stride `inner`, outer * inner rows: the k best of each row,
 * best first, as indices (int64, at stride inner in idx) and, when vals is not null, values. The outputs'
 * axis holds kstride >= k entries (a run-time K's static bound, n): those after the k-th are zeros. Each
 * row's list stays sorted while the row is read: an element goes in only if it ranks before the current
 * k-th, after every kept element of equal value, so ties keep the lower index first (the spec's order).
 * NaN ranks above every number, and equal to NaN (onnxruntime's order). */
#define EMBER_TOPK(NAME, T, CT, LOAD, ISNAN)                                                        \
    static void NAME(T *vals, int64_t *idx, const T *x, int32_t outer, int32_t n, int32_t inner,     \
                     int32_t k, int32_t kstride, int largest) {                                     \
        int32_t o, i, j, m, p;                                                                     \
        for (o = 0; o < outer; ++o) {                                                              \
            for (i = 0; i < inner; ++i) {                                                          \
                const T *row = x + (size_t)o * n * inner + i;                                      \
                int64_t *id = idx + (size_t)o * kstride * inner + i;                               \
                T *vv = vals ? vals + (size_t)o * kstride * inner + i : 0;                         \
                for (j = 0, m = 0; j < n && k > 0; ++j) {                                          \
                    const CT v = LOAD(row[(size_t)j * inner]);                                     \
                    if (m == k && !EMBER_TOPK_BEFORE(v, LOAD(row[id[(size_t)(k - 1) * inner] * inner]), \
                                                     ISNAN))                                       \
                        continue;                                                                  \
                    p = m < k ? m++ : k - 1;                                                       \
                    while (p > 0 && EMBER_TOPK_BEFORE(v, LOAD(row[id[(size_t)(p - 1) * inner] * inner]), ISNAN)) { \
                        id[(size_t)p * inner] = id[(size_t)(p - 1) * inner];                        \
                        --p;                                                                       \
                    }                                                                              \
                    id[(size_t)p * inner] = j;                                                     \
                }                                                                                  \
                for (p = k; p < kstride; ++p) id[(size_t)p * inner] = 0;                           \
                if (vv) {                                                                          \
                    for (p = 0; p < k; ++p) vv[(size_t)p * inner] = row[id[(size_t)p * inner] * inner]; \
                    for (p = k; p < kstride; ++p) vv[(size_t)p * inner] = (T)0;                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
/* a ranks strictly before b: larger (smaller) values first, NaN as the largest. */
#define EMBER_TOPK_BEFORE(a, b, ISNAN)                                                              \
    (largest ? ((a) > (b) || (ISNAN(a) && !ISNAN(b))) : ((a) < (b) || (ISNAN(b) && !ISNAN(a))))
#define EMBER_TOPK_SAME(x) (x)
#define EMBER_TOPK_FNAN(x) ((x) != (x))
#define EMBER_TOPK_NONAN(x) 0
/*@end*/

/*@kernel ember_topk_f32 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_f32, float, float, EMBER_TOPK_SAME, EMBER_TOPK_FNAN)
/*@end*/

/*@kernel ember_topk_f64 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_f64, double, double, EMBER_TOPK_SAME, EMBER_TOPK_FNAN)
/*@end*/

/*@kernel ember_topk_f16 requires ember_topk_impl ember_f16*/
EMBER_TOPK(ember_topk_f16, uint16_t, float, ember_f16_to_f32, EMBER_TOPK_FNAN)
/*@end*/

/*@kernel ember_topk_s8 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_s8, int8_t, int8_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_s16 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_s16, int16_t, int16_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_s32 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_s32, int32_t, int32_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_s64 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_s64, int64_t, int64_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_u8 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_u8, uint8_t, uint8_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_u16 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_u16, uint16_t, uint16_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_u32 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_u32, uint32_t, uint32_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_topk_u64 requires ember_topk_impl*/
EMBER_TOPK(ember_topk_u64, uint64_t, uint64_t, EMBER_TOPK_SAME, EMBER_TOPK_NONAN)
/*@end*/

/*@kernel ember_hardmax_impl requires ember_prelude*/
/* Hardmax along an axis of n elements at stride `inner`: `one` at each row's first maximum, zero
 * elsewhere. The first NaN is the maximum (numpy's argmax, the ONNX reference; ember's ArgMax too). */
#define EMBER_HARDMAX(NAME, T, CT, LOAD, ONE)                                                       \
    static void NAME(T *y, const T *x, int32_t outer, int32_t n, int32_t inner) {                  \
        int32_t o, i, j, best;                                                                     \
        for (o = 0; o < outer; ++o) {                                                              \
            for (i = 0; i < inner; ++i) {                                                          \
                const size_t at = (size_t)o * n * inner + i;                                       \
                CT m = LOAD(x[at]);                                                                \
                for (j = 1, best = 0; j < n; ++j) {                                                \
                    const CT v = LOAD(x[at + (size_t)j * inner]);                                  \
                    if ((v != v && m == m) || v > m) {                                             \
                        m = v;                                                                     \
                        best = j;                                                                  \
                    }                                                                              \
                }                                                                                  \
                for (j = 0; j < n; ++j) y[at + (size_t)j * inner] = j == best ? ONE : 0;           \
            }                                                                                      \
        }                                                                                          \
    }
#define EMBER_HARDMAX_SAME(x) (x)
/*@end*/

/*@kernel ember_hardmax_f32 requires ember_hardmax_impl*/
EMBER_HARDMAX(ember_hardmax_f32, float, float, EMBER_HARDMAX_SAME, 1.0f)
/*@end*/

/*@kernel ember_hardmax_f64 requires ember_hardmax_impl*/
EMBER_HARDMAX(ember_hardmax_f64, double, double, EMBER_HARDMAX_SAME, 1.0)
/*@end*/

/*@kernel ember_hardmax_f16 requires ember_hardmax_impl ember_f16*/
EMBER_HARDMAX(ember_hardmax_f16, uint16_t, float, ember_f16_to_f32, 0x3c00u) /* half 1.0 */
/*@end*/

/*@kernel ember_eye requires ember_copy*/
/* A rows x cols matrix of `elem`-byte elements: `one` where j - i == k, zero bytes (zero in every
 * element type) elsewhere. */
static void ember_eye(void *dst, const void *one, int32_t rows, int32_t cols, int32_t k, size_t elem) {
    uint8_t *d = (uint8_t *)dst;
    size_t z;
    int32_t i;
    for (z = 0; z < (size_t)rows * (size_t)cols * elem; ++z) d[z] = 0;
    for (i = 0; i < rows; ++i) {
        const int64_t j = (int64_t)i + k;
        if (j >= 0 && j < cols) ember_copy(d + ((size_t)i * (size_t)cols + (size_t)j) * elem, one, elem);
    }
}
/*@end*/
