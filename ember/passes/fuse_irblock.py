"""Fuse MobileNet/EfficientNet inverted-residual blocks into one band-by-band IRBlock node (ops/irblock.py).

The pattern, on float32 images (N = 1) after BatchNorm folding and activation fusion: an expand 1x1 Conv
(stride 1, unpadded, one group; its activation fused) whose output only a stride-1 depthwise 2-D Conv of at
most MAX_WINDOW reads, then a project 1x1 Conv as the only reader of the depthwise's output, then optionally a
residual Add of a tensor of the same shape as the only reader of the projection. Without the expand Conv
(expand ratio 1) the block stays as it is (the band would copy the input: no gain). Where something else
reads the depthwise's output, as Squeeze-Excitation's GlobalAveragePool and Mul do (EfficientNet, most of
MobileNetV3), the projection cannot start before the whole depthwise output exists (the SE scale comes from
its global mean): those blocks fuse expand + depthwise only, which still keeps the expanded tensor (the
largest of the block) from ever existing whole.

Which blocks gain is a matter of size: early blocks' expanded tensors (96-144 channels at 112x112 or 56x56)
leave L2 between the layers, late ones (7x7 planes) fit in it anyway, and their 1x1 products run best over the
whole plane. `min_pixels` (the CPU family's `irblock_min_pixels`) is the smallest input plane fused.
"""

from __future__ import annotations

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.ops.conv import _conv_parts
from ember.ops.epilogue import epilogue_of
from ember.ops.irblock import IR_ATTR, IRParams

# Bytes of the expanded band plus the depthwise band: an L2 share (Zen 3: 512 KiB per core).
BAND_BYTES = 400 * 1024


def _pointwise(node: Node | None) -> bool:
    """A 1x1, stride-1, unpadded, ungrouped float32 Conv of one image with constant weights and bias."""
    if node is None or node.op != "Conv":
        return False
    x, w, b, y = node.input(0), node.input(1), node.input(2), node.outputs[0]
    if (x is None or w is None or y is None or not w.is_const or (b is not None and not b.is_const)
            or x.type.rank != 4 or x.shape[0] != 1 or x.dtype is not DType.FLOAT32 or y.dtype is not DType.FLOAT32):
        return False
    _, group, _, _, direct = _conv_parts(node)
    return direct and group == 1


def _depthwise(node: Node) -> bool:
    geo, _, m, depthwise, _ = _conv_parts(node)
    return depthwise and m == geo.channels and geo.planar


def _band(node: Node) -> int:
    """Output rows per band: as many as BAND_BYTES holds, then evened out over the plane."""
    geo, _, m, _, _ = _conv_parts(node)
    w, (oh, ow) = geo.in_size[2], geo.out_size[1:]
    step, halo = geo.strides[1], (geo.kernel[1] - 1) * geo.dilations[1] + 1

    def size(rows: int) -> int:  # the expanded band (its window rows) and the depthwise band
        return 4 * m * (((rows - 1) * step + halo) * w + rows * ow)

    band = 1
    while band < oh and size(band + 1) <= BAND_BYTES:
        band += 1
    bands = -(-oh // band)
    return -(-oh // bands)


# Stride-2 blocks stay layer by layer: on bands, dwconv3.c's stride-2 path repeats an output row per band for
# its halving geometry, and a row kernel has to deinterleave every input column (MobileNetV2's 112x112 and
# 56x56 ones took 1.25-1.9x their layers' time on Zen 3). Depthwise windows up to MAX_WINDOW fuse:
# EfficientNet's and MobileNetV3's 5x5 blocks (28x28, HardSwish/Swish) measured 1.15-1.5x their layers' time,
# where the whole-plane channel-blocked depthwise (dwblock.c) keeps four outputs per weight load that the
# band's row kernel does not.
MAX_WINDOW = 3


def fuse_irblocks(graph: Graph, min_pixels: int = 0) -> None:
    uses = graph.consumers()
    for dw in [n for n in graph.nodes if n.op == "Conv"]:
        x, y, w, b = dw.input(0), dw.outputs[0], dw.input(1), dw.input(2)
        if (dw not in graph.nodes or x is None or y is None or w is None or not w.is_const
                or (b is not None and not b.is_const) or x.type.rank != 4 or x.shape[0] != 1
                or x.dtype is not DType.FLOAT32 or y.dtype is not DType.FLOAT32 or not _depthwise(dw)
                or x.shape[2] * x.shape[3] < min_pixels or max(w.shape[2:]) > MAX_WINDOW
                or _conv_parts(dw)[0].strides[1:] != (1, 1)):
            continue
        expand = x.producer if len(uses.get(id(x), [])) == 1 and not graph.is_output(x) else None
        expand = expand if _pointwise(expand) and expand.outputs[0] is x else None
        readers = uses.get(id(y), [])
        project = readers[0] if len(readers) == 1 and not graph.is_output(y) else None
        project = project if _pointwise(project) and project.input(0) is y else None
        if expand is None:
            continue  # depthwise + projection alone: the band's copy of the input costs what the fusion saves
        fused: list[Node] = [n for n in (expand, dw, project) if n is not None]
        out, residual = (project.outputs[0] if project is not None else y), None
        add = _residual(out, uses, graph) if project is not None else None
        if add is not None:
            residual = add.inputs[1] if add.inputs[0] is out else add.inputs[0]
            out = add.outputs[0]
            fused.append(add)
        assert out is not None
        params = IRParams(_conv_parts(dw)[0], _band(dw), epilogue_of(expand), epilogue_of(dw),
                          epilogue_of(project) if project else None)
        ins = [expand.input(0), expand.input(1), expand.input(2), w, b, project.input(1) if project else None,
               project.input(2) if project else None, residual]
        block = Node("IRBlock", expand.name, ins, [out], {IR_ATTR: params})
        out.producer = block
        # at the last fused node's place: after every input's producer (the residual may come late)
        graph.nodes[graph.nodes.index(fused[-1])] = block
        for n in fused[:-1]:
            graph.remove_node(n)
        uses = graph.consumers()


def _residual(v: Value | None, uses: dict[int, list[Node]], graph: Graph) -> Node | None:
    """The Add that is v's only reader, of v and a float32 tensor of v's shape (no broadcast)."""
    readers = uses.get(id(v), []) if v is not None else []
    if v is None or len(readers) != 1 or readers[0].op != "Add" or graph.is_output(v):
        return None
    add = readers[0]
    if len(add.inputs) != 2 or add.outputs[0] is None or add.inputs[0] is add.inputs[1]:
        return None
    other = add.inputs[1] if add.inputs[0] is v else add.inputs[0]
    if other is None or other.shape != v.shape or other.dtype is not DType.FLOAT32 or add.outputs[0].shape != v.shape:
        return None
    return add
