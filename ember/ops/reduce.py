"""Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp), ArgMax/ArgMin, CumSum, CumProd.

Reductions and arg-reductions are generated loops specialised to the static shape: the outer loops walk
the kept dims (in input order, which is also the output's order, so the output is written contiguously),
the inner loops walk the reduced dims. Adjacent dims of the same kind are merged to keep the nests
shallow. CumSum and CumProd call kernels (kernels/scan.c).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter, compute_ctype, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import axis as norm_axis
from ember.ops.infer import inp, same_as_input, typed
from ember.ops.opdef import OpDef
from ember.ops.registry import register


def reduce_axes(node: Node) -> tuple[int, ...] | None:
    """Normalized reduced axes (input 1), or None when the node is a no-op (noop_with_empty_axes, no axes)."""
    x = node.inputs[0]
    assert x is not None
    rank = len(x.shape)
    ax_in = node.input(1)
    axes = [] if ax_in is None or ax_in.const is None else [int(a) for a in ax_in.const.reshape(-1)]
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return None
        return tuple(range(rank))
    return tuple(sorted({norm_axis(node, a, rank) for a in axes}))


def _infer_reduce(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    axes = reduce_axes(node)
    if axes is None:
        return [typed(x.dtype, x.shape)]
    keep = node.attrs.get("keepdims", 1)
    return [typed(x.dtype, [1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes])]


def _log_sum_exp(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = np.where(np.isinf(x), -np.inf, x).max(axis=axes, keepdims=True, initial=-np.inf)
    return np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True, dtype=x.dtype)) + m


def _extreme_fill(x: np.ndarray, lowest: bool) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.asarray(-np.inf if lowest else np.inf, x.dtype)
    if x.dtype == np.bool_:
        return np.asarray(not lowest)
    info = np.iinfo(x.dtype)
    return np.asarray(info.min if lowest else info.max, x.dtype)


# numpy forms over the (sorted, non-empty) reduced axes, keepdims; empty reductions give the identity.
_NUMPY: dict[str, Callable[[np.ndarray, tuple[int, ...]], np.ndarray]] = {
    "ReduceSum": lambda x, a: np.sum(x, axis=a, keepdims=True, dtype=x.dtype),
    "ReduceMean": lambda x, a: np.mean(x, axis=a, keepdims=True, dtype=x.dtype),
    "ReduceProd": lambda x, a: np.prod(x, axis=a, keepdims=True, dtype=x.dtype),
    "ReduceMax": lambda x, a: np.max(x, axis=a, keepdims=True, initial=_extreme_fill(x, True)),
    "ReduceMin": lambda x, a: np.min(x, axis=a, keepdims=True, initial=_extreme_fill(x, False)),
    "ReduceL1": lambda x, a: np.sum(np.abs(x), axis=a, keepdims=True),
    "ReduceL2": lambda x, a: np.sqrt(np.sum(np.square(x), axis=a, keepdims=True)),
    "ReduceSumSquare": lambda x, a: np.sum(np.square(x), axis=a, keepdims=True),
    "ReduceLogSum": lambda x, a: np.log(np.sum(x, axis=a, keepdims=True)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _eval_reduce(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    axes = reduce_axes(node)
    if axes is None:
        return [x.copy()]
    with np.errstate(all="ignore"):
        y = np.asarray(_NUMPY[node.op](x, axes)).astype(x.dtype)
    if not node.attrs.get("keepdims", 1):
        y = y.reshape([d for i, d in enumerate(x.shape) if i not in axes])
    return [y]


def _merge(dims: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    """Merge adjacent (size, stride, reduced) dims of the same kind that are contiguous together."""
    out: list[tuple[int, int, bool]] = []
    for d in dims:
        if d[0] == 1:
            continue
        if out and out[-1][2] == d[2] and out[-1][1] == d[1] * d[0]:
            out[-1] = (out[-1][0] * d[0], d[1], d[2])
        else:
            out.append(d)
    return out


def _acc_ctype(dtype: DType) -> str:
    """Accumulator type: floats in their compute type, integers widened to 64 bits."""
    if dtype.is_float:
        return compute_ctype(dtype)
    return "int64_t" if dtype.is_signed else "uint64_t"


@dataclass(frozen=True)
class _Reduction:
    init: str  # "0", "1", "lowest", "highest"
    step: str  # C statement over acc and x
    final: str  # C expression over acc and count (n)
    two_pass: bool = False  # LogSumExp: a max pass first, then a sum of exp(x - max)


def _math(dtype: DType, name: str, arg: str) -> str:
    if dtype is DType.FLOAT64:
        return f"((double)ember_{name}f((float)({arg})))"
    return f"ember_{name}f({arg})"


def _extreme(dtype: DType, lowest: bool) -> str:
    if dtype.is_float:
        inf = "__builtin_inf()" if compute_ctype(dtype) == "double" else "__builtin_inff()"
        return f"(-{inf})" if lowest else inf
    if dtype is DType.BOOL:
        return "0" if lowest else "1"
    bits = dtype.itemsize * 8
    if dtype.is_signed:
        v = -(2 ** (bits - 1)) if lowest else 2 ** (bits - 1) - 1
    else:
        v = 0 if lowest else 2**bits - 1
    return literal(v, dtype)


_NAN_OR = "x != x || "  # NaN propagates through max/min (numpy semantics)

_REDUCTIONS: dict[str, _Reduction] = {
    "ReduceSum": _Reduction("0", "acc += x;", "acc"),
    "ReduceMean": _Reduction("0", "acc += x;", "acc / n"),
    "ReduceProd": _Reduction("1", "acc *= x;", "acc"),
    "ReduceMax": _Reduction("lowest", "if ({nan}x > acc) acc = x;", "acc"),
    "ReduceMin": _Reduction("highest", "if ({nan}x < acc) acc = x;", "acc"),
    "ReduceL1": _Reduction("0", "acc += x < 0 ? -x : x;", "acc"),
    "ReduceL2": _Reduction("0", "acc += x * x;", "{sqrt}(acc)"),
    "ReduceSumSquare": _Reduction("0", "acc += x * x;", "acc"),
    "ReduceLogSum": _Reduction("0", "acc += x;", "{log}(acc)"),
    "ReduceLogSumExp": _Reduction("0", "acc += {exp}(x - m);", "m + {log}(acc)", two_pass=True),
}

_MATH_BLOCKS = {"ReduceL2": ("ember_sqrtf",), "ReduceLogSum": ("ember_logf",),
                "ReduceLogSumExp": ("ember_expf", "ember_logf")}


def _loops(k: KernelEmitter, dims: list[tuple[int, int, bool]], prefix: str) -> tuple[list[str], str]:
    """Open one for-loop per dim; returns the index names and the input offset expression."""
    names, terms = [], []
    for j, (size, stride, _) in enumerate(dims):
        i = f"{prefix}{j}"
        k.w.open(f"for (size_t {i} = 0; {i} < {size}; ++{i})")
        names.append(i)
        terms.append(f"{i} * {stride}" if stride != 1 else i)
    return names, " + ".join(terms) if terms else "0"


def _load(k: KernelEmitter, dtype: DType, ref: str) -> str:
    if dtype is DType.FLOAT16:
        k.need("ember_f16")
        return f"ember_f16_to_f32({ref})"
    return ref


def _store(k: KernelEmitter, dtype: DType, expr: str) -> str:
    if dtype is DType.FLOAT16:
        k.need("ember_f16")
        return f"ember_f32_to_f16((float)({expr}))"
    return f"({dtype.ctype})({expr})"


def _split(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[list, list]:
    strides, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    dims = _merge([(shape[d], strides[d], d in axes) for d in range(len(shape))])
    return [d for d in dims if not d[2]], [d for d in dims if d[2]]


def _lower_reduce(node: Node, k: KernelEmitter) -> None:
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    axes = reduce_axes(node)
    if axes is None:  # noop_with_empty_axes: the output is the input
        if not k.same_buffer(x, y):
            k.call("ember_copy", k.out(0, "uint8_t"), k.inp(0, "uint8_t"), y.type.nbytes)
        return
    r = _REDUCTIONS[node.op]
    k.need(*_MATH_BLOCKS.get(node.op, ()))
    dt = x.dtype
    act = _acc_ctype(dt)
    ct = compute_ctype(dt)
    kept, red = _split(x.shape, axes)
    count = 1
    for s, _, _ in red:
        count *= s
    subst = {"nan": _NAN_OR if dt.is_float else "", "sqrt": "", "log": "", "exp": ""}
    step = r.step if dt.is_signed or node.op != "ReduceL1" else "acc += x;"
    for f in ("sqrt", "log", "exp"):
        subst[f] = f"ember_{f}f" if dt is not DType.FLOAT64 else f"(double)ember_{f}f"
    init = {"0": "0", "1": "1", "lowest": _extreme(dt, True), "highest": _extreme(dt, False)}[r.init]
    acc_t = ct if r.init in ("lowest", "highest") else act
    if y.type.numel == 0:
        return
    src, dst = k.inp(0), k.out(0)
    w = k.w
    with w.block():
        w.line("size_t o = 0;")
        _, base = _loops(k, kept, "i")
        with w.block():
            if count == 0:  # reducing an empty set gives the identity (and `r < 0` loops make C warn)
                w.line(f"{acc_t} acc = {init};")
                w.line(f"const {ct} m = 0, n = 0;")
                w.line("(void)m;")
                w.line("(void)n;")
            else:
                _reduce_body(k, r, step.format(**subst), dt, acc_t, init, count, red, f"{src}[{base} + ", subst)
            w.line(f"{dst}[o++] = {_store(k, y.dtype, r.final.format(**subst))};")
        for _ in kept:
            w.close()


def _reduce_body(k: KernelEmitter, r: _Reduction, step: str, dt: DType, acc_t: str, init: str, count: int,
                 red: list, ref: str, subst: dict[str, str]) -> None:
    """Declares `acc` (and `m` for LogSumExp) and runs the reduction loops over one output element."""
    w = k.w
    ct = compute_ctype(dt)
    if r.two_pass:
        w.line(f"{ct} m = {_extreme(dt, True)};")
        _, off = _loops(k, red, "r")
        w.line(f"const {ct} x = {_load(k, dt, ref + off + ']')};")
        w.line("if (x > m) m = x;")
        for _ in red:
            w.close()
        w.line(f"if (m == {_extreme(dt, True)}) m = 0;  /* all -inf: avoid inf - inf */")
    w.line(f"{acc_t} acc = {init};")
    w.line(f"const {ct} n = ({ct}){count};")
    w.line("(void)n;")
    _, off = _loops(k, red, "r")
    w.line(f"const {ct} x = {_load(k, dt, ref + off + ']')};")
    w.line(step)
    for _ in red:
        w.close()


# Inputs: (data, axes (optional int64)). Attributes: keepdims (1), noop_with_empty_axes (0).
for _name in _REDUCTIONS:
    register(OpDef(
        _name, lower=_lower_reduce, shape_inputs=(1,), infer=_infer_reduce, evaluate=_eval_reduce,
        kernels=("ember_copy", *_MATH_BLOCKS.get(_name, ())),
    ))


# ---- ArgMax / ArgMin ------------------------------------------------------------------------------
def _lower_arg(node: Node, k: KernelEmitter) -> None:
    x = node.inputs[0]
    assert x is not None
    shape = x.shape
    axis = int(node.attrs.get("axis", 0))
    if axis < 0:
        axis += len(shape)
    last = bool(node.attrs.get("select_last_index", 0))
    cmp = ">" if node.op == "ArgMax" else "<"
    outer = 1
    for s in shape[:axis]:
        outer *= s
    n = shape[axis]
    inner = 1
    for s in shape[axis + 1:]:
        inner *= s
    dt = x.dtype
    ct = compute_ctype(dt)
    src, dst = k.inp(0), k.out(0)
    # numpy: the first NaN wins (it is both the max and the min); ties go to the first index
    # unless select_last_index.
    better = f"x {cmp} best"
    if last:
        better += " || x == best"
    if dt.is_float:
        better = f"(x != x && best == best) || ({better})"
    w = k.w
    with w.block(f"for (size_t o = 0; o < {outer}; ++o)"), w.block(f"for (size_t i = 0; i < {inner}; ++i)"):
        w.line(f"const size_t b = o * {n * inner} + i;")
        w.line(f"{ct} best = {_load(k, dt, f'{src}[b]')};")
        w.line("int64_t idx = 0;")
        with w.block(f"for (size_t j = 1; j < {n}; ++j)"):
            w.line(f"const {ct} x = {_load(k, dt, f'{src}[b + j * {inner}]')};")
            w.line(f"if ({better}) {{ best = x; idx = (int64_t)j; }}")
        w.line(f"{dst}[o * {inner} + i] = idx;")


def _infer_arg(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    a = norm_axis(node, int(node.attrs.get("axis", 0)), x.type.rank)
    keep = node.attrs.get("keepdims", 1)
    return [typed(DType.INT64, [1 if i == a else d for i, d in enumerate(x.shape) if keep or i != a])]


def _eval_arg(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a = norm_axis(node, int(node.attrs.get("axis", 0)), x.ndim)
    fn = np.argmax if node.op == "ArgMax" else np.argmin
    if node.attrs.get("select_last_index", 0):
        y = x.shape[a] - 1 - fn(np.flip(x, a), axis=a)
    else:
        y = fn(x, axis=a)
    y = y.astype(np.int64)
    return [np.expand_dims(y, a) if node.attrs.get("keepdims", 1) else y]


# Attributes: axis (0), keepdims (1), select_last_index (0). Output int64.
for _name in ("ArgMax", "ArgMin"):
    register(OpDef(_name, lower=_lower_arg, infer=_infer_arg, evaluate=_eval_arg))


# ---- CumSum / CumProd ------------------------------------------------------------------------------
_SCAN_TYPES = {
    "CumSum": {DType.FLOAT32: "f32", DType.FLOAT64: "f64", DType.INT32: "s32", DType.INT64: "s64",
               DType.UINT32: "u32", DType.UINT64: "u64"},
    "CumProd": {DType.FLOAT32: "f32", DType.FLOAT64: "f64", DType.FLOAT16: "f16", DType.INT32: "s32",
                DType.INT64: "s64", DType.UINT32: "u32", DType.UINT64: "u64"},
}
_SCAN_NUMPY = {"CumSum": (np.cumsum, 0), "CumProd": (np.cumprod, 1)}  # (scan, identity)


def _cumsum_axis(node: Node, rank: int) -> int:
    a = inp(node, 1)
    if a.const is None or a.const.size != 1:
        raise ShapeError(f"node '{node.name}' ({node.op}): the axis must be one compile-time integer")
    return norm_axis(node, int(a.const.reshape(-1)[0]), rank)


def _lower_cumsum(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    types = _SCAN_TYPES[node.op]
    if x.dtype not in types:
        raise UnsupportedOperatorError(node.op, node.name, f"element type {x.dtype.short}")
    a = _cumsum_axis(node, x.type.rank)
    outer, n, inner = math.prod(x.shape[:a]), x.shape[a], math.prod(x.shape[a + 1:])
    if x.type.numel:
        k.call(f"ember_{node.op.lower()}_{types[x.dtype]}", k.out(0), k.inp(0), outer, n, inner,
               int(node.attrs.get("exclusive", 0)), int(node.attrs.get("reverse", 0)))


def _eval_cumsum(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(xs[0])
    a = _cumsum_axis(node, x.ndim)
    reverse, exclusive = node.attrs.get("reverse", 0), node.attrs.get("exclusive", 0)
    scan, identity = _SCAN_NUMPY[node.op]
    y = np.flip(x, a) if reverse else x
    y = scan(y, axis=a, dtype=x.dtype)
    if exclusive:  # shift by one along the axis: each element's sum (product) leaves it out
        first = np.full_like(np.take(y, [0], axis=a), identity)
        y = np.concatenate([first, np.delete(y, -1, axis=a)], axis=a)
    return [np.ascontiguousarray(np.flip(y, a) if reverse else y)]


# Inputs: (x, axis: a 0-D or 1-element integer tensor, compile-time). Attributes: exclusive (0), reverse (0).
for _name, _types in _SCAN_TYPES.items():
    register(OpDef(_name, lower=_lower_cumsum, shape_inputs=(1,), infer=same_as_input, evaluate=_eval_cumsum,
                   kernels=tuple(f"ember_{_name.lower()}_{s}" for s in _types.values())))
