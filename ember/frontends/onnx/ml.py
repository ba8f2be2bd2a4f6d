"""The ai.onnx.ml domain: what skl2onnx and onnxmltools write for scikit-learn, LightGBM and XGBoost models.

Tree ensembles (TreeEnsembleClassifier/Regressor of opsets 1 and 3, TreeEnsemble of opset 5) become ember's
TreeEnsemble op (ember/ops/ml.py: the trees as constant tables) followed by the base values, post transform
and label lookup as float ops; linear models, SVMs, Scaler, Normalizer, Binarizer, Imputer and
ArrayFeatureExtractor become graphs of float ops; LabelEncoder (numeric keys) is ember's LabelEncoder. The
classifiers' semantics (the binary case, post transforms) follow onnxruntime's CPU kernels.
"""

from __future__ import annotations

import numpy as np

from ember.errors import ShapeError
from ember.frontends.onnx.ops import ONNX_OPS, OnnxOp
from ember.frontends.onnx.rewrite import Rewrite, register
from ember.ir.dtypes import DType
from ember.ir.graph import Value

ML = "ai.onnx.ml"
_MODES = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5}
_V5_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
_V5_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def _float_input(r: Rewrite, keep_double: bool = False) -> Value:
    """X as a [rows, features] float32 matrix (the ml ops take integer and double features too; onnxruntime
    computes in float), or float64 where `keep_double` and X is."""
    x = r.need(0, "X")
    dtype = x.dtype
    if x.type.rank == 1:
        x = r.op("Reshape", [x, r.const("as_row", np.asarray([1, -1], np.int64))], "x_2d")
    if dtype is DType.FLOAT32 or keep_double and dtype is DType.FLOAT64:
        return x
    return r.op("Cast", [x], "x_f32", {"to": DType.FLOAT32})


def _attr(attrs: dict, name: str, dtype: type = np.float32) -> np.ndarray | None:
    """A list attribute or its `*_as_tensor` (double) form."""
    if f"{name}_as_tensor" in attrs:
        return np.asarray(attrs[f"{name}_as_tensor"]).reshape(-1)
    return None if name not in attrs else np.asarray(attrs[name], dtype).reshape(-1)


# ---- tree ensembles ------------------------------------------------------------------------------

