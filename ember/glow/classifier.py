"""`image-classifier`: run a model on images through a host bundle and print Glow's top-k lines, or
(`-dump-profile`) record the quantization profile as `ember profile` does (ember.runtime.profile).

Images are preprocessed with Glow's defaults (`-image-mode=0to255`, `-image-channel-order=BGR`,
`-image-layout=NCHW`), not `ember profile`'s, so a Glow command line gives the same inputs."""

from __future__ import annotations

import glob
import sys
import tempfile
from pathlib import Path

import numpy as np

from ember.config import CompileOptions
from ember.errors import OptionError
from ember.glow import flags
from ember.glow.options import (
    MODEL_FLAGS,
    QUANT_FLAGS,
    find_model,
    local_path,
    parse_model_input,
    parse_symbols,
    quant_options,
)
from ember.glow.tool import main_of, note

PROG = "image-classifier"
FLAGS = [
    *MODEL_FLAGS,
    flags.Flag("model-input-name", "csv", "the model input the images feed (default: the only input)", "name"),
    flags.Flag("input-image-dir", "list", "a folder of images (all of its .png/.jpg files, sorted)", "dir"),
    flags.Flag("image-mode", "value", "pixel range: 0to255 (default), 0to1, neg1to1, neg128to127", "mode"),
    flags.Flag("image-channel-order", "value", "BGR (default) or RGB", "order"),
    flags.Flag("image-layout", "value", "NCHW (default) or NHWC", "layout"),
    flags.Flag("minibatch", "value", "images per run (the model's batch; default: its batch, 1 if symbolic)", "N"),
    flags.Flag("topk", "value", "labels printed per image (default 1)", "K"),
    flags.Flag("compute-softmax", "bool", "apply softmax to the output before ranking"),
    flags.Flag("expected-labels", "csv", "the label of each image; the exit status counts mismatches", "labels"),
    flags.Flag("dump-profile", "value", "record every tensor's range over the images (no labels are printed)",
               "profile.yml"),
    *QUANT_FLAGS,
    flags.Flag("help", "bool", "print this help"),
    flags.Flag("version", "bool", "print the version"),
]
_IMAGES = (".png", ".jpg", ".jpeg")


def run(argv: list[str]) -> int:
    a = flags.parse(argv, FLAGS, {"m": "model", "h": "help"})
    if flags.help_or_version(a, PROG, "ember's Glow-compatible image classifier and profiler", FLAGS,
                             "<images> -model=<model> [-model-input-name=<name>] [-dump-profile=profile.yml] "
                             "[options]"):
        return 0
    if "model" not in a.values:
        raise OptionError("-model=<path> is required")
    if a.get("dump-profile") and a.get("load-profile"):
        raise OptionError("-dump-profile cannot be given with -load-profile")
    backend = a.get("backend")
    if backend is not None and backend.lower() not in ("cpu", "interpreter"):
        raise OptionError(f"-backend={backend}: ember runs a host C bundle; use -backend=CPU")
    images = _images(a.positional, a.get("input-image-dir", []))
    from ember.quant.data import Preprocess

    prep = Preprocess(a.get("image-mode", "0to255"), a.get("image-channel-order", "BGR"), a.get("image-layout", "NCHW"))
    topk, minibatch = _count(a, "topk", 1), _count(a, "minibatch", 0)
    names = a.get("model-input-name", [])
    if len(names) > 1:
        raise OptionError(f"-model-input-name: images feed one input, not {len(names)}")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ember-glow-") as tmp:
        model, _ = find_model(a.get("model"), Path(tmp))
        defines = parse_symbols(a.get("onnx-define-symbol", []))
        inputs = dict(parse_model_input(t, model) for t in a.get("model-input", []))
        select = names[0] if names else None
        _batch_symbol(model, select, minibatch, defines)
        if a.get("dump-profile"):
            chosen = [f"-{n}" for n in ("quantization-schema", "quantization-precision", "quantization-precision-bias",
                                        "quantization-calibration", "enable-channelwise",
                                        "keep-original-precision-for-nodes") if n in a.values]
            if chosen:
                notes.append(f"{', '.join(chosen)}: the profile holds ranges only; they take effect in "
                             "model-compiler -load-profile")
            for n in notes:
                note(PROG, n)
            return _profile(model, images, a.get("dump-profile"), prep, select, defines, inputs)
        quant = quant_options(a, Path(tmp), model, notes)
        for n in notes:
            note(PROG, n)
        opts = CompileOptions(defines=defines, inputs=inputs, **quant)
        return _classify(model, images, opts, prep, select, topk, bool(a.get("compute-softmax")),
                         _labels(a.get("expected-labels", [])), Path(tmp) / "bundle")


def _labels(texts: list[str]) -> list[int]:
    try:
        return [int(t) for t in texts]
    except ValueError:
        raise OptionError(f"-expected-labels={','.join(texts)}: expected comma-separated integers") from None


