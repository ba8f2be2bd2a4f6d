"""CPU families and the kernel choices that suit each (issue 24), in one table.

On the x86-64 targets (host, x86_64) `--cpu NAME` names a CPU as GCC's -march does. NAME goes to the C
compiler unchanged (it decides the instruction set, so the kernels' SIMD paths), and the table below maps
it to a family, which holds every other per-CPU choice: the convolution algorithm thresholds
(passes/conv_algorithms.py) and the kernel parameters written as macros at the top of NAME.c. `native`
(the host's default) reads the flags and model name of /proc/cpuinfo. The choice is recorded in NAME.json.
`--cpu-param KEY=VALUE` replaces one of the family's values (tuning experiments on a CPU the table does not
measure yet, as benchmarks/bench_family.py runs them); the family's name then says so.

A bundle compiled for one CPU runs correctly on any CPU with its instruction set: the family changes only
speed. Other targets have no table: their --cpu goes to the compiler as before, with default choices.
"""

from __future__ import annotations

import functools
import platform
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ember.errors import OptionError

TABLE_TARGETS = ("host", "x86_64")


@dataclass(frozen=True)
class CpuFamily:
    name: str
    description: str
    simd: str  # widest float vectors: sse2 | avx2 | avx512
    fma_units: int  # FMA units at the full vector width (Zen 4 splits 512-bit ops in two 256-bit halves: 1)
    # Convolution algorithms (conv_algorithms.py says what each threshold decides).
    winograd_min_channels: int = 16
    winograd_min_pixels: int = 64
    winograd4_min_tiles: int = 49
    shifted_max_width: int = 32
    shifted_strided_min_k: int = 64
    narrow_max_pixels: int = 64
    narrow_min_channels: int = 64
    # Integer Winograd F(2x2, 3x3) (ops/qwino.py) for 3x3 stride-1 QConvs with at least this many input and
    # output channels and qwino_min_pixels output pixels; None: never.
    qwino_min_channels: int | None = None
    qwino_min_pixels: int = 16
    # Kernel parameters (C macros, kernels/matmul.c): the K block of the float matmul, sized so a packed
    # B strip plus a row tile of A stay in a 32 KiB L1 (6 x 16 tiles: 16 + 6 KiB; 12 x 32: 32 + 12 KiB
    # against the 48 KiB L1 of AVX-512 Xeons since Ice Lake; Skylake-SP's 32 KiB still measured best at 256).
    mm_kc: int = 256
    # MatMul with a constant B (transformers' projections) packs B in panels at compile time: on Zen 3 the
    # run-time packing of B strips (rows a page apart) cost 2-9% of each BERT-sized matmul.
    matmul_panels: bool = False
    # Software prefetch of the next block of compile-time panels (EMBER_MM_PREFETCH). On Zen 3 the hardware
    # prefetcher streams the panels alone, and the 32 KiB burst evicted the block being multiplied from L1:
    # without it, 8 x 256 x 768 took 0.85-0.89x the time and BERT-sized products 0.98x.
    mm_prefetch: bool = True
    # Columns per compile-time panel (EMBER_MM_PANEL; MatMulPanels, ConvNarrow). With AVX2's 16-column strips,
    # 16: a strip's block of B is then contiguous, where in 32-column panels its rows are 128 bytes apart and
    # fill every other L1 set, evicted by the rows of A (BERT's products 0.94-0.96x, 8 x 256 x 768 0.89x).
    mm_panel: int = 32
    # Software prefetch (to L2) of the next B strip's rows while one strip is packed (EMBER_MM_STRIP_PREFETCH):
    # B's rows are a row of pixels apart, one stream each, which Zen 3's prefetchers do not follow: 1x1 convs
    # at 56x56 and 28x28 (64 x 3136 x 256, 128 x 784 x 512) went from 58-60 to 84-86 GFLOP/s.
    mm_strip_prefetch: bool = False
    # Products of at most this many columns (a 7x7 map's 49 pixels) pack each K block of B whole, so the row
    # tiles of A (the weights) are read once, not once per 16-column strip (EMBER_MM_BLOCK_N; 0: never, and
    # at most 64: the packed block is EMBER_MM_KC x 64 floats of stack). Wider products run the same way, 64
    # columns at a time wherever A held 256 KiB or more (so A came from L3 once per 64 columns, not once per
    # 16-column strip), measured slower on Zen 3 (per-node least times, ResNet-50's layers alone): 1x1 convs at
    # 14x14 and 28x28 1.07-1.22x, ConvShifted's stride-2 3x3 1.0-1.5x: the 64 KiB block leaves L1, the strip does not.
    # Nor did chunks of 64-256 columns run K block by K block, each 16-column strip packed alone, so that a K block
    # of A (0.5-2.4 MiB in ResNet-50's 14x14 and strided layers) stays in L2 for the chunk's strips instead of coming
    # from L3 for each: 1.02-1.08x the time of those layers alone (paired medians, Zen 3).
    # Prefetching a tile's output lines (to write) on the first K block, and its residual's lines, before its K loop
    # measured mixed on Zen 3 (paired whole ResNet-50 runs on a loaded machine: 0.98x, 0.99x, then 1.025x and 1.04x):
    # left out.
    mm_block_n: int = 0
    # Plain convolutions (direct 1x1 and im2col, through kernels/matmul.c) on maps over EMBER_MM_BLOCK_N pixels whose
    # weight rows hold at least this many floats (K = C * taps) get their weights packed at compile time in row
    # panels (passes/conv_algorithms.py row_panels): K block by K block, each register tile's rows k-major, so a
    # tile's broadcasts read consecutive floats and a pass over a K block reads one stream, instead of six rows K
    # floats apart (4 or 8 KiB at K = 1024 or 2048: one L1 set). None: never. On Zen 3 (paired, a loaded machine),
    # ResNet-50's 1x1 convs at 14x14 with K = 1024 0.92x their time, most others 0.95-1.0x; one panel per tile over
    # all of K (tiles K x 6 floats apart) measured 1.0-1.08x, and the 7x7 maps' K-blocked path 1.09x (its column
    # after the last whole vector then goes through a scalar tile): left out. Winograd's transformed weights with at
    # least this many input channels too, every tile count (each U[e] is a product's A, read from memory inside a
    # model): ResNet-50's F(4x4) layers at 14x14 0.70-0.75x, at 28x28 0.81-0.83x, F(2x2) at 7x7 0.83-0.90x (per-node
    # least times inside the model, Zen 3, paired; conv_algorithms.py _pack_winograd_rows).
    row_panels_min_k: int | None = None
    # ConvNarrow's weight panels (passes/conv_algorithms.py narrow_panels): 64 columns for AVX-512's 7 x 4-vector
    # tiles (kernels/matmul.c ember_matmul_wide_f32); 0: the family's mm_panel and the general matmul's strips.
    narrow_panel: int = 0
    # Convolutions with weights in row panels run 4-vector strips (64 columns) in 6 x 4 tiles where their B has 64
    # columns left (EMBER_MM_QUAD_STRIPS; AVX-512 only): 6 broadcasts and 4 loads feed 24 FMAs, where the 12 x 2
    # tile loads 14 for 24. Per-node sums over ResNet-50 (instrumented builds, one core of the Sapphire Rapids class
    # Xeon): its 1x1 convs 1.32 -> 1.23x onnxruntime's time, ConvShifted 1.40 -> 1.25x, Winograd F(4x4) 0.87 -> 0.83x.
    # Whole runs there (bench_family.py, paired): without them ResNet-50 1.025x, ResNet-18 1.038x, where the family
    # against itself measured 0.975-0.990x. Tried with them and left out: B read in place (no packing) in K sub-blocks
    # that stay in L1 (ResNet-50's 1x1 convs 1.09x), packed sub-blocks of 128 rows (1.05-1.09x), the next strip's
    # rows prefetched by the tiles (1.00x).
    mm_quad_strips: bool = False
    # Software prefetch (to L2) of the next column strip's output lines and its residual's, row by row, on the last K
    # block (EMBER_MM_OUT_PREFETCH). On Zen 3 prefetching a tile's own lines before its K loop measured mixed (above).
    mm_out_prefetch: bool = False
    # Inverted-residual blocks (passes/fuse_irblock.py) are computed band by band from input planes of this many
    # pixels on; None: never. Off in every family for now: on Zen 3 (AVX2, 512 KiB L2, 32 MiB L3) the fused
    # stride-1 blocks of MobileNetV2/V3 and EfficientNet at 56x56 took 1.00-1.05x their layers' time (the
    # expanded tensors stay in L3 between the layers there), stride-2 ones 1.25-1.9x, those from 28x28 and
    # smaller planes 1.04-1.2x; nothing measured a gain to turn it on for.
    irblock_min_pixels: int | None = None
    # Connected chains of float depthwise / 1x1 convs run channels-last (passes/nhwc_region.py), with a reorder
    # where a value enters or leaves the chain, if they hold at least this many convs per pair of reorders;
    # None: never.
    nhwc_min_convs: int | None = None
    # 1x1 convs of a channels-last region with at most this many input channels and weights in panels take
    # kernels/nhwc.c's ember_pw_nhwc_small_f32 (pixel tiles over every panel, K constant) instead of the
    # general matmul; 0: never.
    nhwc_small_k: int = 0
    # On planes over nhwc_region.SMALL_K_MAX_PIXELS (56x56), the small-K kernel only for 1x1 convs of at most this
    # many output channels; 0: never there.
    nhwc_small_big_m: int = 0
    # Dense convs (any window and stride, one group) join those regions too (kernels/nhwc_dense.c): 3x3 stride-1
    # ones as channels-last Winograd F(4x4) (nhwc_region.dense_kind says on which maps and channels), the others as a
    # per-block im2col (each tap a contiguous run of channels) and the 1x1 product. A ResNet then runs channels-last
    # from its first block to its pool, and no product packs its activations at run time. Measured on the Sapphire
    # Rapids class Xeon (per-node least sums, paired against the same build without, one process): ResNet-50
    # (torchvision) 0.86x, the AVX2 build there (--cpu x86-64-v3) ResNet-50 0.90x and ResNet-18 0.85x; its Winograd
    # layers at 56x56 and 28x28 0.6x their NCHW F(4x4)'s time. The avx512-1fma family takes it on that evidence.
    nhwc_dense: bool = False
    # int8 products on AMX tiles (kernels/qamx.c) where the compiler targets AMX-INT8 (Sapphire Rapids and later Xeons)
    # and Linux grants the tile state: whole tiles of 16 output channels and 64 bytes of K. False keeps them on the
    # AVX-512 VNNI tiles (the same bytes out).
    qamx: bool = True
    # Whether the CPU has AMX-INT8 (from the CPU's name or its /proc/cpuinfo flags, not from the table): the Python side
    # of what the compiler's -march then enables, for choices that depend on it (conv_algorithms.qconv_amx_fits).
    amx_int8: bool = False

    def c_defines(self) -> dict[str, int]:
        """The macros NAME.c defines before its kernels (each kernel keeps its own default without one)."""
        return {"EMBER_MM_KC": self.mm_kc, "EMBER_MM_PREFETCH": int(self.mm_prefetch), "EMBER_MM_PANEL": self.mm_panel,
                "EMBER_MM_STRIP_PREFETCH": int(self.mm_strip_prefetch), "EMBER_MM_BLOCK_N": self.mm_block_n,
                "EMBER_MM_ROW_PANELS": int(self.row_panels_min_k is not None),
                "EMBER_MM_OUT_PREFETCH": int(self.mm_out_prefetch), "EMBER_MM_QUAD_STRIPS": int(self.mm_quad_strips),
                "EMBER_QAMX_ENABLE": int(self.qamx)}

    def record(self) -> dict[str, Any]:
        return asdict(self)


