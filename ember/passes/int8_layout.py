"""Store int8 activations between integer convolutions channel-blocked, so that no convolution packs them.

An integer convolution multiplies packed blocks of 64 pixels whose 32-bit words hold four consecutive
channels of one pixel (kernels/qgemm.c). Stored as NCHW planes, its input is interleaved into that
layout by every consumer, once per block and tap (kernels/qpack.c: a tenth of ResNet-50's time). A
channel-blocked value is stored as those blocks themselves (Value.blocked, qgemm.c ember_qblk_at): the
producer's tile writes one 64-byte vector of words per 16 pixels of a channel quad, a 1x1 stride-1
consumer multiplies the blocks in place, other convolutions gather each tap's words (16 per AVX-512
gather) and shifted ones copy words into their planes, instead of interleaving bytes. A depthwise
convolution (multiplier 1) works on pixels of 16 channels: it reads and writes four quads' words of 16
pixels by dword transposes (kernels/qdwvnni.c), not byte transposes of 16 planes.

A value is blocked when its producer can write the layout, every consumer can read it, and it is no
graph input or output; a QAdd (elementwise, so layout-blind) needs both inputs and its output in the same
layout. No conversion nodes exist: values that do not qualify stay NCHW.
"""

from __future__ import annotations

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops.matmul import present
from ember.ops.qlinear import DW_WORDS_ATTR, QSpec, qconv_geometry

_BYTES = (DType.UINT8, DType.INT8)


def _plain_qconv(node: Node) -> bool:
    """A 2-D, one-group, non-depthwise integer convolution (ember_qconv, ember_qconv_shifted, ember_qconv_wino)."""
    if node.op not in ("QConv", "QConvShifted", "QConvWinograd"):
        return False
    q: QSpec = node.attrs["_q"]
    x = present(node.input(0))
    return not q.depthwise and int(node.attrs.get("group", 1)) == 1 and x.type.rank == 4


def _depthwise(node: Node) -> bool:
    """A 2-D depthwise integer convolution of channel multiplier 1 (ember_qdwconv)."""
    if node.op != "QConv" or not node.attrs["_q"].depthwise:
        return False
    x, y = present(node.input(0)), present(node.outputs[0])
    return x.type.rank == 4 and x.shape[1] == y.shape[1]


def writes_blocked(node: Node) -> bool:
    """Whether the producer `node` can write its output channel-blocked (one whose channels come in
    fours: its tiles write a channel quad at a time): a requantising convolution, or a QAdd."""
    return node.op == "QAdd" or (_plain_qconv(node) or _depthwise(node)) and node.attrs["_q"].requant is not None


def reads_blocked(node: Node, v: Value) -> bool:
    """Whether `node` can read its input `v` channel-blocked: a convolution's data input with channels
    in fours (a 1x1 of stride 1 reads its blocks in place, other convolutions gather words, shifted
    ones copy them, depthwise ones transpose quads' words: qconv.c, qpack.c, qshift.c, qdwvnni.c), or
    either input of a QAdd of equal shapes."""
    if node.op == "QAdd":
        a, b = present(node.input(0)), present(node.input(1))
        return not a.is_const and not b.is_const and a.shape == b.shape
    if (not (_plain_qconv(node) or _depthwise(node)) or node.input(0) is not v
            or any(w is v for w in node.inputs[1:])):
        return False
    g = qconv_geometry(node)
    return g.channels % 4 == 0 and g.planar


def choose_int8_layout(graph: Graph) -> None:
    uses = graph.consumers()
    blocked: dict[int, Value] = {}
    for node in graph.nodes:
        y = node.outputs[0] if node.outputs else None
        if (y is None or y.dtype not in _BYTES or y.type.rank != 4 or y.shape[1] % 4 or graph.is_output(y)
                or not writes_blocked(node)):
            continue
        readers = uses.get(id(y), [])
        if readers and all(reads_blocked(r, y) for r in readers):
            blocked[id(y)] = y
    # A QAdd's three values share one layout: drop all three while any is not blocked, to a fixed point.
    adds = [n for n in graph.nodes if n.op == "QAdd"]
    changed = True
    while changed:
        changed = False
        for n in adds:
            trio = [present(n.input(0)), present(n.input(1)), present(n.outputs[0])]
            if any(id(v) in blocked for v in trio) and not all(id(v) in blocked for v in trio):
                for v in trio:
                    blocked.pop(id(v), None)
                changed = True
    for v in blocked.values():
        v.blocked = True


def dw_words_at_compile_time(graph: Graph) -> None:
    """Depthwise integer convolutions with a constant input zero point get qdwvnni.c's per-block weight words and
    corrections as a table made at compile time (ops/qlinear.py dw_words; where the weights fit int8, which its
    lowering checks), where the AVX-512 VNNI kernel built them for every block of 16 channels on every call: most of
    a small map's time (TFLite MobileNetV2's 3x3 maps of 336 channels took 7x the float model's depthwise time).
    Only for AVX-512 families: elsewhere the table would be unread."""
    for node in graph.nodes:
        if node.op == "QConv" and node.attrs["_q"].depthwise and node.input(1) is None:
            node.attrs[DW_WORDS_ATTR] = True
