"""`ember bench OUT`: latency of a host bundle over many rounds, and where the time goes per operator.

The per-operator profile comes from an instrumented build of the same NAME.c (-DEMBER_PROFILE turns
on a timer call before and after every node), linked with a small timer in C; the latency figures
come from the bundle's own, uninstrumented NAME.o.
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ember.errors import ToolchainError
from ember.quant.data import Preprocess
from ember.runtime.inputs import input_infos, load_feeds, random_inputs, sample
from ember.runtime.loader import Bundle, entry_point, link_flags, set_threads
from ember.toolchain.cc import compile_object, link_shared
from ember.toolchain.targets import get_target

_TIMER_C = """#include <stdint.h>
#include <time.h>
uint64_t ember_profile_ns[{n}];
static uint64_t start_ns;
void ember_profile_event(int node, int end) {{
    struct timespec t;
    uint64_t now;
    clock_gettime(CLOCK_MONOTONIC, &t);
    now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    if (end) ember_profile_ns[node] += now - start_ns;
    else start_ns = now;
}}
"""


def latency(bundle: Bundle, feeds: dict[str, np.ndarray], rounds: int, warmup: int) -> list[float]:
    runner = bundle.runner(feeds)
    for _ in range(warmup):
        runner.run_once()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        runner.run_once()
        times.append(time.perf_counter() - t0)
    return times


class ProfiledBuild:
    """The instrumented build of a bundle (-DEMBER_PROFILE, a timer around every node), loaded, with its
    own regions holding `feeds`: `run(rounds)` gives each node's mean milliseconds over `rounds` runs.
    Built in `work` (a folder the caller removes); --tune (ember/tune.py) keeps several at once."""

    def __init__(self, bundle: Bundle, feeds: dict[str, np.ndarray], work: Path, threads: int = 1) -> None:
        man = bundle.manifest
        self.nodes = man["nodes"]
        opts = man["options"]
        target = get_target("host")
        src = bundle.path / f"{bundle.name}.c"
        obj, timer_c, timer_o = work / "profiled.o", work / "timer.c", work / "timer.o"
        compile_object(src, obj, target, target.float_abi(None), opts["opt_level"], "pic", opts.get("cc"),
                       opts.get("cpu"), extra=("-DEMBER_PROFILE", f"-I{bundle.path}"))
        timer_c.write_text(_TIMER_C.format(n=max(len(self.nodes), 1)))
        _compile_hosted(timer_c, timer_o)
        so = work / "profiled.so"
        link_shared([obj, timer_o], so, opts.get("cc"), libs=link_flags(man))
        self.lib = ctypes.CDLL(str(so))
        set_threads(self.lib, man, threads)
        self.runner = bundle.runner(feeds, entry_point(self.lib, bundle.name))
        self.runner.run_once()
        self.counters = (ctypes.c_uint64 * max(len(self.nodes), 1)).in_dll(self.lib, "ember_profile_ns")

    def run(self, rounds: int) -> list[float]:
        ctypes.memset(self.counters, 0, ctypes.sizeof(self.counters))
        for _ in range(rounds):
            self.runner.run_once()
        return [ns / rounds / 1e6 for ns in self.counters[: len(self.nodes)]]

    def run_least(self, rounds: int) -> list[float]:
        """Each node's least milliseconds over `rounds` runs: on a busy machine a run that lost its core
        mid-node shows in that node's mean, not in its minimum."""
        counts = np.frombuffer(self.counters, np.uint64)[: len(self.nodes)]
        least = np.full(len(self.nodes), np.iinfo(np.uint64).max, np.uint64)
        for _ in range(rounds):
            ctypes.memset(self.counters, 0, ctypes.sizeof(self.counters))
            self.runner.run_once()
            np.minimum(least, counts, out=least)
        return [float(ns) / 1e6 for ns in least]


def profile(bundle: Bundle, feeds: dict[str, np.ndarray], rounds: int, threads: int = 1) -> list[dict[str, Any]]:
    """Mean milliseconds per run of every node, from an instrumented build of the bundle."""
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as tmp:
        build = ProfiledBuild(bundle, feeds, Path(tmp), threads)
        ms = build.run(rounds)
    return [{"index": i, "name": n["name"], "op": n["op"], "ms": ms[i]} for i, n in enumerate(build.nodes)]


def _compile_hosted(src: Path, obj: Path) -> None:
    """The timer is ordinary hosted POSIX C (clock_gettime), so not the bundle's strict C99 flags."""
    res = subprocess.run(["cc", "-O2", "-fPIC", "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
    if res.returncode != 0:
        raise ToolchainError(f"compiling the profiling timer failed: {res.stderr.strip()[:300]}")


def bench(path: str | Path, rounds: int = 0, warmup: int = 0, with_profile: bool = True,
          inputs: list[str] | None = None, prep: Preprocess | None = None,
          threads: int | None = None) -> dict[str, Any]:
    """`inputs`: --input NAME=FILE specs to time the bundle on (their first sample); default random data.
    `threads`: how many of a multi-threaded bundle's threads to run on (default: all it was compiled for)."""
    bundle = Bundle(path)
    threads = bundle.threads if threads is None else threads
    bundle.set_threads(threads)
    feeds = random_inputs(bundle, seed=0)
    if inputs:
        stacks, _ = load_feeds(inputs, input_infos(bundle.inputs), prep)
        feeds.update(sample(stacks, 0))
    probe = latency(bundle, feeds, 1, 1)[0]
    warmup = warmup or max(2, min(100, int(0.3 / max(probe, 1e-6))))
    rounds = rounds or max(10, min(1000, int(2.0 / max(probe, 1e-6))))
    times = latency(bundle, feeds, rounds, warmup)
    ms = sorted(t * 1e3 for t in times)
    result: dict[str, Any] = {
        "name": bundle.name, "rounds": rounds, "warmup": warmup,
        "min_ms": ms[0], "median_ms": statistics.median(ms), "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))],
        "mean_ms": statistics.fmean(ms), "memory": bundle.memory, "footprint": bundle.footprint,
        "flops": bundle.manifest.get("flops", 0), "threads": threads,
    }
    if with_profile:
        result["profile"] = profile(bundle, feeds, max(3, min(rounds, 200)), threads)
    return result
