/* Ops whose output size depends on values (ember/ops/dynamic.py, ember/ops/counted.py): each writes the
 * static upper bound of its output, zeros after the valid entries, and an int64 count of them. */

/*@kernel ember_nonzero_impl requires ember_prelude*/
/* y [rank, bound]: the coordinates of x's nonzero elements in row-major order, column k for the k-th;
 * dims: x's shape. */
#define EMBER_NONZERO(NAME, T)                                                                           \
    static void NAME(int64_t *y, int64_t *count, const T *x, size_t numel, int rank, const int64_t *dims) { \
        size_t found = 0;                                                                                \
        for (size_t i = 0; i < (size_t)rank * numel; ++i) y[i] = 0;                                      \
        for (size_t i = 0; i < numel; ++i) {                                                             \
            if (x[i] == (T)0) continue;                                                                  \
            size_t rest = i;                                                                             \
            for (int d = rank - 1; d >= 0; --d) {                                                        \
                y[(size_t)d * numel + found] = (int64_t)(rest % (size_t)dims[d]);                        \
                rest /= (size_t)dims[d];                                                                 \
            }                                                                                            \
            ++found;                                                                                     \
        }                                                                                                \
        *count = (int64_t)found;                                                                         \
    }
/*@end*/

/*@kernel ember_compress requires ember_prelude*/
/* y [outer, bound, inner]: the slices j < bound of x [outer, n, inner] whose condition is true, packed
 * to the front of the axis (elements of `size` bytes). */
static void ember_compress(uint8_t *y, int64_t *count, const uint8_t *x, const uint8_t *cond, size_t outer,
                           size_t n, size_t bound, size_t inner, size_t size) {
    size_t kept = 0;
    const size_t row = inner * size;
    for (size_t i = 0; i < outer * bound * row; ++i) y[i] = 0;
    for (size_t j = 0; j < bound; ++j) {
        if (!cond[j]) continue;
        for (size_t o = 0; o < outer; ++o) {
            const uint8_t *src = x + (o * n + j) * row;
            uint8_t *dst = y + (o * bound + kept) * row;
            for (size_t b = 0; b < row; ++b) dst[b] = src[b];
        }
        ++kept;
    }
    *count = (int64_t)kept;
}
/*@end*/

/*@kernel ember_unique_impl requires ember_prelude*/
/* Unique slices j of x [outer, n, inner] along the middle axis. uniq (scratch, n entries) lists the first
 * occurrence of each distinct slice, then (sorted) their ascending lexicographic order; rank (scratch, n)
 * maps a first-occurrence position to its output position. Outputs: y [outer, n, inner] (the unique
 * slices first), first_index [n], inverse [n] (each slice's output position), counts [n], count. */
