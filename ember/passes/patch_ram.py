"""Patch-based execution of the first stage (`--ram-limit`, MCUNetV2-style): the chain of spatial ops from the
graph's input is computed tile by tile, so only one tile's intermediates are alive at a time.

The stage is the first `length` nodes of the chain (convolutions, pools, elementwise ops, each read only by the
next). Its output is cut into R x C patches of rows x columns (P x P, or P x 1 row stripes); each patch runs
the same nodes on the region of the input its receptive field needs (a Slice of the input, halo included: the
halo is computed again by each patch that needs it). A convolution or pool keeps its padding only where the
patch meets the image border; inside, the halo takes its place, so every output element is the same sum of the
same products as without patches. The patches' outputs are joined by Concat (columns into row bands, bands into
the stage output).
"""

from __future__ import annotations

import numpy as np

from ember.ir.graph import Graph, Node, Value
from ember.ops import registry
from ember.ops.pool import channels_last

# Ops with a window: (kernel, stride, dilation, pads) from their attributes.
_WINDOWED = {"Conv", "QConv", "MaxPool", "QMaxPool"}
_UNARY = {"QuantizeLinear", "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "FusedElementwise"}


def _spatial_input(node: Node) -> Value | None:
    """The one non-constant input of a node the stage may hold (the others are weights and parameters)."""
    xs = [v for v in node.inputs if v is not None and not v.is_const]
    return xs[0] if len(xs) == 1 and node.inputs[0] is xs[0] else None


def _patchable(node: Node) -> bool:
    x, y = _spatial_input(node), node.outputs[0] if len(node.outputs) == 1 else None
    if x is None or y is None or x.type.rank != 4 or y.type.rank != 4 or x.shape[0] != 1 or x.blocked or y.blocked:
        return False
    if node.subgraphs or any(k.startswith("_parts") for k in node.attrs) or channels_last(node):
        return False  # a channels-last pool's rows are not dim 2
    if node.op in _WINDOWED:
        return (node.attrs.get("auto_pad", "NOTSET") == "NOTSET" and not node.attrs.get("ceil_mode", 0)
                and len(_window(node)[0]) == 2)
    elementwise = node.op in _UNARY or registry.get(node.op).expr is not None
    return elementwise and x.shape[2:] == y.shape[2:]


def _window(node: Node) -> tuple[list[int], list[int], list[int], list[int]]:
    """(kernel, strides, dilations, pads [top, left, bottom, right]) of a windowed node."""
    kernel = node.attrs.get("kernel_shape")
    if kernel is None:
        w = node.inputs[1]
        kernel = list(w.shape[2:]) if w is not None else []
    r = len(kernel)
    return (list(kernel), list(node.attrs.get("strides", [1] * r)), list(node.attrs.get("dilations", [1] * r)),
            list(node.attrs.get("pads", [0] * (2 * r))))


def stage_chain(graph: Graph) -> list[Node]:
    """The longest chain of patchable nodes from a graph input, each read only by the next."""
    if len(graph.inputs) != 1:
        return []
    uses = graph.consumers()
    chain: list[Node] = []
    v = graph.inputs[0]
    while True:
        readers = uses.get(id(v), [])
        if len(readers) != 1 or not _patchable(readers[0]) or _spatial_input(readers[0]) is not v:
            break
        if chain and graph.is_output(v):
            break
        chain.append(readers[0])
        v = readers[0].outputs[0]
    # The stage's output is joined by a Concat: a graph output would need its own copy anyway.
    while chain and graph.is_output(chain[-1].outputs[0]):
        chain.pop()
    return chain


# Float convolutions may run Winograd F(4x4,3x3) or F(2x2,3x3) (passes/conv_algorithms.py), whose tiles start at
# multiples of 4 or 2 of the output: the stage's output is cut on multiples of TILE, so that a Winograd stage end
# computes every tile from the same inputs as the whole, with the same rounding. (The maps inside the stage start
# where the halo does: a Winograd convolution there may round differently, and ram_fit.py refuses such a try.)
TILE = 4


def _cuts(n: int, parts: int, align: int) -> list[tuple[int, int]]:
    c = [n * p // parts // align * align for p in range(parts)] + [n]
    return [(a, b) for a, b in zip(c[:-1], c[1:], strict=True) if b > a]


def _align(v: Value) -> int:
    return TILE if v.dtype.is_float else 1


def _back(node: Node, axis: int, lo: int, hi: int, size_in: int) -> tuple[int, int, int, int]:
    """Input range [lo', hi') that output range [lo, hi) along spatial `axis` (0: rows, 1: cols) reads, and the
    padding (before, after) that stands for what lies outside the input."""
    if node.op not in _WINDOWED:
        return lo, hi, 0, 0
    kernel, strides, dil, pads = _window(node)
    a = lo * strides[axis] - pads[axis]
    b = (hi - 1) * strides[axis] - pads[axis] + (kernel[axis] - 1) * dil[axis] + 1
    return max(a, 0), min(b, size_in), max(a, 0) - a, b - min(b, size_in)


def patch_stage(graph: Graph, grid: tuple[int, int], length: int) -> dict[str, str | None] | None:
    """Rewrites the first `length` nodes of stage_chain into `grid` (rows x columns) patches; None if the chain
    is shorter or its output has fewer rows or columns than the grid.

    Returns, for each new float convolution, the name of the convolution it is a patch of where it may become
    Winograd as that one does, else None: it must not become Winograd for the outputs to stay bit-identical
    (passes/conv_algorithms.py chooses after this pass). Winograd's tiles round as the whole's only where the
    patch's map is cut on whole tiles, which holds for the stage's output where its cuts fall on tiles, not for the
    maps inside the stage (their patches start where the halo does); and only in the same variant (F(2x2) and
    F(4x4) round differently), which the caller checks against the whole's choice."""
    chain = stage_chain(graph)[:length]
    if len(chain) < length or length < 1:
        return None
    end = chain[-1].outputs[0]
    assert end is not None
    _, _, h_out, w_out = end.shape
    if h_out < grid[0] or w_out < grid[1]:
        return None
    source = _spatial_input(chain[0])
    assert source is not None
    new: list[Node] = []
    patched_convs: dict[str, str | None] = {}
    bands: list[Value] = []
    rows = _cuts(h_out, grid[0], _align(end) if h_out >= TILE * grid[0] else 1)
    cols = _cuts(w_out, grid[1], _align(end) if w_out >= TILE * grid[1] else 1)
    on_tiles = all(g == 1 or size >= TILE * g for g, size in zip(grid, (h_out, w_out), strict=True))
    # Chain positions whose output map is cut on the stage's cuts: those after which only pointwise ops follow.
    exact = [on_tiles and not any(m.op in _WINDOWED for m in chain[k + 1 :]) for k in range(len(chain))]
    if len(rows) < 2 and len(cols) < 2:
        return None
    for r, (r0, r1) in enumerate(rows):
        tiles: list[Value] = []
        for c, (c0, c1) in enumerate(cols):
            tiles.append(_patch(graph, chain, source, (r0, r1), (c0, c1), f"p{r}_{c}", new, exact, patched_convs))
        bands.append(_concat(graph, tiles, 3, f"{end.name}_band{r}", new) if len(tiles) > 1 else tiles[0])
    joined = _concat(graph, bands, 2, f"{end.name}_patched", new)
    at = graph.nodes.index(chain[0])
    for n in chain:
        graph.remove_node(n)
    for k, n in enumerate(new):
        graph.add_node(n, at + k)
    graph.replace_uses(end, joined)
    return patched_convs


def _patch(graph: Graph, chain: list[Node], source: Value, rows: tuple[int, int], cols: tuple[int, int], tag: str,
           new: list[Node], exact: list[bool], patched_convs: dict[str, str | None]) -> Value:
    """One patch's nodes appended to `new`; returns its output (rows x cols of the stage output)."""
    ranges = [(rows, cols)]
    pads: list[list[int]] = []
    for n in reversed(chain):
        x = _spatial_input(n)
        assert x is not None
        (ra, rb), (ca, cb) = ranges[-1]
        r0, r1, pt, pb = _back(n, 0, ra, rb, x.shape[2])
        c0, c1, pl, pr = _back(n, 1, ca, cb, x.shape[3])
        ranges.append(((r0, r1), (c0, c1)))
        pads.append([pt, pl, pb, pr])
    ranges.reverse()
    pads.reverse()
    (r0, r1), (c0, c1) = ranges[0]
    starts = graph.constant(f"{tag}_starts", np.array([r0, c0], np.int64))
    ends = graph.constant(f"{tag}_ends", np.array([r1, c1], np.int64))
    axes = graph.constant(f"{tag}_axes", np.array([2, 3], np.int64))
    cur = graph.value(f"{source.name}_{tag}", source.type.with_shape((*source.shape[:2], r1 - r0, c1 - c0)))
    new.append(Node("Slice", graph.unique_name(f"{tag}_slice"), [source, starts, ends, axes], [cur]))
    for k, n in enumerate(chain):
        (a, b), (c, d) = ranges[k + 1]
        y = n.outputs[0]
        assert y is not None
        out = graph.value(f"{y.name}_{tag}", y.type.with_shape((*y.shape[:2], b - a, d - c)))
        attrs = dict(n.attrs)
        if n.op in _WINDOWED:
            attrs["pads"] = pads[k]
        ins = [cur if v is _spatial_input(n) else v for v in n.inputs]
        new.append(Node(n.op, graph.unique_name(f"{n.name}_{tag}"), ins, [out], attrs))
        if n.op == "Conv" and out.dtype.is_float:
            patched_convs[new[-1].name] = n.name if exact[k] else None
        cur = out
    return cur


def _concat(graph: Graph, xs: list[Value], axis: int, name: str, new: list[Node]) -> Value:
    shape = list(xs[0].shape)
    shape[axis] = sum(v.shape[axis] for v in xs)
    y = graph.value(name, xs[0].type.with_shape(tuple(shape)))
    new.append(Node("Concat", graph.unique_name(f"{name}_concat"), list(xs), [y], {"axis": axis}))
    return y
