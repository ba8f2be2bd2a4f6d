"""compile(): the lowering driver (frontend -> passes -> memory plan -> C), then the toolchain and the bundle files."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ember.codegen.bundle import network_name, write_weights_txt
from ember.config import CompileOptions
from ember.driver import lower
from ember.errors import OptionError
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Node
from ember.memory.plan import MemoryPlan
from ember.ops.epilogue import epilogue_of
from ember.ops.parallel import PARTS_ATTR
from ember.output import check_writable_file, claim, make_dirs, remove_empty_dirs, replace_bundle
from ember.passes.choice_file import choice_path, context_key
from ember.passes.conv_algorithms import CHOICE_ATTR, AlgorithmChoice
from ember.passes.manager import PassManager
from ember.passes.pipeline import Purpose
from ember.report.flops import graph_flops
from ember.report.record import graph_record, memory_record
from ember.runtime.loader import Bundle, load
from ember.toolchain.cc import compile_object
from ember.toolchain.cpus import resolve_cpu
from ember.toolchain.objfile import ObjectInfo, check_freestanding, inspect_object
from ember.toolchain.targets import Target, get_target
from ember.tune import check_tune, tune
from ember.version import __version__


def compile(model: Any, out_dir: str | os.PathLike, example_inputs: Any = None,  # noqa: A001
            representative_data: Any = None, **options: Any) -> Bundle:
    """Compile a model into a bundle in `out_dir`; returns it loaded (runnable for the host target).

    `model`: a model file's path, an `onnx.ModelProto`, a `torch.nn.Module` with `example_inputs` (a
    tensor or a tuple of them: exported through torch.onnx, which fixes the input shapes), or a Keras model
    or SavedModel directory (converted by TFLiteConverter; full-integer int8 with `representative_data`, an
    iterable of input lists)."""
    from ember.model_source import is_saved_model_dir, saved_model

    if isinstance(model, str | os.PathLike) and not is_saved_model_dir(model):
        if representative_data is not None:
            raise OptionError("representative_data: only for a Keras model or a SavedModel directory")
        if example_inputs is not None:
            raise OptionError("example_inputs: only for a torch.nn.Module (a model file has its own shapes)")
        manifest = write_bundle(os.fspath(model), out_dir, CompileOptions(**options))
        return load(out_dir, manifest["name"])
    with saved_model(model, example_inputs, representative_data) as (path, name):
        options.setdefault("name", name)
        manifest = write_bundle(str(path), out_dir, CompileOptions(**options))
    return load(out_dir, manifest["name"])


COMPILE_PHASES = 4  # what write_bundle tells `phase`: loading and optimizing, planning, C, the C compiler


def write_bundle(model_path: str, out: str | os.PathLike, opts: CompileOptions, command: str = "",
                 phase: Callable[[str], None] | None = None) -> dict[str, Any]:
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
        check_writable_file(opts.dump_graph, "--dump-graph")
    target = get_target(opts.target)
    abi = target.float_abi(opts.float_abi)
    if opts.sanitize and target.kind != "host":
        raise OptionError(f"sanitizers apply to host bundles, not target '{target.name}'")
    # Files already there that are not this bundle's: refused before the slow part (again once it is named).
    claim(out, opts.name or network_name(Path(model_path).stem))
    tuning = None
    if opts.tune:
        check_tune(opts, target)
        if phase is not None:
            phase("tuning: timing candidate kernels")
        tuning = tune(model_path, opts, lambda m, folder, o: write_bundle(m, folder, o))
    lowered = lower(model_path, opts, Purpose.BUNDLE, target, command, phase)
    seconds = dict(lowered.seconds)
    if tuning is not None:
        seconds["tune"] = tuning["seconds"]
    graph, plan, src, pm, sha = lowered.graph, lowered.plan, lowered.sources, lowered.passes, lowered.model_sha
    name = graph.name
    previous = claim(out, name)
    created = make_dirs(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".ember-{name}-", dir=out))
    try:
        (tmp / f"{name}.c").write_text(src.c)
        (tmp / f"{name}.h").write_text(src.h)
        # The weight files are written while the C compiler runs (it is another process, another core).
        if phase is not None:
            phase("compiling C, writing weights")
        writer = _WeightWriter(tmp, name, plan, opts.weights_txt)
        writer.start()
        t0 = time.perf_counter()
        obj = tmp / f"{name}.o"
        try:
            cc_cmd = compile_object(tmp / f"{name}.c", obj, target, abi, opts.opt_level,
                                    opts.reloc or target.reloc, opts.cc, opts.cpu,
                                    parts=src.parts if _usable_cores() >= 2 else 1)
            seconds["cc"] = time.perf_counter() - t0
        finally:
            writer.join()
        seconds["write"] = writer.result()
        info = inspect_object(obj)
        check_freestanding(info, f"{name}.o", target.name, allow_double=_uses_float64(graph),
                           threads=opts.threads > 1)
        # Recorded with the paths the files will have, not the temporary folder's.
        cc_cmd = [a.replace(str(tmp), str(out)) for a in cc_cmd]
        manifest = _manifest(graph, plan, src, opts, sha, cc_cmd, pm)
        manifest["target_info"] = _target_info(target, opts)
        if opts.tune or opts.tune_file:
            manifest["tuning"] = tuning or {"file": str(choice_path(opts)), "context": context_key(opts)}
        manifest["footprint"] = _footprint(info, plan)
        manifest["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
        (tmp / f"{name}.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if opts.dump_graph:
            from ember.report.graph_dot import write_dot

            write_dot(graph, opts.dump_graph)
        replace_bundle(tmp, out, name, previous)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if created is not None:
            remove_empty_dirs(out, created)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _usable_cores() -> int:
    """Cores this process may run on. NAME.c's parts (driver.C_PARTS) are compiled at once only where two
    cores can take them; on one core the whole file, the same C as one translation unit, costs less."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


