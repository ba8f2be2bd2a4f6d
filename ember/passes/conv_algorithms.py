"""Pick each float convolution's algorithm and lay its weights out for it, once, at compile time.

- Winograd F(2x2, 3x3): a 3x3, stride-1, undilated, ungrouped 2-D Conv becomes `ConvWinograd`, whose
  weight input is U[e][m][c] = (G g_mc G^T)[e] (16 x M x C); its kernel (kernels/winograd.c) does 16
  multiplies per 2x2 output tile and channel pair instead of 36. On maps with at least
  `winograd4_min_tiles` 4x4 tiles it becomes `ConvWinograd4` instead: F(4x4, 3x3), 36 multiplies per
  4x4 tile (U is 36 x M x C), which halves the matmul work again.
- Pixel-major: a Conv with few output pixels (the 7x7 maps at the end of a CNN) but many channels
  becomes `ConvNarrow`, whose weights are stored transposed and packed in panels of 32 output
  channels (M/32 x K x 32). Its matmul then runs with the output channels along the vectors and the
  pixels broadcast, so 49 pixels waste no vector lanes, and the weights, the big operand there,
  stream from memory once, in order (kernels/conv.c, matmul.c `panels`).
- Shifted: a strided Conv, or a stride-1 Conv on a small map (output rows of at most
  `shifted_max_width`), becomes `ConvShifted` (weights unchanged): its matmul reads B as shifted views
  of the input's zero-padded polyphase planes instead of an im2col copy (whose per-tap strided
  gathers and short row copies cost more there).
- Integer (QConv): a stride-1 2-D convolution whose channels come in fours, a strided 1x1, or a
  strided convolution whose channels do not come in fours, where little work is wasted, becomes
  `QConvShifted` (qshifted.py `qconv_shifted_fits`), its weights reordered to (c/4, kh, kw, c%4) with
  channels padded to fours: its tiles read the input's padded stride-phase word planes instead of an
  im2col copy. Before that, where the CPU family says it pays (`qwino_min_channels`), a 3x3 stride-1 one
  becomes `QConvWinograd` (ops/qwino.py: exact integer Winograd F(2x2, 3x3)) if its sums provably fit int32.
- MatMul with a constant 2-D float32 B and N a multiple of 32, where the CPU family asks for it
  (`matmul_panels`): `MatMulPanels`, B packed in the matmul kernel's 32-column panels (no run-time packing).
- Row panels: a Conv left to the plain kernel (direct or im2col), or a ConvShifted, with weight rows of at least the
  CPU family's `row_panels_min_k` floats (ConvShifted: SHIFTED_ROWS_MIN_K) on maps over EMBER_MM_BLOCK_N pixels
  keeps its op and shape, but its weights are stored in the matmul's row panels (`row_panels`: K block by K block,
  one k-major panel per register tile) and flagged (conv.py ROW_PANELS); a ConvWinograd(4) with C at least
  `row_panels_min_k` likewise, each of its transformed matrices U[e]. Not with --threads, whose parts cut the
  weights by rows.
All keep the original Conv's attributes (pads, the fused `_act`) and add `kernel_shape`.
Winograd weights are 16/9 (F(4x4): 4x) the size of the originals, so api.py runs this pass only for targets
with memory to spare (host and Linux).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node
from ember.ops import registry
from ember.ops.conv import ROW_PANELS, row_panels_fit
from ember.ops.qlinear import packed_bound, qconv_geometry
from ember.ops.qshifted import qconv_shifted_fits, shifted_weights
from ember.ops.qwino import BOUND_ATTR, qconv_wino_takes, real_weights, sums_fit, wino_weights
from ember.toolchain.cpus import DEFAULT_FAMILY, CpuFamily

# The thresholds (Winograd, ConvNarrow, ConvShifted) come from the CPU family (toolchain/cpus.py): the
# defaults there were measured on AVX-512 (issue 4). What each decides:
# - winograd_min_channels / winograd_min_pixels: below these sizes the transforms cost more than the
#   multiplies they save.
# - winograd4_min_tiles: F(4x4, 3x3) where its tiles fill the matmul's columns (28x28 maps and up: 49
#   tiles); smaller maps would leave its matmuls one vector wide.
# - shifted_max_width: Shifted pays where im2col's rows are short; it computes (KW-1)*dilation extra
#   columns per output row, so it also needs those to be at most half a row (measured on LeNet).
# - narrow_max_pixels / narrow_min_channels: pixel-major pays where the pixels fill at most 4 AVX-512
#   vectors and the channels fill many (0: never).
# Strided convs pay too with Shifted (im2col gathers every tap with a stride; the polyphase planes are one
# pass over the input), where the extra columns are at most 1/SHIFTED_MAX_EXTRA of a row. Not 1x1 ones
# (their im2col is one subsampling pass already) nor K below shifted_strided_min_k (MobileNet's 3-channel
# 3x3 stem: no gain there on AVX-512). Nor where the output rows are so short (at most SHIFTED_SHORT_ROW
# pixels) and K so small (below SHIFTED_SHORT_MAX_K: few channels, the keyword spotter's 10x4 stem over one)
# that im2col is all per-row overhead: there the extra column pays, up to half a row (measured on Zen 3 only
# there; deep strided convs onto 7x7 maps keep im2col).
SHIFTED_MAX_EXTRA = 8
SHIFTED_SHORT_ROW = 8
SHIFTED_SHORT_MAX_K = 64
PANEL = 32  # EMBER_MM_PANEL in kernels/matmul.c, unless the CPU family says otherwise (CpuFamily.mm_panel)

# Winograd weight transforms U = G g G^T: F(2x2, 3x3) and F(4x4, 3x3) (points 0, +-1, +-2).
_G2 = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
_G4 = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])


def winograd_weights(w: np.ndarray, tile: int = 2) -> np.ndarray:
    """(M, C, 3, 3) weights -> ((tile+2)^2, M, C) transformed weights, computed in float64."""
    g = _G2 if tile == 2 else _G4
    u = np.einsum("ik,mckl,jl->ijmc", g, w.astype(np.float64), g)
    return u.reshape(len(g) ** 2, w.shape[0], w.shape[1]).astype(w.dtype)


def narrow_panels(w: np.ndarray, panel: int = PANEL) -> np.ndarray:
    """(M, C, k...) weights -> their K x M transpose in panels of P columns: (M/P, K, P). Where P does not divide M,
    flat: the whole panels, then the last M % P columns as one narrower panel, K rows of them (kernels/nhwc.c
    ember_pw_nhwc_ld_f32 takes it)."""
    m = w.shape[0]
    if m % panel:
        whole, flat = m - m % panel, w.reshape(m, -1)
        return np.concatenate([narrow_panels(flat[:whole], panel).reshape(-1), flat[whole:].T.reshape(-1)])
    return w.reshape(m // panel, panel, -1).transpose(0, 2, 1)


def row_tiles(m: int) -> list[int]:
    """The rows of each register tile over `m` weight rows: kernels/matmul.c's ember_mm_rows6."""
    tiles = []
    while m > 0:
        tiles.append(4 if m in (8, 9) else 6 if m >= 6 else 4 if m >= 4 else 1)
        m -= tiles[-1]
    return tiles


