"""Shape ops: zero-copy views (Reshape, Flatten, Squeeze, Unsqueeze) and broadcasting copies (Expand, Tile).

The view ops only relabel the shape: the planner gives output and input one buffer, so their
lowering emits nothing unless the planner had to separate them (e.g. the output is a graph output).
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError
from ember.ir.dtypes import TensorType
from ember.ir.graph import Node, Value
from ember.ops.infer import axis, broadcast, const_ints, inp, typed
from ember.ops.movement import contiguous_strides, emit_strided
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _lower_view(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    if not k.same_buffer(x, y) and y.type.nbytes:
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), y.type.nbytes)


def _view(name: str, infer, shape_inputs: tuple[int, ...] = ()) -> None:
    def evaluate(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
        t = infer(node)[0]
        return [np.asarray(xs[0]).reshape(t.shape).copy()]

    register(OpDef(name, lower=_lower_view, alias=True, kernels=("ember_copy",),
                   shape_inputs=shape_inputs, infer=infer, evaluate=evaluate, int8=Int8.MOVE,
                   data={"storage_types": True}))


def _infer_bitcast(node: Node) -> list[TensorType | None]:
    x, to = inp(node, 0), node.attrs["to"]
    if to.itemsize != x.dtype.itemsize:
        raise _fail(node, f"{x.dtype.short} and {to.short} differ in width")
    return [typed(to, x.shape)]


def _eval_bitcast(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    return [np.array(xs[0], order="C").view(node.attrs["to"].np)]  # np.array keeps a 0-d input 0-d


# The same bytes read as another type of the same width (attribute `to`: a DType): a view like Reshape.
register(OpDef("BitCast", lower=_lower_view, alias=True, kernels=("ember_copy",), infer=_infer_bitcast,
               evaluate=_eval_bitcast))


# NhwcView (internal, passes/nhwc_views.py): the zero-copy form of a Transpose between NCHW and NHWC where the NCHW
# side is a convolution's own data that it reads or writes channels-last. Perm (0, 3, 1, 2): an NHWC tensor read as
# the NCHW one the Transpose would make of it: its output has the NCHW shape but keeps the NHWC bytes, and only
# convolutions that read their input through a copy of their own (ConvShifted's planes, im2col's columns,
# QConvShifted's words, QConv's rows, the int8 depthwise and int16 convolutions' copies) read it, knowing the layout
# (`stored_nhwc`). Perm (0, 2, 3, 1): its input is
# a convolution's output that the convolution stored channels-last (attribute NHWC_OUT): NCHW by its shape, NHWC in
# memory, and read only by this view, whose output is the NHWC tensor.
NHWC_VIEW = "NhwcView"
NHWC_OUT = "_nhwc_out"


def stored_nhwc(v: Value | None) -> bool:
    """Whether v is the output of an NhwcView to NCHW: NCHW by its shape, NHWC in memory."""
    return (v is not None and v.producer is not None and v.producer.op == NHWC_VIEW
            and list(v.producer.attrs["perm"]) == [0, 3, 1, 2])


def writes_nhwc(node: Node) -> bool:
    """Whether `node` stores its output channels-last for the NhwcView that reads it (NCHW by its shape)."""
    return bool(node.attrs.get(NHWC_OUT))


def nhwc_bits(node: Node) -> int:
    """Bits 2 and 3 of the integer convolutions' `lay` (qconv.c, qdwconv.c, q16.c): the data input stored
    channels-last, the output."""
    return 4 * int(stored_nhwc(node.input(0))) | 8 * int(writes_nhwc(node))


def _infer_nhwc_view(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    return [typed(x.dtype, [x.shape[a] for a in node.attrs["perm"]])]


register(OpDef(NHWC_VIEW, lower=_lower_view, alias=True, kernels=("ember_copy",), infer=_infer_nhwc_view))


def _fail(node: Node, detail: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' ({node.op}): {detail}")


def _infer_reshape(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    shape = const_ints(node, 1)
    if shape is None:
        raise _fail(node, "needs a constant shape")
    allowzero = node.attrs.get("allowzero", 0)
    out = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(shape)]
    if out.count(-1) > 1:
        raise _fail(node, f"shape {shape} has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or x.type.numel % known:
            raise _fail(node, f"cannot reshape {list(x.shape)} to {shape}")
        out[out.index(-1)] = x.type.numel // known
    if math.prod(out) != x.type.numel or any(d < 0 for d in out):
        raise _fail(node, f"cannot reshape {list(x.shape)} to {shape}")
    return [typed(x.dtype, out)]


def _infer_flatten(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    a = int(node.attrs.get("axis", 1))
    if not -x.type.rank <= a <= x.type.rank:
        raise _fail(node, f"axis {a} out of range for rank {x.type.rank}")
    a = a + x.type.rank if a < 0 else a
    return [typed(x.dtype, [math.prod(x.shape[:a]), math.prod(x.shape[a:])])]


def _infer_squeeze(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    axes = const_ints(node, 1)
    drop = ({axis(node, a, x.type.rank) for a in axes} if axes is not None
            else {i for i, d in enumerate(x.shape) if d == 1})
    if any(x.shape[a] != 1 for a in drop):
        raise _fail(node, f"cannot squeeze axes {sorted(drop)} of {list(x.shape)}")
    return [typed(x.dtype, [d for i, d in enumerate(x.shape) if i not in drop])]


def _infer_unsqueeze(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    axes = const_ints(node, 1)
    if axes is None:
        raise _fail(node, "needs constant axes")
    rank = x.type.rank + len(axes)
    new = {axis(node, a, rank) for a in axes}
    if len(new) != len(axes):
        raise _fail(node, f"repeated axes {axes}")
    dims = iter(x.shape)
    return [typed(x.dtype, [1 if i in new else next(dims) for i in range(rank)])]


# Reshape inputs: (data, shape (int64; 0 copies the input dim unless `allowzero`, one -1 is inferred)).
_view("Reshape", _infer_reshape, (1,))
# Flatten attribute `axis` (1): 2-D [prod(dims before axis), prod(dims from axis)].
_view("Flatten", _infer_flatten)
# Squeeze/Unsqueeze inputs: (data, axes (int64; Squeeze: optional, absent = every unit dim)).
_view("Squeeze", _infer_squeeze, (1,))
_view("Unsqueeze", _infer_unsqueeze, (1,))


def _lower_expand(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    # Right-align x's dims with y's; a broadcast dim reads the same element again (stride 0).
    pad = y.type.rank - x.type.rank
    xst = contiguous_strides(x.shape)
    sstr = [0] * pad + [0 if n == 1 else s for n, s in zip(x.shape, xst, strict=True)]
    emit_strided(k, y, 0, x, 0, y.shape, contiguous_strides(y.shape), sstr)


def _lower_tile(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    # y viewed as [r0, n0, r1, n1, ...]: the repeat index r_d moves n_d rows in y and nothing in x.
    ost, ist = contiguous_strides(y.shape), contiguous_strides(x.shape)
    shape, dstr, sstr = [], [], []
    for n, os_, is_, total in zip(x.shape, ost, ist, y.shape, strict=True):
        shape += [total // n if n else 0, n]
        dstr += [n * os_, os_]
        sstr += [0, is_]
    emit_strided(k, y, 0, x, 0, shape, dstr, sstr)


def _infer_expand(node: Node) -> list[TensorType | None]:
    x, shape = inp(node, 0), const_ints(node, 1)
    if shape is None:
        raise _fail(node, "needs a constant shape")
    return [typed(x.dtype, broadcast(node, x.shape, shape))]


def _infer_tile(node: Node) -> list[TensorType | None]:
    x, reps = inp(node, 0), const_ints(node, 1)
    if reps is None or len(reps) != x.type.rank or any(r < 0 for r in reps):
        raise _fail(node, f"repeats {reps} do not fit rank {x.type.rank}")
    return [typed(x.dtype, [d * r for d, r in zip(x.shape, reps, strict=True)])]


_MOVE = ("ember_strided_copy", "ember_copy")
# Expand inputs: (X, shape (int64)), broadcast together. Tile inputs: (X, repeats (int64, one per dim)).
register(OpDef("Expand", lower=_lower_expand, kernels=_MOVE, shape_inputs=(1,), infer=_infer_expand,
               data={"storage_types": True},
               evaluate=lambda n, xs: [xs[0] * np.ones(np.asarray(xs[1]).reshape(-1), xs[0].dtype)]))
register(OpDef("Tile", lower=_lower_tile, kernels=_MOVE, shape_inputs=(1,), infer=_infer_tile,
               data={"storage_types": True},
               evaluate=lambda n, xs: [np.tile(xs[0], [int(r) for r in np.asarray(xs[1]).reshape(-1)])]))
