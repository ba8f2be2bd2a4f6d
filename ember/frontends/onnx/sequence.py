"""ONNX sequence and optional values, resolved while the graph is built.

A static-memory bundle has no lists and no "maybe" at run time, so these values exist only in the
frontend: a sequence is a Python tuple of IR tensor values (`Seq`), an optional is a value or nothing known
at compile time (`Opt`). Every sequence op becomes the tensor ops it amounts to (SplitToSequence a Split,
ConcatFromSequence a Concat, SequenceMap one copy of its body per element) or no op at all (SequenceAt,
SequenceInsert, Identity rearrange the tuple). What cannot be known at compile time (a position or a
length computed at run time, an optional whose presence depends on data) is refused, naming the node.

At the graph's edges a sequence of N elements is N tensor inputs or outputs named `<name>_<k>`
(Graph.sequence_inputs / sequence_outputs record which; NAME.json carries them, Bundle.run takes and
returns Python lists); the element shapes of a sequence input are given as `--input <name>_<k>:TYPE:SHAPE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import numpy_helper

from ember.errors import ModelFormatError, ShapeError, UnsupportedOperatorError
from ember.frontends.onnx.dtypes import dtype_from_onnx
from ember.frontends.onnx.protos import attr_to_python, text
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value

if TYPE_CHECKING:
    from ember.frontends.onnx.control import Scope


@dataclass(frozen=True)
class Seq:
    """A sequence of static length: its elements in order and their element type (for empty ones)."""

    items: tuple[Value, ...]
    dtype: DType


@dataclass(frozen=True)
class Opt:
    """An optional whose presence is known at compile time (`value` None: absent)."""

    value: Value | Seq | None


Item = Value | Seq | Opt

# Operators of this module; inputs that must be compile-time constants (a position, split sizes): the
# node-test harness freezes the graph inputs that feed them, as `--const` does for a user.
SEQUENCE_OPS = {"SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt",
                "SequenceLength", "SplitToSequence", "ConcatFromSequence", "SequenceMap", "Optional",
                "OptionalHasElement", "OptionalGetElement"}
CONST_INPUTS: dict[str, tuple[int, ...]] = {"SequenceInsert": (2,), "SequenceErase": (1,), "SequenceAt": (1,),
                                            "SplitToSequence": (1,)}


def is_structured(x: object) -> bool:
    return isinstance(x, (Seq, Opt))


def flatten(x: Item) -> tuple[object, list[Value]]:
    """(the shape of the structure, its tensors in order): how a sequence or optional crosses an If."""
    if isinstance(x, Value):
        return "tensor", [x]
    if isinstance(x, Seq):
        return ("seq", len(x.items), x.dtype), list(x.items)
    if x.value is None:
        return ("opt", None), []
    inner, values = flatten(x.value)
    return ("opt", inner), values


def unflatten(shape: object, values: list[Value]) -> Item:
    """The structure `flatten` described, over `values` (consumed from the front)."""
    if shape == "tensor":
        return values.pop(0)
    assert isinstance(shape, tuple)
    if shape[0] == "seq":
        return Seq(tuple(values.pop(0) for _ in range(shape[1])), shape[2])
    return Opt(None if shape[1] is None else unflatten(shape[1], values))


def elem_dtype(tp: onnx.TypeProto, what: str) -> DType:
    """The tensor element type inside a sequence/optional type."""
    while not tp.HasField("tensor_type"):
        if tp.HasField("sequence_type"):
            tp = tp.sequence_type.elem_type
        elif tp.HasField("optional_type"):
            tp = tp.optional_type.elem_type
        else:
            raise UnsupportedOperatorError("input", what, "only tensors, sequences and optionals of tensors are "
                                           "supported")
    try:
        return dtype_from_onnx(tp.tensor_type.elem_type)
    except KeyError as e:
        raise ModelFormatError(f"{what}: {str(e).strip(chr(39))}") from None


class SequenceBuilder:
    """The sequence/optional half of the ONNX graph builder (frontends/onnx/loader.py's _Builder)."""

    graph: Graph
    _at: tuple[str, str] = ("", "")  # the node being built (op, label), for refusals

    def _add(self, node: Node) -> None:
        raise NotImplementedError

    def _nodes(self, nodes: list[onnx.NodeProto], env: dict) -> None:
        raise NotImplementedError

    def _constant(self, name: str, arr: np.ndarray, elem_type: int, where: str) -> Value:
        raise NotImplementedError

    def sequence_node(self, np_node: onnx.NodeProto, label: str, env: dict) -> None:
        """One node of SEQUENCE_OPS, or an Identity of a sequence/optional: binds its outputs in `env`."""
        op = np_node.op_type
        args: list[Item | None] = []
        for name in np_node.input:
            if name and name not in env:
                raise ModelFormatError(f"node '{label}' ({op}) reads undefined tensor '{name}'")
            args.append(env[name] if name else None)
        attrs = {a.name: attr_to_python(a) for a in np_node.attribute if a.type != onnx.AttributeProto.GRAPH}
        if op == "SequenceMap":
            results = self._sequence_map(np_node, label, args, env)
        else:
            results = [self._sequence_op(op, label, args, attrs)]
        for name, r in zip(np_node.output, results, strict=False):
            if name:
                env[name] = r

    # one op -----------------------------------------------------------------
    def _sequence_op(self, op: str, label: str, args: list, attrs: dict) -> Item:
        where = f"node '{label}' ({op})"
        self._at = (op, label)
        if op == "Identity":
            return args[0]
        if op == "SequenceConstruct":
            items = tuple(self._tensor(a, where) for a in args)
            if not items or len({v.dtype for v in items}) != 1:
                raise ShapeError(f"{where}: needs one or more tensors of one element type")
            return Seq(items, items[0].dtype)
        if op == "SequenceEmpty":
            return Seq((), dtype_from_onnx(int(attrs.get("dtype", onnx.TensorProto.FLOAT))))
        if op == "Optional":
            if args and args[0] is not None:
                return Opt(args[0])
            if "type" not in attrs:
                raise ModelFormatError(f"{where}: an empty Optional needs its 'type' attribute")
            return Opt(None)
        if op == "OptionalHasElement":
            x = args[0] if args else None
            present = x is not None and not (isinstance(x, Opt) and x.value is None)
            return self.graph.constant(f"{label}_present", np.array(present))
        if op == "OptionalGetElement":
            x = args[0] if args else None
            if isinstance(x, Opt):
                if x.value is None:
                    raise ShapeError(f"{where}: the optional is empty (known at compile time)")
                return x.value
            if x is None:
                raise ModelFormatError(f"{where}: input 0 is required")
            return x
        if op == "SplitToSequence":
            return self._split(args, attrs, label, where)
        seq = self._seq(args[0] if args else None, where)
        n = len(seq.items)
        if op == "SequenceLength":
            return self.graph.constant(f"{label}_length", np.array(n, np.int64))
        if op == "SequenceAt":
            return seq.items[self._position(args, 1, where, n, n - 1, None)]
        if op == "SequenceErase":
            k = self._position(args, 1, where, n, n - 1, n - 1)
            return Seq(seq.items[:k] + seq.items[k + 1:], seq.dtype)
        if op == "SequenceInsert":
            x = self._tensor(args[1] if len(args) > 1 else None, where)
            if x.dtype != seq.dtype:
                raise ShapeError(f"{where}: inserts a {x.dtype.short} tensor into a sequence of {seq.dtype.short}")
            k = self._position(args, 2, where, n, n, n)
            return Seq(seq.items[:k] + (x,) + seq.items[k:], seq.dtype)
        if op == "ConcatFromSequence":
            return self._concat(seq, attrs, label, where)
        raise UnsupportedOperatorError(op, label, "not a sequence operator")

    def _tensor(self, x: object, where: str) -> Value:
        if not isinstance(x, Value):
            raise ShapeError(f"{where}: expects a tensor here, not a {'sequence' if isinstance(x, Seq) else 'optional'}"
                             if x is not None else f"{where}: a required input is missing")
        return x

    def _seq(self, x: object, where: str) -> Seq:
        if isinstance(x, Opt) and isinstance(x.value, Seq):
            x = x.value
        if not isinstance(x, Seq):
            raise ShapeError(f"{where}: input 0 must be a sequence")
        return x

    def _position(self, args: list, i: int, where: str, n: int, top: int, default: int | None) -> int:
        """A position (negative counts from the end) in [-n, top], from a compile-time constant input."""
        p = args[i] if len(args) > i else None
        if p is None:
            if default is None:
                raise ModelFormatError(f"{where}: the position input is required")
            return default
        if not isinstance(p, Value) or not p.is_const:
            op, label = self._at
            raise UnsupportedOperatorError(op, label, "its position is computed at run time; a sequence position "
                                           "must be a compile-time constant (fix it with --const)")
        k = int(np.asarray(p.const).reshape(-1)[0])
        if not -n <= k <= top:
            raise ShapeError(f"{where}: position {k} is out of range for a sequence of {n}")
        return k + n if k < 0 else k

    def _node(self, op: str, name: str, inputs: list[Value | None], count: int = 1,
              attrs: dict | None = None) -> list[Value]:
        outs = [self.graph.value(f"{name}_out{k}" if count > 1 else name, TensorType(DType.FLOAT32, ()))
                for k in range(count)]
        self._add(Node(op, self.graph.unique_name(name), inputs, list(outs), dict(attrs or {})))
        return outs

    def _concat(self, seq: Seq, attrs: dict, label: str, where: str) -> Value:
        if not seq.items:
            raise ShapeError(f"{where}: the sequence is empty (no tensor to concatenate)")
        axis, new_axis = int(attrs.get("axis", 0)), int(attrs.get("new_axis", 0))
        items = list(seq.items)
        if new_axis:
            rank = items[0].type.rank + 1
            if not -rank <= axis < rank:
                raise ShapeError(f"{where}: axis {axis} is out of range for rank {rank}")
            axes = self.graph.constant(f"{label}_axes", np.array([axis % rank], np.int64))
            items = [self._node("Unsqueeze", f"{label}_item{k}", [v, axes])[0] for k, v in enumerate(items)]
        return self._node("Concat", label, list(items), attrs={"axis": axis})[0]

    def _split(self, args: list, attrs: dict, label: str, where: str) -> Seq:
        x = self._tensor(args[0] if args else None, where)
        split = args[1] if len(args) > 1 else None
        axis = int(attrs.get("axis", 0))
        if not -x.type.rank <= axis < x.type.rank:
            raise ShapeError(f"{where}: axis {axis} is out of range for {x.type}")
        axis %= x.type.rank
        n = x.shape[axis]
        squeeze = split is None and not int(attrs.get("keepdims", 1))
        if split is None:
            sizes = [1] * n
        elif not isinstance(split, Value) or not split.is_const:
            raise UnsupportedOperatorError("SplitToSequence", label, "its 'split' input is computed at run time; "
                                           "it sets the sequence's length and must be a compile-time constant")
        else:
            s = np.asarray(split.const).astype(np.int64)
            if s.ndim == 0:
                chunk = int(s)
                if chunk <= 0:
                    raise ShapeError(f"{where}: split {chunk} must be positive")
                sizes = [min(chunk, n - i) for i in range(0, n, chunk)]
            else:
                sizes = [int(d) for d in s.reshape(-1)]
                if sum(sizes) != n or any(d < 0 for d in sizes):
                    raise ShapeError(f"{where}: split sizes {sizes} do not add up to dimension {axis} ({n})")
        if not sizes:
            return Seq((), x.dtype)
        parts = self._node("Split", f"{label}_split", [x, self.graph.constant(f"{label}_sizes",
                                                                              np.array(sizes, np.int64))],
                           len(sizes), {"axis": axis})
        if squeeze:
            axes = self.graph.constant(f"{label}_axes", np.array([axis], np.int64))
            parts = [self._node("Squeeze", f"{label}_item{k}", [p, axes])[0] for k, p in enumerate(parts)]
        return Seq(tuple(parts), x.dtype)

    def _sequence_map(self, np_node: onnx.NodeProto, label: str, args: list, env: dict) -> list[Item]:
        """The body once per element (unrolled), each copy reading element k of every sequence input."""
        from ember.frontends.onnx.control import Scope

        body = next((a.g for a in np_node.attribute if a.name == "body" and a.type == onnx.AttributeProto.GRAPH),
                    None)
        if body is None:
            raise ModelFormatError(f"node '{label}' (SequenceMap): its graph attribute 'body' is missing")
        where = f"node '{label}' (SequenceMap)"
        seqs = [self._seq(a, where) if i == 0 else a for i, a in enumerate(args)]
        lengths = {len(a.items) for a in seqs if isinstance(a, Seq)}
        if len(lengths) != 1:
            raise ShapeError(f"{where}: its sequences have different lengths {sorted(lengths)}")
        if len(body.input) != len(args):
            raise ModelFormatError(f"{where}: the body takes {len(body.input)} inputs, not {len(args)}")
        n = lengths.pop()
        per_output: list[list[Value]] = [[] for _ in body.output]
        for k in range(n):
            scope: Scope = Scope(env, None)
            for formal, a in zip(body.input, args, strict=True):
                scope[formal.name] = a.items[k] if isinstance(a, Seq) else a
            for init in body.initializer:
                scope[init.name] = self._constant(init.name, numpy_helper.to_array(init), init.data_type, label)
            self._nodes(list(body.node), scope)
            for j, out in enumerate(body.output):
                if out.name not in scope:
                    raise ModelFormatError(f"{where}: body output '{text(out.name)}' is not produced")
                per_output[j].append(self._tensor(scope[out.name], where))
        results: list[Item] = []
        for j, out in enumerate(body.output):
            dtype = per_output[j][0].dtype if per_output[j] else elem_dtype(out.type, f"{where} output {j}")
            results.append(Seq(tuple(per_output[j]), dtype))
        return results
