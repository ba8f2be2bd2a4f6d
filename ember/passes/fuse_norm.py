"""Transformer and CNN fusions: decomposed LayerNorm, Gelu and Swish back into their operators, and residual
Add + LayerNorm into one SkipLayerNormalization.

Exporters without a LayerNormalization (opset < 17) or a Gelu (opset < 20) write them out elementwise:
mean, Sub, Pow, mean, Add eps, Sqrt, Div, Mul gamma, Add beta; and x * 0.5 * (1 + erf(x / sqrt 2)) (or the
tanh form). `fuse_decomposed_norms` matches those chains (every intermediate read only inside the chain) and
puts the operator back: the LayerNorm kernel makes two passes over a row instead of nine over the tensor.
SiLU (x * Sigmoid(x), as PyTorch exports EfficientNet's and YOLO's activation before opset 24) and
x * HardSigmoid(x; 1/6, 1/2) become Swish and HardSwish: one pass instead of two, and as activations they
fuse into the producing convolution's epilogue.

`fuse_skip_norm` then folds the residual Add (and a constant per-channel bias Add: a 3-D MatMul's, or a
contrib SkipLayerNormalization's) into the LayerNormalization that reads it: the sum is computed row by row
inside the normalization, and written to memory only when some other node or the graph output reads it.
"""

from __future__ import annotations

import math

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops.reduce import reduce_axes

_GELU_TANH = math.sqrt(2.0 / math.pi)