class _WeightWriter(threading.Thread):
    """NAME.weights.bin (and .txt) from the plan's constants, in a thread beside the C compiler."""

    def __init__(self, folder: Path, name: str, plan: MemoryPlan, txt: bool) -> None:
        super().__init__(name="ember-weights", daemon=True)
        self.folder, self.bundle, self.plan, self.txt = folder, name, plan, txt
        self.seconds = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        t0 = time.perf_counter()
        try:
            with open(self.folder / f"{self.bundle}.weights.bin", "wb") as f:
                self.plan.write_constants(f)
            if self.txt:
                with open(self.folder / f"{self.bundle}.weights.txt", "wb") as f:
                    write_weights_txt(self.plan, f)
        except BaseException as e:  # noqa: BLE001 - re-raised in the compiling thread by result()
            self.error = e
        self.seconds = time.perf_counter() - t0

    def result(self) -> float:
        if self.error is not None:
            if isinstance(self.error, OSError):
                raise OptionError(f"{self.folder}: cannot write the weights ({self.error.strerror})") from None
            raise self.error
        return self.seconds


def _op_label(node: Node) -> str:
    """Fused nodes are profiled under what they do: Conv+Relu, Fused(Add+Relu)."""
    if node.op == "FusedElementwise":
        return "Fused(" + "+".join(step.op for step in node.attrs["_steps"]) + ")"
    act = epilogue_of(node)
    return f"{node.op}+{act.kind}" if act else node.op


def _uses_float64(graph: Graph) -> bool:
    values = [*graph.inputs, *(v for n in graph.walk() for v in (*n.inputs, *n.outputs) if v is not None)]
    return any(v.type.dtype == DType.FLOAT64 for v in values)


def _target_info(target: Target, opts: CompileOptions) -> dict[str, Any]:
    abi = target.float_abi(opts.float_abi)
    cpu = resolve_cpu(target.name, opts.cpu, opts.cpu_params)
    return {"name": target.name, "description": target.description, "cpu": opts.cpu or target.cpu,
            "cpu_choice": cpu.record() if cpu is not None else None,
            "float_abi": opts.float_abi or target.default_float_abi, "fpu": abi.fpu,
            "reloc": opts.reloc or target.reloc, "pointer_bits": target.pointer_bits, "endian": target.endian,
            "compiler": "cc" if opts.cc else ("system cc" if target.zig_arch is None else "zig cc")}


def _footprint(info: ObjectInfo, plan: MemoryPlan) -> dict[str, Any]:
    """What the bundle costs a device: flash = NAME.o's code and tables + the constant weights;
    RAM = the mutable and activation regions (+ any writable data of NAME.o, normally none)."""
    return {"code": info.code, "rodata": info.rodata, "data": info.data, "bss": info.bss,
            "flash": info.flash + plan.constant_size, "ram": info.ram + plan.mutable_size + plan.activations_size,
            "undefined_symbols": list(info.undefined)}


