"""The lowering driver: model file -> IR -> passes -> memory plan -> C source.

One path for every build: a shipped bundle (api.write_bundle), the instrumented float build of
`ember profile` (runtime/profile.py) and the tests. What differs between them is only the pass list,
which passes/pipeline.py decides from the options, the purpose and the target.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ember.codegen.bundle import BundleSources, check_network_name, generate, network_name
from ember.codegen.cwriter import c_comment
from ember.config import CompileOptions
from ember.errors import ModelFormatError, OptionError
from ember.frontends.detect import model_format, neither
from ember.frontends.onnx.loader import InputSpec, LoadOptions, load_onnx
from ember.ir.dtypes import DType
from ember.ir.graph import Graph
from ember.limits import check_limits, check_memory
from ember.memory.plan import MemoryPlan
from ember.memory.planner import inlined_constants, plan_memory
from ember.ops.qlinear import MCU_QPB
from ember.passes.manager import PassManager
from ember.passes.pipeline import Pipeline, Purpose, build_pipeline
from ember.passes.verify import verify
from ember.ram_fit import fit_ram, ram_of
from ember.toolchain.cpus import resolve_cpu
from ember.toolchain.targets import Target, get_target
from ember.version import __version__


@dataclass
class Lowered:
    graph: Graph
    plan: MemoryPlan
    sources: BundleSources
    passes: PassManager
    model_sha: str
    seconds: dict[str, float]  # wall time of each phase: load, passes, plan, codegen


def parse_input_spec(name: str, text: str) -> InputSpec:
    """--input NAME:DTYPE:SHAPE's 'DTYPE:SHAPE' part (either may be empty)."""
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


def load_graph(model_path: str, options: CompileOptions) -> tuple[Graph, str]:
    """The model as IR (frontend only, no passes) and the model file's sha256. The format is detected by
    content: TFLite's flatbuffer identifier, else an ONNX protobuf."""
    if model_format(model_path) == "tflite":
        return _load_tflite(model_path, options)
    if options.state != "zero":
        raise OptionError("--state io: only TFLite models keep recurrent state in variable tensors (an ONNX "
                          "model's LSTM state already is an input and an output)")
    load_opts = LoadOptions(
        defines=dict(options.defines),
        inputs={k: parse_input_spec(k, v) for k, v in options.inputs.items()},
        consts=dict(options.consts),
    )
    name = options.name or network_name(Path(model_path).stem)
    # The file's hash is taken beside the loading (hashlib lets go of the GIL): 0.2 s for ResNet-50.
    with ThreadPoolExecutor(1, thread_name_prefix="ember-sha256") as pool:
        sha = pool.submit(_file_sha256, model_path)
        try:
            graph = load_onnx(model_path, load_opts, name)  # names a missing file or one that is no ONNX model
        except ModelFormatError as e:
            if "not a valid ONNX model" not in str(e):
                raise
            reason = str(e).partition("not a valid ONNX model")[2].strip().removeprefix("(").removesuffix(")")
            raise neither(model_path, reason) from None
        return graph, sha.result()


def _file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _load_tflite(model_path: str, options: CompileOptions) -> tuple[Graph, str]:
    from ember.frontends.tflite.loader import load_tflite, read_tflite  # the `tflite` reader only when needed

    if options.inputs or options.consts:
        raise OptionError("--input and --const are not supported for TFLite models yet (their shapes are static)")
    data = read_tflite(model_path)
    name = options.name or network_name(Path(model_path).stem)
    return (load_tflite(data, name, model_path, options.state == "io", options.tflite_rounding),
            hashlib.sha256(data).hexdigest())


