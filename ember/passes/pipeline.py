"""The one place that decides which passes run, in which order, for a compile's options and target.

Each entry is (name, pass, why). `build_pipeline` is used by every lowering (a bundle, a profiling
build, the tests), so a pass added here runs everywhere it should and nowhere else.
"""

from __future__ import annotations

import platform
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING

from ember.errors import OptionError
from ember.passes.choice_file import read_choices
from ember.passes.conv_algorithms import choose_conv_algorithms
from ember.passes.dce import remove_dead_nodes
from ember.passes.fold_batchnorm import fold_batchnorm
from ember.passes.fold_constants import fold_constants
from ember.passes.fold_qdq import fold_qdq
from ember.passes.fold_qdq16 import fold_qdq16
from ember.passes.fuse_activation import fuse_activation
from ember.passes.fuse_attention import fuse_attention
from ember.passes.fuse_conv_add import fuse_conv_add
from ember.passes.fuse_elementwise import fuse_elementwise
from ember.passes.fuse_irblock import fuse_irblocks
from ember.passes.fuse_norm import fuse_decomposed_norms, fuse_skip_norm
from ember.passes.fuse_residual import fuse_residual
from ember.passes.int4_matmul import pack_int4_matmuls
from ember.passes.int8_layout import choose_int8_layout, dw_words_at_compile_time
from ember.passes.manager import PassFn, each_graph
from ember.passes.mcu_kernels import choose_mcu_kernels
from ember.passes.nhwc_region import nhwc_regions
from ember.passes.nhwc_views import nhwc_input_views, nhwc_output_views
from ember.passes.schedule import schedule_for_memory
from ember.passes.scratch_budget import budget_scratch
from ember.passes.simplify import materialize_outputs, remove_identities
from ember.passes.threads import split_for_threads
from ember.passes.transposes import fold_flatten_transposes, optimize_transposes
from ember.passes.widen_dtypes import widen_storage_types
from ember.toolchain.cpus import DEFAULT_FAMILY, resolve_cpu

if TYPE_CHECKING:
    from ember.config import CompileOptions


class Purpose(Enum):
    # A bundle to ship: every optimization the target can afford.
    BUNDLE = "bundle"
    # An instrumented float build for `ember profile`: every tensor the quantizer may want keeps its
    # name and its own buffer (no elementwise fusion, no algorithm rewrites).
    PROFILE = "profile"
    # The float graph as the quantizer sees it (tests of the quantizer use it).
    FLOAT = "float"


# Targets with memory to spare: Winograd trades 16/9 the weight bytes for speed, blocked int8 tensors pad.
SPEED_TARGET_KINDS = ("host", "linux")

Pipeline = list[tuple[str, PassFn]]

_FLOAT: list[tuple[str, PassFn, str]] = [
    # each_graph: also inside control flow (If branches, Loop bodies), after the control-flow nodes are
    # simplified (an If whose condition became constant is inlined). Passes without it leave subgraphs as
    # they are (fusions: a subgraph's nodes run as the frontend made them).
    ("widen_storage_types", each_graph(widen_storage_types),
     "bfloat16/float8/float4/int4/int2 have C only for Cast, (De)QuantizeLinear and byte moves; every other op "
     "computes in float32 (int8) between Casts, as ONNX's reference does. First, so later passes see no others."),
    ("remove_identities", each_graph(remove_identities),
     "Identity/Dropout are no-ops at inference; removing them lets producers write consumers' inputs."),
    ("fold_constants", each_graph(fold_constants),
     "Anything computable from weights alone is computed once, here, instead of on every inference."),
    ("fuse_decomposed_norms", fuse_decomposed_norms,
     "Exporters before opset 17/20 write LayerNorm and Gelu out elementwise; as operators again, LayerNorm is "
     "two passes over each row instead of nine over the tensor, and both int8-quantize as units."),
    ("pack_int4_matmuls", each_graph(pack_int4_matmuls),
     "MatMul of a DequantizeLinear(int4/uint4 constant) keeps the 4-bit weight packed (MatMulInt4); before "
     "fold_qdq, which would store it as float32 (8x the bytes), and before fusions that expect a MatMul."),
    ("optimize_transposes", optimize_transposes,
     "Channels-last models wrap each NCHW op in Transposes; pushed together they cancel, so layout costs no "
     "copies between layers (and a Conv's BN and activation are adjacent again to fold)."),
    ("fold_batchnorm", fold_batchnorm,
     "Inference BatchNorm (and per-channel constant Mul/Add) after a weighted op rescales its weights "
     "and bias; runs before fuse_activation, since a fused activation blocks the fold."),
    ("fuse_activation", fuse_activation,
     "An activation on a weighted op's output is applied in the kernel epilogue: one pass, one buffer fewer."),
]


