"""Static partitioning for --threads (ember/ops/parallel.py, ember/ops/split.py, ember/passes/threads.py):
parts cover every unit once on aligned boundaries, each part's tensors are pointer offsets into the whole
ones, and only nodes with enough work are divided."""

from __future__ import annotations

import numpy as np

from ember.ir.dtypes import DType, TensorType
from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.parallel import PARTS_ATTR, Slice, Split, max_parts, part_ranges, part_views
from ember.passes.threads import split_for_threads


def test_parts_cover_every_unit_once_on_aligned_boundaries() -> None:
    for units, align, parts in ((100, 8, 3), (64, 8, 8), (7, 1, 4), (33, 4, 2), (256, 32, 5)):
        split = Split(units, align, ())
        ranges = part_ranges(split, parts)
        assert len(ranges) == parts and ranges[0][0] == 0 and ranges[-1][1] == units
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        assert all(lo % align == 0 for lo, _ in ranges)
        sizes = [hi - lo for lo, hi in ranges]
        assert max(sizes) - min(sizes) <= align, (units, align, parts, sizes)
    assert max_parts(Split(20, 8, ()), 4) == 2  # no part smaller than one aligned block
    assert max_parts(Split(4, 8, ()), 4) == 1


def _conv(group: int, channels: int, out: int, k: int = 3, size: int = 16) -> tuple[Graph, Node]:
    g = Graph("g")
    x = Value("x", TensorType(DType.FLOAT32, (1, channels, size, size)))
    g.inputs.append(x)
    shape = (out, channels // group, k, k)
    w = g.constant("w", np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
    b = g.constant("b", np.arange(out, dtype=np.float32))
    y = Value("y", TensorType(DType.FLOAT32, (1, out, size, size)))
    pads = [k // 2] * 4
    node = Node("Conv", "conv", [x, w, b], [y], {"group": group, "pads": pads, "kernel_shape": [k, k]})
    y.producer = node
    g.add_node(node)
    g.outputs.append(y)
    return g, node


def test_conv_parts_are_offsets_into_the_whole_tensors() -> None:
    _, node = _conv(1, 16, 40, size=8)
    split = registry.get("Conv").split(node)
    assert split is not None and split.units == 40
    views = part_views(node, split, 3)
    assert [v.units for v in views] == [(0, 8), (8, 24), (24, 40)]
    third = views[2]
    w, b, y = third.node.inputs[1], third.node.inputs[2], third.node.outputs[0]
    assert w.shape == (16, 16, 3, 3) and np.array_equal(w.const, node.inputs[1].const[24:40])
    assert third.locations[id(w)] == (node.inputs[1], 24 * 16 * 9 * 4)
    assert third.locations[id(b)] == (node.inputs[2], 24 * 4)
    assert third.locations[id(y)] == (node.outputs[0], 24 * 8 * 8 * 4)
    assert third.node.inputs[0] is node.inputs[0]  # every part reads the whole input
    assert PARTS_ATTR not in third.node.attrs


def test_im2col_conv_over_many_pixels_divides_its_pixels() -> None:
    """Parts of the channels would each build the whole im2col matrix: from 256 pixels on, the pixels."""
    _, node = _conv(1, 16, 40)
    split = registry.get("Conv").split(node)
    assert split is not None and split.units == 256 and split.align == 64 and split.lower is not None
    assert part_ranges(split, 3) == [(0, 64), (64, 128), (128, 256)]


def test_pointwise_conv_over_many_pixels_divides_its_pixels() -> None:
    """y = w x as a matmul: parts of its columns (256 pixels) rather than of its 64 rows."""
    _, node = _conv(1, 32, 64, k=1)
    split = registry.get("Conv").split(node)
    assert split is not None and split.units == 256 and split.lower is not None and split.slices == ()
    _, wide = _conv(1, 32, 512, k=1)  # more channels than pixels: rows
    split = registry.get("Conv").split(wide)
    assert split is not None and split.units == 512 and split.lower is None


def test_conv_narrow_parts_are_whole_weight_panels() -> None:
    g = Graph("g")
    x = Value("x", TensorType(DType.FLOAT32, (1, 8, 8, 8)))
    w = g.constant("w", np.zeros((3, 72, 32), np.float32))  # 96 channels in panels of 32, K = 8 x 3 x 3
    b = g.constant("b", np.zeros(96, np.float32))
    y = Value("y", TensorType(DType.FLOAT32, (1, 96, 8, 8)))
    node = Node("ConvNarrow", "n", [x, w, b], [y], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
    split = registry.get("ConvNarrow").split(node)
    assert split is not None and split.units == 3
    last = part_views(node, split, 2)[1]
    assert last.units == (1, 3)
    assert last.node.inputs[1].shape == (2, 72, 32) and last.locations[id(last.node.inputs[1])][1] == 72 * 32 * 4
    assert last.node.outputs[0].shape == (1, 64, 8, 8)
    assert last.locations[id(last.node.outputs[0])][1] == 32 * 64 * 4
    assert last.locations[id(last.node.inputs[2])][1] == 32 * 4


def test_depthwise_parts_cut_the_input_too_and_keep_their_group() -> None:
    _, node = _conv(32, 32, 32)
    split = registry.get("Conv").split(node)
    assert split is not None
    views = part_views(node, split, 2)
    x = views[1].node.inputs[0]
    assert x.shape == (1, 16, 16, 16) and views[1].locations[id(x)][1] == 16 * 16 * 16 * 4
    assert all(v.node.attrs["group"] == 16 for v in views)
    # Grouped but not depthwise: one call, not divided.
    assert registry.get("Conv").split(_conv(2, 32, 32)[1]) is None


def test_only_nodes_with_enough_work_are_divided() -> None:
    g, big = _conv(1, 16, 64)  # 2 * 64 * 16 * 9 * 256 = 4.7 MFLOP
    split_for_threads(g, 4)
    assert big.attrs[PARTS_ATTR] == 4
    g, small = _conv(1, 4, 8)  # 0.15 MFLOP: not worth waking threads
    split_for_threads(g, 4)
    assert PARTS_ATTR not in small.attrs
    g, node = _conv(1, 16, 64)
    split_for_threads(g, 1)
    assert PARTS_ATTR not in node.attrs


def test_a_split_node_has_scratch_for_each_part() -> None:
    _, node = _conv(1, 16, 64)  # 3x3 with padding: im2col scratch
    scratch = registry.get("Conv").scratch
    assert scratch is not None
    one = scratch(node)
    node.attrs[PARTS_ATTR] = 4
    assert scratch(node) == 4 * (-(-one // 64) * 64)
    assert Slice(0, 1).per_unit == 1


def _add(shape: tuple[int, ...], other: tuple[int, ...]) -> tuple[Graph, Node]:
    g = Graph("g")
    x = Value("x", TensorType(DType.FLOAT32, shape))
    g.inputs.append(x)
    b = g.constant("b", np.ones(other, np.float32))
    y = Value("y", TensorType(DType.FLOAT32, shape))
    node = Node("Add", "add", [x, b], [y], {})
    y.producer = node
    g.add_node(node)
    g.outputs.append(y)
    return g, node


def test_elementwise_nodes_divide_along_their_first_non_unit_axis_when_big() -> None:
    g, big = _add((1, 64, 64, 64), (64, 1, 1))  # 262K elements x 16: 4.2M operations' worth
    split = registry.get("Add").split(big)
    assert split is not None and split.units == 64 and split.lower is not None and split.slices == ()
    split_for_threads(g, 2)
    assert big.attrs[PARTS_ATTR] == 2
    g, small = _add((1, 8, 32, 32), (8, 1, 1))  # 8K elements: runs on the calling thread
    split_for_threads(g, 2)
    assert PARTS_ATTR not in small.attrs
