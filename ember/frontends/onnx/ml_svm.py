"""ai.onnx.ml SVMRegressor and SVMClassifier as float ops.

The kernel values K [N, V] between the rows and the V support vectors are one MatMul (linear, poly,
sigmoid) or a distance expansion |x|² - 2 x·sv + |sv|² (rbf). libsvm's one-vs-one decision values of all
class pairs are then one more MatMul: pair (i, j) sums class i's vectors with coefficient row j - 1 and class
j's vectors with row i, a [V, pairs] matrix fixed at compile time. Votes, labels and scores follow
onnxruntime's SVMClassifier. Probability estimates (prob_a/prob_b: an iterative pairwise coupling) are
refused with a one-line error.
"""

from __future__ import annotations

import numpy as np

from ember.frontends.onnx.ml import ML, _float_input, _post_transform
from ember.frontends.onnx.rewrite import Rewrite, register
from ember.ir.dtypes import DType
from ember.ir.graph import Value


def _kernel(r: Rewrite, x: Value, vectors: np.ndarray, attrs: dict) -> Value:
    """K [N, V]: the kernel of every row of x with every support vector."""
    params = list(attrs.get("kernel_params", [])) + [0.0, 0.0, 0.0]
    gamma, coef0, degree = float(params[0]), float(params[1]), int(params[2])
    kind = str(attrs.get("kernel_type", "LINEAR")).upper()
    dot = r.op("MatMul", [x, r.const("support_t", np.ascontiguousarray(vectors.T))], "dot")
    if kind == "LINEAR":
        return dot

    def affine(v: Value) -> Value:
        scaled = r.op("Mul", [v, r.const("gamma", np.asarray(gamma, np.float32))], "gamma_dot")
        return r.op("Add", [scaled, r.const("coef0", np.asarray(coef0, np.float32))], "affine")

    if kind == "POLY":
        return r.op("Pow", [affine(dot), r.const("degree", np.asarray(float(degree), np.float32))], "poly")
    if kind == "SIGMOID":
        return r.op("Tanh", [affine(dot)], "sigmoid")
    if kind == "RBF":
        squares = r.op("ReduceSumSquare", [x, r.const("feature_axis", np.asarray([1], np.int64))], "x_sq",
                       {"keepdims": 1})
        sv_squares = r.const("sv_sq", (vectors.astype(np.float64) ** 2).sum(1).astype(np.float32).reshape(1, -1))
        cross = r.op("Mul", [dot, r.const("minus_two", np.asarray(-2.0, np.float32))], "cross")
        distance = r.op("Add", [r.op("Add", [squares, cross], "partial"), sv_squares], "distance")
        # Rounding can leave a tiny negative distance for a row equal to a support vector.
        distance = r.op("Max", [distance, r.const("zero", np.asarray(0.0, np.float32))], "distance_pos")
        return r.op("Exp", [r.op("Mul", [distance, r.const("neg_gamma", np.asarray(-gamma, np.float32))],
                                 "scaled")], "rbf")
    raise r.refuse(f"kernel_type {kind}")


def _svm_regressor(r: Rewrite, attrs: dict) -> None:
    x = _float_input(r)
    coefficients = np.asarray(attrs["coefficients"], np.float32)
    rho = float(np.asarray(attrs.get("rho", [0.0]), np.float32).reshape(-1)[0])
    supports = int(attrs.get("n_supports", 0))
    if supports > 0:
        vectors = np.asarray(attrs["support_vectors"], np.float32).reshape(supports, -1)
        k = _kernel(r, x, vectors, attrs)
        s = r.op("MatMul", [k, r.const("dual", coefficients.reshape(supports, 1))], "decision")
    else:  # linear mode: the coefficients are the weights
        s = r.op("MatMul", [x, r.const("weights", coefficients.reshape(-1, 1))], "decision")
    s = r.op("Add", [s, r.const("rho", np.asarray(rho, np.float32))], "shifted")
    if attrs.get("one_class", 0):  # +1 inside, -1 outside
        inside = r.op("Greater", [s, r.const("zero", np.asarray(0.0, np.float32))], "inside")
        r.op("Where", [inside, r.const("plus", np.asarray(1.0, np.float32)),
                       r.const("minus", np.asarray(-1.0, np.float32))], "side", out=r.output(0))
        return
    _post_transform(r, s, attrs.get("post_transform", "NONE"), r.output(0))


