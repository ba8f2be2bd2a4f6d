"""compile(): frontend -> passes -> memory planning -> code generation -> toolchain."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ember import __version__
from ember.codegen.bundle import check_network_name, generate, network_name
from ember.config import MAX_DIM, CompileOptions
from ember.errors import OptionError, ResourceLimitError, ShapeError
from ember.frontends.onnx.loader import InputSpec, LoadOptions, load_onnx, read_model
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node
from ember.ir.verify import verify
from ember.memory.planner import MemoryPlan, plan_memory
from ember.ops import registry
from ember.passes.conv_algorithms import choose_conv_algorithms
from ember.passes.int8_layout import choose_int8_layout
from ember.passes.manager import PassFn, PassManager
from ember.passes.pipeline import DEFAULT_PIPELINE
from ember.report.flops import graph_flops
from ember.runtime.loader import Bundle, load
from ember.toolchain.cc import compile_object
from ember.toolchain.objfile import ObjectInfo, check_freestanding, inspect_object
from ember.toolchain.targets import Target, get_target

DEFAULT_HOST_MAX_MEMORY = 4 << 30


def parse_input_spec(name: str, text: str) -> InputSpec:
    dtype_s, _, shape_s = text.partition(":")
    try:
        dtype = DType.parse(dtype_s) if dtype_s else None
    except KeyError as e:
        raise OptionError(f"--input {name}: {str(e).strip(chr(39))}") from None
    s = shape_s.strip().strip("[]()")
    try:
        shape = tuple(int(d) for d in s.replace("x", ",").split(",") if d.strip()) if s else ()
    except ValueError:
        raise OptionError(f"--input {name}:{text}: shape must be integers like 1x3x224x224") from None
    if any(d <= 0 for d in shape):
        raise OptionError(f"--input {name}:{text}: dimensions must be positive")
    return InputSpec(dtype, shape)


def build_graph(model_path: str, options: CompileOptions, check: bool = False,
                pipeline: list[tuple[str, PassFn]] | None = None) -> tuple[Graph, PassManager, str]:
    """Load, optimize; returns the graph, the pass manager (timings) and the model sha256.

    `check` runs the IR verifier after every pass (tests do). `pipeline` replaces the passes (default:
    DEFAULT_PIPELINE, or the quantizing one of ember/quant when the options ask for quantization).
    """
    model = read_model(model_path)
    sha = hashlib.sha256(Path(model_path).read_bytes()).hexdigest()
    load_opts = LoadOptions(
        defines=dict(options.defines),
        inputs={k: parse_input_spec(k, v) for k, v in options.inputs.items()},
    )
    name = options.name or network_name(Path(model_path).stem)
    graph = load_onnx(model, load_opts, name)
    if pipeline is None and (options.quantize or options.weights):
        from ember.quant.pipeline import compile_pipeline

        pipeline = compile_pipeline(options, sha)
    pm = PassManager(list(DEFAULT_PIPELINE if pipeline is None else pipeline), verify=verify if check else None)
    if check:
        verify(graph)
    pm.run(graph)
    return graph, pm, sha


def inlined_constants(graph: Graph) -> set[int]:
    """Constants that need storage: all except scalars read only by elementwise expressions."""
    needs: set[int] = set()
    for n in graph.nodes:
        op = registry.get(n.op)
        elementwise = op.expr is not None or n.op == "FusedElementwise"
        for v in n.inputs:
            if v is not None and v.is_const and not (elementwise and v.type.numel == 1):
                needs.add(id(v))
    return needs


def compile(model: str | os.PathLike, out_dir: str | os.PathLike, **options: Any) -> Bundle:  # noqa: A001
    """Compile an ONNX model into a bundle in `out_dir`; returns it loaded (runnable for the host target)."""
    opts = CompileOptions(**options)
    manifest = write_bundle(str(model), out_dir, opts)
    return load(out_dir, manifest["name"])


def write_bundle(model_path: str, out: str | os.PathLike, opts: CompileOptions, command: str = "") -> dict[str, Any]:
    """Build every bundle file in a temporary folder inside `out`, then rename them into place.

    Only the files of this bundle are ever written or replaced: NAME.c/.h/.o/.weights.bin/.weights.txt/.json
    and the runtime's NAME.<hash>.so. A directory that already holds a file of those names which is not
    part of an ember bundle of the same name (recognised by its NAME.json) is refused, not overwritten."""
    if not str(out):
        raise OptionError("-o/--output: the output directory must not be empty")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OptionError(f"{out}: exists and is not a directory")
    if opts.dump_graph is not None:
        _check_writable_file(opts.dump_graph, "--dump-graph")
    target = get_target(opts.target)
    abi = target.float_abi(opts.float_abi)
    if opts.sanitize and target.kind != "host":
        raise OptionError(f"sanitizers apply to host bundles, not target '{target.name}'")
    # Files already there that are not this bundle's: refused before the slow part (again once it is named).
    _claim(out, opts.name or network_name(Path(model_path).stem))
    graph, pm, sha = build_graph(model_path, opts)
    if target.kind in ("host", "linux") and opts.opt_level >= 2:
        # Winograd trades 16/9 the weight bytes for speed: only where memory is not the constraint.
        PassManager([("choose_conv_algorithms", choose_conv_algorithms),
                     ("choose_int8_layout", choose_int8_layout)], pm.records).run(graph)
    name = graph.name
    check_network_name(name)
    check_limits(graph)
    plan = plan_memory(graph, inlined_constants(graph))
    check_memory(plan, target, opts)
    previous = _claim(out, name)
    banner = _banner(name, sha, command)
    src = generate(graph, plan, name, opts.api, banner)
    created = _make_dirs(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".ember-{name}-", dir=out))
    try:
        (tmp / f"{name}.c").write_text(src.c)
        (tmp / f"{name}.h").write_text(src.h)
        (tmp / f"{name}.weights.bin").write_bytes(src.weights)
        (tmp / f"{name}.weights.txt").write_bytes(src.weights_txt)
        obj = tmp / f"{name}.o"
        cc_cmd = compile_object(tmp / f"{name}.c", obj, target, abi, opts.opt_level, opts.reloc or target.reloc,
                                opts.cc, opts.cpu)
        info = inspect_object(obj)
        check_freestanding(info, f"{name}.o", target.name, allow_double=_uses_float64(graph))
        # Recorded with the paths the files will have, not the temporary folder's.
        cc_cmd = [a.replace(str(tmp), str(out)) for a in cc_cmd]
        manifest = _manifest(graph, plan, src, opts, sha, cc_cmd, pm)
        manifest["target_info"] = _target_info(target, opts)
        manifest["footprint"] = _footprint(info, plan)
        (tmp / f"{name}.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if opts.dump_graph:
            from ember.report.graph_dot import write_dot

            write_dot(graph, opts.dump_graph)
        _replace_bundle(tmp, out, name, previous)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if created is not None:
            _remove_empty_dirs(out, created)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return manifest


# The files of a bundle named NAME; the runtime adds NAME.<12 hex digits>.so, its linked library.
BUNDLE_SUFFIXES = (".c", ".h", ".o", ".weights.bin", ".weights.txt", ".json")
_LIBRARY = re.compile(r"\.[0-9a-f]{12}\.so")


def bundle_files(out: Path, name: str) -> list[Path]:
    """The files of bundle `name` present in `out` (its own, by name: nothing else there)."""
    if not out.is_dir():
        return []
    found = [out / f"{name}{s}" for s in BUNDLE_SUFFIXES if (out / f"{name}{s}").exists()]
    found += sorted(f for f in out.glob(f"{name}.*.so") if _LIBRARY.fullmatch(f.name[len(name):]))
    return found


def is_own_manifest(path: Path, name: str) -> bool:
    """Whether `path` is the NAME.json of an ember bundle named `name`."""
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(m, dict) and m.get("name") == name and "ember_version" in m


def _claim(out: Path, name: str) -> list[Path]:
    """The files of a previous bundle `name` in `out` that this build replaces; refuses anyone else's."""
    existing = bundle_files(out, name)
    if not existing:
        return []
    if not is_own_manifest(out / f"{name}.json", name):
        raise OptionError(f"{existing[0]}: already exists and is not part of an ember bundle named '{name}' "
                          f"(no {name}.json of one); choose another --name or output directory")
    for f in existing:
        if not f.is_file() or f.is_symlink():
            raise OptionError(f"{f}: not a regular file; ember will not replace it")
    return existing


