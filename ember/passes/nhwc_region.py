"""Channels-last regions: chains of float depthwise and 1x1 Convs (and, where the CPU family says so, dense ones)
run on NHWC activations (ops/nhwc.py).

In NCHW a depthwise conv reads each channel as its own plane: the channel-blocked kernels (dwblock.c,
dwconv3.c's ember_dw3_blocked) gather EMBER_VL planes into a grid of channel vectors and scatter the outputs
back on every call, and a stride-2 one splits its planes into phases. In NHWC the channel vectors are
already there, and a 1x1 conv is one matmul with the activations as its A operand. onnxruntime keeps NCHWc
between its convs and XNNPACK NHWC for the same reason.

The pass takes the eligible Convs (float32, 2-D, constant weights and bias: depthwise with multiplier 1, or 1x1
stride-1 unpadded ungrouped; with `dense`, any other ungrouped one whose channels come in whole vectors, as
channels-last Winograd or an im2col product: dense_kind), groups them into connected regions (a Conv's input, its
fused residual and its output link it to its neighbours) and rewrites each region that pays for its reorders
(`_pays`): every Conv becomes a ConvNHWC between a Transpose of each input to NHWC and one of its output back to
NCHW; then every NCHW -> NHWC Transpose of such an output is the value it came from (the pair cancels), so what is
left is one Transpose where a value enters or leaves the region (lowered as NhwcReorder). A channels-last model
(TFLite's) reaches the pass with a Transpose to NCHW after its input and one back to NHWC before its output: the
region's way in and way out cancel with those, and a stem reads the NHWC input itself, so such a model keeps no
reorder. `min_convs`, the Convs a region needs for each pair of reorders at its edge, is the CPU family's
`nhwc_min_convs` (toolchain/cpus.py).
"""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops.conv import RESIDUAL, _conv_parts
from ember.ops.epilogue import epilogue_of
from ember.ops.nhwc import NHWC_ATTR, NhwcParams
from ember.ops.pool import channels_last
from ember.ops.reduce import reduce_axes
from ember.passes.conv_algorithms import narrow_panels, winograd_weights

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]


STEM_MAX_CHANNELS = 4
# A stem's products per output element (C * KH * KW): an image's 3x3 (27) and a one-channel spectrogram's 10x4
# (the keyword spotter's: 40).
STEM_MAX_K = 48


# The small-K 1x1 kernel (ember_pw_nhwc_small_f32) on planes of at most 56x56. On Zen 3, per node in MobileNetV2
# (instrumented builds, paired), the expand convs at 56x56 (24 -> 144) and 28x28 (32 -> 192) took 0.73-0.79x the
# general matmul's time, but the one at 112x112 (16 -> 96, 4.8 MB out) 1.19-1.25x, though alone, in a loop, it
# took 0.74-0.9x there too. Above that size only convs of at most the family's nhwc_small_big_m output channels take
# it (MobileNetV3's 16 -> 64 and 16 -> 16 at 112x112: 0.67-0.69x; toolchain/cpus.py says what was measured).
SMALL_K_MAX_PIXELS = 3136

# A 1x1 conv of more output channels than the family's wide panel (AVX-512's 64) that it does not divide, in steps of
# this many, has its weights in wide panels too, the last one narrower (conv_algorithms.narrow_panels): the 4-vector
# tiles take the whole panels, the general matmul the rest, and no product packs B strips at run time.
RAGGED_STEP = 8

# Dense convs (the CPU family's nhwc_dense): a 3x3 stride-1 one runs channels-last Winograd F(4x4) with at least a
# vector of channels each side (16 floats: every vector width divides it; a ragged last vector overlaps the one
# before), on maps of at least NHWC_WINO_MIN_TILES 4x4 tiles (14x14 and up), or of NHWC_WINO_SMALL_MIN_TILES where its
# transformed weights U (36 x C x M floats) are at most NHWC_WINO_SMALL_U_FLOATS. On smaller maps big U would be
# streamed by each of the 36 products for a handful of rows: there (and for every other window or stride) it is an
# im2col product, which needs whole vectors of channels. Measured on the Sapphire Rapids class Xeon (per-node least
# times, one conv between an NHWC model's Transposes, against the build without): Winograd at 56x56 24 -> 24 and 28x28
# 40 -> 40 took 0.44-0.47x NCHW F(4x4) with its reorders; on 10x10 96 -> 24 0.61x NCHW F(2x2) with its reorders, on
# 7x7 128 -> 128 and 8x8 64 -> 64 0.32-0.67x the im2col product, but on 10x10 256 -> 546 (20 MiB of U) 1.28x. The
# im2col product with ragged or few channels (8 -> 12, 96 -> 24, 24 -> 24 at 56x56) took 1.1-2x the time of
# ConvShifted or NCHW Winograd with their reorders.
NHWC_WINO_MIN_TILES = 16
NHWC_WINO_SMALL_MIN_TILES = 4
NHWC_WINO_SMALL_U_FLOATS = 1 << 20
NHWC_DENSE_CHANNELS = 16