def row_panels(w: np.ndarray, kc: int) -> np.ndarray:
    """(M, C, k...) weights -> the same shape holding row panels (kernels/matmul.c `apack`): for each K block
    [k0, k0 + kc), each row tile [m0, m0 + r) of row_tiles as its kn x r transpose, at k0 * M + m0 * kn."""
    flat, parts = w.reshape(w.shape[0], -1), []
    for k0 in range(0, flat.shape[1], kc):
        m0 = 0
        for r in row_tiles(w.shape[0]):
            parts.append(flat[m0:m0 + r, k0:k0 + kc].T.reshape(-1))
            m0 += r
    return np.concatenate(parts).reshape(w.shape)


# ConvShifted takes row panels from this K on: ResNet-50's stride-2 3x3 layers at 56x56 and 28x28 (K = 1152, 2304)
# measured 0.95-0.96x their least times inside the model on Zen 3 (0.87-0.99x alone), its 7x7 stem (K = 147, rows
# of 112 pixels, one product each) 1.03x alone.
SHIFTED_ROWS_MIN_K = 256


def _pack_row_panels(graph: Graph, node: Node, cpu: CpuFamily) -> None:
    w, y = node.inputs[1], node.outputs[0]
    assert w is not None and w.const is not None and y is not None and cpu.row_panels_min_k is not None
    if node.op in ("ConvWinograd", "ConvWinograd4"):
        _pack_winograd_rows(graph, node, cpu)
        return
    # Not products that pack B whole per K block (EMBER_MM_BLOCK_N: 7x7 maps). With their column after the last whole
    # vector through a scalar tile they took 1.09x the time (2048 -> 512); with it as vectors across the tile's rows
    # (matmul.c ember_mm_dot_cols_ap, which Winograd's 49-tile products use), per-node least times inside ResNet-50 on
    # Zen 3: 1x1 2048 -> 512 1.06-1.07x, 512 -> 2048 0.94-1.0x, the stride-2 3x3 onto 7x7 (im2col) 1.08x: no gain.
    k = math.prod(w.shape[1:])
    fits = row_panels_fit(node) if node.op == "Conv" else node.op == "ConvShifted" and k >= SHIFTED_ROWS_MIN_K
    if not fits or k < cpu.row_panels_min_k or math.prod(y.shape[2:]) <= cpu.mm_block_n:
        return
    node.inputs[1] = graph.constant(f"{node.name}_w_rows", np.ascontiguousarray(row_panels(w.const, cpu.mm_kc)))
    node.attrs[ROW_PANELS] = 1


