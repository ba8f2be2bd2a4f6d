"""passes/nhwc_region.py: which Convs run channels-last, and where the reorders are left."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx.loader import LoadOptions, load_onnx
from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph
from ember.ops.conv import RESIDUAL
from ember.ops.nhwc import params
from ember.passes import nhwc_region
from ember.passes.fold_constants import fold_constants
from ember.passes.fuse_activation import fuse_activation
from ember.passes.nhwc_region import TO_NCHW, TO_NHWC, nhwc_regions

RNG = np.random.default_rng(5)


def _graph(blocks: int = 1, se: bool = False, stem: bool = False, mean: bool = False, cin: int = 8,
           stem_k: int = 3, nhwc: bool = False) -> Graph:
    """x (`cin` channels; 8 without a stem) -> [3x3 stem] -> blocks of (expand 1x1 + Relu -> depthwise 3x3 + Relu
    -> [SE Mul] -> project 1x1 + x). `nhwc`: x and the output are channels-last, Transposed to NCHW and back
    around the rest, as a TFLite model's are."""
    inits: list = []
    nodes = [helper.make_node("Transpose", ["x"], ["x_nchw"], perm=TO_NCHW)] if nhwc else []

    def conv(x: str, ci: int, co: int, kk: int = 1, group: int = 1) -> str:
        y = f"c{len(nodes)}"
        w = RNG.standard_normal((co, ci // group, kk, kk)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, y + "w"))
        nodes.append(helper.make_node("Conv", [x, y + "w"], [y], kernel_shape=[kk, kk], pads=[kk // 2] * 4,
                                      group=group))
        return y

    def relu(x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [x + "r"]))
        return x + "r"

    x = "x_nchw" if nhwc else "x"
    h = conv(x, cin, 8, stem_k) if stem else x
    for b in range(blocks):
        e = relu(conv(relu(conv(h, 8, 32)), 32, 32, 3, group=32))
        if se:
            nodes.append(helper.make_node("GlobalAveragePool", [e], [f"pool{b}"]))
            nodes.append(helper.make_node("Mul", [e, f"pool{b}"], [f"scaled{b}"]))
            e = f"scaled{b}"
        nodes.append(helper.make_node("Add", [h, conv(e, 32, 8)], [f"sum{b}"]))
        h = f"sum{b}"
    if mean:  # TFLite's MEAN over the plane, without keepdims
        nodes.append(helper.make_node("ReduceMean", [h], ["mean"], axes=[2, 3], keepdims=0))
        h = "mean"
    if nhwc:
        nodes.append(helper.make_node("Transpose", [h], ["y"], perm=TO_NHWC))
        h = "y"
    shape = [1, 14, 14, cin] if nhwc else [1, cin, 14, 14]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)], inits)
    g = load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")
    fold_constants(g)
    fuse_activation(g)
    return g


def _transposes(g: Graph) -> list[list[int]]:
    return [n.attrs["perm"] for n in g.nodes if n.op == "NhwcReorder"]


def test_chained_blocks_run_channels_last_with_one_reorder_each_way() -> None:
    g = _graph(blocks=2)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["NhwcReorder", *["ConvNHWC"] * 6, "NhwcReorder"]
    assert _transposes(g) == [TO_NHWC, TO_NCHW]
    convs = [n for n in g.nodes if n.op == "ConvNHWC"]
    assert [params(n).depthwise for n in convs] == [False, True, False] * 2
    # the residual Adds went into the projections, their shortcuts read channels-last
    assert all(n.input(RESIDUAL) is not None for n in convs[2::3]) and not any(n.op == "Add" for n in g.nodes)
    assert convs[2].input(RESIDUAL) is convs[0].input(0)
    # weights: depthwise [9, C] tap-major, 1x1 [C, M]
    assert convs[1].inputs[1].shape == (9, 32) and convs[0].inputs[1].shape == (8, 32)
    assert convs[-1].outputs[0].shape == (1, 14, 14, 8) and g.outputs[0].shape == (1, 8, 14, 14)


