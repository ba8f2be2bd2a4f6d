"""`ember deploy FILE.yml`: every model compiled with ember's API for every target, archived into one
lib<library>.a per target beside the models' headers, weights and manifests and the registry; then, on
request, every model validated against onnxruntime and timed (host bundles)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ember.api import write_bundle
from ember.codegen.bundle import network_name
from ember.config import CompileOptions
from ember.deploy import registry
from ember.deploy.config import DeployError, DeployFile, TargetSpec, print_notes, read
from ember.deploy.model import Prepared, prepare
from ember.errors import EmberError, ToolchainError
from ember.progress import Progress
from ember.toolchain.cc import compile_object, find_compiler
from ember.toolchain.targets import get_target
from ember.version import __version__

_NEUTRAL = re.compile(r"\b(?:t|n|input|output|model)_\d+\b")
MODEL_FILES = (".h", ".weights.bin", ".weights.txt", ".json")


@dataclass
class Built:
    """One model built for one target: its bundle folder (in the work folder) and manifest."""

    model: Prepared
    target: TargetSpec
    folder: Path
    manifest: dict[str, Any]
    validation: dict[str, Any] | None = None
    bench: dict[str, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def deploy(path: str, out: str | None = None, validate: bool = False, benchmark: bool = False,
           rounds: int = 10) -> int:
    dep = read(path)
    lib = network_name(dep.library_name)
    dest = Path(out) if out else Path("build") / dep.library_name
    for t in dep.targets:
        _check_destination(dest / t.abi, dep.library_name)
    work = Path(tempfile.mkdtemp(prefix="ember-deploy-"))
    try:
        models = _prepare_all(dep, lib, work)
        built: dict[str, list[Built]] = {}
        bar = Progress(len(dep.targets) * len(models), "deploying", "bundle")
        try:
            for t in dep.targets:
                built[t.abi] = []
                for m in models:
                    bar.step(f"{m.name} for {t.abi}")
                    built[t.abi].append(_build(m, t, work / t.abi, _profile(dep, m, work)))
        finally:
            bar.close()
        _check_output_shapes(next(iter(built.values())))
        host = next((b for t, b in built.items() if _target_of(dep, t).target == "host"), None)
        if (validate or benchmark) and host is None:  # validation runs on the host: build it there too
            host = [_build(m, TargetSpec("host", "host", None), work / "_host", _profile(dep, m, work)) for m in models]
        ok = True
        if validate and host is not None:
            for b in host:
                b.validation = _validate(dep, b)
                ok &= b.validation["pass"]
        if benchmark and host is not None:
            for b in host:
                b.bench = _bench(dep, b, rounds)
        for t in dep.targets:
            stage = work / f"_stage_{t.abi}"
            _package(dep, lib, t, built[t.abi], host if validate or benchmark else None, stage)
        for t in dep.targets:
            _install(work / f"_stage_{t.abi}", dest / t.abi, dep.library_name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_notes(dep.notes)  # after the build, so that an error stays the one line printed
    _summary(dep, lib, dest, built, host if validate or benchmark else None)
    return 0 if ok else 1


def _target_of(dep: DeployFile, abi: str) -> TargetSpec:
    return next(t for t in dep.targets if t.abi == abi)


def _prepare_all(dep: DeployFile, lib: str, work: Path) -> list[Prepared]:
    models: list[Prepared] = []
    reserved = {lib, f"{lib}_models", f"{lib}_find_model", f"{lib}_tensor_t", f"{lib}_model_t"}
    for i, spec in enumerate(dep.models):
        m = prepare(dep, spec, i, network_name(spec.key), work)
        if m.name in reserved or m.name.upper() == lib.upper():
            raise DeployError(f"{spec.where}: the model's C name '{m.name}' is the library's ('{lib}'); "
                              "rename the model or the library")
        if any(p.name == m.name for p in models):
            raise DeployError(f"{spec.where}: two models have the C name '{m.name}'; rename one")
        models.append(m)
    return models


def _profile(dep: DeployFile, m: Prepared, work: Path) -> str | None:
    """quantize: 1: the profile ember's int8 path needs (quantize_range_file, or one made from calibration_data)."""
    spec = m.spec
    if not spec.quantize:
        return None
    if spec.range_file:
        path = dep.resolve(spec.range_file)
        if not path.is_file():
            raise DeployError(f"{spec.where}.quantize_range_file: {path}: no such file")
        return str(path)
    out = work / f"{m.name}.profile.yaml"
    if out.exists():
        return str(out)
    from ember.runtime.profile import profile_model

    files = []
    for text in spec.calibration:
        p = dep.resolve(text)
        if not p.exists():
            raise DeployError(f"{spec.where}.calibration_data: {p}: no such file or folder")
        files.append(str(_renamed_npz(p, m, work) if m.rename and p.suffix == ".npz" else p))
    profile_model(str(m.path), files, out, options=CompileOptions(inputs=m.input_specs))
    return str(out)


