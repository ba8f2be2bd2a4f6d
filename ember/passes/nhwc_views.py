"""Channels-last images read and written in place by the convolutions that lay their data out again anyway.

A TFLite model's NHWC tensors reach the IR as NCHW ops between Transposes (frontends/tflite), and where an operator
next to a graph input or output (or a flatten, a Reshape over the channels) has no channels-last kernel, its
Transpose stays: one copy of the tensor per run.

- In: every float 2-D convolution copies its input before it multiplies (ops/conv.py float_conv_reads_nhwc): a Conv
  into im2col columns (a 1x1's too), ConvShifted into polyphase planes, ConvNarrow into columns (a 1x1 reads its
  pixels as its product's rows), and a depthwise or Winograd one, or a dense window over many channels, into an NCHW
  copy made by one register transpose (conv.py nchw_sides). So do QConvShifted (words of four channels), a QConv
  (rows of words or bytes, or a 1x1 its pixels), an int8 depthwise convolution (pixels of 16 channels or its planes),
  the Cortex-M int8 kernels (ops/qarm.py: columns, whose weights `tap_major` then stores in the NHWC order, and
  planes) and int16's Q16Conv (its zero-padded copy): each can as well gather from the NHWC bytes. Where every reader
  of a Transpose to NCHW is one of them (reading it as its data input), the Transpose becomes an NhwcView
  (ops/shape.py): the same NCHW shape, the NHWC bytes left where they are, and the readers' fills take the channel
  stride. On AVX-512 VBMI QConvShifted's words of an RGB stem come 16 at a time from one byte permute (qpack.c
  ember_qnhwc_words).
- Out: a QConv and a Q16Conv store each requantised sum on their own (qgemm.c ember_qstore: an output row and
  pixel stride; the Cortex-M kernels a pixel pair's through a stage), an int8 depthwise convolution a pixel's 16
  channels or a channel's row; of the float ones (float_conv_stores_nhwc, no residual) ConvShifted copies its blocks
  of output rows out of scratch, a Conv stores each block of its product transposed from scratch
  (ember_conv_nhwc_f32; on a microcontroller it computes the product transposed, ember_conv_hwc_f32 on the weights
  `store_weights_km` orders), ConvNarrow's pixel-major product is the NHWC output, and a depthwise or Winograd one
  transposes its output out of an NCHW copy in scratch (a microcontroller's depthwise one stores its rows at the
  pixel stride, ops/conv.py dw_strided). Where a Transpose to NHWC is the only reader of such a convolution's output
  (or of a chain of lookup tables after it: TFLite's exact activations, layout-blind), the convolution writes the
  NHWC bytes (attribute NHWC_OUT), the tables map them as they are, and the Transpose becomes an NhwcView. Where other
  ops lie between them that can run channels-last (a dilated convolution's crop, pools, elementwise ops), the layout
  is pulled: see `_pull`.
"""

from __future__ import annotations

from ember.ir.graph import Graph, Node, Value
from ember.ops import qarm
from ember.ops.conv import (
    conv_is_depthwise,
    float_conv_reads_nhwc,
    float_conv_stores_nhwc,
    nhwc_copies,
    store_weights_km,
)
from ember.ops.q16 import q16_conv_nhwc
from ember.ops.qlinear import qconv_reads_nhwc, qconv_stores_nhwc
from ember.ops.shape import NHWC_OUT, NHWC_VIEW, writes_nhwc
from ember.passes.transposes import (
    LOOKUP_TABLES,
    commit_push,
    plan_push,
    push_cost,
    simplify_transposes,
    source_type,
)

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]


def _through_scratch(node: Node, output: bool) -> bool:
    """Whether `node`, compiled for a microcontroller, would read (`output`: store) the NHWC bytes through its
    scratch: an NCHW copy, or a float product's blocks (ember_conv_nhwc_f32, beside im2col's columns: they raised
    conv_variants' RAM by 7% where they took the place of two small Transposes). There the convolutions build their
    columns and planes from either layout: the integer ones (ops/qarm.py; a portable depthwise convolution a channel
    at a time, ops/qlinear.py _dw_per_channel) and the float Conv (im2col's gather; a depthwise one's strided planes
    in and out, ops/conv.py dw_strided; the others' products transposed into the output, ember_conv_hwc_f32 on
    `store_weights_km`). Others (no microcontroller picks them) as ops/conv.py nhwc_copies says."""
    if node.op in ("QConv", "Conv"):
        return False
    return node.op in ("ConvWinograd", "ConvWinograd4") if output else nhwc_copies(node)[0]


def _reads_in_place(node: Node, v: Value, no_copies: bool) -> bool:
    """`node` lays v out again from its NCHW positions: v is its data input (and nothing else), not channel-blocked
    (passes/int8_layout.py); `no_copies`: and it gathers from v itself, not from an NCHW copy in its scratch."""
    if no_copies and _through_scratch(node, output=False):
        return False
    return ((node.op == "QConvShifted" or float_conv_reads_nhwc(node) or qconv_reads_nhwc(node) or q16_conv_nhwc(node))
            and node.inputs[0] is v
            and not v.blocked and not any(u is v for u in node.inputs[1:]))


