/* Classic machine learning: tree ensembles and label encoders (ember/ops/ml.py). */

/*@kernel ember_tree_ensemble_impl requires ember_prelude*/
/* y[r, :] = the aggregate over all trees of the weights of the leaf row r reaches, per target. A node
 * compares feature `feature[n]` of the row with `split[n]` in type S (mode: 0 <=, 1 <, 2 >=, 3 >, 4 ==,
 * 5 !=); a NaN feature goes the way missing_true says. Branch ids are leaves' where the *_leaf flag is set.
 * The tables are checked at compile time (every id in range, no cycles), so the walk needs no bounds
 * checks and ends at a leaf. `acc` holds 2 * targets S:
 * the aggregate and whether a target was reached (MIN / MAX start from the first weight, and a target
 * no leaf reaches scores 0, as onnxruntime does). */
#define EMBER_TREE_ENSEMBLE(NAME, X, S)                                                                \
    static void NAME(X *y, const X *x, int32_t rows, int32_t features, int32_t targets,         \
                     int32_t trees, const int32_t *roots, const int32_t *feature, const S *split,       \
                     const uint8_t *mode, const int32_t *true_id, const int32_t *false_id,              \
                     const uint8_t *true_leaf, const uint8_t *false_leaf, const uint8_t *missing_true,  \
                     const int32_t *leaf_start, const int32_t *leaf_target, const S *leaf_weight,       \
                     int aggregate, S *acc) {                                                           \
        S *hit = acc + targets;                                                                         \
        for (int32_t r = 0; r < rows; ++r) {                                                            \
            const X *row = x + (ptrdiff_t)r * features;                                                 \
            for (int32_t j = 0; j < targets; ++j) acc[j] = hit[j] = (S)0;                               \
            for (int32_t t = 0; t < trees; ++t) {                                                       \
                int32_t n = roots[t], leaf = -1;                                                        \
                while (leaf < 0) {                                                                      \
                    const S v = (S)row[feature[n]], s = split[n];                                       \
                    int go_true;                                                                        \
                    if (v != v) go_true = missing_true[n];                                              \
                    else switch (mode[n]) {                                                             \
                        case 0: go_true = v <= s; break;                                                \
                        case 1: go_true = v < s; break;                                                 \
                        case 2: go_true = v >= s; break;                                                \
                        case 3: go_true = v > s; break;                                                 \
                        case 4: go_true = v == s; break;                                                \
                        default: go_true = v != s; break;                                               \
                    }                                                                                   \
                    if (go_true) {                                                                      \
                        if (true_leaf[n]) leaf = true_id[n]; else n = true_id[n];                       \
                    } else {                                                                            \
                        if (false_leaf[n]) leaf = false_id[n]; else n = false_id[n];                    \
                    }                                                                                   \
                }                                                                                       \
                for (int32_t e = leaf_start[leaf]; e < leaf_start[leaf + 1]; ++e) {                     \
                    const int32_t j = leaf_target[e];                                                   \
                    const S w = leaf_weight[e];                                                         \
                    if (aggregate <= 1 || hit[j] == (S)0) acc[j] = aggregate <= 1 ? acc[j] + w : w;     \
                    else if (aggregate == 2) acc[j] = w < acc[j] ? w : acc[j];                          \
                    else acc[j] = w > acc[j] ? w : acc[j];                                              \
                    hit[j] = (S)1;                                                                      \
                }                                                                                       \
            }                                                                                           \
            for (int32_t j = 0; j < targets; ++j)                                                       \
                y[(ptrdiff_t)r * targets + j] = (X)(aggregate == 1 ? acc[j] / (S)trees : acc[j]);       \
        }                                                                                               \
    }
/*@end*/

/*@kernel ember_tree_ensemble_f32_f32 requires ember_tree_ensemble_impl*/
EMBER_TREE_ENSEMBLE(ember_tree_ensemble_f32_f32, float, float)
/*@end*/

/*@kernel ember_tree_ensemble_f32_f64 requires ember_tree_ensemble_impl*/
EMBER_TREE_ENSEMBLE(ember_tree_ensemble_f32_f64, float, double)
/*@end*/

/*@kernel ember_tree_ensemble_f64_f64 requires ember_tree_ensemble_impl*/
EMBER_TREE_ENSEMBLE(ember_tree_ensemble_f64_f64, double, double)
/*@end*/