FAMILIES: dict[str, CpuFamily] = {f.name: f for f in (
    CpuFamily("x86-64", "SSE2 only (x86-64 baseline, x86-64-v2)", "sse2", 2),
    # No ConvNarrow: with 8 lanes, 49 pixels waste few of them, and on Zen 3 (512 KiB L2) the pixel-major
    # path measured 1.4-1.55x onnxruntime on the 1x1 convs of ResNet-50's and MobileNetV2's 7x7 stages
    # (im2col: 1.15-1.25x) and 2.7x on ResNet-50's 3x3 at 7x7 (ConvShifted: 1.35x).
    # Winograd down to 7x7 maps (F(2x2): 16 tiles, the matmuls' narrow path), F(4x4) from 14x14 (16 tiles):
    # on Zen 3, ResNet-50's 3x3 at 7x7 (512 ch) took 2.3 ms in F(2x2) against 3.7 ms in ConvShifted, and at
    # 14x14 (256 ch) 1.55 ms in F(4x4) against 1.8 ms in F(2x2) (each node's least time, `--tune` agrees).
    # ConvNarrow only on maps of at most 12 pixels, where one vector and a bit would hold them: MobileNetV2's
    # 1x1 convs at 3x3 (96x96 input) took 0.55-0.9x the time of the plain kernel (1280 ch: 70 against 102 us);
    # at 4x4 (two full vectors) the plain kernel won. ConvShifted also for strided convs of small K (3-channel
    # stems: 0.8-0.86x at 56x56 and smaller outputs, a tie at 112x112; the keyword spotter's 10x4 stem 0.5x).
    # Integer Winograd (QConvWinograd) from 32 channels down to 7x7 maps: on Zen 3 (benchmarks/bench_qwino.py, a
    # shared machine: ratios of paired medians over several runs), ResNet's 3x3 layers took 0.62-0.79x the time of
    # QConvShifted/QConv at 56x56 to 14x14 (64-256 ch), 0.9-0.92x at 7x7 (512 ch: 8 MiB of transformed weights),
    # 0.76-0.77x at 32 ch 56x56, 0.99-1.03x at 16 ch 112x112 (off there). Whole int8 models, interleaved with
    # Winograd off: ResNet-18 0.87x, ResNet-50 0.93x; leaving the 7x7 layers out was 1.01x / 1.05x slower.
    # Channels-last regions (5 convs per pair of reorders): on Zen 3, paired against the NCHW build of the same
    # model, MobileNetV2 0.84x, MobileNetV3-Large 0.91x, EfficientNet-B0 0.96x, the TFLite fixture mobilenet_like
    # 0.78x and Keras' MobileNetV2 (alpha 0.35, 96x96) 0.88x. The KWS CNN's chain of 4 convs (16 channels at 25x5)
    # took 1.27x with its 2 reorders; since its 10x4 stem and whole-plane pool join it, it has none: 0.81x.
    # Their 1x1 convs of at most 32 input channels (on planes up to 56x56: nhwc_region.SMALL_K_MAX_PIXELS) take
    # the small-K kernel: on Zen 3, paired per node (instrumented builds), MobileNetV2's expand convs at 56x56
    # (24 -> 144) and 28x28 (32 -> 192) 0.72-0.79x their general-matmul time, EfficientNet-B0's (with Swish)
    # 0.91-0.94x; the sum of all nodes 0.97x (MobileNetV2) and 0.985x (EfficientNet-B0); the TFLite fixture
    # mobilenet_like 0.88x whole (interleaved).
    # At 112x112 (nhwc_small_big_m) the small-K kernel takes the 1x1 convs of at most 64 output channels: on Zen 3
    # (instrumented builds, least times per node), MobileNetV3-Large's 16 -> 64 expand 0.46 -> 0.32 ms (onnxruntime
    # 0.34) and 16 -> 16 project 0.134 -> 0.089 ms, MobileNetV2's 32 -> 16 project 0.17 -> 0.14 ms; but its 16 -> 96
    # expand 0.68 -> 0.80 ms (as measured before: 1.19-1.25x), so not above 64 channels. Whole runs, paired
    # (bench_family.py, nhwc_small_big_m=0 against 64): MobileNetV3-Large 1.014x, EfficientNet-B0 1.025x,
    # MobileNetV2 within noise. Measured and left out (Zen 3): nhwc_small_k=40 (the 40 -> 240 expands) 1.020x.
    CpuFamily("avx2", "AVX2 + FMA, 256-bit, two FMA units (Haswell to Alder Lake, Zen 1-3; x86-64-v3)", "avx2", 2,
              winograd_min_pixels=49, winograd4_min_tiles=16, shifted_strided_min_k=16, narrow_max_pixels=12,
              qwino_min_channels=32, qwino_min_pixels=49,
              matmul_panels=True, mm_prefetch=False, mm_panel=16, mm_strip_prefetch=True, mm_block_n=64,
              nhwc_min_convs=5, nhwc_small_k=32, nhwc_small_big_m=64, row_panels_min_k=64, nhwc_dense=True),
    # Measured on a Sapphire Rapids class Xeon (AVX-512, VNNI, AMX, 2 MiB L2 a core; benchmarks/bench_family.py, each
    # variant paired round by round against the family as it was, one model per physical core of a 16-core machine):
    # - channels-last regions with the small-K kernel (nhwc_*): MobileNetV2 0.881x, EfficientNet-B0 0.895x,
    #   MobileNetV3-Large 0.906x, the ResNets and transformers 1.00x;
    # - row panels from K = 64: ResNet-50s 0.951x, ResNet-18 0.965x, MobileNetV2 0.981x;
    # - compile-time MatMul panels: BERT 0.984x, ViT-Tiny 0.988x;
    # - F(4x4) Winograd from 16 tiles (14x14 maps), as AVX2: there ResNet-18 0.949x, ResNet-50s 0.978-0.985x (with
    #   F(2x2) on 7x7 maps too), but on a 2-core VM of the same class 1.09x and 1.06x (paired, alone): left at 49.
    #   F(2x2) on the 7x7 maps (winograd_min_pixels=49) took 2.52-2.55 ms a 512-channel 3x3 layer of ResNet-50 there
    #   where ConvNarrow takes 2.24-2.36 (per-node least times): not taken. `--tune` measures these per machine;
    # - the output-line prefetch (mm_out_prefetch) after those: MobileNetV2 0.981x, EfficientNet-B0 0.985x, the
    #   ResNet-50s 0.986-0.988x, the others 0.996-1.004x.
    # Measured there and left out: strip prefetch, mm_block_n=64, mm_kc=384/512, no panel prefetch (1.013-1.019x),
    # shifted_strided_min_k=16 with narrow_max_pixels=12 (ResNets 1.02-1.07x), nhwc_small_k=48, nhwc_min_convs=3,
    # no small-K kernel at 112x112 (MobileNetV3 1.030x), irblock_min_pixels=784 (1.01-1.05x), row_panels_min_k=256;
    # row panels laid out for AVX-512's 12-row tiles instead of 6 (ResNet-50s 1.01x), and wide products packed
    # in chunks of 256 or 512 columns with row tiles over the chunk's strips (1.00-1.03x).
    # ConvNarrow in 64-channel panels for 7 x 4-vector tiles (narrow_panel=64), on the 2-core VM, one layer alone
    # against the 32-channel strips (paired): 7x7 maps' 128 -> 128 3x3 0.84x, 512 -> 2048 1x1 0.88x, 512 -> 512 3x3
    # (9 MiB of weights from memory) 0.93-1.01x. In whole models it is within the noise (bench_family.py, where the
    # family against itself measured 0.96-1.03x): the 32-channel strips again took ResNet-50 1.012x, ResNet-18
    # 0.984x, ResNet-50 (torchvision) 0.988x, MobileNetV2 1.002x, EfficientNet-B0 0.997x.
    CpuFamily("avx512", "AVX-512, two 512-bit FMA units (Xeon Skylake-SP to Granite Rapids, Zen 5; x86-64-v4)",
              "avx512", 2, matmul_panels=True, nhwc_min_convs=5,
              nhwc_small_k=32, nhwc_small_big_m=64, row_panels_min_k=64, mm_out_prefetch=True, narrow_panel=64,
              mm_quad_strips=True, nhwc_dense=True),
    # Not measured on such a CPU yet: the choices that gained both on Zen 3 (AVX2) and on the AVX-512 Xeon above.
    CpuFamily("avx512-1fma", "AVX-512 at half rate: one 512-bit FMA unit (Ice/Tiger Lake client) or 2 x 256 (Zen 4)",
              "avx512", 1, matmul_panels=True, nhwc_min_convs=5, nhwc_small_k=32, nhwc_small_big_m=64,
              row_panels_min_k=64, nhwc_dense=True),
)}

