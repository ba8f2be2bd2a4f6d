"""The bundle's files: NAME.c (kernels + entry point), NAME.h (Glow's API), weights, manifest."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from ember.codegen import library
from ember.codegen.cwriter import (
    MAX_NAME_LENGTH,
    STD_MACROS,
    CWriter,
    NameSupply,
    c_comment,
    c_string,
    network_name_problem,
    sanitize,
)
from ember.codegen.elementwise import emit_chain
from ember.codegen.emitter import CodeContext, KernelEmitter
from ember.errors import OptionError
from ember.ir.graph import Graph, Node, Value
from ember.memory.plan import MemoryPlan
from ember.ops import registry
from ember.ops.opdef import OpDef
from ember.ops.parallel import Split, node_split, part_views

# The macros NAME.h defines for each input and output NAME_x: NAME_x itself (its offset) and these.
_IO_SUFFIXES = ("_TYPE", "_DTYPE", "_NUM_DIMS", "_DIMS", "_SIZE", "_BYTES", "_SCALE", "_ZERO_POINT")
# Macros NAME.h and NAME.c define besides those of the inputs and outputs (NAME_... ones given the prefix).
_NAMED_MACROS = ("CONSTANT_MEM_SIZE", "MUTABLE_MEM_SIZE", "ACTIVATIONS_MEM_SIZE", "MEM_ALIGN", "THREADS")
_FIXED_MACROS = {"GLOW_MEM_ALIGN", "GLOW_GET_ADDR", "EMBER_GLOW_BUNDLE_TYPES", "EMBER_PROFILE", "EMBER_CAPTURE",
                 "EMBER_PROFILE_EVENT", "EMBER_CAPTURE_TENSOR"}


@dataclass
class IOEntry:
    value: Value
    name: str  # original model name
    cname: str  # sanitized, unique, used in macros
    offset: int


@dataclass
class BundleSources:
    c: str
    h: str
    io: list[IOEntry]
    # Translation units NAME.c holds: compiled once per part with -DEMBER_PART=p and linked into one NAME.o
    # (toolchain/cc.py); compiled without EMBER_PART, NAME.c is one translation unit as ever.
    parts: int = 1


# The least C (in characters, a kernel counted once per node that calls it) a part of NAME.c must have to
# be worth a compiler process: GCC's time goes mostly to the copies of a kernel it specializes for the
# constants at each call, which a part of the calls makes only for its own. And how many segments of
# consecutive nodes each part gets, dealt in turn: every part then has some of each stage of the network
# (an early stage's kernels cost GCC more than a late one's), so the compiler processes end about together.
MIN_PART_WEIGHT = 60_000
ROUNDS = 3


def check_network_name(name: str) -> None:
    problem = network_name_problem(name)
    if problem:
        raise OptionError(f"--name {name!r}: {problem}")


def entry_symbols(name: str) -> set[str]:
    return {name, f"{name}_symbols", f"{name}_config", f"{name}_set_threads", f"{name}_shutdown",
            f"{name}_reset_state", f"{name}_carry_state"}


def io_macros(name: str, entries: list[IOEntry]) -> set[str]:
    up = name.upper()
    return {f"{up}_{e.cname}{suf}" for e in entries for suf in ("", *_IO_SUFFIXES)}


def header_macros(name: str) -> set[str]:
    """Every macro name NAME.h and NAME.c define or take from the C headers, before the inputs' and outputs'."""
    up = name.upper()
    return {f"EMBER_BUNDLE_{up}_H", *(f"{up}_{m}" for m in _NAMED_MACROS), *_FIXED_MACROS, *STD_MACROS}


def io_entries(graph: Graph, plan: MemoryPlan, name: str | None = None) -> tuple[list[IOEntry], list[IOEntry]]:
    """Inputs and outputs with their C names: each NAME_x family of macros distinct from every other macro."""
    name = name or graph.name
    up = name.upper()
    # The entry point and its tables are C symbols a macro must not rename either (NET_config when NET).
    names = NameSupply(header_macros(name) | entry_symbols(name))
    prefix = f"{up}_"

    def cname(tensor: str) -> str:
        return names.family(tensor, prefix, _IO_SUFFIXES)

    ins = [IOEntry(v, v.name, cname(v.name), plan.where(v)[1]) for v in graph.inputs]
    outs = [IOEntry(v, n, cname(n), plan.where(v)[1]) for v, n in zip(graph.outputs, graph.output_names, strict=True)]
    return ins, outs


def generate(graph: Graph, plan: MemoryPlan, name: str, api: str, banner: str,
             defines: dict[str, int] | None = None, threads: int = 1, max_parts: int = 1) -> BundleSources:
    """NAME.c and NAME.h. `defines`: kernel parameters of the CPU family (toolchain/cpus.py), as macros
    ahead of the kernels. `threads` > 1: a multi-threaded bundle (its pool: kernels/threads.c; nodes marked
    by passes/threads.py). `max_parts` > 1: NAME.c may be cut into that many translation units (a big
    model's, to be compiled at once on several cores); a threaded bundle is one (its pool is one)."""
    check_network_name(name)
    ins, outs = io_entries(graph, plan, name)
    ctx = CodeContext(plan)
    # One supply for every identifier of NAME.c and NAME.h: the kernels' locals and tables are kept apart
    # from the entry point, its symbols and every macro the header defines.
    ctx.names.reserve(entry_symbols(name) | header_macros(name) | io_macros(name, ins + outs))
    ctx.emit_graph = lambda sub: _emit_subgraph(sub, ctx)
    pool = ctx.names.fresh("ember_threads") if threads > 1 else None
    pieces = _emit_nodes(graph, ctx, pool)
    segments = _segments(pieces, 1 if pool is not None else max_parts)
    for seg in segments:
        if seg.part > 0:
            seg.fn = ctx.names.fresh(f"{name}_part{seg.part}")
    c = _source(graph, ctx, name, api, banner, ins + outs, plan, defines or {}, threads, pool, segments)
    h = _header(name, api, banner, ins, outs, plan, graph.valid_counts, threads, graph.state_outputs)
    return BundleSources(c, h, ins + outs, 1 + max(seg.part for seg in segments))


# An instrumented build (`ember bench`: NAME.c compiled with -DEMBER_PROFILE) brackets every node with
# calls to a timer the benchmark harness provides; a normal build compiles the brackets away.
# A capture build (`ember profile`: -DEMBER_CAPTURE) hands every node output to a hosted copier after
# the node; value indices count node outputs in graph order (ember.runtime.profile.captured_values).
_PROFILE_HOOKS = """#ifdef EMBER_PROFILE
void ember_profile_event(int node, int end);
#define EMBER_PROFILE_EVENT(node, end) ember_profile_event(node, end)
#else
#define EMBER_PROFILE_EVENT(node, end) ((void)0)
#endif
#ifdef EMBER_CAPTURE
void ember_capture_tensor(int value, const void *data, size_t bytes);
#define EMBER_CAPTURE_TENSOR(value, data, bytes) ember_capture_tensor(value, data, bytes)
#else
#define EMBER_CAPTURE_TENSOR(value, data, bytes) ((void)0)
#endif
"""


def _emit_node(node: Node, ctx: CodeContext, pool: str | None = None) -> None:
    op = registry.get(node.op)
    outs = ", ".join(v.name for v in node.outputs if v is not None)
    ctx.body.line(f"/* {c_comment(node.name)}: {node.op} -> {c_comment(outs)} */")
    found = node_split(node, op.split) if pool is not None else None
    if all(v is None or v.type.numel == 0 for v in node.outputs):
        pass  # empty outputs: nothing to compute (and kernels get no scratch for them)
    elif found is not None:
        assert pool is not None
        _emit_parts(node, op, *found, ctx, pool)
    elif op.expr is not None:
        emit_chain(ctx, [(node, op.expr)], node.inputs, node.outputs[0])
    elif op.lower is not None:
        op.lower(node, KernelEmitter(ctx, node))
    else:
        raise AssertionError(f"op {node.op} reached code generation without a lowering")


def _emit_parts(node: Node, op: OpDef, split: Split, parts: int, ctx: CodeContext, pool: str) -> None:
    """A divided node: one task function computes part `part` (a call of the node's own lowering on its
    view of the node, with the part's scratch); the entry point hands the parts to the pool."""
    assert op.lower is not None or split.lower is not None
    fn = ctx.names.fresh("ember_task")
    stride = op.scratch(node) // parts if op.scratch is not None else 0
    base = ctx.plan.scratch.get(id(node), 0)
    body, ctx.body = ctx.body, CWriter()
    try:
        for p, view in enumerate(part_views(node, split, parts)):
            lo, hi = view.units
            with ctx.body.block(f"{'if' if p == 0 else 'else if'} (part == {p})", f" /* units {lo}..{hi} */"):
                if split.lower is not None:
                    split.lower(node, KernelEmitter(ctx, node, scratch_at=base + p * stride), lo, hi)
                else:
                    assert op.lower is not None
                    op.lower(view.node, KernelEmitter(ctx, view.node, view.locations, base + p * stride))
        task = ctx.body.getvalue()
    finally:
        ctx.body = body
    w = ctx.tasks
    with w.block(f"static void {fn}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations, int part)"):
        w.line("(void)constantWeight;")
        w.line("(void)mutableWeight;")
        w.line("(void)activations;")
        w.raw(_indent(task))
    ctx.body.line(f"ember_tp_run({pool}, {fn}, {parts}, constantWeight, mutableWeight, activations);")


def _emit_subgraph(graph: Graph, ctx: CodeContext) -> None:
    """A control-flow node's subgraph: its nodes, without profile events or captures (those bracket the
    whole control-flow node, the unit `ember bench` and `ember profile` see)."""
    for node in graph.nodes:
        _emit_node(node, ctx)


@dataclass
class _Piece:
    """One node of the graph in C: its statements, the file-scope tables they read, the kernel blocks they
    call, and a guess of what compiling it costs (its text and that of the kernels it calls)."""

    body: str
    tables: str
    needs: set[str] = field(default_factory=set)

    @property
    def weight(self) -> int:
        lib = library.blocks()
        return len(self.body) + sum(len(lib[n].text) for n in self.needs if n in lib)


def _emit_nodes(graph: Graph, ctx: CodeContext, pool: str | None = None) -> list[_Piece]:
    captured = 0
    pieces: list[_Piece] = []
    needs = ctx.needs
    for i, node in enumerate(graph.nodes):
        ctx.body, ctx.tables, ctx.needs = CWriter(), CWriter(), set()
        ctx.body.line(f"EMBER_PROFILE_EVENT({i}, 0);")
        _emit_node(node, ctx, pool)
        ctx.body.line(f"EMBER_PROFILE_EVENT({i}, 1);")
        for v in node.outputs:
            if v is not None:
                region, off = ctx.plan.where(v)
                ctx.body.line(f"EMBER_CAPTURE_TENSOR({captured}, {region.value} + {off}, {v.type.nbytes}u);")
                captured += 1
        tables = ctx.tables.getvalue()
        pieces.append(_Piece(ctx.body.getvalue(), "" if tables == "\n" else tables, ctx.needs))
        needs |= ctx.needs
    ctx.needs = needs
    return pieces


@dataclass
class _Segment:
    """Consecutive nodes that one part of NAME.c computes; in a part after the first, function `fn` does."""

    part: int
    pieces: list[_Piece]
    fn: str = ""


def _segments(pieces: list[_Piece], max_parts: int) -> list[_Segment]:
    """The nodes in order, as segments of about equal weight dealt to at most `max_parts` parts in turn
    (ROUNDS each); as many parts as have MIN_PART_WEIGHT each, and one part (one segment) for a small model."""
    weights = [p.weight for p in pieces]
    total = sum(weights)
    parts = max(1, min(max_parts, total // MIN_PART_WEIGHT, len(pieces)))
    if parts == 1:
        return [_Segment(0, pieces)]
    count = min(parts * ROUNDS, len(pieces))
    cut: list[list[_Piece]] = [[] for _ in range(count)]
    done = 0
    for piece, w in zip(pieces, weights, strict=True):
        cut[min(count - 1, (done + w // 2) * count // total)].append(piece)  # where its midpoint falls
        done += w
    # Dealt from the last part: part 0 also holds the entry point and everything only it defines.
    segments = [_Segment((i + 1) % parts, c) for i, c in enumerate(cut) if c]
    # Parts left without a segment (a few heavy nodes) are no parts: number the rest 0, 1, ... again.
    renumber = {p: i for i, p in enumerate(sorted({0} | {s.part for s in segments}))}
    for s in segments:
        s.part = renumber[s.part]
    return segments


@contextmanager
def _only_in(w: CWriter, which: set[int], parts: int) -> Iterator[None]:
    """C that only the translation units of parts `which` compile (and NAME.c compiled whole)."""
    if len(which) == parts:
        yield
        return
    w.line("#if " + " || ".join(["!defined(EMBER_PART)", *(f"EMBER_PART == {p}" for p in sorted(which))]))
    yield
    w.line("#endif")


def _library(w: CWriter, needs: set[str], groups: list[list[_Piece]]) -> None:
    """The kernel blocks, each in the translation units of the parts that call it (or need what calls it)."""
    if len(groups) == 1:
        w.raw(library.assemble(needs))
        return
    lib = library.blocks()
    closures = [set(library.ordered({"ember_prelude"}.union(*(p.needs for p in g)))) for g in groups]
    for n in library.ordered(needs):
        with _only_in(w, {p for p, c in enumerate(closures) if n in c}, len(groups)):
            w.raw(lib[n].text.rstrip() + "\n")
        w.line()


def _body(pieces: list[_Piece]) -> str:
    return _indent("".join(piece.body for piece in pieces))


# "0xAB, " for every byte value: the text file is a table lookup and a reshape (ResNet-50's 100 MB of
# weights become 600 MB of text; a Python loop over the bytes took most of the compile time).
_HEX_CELLS = np.frombuffer(b"".join(f"0x{b:02X}, ".encode() for b in range(256)), np.uint8).reshape(256, 6)
# Text is made and written a block at a time (a multiple of the 16 bytes a line), so it is never held whole.
_TXT_BLOCK = 1 << 20


def write_weights_txt(plan: MemoryPlan, f: BinaryIO) -> None:
    """The constant region as a C array body, 16 bytes a line: `0xAB, 0xCD, ..., 0xEF,`."""
    if plan.constant_size == 0:
        f.write(b"0x00,\n")
        return
    block = bytearray()
    for piece in plan.constant_pieces():
        block += piece
        while len(block) >= _TXT_BLOCK:
            f.write(_hex_lines(memoryview(block)[:_TXT_BLOCK]))
            del block[:_TXT_BLOCK]
    if block:
        f.write(_hex_lines(memoryview(block)))


def _hex_lines(data: memoryview) -> memoryview:
    # np.take, not fancy indexing: three times faster on the 256-row table.
    cells = np.take(_HEX_CELLS, np.frombuffer(data, np.uint8), axis=0)
    flat = cells.reshape(-1)
    flat[95::96] = ord("\n")  # the last cell of each line of 16 ends it
    flat[-1] = ord("\n")
    return flat.data


# NAME.c cut into parts: compiled whole, the segments of the parts after the first are static functions
# the entry point calls; compiled as part p (-DEMBER_PART=p), they are hidden functions of the linked NAME.o.
_PARTS_LINKAGE = """#ifdef EMBER_PART
#define EMBER_PART_FN __attribute__((visibility("hidden")))
{decls}
#else
#define EMBER_PART_FN static
#endif
"""


def _segment_fn(fn: str) -> str:
    return f"EMBER_PART_FN void {fn}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations)"


def _source(graph: Graph, ctx: CodeContext, name: str, api: str, banner: str,
            io: list[IOEntry], plan: MemoryPlan, defines: dict[str, int], threads: int,
            pool: str | None, segments: list[_Segment]) -> str:
    parts = 1 + max(seg.part for seg in segments)
    groups = [[piece for seg in segments if seg.part == p for piece in seg.pieces] for p in range(parts)]
    called = [seg for seg in segments if seg.part > 0]
    w = CWriter()
    w.lines(banner)
    w.line("#include <stdint.h>")
    w.line("#include <stddef.h>")
    w.line(f'#include "{name}.h"')
    w.line()
    for macro, value in sorted(defines.items()):
        w.line(f"#define {macro} {int(value)}")
    if parts > 1:
        w.raw(_PARTS_LINKAGE.format(decls="\n".join(_segment_fn(seg.fn) + ";" for seg in called)))
    w.raw(_PROFILE_HOOKS)
    if pool is not None:
        w.line(f"#define EMBER_THREADS {threads}")
        ctx.need("ember_tp")
    _library(w, ctx.needs, groups)
    w.line()
    for p, group in enumerate(groups):
        with _only_in(w, {p}, parts):
            w.raw("".join(piece.tables for piece in group))
    if api == "dynamic":
        with _only_in(w, {0}, parts):
            _symbol_table(w, name, io, plan)
    w.line()
    for seg in called:
        with _only_in(w, {seg.part}, parts), w.block(_segment_fn(seg.fn)):
            w.line("(void)constantWeight;")
            w.line("(void)mutableWeight;")
            w.line("(void)activations;")
            w.raw(_body(seg.pieces))
        w.line()
    if pool is not None:
        w.raw(ctx.tasks.getvalue())
        with w.block(f"int {name}_set_threads(int n)"):
            w.line("return ember_tp_set_threads(n);")
        with w.block(f"void {name}_shutdown(void)"):
            w.line("ember_tp_shutdown();")
        w.line()
    with _only_in(w, {0}, parts), w.block(f"int {name}(uint8_t *constantWeight, uint8_t *mutableWeight, "
                                          "uint8_t *activations)"):
        if pool is not None:
            w.line(f"const int {pool} = ember_tp_enter(); /* threads this call uses; 0: alone */")
            w.line("(void)ember_tp_run; /* (where no node divides, nothing calls it) */")
        w.line("(void)constantWeight;")
        w.line("(void)mutableWeight;")
        w.line("(void)activations;")
        for seg in segments:
            if seg.part == 0:
                w.raw(_body(seg.pieces))
            else:
                w.line(f"{seg.fn}(constantWeight, mutableWeight, activations);")
        if pool is not None:
            w.line(f"ember_tp_leave({pool});")
        w.line("return 0;")
    return w.getvalue()


def _indent(text: str) -> str:
    return "\n".join(("    " + ln) if ln else ln for ln in text.splitlines())


def _symbol_table(w: CWriter, name: str, io: list[IOEntry], plan: MemoryPlan) -> None:
    w.line(f"static const SymbolTableEntry {name}_symbols[{max(len(io), 1)}] = {{")
    for e in io:
        w.line(f"    {{{c_string(e.name)}, {e.offset}u, {e.value.type.numel}u, 1}},")
    if not io:
        w.line('    {"", 0u, 0u, 0},')
    w.line("};")
    w.line(f"BundleConfig {name}_config = {{{plan.constant_size}u, {plan.mutable_size}u, "
           f"{plan.activations_size}u, 64u, {len(io)}u, {name}_symbols}};")


def _header(name: str, api: str, banner: str, ins: list[IOEntry], outs: list[IOEntry], plan: MemoryPlan,
            valid_counts: dict[str, tuple[str, int]], threads: int = 1,
            state: dict[str, tuple[str, int | float]] | None = None) -> str:
    up = name.upper()
    guard = f"EMBER_BUNDLE_{up}_H"
    w = CWriter()
    w.lines(banner)
    w.line(f"#ifndef {guard}")
    w.line(f"#define {guard}")
    w.line()
    w.line("#include <stdint.h>")
    w.line("#include <stddef.h>")
    w.line()
    w.line("// Placeholder address offsets within mutable buffer (bytes)")
    for e in ins + outs:
        w.line(f"#define {up}_{e.cname} {e.offset}")
    w.line()
    w.line("// Inputs and outputs: element type, shape, element count, bytes (beyond Glow's API)")
    for e in ins + outs:
        t = e.value.type
        p = f"{up}_{e.cname}"
        w.line(f"// {c_comment(e.name)}: {'input' if e in ins else 'output'} {t}")
        if e.name in valid_counts:
            count, axis = valid_counts[e.name]
            count_macro = next(f"{up}_{o.cname}" for o in outs if o.name == count)
            w.line(f"// Its size depends on the input values: these are its bounds; the int64 output at {count_macro}")
            w.line(f"// counts the valid entries along axis {axis} (the entries after them are zeros).")
        w.line(f"#define {p}_TYPE {t.dtype.ctype}")
        w.line(f'#define {p}_DTYPE "{t.dtype.short}"')
        w.line(f"#define {p}_NUM_DIMS {t.rank}")
        w.line(f"#define {p}_DIMS {{{', '.join(map(str, t.shape)) or '1'}}}")
        w.line(f"#define {p}_SIZE {t.numel}")
        w.line(f"#define {p}_BYTES {t.nbytes}")
        if t.quant is not None:
            w.line(f"#define {p}_SCALE {t.quant.scale[0]!r}f")
            w.line(f"#define {p}_ZERO_POINT {t.quant.zero_point[0]}")
    w.line()
    w.line(f"// Memory sizes (bytes). The constant region's bytes are {name}.weights.bin: read them into an array of")
    w.line(f"// {up}_CONSTANT_MEM_SIZE bytes aligned to {up}_MEM_ALIGN (fread, or the assembler's .incbin into flash),")
    w.line(f'// or initialise that array with #include "{name}.weights.txt" (written unless --no-weights-txt).')
    w.line(f"#define {up}_CONSTANT_MEM_SIZE {plan.constant_size}")
    w.line(f"#define {up}_MUTABLE_MEM_SIZE {plan.mutable_size}")
    w.line(f"#define {up}_ACTIVATIONS_MEM_SIZE {plan.activations_size}")
    w.line()
    w.line("// Memory alignment (bytes)")
    w.line(f"#define {up}_MEM_ALIGN 64")
    w.line()
    w.line("#ifndef GLOW_MEM_ALIGN")
    w.line("#define GLOW_MEM_ALIGN(size) __attribute__((aligned(size)))")
    w.line("#endif")
    w.line("#ifndef GLOW_GET_ADDR")
    w.line("#define GLOW_GET_ADDR(mutableBaseAddr, placeholderOff) "
           "(((uint8_t*)(mutableBaseAddr)) + placeholderOff)")
    w.line("#endif")
    w.line()
    w.line("#ifdef __cplusplus")
    w.line('extern "C" {')
    w.line("#endif")
    if api == "dynamic":
        w.lines(_DYNAMIC_TYPES)
        w.line(f"extern BundleConfig {name}_config;")
    w.line()
    w.line("// Bundle entry point (inference function); returns 0 on success. Re-entrant.")
    w.line(f"int {name}(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);")
    w.line()
    if threads > 1:
        w.lines(_THREADS_API.format(name=name, up=up, threads=threads))
        w.line()
    if state:
        _state_api(w, name, ins, outs, state)
    w.line("#ifdef __cplusplus")
    w.line("}")
    w.line("#endif")
    w.line(f"#endif // {guard}")
    return w.getvalue()


def _state_api(w: CWriter, name: str, ins: list[IOEntry], outs: list[IOEntry],
               state: dict[str, tuple[str, int | float]]) -> None:
    """--state io: two helpers over the recurrent state inputs and outputs (loops, no libc), so a streaming
    caller keeps its state in mutableWeight as Glow's and TFLite Micro's variables are kept."""
    up = name.upper()
    pairs = [(i, next(o for o in outs if o.name == state[i.name][0]), state[i.name][1]) for i in ins
             if i.name in state]
    w.line("// Recurrent state (--state io): the state inputs hold the state before a call, their outputs")
    w.line(f"// after it. {name}_reset_state: every state to its reset value (a new stream);")
    w.line(f"// {name}_carry_state: after a call, each state output onto its input (the next call goes on).")
    w.line(f"static inline void {name}_reset_state(uint8_t *mutableWeight) {{")
    for i, _, reset in pairs:
        ct, p = i.value.type.dtype.ctype, f"{up}_{i.cname}"
        w.line(f"    {{ {ct} *s = ({ct} *)(mutableWeight + {p}); size_t k;")
        w.line(f"      for (k = 0; k < {p}_SIZE; ++k) s[k] = ({ct})({reset}); }}")
    w.line("}")
    w.line(f"static inline void {name}_carry_state(uint8_t *mutableWeight) {{")
    for i, o, _ in pairs:
        w.line(f"    {{ const uint8_t *src = mutableWeight + {up}_{o.cname};")
        w.line(f"      uint8_t *dst = mutableWeight + {up}_{i.cname}; size_t k;")
        w.line(f"      for (k = 0; k < {up}_{i.cname}_BYTES; ++k) dst[k] = src[k]; }}")
    w.line("}")
    w.line()


_THREADS_API = """// Threads (--threads {threads}): large kernels run on up to {up}_THREADS threads of a pool of
// POSIX threads that the bundle starts on its first call, in static storage. Link with -pthread.
// {name}_set_threads(n): threads a call uses from now on, 1..{up}_THREADS (returns the number set); the
// results do not depend on it. {name}_shutdown(): joins the pool's threads (a later call starts them
// again). Re-entrant still: while one call uses the pool, another thread's call (on its own mutable and
// activation buffers) runs alone on its thread, with the same results.
#define {up}_THREADS {threads}
int {name}_set_threads(int n);
void {name}_shutdown(void);"""


_DYNAMIC_TYPES = """
#ifndef EMBER_GLOW_BUNDLE_TYPES
#define EMBER_GLOW_BUNDLE_TYPES
// Type describing a symbol table entry of a generated bundle.
typedef struct SymbolTableEntry {
  // Name of a variable.
  const char *name;
  // Offset of the variable inside the memory area.
  uint64_t offset;
  // The number of elements inside this variable.
  uint64_t size;
  // Variable kind: 1 if it is a mutable variable, 0 otherwise.
  char kind;
} SymbolTableEntry;

// Type describing the config of a generated bundle.
typedef struct BundleConfig {
  // Size of the constant weight variables memory area.
  uint64_t constantWeightVarsMemSize;
  // Size of the mutable weight variables memory area.
  uint64_t mutableWeightVarsMemSize;
  // Size of the activations memory area.
  uint64_t activationsMemSize;
  // Alignment to be used for weights and activations.
  uint64_t alignment;
  // Number of symbols in the symbol table.
  uint64_t numSymbols;
  // Symbol table.
  const SymbolTableEntry *symbolTable;
} BundleConfig;
#endif
"""


def network_name(stem: str) -> str:
    """The default network name from a model file's stem, made a valid one (see network_name_problem)."""
    s = sanitize(stem).strip("_")[:MAX_NAME_LENGTH - 8] or "net"
    if s[0].isdigit() or s.upper().startswith(("EMBER", "GLOW")):
        s = "net_" + s
    if s.endswith("_t") or network_name_problem(s):
        s += "_net"
    return s