def nhwc_input_views(graph: Graph, no_copies: bool = False) -> None:
    """`no_copies` (microcontrollers, where scratch is RAM the plan holds): only where the readers gather from the
    NHWC bytes themselves, not through an NCHW copy (which, alive beside the NHWC input, could raise the peak that
    the Transpose's NCHW value does not)."""
    uses = graph.consumers()
    for t in graph.nodes:
        y = t.outputs[0] if t.outputs else None
        if t.op != "Transpose" or t.attrs.get("perm") != TO_NCHW or y is None or graph.is_output(y):
            continue
        readers = uses.get(id(y), [])
        if readers and all(_reads_in_place(n, y, no_copies) for n in readers):
            t.op = NHWC_VIEW
            for n in readers:
                if n.attrs.get("_isa"):  # the Cortex-M convolutions' columns from NHWC: weights in their order
                    qarm.tap_major(n, graph)


def _stored_by(x: Value, graph: Graph, uses: dict[int, list[Node]], no_copies: bool) -> list[Node] | None:
    """The nodes that would store x channels-last: a convolution that can (ops/qlinear.py qconv_stores_nhwc,
    ops/conv.py float_conv_stores_nhwc, ops/q16.py q16_conv_nhwc), then the lookup tables between it and x (one value
    in, one out: layout-blind), each value read by the next node only."""
    chain: list[Node] = []
    while True:
        node = x.producer
        if node is None or graph.is_output(x) or len(uses.get(id(x), [])) != 1:
            return None
        chain.append(node)
        if _stores_nhwc(node, no_copies):
            return chain
        if node.op not in LOOKUP_TABLES or node.inputs[0] is None:
            return None
        x = node.inputs[0]


def _stores_nhwc(node: Node, no_copies: bool = False) -> bool:
    """`no_copies`: only where each output is stored channels-last as it is computed, with no scratch for it
    (ConvShifted's, ConvNarrow's, the integer ones but a depthwise QConv's)."""
    stores = qconv_stores_nhwc(node) or float_conv_stores_nhwc(node) or q16_conv_nhwc(node)
    return stores and not (no_copies and _through_scratch(node, output=True))


def _pull(graph: Graph, conv: Node) -> bool:
    """Store conv's output channels-last where Transpose optimization can then carry that layout forward through its
    readers (channels-last pools, elementwise ops, lookup tables: transposes.py's handlers) into the Transposes to
    NHWC after them, leaving fewer Transposes than there are. Transpose optimization only pushes Transposes towards
    the outputs; this starts one at the convolution (its output the view of NHWC bytes, Transposed back for its
    readers) and keeps the push only where it pays. True if kept."""
    y = conv.outputs[0]
    if y is None or graph.is_output(y) or y.type.rank != 4:
        return False
    nhwc = graph.value(f"{y.name}_nhwc", source_type(y.type, tuple(TO_NCHW)))
    back_out = graph.value(f"{y.name}_nchw", y.type)
    graph.replace_uses(y, back_out)
    view = Node(NHWC_VIEW, graph.unique_name(f"view_{y.name}"), [y], [nhwc], {"perm": list(TO_NHWC)})
    back = Node("Transpose", graph.unique_name(f"back_{y.name}"), [nhwc], [back_out], {"perm": list(TO_NCHW)})
    at = graph.nodes.index(conv) + 1
    graph.add_node(view, at)  # (add_node sets the outputs' producers)
    graph.add_node(back, at + 1)
    uses = graph.consumers()
    plans = [pl for pl in (plan_push(graph, back, uses, side) for side in (False, True)) if pl is not None]
    best = min(plans, key=lambda pl: pl.after, default=None)
    started = push_cost(tuple(TO_NCHW), back_out)  # the Transpose made here, which `before` counts
    if best is not None and best.after < (best.before[0] - started[0], best.before[1] - started[1]):
        conv.attrs[NHWC_OUT] = 1
        commit_push(graph, best)
        return True
    graph.remove_node(back)
    graph.remove_node(view)
    graph.replace_uses(back_out, y)
    y.producer = conv
    return False


def nhwc_output_views(graph: Graph, no_copies: bool = False) -> None:
    """`no_copies`: as nhwc_input_views'."""
    uses = graph.consumers()
    for t in graph.nodes:
        if t.op != "Transpose" or t.attrs.get("perm") != TO_NHWC or t.inputs[0] is None:
            continue
        chain = _stored_by(t.inputs[0], graph, uses, no_copies)
        if chain:
            chain[-1].attrs[NHWC_OUT] = 1
            t.op = NHWC_VIEW
    # then the outputs that reach their Transposes through other ops (a dilated convolution's crop, pools, ...); only
    # a channels-last model has Transposes to NHWC for a pulled layout to meet (an NCHW one compiles as fast)
    if any(t.op == "Transpose" and t.attrs.get("perm") == TO_NHWC for t in graph.nodes):
        pulled = False
        for conv in list(graph.nodes):
            if _stores_nhwc(conv, no_copies) and not writes_nhwc(conv):
                pulled = _pull(graph, conv) or pulled
        if pulled:
            simplify_transposes(graph)
    if no_copies:  # a microcontroller's float Conv that stores NHWC: its weights as ember_conv_hwc_f32 reads them
        for conv in graph.nodes:
            if conv.op == "Conv" and writes_nhwc(conv) and not conv_is_depthwise(conv):
                store_weights_km(conv, graph)
