"""`--tune`: time each layer shape's candidate algorithms on the build machine, keep the fastest.

The layers with a choice (float convolutions: Winograd F(4x4)/F(2x2), ConvNarrow, ConvShifted, im2col or
direct; MatMul with constant B: panels or run-time packing; passes/conv_algorithms.py `candidates`) are
found by one pass run. Candidate set k gives every layer shape not yet in the choice file its k-th
candidate (its last where it has fewer); each set is compiled as one whole bundle, forced through a
temporary choice file, and timed by the instrumented build of `ember bench` (runtime/bench.py
`ProfiledBuild`: a timer around every node), so each layer is timed in its real place in the network,
its input in the cache state the layer before leaves it. Each node keeps its least time over the runs
(on a shared machine a run that lost its core mid-node is not the node's cost), and the sets are timed in
turns, so a load change does not favour one set. Builds = the
most candidates any layer has (at most 5), whatever the number of layers; shapes already in the file are
not timed again.

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
from ember.runtime.bench import ProfiledBuild, latency
from ember.runtime.inputs import random_inputs
from ember.runtime.loader import Bundle
from ember.toolchain.targets import Target, get_target

# Seconds of profiled runs per candidate set (after one warm-up run): enough rounds to average out
# timer jitter on layers of tens of microseconds, while a ResNet-50 set stays at a few seconds.
SECONDS_PER_SET = 1.5
MAX_ROUNDS = 200
REPEATS = 3
# Weights of the candidate builds kept loaded at once for interleaved timing (each holds its own copy).
KEEP_BYTES = 1 << 30

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
    count = max((len(c) for c in layers.values()), default=0)
    best: dict[str, dict[str, float]] = defaultdict(dict)  # key -> candidate -> milliseconds
    if layers:
        # Timed as host builds: a Linux target of this architecture runs the same kernels for its --cpu.
        timed = replace(base, target="host", cpu=options.cpu or (target.cpu if target.kind == "linux" else None))
        with tempfile.TemporaryDirectory(prefix="ember-tune-") as tmp:
            sets = [{key: cands[min(k, len(cands) - 1)] for key, cands in layers.items()} for k in range(count)]
            _time_sets(model_path, timed, sets, Path(tmp), build, best)
    for key, by_choice in best.items():
        us = {c: round(ms * 1e3, 2) for c, ms in by_choice.items()}
        known[key] = {"choice": min(us, key=lambda c: (us[c], c)), "us": us}
    if layers:
        write_document(path, doc)
    return {"file": str(path), "context": context, "timed_shapes": len(best), "known_shapes": len(known),
            "candidate_sets": count, "seconds": round(time.perf_counter() - t0, 3)}


class _Timed:
    """One candidate set's instrumented build, and which node times which (layer key, candidate)."""

    def __init__(self, model_path: str, options: CompileOptions, forced: dict[str, str], folder: Path,
                 build: Builder) -> None:
        choices = folder / "choices.json"
        ctx = context_key(options)
        write_document(choices, {"ember_choices": 1,
                                 "contexts": {ctx: {k: {"choice": c} for k, c in forced.items()}}})
        manifest = build(model_path, folder / "bundle", replace(options, tune_file=str(choices)))
        bundle = Bundle(folder / "bundle")
        feeds = random_inputs(bundle, seed=0)
        probe = latency(bundle, feeds, 1, 1)[0]
        self.rounds = max(2, min(MAX_ROUNDS, int(SECONDS_PER_SET / REPEATS / max(probe, 1e-6))))
        (folder / "profiled").mkdir()
        self.profiled = ProfiledBuild(bundle, feeds, folder / "profiled", options.threads)
        index = {n["name"]: i for i, n in enumerate(manifest["nodes"])}
        self.nodes = [(index[r["node"]], r["key"], r["choice"]) for r in manifest.get("algorithms", [])
                      if forced.get(r["key"]) == r["choice"] and r["node"] in index]
        self.constant = int(manifest["memory"]["constant"])

    def measure(self, best: dict[str, dict[str, float]]) -> None:
        """One repeat: the least time of each node over `rounds` runs; a layer shape keeps its least over
        the repeats (of its nodes' mean, where several nodes share the shape)."""
        ms = self.profiled.run_least(self.rounds)
        sums: dict[tuple[str, str], list[float]] = defaultdict(list)
        for i, key, choice in self.nodes:
            sums[(key, choice)].append(ms[i])
        for (key, choice), v in sums.items():
            mean = sum(v) / len(v)
            best[key][choice] = min(best[key].get(choice, mean), mean)


def _time_sets(model_path: str, options: CompileOptions, sets: list[dict[str, str]], folder: Path, build: Builder,
               best: dict[str, dict[str, float]]) -> None:
    """Builds every candidate set, then times them in turns (REPEATS rounds of all sets, alternating order),
    so that a load change on a shared machine shifts every candidate alike instead of the set it hit. Sets
    are kept loaded only while their weights fit KEEP_BYTES; beyond that each is timed as soon as built."""
    kept: list[_Timed] = []
    held = 0
    for k, forced in enumerate(sets):
        (folder / f"set{k}").mkdir()
        timed = _Timed(model_path, options, forced, folder / f"set{k}", build)
        if held + timed.constant <= KEEP_BYTES:
            kept.append(timed)
            held += timed.constant
        else:
            for _ in range(REPEATS):
                timed.measure(best)
    for r in range(REPEATS):
        for timed in kept if r % 2 == 0 else reversed(kept):
            timed.measure(best)