def _conv_operands_ok(node: Node) -> bool:
    """A float32 2-D Conv with constant weights and bias."""
    if node.op != "Conv":
        return False
    x, w, b, y = node.input(0), node.input(1), node.input(2), node.outputs[0]
    return not (x is None or w is None or y is None or not w.is_const or (b is not None and not b.is_const)
                or x.type.rank != 4 or any(v.dtype is not DType.FLOAT32 for v in (x, w, y)))


def _stem(node: Node) -> bool:
    """A dense Conv of at most STEM_MAX_CHANNELS input channels (an image's) and at least 8 output channels, at
    most STEM_MAX_K products an output, no residual: it joins a region reading its input as it is (NCHW, or the
    NHWC value it was transposed from) and writing NHWC (ember_conv_stem_nhwc_f32), so the region's way in is no
    reorder of its largest tensor. Larger windows stay NCHW: on Zen 3 a 7x7 stride-2 stem to 64 channels
    (ResNet's: 147 products) took 3.7 ms there against ConvShifted's 3.0."""
    if not _conv_operands_ok(node) or node.input(RESIDUAL) is not None:
        return False
    geo, group, m, _, direct = _conv_parts(node)
    return (geo.planar and geo.pixels > 1 and group == 1 and not direct and geo.channels <= STEM_MAX_CHANNELS
            and m >= 8 and geo.channels * geo.taps <= STEM_MAX_K)


