"""Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (kernels in kernels/loss.c).

Both take scores X [N, C, d1..dk] and class indices `target` [N, d1..dk] (int32 or int64, run-time
data), an optional per-class `weight` [C], the attributes `reduction` ("none", "sum", "mean"; default
"mean") and `ignore_index` (optional). The loss of element (n, d) is -X[n, target, d] * weight[target],
0 where target == ignore_index. "mean" divides the weighted sum by the sum of the weights of the targets
that were not ignored (the ONNX reference's formula: NaN when every target is ignored).

Targets are run-time data, so the kernel checks each one: a class index outside [0, C) that is not the
ignore_index reads nothing and gives a NaN loss (NaN weight too), which then shows in any reduction.

SoftmaxCrossEntropyLoss is LogSoftmax along axis 1 followed by the same loss; its optional second output
`log_prob` is that LogSoftmax (written to scratch memory when the model does not ask for it).
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}
_FLOATS = {DType.FLOAT32: "f32", DType.FLOAT64: "f64"}
_TARGETS = {DType.INT32: "i32", DType.INT64: "i64"}


def _reduction(node: Node) -> str:
    r = node.attrs.get("reduction", "mean")
    r = r.decode() if isinstance(r, bytes) else str(r)
    if r not in _REDUCTIONS:
        raise UnsupportedOperatorError(node.op, node.name, f"reduction '{r}' (none, sum or mean)")
    return r


def _dims(node: Node) -> tuple[int, int, int]:
    """(N, C, D): batch, classes and the product of the trailing dims d1..dk (1 when there are none)."""
    x = inp(node, 0)
    return x.shape[0], x.shape[1], math.prod(x.shape[2:])


def _check(node: Node) -> None:
    x, target = inp(node, 0), inp(node, 1)
    if x.dtype not in _FLOATS:
        raise UnsupportedOperatorError(node.op, node.name, f"{x.dtype.short} scores (float32 or float64)")
    if target.dtype not in _TARGETS:
        raise UnsupportedOperatorError(node.op, node.name, f"{target.dtype.short} target (int32 or int64)")
    if x.type.rank < 2:
        raise ShapeError(f"node '{node.name}' ({node.op}): scores {list(x.shape)} need shape [N, C, d1..dk]")
    want = (x.shape[0], *x.shape[2:])
    if tuple(target.shape) != want:
        raise ShapeError(f"node '{node.name}' ({node.op}): target {list(target.shape)} does not match scores "
                         f"{list(x.shape)} (expected {list(want)})")
    weight = node.input(2)
    if weight is not None and (tuple(weight.shape) != (x.shape[1],) or weight.dtype is not x.dtype):
        raise ShapeError(f"node '{node.name}' ({node.op}): weight {weight.dtype.short}{list(weight.shape)} must "
                         f"be {x.dtype.short}[{x.shape[1]}]")
    _reduction(node)


def _loss_type(node: Node) -> TensorType:
    x, target = inp(node, 0), inp(node, 1)
    return typed(x.dtype, target.shape if _reduction(node) == "none" else ())


def _infer_nll(node: Node) -> list[TensorType | None]:
    _check(node)
    return [_loss_type(node)]


def _infer_sce(node: Node) -> list[TensorType | None]:
    _check(node)
    x = inp(node, 0)
    log_prob = node.outputs[1] if len(node.outputs) > 1 else None
    return [_loss_type(node), typed(x.dtype, x.shape) if log_prob is not None else None]


# ---- numpy (constant folding) --------------------------------------------------------------------
def nll_numpy(node: Node, logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    n, c = logp.shape[0], logp.shape[1]
    x3 = logp.reshape(n, c, -1)
    t2 = target.reshape(n, -1).astype(np.int64)
    ignore = node.attrs.get("ignore_index")
    ignored = np.zeros(t2.shape, bool) if ignore is None else t2 == int(ignore)
    valid = (t2 >= 0) & (t2 < c) & ~ignored
    safe = np.where(valid, t2, 0)
    picked = np.take_along_axis(x3, safe[:, None, :], axis=1)[:, 0, :]
    w = np.ones(t2.shape, logp.dtype) if weight is None else np.asarray(weight)[safe]
    bad = ~valid & ~ignored  # out-of-range class index: NaN (see the module docstring)
    w = np.where(ignored, 0, np.where(bad, np.nan, w)).astype(logp.dtype)
    loss = np.where(valid, -picked * w, np.where(bad, np.nan, 0)).astype(logp.dtype)
    r = _reduction(node)
    with np.errstate(all="ignore"):
        if r == "none":
            return loss.reshape(target.shape)
        total = loss.sum(dtype=logp.dtype)
        return np.asarray(total if r == "sum" else total / w.sum(dtype=logp.dtype), logp.dtype)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=1, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))).astype(x.dtype)


def _eval_nll(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [nll_numpy(node, np.asarray(xs[0]), np.asarray(xs[1]), None if len(xs) < 3 else xs[2])]


def _eval_sce(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    logp = _log_softmax(np.asarray(xs[0]))
    loss = nll_numpy(node, logp, np.asarray(xs[1]), None if len(xs) < 3 else xs[2])
    return [loss, logp] if len(node.outputs) > 1 and node.outputs[1] is not None else [loss]


# ---- lowering ------------------------------------------------------------------------------------
def _emit_nll(node: Node, k: KernelEmitter, logp: str) -> None:
    x, target = inp(node, 0), inp(node, 1)
    n, c, d = _dims(node)
    ignore = node.attrs.get("ignore_index")
    fn = f"ember_nll_loss_{_FLOATS[x.dtype]}_{_TARGETS[target.dtype]}"
    k.call(fn, k.out(0), logp, k.inp(1), k.inp(2, x.dtype.ctype), n, c, d, int(ignore is not None),
           literal(0 if ignore is None else int(ignore), DType.INT64), _REDUCTIONS[_reduction(node)])


def _lower_nll(node: Node, k: KernelEmitter) -> None:
    _check(node)
    _emit_nll(node, k, k.inp(0))


def _sce_scratch(node: Node) -> int:
    wants_log_prob = len(node.outputs) > 1 and node.outputs[1] is not None
    return 0 if wants_log_prob else inp(node, 0).type.nbytes


def _lower_sce(node: Node, k: KernelEmitter) -> None:
    _check(node)
    x = inp(node, 0)
    n, c, d = _dims(node)
    ct = x.dtype.ctype
    logp = k.out(1) if _sce_scratch(node) == 0 else k.scratch(ct)
    if x.type.numel:
        k.call(f"ember_log_softmax_{_FLOATS[x.dtype]}", logp, k.inp(0), n, c, d)
    _emit_nll(node, k, logp)


def _kernels(prefix: str = "") -> tuple[str, ...]:
    return tuple(f"{prefix}ember_nll_loss_{f}_{t}" for f in _FLOATS.values() for t in _TARGETS.values())


# Inputs: (input [N, C, d1..dk], target [N, d1..dk] int32/int64, weight [C] (optional)).
# Attributes: reduction ("mean"), ignore_index (optional).
register(OpDef("NegativeLogLikelihoodLoss", infer=_infer_nll, evaluate=_eval_nll, lower=_lower_nll,
               kernels=_kernels()))
# Same inputs and attributes; outputs (loss, log_prob (optional, the LogSoftmax of input along axis 1)).
register(OpDef("SoftmaxCrossEntropyLoss", infer=_infer_sce, evaluate=_eval_sce, lower=_lower_sce,
               scratch=_sce_scratch, kernels=(*_kernels(), "ember_log_softmax_f32", "ember_log_softmax_f64")))
