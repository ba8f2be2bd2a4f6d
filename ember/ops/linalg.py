"""Det: determinants of the trailing square matrices (float16 / float32 / float64), kernels/linalg.c."""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import inp, typed
from ember.ops.matmul import float16_via_f32
from ember.ops.movement import fill_value_table
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def _infer_det(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    if x.type.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"node '{node.name}' (Det): input {list(x.shape)} is not a stack of square matrices")
    return [typed(x.dtype, x.shape[:-2])]


def _normalize_det(node: Node, graph: Graph) -> None:
    del graph
    x = inp(node, 0)
    if x.dtype not in (DType.FLOAT16, DType.FLOAT32, DType.FLOAT64):
        raise UnsupportedOperatorError(node.op, node.name, f"element type {x.dtype.short} (float types only)")


def _elem(node: Node) -> int:
    return 8 if inp(node, 0).dtype is DType.FLOAT64 else 4


def _scratch_det(node: Node) -> int:
    n = inp(node, 0).shape[-1]
    return n * n * _elem(node)


def _lower_det(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    batch, n = math.prod(x.shape[:-2]), x.shape[-1]
    if batch == 0:
        return
    if n == 0:  # the determinant of an empty matrix is 1
        one = fill_value_table(k, 1.0, DType.FLOAT64 if x.dtype is DType.FLOAT64 else DType.FLOAT32)
        k.call("ember_fill", k.out(0, "uint8_t"), one, _elem(node), batch)
        return
    f64 = x.dtype is DType.FLOAT64
    k.call("ember_det_f64" if f64 else "ember_det_f32", k.out(0), k.inp(0), batch, n,
           k.scratch("double" if f64 else "float"))


def _eval_det(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    return [np.asarray(np.linalg.det(x), x.dtype)]


# Input: X (..., M, M). Output: the determinants (...).
register(float16_via_f32(OpDef("Det", lower=_lower_det, infer=_infer_det, normalize=_normalize_det,
                               scratch=_scratch_det, evaluate=_eval_det,
                               kernels=("ember_det_f32", "ember_det_f64", "ember_fill"))))