#define EMBER_UNIQUE(NAME, T)                                                                            \
    static int NAME##_cmp(const T *x, size_t outer, size_t n, size_t inner, int64_t a, int64_t b) {      \
        for (size_t o = 0; o < outer; ++o)                                                               \
            for (size_t i = 0; i < inner; ++i) {                                                         \
                const T va = x[(o * n + (size_t)a) * inner + i], vb = x[(o * n + (size_t)b) * inner + i]; \
                if (va < vb) return -1;                                                                  \
                if (vb < va) return 1;                                                                   \
            }                                                                                            \
        return 0;                                                                                        \
    }                                                                                                    \
    static void NAME(T *y, int64_t *first_index, int64_t *inverse, int64_t *counts, int64_t *count,      \
                     const T *x, size_t outer, size_t n, size_t inner, int sorted, int64_t *uniq,        \
                     int64_t *rank) {                                                                    \
        size_t m = 0;                                                                                    \
        for (size_t j = 0; j < n; ++j) {                                                                 \
            size_t k = 0;                                                                                \
            while (k < m && NAME##_cmp(x, outer, n, inner, uniq[k], (int64_t)j) != 0) ++k;               \
            if (k == m) uniq[m++] = (int64_t)j;                                                          \
            inverse[j] = (int64_t)k;                                                                     \
        }                                                                                                \
        for (size_t k = 0; k < m; ++k) rank[k] = (int64_t)k;                                             \
        if (sorted) /* insertion sort of the first occurrences; rank then maps old position -> new */     \
            for (size_t k = 1; k < m; ++k) {                                                             \
                const int64_t v = uniq[k];                                                               \
                size_t p = k;                                                                            \
                while (p > 0 && NAME##_cmp(x, outer, n, inner, uniq[p - 1], v) > 0) {                    \
                    uniq[p] = uniq[p - 1];                                                               \
                    --p;                                                                                 \
                }                                                                                        \
                uniq[p] = v;                                                                             \
            }                                                                                            \
        if (sorted)                                                                                      \
            for (size_t k = 0; k < m; ++k) /* uniq[k]'s position before sorting is its own inverse */     \
                rank[inverse[uniq[k]]] = (int64_t)k;                                                     \
        for (size_t j = 0; j < n; ++j) inverse[j] = rank[inverse[j]];                                    \
        for (size_t k = 0; k < n; ++k) first_index[k] = counts[k] = 0;                                   \
        for (size_t k = 0; k < m; ++k) first_index[k] = uniq[k];                                         \
        for (size_t j = 0; j < n; ++j) counts[inverse[j]] += 1;                                          \
        for (size_t o = 0; o < outer; ++o)                                                               \
            for (size_t k = 0; k < n; ++k)                                                               \
                for (size_t i = 0; i < inner; ++i)                                                       \
                    y[(o * n + k) * inner + i] = k < m ? x[(o * n + (size_t)uniq[k]) * inner + i] : (T)0; \
        *count = (int64_t)m;                                                                             \
    }
/*@end*/

/*@kernel ember_nms requires ember_prelude*/
/* Whether `a` ranks before `b`: the higher score, then the lower box index. */
static int ember_nms_before(const float *score, int32_t a, int32_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
}

/* Sifts order[at] down the heap order[0..len) whose root is the box ranked last. */
static void ember_nms_sift(int32_t *order, size_t at, size_t len, const float *score) {
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= len) return;
        if (child + 1 < len && ember_nms_before(score, order[child], order[child + 1])) ++child;
        if (!ember_nms_before(score, order[at], order[child])) return;
        const int32_t t = order[at];
        order[at] = order[child];
        order[child] = t;
        at = child;
    }
}

/* Whether two boxes overlap by more than `iou` (intersection over union); corners are [y1, x1, y2, x2] in
 * either order, or center_point: [x_center, y_center, width, height]. */