def test_a_region_below_the_size_rule_stays_nchw() -> None:
    g = _graph(blocks=1)
    nhwc_regions(g, min_convs=4)
    assert not any(n.op in ("ConvNHWC", "NhwcReorder", "Transpose") for n in g.nodes)


def test_a_dense_stem_stays_nchw_and_its_output_is_reordered_once() -> None:
    g = _graph(blocks=1, stem=True)
    nhwc_regions(g, min_convs=3)
    ops = [n.op for n in g.nodes]
    # the stem's output is read by the expand conv and as the residual: one Transpose for both
    assert ops == ["Conv", "NhwcReorder", *["ConvNHWC"] * 3, "NhwcReorder"]


def test_a_stem_of_three_channels_joins_the_region_without_a_reorder() -> None:
    """It reads the NCHW input as it is and writes NHWC: the region's only reorder is its way out."""
    g = _graph(blocks=1, stem=True, cin=3)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == [*["ConvNHWC"] * 4, "NhwcReorder"]
    stem = g.nodes[0]
    assert params(stem).stem and stem.inputs[0] is g.inputs[0] and stem.outputs[0].shape == (1, 14, 14, 8)
    assert stem.inputs[1].shape == (27, 8)  # [C*KH*KW, M]
    assert g.nodes[3].input(RESIDUAL) is stem.outputs[0] and not params(g.nodes[1]).stem


def test_a_stem_with_a_larger_window_stays_nchw() -> None:
    g = _graph(blocks=1, stem=True, cin=3, stem_k=5)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["Conv", "NhwcReorder", *["ConvNHWC"] * 3, "NhwcReorder"]


def test_squeeze_excitation_joins_the_region() -> None:
    """The SE pool and Mul read the depthwise output channels-last (GapNHWC, ScaleNHWC): the block is one region,
    its only reorders at the input and the output."""
    g = _graph(blocks=1, se=True)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["NhwcReorder", "ConvNHWC", "ConvNHWC", "GapNHWC", "ScaleNHWC", "ConvNHWC",
                                       "NhwcReorder"]
    pool, scale = g.nodes[3], g.nodes[4]
    assert pool.outputs[0].shape == (1, 32, 1, 1) and scale.inputs[1] is pool.outputs[0]
    assert scale.inputs[0] is g.nodes[2].outputs[0] and g.nodes[5].input(0) is scale.outputs[0]


def test_a_region_without_enough_convs_for_its_reorders_stays_nchw() -> None:
    g = _graph(blocks=1, se=True)
    nhwc_regions(g, min_convs=4)  # 3 convs, 2 reorders
    assert not any(n.op.endswith("NHWC") or n.op == "NhwcReorder" for n in g.nodes)


def test_a_mean_over_the_plane_ends_the_region_without_a_reorder() -> None:
    g = _graph(blocks=2, mean=True)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["NhwcReorder", *["ConvNHWC"] * 6, "GapNHWC"]
    assert g.nodes[-1].outputs[0] is g.outputs[0] and g.outputs[0].shape == (1, 8)


def test_a_channels_last_model_runs_its_region_without_reorders() -> None:
    """A TFLite-style model (NHWC input and output, Transposed to NCHW and back): the region's way in cancels with
    the input's Transpose and its way out with the output's, so no reorder is left at all. The input's Transpose
    does not count against the region either: 3 convs pay at 4 convs a pair of reorders."""
    g = _graph(blocks=1, nhwc=True)
    nhwc_regions(g, min_convs=4)
    assert [n.op for n in g.nodes] == ["ConvNHWC"] * 3
    assert g.nodes[0].inputs[0] is g.inputs[0] and g.nodes[-1].input(RESIDUAL) is g.inputs[0]
    assert g.outputs[0] is g.nodes[-1].outputs[0] and g.outputs[0].shape == (1, 14, 14, 8)