def _weights_record(graph: Graph, opts: CompileOptions) -> dict[str, Any]:
    """How the constants are stored: `format` is the --weights type (float16/bfloat16/int8 compression of a
    float bundle) or else the element type holding most constant bytes (float32, int8 for a quantized model);
    `bytes` per element type (bfloat16 is held as uint16 bits)."""
    by_dtype: dict[str, int] = {}
    seen: set[int] = set()
    for n in graph.walk():
        for v in n.inputs:
            if v is not None and v.is_const and id(v) not in seen:
                seen.add(id(v))
                by_dtype[v.type.dtype.short] = by_dtype.get(v.type.dtype.short, 0) + v.type.nbytes
    dominant = max(by_dtype, key=lambda k: by_dtype[k]) if by_dtype else "f32"
    compressed = {"fp16": "float16", "bf16": "bfloat16", "int8": "int8"}.get(opts.weights or "")
    return {"format": compressed or dominant, "bytes": dict(sorted(by_dtype.items()))}


def _manifest(graph: Graph, plan: MemoryPlan, src, opts: CompileOptions, sha: str, cc_cmd: list[str],
              pm: PassManager) -> dict[str, Any]:
    def entry(e) -> dict[str, Any]:
        t = e.value.type
        q = None
        if t.quant is not None:
            q = {"scale": list(t.quant.scale), "zero_point": list(t.quant.zero_point), "axis": t.quant.axis}
        counted = graph.valid_counts.get(e.name)
        valid = None if counted is None else {"count": counted[0], "axis": counted[1]}
        layout = {"layout": graph.layouts[e.name]} if e.name in graph.layouts else {}  # TFLite: NHWC images
        return {"name": e.name, "c_name": e.cname, "dtype": t.dtype.short, "shape": list(t.shape),
                "offset": e.offset, "bytes": t.nbytes, "quantization": q, "valid_count": valid, **layout}

    n_in = len(graph.inputs)
    return {
        "name": graph.name,
        "ember_version": __version__,
        "model_sha256": sha,
        "target": opts.target,
        "options": opts.to_json(),
        "compiler": cc_cmd,
        # Translation units in NAME.c (compiled each with -DEMBER_PART=p, the command above part 0's, then
        # linked with `cc -r` into NAME.o); 1: NAME.c compiled as it is.
        "c_parts": src.parts,
        "inputs": [entry(e) for e in src.io[:n_in]],
        "outputs": [entry(e) for e in src.io[n_in:]],
        # Sequence inputs/outputs (frontends/onnx/sequence.py): model name -> its elements' input/output names.
        "sequences": {"inputs": graph.sequence_inputs, "outputs": graph.sequence_outputs},
        # --state io: each recurrent state input, the output to copy onto it before the next call, its reset value.
        "state": [{"input": i, "output": o, "reset": r} for i, (o, r) in graph.state_outputs.items()],
        "weights": _weights_record(graph, opts),
        "memory": {
            "constant": plan.constant_size,
            "mutable": plan.mutable_size,
            "activations": plan.activations_size,
            "activations_lower_bound": plan.lower_bound,
            "alignment": 64,
        },
        # --threads: the pool's size, the nodes divided among its threads, and what linking needs.
        "threads": {"max": opts.threads, "divided": sum(1 for n in graph.nodes if n.attrs.get(PARTS_ATTR, 1) > 1),
                    "link_flags": ["-pthread"] if opts.threads > 1 else []},
        "ops": graph.op_counts(),
        "nodes": [{"name": n.name, "op": _op_label(n)} for n in graph.nodes],  # index = profile event id
        # Each float Conv/MatMul's algorithm, its layer key, and whether a choice file or the thresholds chose it.
        "algorithms": [{"node": n.name, "key": c.key, "choice": c.choice, "source": c.source,
                        "candidates": list(c.candidates)} for n in graph.nodes
                       if isinstance(c := n.attrs.get(CHOICE_ATTR), AlgorithmChoice)],
        "flops": graph_flops(graph),
        # Random ops the model gave no seed (ember/ops/random.py): the seed each was given at compile time.
        "drawn_seeds": {n.name: n.attrs["seed"] for n in graph.walk() if n.attrs.get("seed_drawn")},
        "graph": graph_record(graph),  # for `ember report` (ember/report/record.py)
        "memory_plan": memory_record(plan),
        "passes": [{"name": r.name, "seconds": round(r.seconds, 6), "nodes": r.nodes_after} for r in pm.records],
    }