# Winograd's products (kernels/winograd.c: U[e] (M x C) times the transformed input, one column per tile) take row
# panels whatever their tiles. Inside a model U comes from memory (ResNet-50: 9 MiB a 14x14 layer, 16 MiB a 7x7
# one), and a register tile's six rows, C floats each, are too short for the hardware prefetchers; in row panels the
# 36 (16) products read it as one forward stream. On Zen 3, per-node least times inside ResNet-50 (interleaved with
# the build without, a loaded machine): F(4x4) at 14x14 (256 ch) 0.70-0.75x, at 28x28 (128 ch, 49 tiles: the last
# column as ember_mm_dot_cols_ap) 0.81-0.83x, at 56x56 (64 ch) 0.93-1.04x; F(2x2) at 7x7 (512 ch) 0.83-0.90x.
def _pack_winograd_rows(graph: Graph, node: Node, cpu: CpuFamily) -> None:
    u = node.inputs[1]
    assert u is not None and u.const is not None and cpu.row_panels_min_k is not None
    if u.shape[2] < cpu.row_panels_min_k:
        return
    packed = np.stack([row_panels(ue, cpu.mm_kc) for ue in u.const])
    node.inputs[1] = graph.constant(f"{node.name}_u_rows", np.ascontiguousarray(packed))
    node.attrs[ROW_PANELS] = 1


def _plain_conv(node: Node) -> bool:
    """An ungrouped float32 Conv with constant weights (the cases both algorithms handle)."""
    if node.op != "Conv" or len(node.inputs) < 2:
        return False
    x, w, y = node.input(0), node.input(1), node.outputs[0]
    return (x is not None and w is not None and y is not None and w.is_const and x.dtype is DType.FLOAT32
            and node.attrs.get("group", 1) == 1)


def _winograd_fits(node: Node, cpu: CpuFamily) -> bool:
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None and y is not None
    if x.type.rank != 4 or w.shape[2:] != (3, 3):
        return False
    strides, dilations = node.attrs.get("strides", [1, 1]), node.attrs.get("dilations", [1, 1])
    if any(s != 1 for s in strides) or any(d != 1 for d in dilations):
        return False
    m, c = w.shape[0], w.shape[1]
    return min(m, c) >= cpu.winograd_min_channels and y.shape[2] * y.shape[3] >= cpu.winograd_min_pixels