# Targets without a table (ARM, RISC-V, wasm, i386) and hosts that are not x86-64: the thresholds measured
# when ember was tuned (issue 4).
DEFAULT_FAMILY = CpuFamily("default", "no CPU table for this target", "any", 2)

# GCC's -march names -> family. Names outside the table are refused on the table's targets: a misspelt CPU
# would otherwise reach the compiler, or silently get another CPU's choices.
CPUS: dict[str, str] = {
    "x86-64": "x86-64", "x86-64-v2": "x86-64", "nehalem": "x86-64", "westmere": "x86-64", "sandybridge": "x86-64",
    "ivybridge": "x86-64", "btver2": "x86-64", "bdver4": "x86-64",
    # GCC's older aliases, as Glow users write them in -mcpu=.
    "core2": "x86-64", "corei7": "x86-64", "corei7-avx": "x86-64", "core-avx-i": "x86-64", "core-avx2": "avx2",
    "x86-64-v3": "avx2", "haswell": "avx2", "broadwell": "avx2", "skylake": "avx2", "alderlake": "avx2",
    "raptorlake": "avx2", "meteorlake": "avx2", "znver1": "avx2", "znver2": "avx2", "znver3": "avx2",
    "x86-64-v4": "avx512", "skylake-avx512": "avx512", "cascadelake": "avx512", "cooperlake": "avx512",
    "icelake-server": "avx512", "sapphirerapids": "avx512", "emeraldrapids": "avx512", "graniterapids": "avx512",
    "znver5": "avx512",
    "icelake-client": "avx512-1fma", "tigerlake": "avx512-1fma", "rocketlake": "avx512-1fma",
    "cannonlake": "avx512-1fma", "znver4": "avx512-1fma",
}


