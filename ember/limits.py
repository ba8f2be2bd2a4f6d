"""Sizes the generated C can hold: element counts as C int, the three regions within --max-memory."""

from __future__ import annotations

from ember.config import MAX_DIM, CompileOptions
from ember.errors import ResourceLimitError, ShapeError
from ember.ir.graph import Graph
from ember.memory.plan import MemoryPlan
from ember.toolchain.targets import Target

DEFAULT_HOST_MAX_MEMORY = 4 << 30


def check_limits(graph: Graph) -> None:
    """Every dimension and element count fits the C int the kernels take them as."""
    values = {id(v): v for v in [*graph.inputs, *(v for n in graph.walk() for v in (*n.inputs, *n.outputs))]
              if v is not None}
    for v in values.values():
        t = v.type
        big = [d for d in t.shape if d > MAX_DIM]
        if big or t.numel > MAX_DIM:
            what = f"dimension {big[0]:,}" if big else f"{t.numel:,} elements"
            raise ShapeError(f"tensor '{v.name}' {t}: {what}; ember's C takes counts as int (at most {MAX_DIM:,})")


def check_memory(plan: MemoryPlan, target: Target, opts: CompileOptions) -> None:
    """The three regions together within --max-memory (default 4 GiB on the host) and the address space; the
    RAM (mutable + activations) within --ram-limit."""
    _check_ram(plan, opts)
    space = 2**target.pointer_bits - 1
    limit = min(opts.max_memory or (DEFAULT_HOST_MAX_MEMORY if target.kind == "host" else space), space)
    total = plan.constant_size + plan.mutable_size + plan.activations_size
    if total > limit:
        hint = "raise --max-memory to allow it" if limit < space else f"the {target.name} address space"
        raise ResourceLimitError(
            f"the bundle needs {total:,} bytes (constant {plan.constant_size:,} + mutable {plan.mutable_size:,} + "
            f"activations {plan.activations_size:,}), more than the limit of {limit:,} ({hint})")


def _check_ram(plan: MemoryPlan, opts: CompileOptions) -> None:
    """The plan is already the smallest ember reaches: the operator order of least peak (passes/schedule.py)
    and offsets at (or within 2% of) that order's lower bound, so the error states it as the floor."""
    if opts.ram_limit is None:
        return
    need = plan.mutable_size + plan.activations_size
    if need <= opts.ram_limit:
        return
    parts = ("one mutable region with --reuse-inputs, whose lower bound" if opts.reuse_inputs else
             f"mutable {plan.mutable_size:,} + activations {plan.activations_size:,}, whose lower bound")
    raise ResourceLimitError(
        f"--ram-limit {opts.ram_limit:,}: the smallest RAM ember reaches for this model is {need:,} bytes "
        f"({parts} in the best operator order is {plan.lower_bound:,}), {need - opts.ram_limit:,} over the limit")
