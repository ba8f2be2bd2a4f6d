"""Shape ops: zero-copy views (Reshape, Flatten, Squeeze, Unsqueeze) and broadcasting copies (Expand, Tile).

The view ops only relabel the shape: the planner gives output and input one buffer, so their
lowering emits nothing unless the planner had to separate them (e.g. the output is a graph output).
"""

from __future__ import annotations

from ember.codegen.emitter import KernelEmitter
from ember.ir.graph import Node
from ember.ops.movement import contiguous_strides, emit_strided
from ember.ops.opdef import Int8, OpDef
from ember.ops.registry import register


def _lower_view(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    if not k.same_buffer(x, y) and y.type.nbytes:
        k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), y.type.nbytes)


def _view(name: str, tests: tuple[str, ...], shape_inputs: tuple[int, ...] = ()) -> None:
    register(OpDef(name, onnx=(name,), lower=_lower_view, alias=True, kernels=("ember_copy",),
                   shape_inputs=shape_inputs, tests=tests, int8=Int8.MOVE))


# Output shapes come from ONNX inference (allowzero, -1, 0, negative axes, attr vs input axes).
_view("Reshape", (r"test_reshape_.*",), (1,))
_view("Flatten", (r"test_flatten_.*",))
_view("Squeeze", (r"test_squeeze.*",), (1,))
_view("Unsqueeze", (r"test_unsqueeze.*",), (1,))


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


_MOVE = ("ember_strided_copy", "ember_copy")
register(OpDef("Expand", onnx=("Expand",), lower=_lower_expand, kernels=_MOVE, shape_inputs=(1,),
               tests=(r"test_expand_.*",)))
register(OpDef("Tile", onnx=("Tile",), lower=_lower_tile, kernels=_MOVE, shape_inputs=(1,),
               tests=(r"test_tile.*",)))
