"""Classic machine learning (the ai.onnx.ml models of scikit-learn, LightGBM and XGBoost converters):
TreeEnsemble and LabelEncoder. Linear models, SVMs, scalers and normalizers are graphs of the float ops; the
ONNX frontend (frontends/onnx/ml.py) builds them.

TreeEnsemble's canonical form holds every tree as tables (constant inputs, planned in the weights region):
    X [N, F] float32; tree_roots [T] int32 (a node index per tree);
    per internal node: featureids int32, splits (float32 or float64: comparisons run in this type), modes
    uint8 (0 x <= split, 1 <, 2 >=, 3 >, 4 ==, 5 !=), truenodeids / falsenodeids int32 with trueleafs /
    falseleafs uint8 (1: the id is a leaf's, 0: a node's), missing_tracks_true uint8 (where a NaN goes);
    per leaf l: the weights leaf_weights[leaf_start[l] .. leaf_start[l + 1]) (splits' type), each added to
    target leaf_targetids[...].
Attributes: aggregate ("SUM", "AVERAGE", "MIN", "MAX"), n_targets. Output: [N, n_targets] float32 scores,
before base values and post transforms (the frontend adds those as ops).
"""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

AGGREGATES = ("SUM", "AVERAGE", "MIN", "MAX")
# Input slots of the canonical TreeEnsemble.
(X, ROOTS, FEATURES, SPLITS, MODES, TRUE_IDS, FALSE_IDS, TRUE_LEAFS, FALSE_LEAFS, MISSING_TRUE, LEAF_START,
 LEAF_TARGETS, LEAF_WEIGHTS) = range(13)
_INDEX_TABLES = (ROOTS, FEATURES, TRUE_IDS, FALSE_IDS, LEAF_START, LEAF_TARGETS)
_FLAG_TABLES = (MODES, TRUE_LEAFS, FALSE_LEAFS, MISSING_TRUE)


def _tables(node: Node) -> dict[int, np.ndarray]:
    tables = {}
    for i in range(ROOTS, LEAF_WEIGHTS + 1):
        v = inp(node, i)
        if v.const is None:
            raise ShapeError(f"node '{node.name}' (TreeEnsemble): table input {i} must be a constant")
        tables[i] = np.asarray(v.const)
    return tables


def _has_cycle(t: dict[int, np.ndarray]) -> bool:
    """Whether some walk through the internal nodes comes back to a node (the C walk would never end)."""
    state = np.zeros(t[FEATURES].size, np.int8)  # 0 unseen, 1 on the current path, 2 done
    for root in t[ROOTS]:
        stack = [(int(root), 0)]
        while stack:
            n, child = stack.pop()
            if child == 0:
                if state[n] == 2:
                    continue
                state[n] = 1
            if child == 2:
                state[n] = 2
                continue
            stack.append((n, child + 1))
            ids, leafs = (t[TRUE_IDS], t[TRUE_LEAFS]) if child == 0 else (t[FALSE_IDS], t[FALSE_LEAFS])
            if not leafs[n]:
                nxt = int(ids[n])
                if state[nxt] == 1:
                    return True
                if state[nxt] == 0:
                    stack.append((nxt, 0))
    return False


def _infer_trees(node: Node) -> list[TensorType | None]:
    x = inp(node, X)
    if x.type.rank != 2 or x.dtype not in (DType.FLOAT32, DType.FLOAT64):
        raise ShapeError(f"node '{node.name}' (TreeEnsemble): X must be float32/64 [rows, features], "
                         f"not {x.dtype.short}{list(x.shape)}")
    t = _tables(node)
    nodes, leaves, features = t[FEATURES].size, t[LEAF_START].size - 1, x.shape[1]
    for i, table in t.items():
        if i in _INDEX_TABLES and table.dtype != np.int32 or i in _FLAG_TABLES and table.dtype != np.uint8:
            raise ShapeError(f"node '{node.name}' (TreeEnsemble): table input {i} has type {table.dtype}")
    for ids, is_leaf in ((t[TRUE_IDS], t[TRUE_LEAFS]), (t[FALSE_IDS], t[FALSE_LEAFS])):
        bound = np.where(is_leaf != 0, leaves, nodes)
        if ids.size != nodes or np.any(ids < 0) or np.any(ids >= bound):
            raise ShapeError(f"node '{node.name}' (TreeEnsemble): a branch points outside the tree tables")
    if (np.any(t[ROOTS] < 0) or np.any(t[ROOTS] >= max(nodes, 1)) or np.any(t[FEATURES] < 0)
            or np.any(t[FEATURES] >= features) or np.any(t[MODES] > 5)):
        raise ShapeError(f"node '{node.name}' (TreeEnsemble): a root, feature id or mode is out of range")
    if _has_cycle(t):
        raise ShapeError(f"node '{node.name}' (TreeEnsemble): the branches form a cycle")
    start, targets = t[LEAF_START], t[LEAF_TARGETS]
    n_targets = int(node.attrs["n_targets"])
    if (start.size < 1 or start[0] != 0 or np.any(np.diff(start) < 0) or start[-1] != targets.size
            or targets.size != t[LEAF_WEIGHTS].size or np.any(targets < 0) or np.any(targets >= n_targets)):
        raise ShapeError(f"node '{node.name}' (TreeEnsemble): the leaf tables are inconsistent")
    if t[SPLITS].dtype != t[LEAF_WEIGHTS].dtype or t[SPLITS].dtype not in (np.float32, np.float64):
        raise ShapeError(f"node '{node.name}' (TreeEnsemble): splits and weights must both be float32 or float64")
    if node.attrs.get("aggregate", "SUM") not in AGGREGATES:
        raise UnsupportedOperatorError("TreeEnsemble", node.name, f"aggregate {node.attrs['aggregate']}")
    return [typed(x.dtype, (x.shape[0], n_targets))]


