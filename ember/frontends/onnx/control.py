"""If, Loop and Scan of an ONNX graph as the IR's control-flow nodes (ember/ops/control.py).

A subgraph becomes an IR Graph whose outer reads are explicit: `Scope` turns each outer value a subgraph
names into a formal input of its own, which the control-flow node binds to the outer value. An If whose
condition is a constant is inlined instead; Scan becomes a Loop of static trip count that gathers its scan
elements; a Loop whose body needs its iteration number at compile time (a Slice at it) is unrolled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import numpy as np
import onnx
from onnx import numpy_helper

from ember.errors import ModelFormatError, ShapeError, UnsupportedOperatorError
from ember.frontends.onnx.protos import attr_to_python, text
from ember.frontends.onnx.sequence import flatten, is_structured, unflatten
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value


class NotConstant(ShapeError):
    """An input that sets a shape is computed at run time (a Loop body slicing at its iteration number)."""


# A Loop whose body needs its iteration number at compile time, or that carries a sequence (its length grows
# per iteration), is unrolled up to this many iterations.
UNROLL_MAX = 64


class Scope(dict):
    """The tensor names one graph of a nest sees: its own, then (looked up on first use) those of the graph
    around it. There an outer constant becomes a constant of this graph and any other outer value is
    captured: a new formal input of this graph, which the control-flow node binds to the outer value.
    `graph` None: the same graph (an inlined If branch), names simply fall through."""

    def __init__(self, outer: Mapping[str, Value], graph: Graph | None) -> None:
        super().__init__()
        self.outer, self.graph = outer, graph
        self.captured: list[tuple[Value, Value]] = []  # (outer value, its formal here)

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self.outer

    def __missing__(self, name: str) -> Value:
        v = self.outer[name]
        if self.graph is not None and is_structured(v):  # a sequence/optional: each of its tensors captured
            shape, values = flatten(v)
            v = unflatten(shape, [self._capture(x) for x in values])
        elif self.graph is not None:
            v = self._capture(v)
        self[name] = v
        return v

    def _capture(self, v: Value) -> Value:
        if self.graph is not None:
            local = Value(self.graph.unique_name(v.name), v.type, None, v.const)
            if not v.is_const:
                self.captured.append((v, local))
            v = local
        return v


def _graph_attr(np_node: onnx.NodeProto, name: str, label: str) -> onnx.GraphProto:
    for a in np_node.attribute:
        if a.name == name and a.type == onnx.AttributeProto.GRAPH:
            return a.g
    raise ModelFormatError(f"node '{label}' ({np_node.op_type}): its graph attribute '{name}' is missing")


class ControlFlowBuilder:
    """The control-flow half of the ONNX graph builder (frontends/onnx/loader.py's _Builder)."""

    graph: Graph
    opset: int

    def _nodes(self, nodes: list[onnx.NodeProto], env: dict[str, Value]) -> None:
        raise NotImplementedError

    def _add(self, node: Node) -> None:
        raise NotImplementedError

    def _constant(self, name: str, arr: np.ndarray, elem_type: int, where: str) -> Value:
        raise NotImplementedError

    def control_flow(self, np_node: onnx.NodeProto, label: str, env: dict[str, Value]) -> None:
        """An If, Loop or Scan node of the graph being built."""
        for name in np_node.input:
            if name and name not in env:
                raise ModelFormatError(f"node '{label}' ({np_node.op_type}) reads undefined tensor '{name}'")
        build = {"If": self._if, "Loop": self._loop, "Scan": self._scan}[np_node.op_type]
        build(np_node, label, env)

    @contextmanager
    def _into(self, graph: Graph) -> Iterator[None]:
        """Nodes and constants made meanwhile go to `graph` (a subgraph being built)."""
        outer, self.graph = self.graph, graph
        try:
            yield
        finally:
            self.graph = outer

    def _subgraph(self, proto: onnx.GraphProto, env: Mapping[str, Value], formals: list[tuple[str, TensorType]],
                  label: str, prologue: Callable[[Scope], None] | None = None,
                  shapes: list[object] | None = None) -> tuple[Graph, list[Value]]:
        """An ONNX subgraph as an IR Graph whose inputs are `formals` (bound to the proto's inputs by
        position) and then one formal per captured outer value; returns it and the captured values.
        An output that is a sequence/optional becomes its tensors; `shapes` gets each output's structure."""
        sub = self.graph.subgraph(text(proto.name) or label)
        scope = Scope(env, sub)
        own = []
        for (name, t), proto_input in zip(formals, [*proto.input, *[None] * len(formals)], strict=False):
            v = Value(sub.unique_name(text(proto_input.name) if proto_input is not None else name), t)
            own.append(v)
            if proto_input is not None:
                scope[proto_input.name] = v
        with self._into(sub):
            for init in proto.initializer:
                scope[init.name] = self._constant(init.name, numpy_helper.to_array(init), init.data_type, label)
            if prologue is not None:
                prologue(scope)
            self._nodes(list(proto.node), scope)
        for out in proto.output:
            if out.name not in scope:
                raise ModelFormatError(f"node '{label}': subgraph output '{text(out.name)}' is not produced")
            shape, values = flatten(scope[out.name])
            if shapes is not None:
                shapes.append(shape)
            elif shape != "tensor":
                raise UnsupportedOperatorError("Loop", label, f"its body output '{text(out.name)}' is a sequence or "
                                               "optional: only a Loop unrolled at compile time carries those")
            sub.outputs.extend(values)
            sub.output_names.extend([text(out.name)] if shape == "tensor" else
                                    [f"{text(out.name)}_{k}" for k in range(len(values))])
        sub.inputs = own + [f for _, f in scope.captured]
        return sub, [o for o, _ in scope.captured]

    def _outputs(self, np_node: onnx.NodeProto, label: str, count: int) -> list[Value | None]:
        names = [*np_node.output, *[""] * (count - len(np_node.output))]
        return [self.graph.value(text(n) or f"{label}_out{k}", TensorType(DType.FLOAT32, ()))
                for k, n in enumerate(names[:count])]

    def _bind(self, np_node: onnx.NodeProto, node: Node, env: dict[str, Value]) -> None:
        self._add(node)
        for name, v in zip(np_node.output, node.outputs, strict=False):
            if name and v is not None:
                env[name] = v

    def _if(self, np_node: onnx.NodeProto, label: str, env: dict[str, Value]) -> None:
        cond = env[np_node.input[0]]
        if cond.is_const:
            self._inline_if(np_node, label, env, cond)
            return
        branches, captured, shapes = {}, [], []
        for key in ("then", "else"):
            proto = _graph_attr(np_node, f"{key}_branch", label)
            shapes.append([])
            branches[key], caps = self._subgraph(proto, env, [], f"{label}_{key}", shapes=shapes[-1])
            captured.append(caps)
        if shapes[0] != shapes[1]:
            raise UnsupportedOperatorError("If", label, "its branches give sequences of different lengths or "
                                           "optionals of different presence, and the condition is computed at "
                                           "run time (fix it with --const)")
        captures: list[Value] = []
        for v in [*captured[0], *captured[1]]:
            if not any(v is c for c in captures):
                captures.append(v)
        for g, caps in zip(branches.values(), captured, strict=True):
            mine = {id(o): f for o, f in zip(caps, g.inputs, strict=True)}
            g.inputs = [mine.get(id(c)) or Value(g.unique_name(c.name), c.type) for c in captures]
        count = len(branches["then"].outputs)
        if all(shape == "tensor" for shape in shapes[0]):
            outputs = self._outputs(np_node, label, count)
        else:
            outputs = [self.graph.value(f"{label}_out{k}", TensorType(DType.FLOAT32, ())) for k in range(count)]
        self._add(Node("If", label, [cond, *captures], list(outputs), {}, branches))
        for name, shape in zip(np_node.output, shapes[0], strict=False):
            v = unflatten(shape, outputs)  # consumes `outputs` from the front
            if name:
                env[name] = v

    def _loop(self, np_node: onnx.NodeProto, label: str, env: dict[str, Value]) -> None:
        names = [*np_node.input, "", ""]
        m = env[names[0]] if names[0] else None
        cond = env[names[1]] if names[1] else None
        if any(not n for n in np_node.input[2:]):
            raise ModelFormatError(f"node '{label}' (Loop): a loop-carried initial value is missing")
        initial = [env[n] for n in np_node.input[2:]]
        body_proto = _graph_attr(np_node, "body", label)
        if len(body_proto.input) != 2 + len(initial):
            raise ModelFormatError(f"node '{label}' (Loop): the body takes {len(body_proto.input)} inputs, not "
                                   f"2 + {len(initial)} loop-carried values")
        try:
            if any(is_structured(v) for v in initial):  # a sequence grows per iteration: unrolled
                raise NotConstant(f"node '{label}' (Loop): it carries a sequence or optional")
            formals = [("iteration", TensorType(DType.INT64, ())), ("cond", TensorType(DType.BOOL, ())),
                       *((v.name, TensorType(v.dtype, v.shape)) for v in initial)]
            body, captures = self._subgraph(body_proto, env, formals, f"{label}_body")
        except NotConstant as e:
            if m is None or not m.is_const or not 0 < int(np.asarray(m.const).reshape(-1)[0]) <= UNROLL_MAX:
                raise NotConstant(f"{e}; such a Loop (its iteration number or a carried sequence needed at compile "
                                  f"time) is unrolled only with a constant trip count of 1 to {UNROLL_MAX}") from None
            results = self._unroll(body_proto, label, env, int(np.asarray(m.const).reshape(-1)[0]), cond, initial)
            for name, v in zip(np_node.output, results, strict=False):
                if name:
                    env[name] = v
            return
        outputs = self._outputs(np_node, label, len(body.outputs) - 1)
        node = Node("Loop", label, [m, cond, *initial, *captures], outputs, {"carried": len(initial)},
                    {"body": body})
        self._bind(np_node, node, env)

    def _unroll(self, body_proto: onnx.GraphProto, label: str, env: dict[str, Value], trips: int,
                cond: Value | None, initial: list[Value]) -> list[Value]:
        """The Loop as `trips` copies of its body, each with its iteration number a constant (so what it
        decides folds); the condition must stay true (no early exit), the scan elements are stacked."""
        if cond is not None and not (cond.is_const and bool(np.asarray(cond.const).all())):
            raise UnsupportedOperatorError("Loop", label, "its body needs the iteration number at compile time "
                                           "(unrolled), but its condition is computed at run time")
        names = [i.name for i in body_proto.input]
        carried, scanned = list(initial), []
        always = self.graph.constant(f"{label}_cond", np.array(True))
        for it in range(trips):
            scope = Scope(env, None)
            scope[names[0]] = self.graph.constant(f"{label}_iteration{it}", np.array(it, np.int64))
            scope[names[1]] = always
            for name, v in zip(names[2:], carried, strict=True):
                scope[name] = v
            for init in body_proto.initializer:
                scope[init.name] = self._constant(init.name, numpy_helper.to_array(init), init.data_type, label)
            self._nodes(list(body_proto.node), scope)
            outs = []
            for out in body_proto.output:
                if out.name not in scope:
                    raise ModelFormatError(f"node '{label}': subgraph output '{text(out.name)}' is not produced")
                outs.append(scope[out.name])
            go = outs[0]
            if not (go is always or (go.is_const and bool(np.asarray(go.const).all()))):
                raise UnsupportedOperatorError("Loop", label, "its body needs the iteration number at compile time "
                                               "(unrolled), but its condition is computed at run time")
            carried = outs[1:1 + len(initial)]
            scanned.append(outs[1 + len(initial):])
        stacks = zip(*scanned, strict=True)
        return carried + [self._stack(list(elems), f"{label}_scan{k}") for k, elems in enumerate(stacks)]

    def _stack(self, values: list[Value], label: str) -> Value:
        """The values (one type) stacked along a new first axis."""
        rows = []
        for k, v in enumerate(values):
            shape = self.graph.constant(f"{label}_shape", np.array((1, *v.shape), np.int64))
            row = self.graph.value(f"{label}_row{k}", v.type)
            self._add(Node("Reshape", f"{label}_row{k}", [v, shape], [row]))
            rows.append(row)
        if len(rows) == 1:
            return rows[0]
        out = self.graph.value(label, rows[0].type)
        self._add(Node("Concat", label, rows, [out], {"axis": 0}))
        return out

    def _scan(self, np_node: onnx.NodeProto, label: str, env: dict[str, Value]) -> None:
        """Scan as a Loop of static trip count (opset 8's batched form: one Loop per batch element)."""
        attrs = {a.name: attr_to_python(a) for a in np_node.attribute}
        body_proto = _graph_attr(np_node, "body", label)
        batched = self.opset < 9
        names = list(np_node.input[1:] if batched else np_node.input)
        if batched and np_node.input and np_node.input[0]:
            lens = env[np_node.input[0]]
            if not lens.is_const:
                raise UnsupportedOperatorError("Scan", label, "sequence_lens computed at run time (data-dependent "
                                               "lengths)")
            full = {v.shape[1] for v in (env[n] for n in names[len(names) - int(attrs.get("num_scan_inputs", 0)):])}
            if set(np.asarray(lens.const).reshape(-1).tolist()) - full:
                raise UnsupportedOperatorError("Scan", label, "sequence_lens shorter than the scan inputs")
        if any(not name for name in names):
            raise ModelFormatError(f"node '{label}' (Scan): an input is missing (only opset 8's sequence_lens may "
                                   "be left out)")
        values = [env[n] for n in names]
        s = int(attrs.get("num_scan_inputs", 0))
        n = len(values) - s
        if s < 1 or n < 0:
            raise ModelFormatError(f"node '{label}' (Scan): num_scan_inputs={s} does not fit its {len(values)} inputs")
        if len(body_proto.input) != n + s:
            raise ModelFormatError(f"node '{label}' (Scan): the body takes {len(body_proto.input)} inputs, not "
                                   f"{n} states + {s} scan elements")
        scans = len(body_proto.output) - n
        if scans < 0:
            raise ModelFormatError(f"node '{label}' (Scan): the body gives fewer outputs than states")
        if batched:
            in_axes, in_dirs = [0] * s, [int(d) for d in attrs.get("directions", [0] * s)]
            out_axes, out_dirs = [0] * scans, [0] * scans
        else:
            in_axes = [int(a) for a in attrs.get("scan_input_axes", [0] * s)]
            in_dirs = [int(d) for d in attrs.get("scan_input_directions", [0] * s)]
            out_axes = [int(a) for a in attrs.get("scan_output_axes", [0] * scans)]
            out_dirs = [int(d) for d in attrs.get("scan_output_directions", [0] * scans)]
        if len(in_axes) != s or len(in_dirs) != s or len(out_axes) != scans or len(out_dirs) != scans:
            raise ModelFormatError(f"node '{label}' (Scan): the axes/directions attributes need {s} (inputs) and "
                                   f"{scans} (outputs) entries")
        spec = (in_axes, in_dirs, out_axes, out_dirs)
        if not batched:
            results = self._scan_loop(label, env, body_proto, values[:n], values[n:], spec)
        else:
            batch = {v.shape[0] if v.type.rank else -1 for v in values}
            if len(batch) != 1 or -1 in batch:
                raise ShapeError(f"node '{label}' (Scan): opset 8's inputs must share a batch dimension, not "
                                 f"{sorted(batch)}")
            per_batch = []
            for b in range(batch.pop()):
                index = self.graph.constant(f"{label}_batch{b}", np.array(b, np.int64))
                picked = []
                for k, v in enumerate(values):
                    row = self.graph.value(f"{v.name}_batch{b}", v.type)
                    self._add(Node("Gather", f"{label}_batch{b}_in{k}", [v, index], [row], {"axis": 0}))
                    picked.append(row)
                per_batch.append(self._scan_loop(f"{label}_batch{b}", env, body_proto, picked[:n], picked[n:], spec))
            results = [self._stack(list(vs), f"{label}_out{k}") for k, vs in enumerate(zip(*per_batch, strict=True))]
        for name, v in zip(np_node.output, results, strict=False):
            if name:
                env[name] = v

    def _scan_loop(self, label: str, env: dict[str, Value], body_proto: onnx.GraphProto, states: list[Value],
                   xs: list[Value], spec: tuple[list[int], list[int], list[int], list[int]]) -> list[Value]:
        """One Scan as a Loop: each scan input is captured whole and the body gathers its element (at the
        iteration number, or counted from the end when reversed); stacked outputs are then reversed and moved
        to their axis where asked. Returns the final states and the scan outputs."""
        in_axes, in_dirs, out_axes, out_dirs = (list(x) for x in spec)
        n = len(states)
        for k, x in enumerate(xs):
            if not -x.type.rank <= in_axes[k] < x.type.rank:
                raise ShapeError(f"node '{label}' (Scan): scan_input_axes[{k}]={in_axes[k]} is out of range for "
                                 f"{x.type}")
            in_axes[k] %= x.type.rank
        lengths = {x.shape[a] for x, a in zip(xs, in_axes, strict=True)}
        if len(lengths) != 1:
            raise ShapeError(f"node '{label}' (Scan): its scan inputs have different lengths {sorted(lengths)}")
        trips = lengths.pop()
        proto_names = [i.name for i in body_proto.input]
        trimmed = onnx.GraphProto()
        trimmed.CopyFrom(body_proto)
        del trimmed.input[n:]  # the scan elements are gathered in the prologue, not bound as formals
        trimmed.input.insert(0, onnx.ValueInfoProto(name=f"{label}/iteration"))
        trimmed.input.insert(1, onnx.ValueInfoProto(name=f"{label}/cond"))
        trimmed.output.insert(0, onnx.ValueInfoProto(name=f"{label}/cond"))  # passes through: `trips` iterations
        formals = [("iteration", TensorType(DType.INT64, ())), ("cond", TensorType(DType.BOOL, ())),
                   *((v.name, TensorType(v.dtype, v.shape)) for v in states)]

        def gather_elements(scope: Scope) -> None:
            iteration = scope[f"{label}/iteration"]
            for k, (x, axis, reverse) in enumerate(zip(xs, in_axes, in_dirs, strict=True)):
                xin = Value(self.graph.unique_name(x.name), x.type, None, x.const)
                if not x.is_const:
                    scope.captured.append((x, xin))
                index = iteration
                if reverse:
                    index = self.graph.value(f"{label}_index{k}", TensorType(DType.INT64, ()))
                    last = self.graph.constant(f"{label}_last", np.array(trips - 1, np.int64))
                    self._add(Node("Sub", f"{label}_reverse{k}", [last, iteration], [index]))
                elem = self.graph.value(f"{label}_element{k}", TensorType(x.dtype, ()))
                self._add(Node("Gather", f"{label}_element{k}", [xin, index], [elem], {"axis": axis}))
                scope[proto_names[n + k]] = elem

        body, captures = self._subgraph(trimmed, env, formals, f"{label}_body", gather_elements)
        scans = len(body.outputs) - 1 - n
        m = self.graph.constant(f"{label}_trips", np.array(trips, np.int64))
        stacked = [self.graph.value(f"{label}_{'state' if k < n else 'stacked'}{k}", TensorType(DType.FLOAT32, ()))
                   for k in range(n + scans)]
        self._add(Node("Loop", label, [m, None, *states, *captures], list(stacked), {"carried": n}, {"body": body}))
        results = list(stacked)
        for k in range(scans):
            v = stacked[n + k]
            if out_dirs[k]:
                order = self.graph.constant(f"{label}_reversed", np.arange(trips - 1, -1, -1, dtype=np.int64))
                r = self.graph.value(f"{label}_reversed{k}", v.type)
                self._add(Node("Gather", f"{label}_reverse_out{k}", [v, order], [r], {"axis": 0}))
                v = r
            rank = v.type.rank
            if not -rank <= out_axes[k] < rank:
                raise ShapeError(f"node '{label}' (Scan): scan_output_axes[{k}]={out_axes[k]} is out of range for "
                                 f"rank {rank}")
            axis = out_axes[k] % rank
            if axis:
                perm = [*range(1, axis + 1), 0, *range(axis + 1, rank)]
                t = self.graph.value(f"{label}_moved{k}", v.type)
                self._add(Node("Transpose", f"{label}_axis_out{k}", [v], [t], {"perm": perm}))
                v = t
            results[n + k] = v
        return results

    def _inline_if(self, np_node: onnx.NodeProto, label: str, env: dict[str, Value], cond: Value) -> None:
        branch_name = "then_branch" if bool(np.asarray(cond.const).reshape(-1)[0]) else "else_branch"
        branch = _graph_attr(np_node, branch_name, label)
        inner = Scope(env, None)
        for init in branch.initializer:
            inner[init.name] = self._constant(init.name, numpy_helper.to_array(init), init.data_type, label)
        self._nodes(list(branch.node), inner)
        for out_name, branch_out in zip(np_node.output, branch.output, strict=False):
            if branch_out.name not in inner:
                raise ModelFormatError(f"If node '{label}': branch output '{branch_out.name}' is not produced")
            env[out_name] = inner[branch_out.name]
