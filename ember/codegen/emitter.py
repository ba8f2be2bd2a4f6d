"""What an OpDef's lowering sees: pointers to its tensors, kernel calls, scratch, static tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ember.codegen.cwriter import CWriter, NameSupply, c_float, c_int
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node, Value
from ember.memory.plan import MemoryPlan, Region


def literal(x: float | int | bool, dtype: DType) -> str:
    """A C literal of `dtype`'s compute type (a storage type's: its bits)."""
    if dtype.is_storage_only:
        bits = np.asarray(x).astype(dtype.np).reshape(1).view(np.uint16 if dtype.itemsize == 2 else np.uint8)
        return c_int(int(bits[0]), dtype.ctype)
    if dtype in (DType.FLOAT32, DType.FLOAT16):
        return c_float(float(x), "float")
    if dtype is DType.FLOAT64:
        return c_float(float(x), "double")
    if dtype is DType.BOOL:
        return "1" if bool(x) else "0"
    return c_int(int(x), dtype.ctype)


def compute_ctype(dtype: DType) -> str:
    """The C type arithmetic is done in (half precision is computed in float)."""
    return "float" if dtype is DType.FLOAT16 else dtype.ctype


class CodeContext:
    """State shared by all lowerings of one bundle: the writer, plan, kernel needs and file-scope tables."""

    def __init__(self, plan: MemoryPlan) -> None:
        self.plan = plan
        self.body = CWriter()
        self.tables = CWriter()
        self.needs: set[str] = {"ember_prelude"}
        self.names = NameSupply()
        # Multi-threaded bundles: the functions that compute one part of a divided node (codegen/bundle.py),
        # and the tables their parts emitted, by content (the parts of a node share their geometry tables).
        self.tasks = CWriter()
        self.part_tables: dict[tuple[str, str], str] = {}
        # Emits a subgraph's nodes at the current point of `body` (set by codegen/bundle.py).
        self.emit_graph: Callable[[Graph], None] | None = None

    def need(self, *names: str) -> None:
        self.needs.update(names)


class KernelEmitter:
    """Handed to `OpDef.lower(node, k)`: builds the C statements that compute one node."""

    def __init__(self, ctx: CodeContext, node: Node, views: dict[int, tuple[Value, int]] | None = None,
                 scratch_at: int | None = None) -> None:
        self.ctx = ctx
        self.node = node
        # One part of a divided node (ember/ops/parallel.py): its cut values, each as (whole value, byte
        # offset), and the byte offset of the part's own scratch.
        self.views = views or {}
        self.scratch_at = scratch_at

    def where(self, v: Value) -> tuple[Region, int]:
        """The region and byte offset of a tensor (of a cut value: inside its whole value)."""
        if id(v) in self.views:
            whole, extra = self.views[id(v)]
            region, off = self.ctx.plan.where(whole)
            return region, off + extra
        return self.ctx.plan.where(v)

    def ptr(self, v: Value | None, ctype: str | None = None) -> str:
        """Typed pointer expression to a tensor's first element (writable unless in the constant region)."""
        if v is None:
            return "0"
        region, off = self.where(v)
        ct = ctype if ctype is not None else v.dtype.ctype
        qual = "const " if region is Region.CONSTANT else ""
        return f"(({qual}{ct} *)({region.value} + {off}))"

    def out(self, i: int = 0, ctype: str | None = None) -> str:
        return self.ptr(self.node.outputs[i], ctype)

    def inp(self, i: int, ctype: str | None = None) -> str:
        return self.ptr(self.node.input(i), ctype)

    def same_buffer(self, a: Value, b: Value) -> bool:
        return self.where(a) == self.where(b)

    def has_scratch(self) -> bool:
        """Whether the node was given scratch (its OpDef's scratch size is not 0)."""
        return self.scratch_at is not None or id(self.node) in self.ctx.plan.scratch

    def scratch(self, ctype: str = "uint8_t") -> str:
        off = self.scratch_at if self.scratch_at is not None else self.ctx.plan.scratch[id(self.node)]
        return f"(({ctype} *)({self.ctx.plan.scratch_region.value} + {off}))"

    def need(self, *names: str) -> None:
        self.ctx.need(*names)

    def emit_graph(self, graph: Graph) -> None:
        """The C of a control-flow node's subgraph, here (inside the if/else or loop the lowering opened)."""
        assert self.ctx.emit_graph is not None
        self.ctx.emit_graph(graph)

    def fresh(self, base: str) -> str:
        """A fresh C identifier (a loop counter, a flag) that no other name of the bundle uses."""
        return self.ctx.names.fresh(base)

    def call(self, fn: str, *args: object) -> None:
        self.ctx.need(fn)
        self.line(f"{fn}({', '.join(str(a) for a in args)});")

    def line(self, text: str) -> None:
        self.ctx.body.line(text)

    @property
    def w(self) -> CWriter:
        return self.ctx.body

    def table(self, values: Sequence[int | float] | np.ndarray, dtype: DType = DType.INT32) -> str:
        """A file-scope `static const` array (read-only, so the entry point stays re-entrant)."""
        vals = [literal(x, dtype) for x in np.asarray(values).reshape(-1).tolist()] or ["0"]
        body = ", ".join(vals)
        key = (dtype.ctype, body)
        if self.views and key in self.ctx.part_tables:
            return self.ctx.part_tables[key]
        name = self.ctx.names.fresh("ember_tab")
        self.ctx.tables.line(f"static const {dtype.ctype} {name}[{len(vals)}] = {{{body}}};")
        if self.views:
            self.ctx.part_tables[key] = name
        return name


class ExprHandler:
    """Given to `OpDef.expr(h, xs, node)`: dtype-aware helpers for building one C expression."""

    def __init__(self, ctx: CodeContext, dtype: DType) -> None:
        self.ctx = ctx
        self.dtype = dtype  # the output's dtype

    @property
    def ctype(self) -> str:
        return compute_ctype(self.dtype)

    def lit(self, x: float | int | bool, dtype: DType | None = None) -> str:
        return literal(x, dtype if dtype is not None else self.dtype)

    def fn(self, name: str, *args: str) -> str:
        """Call ember's float math (`exp`, `log`, `tanh`, ...); double is computed through float."""
        cname = f"ember_{name}f"
        block = {"sin": "ember_sincosf", "cos": "ember_sincosf"}.get(name, cname)
        self.ctx.need(block)
        if self.dtype is DType.FLOAT64:
            inner = ", ".join(f"(float)({a})" for a in args)
            return f"((double){cname}({inner}))"
        return f"{cname}({', '.join(args)})"

    def need(self, *names: str) -> None:
        self.ctx.need(*names)

    def let(self, expr: str, ctype: str | None = None) -> str:
        """Bind `expr` to a fresh local so an expression that uses it twice evaluates it once.

        The declaration lands in the loop body just before the step's own line (emit_chain calls
        `expr` right before writing that line), so it is in scope wherever the result is used.
        """
        name = self.ctx.names.fresh("e")
        self.ctx.body.line(f"const {ctype if ctype is not None else self.ctype} {name} = {expr};")
        return name
