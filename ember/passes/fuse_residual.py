"""Fuse a residual Add (and the activation after it) into the float convolution that produces one operand.

A residual block ends in Relu(Add(conv(...), shortcut)). Unfused, the convolution stores its output, then a
separate loop reads it back with the shortcut and stores the sum: a whole extra pass over two tensors. Fused,
the shortcut becomes the convolution's input 3 (ops/conv.py RESIDUAL) and the Relu its epilogue: the kernels
add the shortcut to each output tile after the bias, while the tile is in registers (the matmul tiles of
im2col and 1x1 convolutions) or in cache (Winograd's output transform, ConvShifted's and ConvNarrow's row
copies), then apply the activation, and store once.

An Add is fused into a float32 Conv of one group (not depthwise) when: the Conv's output feeds only the
Add and is no graph output, the Conv applies no activation yet (Relu(conv) + x is another function), and
the other operand has the output's shape (no broadcast). Of two candidates (a shortcut that is a
downsampling 1x1 conv too) the one with the smaller input is taken: its input and the shortcut are alive
together. A 1x1 projection after a depthwise conv (MobileNet's inverted-residual block) is left alone: the
inverted-residual block fusion takes its Add. Then an activation that is the Add's only reader becomes the
Conv's epilogue (fuse_activation's rule, applied after the sum). Runs before fuse_elementwise, which would
otherwise take Add + Relu into one loop, and before the algorithm choice, whose variants all take input 3.
"""

from __future__ import annotations

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.conv import RESIDUAL
from ember.ops.epilogue import EPILOGUE_ATTR, epilogue_of


def _after_depthwise(conv: Node) -> bool:
    x = conv.input(0)
    p = x.producer if x is not None else None
    return p is not None and p.op == "Conv" and int(p.attrs.get("group", 1)) > 1


def _fusable(graph: Graph, uses: dict[int, list[Node]], add: Node, slot: int) -> Node | None:
    v, other, out = add.inputs[slot], add.inputs[1 - slot], add.outputs[0]
    if v is None or other is None or out is None or v.producer is None:
        return None
    conv = v.producer
    w = conv.input(1)
    if (conv.op != "Conv" or conv.outputs[0] is not v or len(conv.outputs) != 1 or w is None or not w.is_const
            or int(conv.attrs.get("group", 1)) != 1 or epilogue_of(conv) is not None
            or conv.input(RESIDUAL) is not None or _after_depthwise(conv)):
        return None
    if len(uses.get(id(v), [])) != 1 or graph.is_output(v):
        return None
    if any(t.dtype is not DType.FLOAT32 for t in (v, other, out)) or other.shape != v.shape or out.shape != v.shape:
        return None
    return conv


def _input_bytes(conv: Node) -> int:
    x = conv.input(0)
    return x.type.numel if x is not None else 0


def fuse_residual(graph: Graph) -> None:
    uses = graph.consumers()
    for add in [n for n in graph.nodes if n.op == "Add" and len(n.inputs) == 2]:
        found = [(slot, c) for slot in (0, 1) if (c := _fusable(graph, uses, add, slot)) is not None]
        if not found:
            continue
        order = {id(n): i for i, n in enumerate(graph.nodes)}
        slot, conv = min(found, key=lambda sc: (_input_bytes(sc[1]), -order[id(sc[1])]))
        shortcut, out = add.inputs[1 - slot], add.outputs[0]
        assert shortcut is not None and out is not None
        conv.inputs = [*conv.inputs[:RESIDUAL], *[None] * (RESIDUAL - len(conv.inputs)), shortcut]
        conv.outputs[0] = out
        out.producer = conv
        # At the Add's place: after both operands' producers (the shortcut's may come after the convolution).
        graph.remove_node(conv)
        graph.nodes[graph.nodes.index(add)] = conv
        uses = graph.consumers()
        _take_activation(graph, uses, conv, out)
        uses = graph.consumers()


def _take_activation(graph: Graph, uses: dict[int, list[Node]], conv: Node, out: Value) -> None:
    readers = uses.get(id(out), [])
    if len(readers) != 1 or graph.is_output(out):
        return
    act = readers[0]
    spec = registry.as_epilogue(act)
    if spec is None or act.input(0) is not out or act.outputs[0] is None or act.outputs[0].dtype is not DType.FLOAT32:
        return
    conv.attrs[EPILOGUE_ATTR] = spec
    conv.outputs[0] = act.outputs[0]
    act.outputs[0].producer = conv
    graph.remove_node(act)
