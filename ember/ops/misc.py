"""Ops folded away or removed before code generation, and the internal Copy and BFloat16ToFloat."""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _lower_copy(node: Node, k: KernelEmitter) -> None:
    src, dst = node.inputs[0], node.outputs[0]
    assert src is not None and dst is not None
    if not k.same_buffer(src, dst):
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), dst.type.nbytes)


# Internal: copies a tensor into a graph output's own slot.
register(OpDef("Copy", lower=_lower_copy, kernels=("ember_copy",), int8=Int8.SELECT))


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

register(OpDef("Constant", onnx=("Constant",), tests=(r"test_constant$",)))
register(OpDef("Identity", onnx=("Identity",), tests=(r"test_identity$",), excluded={
    r"test_identity_opt": "optional types are not supported (ember compiles tensors only)",
    r"test_identity_sequence": "sequence types are not supported (ember compiles tensors only)",
}, int8=Int8.MOVE))
# Only Ifs whose condition folds to a constant are compiled: the loader inlines the taken branch.
register(OpDef("If", onnx=("If",), tests=(r"test_if$",), excluded={
    r"test_if(_seq|_opt)?": "the condition is a run-time input: data-dependent control flow is not compiled",
}))


def _scalar(node: Node, i: int, default: float) -> float:
    v = node.input(i)
    return default if v is None or v.const is None else float(np.asarray(v.const).reshape(-1)[0])


def _normalize_dropout(node: Node, graph: Graph) -> None:
    """Inference Dropout is the identity (removed by a pass); its optional mask is all true."""
    training = node.version >= 12 and bool(_scalar(node, 2, 0.0))
    ratio = _scalar(node, 1, 0.5) if node.version >= 12 else float(node.attrs.get("ratio", 0.5))
    if node.version < 7 and not node.attrs.get("is_test", 0):
        training = True
    if training and ratio != 0.0:
        raise UnsupportedOperatorError("Dropout", node.name, "", "training mode (random masks) is not compiled")
    mask = node.outputs[1] if len(node.outputs) > 1 else None
    if mask is not None:
        mask.const = np.ones(mask.shape, dtype=mask.dtype.np)
        mask.producer = None


register(OpDef("Dropout", onnx=("Dropout",), shape_inputs=(1, 2), normalize=_normalize_dropout,
               tests=(r"test_(training_)?dropout.*",), excluded={
    r"test_training_dropout(_default)?(_mask)?": "training-mode Dropout draws a random mask: not reproducible",
    r"test_dropout_random_old": "training-mode Dropout draws a random mask: not reproducible",
}))


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


register(OpDef("Shape", onnx=("Shape",), fold=_fold_shape, tests=(r"test_shape.*",)))
register(OpDef("Size", onnx=("Size",), fold=_fold_size, tests=(r"test_size.*",)))
register(OpDef("ConstantOfShape", onnx=("ConstantOfShape",), shape_inputs=(0,),
               tests=(r"test_constantofshape.*",)))
register(OpDef("Range", onnx=("Range",), shape_inputs=(0, 1, 2), tests=(r"test_range.*",), excluded={
    r"test_(blackman|hamming|hann)window(_symmetric)?_expanded": (
        "the window size is a run-time graph input feeding Range: a data-dependent output shape"),
}))
