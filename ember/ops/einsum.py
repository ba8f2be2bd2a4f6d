"""Einsum: any equation (transposes, batched products, reductions, diagonals, traces, ellipses).

Lowering, two ways, chosen per node at compile time (the shapes are static):
- matmul-shaped float32 products of two operands (every label is a batch, row, column or contracted
  label; no diagonal, no label summed out of one operand alone) run on `ember_matmul_f32`, the same
  register-blocked kernel as MatMul: operands whose layout the kernel cannot stride through are permuted
  into scratch first, and so is the result when its label order is not (batch, rows, columns). This is a
  rewrite inside the lowering rather than a graph rewrite into Transpose/Reshape/MatMul nodes, because
  the loader types and appends one node per ONNX node and the scratch permutes cost the same either way.
- everything else is one generated loop nest: the output labels outside (the output is written
  contiguously), the summed labels inside, each operand read at the sum of its labels' strides (a label
  repeated in one operand adds its strides: a diagonal). Exact for every dtype, and small.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter, compute_ctype
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.infer import typed
from ember.ops.movement import contiguous_strides
from ember.ops.opdef import OpDef
from ember.ops.registry import register

_LETTERS = set(string.ascii_letters)


@dataclass(frozen=True)
class _Spec:
    """A parsed equation against the operands' shapes. Ellipsis dims get labels '0', '1', ...
    (right-aligned, numpy broadcasting: an operand's ellipsis dim of size 1 stretches)."""

    operands: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    sizes: dict[str, int]

    def summed(self) -> list[str]:
        seen: list[str] = []
        for labels in self.operands:
            for lab in labels:
                if lab not in self.output and lab not in seen:
                    seen.append(lab)
        return seen

    def strides(self, i: int, shape: tuple[int, ...]) -> dict[str, int]:
        """Element stride of each label in operand i (repeated labels add up; stretched dims stride 0)."""
        out: dict[str, int] = {}
        for lab, d, st in zip(self.operands[i], shape, contiguous_strides(shape), strict=True):
            out[lab] = out.get(lab, 0) + (st if d == self.sizes[lab] and d != 1 else 0)
        return out


def _fail(node: Node, why: str) -> ShapeError:
    return ShapeError(f"node '{node.name}' (Einsum): {why}")


def _parse(node: Node, shapes: list[tuple[int, ...]]) -> _Spec:
    eq = re.sub(r"\s+", "", str(node.attrs.get("equation", "")))
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise _fail(node, f"equation '{eq}' has {len(terms)} operands, the node {len(shapes)} inputs")
    ell_rank = 0
    for term, shape in zip(terms, shapes, strict=True):
        letters = term.replace("...", "")
        if set(letters) - _LETTERS or term.count("...") > 1:
            raise _fail(node, f"term '{term}' of '{eq}' is not letters with at most one '...'")
        if len(letters) > len(shape) or ("..." not in term and len(letters) != len(shape)):
            raise _fail(node, f"term '{term}' does not fit an operand of shape {list(shape)}")
        ell_rank = max(ell_rank, len(shape) - len(letters))
    operands: list[tuple[str, ...]] = []
    for term, shape in zip(terms, shapes, strict=True):
        n_ell = len(shape) - len(term.replace("...", ""))
        ell = tuple(str(j) for j in range(ell_rank - n_ell, ell_rank))
        head, _, tail = term.partition("...")
        operands.append((*head, *ell, *tail) if "..." in term else tuple(term))
    ell_labels = tuple(str(j) for j in range(ell_rank))
    if arrow:
        if set(rhs.replace("...", "")) - _LETTERS or rhs.count("...") > 1:
            raise _fail(node, f"output term '{rhs}' is not letters with at most one '...'")
        head, _, tail = rhs.partition("...")
        output = (*head, *ell_labels, *tail) if "..." in rhs else tuple(rhs)
    else:  # implicit: the ellipsis dims, then the letters used once, in alphabetical order
        counts = [lab for labels in operands for lab in labels if lab not in ell_labels]
        output = (*ell_labels, *sorted(lab for lab in set(counts) if counts.count(lab) == 1))
    sizes: dict[str, int] = {}
    for labels, shape in zip(operands, shapes, strict=True):
        for lab, d in zip(labels, shape, strict=True):
            known = sizes.get(lab)
            if known is None or known == 1 and lab in ell_labels:
                sizes[lab] = d
            elif d != known and not (d == 1 and lab in ell_labels):
                raise _fail(node, f"label '{lab}' has sizes {known} and {d}")
    for lab in output:
        if lab not in sizes:
            raise _fail(node, f"output label '{lab}' appears in no operand")
    if len(set(output)) != len(output):
        raise _fail(node, f"output term '{rhs}' repeats a label")
    return _Spec(tuple(operands), tuple(output), sizes)


def _spec(node: Node) -> _Spec:
    shapes = []
    for v in node.inputs:
        if v is None:
            raise _fail(node, "an operand is missing")
        shapes.append(v.shape)
    return _parse(node, shapes)


def _infer(node: Node) -> list[TensorType | None]:
    if not node.inputs:
        raise _fail(node, "no operands")
    spec = _spec(node)
    dtype = node.inputs[0].dtype  # type: ignore[union-attr]
    if dtype is DType.BOOL or any(v is not None and v.dtype is not dtype for v in node.inputs):
        raise UnsupportedOperatorError("Einsum", node.name, "operands must share one numeric element type")
    return [typed(dtype, [spec.sizes[lab] for lab in spec.output])]


def _evaluate(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    eq = re.sub(r"\s+", "", str(node.attrs["equation"]))
    arrays = [np.asarray(x) for x in xs]
    return [np.asarray(np.einsum(eq, *arrays), dtype=arrays[0].dtype)]


# ---- matmul-shaped products -------------------------------------------------------------------------

@dataclass(frozen=True)
class _MatmulPlan:
    batch: tuple[str, ...]
    rows: tuple[str, ...]  # in A and the output
    cols: tuple[str, ...]  # in B and the output
    inner: tuple[str, ...]  # in A and B, summed
    a_direct: str  # "mk" (rows then inner), "km" (inner then rows: the kernel strides A) or "" (permute)
    b_direct: bool
    y_direct: bool

    def scratch_floats(self, spec: _Spec) -> tuple[int, int, int]:
        size = {g: math.prod(spec.sizes[lab] for lab in getattr(self, g)) for g in ("batch", "rows", "cols", "inner")}
        nb, m, n, kk = size["batch"], size["rows"], size["cols"], size["inner"]
        return (0 if self.a_direct else nb * m * kk, 0 if self.b_direct else nb * kk * n,
                0 if self.y_direct else nb * m * n)


def _matmul_plan(node: Node, spec: _Spec) -> _MatmulPlan | None:
    """How a two-operand float32 Einsum runs as batched matmuls, or None when it is not matmul-shaped."""
    if len(spec.operands) != 2 or any(v is None or v.dtype is not DType.FLOAT32 for v in node.inputs):
        return None
    a, b = spec.operands
    y = spec.output
    if len(set(a)) != len(a) or len(set(b)) != len(b) or any(d == 0 for d in spec.sizes.values()):
        return None
    shapes = [v.shape for v in node.inputs if v is not None]
    for labels, shape in zip(spec.operands, shapes, strict=True):
        if any(d != spec.sizes[lab] for lab, d in zip(labels, shape, strict=True)):
            return None  # a stretched (broadcast) dim
    if any(lab not in y and lab not in b for lab in a) or any(lab not in y and lab not in a for lab in b):
        return None  # summed out of one operand alone
    batch = tuple(lab for lab in y if lab in a and lab in b)
    rows = tuple(lab for lab in y if lab in a and lab not in b)
    cols = tuple(lab for lab in y if lab in b and lab not in a)
    inner = tuple(lab for lab in a if lab in b and lab not in y)
    a_direct = "mk" if a == batch + rows + inner else "km" if a == batch + inner + rows else ""
    return _MatmulPlan(batch, rows, cols, inner, a_direct, b == batch + inner + cols, y == batch + rows + cols)


def _scratch(node: Node) -> int:
    spec = _spec(node)
    plan = _matmul_plan(node, spec)
    if plan is None:
        return 0
    return sum((n * 4 + 15) // 16 * 16 for n in plan.scratch_floats(spec))


def _batched_transpose(src: tuple[str, ...], dst: tuple[str, ...]) -> tuple[int, int] | None:
    """(p, j) when dst is src[:p] + src[j:] + src[p:j]: a batch of 2-D transposes (attention's K^T)."""
    p = 0
    while p < len(src) and src[p] == dst[p]:
        p += 1
    for j in range(p + 1, len(src)):
        if dst[p:] == src[j:] + src[p:j]:
            return p, j
    return None


def _emit_permute(k: KernelEmitter, dst: str, dst_labels: tuple[str, ...], src: str, src_labels: tuple[str, ...],
                  sizes: dict[str, int]) -> None:
    """Contiguous float dst (labels dst_labels) = contiguous src (labels src_labels), rearranged."""
    split = _batched_transpose(src_labels, dst_labels)
    if split is not None:  # blocked 2-D transposes: both sides stay in cache
        p, j = split
        nb, rows, cols = (math.prod(sizes[lab] for lab in part)
                          for part in (src_labels[:p], src_labels[p:j], src_labels[j:]))
        k.need("ember_transpose2d_f32")
        with k.w.block(f"for (ptrdiff_t et = 0; et < {nb}; ++et)"):
            k.line(f"ember_transpose2d_f32({dst} + et * {rows * cols}, {src} + et * {rows * cols}, {rows}, {cols});")
        return
    dst_strides, src_strides = _label_strides(dst_labels, sizes), _label_strides(src_labels, sizes)
    w = k.w
    with w.block():  # loops in src order: sequential reads
        w.line(f"float *EMBER_RESTRICT pd = {dst};")
        w.line(f"const float *ps = {src};")
        for j, lab in enumerate(src_labels):
            w.open(f"for (size_t p{j} = 0; p{j} < {sizes[lab]}; ++p{j})")
        d_off = " + ".join(f"p{j} * {dst_strides[lab]}" for j, lab in enumerate(src_labels)) or "0"
        s_off = " + ".join(f"p{j} * {src_strides[lab]}" for j, lab in enumerate(src_labels)) or "0"
        w.line(f"pd[{d_off}] = ps[{s_off}];")
        for _ in src_labels:
            w.close()


def _label_strides(labels: tuple[str, ...], sizes: dict[str, int]) -> dict[str, int]:
    return dict(zip(labels, contiguous_strides([sizes[lab] for lab in labels]), strict=True))


def _lower_matmul(node: Node, k: KernelEmitter, spec: _Spec, plan: _MatmulPlan) -> None:
    sz = spec.sizes
    nb, m, n, kk = (math.prod(sz[lab] for lab in g) for g in (plan.batch, plan.rows, plan.cols, plan.inner))
    a_n, b_n, _ = plan.scratch_floats(spec)
    base = k.scratch("float") if not (plan.a_direct and plan.b_direct and plan.y_direct) else ""
    a_ptr, b_ptr, y_ptr = k.inp(0, "float"), k.inp(1, "float"), k.out(0, "float")
    off = 0
    a_lab, b_lab = spec.operands
    if not plan.a_direct:
        dst_lab = plan.batch + plan.rows + plan.inner
        _emit_permute(k, f"({base} + {off})", dst_lab, a_ptr, a_lab, sz)
        a_ptr = f"({base} + {off})"
        off += (a_n * 4 + 15) // 16 * 4
    if not plan.b_direct:
        dst_lab = plan.batch + plan.inner + plan.cols
        _emit_permute(k, f"({base} + {off})", dst_lab, b_ptr, b_lab, sz)
        b_ptr = f"({base} + {off})"
        off += (b_n * 4 + 15) // 16 * 4
    mm_y = y_ptr if plan.y_direct else f"({base} + {off})"
    a_sm, a_sk = (kk, 1) if plan.a_direct != "km" else (1, m)
    k.need("ember_matmul_f32")
    args = f"{m}, {n}, {kk}, 1.0f, 0, 0, 0, 0.0f, 0, 0.0f, 0.0f"
    if nb == 1:
        k.line(f"ember_matmul_f32({mm_y}, {n}, {a_ptr}, {a_sm}, {a_sk}, {b_ptr}, {n}, {args});")
    else:
        with k.w.block(f"for (ptrdiff_t eb = 0; eb < {nb}; ++eb)"):
            k.line(f"ember_matmul_f32({mm_y} + eb * {m * n}, {n}, {a_ptr} + eb * {m * kk}, {a_sm}, {a_sk}, "
                   f"{b_ptr} + eb * {kk * n}, {n}, {args});")
    if not plan.y_direct:
        src_lab = plan.batch + plan.rows + plan.cols
        _emit_permute(k, y_ptr, spec.output, mm_y, src_lab, sz)


# ---- the general loop nest ----------------------------------------------------------------------------

def _acc_ctype(dtype: DType) -> str:
    """Floats accumulate in their compute type; integers in 64-bit unsigned, which wraps like numpy's
    fixed-width sums instead of overflowing into undefined behaviour."""
    return compute_ctype(dtype) if dtype.is_float else "uint64_t"


def _load(k: KernelEmitter, dtype: DType, ref: str) -> str:
    if dtype is DType.FLOAT16:
        k.need("ember_f16")
        return f"ember_f16_to_f32({ref})"
    return f"({_acc_ctype(dtype)}){ref}"


def _lower_loops(node: Node, k: KernelEmitter, spec: _Spec) -> None:
    y = node.outputs[0]
    assert y is not None
    dtype = y.dtype
    acc_t = _acc_ctype(dtype)
    summed = spec.summed()
    ins = [v for v in node.inputs if v is not None]
    strides = [spec.strides(i, v.shape) for i, v in enumerate(ins)]
    ptrs = [k.inp(i) for i in range(len(ins))]
    idx = {lab: f"o{j}" for j, lab in enumerate(spec.output)}
    idx.update({lab: f"r{j}" for j, lab in enumerate(summed)})
    empty_sum = any(spec.sizes[lab] == 0 for lab in summed)
    w = k.w
    with w.block():
        w.line("size_t o = 0;")
        for lab in spec.output:
            w.open(f"for (size_t {idx[lab]} = 0; {idx[lab]} < {spec.sizes[lab]}; ++{idx[lab]})")
        w.line(f"{acc_t} acc = 0;")
        if not empty_sum:  # an empty sum is 0 (and `r < 0` loops make C warn)
            for lab in summed:
                w.open(f"for (size_t {idx[lab]} = 0; {idx[lab]} < {spec.sizes[lab]}; ++{idx[lab]})")
            factors = []
            for i, v in enumerate(ins):
                off = " + ".join(f"{idx[lab]} * {st}" if st != 1 else idx[lab]
                                 for lab, st in strides[i].items() if st) or "0"
                factors.append(_load(k, v.dtype, f"{ptrs[i]}[{off}]"))
            w.line(f"acc += {' * '.join(factors)};")
            for _ in summed:
                w.close()
        store = "ember_f32_to_f16(acc)" if dtype is DType.FLOAT16 else f"({dtype.ctype})acc"
        w.line(f"{k.out(0)}[o++] = {store};")
        for _ in spec.output:
            w.close()


def _lower(node: Node, k: KernelEmitter) -> None:
    y = node.outputs[0]
    assert y is not None
    if y.type.numel == 0:
        return
    spec = _spec(node)
    plan = _matmul_plan(node, spec)
    if plan is not None:
        _lower_matmul(node, k, spec, plan)
    else:
        _lower_loops(node, k, spec)


def _flops(node: Node) -> int:
    y = node.outputs[0]
    if y is None:
        return 0
    spec = _spec(node)
    return 2 * y.type.numel * math.prod(spec.sizes[lab] for lab in spec.summed())


# Inputs: the operands (variadic, one element type). Attribute: equation (letters, ',', '...', '->').
register(OpDef("Einsum", lower=_lower, infer=_infer, evaluate=_evaluate, scratch=_scratch, flops=_flops,
               kernels=("ember_matmul_f32", "ember_transpose2d_f32", "ember_f16")))