def _legacy_trees(r: Rewrite, attrs: dict, leaf: str) -> tuple[list[np.ndarray], int]:
    """The canonical tables (ember/ops/ml.py, inputs 1..12) of an opset-1/3 ensemble whose leaf weights are
    the `leaf`_* attributes (class_* or target_*); returns them and the number of trees."""
    tree_ids = np.asarray(attrs["nodes_treeids"], np.int64)
    node_ids = np.asarray(attrs["nodes_nodeids"], np.int64)
    modes = list(attrs["nodes_modes"])
    splits = _attr(attrs, "nodes_values")
    weights = _attr(attrs, f"{leaf}_weights")
    if splits is None or weights is None:
        raise r.refuse("missing nodes_values or leaf weights")
    dtype = np.float64 if splits.dtype == np.float64 or weights.dtype == np.float64 else np.float32
    position = {(int(t), int(n)): i for i, (t, n) in enumerate(zip(tree_ids, node_ids, strict=True))}
    if len(position) != len(modes) or len(modes) != len(node_ids):
        raise ShapeError(f"node '{r.node.name}' ({r.op_type}): the nodes_* attributes disagree")
    bad = sorted({m for m in modes if m != "LEAF" and m not in _MODES})
    if bad:
        raise r.refuse(f"node modes {bad}")
    internal = [i for i, m in enumerate(modes) if m != "LEAF"]
    leaves = [i for i, m in enumerate(modes) if m == "LEAF"]
    internal_at = {i: k for k, i in enumerate(internal)}
    leaf_at = {i: k for k, i in enumerate(leaves)}
    trees = sorted(set(tree_ids.tolist()))
    n_trees = len(trees)
    features = np.asarray(attrs.get("nodes_featureids", [0] * len(modes)), np.int64)
    missing = np.asarray(attrs.get("nodes_missing_value_tracks_true", [0] * len(modes)), np.int64)

    def child(i: int, name: str) -> tuple[int, int]:
        target = position.get((int(tree_ids[i]), int(attrs[name][i])))
        if target is None:
            raise ShapeError(f"node '{r.node.name}' ({r.op_type}): a branch of tree {tree_ids[i]} points to a "
                             f"missing node {attrs[name][i]}")
        return (leaf_at[target], 1) if modes[target] == "LEAF" else (internal_at[target], 0)

    true_branches = [child(i, "nodes_truenodeids") for i in internal]
    false_branches = [child(i, "nodes_falsenodeids") for i in internal]
    true_ids, true_leafs = [b[0] for b in true_branches], [b[1] for b in true_branches]
    false_ids, false_leafs = [b[0] for b in false_branches], [b[1] for b in false_branches]
    # A tree that is one leaf: a node whose both branches reach that leaf.
    roots, extra = [], []
    for t in trees:
        first = min(i for i, tid in enumerate(tree_ids) if tid == t)
        if modes[first] == "LEAF":
            roots.append(len(internal) + len(extra))
            extra.append(leaf_at[first])
        else:
            roots.append(internal_at[first])
    by_leaf: dict[int, list[int]] = {k: [] for k in range(len(leaves))}
    leaf_tree, leaf_node = attrs[f"{leaf}_treeids"], attrs[f"{leaf}_nodeids"]
    for e, (t, n) in enumerate(zip(leaf_tree, leaf_node, strict=True)):
        at = position.get((int(t), int(n)))
        if at is None or modes[at] != "LEAF":
            raise ShapeError(f"node '{r.node.name}' ({r.op_type}): a weight names node {n} of tree {t}, not a leaf")
        by_leaf[leaf_at[at]].append(e)
    order = [e for k in range(len(leaves)) for e in by_leaf[k]]
    start = np.cumsum([0] + [len(by_leaf[k]) for k in range(len(leaves))])
    targets = np.asarray(attrs[f"{leaf}_ids"], np.int64)[order] if order else np.zeros(0, np.int64)
    tables = [
        np.asarray(roots, np.int32),
        np.asarray([*features[internal], *[0] * len(extra)], np.int32),
        np.asarray([*splits[internal], *[0.0] * len(extra)], dtype),
        np.asarray([*[_MODES[modes[i]] for i in internal], *[0] * len(extra)], np.uint8),
        np.asarray([*true_ids, *extra], np.int32), np.asarray([*false_ids, *extra], np.int32),
        np.asarray([*true_leafs, *[1] * len(extra)], np.uint8), np.asarray([*false_leafs, *[1] * len(extra)], np.uint8),
        np.asarray([*missing[internal], *[0] * len(extra)], np.uint8),
        start.astype(np.int32), targets.astype(np.int32), weights[order].astype(dtype),
    ]
    return tables, n_trees


def _v5_trees(r: Rewrite, attrs: dict) -> list[np.ndarray]:
    modes = np.asarray(attrs["nodes_modes"]).reshape(-1).astype(np.uint8)
    splits = np.asarray(attrs["nodes_splits"]).reshape(-1)
    weights = np.asarray(attrs["leaf_weights"]).reshape(-1)
    dtype = np.float64 if np.float64 in (splits.dtype, weights.dtype) else np.float32
    n = modes.size
    columns = [list(np.asarray(attrs[k]).reshape(-1)) for k in (
        "nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs")]
    columns.append(list(np.asarray(attrs.get("nodes_missing_value_tracks_true", [0] * n)).reshape(-1)))
    features, true_ids, false_ids, true_leafs, false_leafs, missing = columns
    splits, modes_out = list(splits.astype(dtype)), list(modes)
    # BRANCH_MEMBER (6) tests x against a set (membership_values: the sets in node order, NaN-separated): a
    # chain of BRANCH_EQ nodes, one per member, each sending a match the true way and a miss down the chain.
    members = np.asarray(attrs.get("membership_values", []), np.float64).reshape(-1)
    cuts = np.flatnonzero(np.isnan(members))
    sets = np.split(members, cuts)
    sets = [s_[~np.isnan(s_)] for s_ in sets]
    member_nodes = [i for i in range(n) if modes[i] == 6]
    if np.any(modes > 6) or len(member_nodes) > len(sets):
        raise r.refuse("node modes outside BRANCH_LEQ..BRANCH_MEMBER, or too few membership sets")
    for node, values in zip(member_nodes, sets, strict=False):
        if not values.size:
            raise r.refuse("an empty membership set")
        miss, miss_leaf = false_ids[node], false_leafs[node]
        chain = [node] + [len(splits) + k for k in range(values.size - 1)]
        for k, at in enumerate(chain):
            nxt, nxt_leaf = (chain[k + 1], 0) if k + 1 < len(chain) else (miss, miss_leaf)
            row = (features[node], values[k], 4, true_ids[node], nxt, true_leafs[node], nxt_leaf, missing[node])
            if at == node:
                (features[at], splits[at], modes_out[at], true_ids[at], false_ids[at], true_leafs[at],
                 false_leafs[at], missing[at]) = row
            else:
                for column, value in zip((features, splits, modes_out, true_ids, false_ids, true_leafs, false_leafs,
                                          missing), row, strict=True):
                    column.append(value)
    leaf_targets = np.asarray(attrs["leaf_targetids"], np.int32)
    return [
        np.asarray(attrs["tree_roots"], np.int32), np.asarray(features, np.int32), np.asarray(splits, dtype),
        np.asarray(modes_out, np.uint8), np.asarray(true_ids, np.int32), np.asarray(false_ids, np.int32),
        np.asarray(true_leafs, np.uint8), np.asarray(false_leafs, np.uint8), np.asarray(missing, np.uint8),
        np.arange(leaf_targets.size + 1, dtype=np.int32), leaf_targets, weights.astype(dtype),
    ]