def dense_kind(node: Node) -> str:
    """How a dense Conv runs channels-last: "winograd4", "im2col", or "" where it is no dense Conv (depthwise,
    1x1 stride-1, a stem, grouped, not 2-D, or channels not in whole vectors)."""
    if not _conv_operands_ok(node) or _stem(node):
        return ""
    geo, group, m, depthwise, direct = _conv_parts(node)
    if not geo.planar or geo.pixels <= 1 or group != 1 or depthwise or direct:
        return ""
    tiles = -(-geo.out_size[1] // 4) * -(-geo.out_size[2] // 4)
    winograd = geo.kernel[1:] == (3, 3) and geo.strides[1:] == (1, 1) and geo.dilations[1:] == (1, 1)
    small_u = 36 * geo.channels * m <= NHWC_WINO_SMALL_U_FLOATS and tiles >= NHWC_WINO_SMALL_MIN_TILES
    if winograd and (tiles >= NHWC_WINO_MIN_TILES or small_u) and min(geo.channels, m) >= NHWC_DENSE_CHANNELS:
        return "winograd4"
    return "im2col" if not geo.channels % NHWC_DENSE_CHANNELS and not m % NHWC_DENSE_CHANNELS else ""


def _eligible(node: Node, dense: bool = False) -> bool:
    if node.op != "Conv":
        return False
    x, w, b, y = node.input(0), node.input(1), node.input(2), node.outputs[0]
    r = node.input(RESIDUAL)
    if (x is None or w is None or y is None or not w.is_const or (b is not None and not b.is_const)
            or x.type.rank != 4 or any(v.dtype is not DType.FLOAT32 for v in (x, w, y))
            or (r is not None and (r.shape != y.shape or r.dtype is not DType.FLOAT32))):
        return False
    geo, group, m, depthwise, direct = _conv_parts(node)
    # one pixel (Squeeze-Excitation's FCs): a matrix-vector product either way, ember_gemv_rows_f32 in NCHW
    return geo.planar and geo.pixels > 1 and ((depthwise and m == geo.channels) or (direct and group == 1)
                                              or (dense and bool(dense_kind(node))))


def _se_slot(node: Node) -> int | None:
    """Which input of a Squeeze-Excitation Mul is the activations (a float32 [N, C, H, W], H*W > 1, scaled by a
    [N or 1, C, 1, 1] gate); None for any other node."""
    if node.op != "Mul" or len(node.inputs) != 2 or node.outputs[0] is None:
        return None
    for slot in (0, 1):
        a, g = node.inputs[slot], node.inputs[1 - slot]
        if (a is not None and g is not None and a.type.rank == 4 and a.dtype is DType.FLOAT32
                and g.dtype is DType.FLOAT32 and a.shape[2] * a.shape[3] > 1 and g.shape[1:] == (a.shape[1], 1, 1)
                and g.shape[0] in (1, a.shape[0]) and node.outputs[0].shape == a.shape):
            return slot
    return None


def _pool(node: Node) -> bool:
    """A GlobalAveragePool, or a ReduceMean over H and W (TFLite's MEAN): its output has the same bytes from
    NHWC activations as from NCHW ones."""
    x = node.input(0)
    if (x is None or x.type.rank != 4 or x.dtype is not DType.FLOAT32 or node.outputs[0] is None or channels_last(node)
            or node.outputs[0].dtype is not DType.FLOAT32):
        return False
    if node.op == "AveragePool":  # one window over the whole plane (TFLite's AVERAGE_POOL_2D at the end of a net)
        pads, dil = node.attrs.get("pads") or [0] * 4, node.attrs.get("dilations") or [1, 1]
        return (list(node.attrs.get("kernel_shape", [])) == list(x.shape[2:]) and not any(pads)
                and all(d == 1 for d in dil) and tuple(node.outputs[0].shape[2:]) == (1, 1))
    return node.op == "GlobalAveragePool" or (node.op == "ReduceMean" and reduce_axes(node) == (2, 3))


def _member(node: Node, dense: bool) -> bool:
    return _eligible(node, dense) or _stem(node) or _se_slot(node) is not None or _pool(node)


def _activations(node: Node) -> list[Value]:
    """The inputs a member reads channels-last in the region (a stem's none: it reads NCHW)."""
    if _stem(node):
        return []
    slot = _se_slot(node) if node.op == "Mul" else None
    if slot is not None:
        ins = [node.input(slot)]
    else:
        ins = [node.input(0), node.input(RESIDUAL) if node.op == "Conv" else None]
    return [v for v in ins if v is not None]


def _regions(graph: Graph, members: list[Node]) -> list[list[Node]]:
    """The connected groups of `members`, linked through the values one produces and another reads."""
    index = {id(n): i for i, n in enumerate(members)}
    parent = list(range(len(members)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for n in members:
        for v in _activations(n):
            p = v.producer
            if p is not None and id(p) in index:
                parent[find(index[id(n)])] = find(index[id(p)])
    groups: dict[int, list[Node]] = {}
    for i, n in enumerate(members):
        groups.setdefault(find(i), []).append(n)
    return list(groups.values())


def _transpose(graph: Graph, v: Value, perm: list[int], name: str, out: Value | None = None) -> Node:
    if out is None:
        out = graph.value(f"{v.name}_{name}", TensorType(v.dtype, tuple(v.shape[p] for p in perm)))
    return Node("Transpose", graph.unique_name(f"{v.name}_{name}"), [v], [out], {"perm": list(perm)})


def _rewrite(graph: Graph, conv: Node, nhwc_of: dict[int, Value], panel: int, made: list[Node],
             small_k: int = 0, small_big_m: int = 0, wide_panel: int = 0) -> None:
    """`nhwc_of`: the NHWC Transposes made so far, by id of their input (a value read twice is moved once);
    `made`: every Transpose made; `small_k`, `small_big_m`, `wide_panel`: see nhwc_regions."""
    geo, _, m, depthwise, _ = _conv_parts(conv)
    x, w, y = conv.input(0), conv.input(1), conv.outputs[0]
    assert x is not None and w is not None and w.const is not None and y is not None
    stem, dense = _stem(conv), dense_kind(conv)
    # depthwise [C, 1, KH, KW] -> [KH*KW, C] (a tap's channel vector contiguous); 1x1 [M, C, 1, 1] -> [C, M];
    # stem [M, C, KH, KW] -> [C*KH*KW, M]; dense: im2col [KH*KW*C, M] (tap-major, as its rows), Winograd
    # [36][C][M] (each transformed U[e] a product's B); the products' B in panels as a 1x1 conv's
    panel = panel if panel and not depthwise and not stem and m % panel == 0 else 0
    small = not dense and bool(panel) and geo.channels <= small_k and (geo.pixels <= SMALL_K_MAX_PIXELS
                                                                         or m <= small_big_m)
    if panel and not small and wide_panel and m % wide_panel == 0:
        panel = wide_panel
    elif wide_panel and not (depthwise or stem or dense or small) and m > wide_panel and m % RAGGED_STEP == 0:
        panel = wide_panel  # whole 4-vector panels, then one of the rest (narrow_panels)

    def as_b(mk: np.ndarray) -> np.ndarray:  # [M, K] -> the product's B
        return narrow_panels(mk, panel) if panel else mk.T

    if dense == "winograd4":
        wt = np.stack([as_b(u) for u in winograd_weights(w.const, 4)])
    elif dense == "im2col":
        wt = as_b(w.const.transpose(0, 2, 3, 1).reshape(m, -1))
    else:
        wt = as_b(w.const.reshape(m, -1))
    before: list[Node] = []
    ins: list[Value | None] = list(conv.inputs)
    nhwc_in = False
    if stem and _from_nhwc(x) is not None:  # a TFLite model's input: the stem reads it as it came, NHWC
        ins[0], nhwc_in = _from_nhwc(x), True
    for i in () if stem else (0, RESIDUAL):
        v = conv.input(i)
        if v is not None:
            if id(v) not in nhwc_of:
                t = _transpose(graph, v, TO_NHWC, "nhwc")
                before.append(t)
                nhwc_of[id(v)] = t.outputs[0]  # type: ignore[assignment]
            ins[i] = nhwc_of[id(v)]
    ins[1] = graph.constant(f"{conv.name}_w_nhwc", np.ascontiguousarray(wt, dtype=np.float32))
    y_nhwc = graph.value(f"{y.name}_nhwc", TensorType(y.dtype, (y.shape[0], *y.shape[2:], y.shape[1])))
    attrs = dict(conv.attrs)
    attrs[NHWC_ATTR] = NhwcParams(geo, m, depthwise, panel, stem, nhwc_in, small, dense)
    new = Node("ConvNHWC", conv.name, ins, [y_nhwc], attrs)
    back = _transpose(graph, y_nhwc, TO_NCHW, "nchw", out=y)
    at = graph.nodes.index(conv)
    graph.nodes[at:at + 1] = [*before, new, back]
    made += [*before, back]
    y_nhwc.producer, y.producer = new, back


def _from_nhwc(v: Value) -> Value | None:
    """The NHWC value that `v` is the NCHW Transpose of (a channels-last model's input, as the TFLite frontend
    wraps it); None if `v` is no such Transpose's output."""
    p = v.producer
    if p is not None and p.op == "Transpose" and p.attrs.get("perm") == TO_NCHW and p.input(0) is not None:
        return p.input(0)
    return None


def _cancel(graph: Graph) -> None:
    """Transpose(Transpose(v, TO_NCHW), TO_NHWC) is v: its readers read v; Transposes nobody reads go."""
    for t in [n for n in graph.nodes if n.op == "Transpose" and n.attrs.get("perm") == TO_NHWC]:
        src = t.input(0)
        nhwc = _from_nhwc(src) if src is not None else None
        if nhwc is not None:
            out = t.outputs[0]
            assert out is not None
            graph.replace_uses(out, nhwc)
            graph.remove_node(t)
    uses = graph.consumers()
    for t in [n for n in graph.nodes if n.op == "Transpose" and n.attrs.get("perm") == TO_NCHW]:
        out = t.outputs[0]
        if out is not None and not uses.get(id(out)) and not graph.is_output(out):
            graph.remove_node(t)


def _fuse_adds(graph: Graph, dense: bool) -> None:
    """Add(conv, shortcut) into the conv as its residual where fuse_residual left it: MobileNet's projections
    after a depthwise conv, kept for the inverted-residual fusion. Here the sum is taken in the matmul's
    epilogue, and the Add's output stays in the region."""
    uses = graph.consumers()
    for add in [n for n in graph.nodes if n.op == "Add" and len(n.inputs) == 2]:
        out = add.outputs[0]
        for slot in (0, 1):
            v, other = add.inputs[slot], add.inputs[1 - slot]
            conv = v.producer if v is not None else None
            if (v is None or other is None or out is None or conv is None or not _eligible(conv, dense)
                    or conv.input(RESIDUAL) is not None or epilogue_of(conv) is not None
                    or int(conv.attrs.get("group", 1)) != 1 or len(uses.get(id(v), [])) != 1 or graph.is_output(v)
                    or other is v or other.shape != v.shape or out.shape != v.shape
                    or other.dtype is not DType.FLOAT32 or out.dtype is not DType.FLOAT32):
                continue
            conv.inputs = [*conv.inputs, *[None] * (RESIDUAL + 1 - len(conv.inputs))]
            conv.inputs[RESIDUAL] = other
            conv.outputs[0] = out
            out.producer = conv
            # at the Add's place: after the shortcut's producer
            graph.nodes.remove(conv)
            graph.nodes[graph.nodes.index(add)] = conv
            uses = graph.consumers()
            break


def _reorders(graph: Graph, region: list[Node], uses: dict[int, list[Node]]) -> int:
    """The Transposes the region would leave: one per value entering it (an input it reads channels-last made
    outside), one per value leaving it (read outside, or a graph output; a pool's output is NCHW already). Not
    counted: a value entering as the NCHW Transpose of an NHWC one, and one leaving only into NHWC Transposes
    (a TFLite model's way in and out): there the region's reorder cancels with that Transpose."""
    inside = {id(n) for n in region}
    entering = {id(v) for n in region for v in _activations(n)
                if (v.producer is None or id(v.producer) not in inside) and _from_nhwc(v) is None}

    def outside(v: Value) -> list[Node]:
        return [u for u in uses.get(id(v), []) if id(u) not in inside]

    leaving = {id(v) for n in region if not _pool(n) for v in n.outputs if v is not None
               and (graph.is_output(v) or any(u.op != "Transpose" or u.attrs.get("perm") != TO_NHWC
                                              for u in outside(v)))}
    return len(entering) + len(leaving)


def _pays(graph: Graph, region: list[Node], uses: dict[int, list[Node]], min_convs: int) -> bool:
    """At least `min_convs` Convs for each pair of reorders at the region's edge (a way in and a way out). A
    Squeeze-Excitation block's pool and Mul join the region; without them (before they did) a chain of SE
    blocks (EfficientNet: 1.5 Convs a reorder) moved its largest tensor, the expanded one, out of the region and
    back in each block, and EfficientNet-B0 took 1.16-1.26x its NCHW time on Zen 3."""
    convs = sum(1 for n in region if n.op == "Conv")
    return convs > 0 and 2 * convs >= min_convs * _reorders(graph, region, uses)


def _rewrite_se(graph: Graph, node: Node, nhwc_of: dict[int, Value], made: list[Node]) -> None:
    """A pool or an SE Mul of the region: GapNHWC (its output as it was) or ScaleNHWC (output reordered back,
    which cancels where a region member reads it)."""
    slot = _se_slot(node)
    x = node.input(0 if slot is None else slot)
    y = node.outputs[0]
    assert x is not None and y is not None
    before: list[Node] = []
    if id(x) not in nhwc_of:
        t = _transpose(graph, x, TO_NHWC, "nhwc")
        before.append(t)
        nhwc_of[id(x)] = t.outputs[0]  # type: ignore[assignment]
    xt = nhwc_of[id(x)]
    at = graph.nodes.index(node)
    if slot is None:  # the pool's output keeps its shape: [N, C, 1, 1], or [N, C] from a ReduceMean without keepdims
        new = Node("GapNHWC", node.name, [xt], [y], {"keepdims": int(y.type.rank == 4)})
        graph.nodes[at:at + 1] = [*before, new]
        y.producer = new
        made += before
        return
    y_nhwc = graph.value(f"{y.name}_nhwc", TensorType(y.dtype, tuple(xt.shape)))
    new = Node("ScaleNHWC", node.name, [xt, node.inputs[1 - slot]], [y_nhwc])
    back = _transpose(graph, y_nhwc, TO_NCHW, "nchw", out=y)
    graph.nodes[at:at + 1] = [*before, new, back]
    y_nhwc.producer, y.producer = new, back
    made += [*before, back]


def nhwc_regions(graph: Graph, min_convs: int, panel: int = 0, small_k: int = 0, small_big_m: int = 0,
                 wide_panel: int = 0, dense: bool = False) -> None:
    """`panel`: the CPU family's compile-time panel width for 1x1 weights (0: none; needs M % panel == 0);
    `small_k`: 1x1 convs in panels with at most this many input channels take the small-K kernel (0: none), on
    planes over SMALL_K_MAX_PIXELS only those of at most `small_big_m` output channels; `wide_panel`: the family's
    narrow_panel, the panel width of AVX-512's 4-vector tiles, for the other 1x1 convs whose M it divides (0: none);
    `dense`: dense convs join the regions too (dense_kind)."""
    _fuse_adds(graph, dense)
    members = [n for n in graph.nodes if _member(n, dense)]
    uses = graph.consumers()
    chosen = {id(n) for region in _regions(graph, members) if _pays(graph, region, uses, min_convs) for n in region}
    nhwc_of: dict[int, Value] = {}
    made: list[Node] = []
    for node in [n for n in members if id(n) in chosen]:  # in graph order: a Transpose lands before its readers
        if node.op == "Conv":
            _rewrite(graph, node, nhwc_of, panel, made, small_k, small_big_m, wide_panel)
        else:
            _rewrite_se(graph, node, nhwc_of, made)
    _cancel(graph)
    kept = {id(n) for n in graph.nodes}
    for t in made:  # the boundaries left: a blocked 2-D transpose per image each
        if id(t) in kept:
            t.op = "NhwcReorder"
