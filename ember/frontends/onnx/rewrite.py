"""Adapters that replace one ONNX node by a small graph of canonical IR ops (contrib.py, ml.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ember.errors import ShapeError, UnsupportedOperatorError
from ember.frontends.onnx.ops import ONNX_OPS, AdaptContext, OnnxOp
from ember.ir.graph import Node, Value


class Rewrite:
    """Builds the canonical nodes that replace one contrib node; the last ones write the node's outputs."""

    def __init__(self, node: Node, ctx: AdaptContext, op_type: str, domain: str) -> None:
        self.node, self.ctx, self.op_type, self.domain = node, ctx, op_type, domain
        self.nodes: list[Node] = []

    def input(self, i: int) -> Value | None:
        return self.node.input(i)

    def need(self, i: int, what: str) -> Value:
        v = self.node.input(i)
        if v is None:
            raise ShapeError(f"node '{self.node.name}' ({self.op_type}): input {i} ({what}) is required")
        return v

    def const(self, what: str, array: np.ndarray) -> Value:
        return self.ctx.const(self.node, what, array)

    def op(self, op: str, inputs: Sequence[Value | None], what: str, attrs: dict | None = None,
           out: Value | None = None, extra_outputs: Sequence[Value | None] = ()) -> Value:
        """Appends `op`; its first output is `out` (a node output) or a new intermediate named `what`."""
        y = out if out is not None else self.ctx.value(self.node, what)
        name = self.ctx.graph.unique_name(f"{self.node.name}_{what}")
        self.nodes.append(Node(op, name, list(inputs), [y, *extra_outputs], dict(attrs or {})))
        return y

    def output(self, i: int) -> Value | None:
        return self.node.outputs[i] if i < len(self.node.outputs) else None

    def copy_to(self, v: Value, i: int) -> None:
        """Makes contrib output `i` (when the model uses it) hold `v`."""
        out = self.output(i)
        if out is not None:
            self.op("Identity", [v], f"out{i}", out=out)

    def dequantize(self, x: Value, scale: Value | None, zero: Value | None, what: str) -> Value:
        if scale is None:
            raise ShapeError(f"node '{self.node.name}' ({self.op_type}): the scale of '{x.name}' is required")
        return self.op("DequantizeLinear", [x, scale, zero], f"{what}_dq", {"axis": 1})

    def quantize(self, y: Value, scale: Value | None, zero: Value | None, out: Value | None, what: str) -> Value:
        if scale is None:
            raise ShapeError(f"node '{self.node.name}' ({self.op_type}): the output scale is required")
        return self.op("QuantizeLinear", [y, scale, zero], what, {"axis": 1}, out=out)

    def refuse(self, detail: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(self.op_type, self.node.name, detail, domain=self.domain or "ai.onnx")


Build = Callable[[Rewrite, dict], None]


def register(domain: str, op_type: str, build: Build, since: int = 1) -> None:
    """`build` writes the canonical nodes of one `op_type` node. The IR op of the table entry only holds the
    node until the adapter replaces it."""

    def adapt(node: Node, ctx: AdaptContext) -> list[Node]:
        r = Rewrite(node, ctx, op_type, domain)
        build(r, node.attrs)
        return r.nodes

    ONNX_OPS[(domain, op_type)] = OnnxOp("Identity", since, adapt)