def _suffix(node: Node) -> str:
    """Kernel variant: the features' type, then the type comparisons and sums run in."""
    x, s = inp(node, X).dtype, inp(node, SPLITS).dtype
    return f"{x.suffix}_{'f64' if DType.FLOAT64 in (x, s) else 'f32'}"


def _scratch_trees(node: Node) -> int:
    return int(node.attrs["n_targets"]) * (8 if _suffix(node).endswith("f64") else 4) * 2


def _lower_trees(node: Node, k: KernelEmitter) -> None:
    x = inp(node, X)
    scalar = "double" if _suffix(node).endswith("f64") else "float"
    if inp(node, SPLITS).dtype is DType.FLOAT32 and scalar == "double":  # float tables, double features
        raise UnsupportedOperatorError("TreeEnsemble", node.name, "float32 splits with float64 features")
    k.call(f"ember_tree_ensemble_{_suffix(node)}", k.out(0), k.inp(X), x.shape[0], x.shape[1],
           int(node.attrs["n_targets"]), inp(node, ROOTS).type.numel, k.inp(ROOTS), k.inp(FEATURES), k.inp(SPLITS),
           k.inp(MODES), k.inp(TRUE_IDS), k.inp(FALSE_IDS), k.inp(TRUE_LEAFS), k.inp(FALSE_LEAFS),
           k.inp(MISSING_TRUE), k.inp(LEAF_START), k.inp(LEAF_TARGETS), k.inp(LEAF_WEIGHTS),
           AGGREGATES.index(node.attrs.get("aggregate", "SUM")), k.scratch(scalar))


def _leaf_of_tree(t: dict[int, np.ndarray], root: int, row: np.ndarray) -> int:
    index = root
    while True:
        v = row[t[FEATURES][index]].astype(t[SPLITS].dtype)
        split, mode = t[SPLITS][index], t[MODES][index]
        if np.isnan(v):
            go_true = bool(t[MISSING_TRUE][index])
        else:
            go_true = bool((v <= split, v < split, v >= split, v > split, v == split, v != split)[mode])
        ids, leafs = (t[TRUE_IDS], t[TRUE_LEAFS]) if go_true else (t[FALSE_IDS], t[FALSE_LEAFS])
        if leafs[index]:
            return int(ids[index])
        index = int(ids[index])