def _ensemble(r: Rewrite, x: Value, tables: list[np.ndarray], n_targets: int, aggregate: str) -> Value:
    names = ("roots", "features", "splits", "modes", "true_ids", "false_ids", "true_leafs", "false_leafs",
             "missing_true", "leaf_start", "leaf_targets", "leaf_weights")
    consts = [r.const(n, t) for n, t in zip(names, tables, strict=True)]
    return r.op("TreeEnsemble", [x, *consts], "scores", {"aggregate": aggregate, "n_targets": n_targets})


def _post_transform(r: Rewrite, scores: Value, transform: str, out: Value | None) -> Value:
    if transform == "NONE":
        return r.op("Identity", [scores], "post", out=out) if out is not None else scores
    if transform == "LOGISTIC":
        return r.op("Sigmoid", [scores], "post", out=out)
    if transform == "SOFTMAX":
        return r.op("Softmax", [scores], "post", {"axis": -1}, out=out)
    if transform == "SOFTMAX_ZERO":  # a softmax in which scores that are 0 stay 0 (exp(0 - max) -> 0 * ...)
        top = r.op("ReduceMax", [scores, r.const("axis", np.asarray([-1], np.int64))], "top", {"keepdims": 1})
        exp = r.op("Exp", [r.op("Sub", [scores, top], "shifted")], "exp")
        scaled_zero = r.op("Mul", [scores, r.op("Exp", [r.op("Neg", [top], "neg_top")], "exp_neg_top")], "zero_part")
        nonzero = r.op("Greater", [r.op("Abs", [scores], "magnitude"), r.const("tiny", np.asarray(1e-7, np.float32))],
                       "nonzero")
        e = r.op("Where", [nonzero, exp, scaled_zero], "e")
        total = r.op("ReduceSum", [e, r.const("sum_axis", np.asarray([-1], np.int64))], "total", {"keepdims": 1})
        ratio = r.op("Div", [e, total], "ratio")
        empty = r.op("Equal", [total, r.const("zero", np.asarray(0.0, np.float32))], "empty")
        return r.op("Where", [empty, r.const("half", np.asarray(0.5, np.float32)), ratio], "post", out=out)
    raise r.refuse(f"post_transform {transform}")


def _labels(r: Rewrite, scores: Value, attrs: dict, out: Value | None) -> None:
    if out is None:
        return
    if "classlabels_strings" in attrs:
        raise r.refuse("string class labels (ember compiles numeric tensors: convert with integer labels)")
    labels = np.asarray(attrs.get("classlabels_int64s", attrs.get("classlabels_ints")), np.int64).reshape(-1)
    best = r.op("ArgMax", [scores], "best", {"axis": 1, "keepdims": 0})
    r.op("Gather", [r.const("labels", labels), best], "label", {"axis": 0}, out=out)


