"""`--ram-limit`: when the plan's RAM is over the limit, the first stage runs patch by patch
(passes/patch_ram.py) with the fewest patches and the shortest stage that fit; else one line states the smallest
RAM reached with patches and without."""

from __future__ import annotations

import copy
from collections.abc import Callable

from ember.config import CompileOptions
from ember.errors import ResourceLimitError
from ember.ir.graph import Graph
from ember.memory.plan import MemoryPlan
from ember.memory.planner import inlined_constants, plan_memory
from ember.passes.manager import PassManager
from ember.passes.patch_ram import patch_stage, stage_chain

# Grids tried (rows x columns of patches): P x 1 row stripes and P x P patches up to this P, fewest patches first
# (each patch recomputes its halo).
MAX_PATCHES = 8
GRIDS = sorted([(p, 1) for p in range(2, MAX_PATCHES + 1)] + [(p, p) for p in range(2, MAX_PATCHES + 1)],
               key=lambda g: (g[0] * g[1], g[1]))
# The pass after which the graph is final in its ops (quantized, fused) but no kernel is chosen yet: the
# patched nodes get their kernels, scratch and order from the passes after it, as any node does.
SPLIT_AFTER = "materialize_outputs"
# Longer stages tried after the one of least RAM for a grid, before the next grid.
GIVE_UP_AFTER = 3
# Patched graphs planned at most: each runs the kernel-choice passes and the planner again (big models).
MAX_TRIES = 64


def ram_of(plan: MemoryPlan) -> int:
    return plan.mutable_size + plan.activations_size


def fit_ram(load: Callable[[], Graph], pipeline: list, options: CompileOptions, unpatched: MemoryPlan,
            whole: Graph) -> tuple[Graph, MemoryPlan] | None:
    """The patched graph and its plan with the fewest patches, then the shortest stage, whose RAM is within
    options.ram_limit; None where patches reach no less than `unpatched`, the plan of `whole` (the unpatched graph
    after every pass; the caller's error states that plan). Raises the one-line error when patches help but not
    enough."""
    limit = options.ram_limit
    assert limit is not None
    names = [name for name, _ in pipeline]
    cut = names.index(SPLIT_AFTER) + 1 if SPLIT_AFTER in names else len(names)
    base = load()
    PassManager(pipeline[:cut]).run(base)
    chain = stage_chain(base)
    best: tuple[int, tuple[int, int], int] | None = None  # (ram, grid, length)
    tries = 0
    whole_ops = {n.name: n.op for n in whole.nodes}  # each node's op in the unpatched graph, kernels chosen
    # A stage conv the whole runs channels-last (passes/nhwc_region.py) sums its products in another order than
    # its NCHW patches would (a dense conv's window tap-major, Winograd on vectors of channels): no stage holds one.
    reach = next((k for k, n in enumerate(chain) if whole_ops.get(n.name) == "ConvNHWC"), len(chain))
    for grid in GRIDS:
        if tries >= MAX_TRIES:
            break
        here, worse = None, 0  # this grid's least RAM; lengths in a row that did not reach it
        for length in range(1, reach + 1):
            if tries == MAX_TRIES:
                break
            tries += 1
            graph = copy.deepcopy(base)
            patched_convs = patch_stage(graph, grid, length)
            if patched_convs is None:
                break
            PassManager(pipeline[cut:]).run(graph)
            if any(n.op.startswith("ConvWinograd") and n.name in patched_convs
                   and whole_ops.get(patched_convs[n.name] or "") != n.op for n in graph.nodes):
                continue  # a Winograd patch would round otherwise than the whole's (inside the stage, or F(2x2)/F(4x4))
            plan = plan_memory(graph, inlined_constants(graph), options.reuse_inputs)
            need = ram_of(plan)
            if need <= limit:
                return graph, plan
            if best is None or need < best[0]:
                best = (need, grid, length)
            # Past the stage whose maps make the peak, longer stages only add the halos' recomputation.
            here, worse = (need, 0) if here is None or need < here else (here, worse + 1)
            if worse >= GIVE_UP_AFTER:
                break
    if best is None or best[0] >= ram_of(unpatched):
        return None
    need, (rows, cols), length = best
    where = "one mutable region with --reuse-inputs" if options.reuse_inputs else "mutable + activations"
    raise ResourceLimitError(
        f"--ram-limit {limit:,}: the smallest RAM ember reaches for this model is {need:,} bytes ({where}) with "
        f"patch-based execution ({rows}x{cols} patches of the first {length} layers), "
        f"{ram_of(unpatched):,} bytes without; {need - limit:,} over the limit")
