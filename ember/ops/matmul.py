"""Gemm and MatMul (float32) on the register-blocked `ember_matmul_f32` kernel, with fused activations.

Also home of the activation-epilogue convention shared by Conv/ConvTranspose/Gemm/MatMul: a node may
carry `attrs["_act"] = {"op": "Relu", "alpha": float, "beta": float}` (set by
ember/passes/fuse_activation.py); `epilogue_args(node)` turns it into the kernel's (kind, alpha, beta).
"""

from __future__ import annotations

import math

import numpy as np

from ember.codegen.emitter import KernelEmitter, literal
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.epilogue import epilogue_args
from ember.ops.infer import broadcast, inp, typed
from ember.ops.opdef import Int8, OpDef, WeightLayout
from ember.ops.registry import register


def matmul_flops(node: Node) -> int:
    """2 x M x N x K of Gemm / MatMul (batched: times the batch)."""
    a, y = node.inputs[0], node.outputs[0]
    if a is None or y is None:
        return 0
    trans_a = node.op == "Gemm" and node.attrs.get("transA", 0)
    k = a.shape[-2] if trans_a else a.shape[-1]
    return 2 * math.prod(y.shape) * k


def require_f32(node: Node, *values: Value | None) -> None:
    """Rejects (at load time, with the node's name) element types these kernels do not implement.

    float16 is accepted: `float16_via_f32` computes it in float32.
    """
    for v in values:
        if v is not None and v.dtype not in (DType.FLOAT32, DType.FLOAT16):
            raise UnsupportedOperatorError(node.op, node.name,
                                           f"element type {v.dtype.short} (only float32/float16 are implemented)")


class _F32View(KernelEmitter):
    """The emitter a float32 lowering sees for a float16 node: its half tensors replaced by float copies."""

    def __init__(self, k: KernelEmitter, remap: dict[int, str], scratch_offset: int) -> None:
        super().__init__(k.ctx, k.node)
        self._remap = remap
        self._base = k
        self._offset = scratch_offset

    def ptr(self, v: Value | None, ctype: str | None = None) -> str:
        if v is not None and id(v) in self._remap:
            return f"((float *)({self._remap[id(v)]}))"
        return super().ptr(v, ctype)

    def scratch(self, ctype: str = "uint8_t") -> str:
        return f"(({ctype} *)({self._base.scratch()} + {self._offset}))"


def _half_values(node: Node) -> list[Value]:
    """Run-time float16 tensors of a node (constant ones are converted at compile time)."""
    seen: dict[int, Value] = {}
    for v in (*node.inputs, *node.outputs):
        if v is not None and v.dtype is DType.FLOAT16 and not v.is_const:
            seen.setdefault(id(v), v)
    return list(seen.values())


