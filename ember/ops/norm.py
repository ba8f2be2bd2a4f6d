"""BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization (float32)."""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.infer import inp, same_as_input
from ember.ops.matmul import present, require_f32
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register

F32 = DType.FLOAT32


def _eps(node: Node) -> str:
    return literal(node.attrs.get("epsilon", 1e-5), F32)


def _out(k: KernelEmitter, node: Node, i: int) -> str:
    return k.out(i) if i < len(node.outputs) and node.outputs[i] is not None else "0"


def _check(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, *node.outputs)
    if present(node.input(0)).type.rank < 2 and node.op != "LayerNormalization":
        raise UnsupportedOperatorError(node.op, node.name, "input of rank < 2")


# BatchNormalization ----------------------------------------------------------------------------

def _bn_training(node: Node) -> bool:
    return bool(node.attrs.get("training_mode", 0))


def _infer_bn(node: Node) -> list[TensorType | None]:
    """Y like X; in training mode the running mean and variance (and any further statistics) like `mean`."""
    x, mean = inp(node, 0), inp(node, 3)
    stats = [TensorType(mean.dtype, mean.shape) if o is not None else None for o in node.outputs[1:]]
    return [TensorType(x.dtype, x.shape), *stats]


def _lower_bn(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    training = _bn_training(node)
    k.call("ember_batchnorm_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2), k.inp(3), k.inp(4), x.shape[0],
           x.shape[1], math.prod(x.shape[2:]), _eps(node), int(training),
           literal(node.attrs.get("momentum", 0.9), F32),
           _out(k, node, 1) if training else "0", _out(k, node, 2) if training else "0")


# Inputs: (X, scale, bias, mean, var). Attribute `training_mode`: batch statistics, running ones updated.
register(OpDef(
    "BatchNormalization", lower=_lower_bn, normalize=_check, infer=_infer_bn,
    # Y over X: a channel's statistics are read before its values are written, each value from its own.
    inplace=(0,), kernels=("ember_batchnorm_f32",),
))


# InstanceNormalization -------------------------------------------------------------------------

def _lower_in(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    c = x.shape[1]
    k.call("ember_norm_rows_f32", k.out(0), k.inp(0), x.shape[0] * c, math.prod(x.shape[2:]), _eps(node),
           k.inp(1), k.inp(2), 1, 1, c, 0, "0", "0")


register(OpDef(
    "InstanceNormalization", lower=_lower_in, normalize=_check, infer=same_as_input,
    inplace=(0,), kernels=("ember_norm_rows_f32",),  # ember_norm_rows_f32: statistics of a row, then the row
))


# LayerNormalization ----------------------------------------------------------------------------

def _ln_axis(node: Node) -> int:
    rank = present(node.input(0)).type.rank
    axis = node.attrs.get("axis", -1)
    return axis + rank if axis < 0 else axis


def _normalize_ln(node: Node, graph: Graph) -> None:
    _check(node, graph)
    x = present(node.input(0))
    inner = x.shape[_ln_axis(node):]
    for i in (1, 2):
        v = node.input(i)
        if v is None or v.shape == inner or v.type.numel == math.prod(inner):
            continue
        if not v.is_const:
            raise UnsupportedOperatorError(node.op, node.name,
                                           "run-time scale/bias that broadcast over the normalized axes")
        # The kernel indexes scale/bias per normalized element: broadcast constants once, here.
        node.inputs[i] = graph.constant(f"{v.name}_bcast", np.broadcast_to(v.const, inner).copy())


def _lower_ln(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    axis = _ln_axis(node)
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    has_bias = node.input(2) is not None
    k.call("ember_norm_rows_f32", k.out(0), k.inp(0), outer, inner, _eps(node), k.inp(1),
           k.inp(2) if has_bias else "0", int(has_bias), 0, 1, 1, _out(k, node, 1), _out(k, node, 2))


def _infer_ln(node: Node) -> list[TensorType | None]:
    """Y like X; Mean and InvStdDev keep X's leading dims (1 for the normalized ones), in `stash_type`."""
    x = inp(node, 0)
    axis = _ln_axis(node)
    stat = TensorType(node.attrs.get("stash_type", DType.FLOAT32), (*x.shape[:axis], *[1] * (x.type.rank - axis)))
    return [TensorType(x.dtype, x.shape), *[stat if o is not None else None for o in node.outputs[1:3]]]


# Inputs: (X, scale, bias (optional)). Attributes: axis (-1), epsilon, stash_type (a DType).
register(OpDef(
    "LayerNormalization", lower=_lower_ln, normalize=_normalize_ln, infer=_infer_ln,
    inplace=(0,), kernels=("ember_norm_rows_f32",), int8=Int8.FLOAT,  # statistics of a row, then the row
))


# SkipLayerNormalization (ember's own: passes/fuse_norm.py makes it) ---------------------------------

def _lower_skip_ln(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    axis = _ln_axis(node)
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])

    def opt(i: int) -> str:
        return k.inp(i) if node.input(i) is not None else "0"

    k.call("ember_skip_norm_rows_f32", k.out(0), _out(k, node, 3), k.inp(0), k.inp(1), opt(4), outer, inner,
           _eps(node), k.inp(2), opt(3), _out(k, node, 1), _out(k, node, 2))


def _infer_skip_ln(node: Node) -> list[TensorType | None]:
    y, mean, inv = _infer_ln(node)
    x = inp(node, 0)
    outs = [y, mean, inv, TensorType(x.dtype, x.shape)]
    return [t if i < len(node.outputs) and node.outputs[i] is not None else None for i, t in enumerate(outs)]


# LayerNormalization of a residual sum in one pass: inputs (X, skip, scale, bias, add_bias), the last two
# optional, X and skip of one shape, scale/bias/add_bias one value per normalized element; outputs (Y, Mean,
# InvStdDev, the sum X + skip + add_bias), all but Y optional. Attributes as LayerNormalization's.
register(OpDef(
    "SkipLayerNormalization", lower=_lower_skip_ln, infer=_infer_skip_ln,
    # Y may take X's or skip's buffer: each row is read whole (into the sum) before its Y row is written.
    inplace=True, kernels=("ember_skip_norm_rows_f32",), int8=Int8.FLOAT,
    flops=lambda n: 10 * present(n.input(0)).type.numel,
))


# GroupNormalization ----------------------------------------------------------------------------

def _lower_gn(node: Node, k: KernelEmitter) -> None:
    x = present(node.input(0))
    groups = node.attrs["num_groups"]
    # The scale and bias hold one value per group or one per channel (the same thing when they are equal).
    per_group = int(present(node.input(1)).type.numel == groups != x.shape[1])
    k.call("ember_groupnorm_f32", k.out(0), k.inp(0), k.inp(1), k.inp(2), x.shape[0], x.shape[1],
           math.prod(x.shape[2:]), groups, _eps(node), per_group)


register(OpDef(
    "GroupNormalization", lower=_lower_gn, normalize=_check,
    infer=same_as_input,
    inplace=(0,), kernels=("ember_groupnorm_f32",),  # a group's statistics, then its values
))