def _tree_regressor(r: Rewrite, attrs: dict) -> None:
    tables, n_trees = _legacy_trees(r, attrs, "target")
    scores = _ensemble(r, _float_input(r), tables, int(attrs.get("n_targets", 1)),
                       attrs.get("aggregate_function", "SUM"))
    base = _attr(attrs, "base_values")
    if base is not None and base.size:
        scores = r.op("Add", [scores, r.const("base", base.astype(np.float32).reshape(1, -1))], "based")
    _post_transform(r, scores, attrs.get("post_transform", "NONE"), r.output(0))


def _binary_scores(r: Rewrite, scores: Value, transform: str) -> Value:
    """One score column s for two classes: [1 - s, s] before NONE/PROBIT, [-s, s] before the others."""
    first = r.op("Sub", [r.const("one", np.asarray(1.0, np.float32)), scores], "complement") if transform in (
        "NONE", "PROBIT") else r.op("Neg", [scores], "negated")
    return r.op("Concat", [first, scores], "binary", {"axis": 1})


def _tree_classifier(r: Rewrite, attrs: dict) -> None:
    tables, _ = _legacy_trees(r, attrs, "class")
    labels = attrs.get("classlabels_int64s", attrs.get("classlabels_strings", []))
    class_ids = set(np.asarray(attrs["class_ids"], np.int64).tolist())
    binary = len(class_ids) == 1 and len(labels) == 2
    n_targets = 1 if binary else len(labels)
    if binary:
        tables[10] = np.zeros_like(tables[10])  # the one scored class is column 0
    scores = _ensemble(r, _float_input(r), tables, n_targets, "SUM")
    base = _attr(attrs, "base_values")
    if base is not None and base.size:
        scores = r.op("Add", [scores, r.const("base", base.astype(np.float32)[:n_targets].reshape(1, -1))], "based")
    transform = attrs.get("post_transform", "NONE")
    if binary:
        scores = _binary_scores(r, scores, transform)
    probs = _post_transform(r, scores, transform, r.output(1))
    _labels(r, probs, attrs, r.output(0))


def _tree_ensemble_v5(r: Rewrite, attrs: dict) -> None:
    aggregate = _V5_AGGREGATES[int(attrs.get("aggregate_function", 1))]
    scores = _ensemble(r, _float_input(r, keep_double=True), _v5_trees(r, attrs), int(attrs["n_targets"]), aggregate)
    _post_transform(r, scores, _V5_TRANSFORMS[int(attrs.get("post_transform", 0))], r.output(0))


# ---- linear models, SVMs -------------------------------------------------------------------------

def _affine(r: Rewrite, x: Value, coefficients: np.ndarray, intercepts: np.ndarray | None, rows: int) -> Value:
    features = x.shape[-1]
    weights = np.asarray(coefficients, np.float32).reshape(rows, features).T.copy()
    y = r.op("MatMul", [x, r.const("coefficients", weights)], "scores")
    if intercepts is None or not intercepts.size:
        return y
    return r.op("Add", [y, r.const("intercepts", np.asarray(intercepts, np.float32).reshape(1, -1))], "biased")


def _linear_regressor(r: Rewrite, attrs: dict) -> None:
    x = _float_input(r)
    y = _affine(r, x, np.asarray(attrs["coefficients"]), _attr(attrs, "intercepts"), int(attrs.get("targets", 1)))
    _post_transform(r, y, attrs.get("post_transform", "NONE"), r.output(0))


def _linear_classifier(r: Rewrite, attrs: dict) -> None:
    x = _float_input(r)
    coefficients = np.asarray(attrs["coefficients"], np.float32)
    rows = coefficients.size // x.shape[-1]
    scores = _affine(r, x, coefficients, _attr(attrs, "intercepts"), rows)
    labels = attrs.get("classlabels_ints", attrs.get("classlabels_strings", []))
    transform = attrs.get("post_transform", "NONE")
    if rows == 1 and len(labels) == 2:  # one score s for two classes: [-s, s]
        scores = r.op("Concat", [r.op("Neg", [scores], "negated"), scores], "binary", {"axis": 1})
    elif rows == 1:
        raise r.refuse("a one-class linear classifier")
    probs = _post_transform(r, scores, transform, r.output(1))
    _labels(r, probs, attrs, r.output(0))