def _eval_trees(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    t = _tables(node)
    x = np.asarray(xs[X])
    aggregate = node.attrs.get("aggregate", "SUM")
    n_targets = int(node.attrs["n_targets"])
    out = np.zeros((x.shape[0], n_targets), t[SPLITS].dtype)
    for r, row in enumerate(x):
        hit = np.zeros(n_targets, bool)
        for root in t[ROOTS]:
            leaf = _leaf_of_tree(t, int(root), row)
            for e in range(t[LEAF_START][leaf], t[LEAF_START][leaf + 1]):
                j, w = t[LEAF_TARGETS][e], t[LEAF_WEIGHTS][e]
                if aggregate in ("SUM", "AVERAGE") or not hit[j]:
                    out[r, j] = out[r, j] + w if aggregate in ("SUM", "AVERAGE") else w
                else:
                    out[r, j] = min(out[r, j], w) if aggregate == "MIN" else max(out[r, j], w)
                hit[j] = True
    if aggregate == "AVERAGE":
        out /= max(t[ROOTS].size, 1)
    return [out.astype(x.dtype)]


register(OpDef("TreeEnsemble", infer=_infer_trees, lower=_lower_trees, evaluate=_eval_trees, scratch=_scratch_trees,
               shape_inputs=tuple(range(ROOTS, LEAF_WEIGHTS + 1)),
               kernels=("ember_tree_ensemble_f32_f32", "ember_tree_ensemble_f32_f64", "ember_tree_ensemble_f64_f64")))


# ---- LabelEncoder (numeric) ------------------------------------------------------------------------
# Inputs: (X, keys: sorted constant, values: constant of the keys' length). Attribute: default (a scalar of
# the values' type). Each element of X becomes the value of its key, or `default`.

def _infer_label_encoder(node: Node) -> list[TensorType | None]:
    x, keys, values = inp(node, 0), inp(node, 1), inp(node, 2)
    if keys.const is None or values.const is None or keys.type.numel != values.type.numel:
        raise ShapeError(f"node '{node.name}' (LabelEncoder): keys and values must be constants of one length")
    if keys.dtype is not x.dtype:
        raise ShapeError(f"node '{node.name}' (LabelEncoder): keys are {keys.dtype.short}, X is {x.dtype.short}")
    if np.any(np.diff(np.asarray(keys.const).reshape(-1)) <= 0):
        raise ShapeError(f"node '{node.name}' (LabelEncoder): keys must be sorted and distinct")
    return [typed(values.dtype, x.shape)]


_ENCODER_TYPES = {DType.INT64: "s64", DType.FLOAT32: "f32", DType.INT32: "s32"}


def _lower_label_encoder(node: Node, k: KernelEmitter) -> None:
    x, values, y = inp(node, 0), inp(node, 2), node.outputs[0]
    assert y is not None
    if x.dtype not in _ENCODER_TYPES or values.dtype not in _ENCODER_TYPES:
        raise UnsupportedOperatorError("LabelEncoder", node.name, f"{x.dtype.short} -> {values.dtype.short}")
    fn = f"ember_label_encode_{_ENCODER_TYPES[x.dtype]}_{_ENCODER_TYPES[values.dtype]}"
    k.call(fn, k.out(0), k.inp(0), x.type.numel, k.inp(1), k.inp(2), values.type.numel,
           literal(node.attrs.get("default", 0), values.dtype))


def _eval_label_encoder(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x, keys, values = (np.asarray(a) for a in xs[:3])
    table = dict(zip(keys.reshape(-1).tolist(), values.reshape(-1).tolist(), strict=True))
    default = node.attrs.get("default", 0)
    return [np.vectorize(lambda v: table.get(v, default), otypes=[values.dtype])(x).astype(values.dtype)]


register(OpDef("LabelEncoder", infer=_infer_label_encoder, lower=_lower_label_encoder, evaluate=_eval_label_encoder,
               shape_inputs=(1, 2),
               kernels=tuple(f"ember_label_encode_{a}_{b}" for a in _ENCODER_TYPES.values()
                             for b in _ENCODER_TYPES.values())))


# ---- TfIdfVectorizer ---------------------------------------------------------------------------------
# Inputs: (X int32/int64 [C] or [B, C], then the n-gram trie as constants: value int64 [T], child int32 [T]
# (first child, -1: none), sibling int32 [T] (next sibling, -1: none), out int32 [T] (output column, -1: not a
# counted n-gram), and weights float32 [O]). Node 0 is the root. Attributes: mode ("TF", "IDF", "TFIDF"),
# min_gram, max_gram, max_skip, size (O), weighted (whether `weights` are given). Output float32 [O] or [B, O].
_TFIDF_MODES = ("TF", "IDF", "TFIDF")


def _infer_tfidf(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    if x.dtype not in (DType.INT32, DType.INT64) or x.type.rank not in (1, 2):
        raise ShapeError(f"node '{node.name}' (TfIdfVectorizer): X must be int32/int64 [C] or [B, C], "
                         f"not {x.dtype.short}{list(x.shape)}")
    tables = [inp(node, i) for i in range(1, 6)]
    if any(t.const is None for t in tables) or node.attrs.get("mode") not in _TFIDF_MODES:
        raise ShapeError(f"node '{node.name}' (TfIdfVectorizer): the n-gram tables must be constants")
    size = int(node.attrs["size"])
    return [typed(DType.FLOAT32, (size,) if x.type.rank == 1 else (x.shape[0], size))]


def _lower_tfidf(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    rows, cols = (1, x.shape[0]) if x.type.rank == 1 else x.shape
    k.call(f"ember_tfidf_{x.dtype.suffix}", k.out(0), k.inp(0), rows, cols, k.inp(1), k.inp(2), k.inp(3), k.inp(4),
           k.inp(5), int(node.attrs["size"]), _TFIDF_MODES.index(node.attrs["mode"]), int(node.attrs["weighted"]),
           int(node.attrs["min_gram"]), int(node.attrs["max_gram"]), int(node.attrs["max_skip"]))


register(OpDef("TfIdfVectorizer", infer=_infer_tfidf, lower=_lower_tfidf, shape_inputs=(1, 2, 3, 4, 5),
               kernels=("ember_tfidf_s32", "ember_tfidf_s64")))
