"""Conv and ConvTranspose (float32, 1-3 spatial dims, groups, dilations, auto_pad), fused activations.

Conv lowers to im2col + the matmul kernel (a 1x1/stride-1 conv skips im2col), depthwise convs to
direct loops; ConvTranspose to matmul + col2im. The geometry is a ConvGeometry, which the kernels read
as a static int32 table (kernels/conv.c names its entries EMBER_GEO_*).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass

import numpy as np

from ember.codegen.emitter import KernelEmitter
from ember.errors import ShapeError, UnsupportedOperatorError
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node
from ember.ops.epilogue import epilogue_args, epilogue_of
from ember.ops.infer import conv_out, inp, typed
from ember.ops.matmul import float16_via_f32, present, require_f32
from ember.ops.opdef import Int8, OpDef, WeightLayout
from ember.ops.registry import register
from ember.ops.shape import stored_nhwc, writes_nhwc

# A channels-first op (a pool, LRN, ConvTranspose) whose data input and output are stored channels-last: Transpose
# optimization moved the layout through it (passes/transposes.py); its kernel takes the channel stride.
CHANNELS_LAST = "channels_last"


def channels_last(node: Node) -> bool:
    return bool(node.attrs.get(CHANNELS_LAST, 0))


def nchw_shape(node: Node, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` of a data input or output of `node` in the channels-first order its attributes describe."""
    return (shape[0], shape[-1], *shape[1:-1]) if channels_last(node) else tuple(shape)


def pad3(xs: list[int], fill: int) -> list[int]:
    """Spatial values of a 1-D/2-D op as 3-D ones: leading unit dims (the kernels are 3-D)."""
    return [fill] * (3 - len(xs)) + list(xs)


def same_pads_begin(auto_pad: str, total: list[int]) -> list[int]:
    """Leading pads of SAME_UPPER (extra padding at the end) / SAME_LOWER (extra at the start)."""
    total = [max(t, 0) for t in total]
    return [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]


Dims = tuple[int, int, int]  # depth, height, width


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution's shape, 3-D (1-D and 2-D ones get leading unit dims). `table()` is the kernels'
    int32 table: the fields in this order, entry i named by conv.c's EMBER_GEO_* macros."""

    channels: int  # input channels C
    in_size: Dims
    kernel: Dims
    out_size: Dims
    strides: Dims
    dilations: Dims
    pads_begin: Dims  # the leading pads (the trailing ones follow from the sizes)

    def table(self) -> list[int]:
        return [self.channels, *(v for dims in astuple(self)[1:] for v in dims)]

    @property
    def taps(self) -> int:
        return math.prod(self.kernel)

    @property
    def pixels(self) -> int:
        return math.prod(self.out_size)

    @property
    def planar(self) -> bool:
        """2-D (or 1-D): depth 1 in, kernel and out."""
        return self.in_size[0] == 1 and self.kernel[0] == 1 and self.out_size[0] == 1

    @property
    def direct(self) -> bool:
        """A 1x1, stride-1, unpadded conv: its input already is the matmul's B operand (no im2col)."""
        return (self.taps == 1 and self.in_size == self.out_size and self.strides == (1, 1, 1)
                and self.pads_begin == (0, 0, 0))


def dims3(xs: list[int], fill: int) -> Dims:
    """`pad3` as a typed (D, H, W) triple."""
    a, b, c = pad3(xs, fill)
    return a, b, c


def conv_geometry(node: Node, x_spatial: list[int], k_spatial: list[int], out_spatial: list[int],
                  transpose: bool = False) -> ConvGeometry:
    """`node`'s geometry from its spatial input, kernel and output sizes and its attributes."""
    r = len(x_spatial)
    strides = list(node.attrs.get("strides", [1] * r))
    dil = list(node.attrs.get("dilations", [1] * r))
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if transpose:
            opad = list(node.attrs.get("output_padding", [0] * r))
            target = list(node.attrs.get("output_shape", [x * s for x, s in zip(x_spatial, strides, strict=True)]))
            total = [s * (i - 1) + op + (k - 1) * d + 1 - o
                     for s, i, op, k, d, o in zip(strides, x_spatial, opad, k_spatial, dil, target[-r:], strict=True)]
        else:
            total = [(o - 1) * s + (k - 1) * d + 1 - i
                     for o, s, k, d, i in zip(out_spatial, strides, k_spatial, dil, x_spatial, strict=True)]
        pads = same_pads_begin(auto_pad, total)
    elif auto_pad == "VALID":
        pads = [0] * r
    else:
        pads = list(node.attrs.get("pads", [0] * (2 * r)))[:r]
    x = present(node.input(0))
    return ConvGeometry(nchw_shape(node, x.shape)[1], dims3(x_spatial, 1), dims3(k_spatial, 1), dims3(out_spatial, 1),
                        dims3(strides, 1), dims3(dil, 1), dims3(pads, 0))


def _normalize(node: Node, graph: Graph) -> None:
    require_f32(node, *node.inputs, node.outputs[0])
    x = present(node.input(0))
    if not 3 <= x.type.rank <= 5:
        raise UnsupportedOperatorError(node.op, node.name,
                                       f"{x.type.rank - 2}-D input (1-D to 3-D are implemented)")


