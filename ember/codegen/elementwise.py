"""Generated loops for elementwise ops and fused elementwise chains, with static broadcasting.

A chain is a list of nodes whose `expr` lowerings are composed into one loop nest: intermediates
live in registers (C locals) instead of memory, which is what elementwise fusion saves.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.codegen.emitter import CodeContext, ExprHandler, compute_ctype, literal
from ember.ir.dtypes import DType
from ember.ir.graph import Node, Value
from ember.memory.plan import Region


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> list[int]:
    """Element strides of a tensor of `shape` read at the indices of `out_shape` (numpy broadcasting)."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, acc = [0] * len(out_shape), 1
    for k in range(len(out_shape) - 1, -1, -1):
        strides[k] = acc if padded[k] != 1 else 0
        acc *= padded[k]
    return strides


def _collapse(shape: list[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge adjacent dims that every operand walks the same way."""
    keep = [k for k, s in enumerate(shape) if s != 1]
    dims = [shape[k] for k in keep]
    sts = [[st[k] for k in keep] for st in strides]
    k = len(dims) - 2
    while k >= 0:
        if all(st[k] == st[k + 1] * dims[k + 1] for st in sts):
            dims[k] *= dims[k + 1]
            for st in sts:
                st[k] = st[k + 1]
                del st[k + 1]
            del dims[k + 1]
        k -= 1
    return dims, sts


# An operator's C expression over its inputs' element expressions (OpDef.expr).
StepExpr = Callable[[ExprHandler, list[str], Node], str]


def emit_chain(ctx: CodeContext, steps: list[tuple[Node, StepExpr]], leaves: list[Value | None], out: Value,
               part: tuple[int, int, int] | None = None) -> None:
    """One loop nest computing `out` from `leaves` through each step's expression in order.

    `part` = (axis, lo, hi): only the outputs whose index along `axis` is in [lo, hi) (one thread's part of
    a divided node, ember/ops/split.py): every pointer starts `lo` steps along the axis, the loops keep the
    whole tensors' strides."""
    if out.type.numel == 0:
        return  # nothing to compute (and `i < 0` loops over size_t draw -Wtype-limits)
    out_shape = out.shape
    axis, lo, hi = part if part is not None else (0, 0, out_shape[0] if out_shape else 1)
    w = ctx.body
    leaf_ptrs: list[tuple[Value, str]] = []
    scalar_exprs: dict[int, str] = {}
    for v in leaves:
        if v is None or id(v) in scalar_exprs or any(v is p for p, _ in leaf_ptrs):
            continue
        if v.is_const and v.type.numel == 1:
            scalar_exprs[id(v)] = literal(v.const.reshape(-1)[0].item(), v.dtype)
        else:
            region, off = ctx.plan.where(v)
            qual = "const " if region is Region.CONSTANT else ""
            leaf_ptrs.append((v, _skip(f"(({qual}{v.dtype.ctype} *)({region.value} + {off}))", v.shape, out_shape,
                                       axis, lo)))
    out_region, out_off = ctx.plan.where(out)
    out_ptr = _skip(f"(({out.dtype.ctype} *)({out_region.value} + {out_off}))", out_shape, out_shape, axis, lo)
    strides = [broadcast_strides(v.shape, out_shape) for v, _ in leaf_ptrs]
    strides.append(broadcast_strides(out_shape, out_shape))
    shape = list(out_shape)
    if part is not None:
        shape[axis] = hi - lo
    dims, sts = _collapse(shape, strides)
    idx = [f"i{k}" for k in range(len(dims))]

    def index(st: list[int]) -> str:
        terms = [f"{i} * {s}" if s != 1 else i for i, s in zip(idx, st, strict=True) if s != 0]
        return " + ".join(terms) if terms else "0"

    with w.block():
        for k, d in enumerate(dims):
            w.open(f"for (size_t {idx[k]} = 0; {idx[k]} < {d}; ++{idx[k]})")
        env: dict[int, str] = dict(scalar_exprs)
        for (v, p), st in zip(leaf_ptrs, sts, strict=False):
            env[id(v)] = _load(ctx, v.dtype, f"{p}[{index(st)}]")
        for n, (step, step_expr) in enumerate(steps):
            out_v = step.outputs[0]
            assert out_v is not None
            h = ExprHandler(ctx, out_v.dtype)
            xs = [env[id(v)] if v is not None else "" for v in step.inputs]
            expr = step_expr(h, xs, step)
            tmp = f"t{n}"
            w.line(f"const {compute_ctype(out_v.dtype)} {tmp} = ({compute_ctype(out_v.dtype)})({expr});")
            env[id(out_v)] = tmp
        w.line(f"{out_ptr}[{index(sts[-1])}] = {_store(ctx, out.dtype, f't{len(steps) - 1}')};")
        for _ in dims:
            w.close()


def _skip(ptr: str, shape: tuple[int, ...], out_shape: tuple[int, ...], axis: int, lo: int) -> str:
    """`ptr` moved to index `lo` along the output's `axis` (not at all where the tensor broadcasts there)."""
    step = broadcast_strides(shape, out_shape)[axis] * lo if out_shape else 0
    return f"({ptr} + {step})" if step else ptr


def _load(ctx: CodeContext, dtype: DType, ref: str) -> str:
    if dtype is DType.FLOAT16:
        ctx.need("ember_f16")
        return f"ember_f16_to_f32({ref})"
    return ref


def _store(ctx: CodeContext, dtype: DType, expr: str) -> str:
    if dtype is DType.FLOAT16:
        ctx.need("ember_f16")
        return f"ember_f32_to_f16({expr})"
    if dtype is DType.BOOL:
        return f"(uint8_t)(({expr}) != 0)"
    return expr
