"""Timers for one model on both engines, measured interleaved so that both see the same machine state."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import ember


class EmberTimer:
    def __init__(self, bundle: ember.Bundle, feeds: dict[str, np.ndarray]) -> None:
        self.runner = bundle.runner(feeds)
        self.run_once = self.runner.run_once

    def outputs(self) -> dict[str, np.ndarray]:
        return self.runner()


class OrtTimer:
    """onnxruntime with one intra-op thread (or `threads`), sequential execution, inputs and outputs bound once.
    `spin=False`: idle workers sleep instead of spinning, so that they leave the cores to the engine timed next."""

    def __init__(self, model: Path, feeds: dict[str, np.ndarray], threads: int = 1, spin: bool = True) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        if not spin:
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.binding = self.sess.io_binding()
        for name, arr in feeds.items():
            self.binding.bind_cpu_input(name, arr)
        for o in self.sess.get_outputs():
            self.binding.bind_output(o.name, "cpu")
        self.names = [o.name for o in self.sess.get_outputs()]

    def run_once(self) -> None:
        self.sess.run_with_iobinding(self.binding)

    def outputs(self) -> dict[str, np.ndarray]:
        self.run_once()
        return dict(zip(self.names, self.binding.copy_outputs_to_cpu(), strict=True))


def _once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleave(a, b, rounds: int, warmup: int, budget_s: float = 3.0) -> tuple[list[float], list[float]]:
    """Warm both up, then alternate one run of each per round; returns both lists of seconds."""
    probe = max(_once(a.run_once), _once(b.run_once), 1e-6)
    warmup = warmup or max(3, int(0.5 / (2 * probe)))
    rounds = rounds or max(10, min(2000, int(budget_s / (2 * probe))))
    for _ in range(warmup):
        a.run_once()
        b.run_once()
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(_once(a.run_once))
        tb.append(_once(b.run_once))
    return ta, tb
