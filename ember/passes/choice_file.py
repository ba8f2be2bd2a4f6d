"""The choice file of `--tune`: which algorithm each layer shape takes, measured on one machine.

A JSON document. Its `contexts` are keyed by what the timings depend on besides the shape: target, CPU
(name, family and, for `native`, the model name), C compiler, optimization level and thread count; inside a
context, each layer key (conv_algorithms.layer_key) holds the chosen algorithm and the time of every
candidate in microseconds. ember/tune.py fills it; a compile with `--tune-file PATH` (or `--tune`) reads it,
and the same file always gives the same bundle: only the `choice` fields are read.

    {"ember_choices": 1, "contexts": {"target=host cpu=native ...": {"Conv x=1x64x56x56 w=...":
        {"choice": "winograd4", "us": {"winograd4": 210.5, "winograd": 260.1, ...}}}}}
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ember.config import CompileOptions
from ember.errors import OptionError
from ember.toolchain.cpus import resolve_cpu

SCHEMA = 1


def default_path() -> Path:
    """Where `--tune` keeps its choices without `--tune-file`: $XDG_CACHE_HOME/ember/choices.json."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ember" / "choices.json"


def choice_path(options: CompileOptions) -> Path:
    return Path(options.tune_file) if options.tune_file else default_path()


def context_key(options: CompileOptions) -> str:
    cpu = resolve_cpu(options.target, options.cpu, options.cpu_params)
    if cpu is None:
        where = f"cpu={options.cpu or 'default'}"
    else:
        where = f"cpu={cpu.name} family={cpu.family.name}" + (f" model={cpu.model!r}" if cpu.model else "")
    return f"target={options.target} {where} cc={options.cc or 'cc'} -O{options.opt_level} threads={options.threads}"


def read_document(path: Path, missing_ok: bool) -> dict[str, Any]:
    """The whole file (an empty document where it does not exist and `missing_ok`)."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        if missing_ok:
            return {"ember_choices": SCHEMA, "contexts": {}}
        raise OptionError(f"--tune-file {path}: no such file (make one with --tune --tune-file {path})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise OptionError(f"--tune-file {path}: not a readable ember choice file ({e})") from None
    if not isinstance(doc, dict) or doc.get("ember_choices") != SCHEMA or not isinstance(doc.get("contexts"), dict):
        raise OptionError(f"--tune-file {path}: not an ember choice file (version {SCHEMA})")
    return doc


def read_choices(options: CompileOptions) -> dict[str, str]:
    """layer key -> algorithm for this compile's context (empty where the file has none for it)."""
    path = choice_path(options)
    layers = read_document(path, missing_ok=options.tune).get("contexts", {}).get(context_key(options), {})
    if not isinstance(layers, dict):
        raise OptionError(f"--tune-file {path}: context '{context_key(options)}' is not an object")
    return {k: v["choice"] for k, v in layers.items() if isinstance(v, dict) and isinstance(v.get("choice"), str)}


def write_document(path: Path, doc: dict[str, Any]) -> None:
    """Replaces the file atomically (sorted keys: the same choices are the same bytes)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".choices-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        raise OptionError(f"--tune-file {path}: cannot write it ({e.strerror})") from None