@dataclass(frozen=True)
class CpuChoice:
    name: str  # as given (or the target's default): what -march gets
    family: CpuFamily
    model: str | None = None  # native: the CPU's model name from /proc/cpuinfo

    def record(self) -> dict[str, Any]:
        """What NAME.json keeps (target_info.cpu_choice)."""
        return {"cpu": self.name, "model": self.model, "family": self.family.record()}


# The CPUs of the table with AMX-INT8 (CpuFamily.amx_int8).
AMX_CPUS = ("sapphirerapids", "emeraldrapids", "graniterapids")


def choices() -> list[str]:
    return ["native", *CPUS]


def resolve_cpu(target: str, cpu: str | None, params: tuple[str, ...] = ()) -> CpuChoice | None:
    """The family of `cpu` (None: the target's default) on `target`, with `params` (KEY=VALUE) replacing its
    values; None where the table does not apply (not an x86-64 target, or a host that is not x86-64)."""
    choice = _resolve(target, cpu)
    if not params:
        return choice
    if choice is None:
        raise OptionError(f"--cpu-param: target '{target}' has no CPU family to set values of (only "
                          + ", ".join(TABLE_TARGETS) + " on an x86-64 host)")
    return replace(choice, family=with_params(choice.family, params))


# The family's values --cpu-param may set: all but its identity and instruction set.
TUNABLE = tuple(f.name for f in fields(CpuFamily) if f.name not in ("name", "description", "simd", "amx_int8"))