def test_a_stem_reads_a_channels_last_input_as_it_came() -> None:
    """The stem takes the NHWC input itself (ember_conv_stem_nhwc_f32's nhwc_in), not its NCHW Transpose."""
    g = _graph(blocks=1, stem=True, cin=3, nhwc=True)
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["ConvNHWC"] * 4
    stem = g.nodes[0]
    assert params(stem).stem and params(stem).nhwc_in and stem.inputs[0] is g.inputs[0]
    assert not params(g.nodes[1]).nhwc_in and g.outputs[0] is g.nodes[-1].outputs[0]


def test_an_nchw_stem_keeps_its_input() -> None:
    g = _graph(blocks=1, stem=True, cin=3)
    nhwc_regions(g, min_convs=3)
    assert not params(g.nodes[0]).nhwc_in and g.nodes[0].inputs[0] is g.inputs[0]


def _kws() -> Graph:
    """The keyword spotter's shape: a one-channel 49x10 spectrogram -> 10x4 stride-2 stem (40 products an output)
    -> depthwise 3x3 -> 1x1 -> an AveragePool whose one window is the whole 25x5 plane."""
    w0 = RNG.standard_normal((16, 1, 10, 4)).astype(np.float32)
    w1 = RNG.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w2 = RNG.standard_normal((16, 16, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], kernel_shape=[10, 4], strides=[2, 2], pads=[4, 1, 5, 1]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "w1"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=16),
             helper.make_node("Conv", ["b", "w2"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("AveragePool", ["c"], ["p"], kernel_shape=[25, 5], strides=[25, 5])]
    inits = [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate((w0, w1, w2))]
    graph = helper.make_graph(nodes, "kws", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 49, 10])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], inits)
    g = load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")
    fold_constants(g)
    fuse_activation(g)
    return g


def test_a_one_channel_stem_and_a_whole_plane_pool_close_the_region() -> None:
    """The keyword spotter: its 10x4 stem on one channel joins (40 products an output), and the AveragePool over
    the whole plane ends the region as a GapNHWC: no reorder, whatever the size rule."""
    g = _kws()
    nhwc_regions(g, min_convs=100)
    assert [n.op for n in g.nodes] == ["ConvNHWC"] * 3 + ["GapNHWC"]
    assert params(g.nodes[0]).stem and g.nodes[0].inputs[1].shape == (40, 16)
    assert g.outputs[0] is g.nodes[-1].outputs[0] and g.outputs[0].shape == (1, 16, 1, 1)


def test_a_pool_of_part_of_the_plane_stays_out() -> None:
    g = _kws()
    pool = g.nodes[-1]
    pool.attrs["kernel_shape"], pool.attrs["strides"] = [5, 5], [5, 5]
    pool.outputs[0].type = TensorType(DType.FLOAT32, (1, 16, 5, 1))
    nhwc_regions(g, min_convs=3)
    assert [n.op for n in g.nodes] == ["ConvNHWC"] * 3 + ["NhwcReorder", "AveragePool"]


def test_small_k_takes_only_1x1_convs_in_panels_of_few_input_channels() -> None:
    """nhwc_small_k 8: the expand convs (8 -> 32 channels, M a multiple of the panel) take the small-K kernel;
    the projections (32 -> 8) have too many input channels, and the depthwise convs are no matmul."""
    g = _graph(blocks=2)
    nhwc_regions(g, min_convs=3, panel=16, small_k=8)
    convs = [n for n in g.nodes if n.op == "ConvNHWC"]
    assert [params(n).small for n in convs] == [True, False, False] * 2
    g = _graph(blocks=1)
    nhwc_regions(g, min_convs=3, panel=0, small_k=32)  # no panels: the general matmul
    assert not any(params(n).small for n in g.nodes if n.op == "ConvNHWC")