def _winograd4_tiles(node: Node) -> int:
    y = node.outputs[0]
    assert y is not None
    return -(-y.shape[2] // 4) * -(-y.shape[3] // 4)


# Floats per vector of each family's widest SIMD (EMBER_VL in kernels/matmul.c); "any": a target without a CPU
# table, whose compiler flags may still ask for AVX-512.
_VECTOR_LANES = {"sse2": 1, "avx2": 8, "avx512": 16, "any": 16}


def _winograd4_takes(node: Node, cpu: CpuFamily) -> bool:
    """ConvWinograd4's transforms run one vector of tiles at a time, the last group overlapping the one before:
    the kernel needs at least a vector's worth of tiles (a 12x12 map has 9, under AVX-512's 16)."""
    return _winograd4_tiles(node) >= _VECTOR_LANES[cpu.simd]


def _narrow_fits(node: Node, cpu: CpuFamily) -> bool:
    w, y = node.inputs[1], node.outputs[0]
    assert w is not None and y is not None
    m = w.shape[0]
    return (math.prod(y.shape[2:]) <= cpu.narrow_max_pixels and m >= cpu.narrow_min_channels
            and m % (cpu.narrow_panel or cpu.mm_panel) == 0)


def _shifted_fits(node: Node, cpu: CpuFamily) -> bool:
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None and y is not None
    if x.type.rank != 4:
        return False
    strides = node.attrs.get("strides", [1, 1])
    extra = (w.shape[3] - 1) * node.attrs.get("dilations", [1, 1])[1] // strides[1]  # columns computed per row
    if strides != [1, 1]:
        k = math.prod(w.shape[1:])
        short = 2 * extra <= y.shape[3] <= SHIFTED_SHORT_ROW and k < SHIFTED_SHORT_MAX_K
        wide = SHIFTED_MAX_EXTRA * extra <= y.shape[3]
        return w.shape[2:] != (1, 1) and k >= cpu.shifted_strided_min_k and (wide or short)
    return w.shape[2:] != (1, 1) and y.shape[3] <= cpu.shifted_max_width and 2 * extra <= y.shape[3]


def _panels_matmul(node: Node, panel: int) -> bool:
    if node.op != "MatMul" or len(node.inputs) != 2:
        return False
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    return (a is not None and b is not None and y is not None and b.is_const and b.type.rank == 2
            and a.type.rank >= 2 and b.shape[1] % panel == 0 and a.dtype is DType.FLOAT32
            and b.dtype is DType.FLOAT32 and y.dtype is DType.FLOAT32)


# The algorithms a float Conv or MatMul can take (what `--tune` times, ember/tune.py): "winograd4",
# "winograd", "narrow", "shifted" (the ops above), "im2col" and "direct" (the plain Conv kernel; direct: a
# 1x1 stride-1 unpadded conv, one matmul on the input), "panels" (MatMulPanels) and "packed" (the plain
# MatMul, which packs B at run time).


@dataclass(frozen=True)
class AlgorithmChoice:
    """What the pass chose for one node (node.attrs[CHOICE_ATTR]; NAME.json's `algorithms`)."""

    key: str  # layer_key: the node's shape, the unit of the choice file
    choice: str
    source: str  # "threshold" (the CPU family's) or "tuned" (the choice file's)
    candidates: tuple[str, ...]


CHOICE_ATTR = "_algorithm"


def _plain_algorithm(node: Node) -> str:
    w = node.inputs[1]
    assert w is not None
    one = w.shape[2:] == (1,) * (w.type.rank - 2) and set(node.attrs.get("strides") or [1]) == {1}
    return "direct" if one and not any(node.attrs.get("pads") or [0]) else "im2col"


def candidates(node: Node, cpu: CpuFamily = DEFAULT_FAMILY) -> tuple[str, ...]:
    """The algorithms that compute this node correctly, whatever they cost (empty: nothing to choose)."""
    if node.op == "MatMul":
        return ("panels", "packed") if _panels_matmul(node, cpu.mm_panel) else ()
    if not _plain_conv(node):
        return ()
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    assert x is not None and w is not None and y is not None
    found = []
    if x.type.rank == 4 and w.shape[2:] == (3, 3) and node.attrs.get("strides", [1, 1]) == [1, 1] \
            and node.attrs.get("dilations", [1, 1]) == [1, 1]:
        found += ["winograd4", "winograd"] if _winograd4_takes(node, cpu) else ["winograd"]
    if x.type.rank == 4 and w.shape[0] % (cpu.narrow_panel or cpu.mm_panel) == 0:
        found.append("narrow")
    if x.type.rank == 4 and w.shape[2:] != (1, 1):
        found.append("shifted")
    return (*found, _plain_algorithm(node))


def layer_key(node: Node) -> str:
    """The node's shape and geometry: nodes with equal keys cost alike, so one choice serves them all."""
    def dims(i: int) -> str:
        v = node.input(i)
        return "x".join(map(str, v.shape)) if v is not None else "-"

    if node.op == "MatMul":
        return f"MatMul a={dims(0)} b={dims(1)}"
    r = len(node.inputs[1].shape) - 2 if node.inputs[1] is not None else 0
    # Defaults written out: a model that states them and one that leaves them out have one key.
    geo = {"strides": [1] * r, "pads": [0] * (2 * r), "dilations": [1] * r}
    geo.update({k: node.attrs[k] for k in geo if node.attrs.get(k)})
    pad = node.attrs.get("auto_pad", "NOTSET")
    y = "x".join(map(str, node.outputs[0].shape)) if node.outputs[0] is not None else "-"
    return " ".join([f"Conv x={dims(0)} w={dims(1)} y={y}", *(f"{k}={','.join(map(str, v))}" for k, v in geo.items()),
                     *([f"auto_pad={pad}"] if pad != "NOTSET" else [])])


def threshold_choice(node: Node, cpu: CpuFamily) -> str:
    """The CPU family's choice for a node with candidates (the thresholds above)."""
    if node.op == "MatMul":
        return "panels" if cpu.matmul_panels else "packed"
    if _winograd_fits(node, cpu) and _winograd4_tiles(node) >= cpu.winograd4_min_tiles and _winograd4_takes(node, cpu):
        return "winograd4"
    if _winograd_fits(node, cpu):
        return "winograd"
    if _narrow_fits(node, cpu):
        return "narrow"
    if _shifted_fits(node, cpu):
        return "shifted"
    return _plain_algorithm(node)


def choose_conv_algorithms(graph: Graph, cpu: CpuFamily = DEFAULT_FAMILY,
                           tuned: Mapping[str, str] | None = None, row_panels: bool = True) -> None:
    """`tuned`: layer_key -> algorithm, from a choice file (`--tune`); other nodes get the thresholds' choice.
    `row_panels`: whether the family's row panels may be used everywhere; False (--threads): only on convs that
    divide along their output pixels (ops/split.py), whose parts read all the weights, not on those whose parts
    cut the weights' rows (row panels interleave the rows)."""
    for node in graph.nodes:
        if node.op == "QConv" and qconv_wino_fits(node, cpu) and _to_wino(graph, node):
            continue
        if node.op == "QConv" and not qconv_amx_fits(node, cpu) and qconv_shifted_fits(node):
            wq = node.inputs[2]
            assert wq is not None and wq.const is not None
            node.inputs[2] = graph.constant(f"{node.name}_wq_shifted", shifted_weights(node, wq.const))
            node.op = "QConvShifted"
            continue
        options = candidates(node, cpu)
        if not options:
            continue
        key = layer_key(node)
        choice, source = threshold_choice(node, cpu), "threshold"
        if tuned is not None and tuned.get(key) in options:
            choice, source = tuned[key], "tuned"
        node.attrs[CHOICE_ATTR] = AlgorithmChoice(key, choice, source, options)
        _apply(graph, node, choice, cpu)
        if cpu.row_panels_min_k is not None and (row_panels or _parts_read_all_weights(node)):
            _pack_row_panels(graph, node, cpu)


def _parts_read_all_weights(node: Node) -> bool:
    """Whether no part of `node` divided among threads (ops/split.py) cuts its weights (input 1)."""
    split_fn = registry.get(node.op).split
    split = split_fn(node) if split_fn is not None else None
    return split is None or all(s.out or s.index != 1 for s in split.slices)


def qconv_amx_fits(node: Node, cpu: CpuFamily) -> bool:
    """Whether QConv `node` runs its product on AMX tiles (kernels/qamx.c), so stays a QConv: the CPU has them, the
    family uses them, and each group's product is whole tiles, 16 output channels and 64 bytes of K (channels x taps,
    in fours). There an im2col copy and the tiles take a fraction of QConvShifted's AVX-512 time (ResNet-18's 3x3
    convs: 0.43x with the copy included)."""
    q = node.attrs["_q"]
    if not (cpu.qamx and cpu.amx_int8) or q.depthwise:
        return False
    g, y = qconv_geometry(node), node.outputs[0]
    groups = int(node.attrs.get("group", 1))
    assert y is not None
    return (y.shape[1] // groups) % 16 == 0 and -(-(g.channels // groups * g.taps) // 4) * 4 % 64 == 0


def qconv_wino_fits(node: Node, cpu: CpuFamily) -> bool:
    """Whether the CPU family asks for integer Winograd on QConv `node` (qwino.c takes it, both channel counts
    reach qwino_min_channels and the output has qwino_min_pixels)."""
    if cpu.qwino_min_channels is None or not qconv_wino_takes(node):
        return False
    x, y = node.inputs[0], node.outputs[0]
    assert x is not None and y is not None
    return (min(x.shape[1], y.shape[1]) >= cpu.qwino_min_channels
            and y.shape[2] * y.shape[3] >= cpu.qwino_min_pixels)


def _to_wino(graph: Graph, node: Node) -> bool:
    """QConv -> QConvWinograd with transformed weights, unless the int32 proof (qwino.py sums_fit) fails."""
    w = real_weights(node)
    if not sums_fit(w):
        return False
    q = node.attrs["_q"]
    wq = node.inputs[2]
    assert wq is not None and wq.const is not None
    node.attrs[BOUND_ATTR] = tuple(float(v) for v in packed_bound(q, wq.const))
    node.attrs["_rows"] = w.shape[0]
    node.inputs[2] = graph.constant(f"{node.name}_wq_wino", wino_weights(w))
    node.op = "QConvWinograd"
    return True


def _apply(graph: Graph, node: Node, choice: str, cpu: CpuFamily) -> None:
    w = node.inputs[1]
    assert w is not None and w.const is not None
    if choice == "panels":
        # AVX-512's 7 x 4-vector tiles where 64-column panels divide N (cpu.narrow_panel), else the matmul's strips
        width = cpu.narrow_panel if cpu.narrow_panel and w.shape[-1] % cpu.narrow_panel == 0 else cpu.mm_panel
        panels = w.const.reshape(w.shape[0], -1, width).transpose(1, 0, 2)  # (N/P, K, P)
        node.inputs[1] = graph.constant(f"{node.name}_b_panels", np.ascontiguousarray(panels))
        node.op = "MatMulPanels"
        return
    if choice in ("packed", "im2col", "direct"):
        return
    node.attrs["kernel_shape"] = list(w.shape[2:])
    if choice == "shifted":
        node.op = "ConvShifted"
        return
    if choice == "winograd4":
        node.op, data, suffix = "ConvWinograd4", winograd_weights(w.const, 4), "winograd4"
    elif choice == "winograd":
        node.op, data, suffix = "ConvWinograd", winograd_weights(w.const), "winograd"
    else:
        node.op, data, suffix = "ConvNarrow", narrow_panels(w.const, cpu.narrow_panel or cpu.mm_panel), "panels"
    node.inputs[1] = graph.constant(f"{node.name}_w_{suffix}", np.ascontiguousarray(data))
