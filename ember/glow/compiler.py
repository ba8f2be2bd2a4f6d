"""`model-compiler`: Glow's bundle compiler, as `ember compile` (ember.api.write_bundle)."""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

from ember.config import CompileOptions
from ember.errors import OptionError
from ember.glow import flags, targets
from ember.glow.options import MODEL_FLAGS, QUANT_FLAGS, find_model, parse_model_input, parse_symbols, quant_options
from ember.glow.tool import main_of, note

PROG = "model-compiler"
FLAGS = [
    *MODEL_FLAGS,
    flags.Flag("emit-bundle", "value", "output folder of the bundle (created if missing)", "dir"),
    flags.Flag("network-name", "value", "name of the bundle files and C symbols (default: the model's name)", "name"),
    flags.Flag("bundle-api", "value", "static (default: #define offsets) or dynamic (a BundleConfig table)", "api"),
    flags.Flag("target", "value", "LLVM triple or architecture, e.g. x86_64, aarch64, arm, thumbv7em-none-eabi",
               "triple"),
    flags.Flag("mcpu", "value", "CPU, e.g. cortex-m7, cortex-a53", "cpu"),
    flags.Flag("mattr", "csv", "target features (only those the core has: ember's table picks features)", "attrs"),
    flags.Flag("float-abi", "value", "hard or soft (ARM; default: the triple's, as LLVM)", "abi"),
    flags.Flag("code-model", "value", "small (the only one ember builds)", "model"),
    flags.Flag("relocation-model", "value", "static (default for microcontrollers) or pic", "model"),
    *QUANT_FLAGS,
    flags.Flag("dump-profile", "value", "refused: profile with image-classifier -dump-profile", "profile.yml"),
    flags.Flag("dump-graph-DAG", "value", "write the optimized graph in Graphviz .dot format", "file.dot"),
    flags.Flag("use-cmsis", "bool", "accepted: ember's int8 kernels use the core's DSP instructions already"),
    flags.Flag("help", "bool", "print this help"),
    flags.Flag("version", "bool", "print the version"),
]

def run(argv: list[str]) -> int:
    a = flags.parse(argv, FLAGS, {"m": "model", "h": "help"})
    if flags.help_or_version(a, PROG, "ember's Glow-compatible bundle compiler", FLAGS,
                             "-backend=CPU -model=<model> -emit-bundle=<dir> [options]"):
        return 0
    if a.positional:
        raise OptionError(f"unexpected argument '{a.positional[0]}' (options are written -name=value)")
    if "model" not in a.values:
        raise OptionError("-model=<path> is required")
    if a.get("dump-profile"):
        raise OptionError("-dump-profile: ember profiles by running the model; use image-classifier <images> "
                          "-model=... -dump-profile=FILE, then model-compiler -load-profile=FILE")
    if not a.get("emit-bundle"):
        raise OptionError("-emit-bundle=<dir> is required (ember's model-compiler only emits bundles)")
    notes: list[str] = []
    _backend(a.get("backend"), notes)
    with tempfile.TemporaryDirectory(prefix="ember-glow-") as tmp:
        model, opts = compile_options(a, Path(tmp), notes)
        for n in notes:
            note(PROG, n)
        return _compile(model, a.get("emit-bundle"), opts)


def _backend(backend: str | None, notes: list[str]) -> None:
    if backend is None:
        return
    if backend.lower() != "cpu":
        raise OptionError(f"-backend={backend}: ember's bundles are C for the CPU; use -backend=CPU")
    notes.append("-backend=CPU: ember's only backend (C compiled for -target)")


def compile_options(a: flags.Parsed, scratch: Path, notes: list[str]) -> tuple[Path, CompileOptions]:
    model, default_name = find_model(a.get("model"), scratch)
    choice = targets.choose(a.get("target"), a.get("mcpu"), a.get("float-abi"), a.get("mattr", []),
                            a.get("code-model"))
    notes += choice.notes
    if a.get("use-cmsis"):
        notes.append(f"-use-cmsis: ember's int8 kernels already use {choice.target}'s DSP (SMLAD) instructions "
                     "where it has them; no CMSIS-NN library is linked" if choice.target.startswith("cortex-m")
                     else f"-use-cmsis: no effect on {choice.target} (CMSIS-NN is for Cortex-M)")
    api = a.get("bundle-api", "static")
    if api not in ("static", "dynamic"):
        raise OptionError(f"-bundle-api={api}: expected static or dynamic")
    reloc = a.get("relocation-model")
    if reloc not in (None, "static", "pic"):
        raise OptionError(f"-relocation-model={reloc}: expected static or pic")
    inputs = dict(parse_model_input(t, model) for t in a.get("model-input", []))
    return model, CompileOptions(
        name=a.get("network-name") or default_name, target=choice.target, cpu=choice.cpu,
        float_abi=choice.float_abi, reloc=reloc, api=api, defines=parse_symbols(a.get("onnx-define-symbol", [])),
        inputs=inputs, dump_graph=a.get("dump-graph-DAG"), **quant_options(a, scratch, model, notes))


def _compile(model: Path, out: str, opts: CompileOptions) -> int:
    from ember.api import write_bundle

    command = PROG + " " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    m = write_bundle(str(model), out, opts, command)
    mem, fp = m["memory"], m["footprint"]
    print(f"bundle {m['name']} -> {out} (target {m['target']}{', int8' if opts.quantize else ''}): "
          f"{m['name']}.o, {m['name']}.h, {m['name']}.weights.bin, {m['name']}.weights.txt")
    print(f"  constant weights {mem['constant']:,} B, mutable {mem['mutable']:,} B, activations "
          f"{mem['activations']:,} B; flash {fp['flash']:,} B, RAM {fp['ram']:,} B")
    return 0


main = main_of(PROG, run)


if __name__ == "__main__":
    sys.exit(main())