def _renamed_npz(path: Path, m: Prepared, work: Path) -> Path:
    """A .npz keyed by the model's input names, re-keyed by their obfuscated names."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {m.rename.get(k, k): z[k] for k in z.files}
    out = work / f"calib_{len(list(work.glob('calib_*')))}.npz"
    np.savez(out, **arrays)
    return out


def _build(m: Prepared, t: TargetSpec, folder: Path, profile: str | None) -> Built:
    spec = m.spec
    opts = CompileOptions(name=m.name, target=t.target, float_abi=t.float_abi, inputs=m.input_specs,
                          weights=spec.weights, quantize="int8" if spec.quantize else None, profile=profile)
    bundle = folder / m.name
    try:
        manifest = write_bundle(str(m.path), bundle, opts, command="ember deploy")
    except EmberError as e:
        raise DeployError(f"{spec.where}: {t.abi}: {_original_names(str(e), m)}") from None
    return Built(m, t, bundle, manifest)


def _original_names(text: str, m: Prepared) -> str:
    """An error about an obfuscated model, said with its own names (stderr only; nothing is written)."""
    return _NEUTRAL.sub(lambda x: m.reverse.get(x.group(0), x.group(0)), text) if m.reverse else text


def _check_output_shapes(built: list[Built]) -> None:
    for b in built:
        spec = b.model.spec
        for j, (want, e) in enumerate(zip(spec.output_shapes, b.manifest["outputs"], strict=False)):
            if list(e["shape"]) != list(want):
                raise DeployError(f"{spec.tensors_at}.output_shapes[{j}]: {want} given, but output "
                                  f"'{spec.outputs[j]}' has shape {e['shape']}")


def _archiver(target: str) -> list[str]:
    """The host's ar for host objects; LLVM's (zig's or a system llvm-ar) for every other target."""
    if target == "host" and shutil.which("ar"):
        return ["ar"]
    if find_compiler(get_target(target), None).family == "zig":
        return [*find_compiler(get_target(target), None).command[:-1], "ar"]
    if shutil.which("llvm-ar"):
        return ["llvm-ar"]
    raise ToolchainError("no archiver: install binutils (ar) or ember[cross] (zig's ar)")


def _package(dep: DeployFile, lib: str, t: TargetSpec, built: list[Built], host: list[Built] | None,
             stage: Path) -> None:
    """lib<lib>.a (every model's object + the registry's), <lib>.h, and each model's header/weights/manifest."""
    stage.mkdir(parents=True)
    manifests = [b.manifest for b in built]
    fname = dep.library_name  # file names as the deployment file spells the library; C names sanitized
    (stage / f"{fname}.h").write_text(registry.header(lib, manifests))
    reg_c = stage.parent / f"_{lib}_registry_{t.abi}" / f"{lib}_registry.c"
    reg_c.parent.mkdir()
    lookup = [b.model.name if b.model.spec.obfuscate else b.model.spec.key for b in built]
    reg_c.write_text(registry.source(lib, manifests, f"{fname}.h", lookup))
    shutil.copy(stage / f"{fname}.h", reg_c.parent / f"{fname}.h")
    target = get_target(t.target)
    reg_o = reg_c.with_suffix(".o")
    compile_object(reg_c, reg_o, target, target.float_abi(t.float_abi), 2, target.reloc, None)
    objects = [b.folder / f"{b.model.name}.o" for b in built] + [reg_o]
    archive = stage / f"lib{fname}.a"
    cmd = [*_archiver(t.target), "rcsD", str(archive), *map(str, objects)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise ToolchainError(f"archiving lib{fname}.a for {t.abi} failed: {res.stderr.strip()[:300]}")
    files = [archive.name, f"{fname}.h", f"{fname}.json"]
    for b in built:
        for suffix in MODEL_FILES:
            src = b.folder / f"{b.model.name}{suffix}"
            if src.exists():
                shutil.copy(src, stage / src.name)
                files.append(src.name)
    checked = {b.model.name: b for b in host or []}
    doc = {
        "ember_deploy": __version__, "library_name": fname, "c_name": lib, "abi": t.abi, "target": t.target,
        "float_abi": t.float_abi, "files": files,
        "activations_mem_size": max(m["memory"]["activations"] for m in manifests),
        "models": [{"name": b.model.name, "memory": b.manifest["memory"], "footprint": b.manifest["footprint"],
                    "validation": checked[b.model.name].validation if b.model.name in checked else None,
                    "benchmark": checked[b.model.name].bench if b.model.name in checked else None}
                   for b in built],
    }
    (stage / f"{fname}.json").write_text(json.dumps(doc, indent=2) + "\n")


def _check_destination(folder: Path, library: str) -> None:
    """Only a folder that is empty, new, or an earlier `ember deploy` of this library is written to."""
    if folder.exists() and not folder.is_dir():
        raise DeployError(f"{folder}: exists and is not a directory")
    if folder.is_dir() and any(folder.iterdir()) and _own(folder, library) is None:
        raise DeployError(f"{folder}: not empty and not an earlier `ember deploy` of {library}; give another -o")


def _own(folder: Path, library: str) -> dict[str, Any] | None:
    try:
        doc = json.loads((folder / f"{library}.json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) and "ember_deploy" in doc else None


def _install(stage: Path, folder: Path, library: str) -> None:
    """The staged files replace the earlier deploy's; files of its models no longer deployed go."""
    previous = (_own(folder, library) or {}).get("files", []) if folder.is_dir() else []
    folder.mkdir(parents=True, exist_ok=True)
    new = {f.name for f in stage.iterdir()}
    for f in stage.iterdir():
        f.replace(folder / f.name)
    for name in previous:
        if isinstance(name, str) and name not in new and "/" not in name and (folder / name).is_file():
            (folder / name).unlink()


def _feeds(dep: DeployFile, b: Built) -> dict[str, np.ndarray]:
    """validation_inputs_data, or uniform random values in input_ranges (default [-1, 1], as MACE)."""
    spec, m = b.model.spec, b.model
    entries = {e["name"]: e for e in b.manifest["inputs"]}
    rng = np.random.default_rng(0)
    feeds = {}
    for j, name in enumerate(m.inputs):
        e = entries[name]
        dtype = np.dtype(e["dtype"]) if e["dtype"] != "bool" else np.dtype(bool)
        if spec.validation_inputs:
            text = spec.validation_inputs[j]
            path = dep.resolve(text)
            where = f"{spec.tensors_at}.validation_inputs_data[{j}]"
            try:
                arr = np.load(path, allow_pickle=False)
            except (OSError, ValueError, EOFError) as err:
                raise DeployError(f"{where}: {path}: not a .npy file ({str(err).splitlines()[0]})") from None
            if not isinstance(arr, np.ndarray) or arr.size != int(np.prod(e["shape"])):
                raise DeployError(f"{where}: {path}: expected {int(np.prod(e['shape']))} values for shape "
                                  f"{e['shape']}")
            feeds[name] = arr.reshape(e["shape"]).astype(dtype)
        else:
            lo, hi = spec.input_ranges[j] if spec.input_ranges else (-1.0, 1.0)
            vals = rng.uniform(lo, hi, e["shape"])
            feeds[name] = (vals if dtype.kind == "f" else np.round(vals)).astype(dtype)
    return feeds


def _validate(dep: DeployFile, b: Built) -> dict[str, Any]:
    from ember.reference import onnxruntime_session
    from ember.runtime.loader import load
    from ember.validate import compare

    if importlib.util.find_spec("onnxruntime") is None:
        raise DeployError("ember deploy --validate needs onnxruntime: pip install 'ember[validate]'")
    spec = b.model.spec
    threshold = spec.threshold if spec.threshold is not None else (
        0.99 if spec.quantize or spec.weights == "int8" else 0.999)
    feeds = _feeds(dep, b)
    sess = onnxruntime_session(str(b.model.path))
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
    got = load(b.folder, b.model.name).run(feeds)
    worst = {"cosine": 1.0, "max_abs_error": 0.0}
    for name in b.model.outputs:
        c = compare(np.asarray(ref[name]), got[name])
        worst = {"cosine": min(worst["cosine"], c["cosine"]),
                 "max_abs_error": max(worst["max_abs_error"], c["max_abs_error"])}
    return {**worst, "threshold": threshold, "pass": worst["cosine"] >= threshold}


def _bench(dep: DeployFile, b: Built, rounds: int) -> dict[str, float]:
    from ember.runtime.bench import latency
    from ember.runtime.loader import load

    times = sorted(latency(load(b.folder, b.model.name), _feeds(dep, b), max(rounds, 1), max(1, rounds // 10)))
    return {"rounds": len(times), "min_ms": times[0] * 1e3, "median_ms": float(np.median(times)) * 1e3}


def _summary(dep: DeployFile, lib: str, dest: Path, built: dict[str, list[Built]], host: list[Built] | None) -> None:
    """One row per model and target; validation and timing belong to the host build's rows (a host build
    made only for them is listed as `host*`)."""
    print(f"library {dep.library_name}: {len(dep.models)} model(s), {len(built)} target(s) -> {dest}")
    print(f"{'model':<28} {'target':<12} {'flash':>12} {'RAM':>12}  validation")
    rows = dict(built)
    if host is not None and not any(_target_of(dep, abi).target == "host" for abi in built):
        rows["host*"] = host
    for abi, bs in rows.items():
        is_host = abi == "host*" or _target_of(dep, abi).target == "host"
        for b in bs:
            label = b.model.name if b.model.name == b.model.spec.key else f"{b.model.spec.key} ({b.model.name})"
            fp = b.manifest["footprint"]
            print(f"{label:<28} {abi:<12} {fp['flash']:>12,} {fp['ram']:>12,}  {_checks(b) if is_host else '-'}")
        arena = max(b.manifest["memory"]["activations"] for b in bs)
        flash = sum(b.manifest["footprint"]["flash"] for b in bs)
        ram = sum(b.manifest["memory"]["mutable"] for b in bs) + arena
        total = f"= lib{dep.library_name}.a"
        print(f"{total:<28} {abi:<12} {flash:>12,} {ram:>12,}  (one shared activation arena of {arena:,} B)")
    if "host*" in rows:
        print("host*: built only to validate or time the models on this machine; not written")


def _checks(b: Built) -> str:
    text = "-"
    r = b.validation
    if r is not None:
        text = f"PASS (cosine {r['cosine']:.6f} >= {r['threshold']})" if r["pass"] else \
            f"FAIL (cosine {r['cosine']:.6f} < {r['threshold']})"
    if b.bench is not None:
        text = ("" if text == "-" else text + "  ") + \
            f"median {b.bench['median_ms']:.4f} ms, min {b.bench['min_ms']:.4f} ms ({b.bench['rounds']} rounds)"
    return text