class _Match:
    """Queries over a graph's use lists: a value read by exactly one node (and not a graph output)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.uses = graph.consumers()

    def readers(self, v: Value) -> list[Node]:
        return self.uses.get(id(v), [])

    def sole(self, v: Value | None, op: str) -> Node | None:
        """The one node of type `op` that reads `v`, when nothing else (no node, no graph output) does."""
        if v is None or self.graph.is_output(v):
            return None
        users = self.readers(v)
        return users[0] if len(users) == 1 and users[0].op == op and len(users[0].outputs) == 1 else None

    def made_by(self, v: Value | None, op: str, single_use: bool = True) -> Node | None:
        if v is None or v.producer is None or v.producer.op != op:
            return None
        if single_use and (self.graph.is_output(v) or len(self.readers(v)) != 1):
            return None
        return v.producer


def _other(node: Node, v: Value) -> Value | None:
    """The other operand of binary `node`, one of whose operands is `v`."""
    a, b = node.inputs[0], node.input(1)
    return b if a is v else a if b is v else None


def _scalar(v: Value | None) -> float | None:
    return float(v.const.reshape(-1)[0]) if v is not None and v.is_const and v.const.size == 1 else None


def _near(v: Value | None, want: float) -> bool:
    got = _scalar(v)
    return got is not None and abs(got - want) <= 1e-3 * abs(want)


def _replace(graph: Graph, chain: list[Node], new: Node) -> None:
    """Removes `chain` (its last node the one whose output `new` takes over) and puts `new` where it ended."""
    for n in chain[:-1]:
        graph.remove_node(n)
    at = graph.nodes.index(chain[-1])
    graph.remove_node(chain[-1])
    graph.add_node(new, at)


def _per_element(graph: Graph, v: Value | None, inner: tuple[int, ...], name: str) -> Value | None:
    """Constant `v` as one value per normalized element, or None when it varies along the outer axes."""
    if v is None or not v.is_const:
        return None
    shape = list(v.shape)
    while shape and shape[0] == 1 and len(shape) > len(inner):
        shape.pop(0)
    if len(shape) > len(inner):
        return None
    try:
        arr = np.broadcast_to(v.const.reshape(shape), inner)
    except ValueError:
        return None
    return v if v.shape == inner else graph.constant(name, np.ascontiguousarray(arr))


# Decomposed LayerNorm -----------------------------------------------------------------------------------

def _layer_norm(m: _Match, mean: Node) -> bool:
    g = m.graph
    x, axes = mean.inputs[0], reduce_axes(mean)
    if x is None or x.dtype != DType.FLOAT32 or not axes or mean.attrs.get("keepdims", 1) != 1:
        return False
    rank = x.type.rank
    if axes != tuple(range(axes[0], rank)):
        return False  # the normalized axes must be the trailing ones
    sub = m.sole(mean.outputs[0], "Sub")
    if sub is None or sub.inputs[0] is not x or sub.inputs[1] is not mean.outputs[0]:
        return False
    d = sub.outputs[0]
    readers = m.readers(d)
    if len(readers) != 2 or g.is_output(d):
        return False
    sq = next((n for n in readers if (n.op == "Pow" and _near(n.input(1), 2.0)) or
               (n.op == "Mul" and n.inputs[0] is d and n.inputs[1] is d)), None)
    div = next((n for n in readers if n.op == "Div" and n.inputs[0] is d), None)
    if sq is None or div is None:
        return False
    var = m.sole(sq.outputs[0], "ReduceMean")
    if var is None or reduce_axes(var) != axes or var.attrs.get("keepdims", 1) != 1:
        return False
    add = m.sole(var.outputs[0], "Add")
    eps = _scalar(_other(add, var.outputs[0])) if add is not None else None
    sqrt = m.sole(add.outputs[0], "Sqrt") if add is not None else None
    if eps is None or sqrt is None or m.sole(sqrt.outputs[0], "Div") is not div or div.inputs[1] is not sqrt.outputs[0]:
        return False
    chain = [mean, sub, sq, var, add, sqrt, div]
    inner = x.shape[axes[0]:]
    out = div.outputs[0]
    gamma = beta = None
    mul = m.sole(out, "Mul")
    if mul is not None:
        gamma = _per_element(g, _other(mul, out), inner, f"{mul.name}_gamma")
    if gamma is not None:
        chain.append(mul)
        out = mul.outputs[0]
        bias = m.sole(out, "Add")
        if bias is not None:
            beta = _per_element(g, _other(bias, out), inner, f"{bias.name}_beta")
        if beta is not None:
            chain.append(bias)
            out = bias.outputs[0]
    else:
        gamma = g.constant(f"{mean.name}_ones", np.ones(inner, np.float32))
    if gamma.dtype != DType.FLOAT32 or (beta is not None and beta.dtype != DType.FLOAT32):
        return False
    ln = Node("LayerNormalization", g.unique_name(f"{mean.name}_layernorm"), [x, gamma, beta], [out],
              {"axis": axes[0], "epsilon": eps, "stash_type": DType.FLOAT32})
    _replace(g, chain, ln)
    return True


# Decomposed Gelu ----------------------------------------------------------------------------------------

def _gelu_tail(m: _Match, x: Value, one_plus: Node) -> tuple[list[Node], Value] | None:
    """x * 0.5 * (1 + f) in any association, from the Add (1 + f): the nodes after it and the result."""
    t = one_plus.outputs[0]
    mul = m.sole(t, "Mul")
    if mul is None:
        return None
    o = _other(mul, t)
    if _near(o, 0.5):  # (t * 0.5) * x
        last = m.sole(mul.outputs[0], "Mul")
        return ([mul, last], last.outputs[0]) if last is not None and _other(last, mul.outputs[0]) is x else None
    if o is x:  # (t * x) * 0.5
        last = m.sole(mul.outputs[0], "Mul")
        return ([mul, last], last.outputs[0]) if last is not None and _near(_other(last, mul.outputs[0]), 0.5) \
            else None
    half = m.made_by(o, "Mul")  # t * (x * 0.5)
    if half is not None and _other(half, x) is not None and _near(_other(half, x), 0.5):
        return [half, mul], mul.outputs[0]
    return None


def _one_plus(m: _Match, f: Node) -> Node | None:
    add = m.sole(f.outputs[0], "Add")
    return add if add is not None and _near(_other(add, f.outputs[0]), 1.0) else None


def _gelu(m: _Match, f: Node) -> bool:
    g = m.graph
    scaled = m.made_by(f.inputs[0], "Div") or m.made_by(f.inputs[0], "Mul")
    if scaled is None:
        return False
    head: list[Node] = [scaled]
    if f.op == "Erf":
        if scaled.op == "Div":
            x, k, want = scaled.inputs[0], scaled.input(1), math.sqrt(2.0)
        else:
            x = next((v for v in scaled.inputs if v is not None and not v.is_const), None)
            k, want = (_other(scaled, x) if x is not None else None), 1.0 / math.sqrt(2.0)
        if x is None or not _near(k, want):
            return False
        approx = "none"
    else:  # Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))
        if scaled.op != "Mul":
            return False
        inner = next((v for v in scaled.inputs if v is not None and not v.is_const), None)
        if inner is None or not _near(_other(scaled, inner), _GELU_TANH):
            return False
        add = m.made_by(inner, "Add")
        if add is None:
            return False
        found = None
        for x in add.inputs:
            cubic = m.made_by(_other(add, x), "Mul") if x is not None else None
            cube = next((v for v in (cubic.inputs if cubic else []) if v is not None and not v.is_const), None)
            if cubic is None or cube is None or not _near(_other(cubic, cube), 0.044715):
                continue
            pw = m.made_by(cube, "Pow")  # x^3 as Pow(x, 3) or (torch.onnx) Mul(x, Mul(x, x))
            if pw is not None and pw.inputs[0] is x and _near(pw.input(1), 3.0):
                found = (x, [pw, cubic, add])
                break
            cm = m.made_by(cube, "Mul")
            sq = m.made_by(_other(cm, x), "Mul") if cm is not None else None
            if cm is not None and sq is not None and sq.inputs[0] is x and sq.input(1) is x:
                found = (x, [sq, cm, cubic, add])
                break
        if found is None:
            return False
        x, pre = found
        head = [*pre, scaled]
        approx = "tanh"
    assert x is not None
    one = _one_plus(m, f)
    tail = _gelu_tail(m, x, one) if one is not None else None
    if tail is None or x.dtype != DType.FLOAT32:
        return False
    nodes, out = tail
    gelu = Node("Gelu", g.unique_name(f"{f.name}_gelu"), [x], [out], {"approximate": approx})
    _replace(g, [*head, f, one, *sorted(nodes, key=g.nodes.index)], gelu)
    return True


# Decomposed Swish / HardSwish ---------------------------------------------------------------------------

def _swish(m: _Match, gate: Node) -> bool:
    """x * Sigmoid(x) -> Swish(x); x * HardSigmoid(x; alpha 1/6, beta 1/2) -> HardSwish(x)."""
    x = gate.inputs[0]
    mul = m.sole(gate.outputs[0], "Mul")
    if mul is None or x is None or x.dtype != DType.FLOAT32 or _other(mul, gate.outputs[0]) is not x:
        return False
    if gate.op == "HardSigmoid":
        alpha, beta = float(gate.attrs.get("alpha", 0.2)), float(gate.attrs.get("beta", 0.5))
        if abs(alpha - 1 / 6) > 1e-6 or abs(beta - 0.5) > 1e-6:
            return False
        fused = Node("HardSwish", m.graph.unique_name(f"{mul.name}_hardswish"), [x], [mul.outputs[0]], {})
    else:
        fused = Node("Swish", m.graph.unique_name(f"{mul.name}_swish"), [x], [mul.outputs[0]], {"alpha": 1.0})
    _replace(m.graph, [gate, mul], fused)
    return True


def fuse_decomposed_norms(graph: Graph) -> None:
    for node in list(graph.nodes):
        if node not in graph.nodes:
            continue  # removed by an earlier match
        if node.op == "ReduceMean":
            _layer_norm(_Match(graph), node)
        elif node.op in ("Erf", "Tanh"):
            _gelu(_Match(graph), node)
        elif node.op in ("Sigmoid", "HardSigmoid"):
            _swish(_Match(graph), node)


# Skip LayerNorm -----------------------------------------------------------------------------------------

def _full(v: Value | None, shape: tuple[int, ...]) -> bool:
    return v is not None and not v.is_const and v.shape == shape and v.dtype == DType.FLOAT32


def _skip_operands(m: _Match, s: Node, inner: tuple[int, ...]) -> tuple[Value, Value, Value | None,
                                                                       list[Node]] | None:
    """(x, skip, per-element bias, the Add nodes) of sum `s`: x + skip, (x + skip) + c or (x + c) + skip."""
    g, shape = m.graph, s.outputs[0].shape
    a, b = s.inputs[0], s.input(1)
    for p, q in ((a, b), (b, a)):
        inner_add = m.made_by(p, "Add")
        if inner_add is None:
            continue
        bias = _per_element(g, q, inner, f"{s.name}_bias") if q is not None and q.is_const else None
        if bias is not None and _full(inner_add.inputs[0], shape) and _full(inner_add.input(1), shape):
            return inner_add.inputs[0], inner_add.inputs[1], bias, [inner_add, s]  # type: ignore[return-value]
        for u, c in ((inner_add.inputs[0], inner_add.input(1)), (inner_add.input(1), inner_add.inputs[0])):
            bias = _per_element(g, c, inner, f"{inner_add.name}_bias") if c is not None and c.is_const else None
            if bias is not None and _full(u, shape) and _full(q, shape):
                return u, q, bias, [inner_add, s]  # type: ignore[return-value]
    if _full(a, shape) and _full(b, shape):
        return a, b, None, [s]  # type: ignore[return-value]
    return None


def fuse_skip_norm(graph: Graph) -> None:
    for ln in list(graph.nodes):
        if ln.op != "LayerNormalization" or ln.outputs[0] is None or ln.outputs[0].dtype != DType.FLOAT32:
            continue
        m = _Match(graph)
        s = ln.inputs[0]
        add = s.producer if s is not None else None
        if add is None or add.op != "Add" or add.attrs or len(add.outputs) != 1:
            continue
        axis = ln.attrs.get("axis", -1) % s.type.rank
        found = _skip_operands(m, add, s.shape[axis:])
        if found is None:
            continue
        x, skip, bias, chain = found
        if any(v is not None and not v.is_const for v in ln.inputs[1:]):
            continue  # the fused node takes the sum's place, before the LayerNorm's other inputs may exist
        # The sum stays a value of its own only when something besides this LayerNorm reads it.
        keep = graph.is_output(s) or any(r is not ln for r in m.readers(s))
        outs = [*ln.outputs, *[None] * (3 - len(ln.outputs)), s if keep else None]
        node = Node("SkipLayerNormalization", graph.unique_name(f"{ln.name}_skip"),
                    [x, skip, ln.inputs[1], ln.input(2), bias], outs, dict(ln.attrs))
        # At the sum's place: readers of a kept sum may run before the LayerNorm did.
        graph.remove_node(ln)
        _replace(graph, chain, node)