def _conv_flops(node: Node) -> int:
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    if x is None or w is None or y is None:
        return 0
    spatial = y.shape[2:] if node.op == "Conv" else nchw_shape(node, x.shape)[2:]
    # w: (M, C/G, k...) for Conv and (C, M/G, k...) for ConvTranspose: either way one output
    # (or input) element costs prod(w.shape[1:]) MACs per channel of w.shape[0].
    return 2 * x.shape[0] * w.shape[0] * math.prod(w.shape[1:]) * math.prod(spatial)


def _rewritten_conv_flops(node: Node) -> int:
    """An algorithm variant counts as the direct convolution it replaces."""
    x, y = node.inputs[0], node.outputs[0]
    if x is None or y is None:
        return 0
    return 2 * x.shape[0] * y.shape[1] * x.shape[1] * math.prod(node.attrs["kernel_shape"]) * math.prod(y.shape[2:])


# Conv ------------------------------------------------------------------------------------------

def _conv_parts(node: Node) -> tuple[ConvGeometry, int, int, bool, bool]:
    """(geometry, groups, out channels, depthwise, direct 1x1)."""
    x, w, y = present(node.input(0)), present(node.input(1)), present(node.outputs[0])
    geo = conv_geometry(node, list(x.shape[2:]), list(w.shape[2:]), list(y.shape[2:]))
    group = node.attrs.get("group", 1)
    depthwise = group == x.shape[1] and group > 1 and w.shape[1] == 1
    return geo, group, w.shape[0], depthwise, geo.direct