def _images(positional: list[str], folders: list[str]) -> list[Path]:
    files: list[Path] = []
    for text in positional:
        p = local_path(text)
        if not p.exists() and any(c in text for c in "*?["):  # Windows shells leave patterns to the program
            found = sorted(glob.glob(text.replace("\\", "/")))
            if not found:
                raise OptionError(f"{text}: no image matches")
            files += map(Path, found)
        elif not p.is_file():
            raise OptionError(f"{text}: no such image file")
        else:
            files.append(p)
    for d in folders:
        p = local_path(d)
        if not p.is_dir():
            raise OptionError(f"-input-image-dir={d}: not a folder")
        files += sorted(f for f in p.iterdir() if f.suffix.lower() in _IMAGES)
    if not files:
        raise OptionError("no images given (list them, or -input-image-dir=<dir>)")
    return files


def _count(a: flags.Parsed, flag: str, default: int) -> int:
    text = a.get(flag)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OptionError(f"-{flag}={text}: expected a non-negative integer")
    return value


def _batch_symbol(model: Path, select: str | None, minibatch: int, defines: dict[str, int]) -> None:
    """Glow sizes a symbolic batch from -minibatch; ember likewise (1 when no -minibatch is given)."""
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    feeds = [i for i in graph.input if i.name not in inits]
    inp = next((i for i in feeds if i.name == select), feeds[0] if feeds else None)
    if inp is None or not inp.type.tensor_type.shape.dim:
        return
    first = inp.type.tensor_type.shape.dim[0]
    if first.dim_param and first.dim_param not in defines:
        defines[first.dim_param] = minibatch or 1
    elif minibatch and first.HasField("dim_value") and first.dim_value != minibatch:
        raise OptionError(f"-minibatch={minibatch}: input '{inp.name}' has batch {first.dim_value}")


def _profile(model: Path, images: list[Path], output: str, prep, select: str | None, defines: dict[str, int],
             inputs: dict[str, str]) -> int:
    from ember.runtime.profile import profile_model

    doc = profile_model(str(model), [str(p) for p in images], output, prep, select,
                        CompileOptions(defines=defines, inputs=inputs))
    print(f"profile of {len(doc['tensors'])} tensors from {doc['samples']} image(s) -> {output}")
    return 0


def _classify(model: Path, images: list[Path], opts: CompileOptions, prep, select: str | None, topk: int,
              softmax: bool, expected: list[int], scratch: Path) -> int:
    from ember.api import compile as compile_bundle
    from ember.quant.data import InputInfo, load_image

    if expected and len(expected) != len(images):
        raise OptionError(f"-expected-labels has {len(expected)} labels for {len(images)} images")
    bundle = compile_bundle(model, scratch, **{k: v for k, v in vars(opts).items()})
    feeds_of = [e for e in bundle.inputs if select in (None, e["name"])]
    if select is not None and not feeds_of:
        raise OptionError(f"-model-input-name={select}: the model has no such input "
                          f"(inputs: {', '.join(e['name'] for e in bundle.inputs)})")
    if len(bundle.inputs) != 1 or not feeds_of:
        raise OptionError(f"the model has {len(bundle.inputs)} inputs; images feed a model with one")
    e = feeds_of[0]
    info = InputInfo(e["name"], tuple(e["shape"]), np.dtype(np.float32))
    batch = e["shape"][0] if len(e["shape"]) == 4 else 1
    out_entry = bundle.outputs[0]
    if len(bundle.outputs) > 1:
        note(PROG, f"the model has {len(bundle.outputs)} outputs; ranking the first, '{out_entry['name']}'")
    mismatches = 0
    for start in range(0, len(images), batch):
        group = images[start : start + batch]
        arrays = [load_image(p, info, prep) for p in group]
        arrays += [arrays[-1]] * (batch - len(arrays))  # a last, short batch is padded; its extra rows are dropped
        x = np.stack(arrays).reshape(e["shape"])
        y = bundle.run({e["name"]: x}, cast=True)[out_entry["name"]].astype(np.float32)
        rows = y.reshape(batch, -1)
        for i, path in enumerate(group):
            row = rows[i]
            if softmax:
                row = np.exp(row - row.max())
                row = row / row.sum()
            order = np.argsort(-row, kind="stable")[:topk]
            if topk:
                sys.stdout.write(f" File: {path}")
                for k, label in enumerate(order):
                    sys.stdout.write(("\t\t\t\t\t" if k else "") + f"\tLabel-K{k + 1}: {label} "
                                     f"(probability: {row[label]:.4f})\n")
            if expected and int(expected[start + i]) not in order.tolist():
                print(f" File: {path} doesn't match index: {expected[start + i]} in the top {topk} pairs")
                mismatches += 1
    return mismatches


main = main_of(PROG, run)


if __name__ == "__main__":
    sys.exit(main())