def build_graph(model_path: str, options: CompileOptions, purpose: Purpose = Purpose.BUNDLE,
                target_kind: str = "host", check: bool = False,
                pipeline: Pipeline | None = None, int8_isa: str = "") -> tuple[Graph, PassManager, str]:
    """Load and optimize; returns the graph, the pass manager (timings) and the model sha256.

    `check` runs the IR verifier after every pass (tests do). `pipeline` replaces the passes that
    build_pipeline would choose (tests of single passes).
    """
    graph, sha = load_graph(model_path, options)
    if pipeline is None:
        pipeline = build_pipeline(options, purpose, target_kind, sha, int8_isa)
    pm = PassManager(list(pipeline), verify=verify if check else None)
    if check:
        verify(graph)
    pm.run(graph)
    return graph, pm, sha


def lower(model_path: str, options: CompileOptions, purpose: Purpose = Purpose.BUNDLE, target: Target | None = None,
          command: str = "", phase: Callable[[str], None] | None = None) -> Lowered:
    """Everything up to the C text: graph, memory plan and the bundle's sources, each checked against the
    limits of the C it becomes (names, counts as int, --max-memory and the target's address space).

    `target`: the one the bundle is for (default: the host). `command`: the command line that asked for
    the build, recorded in the sources' banner. `phase(label)` is told as each phase starts (a progress bar)."""
    target = target if target is not None else get_target("host")
    check_threads(options, target)
    say = phase if phase is not None else (lambda _label: None)
    t0 = time.perf_counter()
    say("loading and optimizing")
    graph, pm, sha = build_graph(model_path, options, purpose, target.kind, int8_isa=target.int8_isa)
    t1 = time.perf_counter()
    say("planning memory")
    check_network_name(graph.name)
    check_limits(graph)
    plan = plan_memory(graph, inlined_constants(graph), options.reuse_inputs)
    if options.ram_limit is not None and ram_of(plan) > options.ram_limit and purpose is Purpose.BUNDLE:
        fitted = fit_ram(lambda: load_graph(model_path, options)[0],
                         build_pipeline(options, purpose, target.kind, sha, target.int8_isa), options, plan, graph)
        if fitted is not None:
            graph, plan = fitted
    check_memory(plan, target, options)
    t2 = time.perf_counter()
    say("generating C")
    cpu = resolve_cpu(target.name, options.cpu, options.cpu_params)
    defines = cpu.family.c_defines() if cpu is not None else {}
    if target.kind == "mcu":  # the block passes/scratch_budget.py sized the integer products' scratch for
        defines["EMBER_QPB"] = MCU_QPB
    sources = generate(graph, plan, graph.name, options.api, _banner(graph.name, sha, command), defines or None,
                       options.threads,
                       C_PARTS if target.kind in C_PARTS_TARGET_KINDS else 1)
    t3 = time.perf_counter()
    passes = sum(r.seconds for r in pm.records)
    seconds = {"load": t1 - t0 - passes, "passes": passes, "plan": t2 - t1, "codegen": t3 - t2}
    return Lowered(graph, plan, sources, pm, sha, seconds)


# A big model's NAME.c is cut into this many translation units, compiled at once and linked into one NAME.o
# (codegen/bundle.py says what is big): the C compiler was most of ResNet-50's compile time. Not for
# microcontrollers and wasm, whose flash would hold the kernels the parts share twice. A constant, not the
# machine's core count, so that NAME.c is the same wherever it is generated.
C_PARTS = 2
C_PARTS_TARGET_KINDS = ("host", "linux")

# Kinds of target (targets.py) whose bundles run under an OS with POSIX threads.
THREAD_TARGET_KINDS = ("host", "linux")


def check_threads(options: CompileOptions, target: Target) -> None:
    if options.threads > 1 and target.kind not in THREAD_TARGET_KINDS:
        what = {"mcu": "a microcontroller", "wasm": "a WebAssembly"}.get(target.kind, f"a {target.kind}")
        raise OptionError(f"--threads {options.threads}: target '{target.name}' is {what} target; multi-threaded "
                          "bundles need POSIX threads (host and Linux targets)")


def _banner(name: str, sha: str, command: str) -> str:
    lines = [f"/* {name}: generated by ember {__version__}; do not edit.", f" * model sha256 {sha}"]
    if command:
        lines.append(f" * command: {c_comment(command)}")
    return "\n".join(lines) + " */"