def build_pipeline(options: CompileOptions, purpose: Purpose = Purpose.BUNDLE, target_kind: str = "host",
                   model_sha: str = "", int8_isa: str = "") -> Pipeline:
    """The passes of one lowering, in order.

    float passes -> [quantize: QDQ rewrite] -> fold_qdq -> dead nodes -> [weight compression]
    -> elementwise fusion -> outputs -> [conv algorithms, int8 layout: host/Linux at -O2 and up]
    -> operator order for memory.
    """
    passes: Pipeline = [(name, fn) for name, fn, _ in _FLOAT]
    # First, so that a bad --cpu or --cpu-param fails before any work.
    cpu = resolve_cpu(options.target, options.cpu, options.cpu_params)
    if purpose is Purpose.FLOAT:
        return passes
    if purpose is Purpose.PROFILE:
        # Outputs still need their own slots; everything else stays as the quantizer will see it.
        return [*passes, ("materialize_outputs", each_graph(materialize_outputs))]
    if options.quantize:
        passes.append(("quantize", _quantize_pass(options, model_sha)))
    # TFLite 16x8 models: their int16 QDQ patterns become TFLite's int16 kernels; before fold_qdq, which
    # turns the weights' DequantizeLinear nodes that no kernel took into float constants.
    # x86-64 targets: the convolutions' AVX2 kernel (its padded copy and weight pairs are memory others need not hold).
    host_x86 = options.target == "host" and platform.machine().lower() in ("x86_64", "amd64")
    simd16 = options.target == "x86_64" or host_x86
    passes.append(("fold_qdq16", lambda g: fold_qdq16(g, simd=simd16)))
    # QDQ models: DequantizeLinear -> Conv/Gemm/Add/... -> QuantizeLinear become integer kernels on int8 tensors.
    passes.append(("fold_qdq", fold_qdq))
    # Nodes whose results nobody reads cost time and memory.
    passes.append(("remove_dead_nodes", each_graph(remove_dead_nodes)))
    # A Transpose whose only reader is a flatten into a matmul with constant weights (TFLite's NHWC flatten into
    # FULLY_CONNECTED) becomes an order of the weights; once the dead DequantizeLinears no longer read the flatten.
    passes.append(("fold_flatten_transposes", each_graph(fold_flatten_transposes)))
    if options.weights:
        # After fold_qdq, which would turn the widening DequantizeLinear nodes back into float constants.
        passes.append(("compress_weights", _compress_pass(options.weights)))
    # Attention written out as MatMul -> Softmax -> MatMul (torch's export of ViT) becomes one Attention node,
    # whose kernel keeps the scores in cache; before elementwise fusion takes its scaling Muls into loops.
    passes.append(("fuse_attention", fuse_attention))
    # A residual Add (+ bias) feeding a LayerNorm is summed row by row inside it; before elementwise fusion
    # takes the Adds. After quantization: the quantizer sees the sum as a tensor of its own.
    passes.append(("fuse_skip_norm", fuse_skip_norm))
    min_pixels = (cpu.family if cpu is not None else DEFAULT_FAMILY).irblock_min_pixels
    if target_kind in SPEED_TARGET_KINDS and options.opt_level >= 2 and min_pixels is not None:
        # Inverted-residual blocks (expand 1x1 -> depthwise -> project 1x1 [+ residual Add]) computed band by
        # band, so the expanded tensor stays in cache, where the CPU family says it pays (toolchain/cpus.py);
        # before elementwise fusion takes the residual Adds.
        passes.append(("fuse_irblocks", lambda g: fuse_irblocks(g, min_pixels)))
    # A residual Add (+ Relu) after a float Conv is added in the conv's epilogue: one pass over the output fewer.
    # Before elementwise fusion, which would take Add + Relu into a loop of their own.
    passes.append(("fuse_residual", fuse_residual))
    # Chains of elementwise ops become one loop: intermediates stay in registers instead of memory.
    passes.append(("fuse_elementwise", fuse_elementwise))
    # Every output needs its own slot in the mutable region, written by some node.
    passes.append(("materialize_outputs", each_graph(materialize_outputs)))
    if target_kind in SPEED_TARGET_KINDS and options.opt_level >= 2:
        # Thresholds of the CPU family that --cpu names (toolchain/cpus.py).
        family = cpu.family if cpu is not None else DEFAULT_FAMILY
        # Channels-last 1x1 convs divide along pixels, so any panel width divides among threads
        wide_panel = family.narrow_panel
        if options.threads > 1:
            # ConvNarrow and MatMulPanels divide in whole weight panels (ops/split.py): 64-channel ones leave a
            # 64-channel layer whole
            family = replace(family, narrow_panel=0)
        # --tune / --tune-file: the measured choices of a choice file win over the thresholds.
        tuned = read_choices(options) if options.tune or options.tune_file else None
        if family.nhwc_min_convs is not None:
            # Chains of depthwise/1x1 convs on channels-last activations; before the algorithm choice, which would
            # rewrite their Convs, and after residual and activation fusion, whose results they carry.
            panel = family.mm_panel if family.matmul_panels else 0
            passes.append(("nhwc_regions",
                           lambda g: nhwc_regions(g, family.nhwc_min_convs or 0, panel, family.nhwc_small_k,
                                                  family.nhwc_small_big_m, wide_panel if panel else 0,
                                                  family.nhwc_dense)))
        passes.append(("choose_conv_algorithms",
                       lambda g: choose_conv_algorithms(g, family, tuned, row_panels=options.threads == 1)))
        passes.append(("choose_int8_layout", choose_int8_layout))
        # An NHWC image's Transpose to NCHW, read only by convolutions that copy their input into planes or words
        # anyway, becomes a view they gather from; once the algorithms and the int8 layouts are chosen.
        passes.append(("nhwc_input_views", nhwc_input_views))
        # A Transpose to NHWC of a convolution's output that the convolution can store channels-last anyway becomes
        # a view of the channels-last bytes it stores.
        passes.append(("nhwc_output_views", nhwc_output_views))
        if family.simd == "avx512":
            passes.append(("dw_words_at_compile_time", each_graph(dw_words_at_compile_time)))
    if int8_isa:
        # Once the integer nodes and their weights are final; before scheduling, which reads the scratch
        # sizes of the kernels chosen here. `int8_isa`: the target's (Target.int8_isa).
        passes.append(("choose_mcu_kernels", each_graph(lambda g: choose_mcu_kernels(g, int8_isa))))
    if target_kind not in SPEED_TARGET_KINDS and options.opt_level >= 2:
        # Microcontrollers and WebAssembly: the same views of a channels-last model's edges, once the integer kernels
        # are chosen (the Cortex-M ones, qarm*.c, take NHWC in their own kernels, ops/qarm.py reads_nhwc, and their
        # weights in their NHWC columns' order); on a microcontroller only where no NCHW copy in scratch takes the
        # Transpose's place (RAM the plan holds).
        mcu = target_kind == "mcu"
        passes.append(("nhwc_input_views", lambda g: nhwc_input_views(g, no_copies=mcu)))
        passes.append(("nhwc_output_views", lambda g: nhwc_output_views(g, no_copies=mcu)))
    if options.threads > 1:
        # After the algorithm choices: it divides the calls of the kernels they chose, by their final shapes;
        # before schedule_for_memory, since it gives each part scratch of its own.
        passes.append(("split_for_threads", lambda g: split_for_threads(g, options.threads)))
    if target_kind == "mcu":
        # A residual Add into the convolution before it, whose output then takes the shortcut's buffer: one
        # tensor fewer alive in a residual block. After the kernel choice (the fused kernels are its variants).
        passes.append(("fuse_conv_add", each_graph(fuse_conv_add)))
        # Scratch is RAM the plan holds there, with no cache to fill: blocked kernels take small blocks
        # (before scheduling, which reads the scratch sizes).
        passes.append(("budget_scratch", each_graph(budget_scratch)))
    # Last, once every node, its scratch and its in-place chances are final: which branch of a branchy graph
    # runs first decides how many tensors are alive at once (the activation region's size).
    passes.append(("schedule_for_memory", schedule_for_memory))
    return passes


def _quantize_pass(options: CompileOptions, model_sha: str) -> PassFn:
    from ember.quant.quantize import QuantConfig, quantize_graph, read_profile

    if not options.profile:
        raise OptionError("--quantize int8 needs --profile FILE (make one with `ember profile MODEL DATA...`)")
    profile = read_profile(options.profile, model_sha)
    config = QuantConfig(options.schema, options.precision, options.bias, options.per_channel,
                         options.calibration, options.percentile, frozenset(options.keep_float), options.io)
    return lambda g: quantize_graph(g, profile, config)


def _compress_pass(kind: str) -> PassFn:
    from ember.quant.weights import compress_weights

    return lambda g: compress_weights(g, kind)