static int ember_nms_overlap(const float *a, const float *b, int center_point, float iou) {
    float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
    if (center_point) {
        ax0 = a[0] - a[2] / 2; ax1 = a[0] + a[2] / 2; ay0 = a[1] - a[3] / 2; ay1 = a[1] + a[3] / 2;
        bx0 = b[0] - b[2] / 2; bx1 = b[0] + b[2] / 2; by0 = b[1] - b[3] / 2; by1 = b[1] + b[3] / 2;
    } else {
        ax0 = a[1] < a[3] ? a[1] : a[3]; ax1 = a[1] < a[3] ? a[3] : a[1];
        ay0 = a[0] < a[2] ? a[0] : a[2]; ay1 = a[0] < a[2] ? a[2] : a[0];
        bx0 = b[1] < b[3] ? b[1] : b[3]; bx1 = b[1] < b[3] ? b[3] : b[1];
        by0 = b[0] < b[2] ? b[0] : b[2]; by1 = b[0] < b[2] ? b[2] : b[0];
    }
    const float ix0 = ax0 > bx0 ? ax0 : bx0, ix1 = ax1 < bx1 ? ax1 : bx1;
    const float iy0 = ay0 > by0 ? ay0 : by0, iy1 = ay1 < by1 ? ay1 : by1;
    if (ix1 <= ix0 || iy1 <= iy0) return 0;
    const float inter = (ix1 - ix0) * (iy1 - iy0);
    const float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
    const float uni = area_a + area_b - inter;
    if (inter <= 0.0f || area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return 0;
    return inter / uni > iou;
}

/* Greedy non-maximum suppression per batch and class, boxes [B, N, 4] and scores [B, C, N]: the boxes in
 * score order (ties: the lower index), each kept unless it overlaps a kept one by more than `iou`, at most
 * `per_class` per class; with has_threshold, only boxes scoring above `threshold`. y [bound, 3] rows
 * (batch, class, box); `order` (N int32) and `kept` (min(N, per_class) int32) are scratch. */
static void ember_nms(int64_t *y, int64_t *count, const float *boxes, const float *scores, size_t batches,
                      size_t classes, size_t n, int64_t per_class, const float *iou_in, const float *threshold_in,
                      int center_point, size_t bound, int32_t *order, int32_t *kept) {
    const float iou = iou_in ? iou_in[0] : 0.0f;
    size_t rows = 0;
    for (size_t i = 0; i < bound * 3; ++i) y[i] = 0;
    for (size_t b = 0; b < batches; ++b)
        for (size_t c = 0; c < classes; ++c) {
            const float *score = scores + (b * classes + c) * n;
            const float *box = boxes + b * n * 4;
            size_t len = 0, taken = 0;
            for (size_t i = 0; i < n; ++i)
                if (!threshold_in || score[i] > threshold_in[0]) order[len++] = (int32_t)i;
            for (size_t i = len / 2; i-- > 0;) ember_nms_sift(order, i, len, score);
            for (size_t end = len; end > 1; --end) { /* heap sort: the best-ranked box ends up first */
                const int32_t t = order[0];
                order[0] = order[end - 1];
                order[end - 1] = t;
                ember_nms_sift(order, 0, end - 1, score);
            }
            for (size_t i = 0; i < len && (int64_t)taken < per_class && rows < bound; ++i) {
                const int32_t cand = order[i];
                int keep = 1;
                for (size_t k = 0; k < taken && keep; ++k)
                    keep = !ember_nms_overlap(box + (size_t)cand * 4, box + (size_t)kept[k] * 4, center_point, iou);
                if (!keep) continue;
                kept[taken++] = cand;
                y[rows * 3] = (int64_t)b;
                y[rows * 3 + 1] = (int64_t)c;
                y[rows * 3 + 2] = (int64_t)cand;
                ++rows;
            }
        }
    *count = (int64_t)rows;
}
/*@end*/

/*@kernel ember_nonzero_f32 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_f32, float)
/*@end*/

/*@kernel ember_nonzero_f64 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_f64, double)
/*@end*/

/*@kernel ember_nonzero_s8 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_s8, int8_t)
/*@end*/

/*@kernel ember_nonzero_s16 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_s16, int16_t)
/*@end*/

/*@kernel ember_nonzero_s32 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_s32, int32_t)
/*@end*/

/*@kernel ember_nonzero_s64 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_s64, int64_t)
/*@end*/

/*@kernel ember_nonzero_u8 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_u8, uint8_t)
/*@end*/

/*@kernel ember_nonzero_u16 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_u16, uint16_t)
/*@end*/

/*@kernel ember_nonzero_u32 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_u32, uint32_t)
/*@end*/

/*@kernel ember_nonzero_u64 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_u64, uint64_t)
/*@end*/

/*@kernel ember_nonzero_b8 requires ember_nonzero_impl*/
EMBER_NONZERO(ember_nonzero_b8, uint8_t)
/*@end*/

/*@kernel ember_unique_f32 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_f32, float)
/*@end*/

/*@kernel ember_unique_f64 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_f64, double)
/*@end*/

/*@kernel ember_unique_s32 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_s32, int32_t)
/*@end*/

/*@kernel ember_unique_s64 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_s64, int64_t)
/*@end*/

/*@kernel ember_unique_s8 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_s8, int8_t)
/*@end*/

/*@kernel ember_unique_u8 requires ember_unique_impl*/
EMBER_UNIQUE(ember_unique_u8, uint8_t)
/*@end*/