def test_small_k_on_big_planes_takes_only_convs_of_few_output_channels(monkeypatch: pytest.MonkeyPatch) -> None:
    """On planes over SMALL_K_MAX_PIXELS (here lowered below the 14x14 plane) the small-K kernel takes a 1x1 conv
    only where its output channels are at most small_big_m (the avx2 family's 64: MobileNetV3's 16 -> 64 at
    112x112, not MobileNetV2's 16 -> 96)."""
    monkeypatch.setattr(nhwc_region, "SMALL_K_MAX_PIXELS", 100)
    for big_m, want in ((32, [True, False, False]), (16, [False, False, False]), (0, [False, False, False])):
        g = _graph(blocks=1)
        nhwc_regions(g, min_convs=3, panel=16, small_k=8, small_big_m=big_m)
        assert [params(n).small for n in g.nodes if n.op == "ConvNHWC"] == want, big_m


def _dense_graph(convs: list[tuple[int, int, int, int, int]], hw: int = 14) -> Graph:
    """A chain of Convs + Relu from a [1, C, hw, hw] input: (in, out, kernel, stride, group) each."""
    inits: list = []
    nodes: list = []
    x = "x"
    for i, (ci, co, kk, stride, group) in enumerate(convs):
        w = RNG.standard_normal((co, ci // group, kk, kk)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], kernel_shape=[kk, kk], pads=[kk // 2] * 4,
                                   strides=[stride] * 2, group=group), helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, convs[0][0], hw, hw])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    g = load_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), LoadOptions(), "net")
    fold_constants(g)
    fuse_activation(g)
    return g


def test_dense_convs_join_a_region_only_where_the_family_says() -> None:
    """3x3 stride 1 on 14x14 (16 tiles): Winograd F(4x4); stride 2 and a 5x5: im2col; a 3x3 on the 7x7 map (4 tiles):
    Winograd where its transformed weights are small (48 -> 32), im2col where they are big (256 -> 128); weights
    [36][C][M] and [KH*KW*C][M] (tap-major). Without nhwc_dense, or with channels that are not whole vectors (not
    Winograd: fewer than a vector), or grouped, they stay NCHW."""
    chain = [(16, 32, 1, 1, 1), (32, 32, 3, 1, 1), (32, 48, 3, 2, 1), (48, 32, 3, 1, 1), (32, 32, 5, 1, 1)]
    g = _dense_graph(chain)
    w = [n for n in g.nodes if n.op == "Conv"][2].inputs[1].const
    nhwc_regions(g, min_convs=3, dense=True)
    convs = [n for n in g.nodes if n.op == "ConvNHWC"]
    assert [params(n).dense for n in convs] == ["", "winograd4", "im2col", "winograd4", "im2col"]
    assert [n.op for n in g.nodes] == ["NhwcReorder", *["ConvNHWC"] * 5, "NhwcReorder"]
    assert convs[1].inputs[1].shape == (36, 32, 32) and convs[2].inputs[1].shape == (288, 48)
    # tap-major rows: row (kh * 3 + kw) * C + c of the im2col weights is w[:, c, kh, kw]
    assert np.array_equal(convs[2].inputs[1].const[(1 * 3 + 2) * 32 + 5], w[:, 5, 1, 2])
    g = _dense_graph([(16, 256, 1, 1, 1), (256, 256, 3, 2, 1), (256, 128, 3, 1, 1)])
    nhwc_regions(g, min_convs=1, dense=True)
    assert [params(n).dense for n in g.nodes if n.op == "ConvNHWC"] == ["", "im2col", "im2col"]
    for chain_out in ([(16, 32, 1, 1, 1), (32, 24, 5, 1, 1), (24, 32, 5, 1, 1)],  # 24 channels
                      [(16, 32, 1, 1, 1), (32, 32, 3, 1, 2), (32, 32, 3, 2, 2)]):  # grouped
        g = _dense_graph(chain_out)
        nhwc_regions(g, min_convs=1, dense=True)
        assert [n.op for n in g.nodes if n.op.startswith("Conv")] == ["ConvNHWC", "Conv", "Conv"]
    g = _dense_graph(chain)
    nhwc_regions(g, min_convs=1)
    assert [n.op for n in g.nodes if n.op.startswith("Conv")] == ["ConvNHWC", "Conv", "Conv", "Conv", "Conv"]
