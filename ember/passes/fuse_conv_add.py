"""Fuse a residual QAdd into the integer convolution that produces one of its inputs (microcontrollers).

A residual block ends in Add(body, shortcut). Computed apart, the body's last convolution writes a tensor
of its own while its input and the shortcut are alive: three tensors at once, the peak of MLPerf Tiny's
ResNet-8 (3 x 16 KB). Fused (ops/qconv_add.py), the convolution adds the shortcut element by element as
it stores, and its output takes the shortcut's buffer (the shortcut dies there), so two are alive.

A QConv is fused when the QAdd is the only reader of its output, it requantises to the Add's byte type
(the same as its input's and the other operand's), is 2-D of one group (not depthwise) with the plain
planar layout, and the other operand has the output's shape (no broadcast) and is not the convolution's
own input (which it reads while writing). Of two candidate convolutions (a shortcut that is a convolution
too) the one with the smaller input is fused: its input and the residual are alive together.
"""

from __future__ import annotations

from ember.ir.graph import Graph, Node, Value
from ember.ops import qarm, registry
from ember.ops.matmul import present
from ember.ops.parallel import PARTS_ATTR
from ember.ops.qconv_add import QADD_ATTR
from ember.ops.qlinear import BYTE_TYPES, QSpec
from ember.ops.qpointwise import QAddParams
from ember.ops.shape import nhwc_bits

_TFL = 64  # QAddParams.shift of TFLite's ADD/SUB (quant.c EMBER_Q_TFL)


def _root(v: Value) -> Value:
    """The value whose buffer v shares through zero-copy (alias) ops."""
    while v.producer is not None and registry.get(v.producer.op).alias and v.producer.inputs:
        src = v.producer.inputs[0]
        if src is None:
            break
        v = src
    return v


def _swap(p: QAddParams) -> QAddParams:
    """The same sum with the operands exchanged (TFLite's table: (Ma, ka) with (Mb, kb))."""
    t = p.tflite
    tfl = (t[2], t[3], t[0], t[1], *t[4:]) if t else ()
    return QAddParams(p.zb, p.za, p.mb, p.ma, p.shift, p.out, tfl)


def _fusable(graph: Graph, uses: dict[int, list[Node]], add: Node, slot: int) -> Node | None:
    v, other, out = add.inputs[slot], add.inputs[1 - slot], add.outputs[0]
    if v is None or other is None or out is None or v.producer is None or other.is_const:
        return None
    conv = v.producer
    q = conv.attrs.get("_q")
    if conv.op != "QConv" or not isinstance(q, QSpec) or q.requant is None or q.depthwise:
        return None
    x = present(conv.input(0))
    if (conv.outputs[0] is not v or len(uses.get(id(v), [])) != 1 or graph.is_output(v) or x.type.rank != 4
            or int(conv.attrs.get("group", 1)) != 1 or conv.attrs.get(PARTS_ATTR, 1) > 1 or nhwc_bits(conv)):
        return None
    if len({x.dtype, v.dtype, other.dtype, out.dtype}) != 1 or v.dtype not in BYTE_TYPES:
        return None
    if v.shape != out.shape or other.shape != out.shape or x.blocked or v.blocked or other.blocked or out.blocked:
        return None
    if conv.attrs.get("_isa") not in (qarm.DSP, qarm.MVE, None):
        return None
    params: QAddParams = add.attrs["_qadd"]
    if slot == 1 and params.shift >= _TFL and params.tflite and params.tflite[6]:  # a - conv: not symmetric
        return None
    if _root(other) is _root(x):
        return None
    return conv


def fuse_conv_add(graph: Graph) -> None:
    uses = graph.consumers()
    order = {id(n): i for i, n in enumerate(graph.nodes)}
    for add in [n for n in graph.nodes if n.op == "QAdd" and isinstance(n.attrs.get("_qadd"), QAddParams)]:
        found = [(slot, c) for slot in (0, 1) if (c := _fusable(graph, uses, add, slot)) is not None]
        if not found:
            continue
        slot, conv = min(found, key=lambda sc: (present(sc[1].input(0)).storage_bytes, -order[id(sc[1])]))
        params: QAddParams = add.attrs["_qadd"]
        out = add.outputs[0]
        assert out is not None
        conv.op = "QConvAdd"
        conv.inputs = [*conv.inputs[:3], add.inputs[1 - slot]]
        conv.attrs[QADD_ATTR] = params if slot == 0 else _swap(params)
        conv.outputs[0] = out
        out.producer = conv
        # at the Add's place, after both operands' producers (the other may come after the convolution)
        graph.remove_node(conv)
        graph.nodes[graph.nodes.index(add)] = conv
