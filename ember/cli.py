"""The `ember` command: argparse subcommands over ember.api; user mistakes are one line and exit 1."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ember.config import CompileOptions, parse_consts, parse_defines, parse_inputs, parse_size
from ember.errors import EmberError, OptionError
from ember.output import check_writable_file
from ember.toolchain.targets import TARGETS
from ember.validate import defaults_text
from ember.version import __version__


def _compile(args: argparse.Namespace) -> int:
    from ember.api import COMPILE_PHASES, write_bundle
    from ember.model_source import is_saved_model_dir, saved_model
    from ember.progress import Progress

    opts = CompileOptions(
        name=args.name, target=args.target, cpu=args.cpu, cpu_params=tuple(args.cpu_param), float_abi=args.float_abi,
        reloc=args.reloc, cc=args.cc,
        api=args.api, defines=parse_defines(args.define),
        inputs=parse_inputs(args.input), consts=parse_consts(args.const), dump_graph=args.dump_graph,
        opt_level=args.opt_level,
        quantize=args.quantize, profile=args.profile, schema=args.schema, precision=args.precision, bias=args.bias,
        per_channel=args.per_channel, calibration=args.calibration, percentile=args.percentile,
        keep_float=tuple(op.strip() for op in ",".join(args.keep_float).split(",") if op.strip()), io=args.io,
        weights=args.weights, max_memory=parse_size(args.max_memory) if args.max_memory else None,
        ram_limit=parse_size(args.ram_limit, "--ram-limit") if args.ram_limit else None,
        weights_txt=not args.no_weights_txt, threads=args.threads, state=args.state,
        reuse_inputs=args.reuse_inputs, tune=args.tune, tune_file=args.tune_file, tflite_rounding=args.tflite_rounding,
    )
    command = "ember " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if args.report:
        check_writable_file(args.report, "--report")
    t0 = time.perf_counter()
    bar = Progress(COMPILE_PHASES + int(args.tune), "compiling", "phase")
    try:
        if is_saved_model_dir(args.model):  # converted to a temporary .tflite by TFLiteConverter (ember[tf])
            with saved_model(args.model, None) as (path, name):
                if opts.name is None:
                    opts = dataclasses.replace(opts, name=name)
                m = write_bundle(str(path), args.output, opts, command, bar.step)
        else:
            m = write_bundle(args.model, args.output, opts, command, bar.step)
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    mem = m["memory"]
    ratio = mem["activations"] / mem["activations_lower_bound"] if mem["activations_lower_bound"] else 1.0
    print(f"bundle {m['name']} -> {args.output} (target {m['target']})")
    print(f"  constant weights : {mem['constant']:>12,} bytes")
    print(f"  mutable (in/out) : {mem['mutable']:>12,} bytes")
    print(f"  activations      : {mem['activations']:>12,} bytes "
          f"(lower bound {mem['activations_lower_bound']:,}, ratio {ratio:.3f})")
    fp = m["footprint"]
    print(f"  code + tables    : {fp['code'] + fp['rodata'] + fp['data']:>12,} bytes ({m['name']}.o)")
    print(f"  flash            : {fp['flash']:>12,} bytes (code + tables + constant weights)")
    print(f"  RAM              : {fp['ram']:>12,} bytes (mutable + activations)")
    secs = m["seconds"]
    phases = ", ".join(f"{k} {v:.2f}" for k, v in secs.items())
    print(f"  compiled in      : {wall:>12.2f} s ({phases}; weights written while cc ran)")
    if "tuning" in m:
        t, tuned = m["tuning"], sum(a["source"] == "tuned" for a in m["algorithms"])
        timed = (f"timed {t['timed_shapes']} new shape(s) in {t['candidate_sets']} candidate build(s), "
                 f"{t['seconds']:.1f} s; " if "seconds" in t else "")
        print(f"  tuned            : {timed}{tuned} of {len(m['algorithms'])} layer(s) from {t['file']}")
    if m.get("state"):
        names = ", ".join(f"{s['input']} <- {s['output']}" for s in m["state"])
        print(f"  recurrent state  : {names} (carried by the caller: {m['name']}_carry_state in {m['name']}.h)")
    if opts.quantize:
        ops = m["ops"]
        print(f"  quantized        : {opts.quantize}/{opts.precision}, schema {opts.schema}, calibration "
              f"{opts.calibration}; QuantizeLinear x{ops.get('QuantizeLinear', 0)}, "
              f"DequantizeLinear x{ops.get('DequantizeLinear', 0)} left after folding")
    if args.report:
        from ember.report.html import write_report

        write_report(m, args.report)
        print(f"wrote {args.report}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from ember.report.html import write_report
    from ember.runtime.loader import find_manifest, read_manifest

    path = find_manifest(Path(args.bundle))
    m = read_manifest(path)
    out = args.output or str(path.parent / f"{m['name']}.report.html")
    check_writable_file(out, "-o/--output")
    write_report(m, out, args.bench, args.validation)
    print(f"wrote {out}")
    return 0


def _preprocess(args: argparse.Namespace):
    from ember.quant.data import Preprocess, parse_floats

    return Preprocess(args.image_mode, args.channel_order, args.layout,
                      parse_floats(args.mean, "--mean") if args.mean else (),
                      parse_floats(args.std, "--std") if args.std else ())


def _profile(args: argparse.Namespace) -> int:
    from ember.runtime.profile import profile_model

    # --input NAME=FILE names each input's data; a bare --input NAME (the older form) picks the input
    # that the positional DATA feeds.
    named = [s for s in args.input if "=" in s]
    select = [s for s in args.input if "=" not in s]
    if len(select) > 1:
        raise OptionError(f"--input {select[1]}: positional data feeds one input; use --input NAME=FILE for more")
    if named and (args.data or select):
        raise OptionError("give data either as DATA... (with --input NAME) or as --input NAME=FILE, not both")
    if not named and not args.data:
        raise OptionError("no data: give DATA... or --input NAME=FILE")
    opts = CompileOptions(defines=parse_defines(args.define), inputs=parse_inputs(args.model_input),
                          consts=parse_consts(args.const))
    doc = profile_model(args.model, args.data, args.output, _preprocess(args), select[0] if select else None, opts,
                        named=named)
    print(f"profile of {len(doc['tensors'])} tensors from {doc['samples']} sample(s) -> {args.output}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from ember.runtime.bench import bench

    _at_least(args.rounds, 0, "--rounds")
    _at_least(args.warmup, 0, "--warmup")
    _at_least(args.top, 0, "--top")
    if args.json:
        check_writable_file(args.json, "--json")
    if args.target or args.device or _cross(args.bundle):
        return _bench_on_target(args)
    r = bench(args.bundle, args.rounds, args.warmup, not args.no_profile, args.input, _preprocess(args),
              args.threads)
    gflops = r["flops"] / (r["median_ms"] * 1e6) if r["flops"] else 0.0
    print(f"bundle {r['name']}: {r['rounds']} rounds after {r['warmup']} warm-up"
          + (f", {r['threads']} threads" if r["threads"] > 1 else ""))
    print(f"  latency  min {r['min_ms']:.4f} ms  median {r['median_ms']:.4f} ms  p90 {r['p90_ms']:.4f} ms"
          + (f"  ({gflops:.1f} GFLOP/s)" if gflops else ""))
    mem, fp = r["memory"], r["footprint"]
    print(f"  memory   constant {mem['constant']:,} B, mutable {mem['mutable']:,} B, activations "
          f"{mem['activations']:,} B; code + tables "
          f"{fp.get('code', 0) + fp.get('rodata', 0) + fp.get('data', 0):,} B (as ember compile counts them)")
    if "profile" in r:
        prof = r["profile"]
        total = sum(p["ms"] for p in prof) or 1.0
        by_op: dict[str, list[float]] = {}
        for p in prof:
            by_op.setdefault(p["op"], []).append(p["ms"])
        print(f"  per operator (instrumented build, mean of runs; total {total:.4f} ms):")
        print(f"    {'op':<32} {'nodes':>5} {'ms':>10} {'%':>6}")
        for op, ts in sorted(by_op.items(), key=lambda kv: -sum(kv[1])):
            print(f"    {op:<32} {len(ts):>5} {sum(ts):>10.4f} {100 * sum(ts) / total:>6.1f}")
        print("  slowest nodes:")
        for p in sorted(prof, key=lambda p: -p["ms"])[: args.top]:
            print(f"    #{p['index']:<4} {p['op']:<24} {p['name'][:40]:<40} {p['ms']:>10.4f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _cross(path: str) -> bool:
    from ember.runtime.loader import find_manifest, read_manifest

    return read_manifest(find_manifest(Path(path))).get("target", "host") != "host"


def _bench_on_target(args: argparse.Namespace) -> int:
    """One run on the target: on a microcontroller the executed instructions of the inference (QEMU
    -icount), firmware flash and RAM and the stack high-water mark; elsewhere the run's wall time."""
    from ember.runtime.inputs import input_infos, load_feeds, random_inputs, sample
    from ember.runtime.loader import load
    from ember.runtime.targets import run_bundle

    bundle = load(args.bundle)
    where = _where(args, bundle)
    if where is None:  # --target host on a host bundle
        raise OptionError("--target host: run `ember bench OUT` without --target for host latency")
    target, device = where
    feeds = random_inputs(bundle, seed=0)
    if args.input:
        stacks, _ = load_feeds(args.input, input_infos(bundle.inputs), _preprocess(args))
        feeds.update(sample(stacks, 0))
    r = run_bundle(bundle, feeds, target, device, count_instructions=True)
    mem, fp = bundle.memory, bundle.footprint
    result: dict[str, Any] = {"name": bundle.name, "target": target, "runner": r.where, "seconds": r.seconds,
                              "memory": mem, "footprint": fp}
    print(f"bundle {bundle.name} on {target} ({r.where})")
    if r.instructions is not None:
        result.update(instructions=r.instructions, stack=r.stack, firmware=r.sizes)
        print(f"  instructions  {r.instructions:,} per inference (the entry-point call alone, QEMU -icount)")
        print(f"  firmware      flash {r.sizes['flash']:,} B (code, weights, .data image), RAM {r.sizes['ram']:,} B "
              "(regions, .data, .bss, 32 KiB stack reserve)")
        print(f"  stack         {r.stack:,} B high-water mark of the inference")
    else:
        print(f"  one run       {r.seconds * 1e3:.1f} ms wall, process start included"
              + (" (emulated: no speed measure)" if "qemu" in r.where else ""))
    print(f"  bundle        flash {fp.get('flash', 0):,} B, RAM {fp.get('ram', 0):,} B (constant {mem['constant']:,}, "
          f"mutable {mem['mutable']:,}, activations {mem['activations']:,})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _targets(args: argparse.Namespace) -> int:
    print(f"{'target':<11} {'cpu':<12} {'float ABI':<10} {'bits':>4}  description")
    for t in TARGETS.values():
        abis = "/".join(t.float_abis)
        print(f"{t.name:<11} {t.cpu or '-':<12} {abis:<10} {t.pointer_bits:>4}  {t.description}")
    return 0


def _operators(args: argparse.Namespace) -> int:
    from ember.frontends.onnx.ops import operator_table
    from ember.frontends.tflite.ops import CONVERTERS, INT16_OPS

    table: dict[str, dict[str, int]] = operator_table()
    table["tflite"] = dict.fromkeys(CONVERTERS, 1)
    if args.domain and args.domain not in table:
        raise OptionError(f"--domain {args.domain}: ember compiles the domains {', '.join(sorted(table))}")
    for domain in sorted(table):
        if args.domain and domain != args.domain:
            continue
        ops = table[domain]
        if domain == "tflite":
            print(f"tflite ({len(ops)} builtin operators; float32, float16 weights, int8; IF/WHILE subgraphs):")
        else:
            print(f"{domain} ({len(ops)} operators; the opset each is supported from in brackets):")
        _wrap([f"{op}[{since}]" if since > 1 else op for op, since in sorted(ops.items())])
        if domain == "tflite":  # the 16x8 ones: an int16 tensor at any other operator is refused
            print(f"tflite 16x8 (int16 activations, int8 weights; {len(INT16_OPS)} builtin operators):")
            _wrap(sorted(INT16_OPS))
    return 0


def _wrap(words: list[str]) -> None:
    line = " "
    for w in words:
        if len(line) + len(w) > 100:
            print(line)
            line = " "
        line += " " + w
    print(line)


def _at_least(value: int, low: int, flag: str) -> None:
    if value < low:
        raise OptionError(f"{flag} {value}: must be at least {low}")


def _run(args: argparse.Namespace) -> int:
    from ember.runtime.inputs import input_infos, load_feeds, sample
    from ember.runtime.loader import load

    _at_least(args.top_k, 0, "--top-k")
    if args.output:
        check_writable_file(args.output, "--output")
    bundle = load(args.bundle)
    execute = _on_target(args, bundle) or bundle.run
    if args.threads is not None:
        bundle.set_threads(args.threads)
    stacks, count = load_feeds(args.input, input_infos(bundle.inputs), _preprocess(args))
    # A sequence output comes back as one array per element (NAME_0, NAME_1, ...).
    runs = [bundle.by_element(execute(sample(stacks, k), cast=args.cast, dequantize=args.dequantize))
            for k in range(count)]
    outs = runs[0] if count == 1 else _stack_runs(runs)
    if args.output:
        np.savez(args.output, **outs)
        print(f"wrote {len(outs)} output(s){f' of {count} samples' if count > 1 else ''} to {args.output}")
    for name, arr in outs.items():
        if args.top_k:
            for k, row in enumerate(arr if count > 1 else [arr]):
                flat = row.reshape(-1)
                idx = np.argsort(-flat, kind="stable")[: args.top_k]
                label = f"{name}[{k}]" if count > 1 else name
                print(f"{label}: top-{args.top_k}: " + ", ".join(f"{i} ({flat[i]:.6g})" for i in idx))
        elif not args.output:
            with np.printoptions(threshold=64, precision=6):
                print(f"{name} {arr.dtype}{list(arr.shape)}:\n{arr}")
    return 0


def _where(args: argparse.Namespace, bundle: Any) -> tuple[str, Any] | None:
    """(target, device or None) that `--target T` / `--device NAME` run the bundle on, or None for a host
    bundle run here. A cross bundle given neither runs on its own target."""
    from ember.runtime.targets import check_target, runner_kind

    device = None
    if args.device:
        from ember.runtime.targets.ssh import find_device

        device = find_device(args.devices, args.device)
        if args.target and args.target != device.target:
            raise OptionError(f"--target {args.target}: device '{device.name}' is a {device.target} device")
    target = args.target or (device.target if device else None)
    if target is None and bundle.target != "host":
        target = bundle.target
    if target is None or (target == "host" and device is None):
        check_target(bundle, "host")  # --target host on a cross bundle
        return None
    if device is None:
        runner_kind(target)  # an unknown target is an error before any data is read
    check_target(bundle, target)
    if bundle.threads > 1 or getattr(args, "threads", None) is not None:
        # The target runners link NAME.o into a freestanding program: no POSIX threads there.
        raise OptionError(f"--threads: bundle {bundle.name} runs on {target} single-threaded only; compile it without "
                          "--threads, or link NAME.o with -pthread into your own program there")
    print(f"running on {device.name + ' over ssh' if device else target}", file=sys.stderr)
    return target, device


def _on_target(args: argparse.Namespace, bundle: Any) -> Callable[..., dict[str, Any]] | None:
    """`Bundle.run` on the target `_where` names (feed, cast=, dequantize= -> outputs), or None for the host."""
    from ember.runtime.targets import run_bundle

    where = _where(args, bundle)
    if where is None:
        return None

    def execute(feed: dict[str, Any], cast: bool = False, dequantize: bool = False) -> dict[str, Any]:
        return run_bundle(bundle, feed, *where, cast=cast, dequantize=dequantize).outputs

    return execute


def _target_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("running on the target (docs/targets.md)")
    g.add_argument("--target", metavar="TARGET",
                   help="run on TARGET: microcontrollers in bare-metal firmware under qemu-system, Linux targets "
                   "under qemu-user (or natively), wasm32 under wasmtime; the bundle must be compiled for it "
                   "(default: the bundle's own target)")
    g.add_argument("--device", metavar="NAME", help="run on device NAME of the devices file over ssh (Linux targets)")
    g.add_argument("--devices", metavar="FILE", default="devices.yml",
                   help="the devices file (default devices.yml): name, host, user, port, key, target, workdir")


def _stack_runs(runs: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several samples' outputs, each stacked along a new first axis (sample k at index k)."""
    out = {}
    for name in runs[0]:
        shapes = {r[name].shape for r in runs}
        if len(shapes) > 1:
            raise OptionError(f"output '{name}' has a size that depends on the data ({len(shapes)} different "
                              "shapes): run its samples one at a time")
        out[name] = np.stack([r[name] for r in runs])
    return out


def _info(args: argparse.Namespace) -> int:
    from ember.runtime.loader import find_manifest, read_manifest

    m = read_manifest(find_manifest(Path(args.bundle)))
    print(f"bundle {m['name']}  (ember {m['ember_version']}, target {m['target']})")
    for kind in ("inputs", "outputs"):
        for e in m[kind]:
            print(f"  {kind[:-1]:<6} {e['name']}: {e['dtype']}{e['shape']} at mutable+{e['offset']}")
    mem = m["memory"]
    print(f"  memory: constant {mem['constant']:,} B, mutable {mem['mutable']:,} B, activations "
          f"{mem['activations']:,} B (lower bound {mem['activations_lower_bound']:,} B)")
    print("  ops: " + ", ".join(f"{k} x{v}" for k, v in m["ops"].items()))
    threads = m.get("threads", {})
    if threads.get("max", 1) > 1:
        print(f"  threads: up to {threads['max']}, {threads['divided']} node(s) divided among them "
              f"(link with {' '.join(threads['link_flags'])})")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from ember.validate import validate

    if args.max_error is not None and args.max_error < 0:
        raise OptionError(f"--max-error {args.max_error}: must not be negative")
    if args.min_cosine is not None and not -1 <= args.min_cosine <= 1:
        raise OptionError(f"--min-cosine {args.min_cosine}: must lie in [-1, 1]")
    for flag, value in (("--min-top1", args.min_top1), ("--max-accuracy-drop", args.max_accuracy_drop)):
        if value is not None and not 0 <= value <= 1:
            raise OptionError(f"{flag} {value}: must lie in [0, 1]")
    if args.json:
        check_writable_file(args.json, "--json")
    from ember.runtime.loader import load

    execute = _on_target(args, load(args.bundle))
    result = validate(args.model, args.bundle, args.input, args.seed, args.max_error, args.min_cosine,
                      args.min_top1, args.labels, args.max_accuracy_drop, _preprocess(args), args.cast,
                      execute=execute)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["ok"] else 1


def _data_args(p: argparse.ArgumentParser, what: str, profile: bool = False) -> None:
    """The one data vocabulary of run, validate, bench and profile: --input NAME=FILE and image options."""
    d = p.add_argument_group("data (the same files and options for run, validate, bench and profile)")
    d.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                   help=f"{what}: FILE is a .npy/.npz array, an image (PNG/JPEG/BMP/GIF/WebP), a folder of those "
                   "(sorted by name), or a stack whose first axis counts samples; a lone FILE feeds the only "
                   "input (a .npz: inputs by key); repeat for each input"
                   + ("; a bare NAME picks the input DATA feeds (older form)" if profile else ""))
    d.add_argument("--image-mode", default="0to1", choices=("0to1", "neg1to1", "0to255", "neg128to127"),
                   help="pixel value range after scaling (default 0to1)")
    d.add_argument("--channel-order", default="RGB", choices=("RGB", "BGR"), help="channel order the model expects")
    d.add_argument("--layout", default="NCHW", choices=("NCHW", "NHWC"),
                   help="the model input's layout, for images (default NCHW)")
    d.add_argument("--mean", metavar="M[,M,M]",
                   help="per-channel mean subtracted after scaling, e.g. 0.485,0.456,0.406")
    d.add_argument("--std", metavar="S[,S,S]",
                   help="per-channel std divided by after the mean, e.g. 0.229,0.224,0.225")


def _deploy(args: argparse.Namespace) -> int:
    from ember.deploy.build import deploy

    _at_least(args.round, 1, "--round")
    if not (args.config or args.file) or (args.config and args.file):
        raise OptionError("deploy: give the deployment file once, as FILE.yml or --config FILE.yml")
    return deploy(args.config or args.file, args.output, args.validate, args.benchmark, args.round)


def _quant_args(c: argparse.ArgumentParser) -> None:
    q = c.add_argument_group("quantization (see `ember profile`)")
    q.add_argument("--quantize", choices=("int8",), help="quantize the bundle; needs --profile")
    q.add_argument("--profile", metavar="PROFILE.yaml", help="tensor ranges from `ember profile`")
    q.add_argument("--schema", default="asymmetric",
                   choices=("asymmetric", "symmetric", "symmetric_with_uint8", "symmetric_with_power2_scale"),
                   help="how ranges become scale and zero point (Glow's schemas; default asymmetric)")
    q.add_argument("--precision", default="int8", choices=("int8", "int16"), help="activation and weight type")
    q.add_argument("--bias", default="int32", choices=("int32", "int8"), help="bias type (default int32)")
    q.add_argument("--tflite-rounding", dest="tflite_rounding", default="litert", choices=("litert", "micro"),
                   help="an int8 or 16x8 TFLite model's integer arithmetic, bit-exact with LiteRT (default) or "
                        "TFLite Micro")
    q.add_argument("--per-channel", dest="per_channel", action=argparse.BooleanOptionalAction, default=None,
                   help="one weight scale per output channel (default: for convolutions only)")
    q.add_argument("--calibration", default="minmax", choices=("minmax", "percentile", "kl", "mse"),
                   help="range from the histogram: minmax (Glow), percentile, kl (entropy), mse (default minmax)")
    q.add_argument("--percentile", type=float, default=99.99, help="for --calibration percentile (default 99.99)")
    q.add_argument("--keep-float", action="append", default=[], metavar="OP,...",
                   help="op types left in float, e.g. Add,Softmax")
    q.add_argument("--io", default="float", choices=("float", "int8"),
                   help="float (default): (de)quantize inside the bundle; int8: inputs and outputs are int8")
    q.add_argument("--weights", choices=("fp16", "bf16", "int8"),
                   help="weight-only compression of a float bundle: stored fp16/bf16/int8, computed float")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember", description="Ahead-of-time compiler: ONNX models to C bundles.")
    p.add_argument("--version", action="version", version=f"ember {__version__}")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a model into a bundle")
    c.add_argument("model", help="the model: an .onnx or .tflite file (detected by content), or a TensorFlow "
                   "SavedModel directory (converted by TFLiteConverter; needs pip install 'ember[tf]')")
    c.add_argument("-o", "--output", required=True, help="output bundle directory")
    c.add_argument("--name", help="network name (C prefix); default: model file stem")
    c.add_argument("--target", default="host", metavar="TARGET",
                   help="host (default), " + ", ".join(t for t in TARGETS if t != "host") + "; see `ember targets`")
    c.add_argument("--cpu", help="CPU to compile for (host default: native, detected), e.g. x86-64-v3 (AVX2), "
                   "x86-64-v4, znver4, cortex-a53; on host/x86_64 it also picks the kernel choices of its family")
    c.add_argument("--cpu-param", action="append", default=[], metavar="KEY=VALUE",
                   help="set one value of the CPU family's kernel choices (ember/toolchain/cpus.py, e.g. "
                   "nhwc_min_convs=5, mm_kc=384, row_panels_min_k=none): tuning experiments on x86-64; "
                   "recorded in NAME.json")
    c.add_argument("--float-abi", choices=("hard", "soft"), help="float ABI (ARM and RISC-V targets)")
    c.add_argument("--reloc", choices=("static", "pic"),
                   help="relocation model of NAME.o (default: pic for host/Linux targets, static for MCU/wasm)")
    c.add_argument("--cc", help="your own GCC-compatible C compiler and flags, e.g. 'arm-none-eabi-gcc -O2'; "
                   "ember adds the target's -mcpu/-mfpu/-mfloat-abi before your flags")
    c.add_argument("--api", choices=("static", "dynamic"), default="static", help="Glow bundle API flavour")
    c.add_argument("--input", action="append", default=[], metavar="NAME:DTYPE:SHAPE",
                   help="fix an input's type and shape, e.g. data:float32:1x3x224x224")
    c.add_argument("--define", action="append", default=[], metavar="SYMBOL=VALUE",
                   help="value of a symbolic dimension, e.g. batch=1")
    c.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                   help="freeze a graph input to a constant (a number, a comma list or a .npy file), e.g. "
                   "sample_rate=16000: what it decides folds (an If on it keeps one branch); the bundle has no "
                   "such input")
    c.add_argument("--state", choices=("zero", "io"), default="zero",
                   help="recurrent state of a TFLite model (LSTM, SVDF variable tensors): zero (default) starts "
                   "every run from zero; io makes each state an input and its next value an output NAME_next, "
                   "to copy back before the next call (streaming); see docs/bundle.md")
    c.add_argument("--dump-graph", metavar="FILE.dot", help="write the optimized graph as Graphviz")
    c.add_argument("--no-weights-txt", action="store_true",
                   help="do not write NAME.weights.txt (the weights as C text, 6 bytes per weight byte); "
                   "NAME.weights.bin holds the same bytes")
    c.add_argument("--report", metavar="FILE.html",
                   help="also write a self-contained HTML report: graph, memory plan, region sizes")
    c.add_argument("--max-memory", metavar="SIZE",
                   help="refuse bundles whose three memory regions together need more, e.g. 512M, 16G "
                   "(default 4G for host, the target's address space otherwise)")
    c.add_argument("--ram-limit", metavar="SIZE",
                   help="fit the RAM (inputs/outputs + activations; not the stack) under SIZE, e.g. 64K or 65536, "
                   "running the first layers in spatial patches if needed; else refuse, stating the smallest RAM "
                   "ember reaches for the model")
    c.add_argument("--reuse-inputs", action="store_true",
                   help="let the call overwrite its inputs: intermediates go over inputs already read, all in the "
                   "mutable region (the activation region is empty), as in TFLite Micro's arena; write the inputs "
                   "before every call")
    c.add_argument("-O", dest="opt_level", type=int, default=3, choices=(0, 1, 2, 3), help="C optimization level")
    c.add_argument("--threads", type=int, default=1, metavar="N",
                   help="run large kernels on up to N threads (host and Linux targets): the bundle owns a pool "
                   "of POSIX threads (link with -pthread); NAME_set_threads changes the count at run time")
    c.add_argument("--tune", action="store_true",
                   help="time each layer shape's candidate kernels (Winograd, im2col, ...) on this machine first "
                   "and compile with the fastest (host and Linux targets of this machine's architecture); the "
                   "choices are kept in the choice file, so shapes already timed are not timed again")
    c.add_argument("--tune-file", metavar="PATH",
                   help="the choice file --tune writes (default ~/.cache/ember/choices.json); without --tune, "
                   "compile with the choices it holds (the same file gives the same bundle)")
    _quant_args(c)
    c.set_defaults(fn=_compile)

    pr = sub.add_parser("profile", help="calibration ranges for --quantize: run the float model on sample data",
                        description="Run the float model (an instrumented build of its bundle) on images or arrays "
                        "and record every tensor's min, max and histogram in a YAML file for "
                        "`ember compile --profile FILE --quantize int8`.")
    pr.add_argument("model", help="the .onnx model file")
    pr.add_argument("data", nargs="*", metavar="DATA", help="images, arrays or folders of them for the only input "
                    "(or the one --input NAME picks); .npz files keyed by input name feed several")
    pr.add_argument("-o", "--output", required=True, metavar="PROFILE.yaml", help="where to write the profile")
    _data_args(pr, "calibration data of input NAME", profile=True)
    pr.add_argument("--model-input", action="append", default=[], metavar="NAME:DTYPE:SHAPE",
                    help="fix an input's type and shape (as compile's --input; use the same at compile time)")
    pr.add_argument("--define", action="append", default=[], metavar="SYMBOL=VALUE",
                    help="value of a symbolic dimension (use the same at compile time)")
    pr.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                    help="freeze a graph input to a constant (as compile's --const; use the same at compile time)")
    pr.set_defaults(fn=_profile)

    b = sub.add_parser("bench", help="latency, memory and per-operator time profile of a host bundle; "
                       "instructions, flash, RAM and stack on a microcontroller (--target)")
    b.add_argument("bundle", help="bundle directory")
    b.add_argument("--rounds", type=int, default=0, help="timed runs (default: about 2 s worth)")
    b.add_argument("--warmup", type=int, default=0, help="untimed runs first (default: about 0.3 s worth)")
    b.add_argument("--no-profile", action="store_true", help="skip the instrumented per-operator build")
    b.add_argument("--top", type=int, default=10, help="how many of the slowest nodes to list")
    b.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    b.add_argument("--threads", type=int, metavar="N",
                   help="threads a multi-threaded bundle runs on (default: all it was compiled with --threads for)")
    _data_args(b, "what the timed runs are fed (default: random data); the first sample of a stack")
    _target_args(b)
    b.set_defaults(fn=_bench)

    t = sub.add_parser("targets", help="list the targets --target accepts")
    t.set_defaults(fn=_targets)

    o = sub.add_parser("operators", aliases=["ops"],
                       help="list the operators ember compiles, per ONNX domain and for TFLite")
    o.add_argument("--domain", help="only this domain (ai.onnx, ai.onnx.ml, com.microsoft, tflite)")
    o.set_defaults(fn=_operators)

    r = sub.add_parser("run", help="run a bundle on arrays or images (here, or on its target: --target, --device)")
    r.add_argument("bundle", help="bundle directory (or DIR/NAME.json)")
    r.add_argument("--output", metavar="FILE.npz", help="save outputs here (several samples: stacked along a new "
                   "first axis)")
    r.add_argument("--top-k", type=int, default=0, help="print the top-k classes of each output (of each sample)")
    r.add_argument("--cast", action="store_true",
                   help="convert arrays to the bundle's dtypes (default: a dtype mismatch is an error; float data "
                   "for an --io int8 input is always quantized with its scale and zero point)")
    r.add_argument("--dequantize", action="store_true", help="return an --io int8 bundle's outputs as float32")
    r.add_argument("--threads", type=int, metavar="N",
                   help="threads a multi-threaded bundle runs on (default: all it was compiled with --threads for)")
    _data_args(r, "the data of input NAME (several samples: one run each)")
    _target_args(r)
    r.set_defaults(fn=_run)

    i = sub.add_parser("info", help="inputs, outputs, memory and ops of a bundle")
    i.add_argument("bundle", help="bundle directory (or DIR/NAME.json)")
    i.set_defaults(fn=_info)

    v = sub.add_parser("validate", help="compare a bundle with onnxruntime",
                       description="Run the bundle and onnxruntime on the same inputs (each sample of --input "
                       "data, or random data inside each input's valid range) and compare every output. "
                       f"Default thresholds by bundle: {defaults_text()}. Exit 1 on FAIL.")
    v.add_argument("model", help="the .onnx model the bundle was compiled from (the reference)")
    v.add_argument("bundle", help="bundle directory (or DIR/NAME.json)")
    v.add_argument("--seed", type=int, default=0, help="seed of the random inputs used without --input (default 0)")
    v.add_argument("--max-error", type=float, default=None,
                   help="max abs error relative to the reference output's range (default by bundle, see above)")
    v.add_argument("--min-cosine", type=float, default=None,
                   help="minimum cosine similarity of each output to the reference's (default by bundle)")
    v.add_argument("--min-top1", type=float, default=None,
                   help="minimum fraction of samples whose argmax agrees with the reference's (default: 0.9 for "
                   "int8 bundles on --input data, else not checked)")
    v.add_argument("--labels", metavar="FILE",
                   help="one integer class per sample (.npy, or text): report top-1/top-5 accuracy of bundle and "
                   "reference on the first output with more than one value")
    v.add_argument("--max-accuracy-drop", type=float, default=None,
                   help="with --labels: most the bundle's top-1 accuracy may lie below the reference's "
                   "(default by bundle, see above)")
    v.add_argument("--json", metavar="FILE", help="also write the results as JSON (`ember report --validation`)")
    v.add_argument("--cast", action="store_true",
                   help="convert arrays to the bundle's dtypes, for both sides (default: a mismatch is an error)")
    _data_args(v, "the data of input NAME (several samples: each compared, results aggregated)")
    _target_args(v)
    v.set_defaults(fn=_validate)

    rp = sub.add_parser("report", help="write a bundle's HTML report (graph, memory plan, times, validation)")
    rp.add_argument("bundle", metavar="OUT", help="bundle directory, or OUT/NAME.json")
    rp.add_argument("-o", "--output", metavar="FILE.html", help="where to write it (default: OUT/NAME.report.html)")
    rp.add_argument("--bench", metavar="BENCH.json", help="per-operator times from `ember bench OUT --json FILE`")
    rp.add_argument("--validation", metavar="VALIDATION.json",
                    help="validation results to include (format: docs/report.md)")
    rp.set_defaults(fn=_report)

    d = sub.add_parser("deploy", help="build a MACE-style deployment file into one static library per target",
                       description="Compile every model of a MACE-style deployment file (library_name, "
                       "target_abis, models: ...) into OUT/<abi>/lib<library_name>.a with one header per model, "
                       "a registry header <library_name>.h and one shared activation arena (README: Deployment "
                       "files).")
    d.add_argument("file", nargs="?", metavar="FILE.yml", help="the deployment file")
    d.add_argument("--config", metavar="FILE.yml", help="the deployment file (MACE's spelling)")
    d.add_argument("-o", "--output", metavar="OUT", help="output folder (default: build/<library_name>)")
    d.add_argument("--validate", action="store_true",
                   help="run every model (host build) against onnxruntime on validation_inputs_data or random "
                   "inputs; exit 1 below validation_threshold")
    d.add_argument("--benchmark", action="store_true", help="time every model (host build)")
    d.add_argument("--round", type=int, default=10, metavar="N", help="timed runs per model for --benchmark")
    d.set_defaults(fn=_deploy)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.fn(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        # `ember run ... | head`: the reader has gone; stop quietly, as other command-line tools do.
        # stdout is pointed at /dev/null so that Python's own flush at exit raises nothing more.
        if args.debug:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by the pipe
    except KeyboardInterrupt:
        # Every writer (the bundle's temporary folder, profile.yaml.tmp) removes its partial files on
        # the way out, so an interrupted command leaves nothing behind.
        if args.debug:
            raise
        print("ember: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # every error is one line; --debug shows where it came from
        if args.debug:
            raise
        print(f"ember: error: {_one_line(e)}", file=sys.stderr)
        return 1 if isinstance(e, EmberError) else 2


def _one_line(e: BaseException) -> str:
    """An error as one line: ember's own as they are; anything else (a bug) with its type and a hint."""
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, EmberError):
        return text
    if isinstance(e, MemoryError):
        return f"out of memory ({text})"
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or text}"
    return f"internal error: {type(e).__name__}: {text} (rerun with --debug for the traceback)"


if __name__ == "__main__":
    sys.exit(main())