_KERNEL_LIMITS: dict[str, Any] = {"mm_panel": (16, 32), "mm_block_n": (0, 64), "mm_kc": range(16, 1025),
                                  "fma_units": (1, 2), "narrow_panel": (0, 64)}


def with_params(family: CpuFamily, params: tuple[str, ...]) -> CpuFamily:
    """`family` with each KEY=VALUE of `params` set (VALUE an integer, true/false, or none where the field
    allows it), named after them so that NAME.json and --tune's choice file keep the variant apart."""
    values: dict[str, Any] = {}
    for param in params:
        key, eq, text = param.partition("=")
        key, text = key.strip(), text.strip().lower()
        if not eq or key not in TUNABLE:
            raise OptionError(f"--cpu-param '{param}': expected KEY=VALUE with KEY one of: " + ", ".join(TUNABLE))
        kind = str(next(f.type for f in fields(CpuFamily) if f.name == key))
        if text == "none" and "None" in kind:
            values[key] = None
        elif kind == "bool" and text in ("true", "false", "1", "0"):
            values[key] = text in ("true", "1")
        elif kind != "bool" and text.lstrip("-").isdigit():
            values[key] = int(text)
        else:
            wants = "true or false" if kind == "bool" else "an integer" + (" or none" if "None" in kind else "")
            raise OptionError(f"--cpu-param '{param}': {key} takes {wants}")
    for key, allowed in _KERNEL_LIMITS.items():  # what the kernels' fixed-size buffers and layouts take
        if key in values and values[key] not in allowed:
            raise OptionError(f"--cpu-param {key}={values[key]}: the kernels take {allowed.start}..{allowed.stop - 1}"
                              if isinstance(allowed, range) else f"--cpu-param {key}={values[key]}: one of {allowed}")
    for key in ("narrow_panel", "mm_quad_strips"):
        if values.get(key) and family.simd != "avx512":
            raise OptionError(f"--cpu-param {key}={str(values[key]).lower()}: only AVX-512 families have its tiles")
    label = ",".join(f"{k}={v}" for k, v in values.items())
    return replace(family, name=f"{family.name}+{label}", **values)


