"""ConvNHWC (internal): a Conv on channels-last activations (kernels/nhwc.c, kernels/nhwc_dense.c).

passes/nhwc_region.py rewrites chains of float depthwise (multiplier 1) and 1x1 stride-1 Convs (and dense ones,
where the CPU family sets nhwc_dense) into this op,
with Transposes at the region's boundaries. Inputs: (X [N, H, W, C], W', B [M] (optional), residual [N, OH,
OW, M] (optional: a fused residual Add, added before the activation)). W' is the weights rearranged so that a
channel vector is contiguous: depthwise [KH*KW, C] (tap-major), 1x1 [C, M] (the matmul's B) or that in panels,
a stem [C*KH*KW, M] (its X is NCHW, or NHWC where it was a Transpose's input: the region's way in without a
reorder); a dense conv's as NhwcParams.dense says.
The geometry is the Conv's (attribute `_nhwc`, an NhwcParams); the fused activation comes along as the Conv's
epilogue.
"""

from __future__ import annotations

from dataclasses import dataclass

from ember.codegen.emitter import KernelEmitter
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Node
from ember.ops.conv import ConvGeometry
from ember.ops.epilogue import epilogue_args
from ember.ops.infer import inp, typed
from ember.ops.opdef import OpDef
from ember.ops.parallel import Split, with_part_scratch
from ember.ops.registry import register

NHWC_ATTR = "_nhwc"
RESIDUAL = 3


@dataclass(frozen=True)
class NhwcParams:
    geometry: ConvGeometry  # the Conv's (channels: C)
    out_channels: int  # M: C for a depthwise conv
    depthwise: bool
    # A 1x1 conv's weights packed at compile time in panels of this many columns ([M/P, C, P]: kernels/matmul.c's
    # EMBER_MM_PANEL, or the family's narrow_panel for AVX-512's 4-vector tiles, then a narrower last panel where it
    # does not divide M: nhwc_region.RAGGED_STEP), so the matmul packs no B strip at run time; 0: plain [C, M].
    panel: int = 0
    # A network's stem (nhwc_region._stem): a dense Conv of few input channels reading NCHW activations (the
    # model's input) and writing NHWC ones; weights [C*KH*KW, M].
    stem: bool = False
    # A stem reading NHWC activations (a TFLite model's input, whose NHWC -> NCHW Transpose the region left out).
    nhwc_in: bool = False
    # A 1x1 conv of few input channels in panels (kernels/nhwc.c's ember_pw_nhwc_small_f32: pixel tiles over all
    # panels, K a compile-time constant), where the CPU family's nhwc_small_k admits its channel count.
    small: bool = False
    # A dense conv (nhwc_region.dense_kind; kernels/nhwc_dense.c): "winograd4", weights [36][C][M] (each U[e] as a
    # 1x1 conv's, in `panel`s), or "im2col", weights [KH*KW*C][M] likewise; "" for the kinds above.
    dense: str = ""


def params(node: Node) -> NhwcParams:
    p = node.attrs[NHWC_ATTR]
    assert isinstance(p, NhwcParams)
    return p


def _infer(node: Node) -> list[TensorType | None]:
    x, p = inp(node, 0), params(node)  # x: NHWC, or NCHW for a stem: only its batch is read here
    return [typed(x.dtype, [x.shape[0], *p.geometry.out_size[1:], p.out_channels])]