/*@kernel ember_label_encode_impl requires ember_prelude*/
/* y[i] = values[k] where keys[k] == x[i] (keys sorted ascending: a binary search), else `fallback`. */
#define EMBER_LABEL_ENCODE(NAME, K, V)                                                                 \
    static void NAME(V *y, const K *x, size_t n, const K *keys, const V *values, int32_t count,        \
                     V fallback) {                                                                      \
        for (size_t i = 0; i < n; ++i) {                                                                \
            int32_t lo = 0, hi = count;                                                                 \
            V out = fallback;                                                                           \
            while (lo < hi) {                                                                           \
                const int32_t mid = lo + (hi - lo) / 2;                                                 \
                if (keys[mid] < x[i]) lo = mid + 1;                                                     \
                else hi = mid;                                                                          \
            }                                                                                           \
            if (lo < count && keys[lo] == x[i]) out = values[lo];                                       \
            y[i] = out;                                                                                 \
        }                                                                                               \
    }
/*@end*/

/*@kernel ember_label_encode_s64_s64 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s64_s64, int64_t, int64_t)
/*@end*/

/*@kernel ember_label_encode_s64_f32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s64_f32, int64_t, float)
/*@end*/

/*@kernel ember_label_encode_s64_s32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s64_s32, int64_t, int32_t)
/*@end*/

/*@kernel ember_label_encode_f32_s64 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_f32_s64, float, int64_t)
/*@end*/

/*@kernel ember_label_encode_f32_f32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_f32_f32, float, float)
/*@end*/

/*@kernel ember_label_encode_f32_s32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_f32_s32, float, int32_t)
/*@end*/

/*@kernel ember_label_encode_s32_s64 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s32_s64, int32_t, int64_t)
/*@end*/

/*@kernel ember_label_encode_s32_f32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s32_f32, int32_t, float)
/*@end*/

/*@kernel ember_label_encode_s32_s32 requires ember_label_encode_impl*/
EMBER_LABEL_ENCODE(ember_label_encode_s32_s32, int32_t, int32_t)
/*@end*/

/*@kernel ember_tfidf_impl requires ember_prelude*/
/* N-gram counts of each row of x [rows, cols], as ONNX's TfIdfVectorizer: for every skip distance d of
 * 1..max_skip + 1 and every start, the items start, start + d, ... walk the n-gram trie (node 0 the root;
 * children by first-child/next-sibling links); every node reached that is a counted n-gram of at least
 * min_gram items (unigrams on the first distance only) adds one to its output column. Then mode 0 (TF)
 * gives the counts, 1 (IDF) weights[i] (or 1) where a count is positive, 2 (TFIDF) weights[i] * count. */
#define EMBER_TFIDF(NAME, T)                                                                             \
    static void NAME(float *y, const T *x, int32_t rows, int32_t cols, const int64_t *value,             \
                     const int32_t *child, const int32_t *sibling, const int32_t *out,                   \
                     const float *weights, int32_t size, int mode, int weighted, int32_t min_gram,       \
                     int32_t max_gram, int32_t max_skip) {                                               \
        for (int32_t r = 0; r < rows; ++r) {                                                             \
            const T *row = x + (ptrdiff_t)r * cols;                                                      \
            float *yr = y + (ptrdiff_t)r * size;                                                         \
            int32_t first_size = min_gram;                                                               \
            for (int32_t i = 0; i < size; ++i) yr[i] = 0.0f;                                             \
            for (int32_t d = 1; d <= max_skip + 1; ++d) {                                                \
                for (int32_t start = 0; start < cols; ++start) {                                         \
                    if ((int64_t)start + (int64_t)d * (first_size - 1) >= cols) break;                   \
                    int32_t node = 0, n = 1;                                                             \
                    for (int64_t item = start; child[node] >= 0 && n <= max_gram && item < cols;         \
                         item += d, ++n) {                                                               \
                        int32_t c = child[node];                                                         \
                        while (c >= 0 && value[c] != (int64_t)row[item]) c = sibling[c];                 \
                        if (c < 0) break;                                                                \
                        if (n >= first_size && out[c] >= 0) yr[out[c]] += 1.0f;                         \
                        node = c;                                                                        \
                    }                                                                                    \
                }                                                                                        \
                if (first_size == 1) {                                                                   \
                    first_size = 2;                                                                      \
                    if (first_size > max_gram) break;                                                    \
                }                                                                                        \
            }                                                                                            \
            for (int32_t i = 0; i < size; ++i) {                                                         \
                const float w = weighted ? weights[i] : 1.0f;                                            \
                if (mode == 1) yr[i] = yr[i] > 0.0f ? w : 0.0f;                                          \
                else if (mode == 2) yr[i] = w * yr[i];                                                   \
            }                                                                                            \
        }                                                                                                \
    }
/*@end*/

/*@kernel ember_tfidf_s32 requires ember_tfidf_impl*/
EMBER_TFIDF(ember_tfidf_s32, int32_t)
/*@end*/

/*@kernel ember_tfidf_s64 requires ember_tfidf_impl*/
EMBER_TFIDF(ember_tfidf_s64, int64_t)
/*@end*/
