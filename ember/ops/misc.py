"""Ops folded away or removed before code generation, and the internal Copy and BFloat16ToFloat."""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import const_ints, inp, same_as_input, scalar, typed
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _lower_copy(node: Node, k: KernelEmitter) -> None:
    src, dst = node.inputs[0], node.outputs[0]
    assert src is not None and dst is not None
    if not k.same_buffer(src, dst):
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), dst.type.nbytes)


# Internal: copies a tensor into a graph output's own slot.
register(OpDef("Copy", lower=_lower_copy, kernels=("ember_copy",), infer=same_as_input, int8=Int8.SELECT))


def _infer_bf16(node: Node) -> list[TensorType]:
    x = node.inputs[0]
    assert x is not None
    return [TensorType(DType.FLOAT32, x.shape)]


def _lower_bf16(node: Node, k: KernelEmitter) -> None:
    out = node.outputs[0]
    assert out is not None
    k.call("ember_bf16_to_f32", k.out(0, "uint32_t"), k.inp(0, "uint16_t"), out.type.numel)


# Internal (--weights bf16, ember/quant/weights.py): bfloat16 bits stored as uint16, widened to float32.
register(OpDef("BFloat16ToFloat", infer=_infer_bf16, lower=_lower_bf16, kernels=("ember_bf16_to_f32",)))

def _constant_value(node: Node) -> np.ndarray:
    return np.asarray(node.attrs["value"])


# Attribute `value`: the tensor (a numpy array).
register(OpDef("Constant", infer=lambda n: [typed(DType.from_numpy(_constant_value(n).dtype),
                                                  _constant_value(n).shape)],
               evaluate=lambda n, xs: [_constant_value(n).copy()]))
register(OpDef("Identity", infer=same_as_input, evaluate=lambda n, xs: [np.asarray(xs[0]).copy()], int8=Int8.MOVE,
               data={"storage_types": True}))


def _infer_dropout(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    mask = node.outputs[1] if len(node.outputs) > 1 else None
    return [TensorType(x.dtype, x.shape), TensorType(DType.BOOL, x.shape) if mask is not None else None]


def _normalize_dropout(node: Node, graph: Graph) -> None:
    """Inference Dropout is the identity (removed by a pass); its optional mask is all true."""
    training = bool(scalar(node.input(2), False))
    ratio = float(scalar(node.input(1), 0.5))
    if training and ratio != 0.0:
        raise UnsupportedOperatorError("Dropout", node.name, "training mode (random masks) is not compiled")
    mask = node.outputs[1] if len(node.outputs) > 1 else None
    if mask is not None:
        mask.const = np.ones(mask.shape, dtype=mask.dtype.np)
        mask.producer = None


# Inputs: (X, ratio (optional scalar), training_mode (optional bool scalar)); outputs (Y, mask).
register(OpDef("Dropout", shape_inputs=(1, 2), normalize=_normalize_dropout, infer=_infer_dropout,
               evaluate=lambda n, xs: [np.asarray(xs[0]).copy(), np.ones(np.shape(xs[0]), bool)][:len(n.outputs)]))


def _fold_shape(node: Node) -> list[np.ndarray]:
    x = node.inputs[0]
    assert x is not None
    rank = len(x.shape)
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return [np.array(x.shape[start:end], dtype=np.int64)]


def _fold_size(node: Node) -> list[np.ndarray]:
    x = node.inputs[0]
    assert x is not None
    return [np.array(x.type.numel, dtype=np.int64)]


def _typed_fold(fold):
    def infer(node: Node) -> list[TensorType | None]:
        (arr,) = fold(node)
        return [typed(DType.INT64, arr.shape)]

    return infer


def _fill(node: Node) -> np.ndarray:
    value = np.asarray(node.attrs.get("value", np.zeros(1, np.float32))).reshape(-1)[:1]
    return np.full(const_ints(node, 0) or [], value[0] if value.size else 0, value.dtype)


def _range(node: Node, xs: list[np.ndarray | None]) -> np.ndarray:
    start, limit, delta = (np.asarray(x).reshape(-1)[0] for x in xs[:3])
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return (start + np.arange(n) * delta).astype(np.asarray(xs[0]).dtype)


def _infer_range(node: Node) -> list[TensorType | None]:
    xs = [inp(node, i) for i in range(3)]
    for v in xs:
        if v.const is None:
            raise ShapeError(f"node '{node.name}' (Range): input '{v.name}' must be a compile-time constant")
    return [typed(xs[0].dtype, _range(node, [v.const for v in xs]).shape)]


register(OpDef("Shape", fold=_fold_shape, infer=_typed_fold(_fold_shape), evaluate=lambda n, xs: _fold_shape(n)))
register(OpDef("Size", fold=_fold_size, infer=_typed_fold(_fold_size), evaluate=lambda n, xs: _fold_size(n)))
# Input: the shape (int64). Attribute `value`: a one-element array giving value and dtype (float32 0).
register(OpDef("ConstantOfShape", shape_inputs=(0,),
               infer=lambda n: [typed(DType.from_numpy(_fill(n).dtype), _fill(n).shape)],
               evaluate=lambda n, xs: [_fill(n)]))
# Inputs: (start, limit, delta) scalars.
register(OpDef("Range", shape_inputs=(0, 1, 2), infer=_infer_range, evaluate=lambda n, xs: [_range(n, xs)]))
