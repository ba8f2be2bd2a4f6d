"""The `ember` command: argparse subcommands over ember.api; user mistakes are one line and exit 1."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from ember import __version__
from ember.config import CompileOptions, parse_define, parse_input
from ember.errors import EmberError


def _compile(args: argparse.Namespace) -> int:
    from ember.api import write_bundle

    opts = CompileOptions(
        name=args.name, target=args.target, cpu=args.cpu, float_abi=args.float_abi, reloc=args.reloc, cc=args.cc,
        api=args.api, defines=dict(parse_define(d) for d in args.define),
        inputs=dict(parse_input(i) for i in args.input), dump_graph=args.dump_graph, opt_level=args.opt_level,
    )
    command = "ember " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    m = write_bundle(args.model, Path(args.output), opts, command)
    mem = m["memory"]
    ratio = mem["activations"] / mem["activations_lower_bound"] if mem["activations_lower_bound"] else 1.0
    print(f"bundle {m['name']} -> {args.output} (target {m['target']})")
    print(f"  constant weights : {mem['constant']:>12,} bytes")
    print(f"  mutable (in/out) : {mem['mutable']:>12,} bytes")
    print(f"  activations      : {mem['activations']:>12,} bytes "
          f"(lower bound {mem['activations_lower_bound']:,}, ratio {ratio:.3f})")
    return 0


def _load_arrays(specs: list[str], names: list[str]) -> dict[str, np.ndarray]:
    """--input NAME=FILE (.npy or .npz); a lone FILE feeds the only input; a .npz maps its keys."""
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = "", spec
        p = Path(path)
        if not p.exists():
            raise EmberError(f"{path}: no such file")
        try:
            data = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise EmberError(f"{path}: not a .npy/.npz file ({e})") from None
        if isinstance(data, np.lib.npyio.NpzFile):
            feeds.update({k: data[k] for k in data.files} if not name else {name: data[data.files[0]]})
        elif name:
            feeds[name] = data
        elif len(names) == 1:
            feeds[names[0]] = data
        else:
            raise EmberError(f"{path}: the bundle has {len(names)} inputs; write --input NAME={path}")
    return feeds


def _run(args: argparse.Namespace) -> int:
    from ember.runtime.loader import load

    bundle = load(args.bundle)
    feeds = _load_arrays(args.input, [e["name"] for e in bundle.inputs])
    outs = bundle.run(feeds)
    if args.output:
        np.savez(args.output, **outs)
        print(f"wrote {len(outs)} output(s) to {args.output}")
    for name, arr in outs.items():
        if args.top_k:
            flat = arr.reshape(-1)
            idx = np.argsort(-flat, kind="stable")[: args.top_k]
            print(f"{name}: top-{args.top_k}: " + ", ".join(f"{i} ({flat[i]:.6g})" for i in idx))
        elif not args.output:
            with np.printoptions(threshold=64, precision=6):
                print(f"{name} {arr.dtype}{list(arr.shape)}:\n{arr}")
    return 0


def _info(args: argparse.Namespace) -> int:
    path = Path(args.bundle)
    manifests = sorted(path.glob("*.json")) if path.is_dir() else []
    if not manifests:
        raise EmberError(f"{path}: not a bundle directory (no NAME.json)")
    m = json.loads(manifests[0].read_text())
    print(f"bundle {m['name']}  (ember {m['ember_version']}, target {m['target']})")
    for kind in ("inputs", "outputs"):
        for e in m[kind]:
            print(f"  {kind[:-1]:<6} {e['name']}: {e['dtype']}{e['shape']} at mutable+{e['offset']}")
    mem = m["memory"]
    print(f"  memory: constant {mem['constant']:,} B, mutable {mem['mutable']:,} B, activations "
          f"{mem['activations']:,} B (lower bound {mem['activations_lower_bound']:,} B)")
    print("  ops: " + ", ".join(f"{k} x{v}" for k, v in m["ops"].items()))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from ember.validate import validate

    ok = validate(args.model, args.bundle, args.input, args.seed, args.max_error, args.min_cosine)
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember", description="Ahead-of-time compiler: ONNX models to C bundles.")
    p.add_argument("--version", action="version", version=f"ember {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a model into a bundle")
    c.add_argument("model", help="the .onnx model file")
    c.add_argument("-o", "--output", required=True, help="output bundle directory")
    c.add_argument("--name", help="network name (C prefix); default: model file stem")
    c.add_argument("--target", default="host", help="target (default: host)")
    c.add_argument("--cpu", help="CPU to compile for (host default: native), e.g. znver3, skylake-avx512")
    c.add_argument("--float-abi", choices=("hard", "soft"), help="float ABI for ARM targets")
    c.add_argument("--reloc", choices=("static", "pic"), default="pic", help="relocation model of NAME.o")
    c.add_argument("--cc", help="your own C compiler command, e.g. 'arm-none-eabi-gcc -mcpu=cortex-m7'")
    c.add_argument("--api", choices=("static", "dynamic"), default="static", help="Glow bundle API flavour")
    c.add_argument("--input", action="append", default=[], metavar="NAME:DTYPE:SHAPE",
                   help="fix an input's type and shape, e.g. data:float32:1x3x224x224")
    c.add_argument("--define", action="append", default=[], metavar="SYMBOL=VALUE",
                   help="value of a symbolic dimension, e.g. batch=1")
    c.add_argument("--dump-graph", metavar="FILE.dot", help="write the optimized graph as Graphviz")
    c.add_argument("-O", dest="opt_level", type=int, default=3, choices=(0, 1, 2, 3), help="C optimization level")
    c.set_defaults(fn=_compile)

    r = sub.add_parser("run", help="run a host bundle on .npy/.npz inputs")
    r.add_argument("bundle", help="bundle directory")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE", help="input array (.npy/.npz)")
    r.add_argument("--output", metavar="FILE.npz", help="save outputs here")
    r.add_argument("--top-k", type=int, default=0, help="print the top-k classes of each output")
    r.set_defaults(fn=_run)

    i = sub.add_parser("info", help="inputs, outputs, memory and ops of a bundle")
    i.add_argument("bundle")
    i.set_defaults(fn=_info)

    v = sub.add_parser("validate", help="compare a bundle with onnxruntime")
    v.add_argument("model")
    v.add_argument("bundle")
    v.add_argument("--input", action="append", default=[], metavar="NAME=FILE", help="input (default: random)")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--max-error", type=float, default=1e-4,
                   help="max abs error relative to the reference output range (default 1e-4)")
    v.add_argument("--min-cosine", type=float, default=0.9999, help="minimum cosine similarity")
    v.set_defaults(fn=_validate)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except EmberError as e:
        print(f"ember: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
