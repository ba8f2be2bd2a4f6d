"""Classifier heads as panel GEMVs: a float32 Gemm of one row with constant weights becomes GemvPanels
(ops/gemv.py), its B packed at compile time in panels of the CPU family's width.

Gemm's own one-row path (ember_gemv_cols_f32) streams B row by row, four rows at a time, and reads and writes
all of y (1000 floats) for each four rows. With B in panels ([ceil(N/P), K, P]), each panel's sums stay in
registers over all of K and the weights stream once, front to back (see kernels/gemv.c for the numbers).
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node


def _fits(node: Node) -> bool:
    """y = x B (+ c, one value per column): one row, B constant (normalize made a constant B^T into B), no
    scaling, float32."""
    if node.op != "Gemm" or node.attrs.get("transA", 0) or node.attrs.get("transB", 0):
        return False
    a, b, c, y = node.input(0), node.input(1), node.input(2), node.outputs[0]
    if (a is None or b is None or y is None or b.const is None or a.type.rank != 2 or b.type.rank != 2
            or a.shape[0] != 1 or any(v.dtype is not DType.FLOAT32 for v in (a, b, y))
            or float(node.attrs.get("alpha", 1.0)) != 1.0):
        return False
    n = b.shape[1]
    return c is None or (c.is_const and c.dtype is DType.FLOAT32 and tuple(c.shape) in ((n,), (1, n))
                         and float(node.attrs.get("beta", 1.0)) == 1.0)


def pack(b: np.ndarray, panel: int) -> np.ndarray:
    """[K, N] -> [ceil(N/P), K, P], the columns past N zero."""
    k, n = b.shape
    padded = np.zeros((k, -(-n // panel) * panel), np.float32)
    padded[:, :n] = b
    return np.ascontiguousarray(padded.reshape(k, -1, panel).transpose(1, 0, 2))


def gemv_panels(graph: Graph, panel: int) -> None:
    for node in graph.nodes:
        if not _fits(node):
            continue
        b = node.inputs[1]
        assert b is not None and b.const is not None
        node.inputs[1] = graph.constant(f"{node.name}_b_gemv", pack(b.const, panel))
        for attr in ("alpha", "beta", "transA", "transB"):
            node.attrs.pop(attr, None)
        node.attrs["n"] = b.shape[1]
        node.op = "GemvPanels"
