"""`--tune`: time each layer shape's candidate algorithms on the build machine, keep the fastest.

The layers with a choice (float convolutions: Winograd F(4x4)/F(2x2), ConvNarrow, ConvShifted, im2col or
direct; MatMul with constant B: panels or run-time packing; passes/conv_algorithms.py `candidates`) are
found by one pass run. Candidate set k gives every layer shape not yet in the choice file its k-th
candidate (its last where it has fewer); each set is compiled as one whole bundle, forced through a
temporary choice file, and timed by the instrumented build of `ember bench` (runtime/bench.py
`profile`: a timer around every node), so each layer is timed in its real place in the network, its
input in the cache state the layer before leaves it. Compiles = the most candidates any layer has
(at most 5), whatever the number of layers; shapes already in the file are not timed again.

Timing needs the bundle's own instructions on this machine: host bundles, and Linux targets of this
machine's architecture (timed as host builds for their --cpu). Other targets are refused.
"""

from __future__ import annotations

import platform
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ember.config import CompileOptions
from ember.driver import build_graph
from ember.errors import OptionError
from ember.passes.choice_file import choice_path, context_key, read_document, write_document
from ember.passes.conv_algorithms import CHOICE_ATTR, AlgorithmChoice
from ember.passes.pipeline import Purpose
from ember.runtime.bench import latency, profile
from ember.runtime.inputs import random_inputs
from ember.runtime.loader import Bundle
from ember.toolchain.targets import Target, get_target

# Seconds of profiled runs per candidate set (after one warm-up run): enough rounds to average out
# timer jitter on layers of tens of microseconds, while a ResNet-50 set stays at a few seconds.
SECONDS_PER_SET = 1.5
MAX_ROUNDS = 200

Builder = Callable[[str, Path, CompileOptions], dict[str, Any]]


def check_tune(options: CompileOptions, target: Target) -> None:
    """--tune on a target whose code cannot run here: one line saying why."""
    if not options.tune:
        return
    if target.kind in ("mcu", "wasm"):
        what = "a microcontroller" if target.kind == "mcu" else "a WebAssembly"
        raise OptionError(f"--tune: target '{target.name}' is {what} target; tuning times kernels on the build "
                          "machine, which cannot run that target's code at its speed (compile without --tune)")
    if target.kind == "linux" and target.zig_arch != _host_arch():
        raise OptionError(f"--tune: target '{target.name}' is not this machine's architecture ({_host_arch()}); "
                          "timings under emulation say nothing of the device: run `ember compile --tune` on the "
                          "device (or one of its CPU) and pass its choice file here with --tune-file")


def _host_arch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def tune(model_path: str, options: CompileOptions, build: Builder) -> dict[str, Any]:
    """Times the layer shapes of the model that the choice file lacks for this context and adds them to it.
    `build(model, folder, options)` writes a bundle (api.write_bundle). Returns what NAME.json records."""
    t0 = time.perf_counter()
    target = get_target(options.target)
    check_tune(options, target)
    path, context = choice_path(options), context_key(options)
    doc = read_document(path, missing_ok=True)
    known = doc["contexts"].setdefault(context, {})
    base = replace(options, tune=False, tune_file=None, dump_graph=None, weights_txt=False)
    graph, _, _ = build_graph(model_path, base, Purpose.BUNDLE, target.kind, int8_isa=target.int8_isa)
    layers: dict[str, tuple[str, ...]] = {}
    for node in graph.nodes:
        c = node.attrs.get(CHOICE_ATTR)
        if isinstance(c, AlgorithmChoice) and len(c.candidates) > 1 and c.key not in known:
            layers[c.key] = c.candidates
    sets = max((len(c) for c in layers.values()), default=0)
    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    if layers:
        # Timed as host builds: a Linux target of this architecture runs the same kernels for its --cpu.
        timed = replace(base, target="host", cpu=options.cpu or (target.cpu if target.kind == "linux" else None))
        with tempfile.TemporaryDirectory(prefix="ember-tune-") as tmp:
            for k in range(sets):
                forced = {key: cands[min(k, len(cands) - 1)] for key, cands in layers.items()}
                _time_set(model_path, timed, forced, Path(tmp) / f"set{k}", build, times)
    for key, by_choice in times.items():
        us = {c: round(sum(v) / len(v) * 1e3, 2) for c, v in by_choice.items()}
        known[key] = {"choice": min(us, key=lambda c: (us[c], c)), "us": us}
    if layers:
        write_document(path, doc)
    return {"file": str(path), "context": context, "timed_shapes": len(times), "known_shapes": len(known),
            "candidate_sets": sets, "seconds": round(time.perf_counter() - t0, 3)}


def _time_set(model_path: str, options: CompileOptions, forced: dict[str, str], folder: Path, build: Builder,
              times: dict[str, dict[str, list[float]]]) -> None:
    """Compiles the model with `forced` choices and adds each forced node's milliseconds to `times`."""
    choices = folder / "choices.json"
    ctx = context_key(options)
    write_document(choices, {"ember_choices": 1, "contexts": {ctx: {k: {"choice": c} for k, c in forced.items()}}})
    manifest = build(model_path, folder / "bundle", replace(options, tune_file=str(choices)))
    bundle = Bundle(folder / "bundle")
    feeds = random_inputs(bundle, seed=0)
    probe = latency(bundle, feeds, 1, 1)[0]
    rounds = max(3, min(MAX_ROUNDS, int(SECONDS_PER_SET / max(probe, 1e-6))))
    by_node = {r["name"]: r["ms"] for r in profile(bundle, feeds, rounds, options.threads)}
    for rec in manifest.get("algorithms", []):
        if forced.get(rec["key"]) == rec["choice"] and rec["node"] in by_node:
            times[rec["key"]][rec["choice"]].append(by_node[rec["node"]])
