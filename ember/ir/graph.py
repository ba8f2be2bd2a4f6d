"""Graph / Node / Value. No operator knowledge lives here: that is in ember.ops."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember.ir.dtypes import DType, TensorType

BLOCK_PIXELS = 64  # EMBER_QPB of kernels/qgemm.c: a channel-blocked tensor's pixels per block


@dataclass(eq=False)
class Value:
    """A tensor: a graph input, a constant, or the output of one node."""

    name: str
    type: TensorType
    producer: Node | None = None
    const: np.ndarray | None = None
    # Stored channel-blocked (passes/int8_layout.py): a 4-D byte tensor as words of four channels in
    # blocks of BLOCK_PIXELS pixels, the last block padded.
    blocked: bool = False

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def storage_bytes(self) -> int:
        """Bytes its buffer holds: the tensor's, or whole blocks of pixels when blocked."""
        if not self.blocked:
            return self.type.nbytes
        n, c, *spatial = self.shape
        return n * c * -(-math.prod(spatial) // BLOCK_PIXELS) * BLOCK_PIXELS

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    def __repr__(self) -> str:
        return f"%{self.name}:{self.type}"


@dataclass(eq=False)
class Node:
    """One operation. `op` names an OpDef in ember.ops; `attrs` hold its attributes, defaults filled in.

    A control-flow node holds `subgraphs` (an If's branches, a Loop's body). A subgraph reads nothing of
    the enclosing graph implicitly: every non-constant outer value it needs is one of the node's inputs,
    bound to one of the subgraph's own `inputs` (its formal parameters); the OpDef's `bindings` says which.
    Constants are the subgraph's own values (they may share the outer array)."""

    op: str
    name: str
    inputs: list[Value | None]
    outputs: list[Value | None]
    attrs: dict[str, Any] = field(default_factory=dict)
    subgraphs: dict[str, Graph] = field(default_factory=dict)

    def input(self, i: int) -> Value | None:
        return self.inputs[i] if i < len(self.inputs) else None

    def __repr__(self) -> str:
        ins = ", ".join(repr(v) if v is not None else "_" for v in self.inputs)
        outs = ", ".join(repr(v) if v is not None else "_" for v in self.outputs)
        return f"{outs} = {self.op}[{self.name}]({ins})"


class Graph:
    """A topologically ordered list of nodes with named inputs and outputs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        # Model-level output names (values may be renamed or replaced by passes).
        self.output_names: list[str] = []
        # Outputs whose size depends on values (ember/ops/counted.py): model output name -> (the name of the
        # output holding its count of valid entries, the axis the count applies to).
        self.valid_counts: dict[str, tuple[str, int]] = {}
        # Model-level input/output name -> the layout its frontend stores it in ("NHWC" for TFLite images).
        self.layouts: dict[str, str] = {}
        # Model inputs/outputs that are sequences (static length, frontends/onnx/sequence.py): model name ->
        # the names of the tensor inputs/outputs holding its elements, in order.
        self.sequence_inputs: dict[str, list[str]] = {}
        self.sequence_outputs: dict[str, list[str]] = {}
        # Recurrent state carried by the caller (TFLite variable tensors with --state io): input name -> (the
        # output holding its value after the run, the stored value of a reset state: its zero point).
        self.state_outputs: dict[str, tuple[str, int | float]] = {}
        self.nodes: list[Node] = []
        self._names: set[str] = set()

    def subgraph(self, name: str) -> Graph:
        """An empty graph for a control-flow node of this one, drawing names from the same supply (so every
        value of the whole nest has its own name)."""
        g = Graph(self.unique_name(name))
        g._names = self._names
        return g

    # construction -------------------------------------------------------
    def unique_name(self, base: str | bytes) -> str:
        if isinstance(base, bytes):  # protobuf hands back proto2 strings that are not UTF-8 as bytes
            base = base.decode("utf-8", errors="replace")
        name, i = base, 1
        while name in self._names:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    def value(self, name: str, type_: TensorType, const: np.ndarray | None = None) -> Value:
        return Value(self.unique_name(name), type_, None, const)

    def constant(self, name: str, array: np.ndarray) -> Value:
        array = np.array(array, order="C")  # a copy, and 0-d stays 0-d
        t = TensorType(DType.from_numpy(array.dtype), tuple(int(s) for s in array.shape))
        return self.value(name, t, array)

    def add_node(self, node: Node, index: int | None = None) -> Node:
        for o in node.outputs:
            if o is not None:
                o.producer = node
        if index is None:
            self.nodes.append(node)
        else:
            self.nodes.insert(index, node)
        return node

    def remove_node(self, node: Node) -> None:
        self.nodes.remove(node)

    # queries ------------------------------------------------------------
    def values(self) -> Iterator[Value]:
        seen: set[int] = set()
        for v in self.inputs:
            seen.add(id(v))
            yield v
        for n in self.nodes:
            for v in [*n.inputs, *n.outputs]:
                if v is not None and id(v) not in seen:
                    seen.add(id(v))
                    yield v

    def consumers(self) -> dict[int, list[Node]]:
        """Map id(value) -> nodes reading it (a node appears once per distinct use)."""
        uses: dict[int, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs:
                if v is not None:
                    lst = uses.setdefault(id(v), [])
                    if not lst or lst[-1] is not n:
                        lst.append(n)
        return uses

    def replace_uses(self, old: Value, new: Value) -> None:
        """Make every reader of `old` (nodes and graph outputs) read `new` instead."""
        for n in self.nodes:
            n.inputs = [new if v is old else v for v in n.inputs]
        self.outputs = [new if v is old else v for v in self.outputs]

    def is_output(self, v: Value) -> bool:
        return any(o is v for o in self.outputs)

    def is_input(self, v: Value) -> bool:
        return any(i is v for i in self.inputs)

    def walk(self) -> Iterator[Node]:
        """Every node, those of subgraphs included (each control-flow node before its subgraphs' nodes)."""
        for n in self.nodes:
            yield n
            for g in n.subgraphs.values():
                yield from g.walk()

    def all_graphs(self) -> Iterator[Graph]:
        """This graph and every subgraph nested in it."""
        yield self
        for n in self.nodes:
            for g in n.subgraphs.values():
                yield from g.all_graphs()

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.walk():
            counts[n.op] = counts.get(n.op, 0) + 1
        return dict(sorted(counts.items()))

    def dump(self) -> str:
        lines = [f"graph {self.name}({', '.join(map(repr, self.inputs))}) -> ({', '.join(map(repr, self.outputs))})"]
        for n in self.nodes:
            lines.append(f"  {n!r}")
            for key, g in n.subgraphs.items():
                lines.append(f"    {key}:")
                lines += ["    " + ln for ln in g.dump().splitlines()]
        return "\n".join(lines)
