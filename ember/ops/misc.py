"""Ops folded away or removed before code generation, and the internal Copy."""

from __future__ import annotations

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.ir.graph import Node
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def _lower_copy(node: Node, k: KernelEmitter) -> None:
    src, dst = node.inputs[0], node.outputs[0]
    assert src is not None and dst is not None
    if not k.same_buffer(src, dst):
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), dst.type.nbytes)


# Internal: copies a tensor into a graph output's own slot.
register(OpDef("Copy", lower=_lower_copy, kernels=("ember_copy",)))

register(OpDef("Constant", onnx=("Constant",), tests=(r"test_constant$",)))
register(OpDef("Identity", onnx=("Identity",), tests=(r"test_identity$",)))


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
register(OpDef("Range", onnx=("Range",), shape_inputs=(0, 1, 2), tests=(r"test_range.*",)))
