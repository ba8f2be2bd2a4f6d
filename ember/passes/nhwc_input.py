"""A channels-last image read in place by the convolutions that lay their input out again anyway.

A TFLite model's NHWC input reaches the IR transposed to NCHW (frontends/tflite), and where its first operator has
no channels-last kernel that Transpose stays: one copy of the image per run. ConvShifted builds polyphase planes of
its input, QConvShifted words of four channels, a Conv through im2col its columns and a QConv its rows of words
or bytes (kernels/conv.c, qshift.c, qpack.c): each copies the input before it multiplies, so it can as well
gather from the NHWC bytes. Where every reader of such a Transpose is one of them (reading it as its data input),
the Transpose becomes an NhwcView (ops/shape.py): the same NCHW shape, the NHWC bytes left where they are, and the
readers' fills take the channel stride. On AVX-512 VBMI QConvShifted's words of an RGB stem come 16 at a time from
one byte permute (qpack.c ember_qnhwc_words).
"""

from __future__ import annotations

from ember.ir.graph import Graph, Node, Value
from ember.ops.conv import im2col_reader
from ember.ops.qlinear import qconv_packs_rows
from ember.ops.shape import NHWC_VIEW

TO_NCHW = [0, 3, 1, 2]
_READERS = ("ConvShifted", "QConvShifted")


def _reads_in_place(node: Node, v: Value) -> bool:
    """`node` lays v out again from its NCHW positions: v is its data input (and nothing else), not channel-blocked
    (passes/int8_layout.py)."""
    return ((node.op in _READERS or im2col_reader(node) or qconv_packs_rows(node)) and node.inputs[0] is v
            and not v.blocked and not any(u is v for u in node.inputs[1:]))


def nhwc_input_views(graph: Graph) -> None:
    uses = graph.consumers()
    for t in graph.nodes:
        y = t.outputs[0] if t.outputs else None
        if t.op != "Transpose" or t.attrs.get("perm") != TO_NCHW or y is None or graph.is_output(y):
            continue
        readers = uses.get(id(y), [])
        if readers and all(_reads_in_place(n, y) for n in readers):
            t.op = NHWC_VIEW