def _scaler(r: Rewrite, attrs: dict) -> None:
    x = _float_input(r)
    offset = r.const("offset", np.asarray(attrs.get("offset", [0.0]), np.float32))
    scale = r.const("scale", np.asarray(attrs.get("scale", [1.0]), np.float32))
    r.op("Mul", [r.op("Sub", [x, offset], "centered"), scale], "scaled", out=r.output(0))


def _normalizer(r: Rewrite, attrs: dict) -> None:
    x = _float_input(r)
    axis = r.const("axis", np.asarray([1], np.int64))
    norm = attrs.get("norm", "MAX")
    if norm == "MAX":
        size = r.op("ReduceMax", [x, axis], "size", {"keepdims": 1})
    elif norm == "L1":
        size = r.op("ReduceL1", [x, axis], "size", {"keepdims": 1})
    elif norm == "L2":
        size = r.op("ReduceL2", [x, axis], "size", {"keepdims": 1})
    else:
        raise r.refuse(f"norm {norm}")
    r.op("Div", [x, size], "normalized", out=r.output(0))


def _binarizer(r: Rewrite, attrs: dict) -> None:
    x = r.need(0, "X")
    above = r.op("Greater", [x, r.const("threshold", np.asarray(attrs.get("threshold", 0.0), x.dtype.np))], "above")
    r.op("Cast", [above], "binary", {"to": x.dtype}, out=r.output(0))


def _imputer(r: Rewrite, attrs: dict) -> None:
    x = r.need(0, "X")
    if "imputed_value_int64s" in attrs:
        raise r.refuse("integer imputation")
    values = np.asarray(attrs.get("imputed_value_floats", []), np.float32)
    replaced = float(attrs.get("replaced_value_float", np.nan))
    if np.isnan(replaced):  # NaN is the only value not equal to itself
        missing = r.op("Not", [r.op("Equal", [x, x], "same")], "missing")
    else:
        missing = r.op("Equal", [x, r.const("replaced", np.asarray(replaced, np.float32))], "missing")
    r.op("Where", [missing, r.const("imputed", values), x], "imputed", out=r.output(0))


def _array_feature_extractor(r: Rewrite, attrs: dict) -> None:
    x, indices = r.need(0, "X"), r.need(1, "Y")
    if x.type.rank == 1:
        x = r.op("Reshape", [x, r.const("as_row", np.asarray([1, -1], np.int64))], "x_2d")
    if indices.is_const:
        picks = np.asarray(indices.const, np.int64).reshape(-1)
        if np.any(picks < 0) or np.any(picks >= x.shape[-1]):
            raise ShapeError(f"node '{r.node.name}' (ArrayFeatureExtractor): an index is outside the last axis")
        indices = r.const("indices", picks)
    elif indices.type.rank != 1:
        raise r.refuse("run-time indices that are not one list")
    r.op("Gather", [x, indices], "picked", {"axis": -1}, out=r.output(0))


def _label_encoder(r: Rewrite, attrs: dict) -> None:
    keys = next((np.asarray(attrs[k]) for k in ("keys_tensor", "keys_int64s", "keys_floats") if k in attrs), None)
    values = next((np.asarray(attrs[k]) for k in ("values_tensor", "values_int64s", "values_floats") if k in attrs),
                  None)
    if keys is None or values is None:
        raise r.refuse("string keys or values (ember compiles numeric tensors)")
    if "keys_int64s" in attrs:
        keys = keys.astype(np.int64)
    if "values_int64s" in attrs:
        values = values.astype(np.int64)
    keys, values = keys.reshape(-1), values.reshape(-1)
    if keys.dtype.kind == "f":
        keys = keys.astype(np.float32)
    if values.dtype.kind == "f":
        values = values.astype(np.float32)
    default = next((attrs[k] for k in ("default_tensor", "default_int64", "default_float") if k in attrs), None)
    default = np.asarray(default if default is not None else (-1 if values.dtype.kind == "i" else -0.0)).reshape(-1)[0]
    order = np.argsort(keys, kind="stable")
    r.op("LabelEncoder", [r.need(0, "X"), r.const("keys", keys[order]), r.const("values", values[order])],
         "encoded", {"default": default.item()}, out=r.output(0))


