"""Weight-only int4: MatMul(X, DequantizeLinear(int4/uint4 constant W[K, N])) -> MatMulInt4 on the packed codes.

The opset-21 form of a 4-bit weight (onnxruntime's and Olive's int4 QDQ exports): W int4/uint4, scales blocked
along K (axis 0, block_size), per output column (axis 1) or per tensor, optional zero points. Left alone,
fold_qdq would dequantize W into a float32 constant (8x the bytes of the file's weight); here the MatMul instead
becomes MatMulInt4 (ember/ops/matmul.py), which keeps W as two codes per byte in the constant region and widens
one block at a time. The DequantizeLinear stays a `fold_late` node (fold_constants leaves it), so this pass,
which runs before fold_qdq, sees it; once no MatMul reads it, remove_dead_nodes drops it.

Shapes it cannot express (scales blocked along N or per row of W, odd blocks, float16) keep the float path.
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops.matmul import int4_blocks, pack_nibbles

_CODES = {DType.INT4: 8, DType.UINT4: 0}  # added to a value to make its code 0..15


def pack_int4_matmuls(graph: Graph) -> None:
    producers = {id(v): n for n in graph.nodes for v in n.outputs if v is not None}
    for i, node in enumerate(graph.nodes):
        w = node.input(1)
        dq = producers.get(id(w)) if node.op == "MatMul" and w is not None else None
        if dq is None or dq.op != "DequantizeLinear":
            continue
        packed = _packed_weight(graph, dq, node)
        if packed is not None:
            inputs, attrs = packed
            graph.nodes[i] = Node("MatMulInt4", node.name, [node.inputs[0], *inputs, None], node.outputs, attrs)
            for o in node.outputs:
                if o is not None:
                    o.producer = graph.nodes[i]


def _packed_weight(graph: Graph, dq: Node, mm: Node) -> tuple[list[Value | None], dict] | None:
    """MatMulInt4's (B, scales, zero points) and attributes for `dq`'s weight; None where it does not fit."""
    q, scale, zp = dq.input(0), dq.input(1), dq.input(2)
    x, y = mm.input(0), mm.outputs[0]
    if (q is None or scale is None or x is None or y is None or q.dtype not in _CODES or q.type.rank != 2
            or not q.is_const or not scale.is_const or (zp is not None and not zp.is_const)
            or x.dtype is not DType.FLOAT32 or y.dtype is not DType.FLOAT32 or x.type.rank < 1
            or dq.outputs[0] is None or dq.outputs[0].dtype is not DType.FLOAT32):
        return None
    k, n = q.shape
    axis, block = int(dq.attrs.get("axis", 1)) % 2, int(dq.attrs.get("block_size", 0))
    s = np.asarray(scale.const, np.float32)
    if s.size == 1 or (block <= 0 and axis == 1 and s.shape == (n,)):
        block = k  # per tensor or per output column: one block spans K
        to_grid = lambda a: np.broadcast_to(np.asarray(a).reshape(1, -1), (1, n)).T  # noqa: E731
    elif block > 0 and axis == 0 and s.shape == (-(-k // block), n):
        to_grid = lambda a: np.broadcast_to(np.asarray(a), s.shape).T  # noqa: E731
    else:
        return None
    try:
        nblk, bb = int4_blocks(k, block)
    except ValueError:
        return None
    offset = _CODES[q.dtype]
    codes = (np.asarray(q.const).astype(np.int16) + offset).T  # [N, K], 0..15
    flat = np.zeros((n, nblk * block), np.int16)
    flat[:, :k] = codes
    grid = np.zeros((n, nblk, 2 * bb), np.int16)  # each block padded to whole bytes; X is zero there
    grid[:, :, :block] = flat.reshape(n, nblk, block)
    packed = pack_nibbles(grid.reshape(n, -1).astype(np.uint8))
    inputs: list[Value | None] = [graph.constant(f"{q.name}_packed", packed),
                                  graph.constant(f"{scale.name}_grid", np.ascontiguousarray(to_grid(s)))]
    zero = float(offset)
    if zp is not None:
        z = np.ascontiguousarray(to_grid(np.asarray(zp.const).astype(np.int16) + offset))  # [N, nblk]
        if np.all(z == z.flat[0]):
            zero = float(z.flat[0])
        else:
            inputs.append(graph.constant(f"{zp.name}_packed", pack_nibbles(z.astype(np.uint8))))
    if len(inputs) == 2:
        inputs.append(None)
    return inputs, {"K": k, "N": n, "block_size": block, "zero": zero}