def float16_via_f32(op: OpDef) -> OpDef:
    """Lets a float32-only kernel lowering run float16 nodes: constant halves become float constants,
    run-time halves are converted into scratch before the kernel and the outputs converted back."""
    lower, scratch, normalize = op.lower, op.scratch, op.normalize
    assert lower is not None

    def sizes(node: Node) -> list[int]:
        return [(v.type.numel * 4 + 15) // 16 * 16 for v in _half_values(node)]

    def new_scratch(node: Node) -> int:
        return sum(sizes(node)) + (scratch(node) if scratch is not None else 0)

    def new_normalize(node: Node, graph: Graph) -> None:
        for i, v in enumerate(node.inputs):
            if v is not None and v.is_const and v.dtype is DType.FLOAT16:
                node.inputs[i] = graph.constant(f"{v.name}_f32", v.const.astype(np.float32))
        if normalize is not None:
            normalize(node, graph)

    def new_lower(node: Node, k: KernelEmitter) -> None:
        halves = _half_values(node)
        if not halves:
            lower(node, k)
            return
        k.need("ember_f16_arrays")
        base, off, remap = k.scratch(), 0, {}
        for v, size in zip(halves, sizes(node), strict=True):
            remap[id(v)] = f"{base} + {off}"
            off += size
        outs = {id(v) for v in node.outputs if v is not None}
        for v in halves:
            if id(v) not in outs:
                k.line(f"ember_f16_to_f32_n((float *)({remap[id(v)]}), {k.ptr(v, 'uint16_t')}, {v.type.numel});")
        lower(node, _F32View(k, remap, off))
        for v in halves:
            if id(v) in outs:
                k.line(f"ember_f32_to_f16_n({k.ptr(v, 'uint16_t')}, (const float *)({remap[id(v)]}), {v.type.numel});")

    op.lower, op.scratch, op.normalize = new_lower, new_scratch, new_normalize
    op.kernels = (*op.kernels, "ember_f16_arrays")
    return op


def present(v: Value | None) -> Value:
    """A value the op requires (inputs/outputs that ONNX marks optional are checked by the loader)."""
    assert v is not None
    return v


# Gemm ------------------------------------------------------------------------------------------

def _normalize_gemm(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, node.outputs[0])
    b = present(node.input(1))
    if node.attrs.get("transB", 0) and b.is_const:
        # The kernel streams rows of B; a constant B^T is transposed once here instead of at run time.
        node.inputs[1] = graph.constant(f"{b.name}_T", np.ascontiguousarray(b.const.T))
        node.attrs["transB"] = 0


def _bias_strides(c: Value) -> tuple[int, int]:
    """(row, column) element strides that broadcast C (rank <= 2) to an m x n matrix."""
    shape = (1, 1, *c.shape)[-2:]
    return (shape[1] if shape[0] > 1 else 0), (1 if shape[1] > 1 else 0)


def _gemm_scratch(node: Node) -> int:
    b = present(node.input(1))
    return b.type.numel * 4 if node.attrs.get("transB", 0) and not b.is_const else 0


def _lower_gemm(node: Node, k: KernelEmitter) -> None:
    a, c, y = present(node.input(0)), node.input(2), present(node.outputs[0])
    m, n = y.shape
    trans_a = node.attrs.get("transA", 0)
    kk = a.shape[0] if trans_a else a.shape[1]
    a_sm, a_sk = (1, m) if trans_a else (kk, 1)
    bp = k.inp(1)
    if node.attrs.get("transB", 0):  # B (N x K) only known at run time: make it K x N in scratch
        bp = k.scratch("float")
        k.call("ember_transpose2d_f32", bp, k.inp(1), n, kk)
    f32 = DType.FLOAT32
    alpha, beta = literal(node.attrs.get("alpha", 1.0), f32), literal(node.attrs.get("beta", 1.0), f32)
    bias_sm, bias_sn = _bias_strides(c) if c is not None else (0, 0)
    if m == 1 and not trans_a:
        # One row (a classifier head on one image): stream B row by row instead of in column strips.
        k.call("ember_gemv_cols_f32", k.out(0), k.inp(0), bp, n, kk, alpha, k.inp(2) if c is not None else "0",
               bias_sn, beta, *epilogue_args(node))
        return
    k.call("ember_matmul_f32", k.out(0), n, k.inp(0), a_sm, a_sk, bp, n, m, n, kk, alpha,
           k.inp(2) if c is not None else "0", bias_sm, bias_sn, beta, *epilogue_args(node))


def _infer_gemm(node: Node) -> list[TensorType | None]:
    a, b = inp(node, 0), inp(node, 1)
    if a.type.rank != 2 or b.type.rank != 2:
        raise ShapeError(f"node '{node.name}' (Gemm): A and B must be matrices, not {list(a.shape)}, {list(b.shape)}")
    m, ka = a.shape[::-1] if node.attrs.get("transA", 0) else a.shape
    kb, n = b.shape[::-1] if node.attrs.get("transB", 0) else b.shape
    if ka != kb:
        raise ShapeError(f"node '{node.name}' (Gemm): inner dimensions {ka} and {kb} differ")
    c = node.input(2)
    # C broadcasts to Y one way only (the kernel reads it with per-axis strides 0 or 1).
    if c is not None and not _broadcasts_to(c.shape, (m, n)):
        raise ShapeError(f"node '{node.name}' (Gemm): C {list(c.shape)} does not broadcast to Y [{m}, {n}]")
    return [typed(a.dtype, (m, n))]


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """numpy's unidirectional broadcasting: `shape` stretches to `target`, never the other way."""
    tail = target[len(target) - len(shape):]
    return len(shape) <= len(target) and all(d in (1, t) for d, t in zip(shape, tail, strict=True))


def _eval_gemm(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    a, b = np.asarray(xs[0]), np.asarray(xs[1])
    c = xs[2] if len(xs) > 2 else None
    a = a.T if node.attrs.get("transA", 0) else a
    b = b.T if node.attrs.get("transB", 0) else b
    y = np.dot(a, b) * node.attrs.get("alpha", 1.0)
    beta = node.attrs.get("beta", 1.0)
    if c is not None and beta != 0:
        y = y + np.asarray(c) * beta
    return [np.asarray(y).astype(a.dtype)]


# Inputs: (A, B, C (optional, broadcast to M x N)). Attributes: alpha, beta, transA, transB.
register(float16_via_f32(OpDef(
    "Gemm", lower=_lower_gemm, normalize=_normalize_gemm, scratch=_gemm_scratch,
    kernels=("ember_matmul_f32", "ember_transpose2d_f32", "ember_gemv_cols_f32"), infer=_infer_gemm,
    evaluate=_eval_gemm,
    # Y's columns are op(B)'s: B's rows when transposed, else its columns.
    takes_epilogue=True, weights=WeightLayout(lambda n, w: 0 if n.attrs.get("transB", 0) else 1),
    flops=matmul_flops, int8=Int8.LINEAR,
)))


# MatMul ----------------------------------------------------------------------------------------

def _normalize_matmul(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, node.outputs[0])


def _lower_matmul(node: Node, k: KernelEmitter) -> None:
    a, b = present(node.input(0)), present(node.input(1))
    # 1-D operands: A (K) is a 1 x K matrix, B (K) a K x 1 matrix (numpy.matmul semantics).
    ash = (1, a.shape[0]) if a.type.rank == 1 else a.shape
    bsh = (b.shape[0], 1) if b.type.rank == 1 else b.shape
    m, kk = ash[-2], ash[-1]
    n = bsh[-1]
    a_batch, b_batch = ash[:-2], bsh[:-2]
    out_batch = np.broadcast_shapes(a_batch, b_batch)
    nb = math.prod(out_batch)
    act = epilogue_args(node)
    if math.prod(b_batch) == 1 and a_batch == out_batch:
        # One shared B: A's batch dims fold into M, a single large matmul.
        k.call("ember_matmul_f32", k.out(0), n, k.inp(0), kk, 1, k.inp(1), n, nb * m, n, kk, "1.0f",
               "0", 0, 0, "0.0f", *act)
        return
    # Broadcast batch dims: per-batch element offsets of A and B, computed here once.
    idx_a = np.broadcast_to(np.arange(math.prod(a_batch)).reshape(a_batch), out_batch).reshape(-1) * (m * kk)
    idx_b = np.broadcast_to(np.arange(math.prod(b_batch)).reshape(b_batch), out_batch).reshape(-1) * (kk * n)
    ta, tb = k.table(idx_a, DType.INT32), k.table(idx_b, DType.INT32)
    k.need("ember_matmul_f32")
    with k.w.block(f"for (int ember_b = 0; ember_b < {nb}; ++ember_b)"):
        k.call("ember_matmul_f32", f"{k.out(0)} + (ptrdiff_t)ember_b * {m * n}", n,
               f"{k.inp(0)} + {ta}[ember_b]", kk, 1, f"{k.inp(1)} + {tb}[ember_b]", n, m, n, kk, "1.0f",
               "0", 0, 0, "0.0f", *act)


def matmul_shape(node: Node, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy.matmul's output shape (1-D operands promoted, then their added dim dropped)."""
    if not a or not b:
        raise ShapeError(f"node '{node.name}' ({node.op}): scalar operand")
    ash = (1, *a) if len(a) == 1 else a
    bsh = (*b, 1) if len(b) == 1 else b
    if ash[-1] != bsh[-2]:
        raise ShapeError(f"node '{node.name}' ({node.op}): inner dimensions of {list(a)} and {list(b)} differ")
    out = (*broadcast(node, ash[:-2], bsh[:-2]), ash[-2], bsh[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _infer_matmul(node: Node) -> list[TensorType | None]:
    a, b = inp(node, 0), inp(node, 1)
    return [typed(a.dtype, matmul_shape(node, a.shape, b.shape))]


register(float16_via_f32(OpDef(
    "MatMul", lower=_lower_matmul, normalize=_normalize_matmul,
    kernels=("ember_matmul_f32",), infer=_infer_matmul,
    evaluate=lambda n, xs: [np.asarray(np.matmul(xs[0], xs[1]))],
    # B is [..., K, N]: output channels along its last axis; no bias input.
    takes_epilogue=True, weights=WeightLayout(lambda n, w: w.type.rank - 1, bias=None),
    flops=matmul_flops, int8=Int8.LINEAR,
)))


# MatMulPanels (internal: a MatMul with a constant 2-D B, rewritten by ember/passes/conv_algorithms.py where
# the CPU family asks for it) -----------------------------------------------------------------------------
# Inputs: (A float32 [..., K], Bp float32 [N / P, K, P]: B packed at compile time in the P-column panels of
# kernels/matmul.c (P = EMBER_MM_PANEL, the CPU family's mm_panel, or its narrow_panel, 64, for AVX-512's 4-vector
# tiles), so no strip of B is packed at run time and B streams from memory once, in order.

def _panels_dims(node: Node) -> tuple[int, int, int]:
    """(M: A's rows with its batch dims folded in, N, K)."""
    a, bp = present(node.input(0)), present(node.input(1))
    return math.prod(a.shape[:-1]), bp.shape[0] * bp.shape[2], bp.shape[1]


def _lower_matmul_panels(node: Node, k: KernelEmitter) -> None:
    m, n, kk = _panels_dims(node)
    k.call("ember_matmul_panels_f32", k.out(0), n, k.inp(0), kk, 1, k.inp(1), present(node.input(1)).shape[2], m, n,
           kk, "0", 0, 0, *epilogue_args(node))


def _infer_matmul_panels(node: Node) -> list[TensorType | None]:
    a, bp = inp(node, 0), inp(node, 1)
    if bp.type.rank != 3 or a.shape[-1] != bp.shape[1]:
        raise ShapeError(f"node '{node.name}' (MatMulPanels): A {list(a.shape)} and panels {list(bp.shape)}")
    return [typed(a.dtype, (*a.shape[:-1], bp.shape[0] * bp.shape[2]))]


register(OpDef(
    "MatMulPanels", lower=_lower_matmul_panels, kernels=("ember_matmul_panels_f32",), infer=_infer_matmul_panels,
    takes_epilogue=True, flops=lambda n: 2 * _panels_dims(n)[0] * _panels_dims(n)[1] * _panels_dims(n)[2],
))


# MatMulInt4 (weight-only int4, packed) -----------------------------------------------------------
# Y[..., N] = X[..., K] @ W, W[k, j] = (q[j, k] - z[j, b]) * s[j, b], b = k // block_size. The frontends make it
# from com.microsoft MatMulNBits and passes/int4_matmul.py from DequantizeLinear(int4/uint4 constant) -> MatMul,
# so a model's 4-bit weights stay 4 bits in the constant region (the kernel widens one block at a time).
# Inputs: (X float32, B uint8 [N, row_bytes]: the codes 0..15 of row j along K, two per byte, low nibble first,
# each block padded to `block_bytes(K, block_size)`; scales float32 [N, nblk]; zero points (optional): uint8
# [N, ceil(nblk / 2)] packed 4-bit codes, or float32 [N, nblk]; bias (optional) float32 [N]).
# Attributes: K, N, block_size; zero: the zero point of every block when input 3 is absent (8 for MatMulNBits).


def int4_blocks(k: int, block: int) -> tuple[int, int]:
    """(blocks along K, packed bytes per block): a block of odd size is allowed only as the one block."""
    nblk = -(-k // block)
    if block % 2 and nblk > 1:
        raise ValueError(f"int4 blocks of odd size {block} (K={k})")
    return nblk, (block + 1) // 2


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """uint8 codes 0..15 [..., L] -> bytes [..., ceil(L / 2)], element 2i in the low nibble (ONNX's order)."""
    c = np.asarray(codes, np.uint8) & 15
    if c.shape[-1] % 2:
        c = np.concatenate([c, np.zeros((*c.shape[:-1], 1), np.uint8)], axis=-1)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(packed: np.ndarray, count: int) -> np.ndarray:
    """The inverse of pack_nibbles: the first `count` codes along the last axis."""
    p = np.asarray(packed, np.uint8)
    both = np.stack([p & 15, p >> 4], axis=-1).reshape(*p.shape[:-1], -1)
    return both[..., :count]


def int4_weight(node: Node, b: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None) -> np.ndarray:
    """MatMulInt4's W as float32 [K, N] (evaluation and tests; code generation never builds it)."""
    k, n, block = int(node.attrs["K"]), int(node.attrs["N"]), int(node.attrs["block_size"])
    nblk, bb = int4_blocks(k, block)
    q = unpack_nibbles(np.asarray(b).reshape(n, nblk, bb), 2 * bb)[:, :, :block].astype(np.float32)
    if zeros is None:
        z = np.full((n, nblk), float(node.attrs.get("zero", 0.0)), np.float32)
    elif zeros.dtype == np.uint8:
        z = unpack_nibbles(zeros.reshape(n, -1), nblk).astype(np.float32)
    else:
        z = np.asarray(zeros, np.float32).reshape(n, nblk)
    w = (q - z[:, :, None]) * np.asarray(scales, np.float32).reshape(n, nblk)[:, :, None]
    return np.ascontiguousarray(w.reshape(n, nblk * block)[:, :k].T)


def _int4_geometry(node: Node) -> tuple[int, int, int, int, int]:
    """(M rows of X, N, K, blocks, bytes per block)."""
    k, n = int(node.attrs["K"]), int(node.attrs["N"])
    nblk, bb = int4_blocks(k, int(node.attrs["block_size"]))
    return math.prod(present(node.input(0)).shape[:-1]), n, k, nblk, bb


def _infer_int4(node: Node) -> list[TensorType | None]:
    x, b, s = inp(node, 0), inp(node, 1), inp(node, 2)
    m, n, k, nblk, bb = _int4_geometry(node)
    if x.type.rank < 1 or x.shape[-1] != k:
        raise ShapeError(f"node '{node.name}' (MatMulInt4): A {list(x.shape)} does not end in K={k}")
    if b.dtype is not DType.UINT8 or b.shape != (n, nblk * bb) or s.shape != (n, nblk):
        raise ShapeError(f"node '{node.name}' (MatMulInt4): B {list(b.shape)} / scales {list(s.shape)} "
                         f"do not match N={n}, K={k}, block_size={node.attrs['block_size']}")
    return [typed(DType.FLOAT32, (*x.shape[:-1], n))]


def _normalize_int4(node: Node, graph: Graph) -> None:
    require_f32(node, node.input(0), node.input(2), node.input(4))
    z = node.input(3)
    if z is not None and z.dtype not in (DType.UINT8, DType.FLOAT32):
        raise UnsupportedOperatorError(node.op, node.name, f"zero point type {z.dtype.short}")


def _eval_int4(node: Node, xs: list[np.ndarray | None]) -> list[np.ndarray]:
    w = int4_weight(node, np.asarray(xs[1]), np.asarray(xs[2]), xs[3] if len(xs) > 3 else None)
    y = np.matmul(np.asarray(xs[0], np.float32), w)
    if len(xs) > 4 and xs[4] is not None:
        y = y + np.asarray(xs[4], np.float32)
    return [y.astype(np.float32)]


def _lower_int4(node: Node, k: KernelEmitter) -> None:
    m, n, kk, nblk, bb = _int4_geometry(node)
    z = node.input(3)
    zp4 = k.inp(3) if z is not None and z.dtype is DType.UINT8 else "0"
    zpf = k.inp(3) if z is not None and z.dtype is DType.FLOAT32 else "0"
    zdef = literal(float(node.attrs.get("zero", 0.0)), DType.FLOAT32)
    zp_bytes = z.shape[-1] if z is not None else 0
    k.call("ember_matmul_int4", k.out(0), k.inp(0), k.inp(1), k.inp(2), zp4, zpf, zdef, k.inp(4),
           m, n, kk, nblk, bb, nblk * bb, zp_bytes, k.scratch("float"))


def _int4_scratch(node: Node) -> int:
    m, _, _, nblk, bb = _int4_geometry(node)
    return m * (2 * nblk * bb + nblk) * 4


register(OpDef(
    "MatMulInt4", lower=_lower_int4, normalize=_normalize_int4, infer=_infer_int4, evaluate=_eval_int4,
    kernels=("ember_matmul_int4",), scratch=_int4_scratch,
    flops=lambda node: 2 * math.prod(present(node.outputs[0]).shape) * int(node.attrs["K"]),
))