def _emit(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Units [lo, hi) of the output: rows of the plane (depthwise) or pixels (1x1), as ops/parallel.py splits
    them; the whole node is [0, units)."""
    p, x = params(node), inp(node, 0)
    bias = k.inp(2) if node.input(2) is not None else "0"
    has_res = node.input(RESIDUAL) is not None
    if p.stem:
        k.call("ember_conv_stem_nhwc_f32", k.out(0), k.inp(0), k.inp(1), bias, k.table(p.geometry.table(), DType.INT32),
               p.out_channels, int(p.nhwc_in), x.shape[0], lo, hi, *epilogue_args(node))
        return
    if p.dense:
        table, res = k.table(p.geometry.table(), DType.INT32), k.inp(RESIDUAL) if has_res else "0"
        if p.dense == "winograd4":
            cols, rows = ((lo * p.panel, hi * p.panel), (0, _tile_rows(node))) if by_columns(node) else \
                ((0, p.out_channels), (lo, hi))
            k.call("ember_conv_wino4_nhwc_f32", k.out(0), k.inp(0), k.inp(1), p.panel, bias, res, k.scratch("float"),
                   table, p.out_channels, *cols, x.shape[0], *rows, *epilogue_args(node))
        else:
            cols, pixels = ((lo * p.panel, hi * p.panel), (0, _pixels(node))) if by_columns(node) else \
                ((0, p.out_channels), (lo, hi))
            k.call("ember_conv_im2col_nhwc_f32", k.out(0), k.inp(0), k.inp(1), p.panel, bias, res,
                   k.scratch("float"), table, p.out_channels, *cols, *pixels, *epilogue_args(node))
        return
    if p.depthwise:
        k.call("ember_dwconv_nhwc_f32", k.out(0), k.inp(0), k.inp(1), bias, k.inp(RESIDUAL) if has_res else "0",
               k.table(p.geometry.table(), DType.INT32), x.shape[0], lo, hi, *epilogue_args(node))
        return
    m, c = p.out_channels, p.geometry.channels
    if by_columns(node):  # columns [m0, m0 + n) of every pixel: w's panels from m0 on
        m0, n = lo * p.panel, (hi - lo) * p.panel
        k.call("ember_pw_nhwc_ld_f32", f"{k.out(0)} + {m0}", m, k.inp(0), f"{k.inp(1)} + (ptrdiff_t){m0 * c}", p.panel,
               f"{bias} + {m0}" if bias != "0" else "0", f"{k.inp(RESIDUAL)} + {m0}" if has_res else "0",
               _pixels(node), n, c, *epilogue_args(node))
        return

    def at(ptr: str, width: int) -> str:
        return f"{ptr} + (ptrdiff_t){lo * width}" if lo else ptr

    res = at(k.inp(RESIDUAL), m) if has_res else "0"
    if p.small:
        k.call("ember_pw_nhwc_small_f32", at(k.out(0), m), at(k.inp(0), c), k.inp(1), bias, res, hi - lo, m, c,
               *epilogue_args(node))
        return
    k.call("ember_pw_nhwc_f32", at(k.out(0), m), at(k.inp(0), c), k.inp(1), p.panel, bias, res, hi - lo, m, c,
           *epilogue_args(node))


def _units(node: Node) -> int:
    """Output rows (depthwise, stem), 4-row tile rows (Winograd), weight panels (by_columns) or pixels of all images
    (1x1, im2col)."""
    p = params(node)
    if by_columns(node):
        return p.out_channels // p.panel
    if p.dense == "winograd4":
        return _tile_rows(node)
    return p.geometry.out_size[1] if p.depthwise or p.stem else _pixels(node)


def _pixels(node: Node) -> int:
    return inp(node, 0).shape[0] * params(node).geometry.pixels


def _tile_rows(node: Node) -> int:
    return -(-params(node).geometry.out_size[1] // 4)


def _tiles(node: Node) -> int:
    return _tile_rows(node) * -(-params(node).geometry.out_size[2] // 4)


# Winograd's transformed weights (36 x C x M floats) over which a map of at most WINO_COLUMNS_MAX_TILES tiles divides
# by columns: ResNet-50's 14x14 layers (9 MiB of U, 16 tiles), whose halves of 2 tile rows each streamed all of U
# (2 threads: 0.85 ms a layer where 1 thread took 0.98).
WINO_COLUMNS_MIN_FLOATS = 4 * 262144
WINO_COLUMNS_MAX_TILES = 64


def by_columns(node: Node) -> bool:
    """A 1x1 or im2col product whose weights are over 1 MiB and whose pixels are one block (ResNet's 7x7 stage), or a
    Winograd conv of few tiles and big transformed weights (WINO_COLUMNS_*): its threads divide the weight panels,
    each streaming its share of the weights once, where parts of the pixels would each stream them all. A call over
    all panels computes what the pixel-wise call does, element for element."""
    p = params(node)
    if p.depthwise or p.stem or p.small or not p.panel or p.out_channels // p.panel < 2 or p.out_channels % p.panel:
        return False
    if p.dense == "winograd4":
        return (36 * p.geometry.channels * p.out_channels > WINO_COLUMNS_MIN_FLOATS
                and _tiles(node) <= WINO_COLUMNS_MAX_TILES and inp(node, 0).shape[0] == 1)
    k, pixels = p.geometry.taps * p.geometry.channels, _pixels(node)
    return k * p.out_channels > _PW_BIG_FLOATS and _pw_rows(pixels, k, p.out_channels) >= pixels


# A thread's part of a dense conv: how many units it computes, which sizes its scratch.
PART_UNITS = "_part_units"

# kernels/nhwc.c's ember_pw_nhwc_rows: the pixels of an im2col block.
_PW_BLOCK_FLOATS, _PW_BIG_FLOATS = 32768, 262144


def _pw_rows(p: int, k: int, m: int, mr: int = 12) -> int:
    """At least ember_pw_nhwc_rows(p, k, m) for any EMBER_MR (at most 12)."""
    budget = _PW_BIG_FLOATS if k * m > _PW_BIG_FLOATS else _PW_BLOCK_FLOATS
    rows = max(budget // max(k, 1), mr)
    return p if p <= rows + rows // 2 else rows


def _scratch(node: Node) -> int:
    """Bytes: Winograd's V and Z over the part's tiles; im2col's one block of rows."""
    p = params(node)
    units = node.attrs.get(PART_UNITS, _units(node))
    if p.dense == "winograd4":
        if by_columns(node):  # all tiles, the part's columns
            return 4 * 36 * (_tiles(node) * (p.geometry.channels + units * p.panel) + 32)
        tiles = units * -(-p.geometry.out_size[2] // 4)
        return 4 * 36 * (tiles * (p.geometry.channels + p.out_channels) + 32)
    if p.dense == "im2col":
        k, pixels = p.geometry.taps * p.geometry.channels, units if not by_columns(node) else _pixels(node)
        return 4 * min(_pw_rows(pixels, k, p.out_channels), pixels) * k
    return 0


def _lower(node: Node, k: KernelEmitter) -> None:
    _emit(node, k, 0, _units(node))


def _split(node: Node) -> Split | None:
    """Depthwise and stem: ranges of output rows of one image; Winograd: of its 4-row tile rows (each part
    transforms the input its tiles read, scratch of its own); 1x1 and im2col: ranges of pixels, or of weight panels
    (by_columns). Each part computes its elements exactly as the whole call does (the same taps, the same K order)."""
    p = params(node)
    if (p.depthwise or p.stem or p.dense == "winograd4") and inp(node, 0).shape[0] != 1:
        return None
    return Split(_units(node), 1, (), lower=_emit, attrs=lambda lo, hi: {PART_UNITS: hi - lo})


def _flops(node: Node) -> int:
    p, x = params(node), inp(node, 0)
    per_output = p.geometry.taps * (1 if p.depthwise else p.geometry.channels)
    return 2 * x.shape[0] * p.out_channels * p.geometry.pixels * per_output


# NhwcReorder (internal): a region boundary's Transpose of a 4-D float32 tensor, NCHW -> NHWC (perm 0, 2, 3, 1)
# or back (0, 3, 1, 2), as passes/nhwc_region.py leaves it: per image a 2-D transpose ([C, H*W] <-> [H*W, C]) of
# vector blocks in registers (kernels/matmul.c ember_transpose2d_f32), where the generic strided copy moved one element
# at a time a whole plane apart (MobileNetV2's 112x112x32 stem output: 0.12 ms, 1.2% of the model).
REORDER_PERMS = ((0, 2, 3, 1), (0, 3, 1, 2))


def _lower_reorder(node: Node, k: KernelEmitter) -> None:
    x = inp(node, 0)
    n, (a, b, c) = x.shape[0], x.shape[1:]
    rows, cols = (a, b * c) if tuple(node.attrs["perm"]) == REORDER_PERMS[0] else (a * b, c)
    k.need("ember_transpose2d_f32")
    with k.w.block(f"for (int ember_n = 0; ember_n < {n}; ++ember_n)"):
        k.call("ember_transpose2d_f32", f"{k.out(0)} + (ptrdiff_t)ember_n * {rows * cols}",
               f"{k.inp(0)} + (ptrdiff_t)ember_n * {rows * cols}", rows, cols)


def _infer_reorder(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    return [typed(x.dtype, [x.shape[p] for p in node.attrs["perm"]])]


register(OpDef("NhwcReorder", infer=_infer_reorder, lower=_lower_reorder, kernels=("ember_transpose2d_f32",)))


# GapNHWC and ScaleNHWC (internal): a Squeeze-Excitation block's GlobalAveragePool and Mul inside a region, so
# that the depthwise output both read stays channels-last (EfficientNet, MobileNetV3), and a final pool.
# GapNHWC: (X [N, H, W, C]) -> [N, C, 1, 1] (the same bytes as [N, 1, 1, C]), or [N, C] with keepdims 0.
# ScaleNHWC: (X [N, H, W, C], S [N or 1, C, 1, 1]) -> [N, H, W, C], X times S per channel.
def _hw(node: Node) -> tuple[int, int, int]:
    x = inp(node, 0)
    return x.shape[0], x.shape[1] * x.shape[2], x.shape[3]


def _lower_gap(node: Node, k: KernelEmitter) -> None:
    k.call("ember_gap_nhwc_f32", k.out(0), k.inp(0), *_hw(node))


def _lower_scale(node: Node, k: KernelEmitter) -> None:
    n, p, c = _hw(node)
    k.call("ember_scale_nhwc_f32", k.out(0), k.inp(0), k.inp(1), c if inp(node, 1).shape[0] > 1 else 0, n, p, c)


def _infer_gap(node: Node) -> list[TensorType | None]:
    x = inp(node, 0)
    return [typed(x.dtype, [x.shape[0], x.shape[3], *([1, 1] if node.attrs.get("keepdims", 1) else [])])]


register(OpDef("GapNHWC", lower=_lower_gap, kernels=("ember_gap_nhwc_f32",), infer=_infer_gap))
# ScaleNHWC in place over the activations (slot 0), which the SE block's pool has read before: each element is
# read before its product is written.
register(OpDef("ScaleNHWC", lower=_lower_scale, kernels=("ember_scale_nhwc_f32",), inplace=(0,),
               infer=lambda n: [typed(inp(n, 0).dtype, list(inp(n, 0).shape))]))


# Not in place: the depthwise kernel's ragged last vector re-reads inputs of channels it has written.
register(OpDef(
    "ConvNHWC", infer=_infer, lower=_lower,
    kernels=("ember_dwconv_nhwc_f32", "ember_pw_nhwc_f32", "ember_pw_nhwc_small_f32", "ember_conv_stem_nhwc_f32",
             "ember_pw_nhwc_ld_f32", "ember_conv_wino4_nhwc_f32", "ember_conv_im2col_nhwc_f32"),
    takes_epilogue=True, flops=_flops, split=_split, scratch=with_part_scratch(_scratch, _split),
))
