"""Shared pieces of the OpDefs' `infer` (output types) and `evaluate` (numpy) functions."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember.errors import ShapeError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node, Value


def inp(node: Node, i: int) -> Value:
    """An input the op requires."""
    v = node.input(i)
    if v is None:
        raise ShapeError(f"node '{node.name}' ({node.op}): input {i} is missing")
    return v


def ints(v: Value | None) -> list[int] | None:
    """The values of a constant integer input, flattened (None when absent or not constant)."""
    return None if v is None or v.const is None else [int(x) for x in np.asarray(v.const).reshape(-1)]


def const_ints(node: Node, i: int) -> list[int] | None:
    """Input i's constant integers; an error naming the node when it is present but not constant."""
    v = node.input(i)
    if v is not None and v.const is None:
        raise ShapeError(f"node '{node.name}' ({node.op}): input {i} ('{v.name}') must be a compile-time constant")
    return ints(v)


def scalar(v: Value | None, default: float | int | bool) -> float | int | bool:
    if v is None or v.const is None or np.asarray(v.const).size == 0:
        return default
    return np.asarray(v.const).reshape(-1)[0].item()


def axis(node: Node, a: int, rank: int) -> int:
    """`a` in [0, rank), negative counting from the end; an error naming the node when out of range."""
    if not -rank <= a < max(rank, 1):
        raise ShapeError(f"node '{node.name}' ({node.op}): axis {a} out of range for rank {rank}")
    return a + rank if a < 0 else a


def broadcast(node: Node, *shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy (multidirectional) broadcasting of the shapes."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ShapeError(f"node '{node.name}' ({node.op}): shapes "
                         f"{', '.join(str(list(s)) for s in shapes)} do not broadcast") from None


def present_inputs(node: Node) -> list[Value]:
    return [v for v in node.inputs if v is not None]


def same_as_input(node: Node) -> list[TensorType | None]:
    """Every output typed like input 0 (unary elementwise ops, normalizations, ...)."""
    x = inp(node, 0)
    return [TensorType(x.dtype, x.shape) if o is not None else None for o in node.outputs[:1]]


def broadcast_infer(dtype_of: int | DType | None = 0):
    """Output: the inputs broadcast together; dtype of input `dtype_of` (or a fixed DType)."""

    def infer(node: Node) -> list[TensorType | None]:
        shape = broadcast(node, *(v.shape for v in present_inputs(node)))
        dtype = dtype_of if isinstance(dtype_of, DType) else inp(node, dtype_of or 0).dtype
        return [TensorType(dtype, shape)]

    return infer


def conv_out(node: Node, ins: Sequence[int], kernel: Sequence[int], ceil: bool = False) -> list[int]:
    """Output spatial dims of a convolution or pooling window: pads, strides, dilations, auto_pad."""
    r = len(ins)
    strides = list(node.attrs.get("strides", [1] * r))
    dil = list(node.attrs.get("dilations", [1] * r))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return [-(-i // s) for i, s in zip(ins, strides, strict=True)]
    pads = [0] * (2 * r) if auto_pad == "VALID" else list(node.attrs.get("pads", [0] * (2 * r)))
    for attr, values, want in (("kernel_shape", kernel, r), ("strides", strides, r), ("dilations", dil, r),
                               ("pads", pads, 2 * r)):
        if len(values) != want:
            raise ShapeError(f"node '{node.name}' ({node.op}): attribute '{attr}' has {len(values)} values, "
                             f"the {r}-D window needs {want}")
    if any(s < 1 for s in strides) or any(d < 1 for d in dil):
        raise ShapeError(f"node '{node.name}' ({node.op}): strides and dilations must be positive")
    out = []
    for j in range(r):
        span = ins[j] + pads[j] + pads[r + j] - ((kernel[j] - 1) * dil[j] + 1)
        o = (-(-span // strides[j]) if ceil else span // strides[j]) + 1
        if ceil and (o - 1) * strides[j] >= ins[j] + pads[j]:
            o -= 1  # the last window must start inside the input or its leading pad
        out.append(o)
    if any(o < 0 for o in out):
        raise ShapeError(f"node '{node.name}' ({node.op}): the window is larger than the padded input")
    return out


def typed(dtype: DType, shape: Sequence[int]) -> TensorType:
    return TensorType(dtype, tuple(int(s) for s in shape))