register(ML, "TreeEnsembleRegressor", _tree_regressor)
register(ML, "TreeEnsembleClassifier", _tree_classifier)
register(ML, "TreeEnsemble", _tree_ensemble_v5, since=5)
register(ML, "LinearRegressor", _linear_regressor)
register(ML, "LinearClassifier", _linear_classifier)
register(ML, "Scaler", _scaler)
register(ML, "Normalizer", _normalizer)
register(ML, "Binarizer", _binarizer)
register(ML, "Imputer", _imputer)
register(ML, "ArrayFeatureExtractor", _array_feature_extractor)
register(ML, "LabelEncoder", _label_encoder, since=2)
def _tfidf_trie(r: Rewrite, attrs: dict) -> list[np.ndarray]:
    """The n-gram pool as a trie in tables (ember/ops/ml.py TfIdfVectorizer): value, child, sibling, out.
    N-gram ids count from 1 over all sizes in pool order, also over sizes outside [min, max]."""
    if attrs.get("pool_strings"):
        raise r.refuse("string pools (ember compiles numeric tensors)")
    pool = [int(v) for v in attrs.get("pool_int64s", [])]
    counts = [int(v) for v in attrs.get("ngram_counts", [])]
    indexes = [int(v) for v in attrs.get("ngram_indexes", [])]
    low, high = int(attrs["min_gram_length"]), int(attrs["max_gram_length"])
    root: dict = {}
    ids: dict[int, int] = {}  # trie node (by id()) -> n-gram id
    next_id = 1
    for size, start in enumerate(counts, start=1):
        end = counts[size] if size < len(counts) else len(pool)
        grams = max(end - start, 0) // size
        if not low <= size <= high:
            next_id += grams
            continue
        for g in range(grams):
            level = root
            for k, item in enumerate(pool[start + g * size: start + (g + 1) * size]):
                entry = level.setdefault(item, {})
                if k == size - 1:
                    ids[id(entry)] = next_id
                    next_id += 1
                level = entry
    values, child, sibling, out = [0], [-1], [-1], [-1]
    queue = [(root, 0)]
    while queue:  # breadth first: each node's children are consecutive, linked as siblings
        level, parent = queue.pop(0)
        previous = -1
        for item, entry in level.items():
            index = len(values)
            gram = ids.get(id(entry))
            if gram is not None and gram - 1 >= len(indexes):
                raise ShapeError(f"node '{r.node.name}' (TfIdfVectorizer): n-gram {gram} has no ngram_indexes entry")
            values.append(item)
            child.append(-1)
            sibling.append(-1)
            out.append(-1 if gram is None else indexes[gram - 1])
            if previous < 0:
                child[parent] = index
            else:
                sibling[previous] = index
            previous = index
            queue.append((entry, index))
    return [np.asarray(values, np.int64), np.asarray(child, np.int32), np.asarray(sibling, np.int32),
            np.asarray(out, np.int32)]


def _tfidf(r: Rewrite, attrs: dict) -> None:
    size = max((int(v) for v in attrs.get("ngram_indexes", [])), default=-1) + 1
    weights = np.asarray(attrs.get("weights", []), np.float32).reshape(-1)
    tables = _tfidf_trie(r, attrs)
    padded = np.zeros(max(size, 1), np.float32)
    padded[:min(weights.size, size)] = weights[:size]
    names = ("values", "children", "siblings", "columns")
    consts = [r.const(n, t) for n, t in zip(names, tables, strict=True)] + [r.const("weights", padded)]
    r.op("TfIdfVectorizer", [r.need(0, "X"), *consts], "tfidf",
         {"mode": attrs.get("mode", "TF"), "min_gram": int(attrs["min_gram_length"]),
          "max_gram": int(attrs["max_gram_length"]), "max_skip": int(attrs["max_skip_count"]), "size": size,
          "weighted": int(weights.size > 0)}, out=r.output(0))


register("", "TfIdfVectorizer", _tfidf, since=9)
ONNX_OPS[(ML, "ZipMap")] = OnnxOp("", refusal="its output is a sequence of maps; convert without it "
                                              "(skl2onnx: options={id(model): {'zipmap': False}})")

from ember.frontends.onnx import ml_svm  # noqa: E402, F401 - the SVMs register themselves