def _replace_bundle(tmp: Path, out: Path, name: str, previous: list[Path]) -> None:
    """Rename the new files over the old bundle's (one rename each), NAME.json last; then drop the old
    bundle's linked libraries, which were linked from the old NAME.o."""
    new = sorted(tmp.iterdir(), key=lambda f: f.name == f"{name}.json")
    for f in new:
        os.replace(f, out / f.name)
    for f in previous:
        if f.name not in {g.name for g in new} and f.exists():
            f.unlink()


def _make_dirs(out: Path) -> Path | None:
    """Create `out` (and missing parents); returns the topmost folder created, or None if `out` existed."""
    top = None
    for d in (out, *out.parents):
        if d.exists():
            break
        top = d
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OptionError(f"{out}: cannot create the output directory ({e.strerror})") from None
    return top


def _remove_empty_dirs(out: Path, top: Path) -> None:
    """Undo _make_dirs after a failed build: remove the folders it created, if still empty."""
    d = out
    while True:
        try:
            d.rmdir()
        except OSError:
            return
        if d == top:
            return
        d = d.parent


def _check_writable_file(path: str, flag: str) -> None:
    p = Path(path)
    if not path or p.is_dir():
        raise OptionError(f"{flag} {path!r}: expected a file path")
    if not p.parent.is_dir():
        raise OptionError(f"{flag} {path}: no such directory {p.parent}")