def _resolve(target: str, cpu: str | None) -> CpuChoice | None:
    if target not in TABLE_TARGETS:
        return None
    name = cpu if cpu is not None else ("native" if target == "host" else "x86-64")
    if name == "native":
        if target != "host":
            raise OptionError(f"--cpu native is for target host only; target '{target}' takes one of: "
                              + ", ".join(CPUS))
        return _native()
    if name not in CPUS:
        raise OptionError(f"--cpu '{name}' is not a CPU ember knows for target '{target}'; choose from: "
                          + ", ".join(choices()))
    family = FAMILIES[CPUS[name]]
    return CpuChoice(name, replace(family, amx_int8=True) if name in AMX_CPUS else family)


@functools.cache
def _native() -> CpuChoice | None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""  # not Linux: SSE2 choices, while -march=native still lets the compiler use what there is
    family, model = detect(text)
    return CpuChoice("native", family, model)


def detect(cpuinfo: str) -> tuple[CpuFamily, str | None]:
    """The family of the first CPU that /proc/cpuinfo text describes, and its model name."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    model = fields.get("model name")
    amx = {"amx_tile", "amx_int8"} <= flags
    if "avx512f" in flags:
        # Zen 4 (AMD family 25, 0x19) executes 512-bit operations as two 256-bit halves; Intel client cores
        # (Core, not Xeon) with AVX-512 have one 512-bit FMA unit.
        amd_zen4 = fields.get("vendor_id") == "AuthenticAMD" and fields.get("cpu family") == "25"
        intel_client = fields.get("vendor_id") == "GenuineIntel" and "Core" in (model or "")
        family = FAMILIES["avx512-1fma" if amd_zen4 or intel_client else "avx512"]
        return (replace(family, amx_int8=True) if amx else family), model
    if {"avx2", "fma"} <= flags:
        return FAMILIES["avx2"], model
    return FAMILIES["x86-64"], model