def _pairs(per_class: list[int], coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The [V, pairs] matrix of the one-vs-one decision values, and the [pairs, classes] vote matrices for a
    positive and for a non-positive decision."""
    starts = np.cumsum([0, *per_class])
    classes = len(per_class)
    pairs = [(i, j) for i in range(classes) for j in range(i + 1, classes)]
    m = np.zeros((int(starts[-1]), len(pairs)), np.float32)
    win, lose = np.zeros((len(pairs), classes), np.float32), np.zeros((len(pairs), classes), np.float32)
    for p, (i, j) in enumerate(pairs):
        m[starts[i]:starts[i + 1], p] = coefficients[j - 1, starts[i]:starts[i + 1]]
        m[starts[j]:starts[j + 1], p] = coefficients[i, starts[j]:starts[j + 1]]
        win[p, i], lose[p, j] = 1.0, 1.0
    return m, win, lose


def _svm_classifier(r: Rewrite, attrs: dict) -> None:
    if "prob_a" in attrs and len(attrs["prob_a"]):
        raise r.refuse("probability estimates (prob_a/prob_b); convert an SVC trained with probability=False")
    if "classlabels_strings" in attrs:
        raise r.refuse("string class labels (ember compiles numeric tensors: convert with integer labels)")
    labels = np.asarray(attrs.get("classlabels_ints", []), np.int64)
    per_class = [int(v) for v in attrs.get("vectors_per_class", [])]
    if not per_class or sum(per_class) == 0:
        raise r.refuse("linear mode (no support vectors)")
    x = _float_input(r)
    vectors = np.asarray(attrs["support_vectors"], np.float32).reshape(sum(per_class), -1)
    coefficients = np.asarray(attrs["coefficients"], np.float32).reshape(-1, sum(per_class))
    if np.all(coefficients >= 0):
        raise r.refuse("dual coefficients that are all non-negative")
    rho = np.asarray(attrs["rho"], np.float32).reshape(1, -1)
    m, win, lose = _pairs(per_class, coefficients)
    k = _kernel(r, x, vectors, attrs)
    decisions = r.op("Add", [r.op("MatMul", [k, r.const("pairs", m)], "pair_sums"), r.const("rho", rho)], "decisions")
    transform = attrs.get("post_transform", "NONE")
    if rho.size == 1:  # two classes: scores [-s, s]; the first label wins where s > 0 (libsvm's order)
        negated = r.op("Neg", [decisions], "negated")
        scores = r.op("Concat", [negated, decisions], "binary", {"axis": 1})
        _post_transform(r, scores, transform, r.output(1))
        if r.output(0) is not None:
            positive = r.op("Greater", [decisions, r.const("zero", np.asarray(0.0, np.float32))], "positive")
            flat = r.op("Reshape", [positive, r.const("flat", np.asarray([-1], np.int64))], "positive_flat")
            r.op("Where", [flat, r.const("first", labels[:1].reshape(())), r.const("second", labels[1:2].reshape(()))],
                 "label", out=r.output(0))
        return
    _post_transform(r, decisions, transform, r.output(1))
    if r.output(0) is not None:
        positive = r.op("Cast", [r.op("Greater", [decisions, r.const("zero", np.asarray(0.0, np.float32))],
                                      "positive")], "positive_f", {"to": DType.FLOAT32})
        negative = r.op("Sub", [r.const("one", np.asarray(1.0, np.float32)), positive], "negative_f")
        votes = r.op("Add", [r.op("MatMul", [positive, r.const("win", win)], "won"),
                             r.op("MatMul", [negative, r.const("lose", lose)], "lost")], "votes")
        best = r.op("ArgMax", [votes], "best", {"axis": 1, "keepdims": 0})
        r.op("Gather", [r.const("labels", labels), best], "label", {"axis": 0}, out=r.output(0))


register(ML, "SVMRegressor", _svm_regressor)
register(ML, "SVMClassifier", _svm_classifier)