def _dw_padded_floats(geo: ConvGeometry) -> int:
    """Scratch of ember_dwconv_f32: the padded input's stride-phase planes and the output at their pitch,
    or, if larger, what the 3x3 pad-1 stride-1/2 fast paths (dwconv3.c) use: a column table, two input
    buffers (zero-bordered copies or phase planes) and, for small planes, the channel-blocked grid."""
    if not geo.planar:
        return 0  # 3-D: the row kernel, no scratch
    (h, w), (oh, ow), (kh, kw) = geo.in_size[1:], geo.out_size[1:], geo.kernel[1:]
    (sh, sw), (dh, dw) = geo.strides[1:], geo.dilations[1:]
    hh = -(-((oh - 1) * sh + (kh - 1) * dh + 1) // sh)
    wh = -(-((ow - 1) * sw + (kw - 1) * dw + 1) // sw)
    planes = sh * sw * hh * wh + oh * wh
    fast, n, g, vl = 0, oh * ow, ow + 1, 16  # vl: the widest EMBER_VL
    if (kh, kw, dh, dw, *geo.pads_begin[1:]) == (3, 3, 1, 1, 1, 1):
        if (sh, sw) == (1, 1) and (oh, ow) == (h, w):
            guard = w + vl + 1
            fast = g + vl + 2 * max(n + 2 * guard, 2 * (guard + 2 * guard))
        elif (sh, sw) == (2, 2) and h in (2 * oh, 2 * oh - 1) and w in (2 * ow, 2 * ow - 1):
            fast = g + vl + 2 * 4 * (ow + vl + 1 + n + vl)
    if fast and h * w <= 256 * sh * sh:  # ember_dw3_blocked: a bordered grid of channel vectors, outputs, weights
        fast += (h + 2) * (w + 2) * vl + n * vl + 10 * vl + vl
    return max(planes, fast)


# kernels/dwblock.c's EMBER_DWK_BLOCKED_PIXELS: input planes up to this size may run channel-blocked.
DW_BLOCKED_PIXELS = 3136


def _dw3_fast(geo: ConvGeometry) -> bool:
    """One of dwconv3.c's 3x3 pad-1 geometries (stride 1 same-size, stride 2 halving), which it runs itself."""
    (h, w), (oh, ow) = geo.in_size[1:], geo.out_size[1:]
    if (*geo.kernel[1:], *geo.dilations[1:], *geo.pads_begin[1:]) != (3, 3, 1, 1, 1, 1):
        return False
    return ((geo.strides[1:] == (1, 1) and (oh, ow) == (h, w))
            or (geo.strides[1:] == (2, 2) and h in (2 * oh, 2 * oh - 1) and w in (2 * ow, 2 * ow - 1)))


def _dw_blocked_floats(node: Node, geo: ConvGeometry, m: int) -> int:
    """Scratch of ember_dwconv_blocked_f32's channel-blocked path (dwblock.c), 0 where it is not used: for
    small 2-D planes, multiplier 1, other than dwconv3.c's geometries; never under a scratch budget (a
    microcontroller's RAM, where vectors are narrow or absent). Where this says yes, the kernel's own test
    (ember_dwk_blocked_fits) does at every vector width but 1 (scalar builds run ember_dwconv_f32)."""
    pixels, vl = geo.in_size[1] * geo.in_size[2], 16  # the widest EMBER_VL: at least a vector of each
    if (not geo.planar or m != geo.channels or m < vl or not vl <= pixels <= DW_BLOCKED_PIXELS
            or geo.pixels < vl or _dw3_fast(geo) or SCRATCH_BUDGET in node.attrs):
        return 0
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = geo.out_size[1:], geo.kernel[1:], geo.strides[1:], geo.dilations[1:]
    gh, gw = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    return vl * (gh * gw + oh * ow + kh * kw + 2)


def _lines(floats: int) -> int:
    """`floats` rounded up to whole 64-byte lines."""
    return -(-floats // 16) * 16


# A float convolution's channels-last input (an NhwcView: passes/nhwc_views.py) is read where it is by im2col, a run
# of pixels' channels at a time (ember_im2col_f32), by ConvShifted's planes and by ConvNarrow, but a window of several
# taps over more channels than an image's, a depthwise convolution and a Winograd one read it from an NCHW copy at the
# start of their scratch, made by the blocked register transpose (kernels/matmul.c ember_transpose2d_f32): gathered
# tap by tap, the same bytes were moved once a tap, and a 3x3 of 16 -> 32 channels in 2 groups on a 16x16 map took
# 1.33x the time of the Transpose and the NCHW kernel (AVX-512), a 28x28 x 32 depthwise one 1.26x (SSE2, where the
# gather lost dwconv3.c's fast path). A depthwise or Winograd convolution's channels-last output is stored NCHW in
# scratch after the copy and transposed out the same way: their outputs go a channel plane at a time, and stored at
# the pixel stride a 56x56 x 16 F(4x4) took 1.08x (SSE2). On a microcontroller (SCRATCH_BUDGET), where scratch is
# RAM and no cache line is wasted, none of them copies: im2col gathers every window, and a depthwise convolution fills
# each channel's planes from, and stores its rows to, the NHWC tensor itself (`dw_strided`).
NHWC_GATHER_MAX_CHANNELS = 4
_COPYING = ("Conv", "ConvWinograd", "ConvWinograd4")


def conv_is_depthwise(node: Node) -> bool:
    """Whether Conv `node` is depthwise (a group per input channel)."""
    return _conv_parts(node)[3]


# Set by passes/nhwc_views.py on a microcontroller's (not depthwise) Conv that stores its output channels-last: its
# weights are stored group by group Kg x Mg (the same floats transposed, in the Conv's shape, as ROW_PANELS keeps
# it), so that ember_conv_hwc_f32 computes each block's product transposed, straight into the NHWC output.
WEIGHTS_KM = "_weights_km"


def store_weights_km(node: Node, graph: Graph) -> None:
    """Put `node`'s weights in ember_conv_hwc_f32's order (WEIGHTS_KM)."""
    w, group = present(node.input(1)), _conv_parts(node)[1]
    km = w.const.reshape(group, w.shape[0] // group, -1).transpose(0, 2, 1)
    node.inputs[1] = graph.constant(f"{node.name}_w_km", np.ascontiguousarray(km).reshape(w.shape))
    node.attrs[WEIGHTS_KM] = 1


def dw_strided(node: Node) -> bool:
    """Whether depthwise Conv `node` with a channels-last side runs ember_dwconv_strided_f32 (dwconv.c: its planes at
    the pixel stride, no NCHW copies): 2-D, on a microcontroller."""
    if node.op != "Conv" or SCRATCH_BUDGET not in node.attrs or not conv_lay(node):
        return False
    geo, _, _, depthwise, _ = _conv_parts(node)
    return depthwise and geo.planar


def nhwc_copies(node: Node) -> tuple[bool, bool]:
    """Whether `node` (a float convolution) would read a channels-last input, and store a channels-last output,
    through an NCHW copy in its scratch (see above)."""
    if node.op not in _COPYING:
        return False, False
    if node.op != "Conv":
        return True, True
    geo, _, _, depthwise, _ = _conv_parts(node)
    if SCRATCH_BUDGET in node.attrs and (geo.planar or not depthwise):  # a microcontroller's: see above
        return False, False
    return depthwise or (geo.taps > 1 and set(geo.strides) == {1} and geo.channels > NHWC_GATHER_MAX_CHANNELS), \
        depthwise


def nchw_copies(node: Node) -> tuple[int, int]:
    """Floats (whole 64-byte lines) of the NCHW copies of `node`'s channels-last input and output at the start of its
    scratch, in that order (0: none)."""
    copy_in, copy_out = nhwc_copies(node)
    x, y = node.input(0), node.outputs[0]
    return (_lines(present(x).type.numel) if copy_in and stored_nhwc(x) else 0,
            _lines(present(y).type.numel) if copy_out and writes_nhwc(node) else 0)


def nchw_sides(node: Node, k: KernelEmitter) -> tuple[str, int, str, str]:
    """(the data input's C pointer, its pixel stride: ember_im2col_f32's `ps`, the output's C pointer, where the
    kernel's own scratch starts: "0" where the node has none): the NCHW copies' where nchw_copies says so, the
    input's made here image by image (store_nchw_output transposes the output's out)."""
    x = present(node.input(0))
    copy_in, copy_out = nchw_copies(node)
    if not (copy_in or copy_out):
        return k.inp(0), im2col_pixel_stride(node), k.out(0), k.scratch("float") if k.has_scratch() else "0"
    base = k.scratch("float")
    n, c, hw = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    for i in range(n) if copy_in else ():
        k.call("ember_transpose2d_f32", f"{base} + {i * c * hw}", f"{k.inp(0)} + {i * c * hw}", hw, c)
    return (base if copy_in else k.inp(0), 1 if copy_in else im2col_pixel_stride(node),
            f"{base} + {copy_in}" if copy_out else k.out(0), f"{base} + {copy_in + copy_out}")


def store_nchw_output(node: Node, k: KernelEmitter, y: str, first: int = 0, pixels: int = 0) -> None:
    """The NCHW output copy `y` (nchw_sides) transposed into the channels-last output, image by image; `pixels`: a
    band of one image's output pixels from `first` on (else every pixel)."""
    if not nchw_copies(node)[1]:
        return
    out = present(node.outputs[0])
    m, hw = out.shape[1], math.prod(out.shape[2:])
    for i in range(out.shape[0] if not pixels else 1):
        k.call("ember_transpose2d_f32", f"{k.out(0)} + {(i * hw + first) * m}", f"{y} + {i * m * hw}", m,
               pixels or hw)


# im2col runs in blocks of output pixels whose columns fit in about this many bytes (an L2 share).
IM2COL_BLOCK_BYTES = 1024 * 1024
# Set by passes/scratch_budget.py on targets without a cache to fill (microcontrollers): the bytes a
# kernel's blocked scratch may take instead, since there the scratch is RAM the plan must hold.
SCRATCH_BUDGET = "_scratch_budget"


def _im2col_block(node: Node, geo: ConvGeometry, group: int) -> int:
    """Output pixels per im2col block: a multiple of 64 (whole vector strips), at least 256; under a scratch
    budget, a multiple of 4 (the matmul's column tile), at least 16: narrower blocks re-read the weights so
    often that LeNet's second convolution cost a third more instructions on a Cortex-M4."""
    k = geo.channels // group * geo.taps
    budget = node.attrs.get(SCRATCH_BUDGET)
    if budget is not None:
        return min(geo.pixels, max(16, budget // (4 * k) // 4 * 4))
    return min(geo.pixels, max(256, IM2COL_BLOCK_BYTES // (4 * k) // 64 * 64))


def _conv_scratch(node: Node) -> int:
    """The NCHW copies of a channels-last side (nchw_copies), then the kernel's own: a depthwise kernel's planes,
    im2col's columns, and for a channels-last output its blocks of product (ember_conv_nhwc_f32)."""
    geo, group, m, depthwise, direct = _conv_parts(node)
    lay, copies = conv_lay(node), sum(nchw_copies(node))
    if depthwise:
        return (copies + max(_dw_padded_floats(geo), _dw_blocked_floats(node, geo, m))) * 4
    direct = direct and not lay & 1
    qb = _im2col_block(node, geo, group)
    col = 0 if direct else geo.channels // group * geo.taps * qb
    return (copies + col + (m // group * qb if lay & 2 and not node.attrs.get(WEIGHTS_KM) else 0)) * 4


# kernels/pointwise.c's blocks hold 128 KiB of output, at least 64 columns: past 256 output channels they
# grow beyond L2's share, and on Zen 3 the matmul's own strip-wise activation measured faster there
# (MobileNetV3's 14x14 expand layers, 480-672 channels: 0.20 -> 0.24 ms, 0.37 -> 0.46 ms).
POINTWISE_MAX_ROWS = 256


def blocked_pointwise(node: Node, m: int) -> bool:
    """Whether a 1x1 (or im2col) conv of `m` output channels runs as kernels/pointwise.c: its activation is one
    the matmul tile cannot apply in registers (Swish, HardSwish, Sigmoid ...; not none, Relu, Clip), over few
    channels."""
    e = epilogue_of(node)
    return e is not None and e.clamp is None and m <= POINTWISE_MAX_ROWS


# A Conv's (or its algorithm variant's) optional input 3: a residual shaped as its output, added before the
# fused activation (passes/fuse_residual.py).
RESIDUAL = 3
_NO_ACT = (0, "0.0f", "0.0f")


# The matmul tiles add a residual in registers only on maps of at most this many pixels (the 7x7 stages, whose
# products pack B whole per K block). On bigger maps a strip's residual is M lines a row apart, one stream per
# output channel: on Zen 3 the tiles waited on them, and ResNet-50's 1x1 convs at 56x56 to 14x14 measured 5-15%
# slower fused than conv + a pass over the output, which they run instead.
# With the tiles prefetching the residual's lines before their K loop (tried on Zen 3, left out), fusing it on every
# map measured 1.00x and 1.03x the time of whole ResNet-50 runs (paired, two runs): not worth it either.
RESIDUAL_TILE_MAX_PIXELS = 64


def residual_in_tiles(pixels: int) -> bool:
    return pixels <= RESIDUAL_TILE_MAX_PIXELS


def residual_arg(node: Node, k: KernelEmitter) -> str:
    """The C pointer of the node's fused residual, "0" for none."""
    return k.inp(RESIDUAL) if node.input(RESIDUAL) is not None else "0"


# Set by passes/conv_algorithms.py on a Conv that ember_conv_f32 runs, a ConvShifted, or a ConvWinograd(4) (each of
# its transformed weight matrices U[e]): its weights are in the matmul's row panels (kernels/matmul.c
# ember_matmul_core_ap `apack`), the same floats in another order.
ROW_PANELS = "_row_panels"


def row_panels_fit(node: Node) -> bool:
    """Whether `node` (a plain Conv) runs as ember_conv_f32 on its whole weights, one group (the kernel that reads
    row panels), rather than a matrix-vector product, kernels/pointwise.c or a depthwise kernel."""
    geo, group, m, depthwise, direct = _conv_parts(node)
    return (group == 1 and not depthwise and not (direct and geo.pixels == 1 and present(node.input(0)).shape[0] == 1)
            and not blocked_pointwise(node, m))


# The float convolutions that take either side channels-last (passes/nhwc_views.py): a Conv's im2col gathers its
# columns at a pixel stride (a 1x1's too, which then runs im2col) or reads the NCHW copy of nchw_sides, and
# ember_conv_nhwc_f32 stores its blocks of product transposed (a depthwise one runs between NCHW copies); ConvShifted
# builds its planes and stores its row blocks at the strides, ConvNarrow gathers its columns (or reads a 1x1's pixels
# as its product's rows) and its pixel-major product is the NHWC output, and the Winograd kernels run between NCHW
# copies.
NHWC_FLOAT_CONVS = ("Conv", "ConvShifted", "ConvWinograd", "ConvWinograd4", "ConvNarrow")


def float_conv_reads_nhwc(node: Node) -> bool:
    """Whether `node` is a float32 2-D convolution whose kernel can read its data input stored channels-last."""
    x, w, y = node.input(0), node.input(1), node.outputs[0]
    return (node.op in NHWC_FLOAT_CONVS and x is not None and w is not None and y is not None and x.type.rank == 4
            and (w.type.rank == 4 or node.op != "Conv") and x.dtype is DType.FLOAT32 and y.dtype is DType.FLOAT32)


def float_conv_stores_nhwc(node: Node) -> bool:
    """Whether `node` is such a convolution that can store its output channels-last (no residual to add)."""
    return float_conv_reads_nhwc(node) and node.input(RESIDUAL) is None


def conv_lay(node: Node) -> int:
    """The float kernels' `lay`: bit 0 the data input stored channels-last (an NhwcView), bit 1 the output."""
    return int(stored_nhwc(node.input(0))) | 2 * int(writes_nhwc(node))


def im2col_pixel_stride(node: Node) -> int:
    """ember_im2col_f32's `ps`: the channel count where the input is stored channels-last, else 1."""
    x = present(node.input(0))
    return x.shape[1] if stored_nhwc(x) else 1


def lower_conv_nhwc(node: Node, k: KernelEmitter, lo: int, hi: int) -> None:
    """Output pixels [lo, hi) of each image of a Conv whose output is stored channels-last (ember_conv_nhwc_f32; a
    thread's part, or all of them), or on a microcontroller its products transposed into it (ember_conv_hwc_f32 on
    WEIGHTS_KM; never divided)."""
    geo, group, m, _, direct = _conv_parts(node)
    x, ps, _, scratch = nchw_sides(node, k)
    bias = k.inp(2) if node.input(2) is not None else "0"
    if node.attrs.get(WEIGHTS_KM):
        assert (lo, hi) == (0, geo.pixels), f"{node.name}: ember_conv_hwc_f32 runs whole"
        k.call("ember_conv_hwc_f32", k.out(0), x, k.inp(1), bias, scratch, k.table(geo.table(), DType.INT32),
               present(node.input(0)).shape[0], group, m, int(direct and not stored_nhwc(node.input(0))),
               _im2col_block(node, geo, group), *epilogue_args(node), ps)
        return
    k.call("ember_conv_nhwc_f32", k.out(0), x, k.inp(1), bias, scratch, k.table(geo.table(), DType.INT32),
           present(node.input(0)).shape[0], group, m, int(direct and not stored_nhwc(node.input(0))),
           _im2col_block(node, geo, group), *epilogue_args(node), int(bool(node.attrs.get(ROW_PANELS))), ps, lo, hi)


def _lower_dw_nhwc(node: Node, k: KernelEmitter) -> None:
    """A depthwise convolution with a channels-last side: the NCHW kernel (dwconv3.c's fast paths and the
    channel-blocked grid included) between the NCHW copies of nchw_sides, or on a microcontroller its planes at the
    pixel stride (`dw_strided`)."""
    geo, _, m, _, _ = _conv_parts(node)
    bias = k.inp(2) if node.input(2) is not None else "0"
    if dw_strided(node):
        k.call("ember_dwconv_strided_f32", k.out(0), k.inp(0), k.inp(1), bias, k.scratch("float"),
               k.table(geo.table(), DType.INT32), present(node.input(0)).shape[0], m, conv_lay(node),
               *epilogue_args(node))
        return
    x, _, y, scratch = nchw_sides(node, k)
    fn = "ember_dwconv_blocked_f32" if _dw_blocked_floats(node, geo, m) else "ember_dwconv_f32"
    k.call(fn, y, x, k.inp(1), bias, scratch, k.table(geo.table(), DType.INT32), present(node.input(0)).shape[0], m,
           *epilogue_args(node))
    store_nchw_output(node, k, y)


def _lower_conv(node: Node, k: KernelEmitter) -> None:
    geo, group, m, depthwise, direct = _conv_parts(node)
    n = present(node.input(0)).shape[0]
    bias = k.inp(2) if node.input(2) is not None else "0"
    res = node.input(RESIDUAL) is not None
    apack = int(bool(node.attrs.get(ROW_PANELS)))
    lay = conv_lay(node)
    if lay and depthwise:
        _lower_dw_nhwc(node, k)
        return
    assert lay & 2 or not node.attrs.get(WEIGHTS_KM), f"{node.name}: K x M weights, but an NCHW output"
    if lay & 2:
        lower_conv_nhwc(node, k, 0, geo.pixels)
        return
    x, ps, _, scratch = nchw_sides(node, k)
    direct = direct and not lay  # a channels-last input is gathered by im2col, a 1x1's too
    if direct and geo.pixels == 1 and group == 1 and n == 1:
        # One pixel (Squeeze-Excitation's FCs): a matrix-vector product, weight rows streamed once.
        k.call("ember_gemv_rows_f32", k.out(0), k.inp(1), k.inp(0), bias, m, geo.channels,
               *(_NO_ACT if res else epilogue_args(node)))
    elif direct and group == 1 and n == 1 and blocked_pointwise(node, m):
        # Swish/HardSwish/...: the product in L2-sized column blocks, the activation in long row loops.
        s = geo.pixels
        k.call("ember_pointwise_act_f32", k.out(0), s, k.inp(0), s, k.inp(1), bias, m, geo.channels, s,
               *(_NO_ACT if res else epilogue_args(node)))
    elif depthwise:
        fn = "ember_dwconv_blocked_f32" if _dw_blocked_floats(node, geo, m) else "ember_dwconv_f32"
        k.call(fn, k.out(0), x, k.inp(1), bias, scratch, k.table(geo.table(), DType.INT32), n, m,
               *(_NO_ACT if res else epilogue_args(node)))
    elif not direct and group == 1 and n == 1 and blocked_pointwise(node, m):
        # A stem's im2col conv + Swish/HardSwish: the same, im2col block by block.
        k.call("ember_conv_act_f32", k.out(0), x, k.inp(1), bias, scratch, k.table(geo.table(), DType.INT32), m,
               _im2col_block(node, geo, group), *(_NO_ACT if res else epilogue_args(node)), ps)
    elif not res or residual_in_tiles(geo.pixels):
        # The matmul tiles add the residual in registers, before the activation.
        k.call("ember_conv_f32", k.out(0), x, k.inp(1), bias, residual_arg(node, k), scratch,
               k.table(geo.table(), DType.INT32), n, group, m, int(direct), _im2col_block(node, geo, group),
               *epilogue_args(node), apack, ps)
        return
    else:
        k.call("ember_conv_f32", k.out(0), x, k.inp(1), bias, "0", scratch, k.table(geo.table(), DType.INT32),
               n, group, m, int(direct), _im2col_block(node, geo, group), *_NO_ACT, apack, ps)
    if res:  # the kernels above add no residual: a pass over the output, then the activation
        k.call("ember_residual_act_f32", k.out(0), k.inp(RESIDUAL), present(node.outputs[0]).type.numel,
               *epilogue_args(node))


def conv_infer(channels):
    """Conv's output type: [N, M, spatial...], M given by `channels(node)` (the weights' layout differs per
    algorithm), the spatial dims from `kernel_shape` (else the weights' trailing dims)."""

    def infer(node: Node) -> list[TensorType | None]:
        x, w = inp(node, 0), inp(node, 1)
        if x.type.rank < 3:
            raise ShapeError(f"node '{node.name}' ({node.op}): input {list(x.shape)} has no spatial dims")
        kernel = list(node.attrs.get("kernel_shape", w.shape[2:]))
        if node.op == "Conv" and x.shape[1] != w.shape[1] * node.attrs.get("group", 1):
            raise ShapeError(f"node '{node.name}' (Conv): {x.shape[1]} input channels do not match weights "
                             f"{list(w.shape)} in {node.attrs.get('group', 1)} group(s)")
        return [typed(x.dtype, [x.shape[0], channels(node), *conv_out(node, x.shape[2:], kernel)])]

    return infer


# Inputs: (X [N, C, spatial...], W [M, C/group, kernel...], B (optional, [M])).
# Attributes: auto_pad, dilations, group, kernel_shape, pads, strides.
# Not in place, even depthwise at stride 1 where the shapes agree: dwconv3.c's big-plane path reads the middle
# rows straight from X while it writes Y's rows, and the row kernel (dwconv.c) writes a row before it reads the
# input rows below it.
register(float16_via_f32(OpDef(
    "Conv", lower=_lower_conv, normalize=_normalize, scratch=_conv_scratch,
    infer=conv_infer(lambda n: inp(n, 1).shape[0]),
    kernels=("ember_conv_f32", "ember_conv_nhwc_f32", "ember_conv_hwc_f32", "ember_dwconv_f32",
             "ember_dwconv_blocked_f32", "ember_dwconv_strided_f32", "ember_gemv_rows_f32", "ember_pointwise_act_f32",
             "ember_conv_act_f32", "ember_residual_act_f32", "ember_transpose2d_f32"),
    takes_epilogue=True, weights=WeightLayout(lambda n, w: 0, per_channel_default=True), flops=_conv_flops,
    int8=Int8.LINEAR,
)))


# ConvWinograd and ConvNarrow (internal: Convs rewritten by ember/passes/conv_algorithms.py) --------

def _chosen_geometry(node: Node) -> ConvGeometry:
    """conv_geometry of a rewritten Conv: its kernel size is the `kernel_shape` the pass recorded."""
    x, y = present(node.input(0)), present(node.outputs[0])
    return conv_geometry(node, list(x.shape[2:]), list(node.attrs["kernel_shape"]), list(y.shape[2:]))


def winograd_parts(node: Node) -> tuple[ConvGeometry, int, int, int]:
    """(geometry, out channels M, output tile size: 2 or 4, tiles T)."""
    y = present(node.outputs[0])
    geo = _chosen_geometry(node)
    size = 4 if node.op == "ConvWinograd4" else 2
    tiles = -(-y.shape[2] // size) * -(-y.shape[3] // size)
    return geo, y.shape[1], size, tiles


def _winograd_scratch(node: Node) -> int:
    """The scratch the comments of kernels/winograd.c list, for F(2x2) or F(4x4)."""
    geo, m, size, tiles = winograd_parts(node)
    th, tw = -(-geo.out_size[1] // size), -(-geo.out_size[2] // size)
    positions = (size + 2) ** 2
    plane = (size * th + 2) * size * (tw + 1)
    copy = sum(nchw_copies(node))  # a channels-last side's NCHW copies, ahead
    if size == 2:  # + four output half-rows
        return (copy + plane + positions * ((geo.channels + m) * tiles + 32) + 4 * tw) * 4
    # + the gathered patches D and the output phase planes O
    return (copy + plane + 36 * tiles + positions * ((geo.channels + m) * tiles + 32) + 16 * tiles) * 4


def _lower_winograd(node: Node, k: KernelEmitter) -> None:
    geo, m, size, _ = winograd_parts(node)
    bias = k.inp(2) if node.input(2) is not None else "0"
    x, _, y, scratch = nchw_sides(node, k)
    k.call("ember_conv_winograd4_f32" if size == 4 else "ember_conv_winograd_f32", y, x, k.inp(1),
           bias, residual_arg(node, k), scratch, k.table(geo.table(), DType.INT32),
           present(node.input(0)).shape[0], m, *((0, 0) if size == 4 else ()), *epilogue_args(node),
           int(bool(node.attrs.get(ROW_PANELS))))
    store_nchw_output(node, k, y)


# Internal (passes/conv_algorithms.py): a Conv with its weights rearranged for the algorithm.
register(OpDef(
    "ConvWinograd", infer=conv_infer(lambda n: inp(n, 1).shape[1]),
    lower=_lower_winograd, scratch=_winograd_scratch, kernels=("ember_conv_winograd_f32",),
    takes_epilogue=True, flops=_rewritten_conv_flops,
))
# Internal (passes/conv_algorithms.py): a Conv with its weights rearranged for the algorithm.
register(OpDef(
    "ConvWinograd4", infer=conv_infer(lambda n: inp(n, 1).shape[1]),
    lower=_lower_winograd, scratch=_winograd_scratch, kernels=("ember_conv_winograd4_f32",),
    takes_epilogue=True, flops=_rewritten_conv_flops,
))


def _narrow_scratch(node: Node) -> int:
    """im2col's columns (none for a 1x1), then the pixel-major result (none where it is the channels-last output)."""
    geo, m = _chosen_geometry(node), present(node.outputs[0]).shape[1]
    col = 0 if geo.direct else geo.channels * geo.taps * geo.pixels
    return (col + (0 if writes_nhwc(node) else geo.pixels * m)) * 4


def _lower_narrow(node: Node, k: KernelEmitter) -> None:
    geo, y = _chosen_geometry(node), present(node.outputs[0])
    bias = k.inp(2) if node.input(2) is not None else "0"
    scratch = k.scratch("float") if k.has_scratch() else "0"  # none: a 1x1 into a channels-last output
    k.call("ember_conv_narrow_f32", k.out(0), k.inp(0), k.inp(1), bias, residual_arg(node, k), scratch,
           k.table(geo.table(), DType.INT32), y.shape[0], y.shape[1], present(node.input(1)).shape[2], int(geo.direct),
           *epilogue_args(node), conv_lay(node))


# Internal (passes/conv_algorithms.py): a Conv with its weights rearranged for the algorithm.
register(OpDef(
    "ConvNarrow", infer=conv_infer(lambda n: inp(n, 1).shape[0] * inp(n, 1).shape[2]),
    lower=_lower_narrow, scratch=_narrow_scratch, kernels=("ember_conv_narrow_f32",),
    takes_epilogue=True, flops=_rewritten_conv_flops,
))


# ConvShifted's output row blocks: about this many bytes of matmul output at a time (an L2 share).
SHIFTED_BLOCK_BYTES = 512 * 1024


def _shifted_parts(node: Node) -> tuple[ConvGeometry, int, int, int, int]:
    """(geometry, ember_conv_shifted_f32's `planes` (0: none, 1: from NCHW, 2: from a channels-last input), plane rows
    Hh, plane pitch Wh, output rows per block)."""
    geo = _chosen_geometry(node)
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = geo.out_size[1:], geo.kernel[1:], geo.strides[1:], geo.dilations[1:]
    hh, wh = oh + (kh - 1) * dh // sh, ow + (kw - 1) * dw // sw
    # Stride 1 and unpadded (explicitly or by auto_pad): the windows read exactly the input plane, unless it is
    # stored channels-last (an NhwcView: the planes are where its channels come apart).
    planes = 2 if stored_nhwc(node.input(0)) else int(
        (sh, sw) != (1, 1) or geo.pads_begin[1:] != (0, 0) or (hh, wh) != geo.in_size[1:])
    m = present(node.outputs[0]).shape[1]
    rows = max(1, min(oh, SHIFTED_BLOCK_BYTES // (4 * m * wh)))
    return geo, planes, hh, wh, rows


def _shifted_scratch(node: Node) -> int:
    geo, planes, hh, wh, rows = _shifted_parts(node)
    m = present(node.outputs[0]).shape[1]
    sh, sw = geo.strides[1:]
    return ((geo.channels * sh * sw * hh * wh if planes else 0) + m * ((rows - 1) * wh + geo.out_size[2])) * 4


def _lower_shifted(node: Node, k: KernelEmitter) -> None:
    geo, planes, hh, wh, rows = _shifted_parts(node)
    y = present(node.outputs[0])
    c, (kh, kw), (sh, sw), (dh, dw) = geo.channels, geo.kernel[1:], geo.strides[1:], geo.dilations[1:]
    b_row = [((ci * sh + i * dh % sh) * sw + j * dw % sw) * hh * wh + i * dh // sh * wh + j * dw // sw
             for ci in range(c) for i in range(kh) for j in range(kw)]
    bias = k.inp(2) if node.input(2) is not None else "0"
    k.call("ember_conv_shifted_f32", k.out(0), k.inp(0), k.inp(1), bias, residual_arg(node, k), k.scratch("float"),
           k.table(geo.table(), DType.INT32), k.table(b_row, DType.INT32), y.shape[0], y.shape[1], planes, rows,
           *epilogue_args(node), int(bool(node.attrs.get(ROW_PANELS))), int(writes_nhwc(node)))


# Internal (passes/conv_algorithms.py): a Conv with its weights rearranged for the algorithm.
register(OpDef(
    "ConvShifted", infer=conv_infer(lambda n: inp(n, 1).shape[0]),
    lower=_lower_shifted, scratch=_shifted_scratch, kernels=("ember_conv_shifted_f32",),
    takes_epilogue=True, flops=_rewritten_conv_flops,
))


# ConvTranspose ---------------------------------------------------------------------------------

def _convt_parts(node: Node) -> tuple[ConvGeometry, int, int]:
    x, w, y = present(node.input(0)), present(node.input(1)), present(node.outputs[0])
    xs, ys = nchw_shape(node, x.shape), nchw_shape(node, y.shape)
    geo = conv_geometry(node, list(xs[2:]), list(w.shape[2:]), list(ys[2:]), transpose=True)
    group = node.attrs.get("group", 1)
    return geo, group, ys[1]


def _convt_scratch(node: Node) -> int:
    geo, group, m = _convt_parts(node)
    return m // group * geo.taps * math.prod(geo.in_size) * 4


def _lower_convt(node: Node, k: KernelEmitter) -> None:
    geo, group, m = _convt_parts(node)
    n = present(node.input(0)).shape[0]
    bias = k.inp(2) if node.input(2) is not None else "0"
    k.call("ember_convtranspose_f32", k.out(0), k.inp(0), k.inp(1), bias, k.scratch("float"),
           k.table(geo.table(), DType.INT32), n, group, m, int(channels_last(node)), *epilogue_args(node))


def _infer_convt(node: Node) -> list[TensorType | None]:
    x, w = inp(node, 0), inp(node, 1)
    y = _infer_convt_nchw(node, nchw_shape(node, x.shape), w.shape)
    shape = [y[0], *y[2:], y[1]] if channels_last(node) else y
    return [typed(x.dtype, shape)]


def _infer_convt_nchw(node: Node, xs: tuple[int, ...], ws: tuple[int, ...]) -> list[int]:
    r = len(xs) - 2
    kernel = list(node.attrs.get("kernel_shape", ws[2:]))
    strides = list(node.attrs.get("strides", [1] * r))
    dil = list(node.attrs.get("dilations", [1] * r))
    opad = list(node.attrs.get("output_padding", [0] * r))
    m = ws[1] * node.attrs.get("group", 1)
    if "output_shape" in node.attrs:
        spatial = list(node.attrs["output_shape"])[-r:]
    elif node.attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        spatial = [i * s for i, s in zip(xs[2:], strides, strict=True)]
    else:
        pads = [0] * (2 * r) if node.attrs.get("auto_pad") == "VALID" else list(node.attrs.get("pads", [0] * 2 * r))
        spatial = [s * (i - 1) + op + (k - 1) * d + 1 - pads[j] - pads[r + j]
                   for j, (s, i, op, k, d) in enumerate(zip(strides, xs[2:], opad, kernel, dil, strict=True))]
    return [xs[0], m, *spatial]


# Inputs: (X, W [C, M/group, kernel...], B (optional)). Attributes as Conv, and output_padding, output_shape.
register(float16_via_f32(OpDef(
    "ConvTranspose", lower=_lower_convt, infer=_infer_convt, normalize=_normalize, scratch=_convt_scratch,
    kernels=("ember_convtranspose_f32",),
    # W is (C, M/group, k...): output channels along axis 1 (within each group).
    takes_epilogue=True, weights=WeightLayout(lambda n, w: 1), flops=_conv_flops,
)))