def check_limits(graph: Graph) -> None:
    """Every dimension and element count fits the C int the kernels take them as."""
    values = {id(v): v for v in [*graph.inputs, *(v for n in graph.nodes for v in (*n.inputs, *n.outputs))]
              if v is not None}
    for v in values.values():
        t = v.type
        big = [d for d in t.shape if d > MAX_DIM]
        if big or t.numel > MAX_DIM:
            what = f"dimension {big[0]:,}" if big else f"{t.numel:,} elements"
            raise ShapeError(f"tensor '{v.name}' {t}: {what}; ember's C takes counts as int (at most {MAX_DIM:,})")


def check_memory(plan: MemoryPlan, target: Target, opts: CompileOptions) -> None:
    """The three regions together within --max-memory (default 4 GiB on the host) and the address space."""
    space = 2**target.pointer_bits - 1
    limit = min(opts.max_memory or (DEFAULT_HOST_MAX_MEMORY if target.kind == "host" else space), space)
    total = plan.constant_size + plan.mutable_size + plan.activations_size
    if total > limit:
        hint = "raise --max-memory to allow it" if limit < space else f"the {target.name} address space"
        raise ResourceLimitError(
            f"the bundle needs {total:,} bytes (constant {plan.constant_size:,} + mutable {plan.mutable_size:,} + "
            f"activations {plan.activations_size:,}), more than the limit of {limit:,} ({hint})")


def _op_label(node: Node) -> str:
    """Fused nodes are profiled under what they do: Conv+Relu, Fused(Add+Relu)."""
    if node.op == "FusedElementwise":
        return "Fused(" + "+".join(step.op for step in node.attrs["_steps"]) + ")"
    act = node.attrs.get("_act")
    return f"{node.op}+{act['op']}" if act else node.op


def _uses_float64(graph: Graph) -> bool:
    values = [*graph.inputs, *(v for n in graph.nodes for v in (*n.inputs, *n.outputs) if v is not None)]
    return any(v.type.dtype == DType.FLOAT64 for v in values)


def _target_info(target: Target, opts: CompileOptions) -> dict[str, Any]:
    abi = target.float_abi(opts.float_abi)
    return {"name": target.name, "description": target.description, "cpu": opts.cpu or target.cpu,
            "float_abi": opts.float_abi or target.default_float_abi, "fpu": abi.fpu,
            "reloc": opts.reloc or target.reloc, "pointer_bits": target.pointer_bits, "endian": target.endian,
            "compiler": "cc" if opts.cc else ("system cc" if target.zig_arch is None else "zig cc")}


def _footprint(info: ObjectInfo, plan: MemoryPlan) -> dict[str, Any]:
    """What the bundle costs a device: flash = NAME.o's code and tables + the constant weights;
    RAM = the mutable and activation regions (+ any writable data of NAME.o, normally none)."""
    return {"code": info.code, "rodata": info.rodata, "data": info.data, "bss": info.bss,
            "flash": info.flash + plan.constant_size, "ram": info.ram + plan.mutable_size + plan.activations_size,
            "undefined_symbols": list(info.undefined)}


def _banner(name: str, sha: str, command: str) -> str:
    from ember.codegen.cwriter import c_comment

    lines = [f"/* {name}: generated by ember {__version__}; do not edit.", f" * model sha256 {sha}"]
    if command:
        lines.append(f" * command: {c_comment(command)}")
    return "\n".join(lines) + " */"


def _manifest(graph: Graph, plan: MemoryPlan, src, opts: CompileOptions, sha: str, cc_cmd: list[str],
              pm: PassManager) -> dict[str, Any]:
    def entry(e) -> dict[str, Any]:
        t = e.value.type
        q = None
        if t.quant is not None:
            q = {"scale": list(t.quant.scale), "zero_point": list(t.quant.zero_point), "axis": t.quant.axis}
        return {"name": e.name, "c_name": e.cname, "dtype": t.dtype.short, "shape": list(t.shape),
                "offset": e.offset, "bytes": t.nbytes, "quantization": q}

    n_in = len(graph.inputs)
    return {
        "name": graph.name,
        "ember_version": __version__,
        "model_sha256": sha,
        "target": opts.target,
        "options": opts.to_json(),
        "compiler": cc_cmd,
        "inputs": [entry(e) for e in src.io[:n_in]],
        "outputs": [entry(e) for e in src.io[n_in:]],
        "memory": {
            "constant": plan.constant_size,
            "mutable": plan.mutable_size,
            "activations": plan.activations_size,
            "activations_lower_bound": plan.lower_bound,
            "alignment": 64,
        },
        "ops": graph.op_counts(),
        "nodes": [{"name": n.name, "op": _op_label(n)} for n in graph.nodes],  # index = profile event id
        "flops": graph_flops(graph),
        "passes": [{"name": r.name, "seconds": round(r.seconds, 6), "nodes": r.nodes_after} for r in pm.records],
    }
