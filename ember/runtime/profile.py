"""`ember profile`: run a capture build of the float bundle over calibration data; write profile.yaml.

The bundle is the model's own float code (the pipeline a quantized compile starts from), compiled
with -DEMBER_CAPTURE so that every node hands its outputs to a copier after it runs. Runs land side
by side in one buffer; each tensor's min, max and histogram (histogram.py) are then updated from the
whole batch of runs at once by numpy.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import numpy as np
import yaml

from ember.config import CompileOptions
from ember.errors import OptionError
from ember.ir.dtypes import DType
from ember.ir.graph import Graph, Value
from ember.progress import Progress
from ember.quant.data import DataSource, InputInfo, Preprocess, collect_files
from ember.quant.histogram import BINS, Histogram
from ember.version import __version__

FORMAT = 1
_BATCH_BYTES = 64 << 20  # capture buffer size: how many runs are reduced together


def captured_values(graph: Graph) -> list[Value]:
    """Node outputs in the order of the generated code's EMBER_CAPTURE_TENSOR indices."""
    return [v for n in graph.nodes for v in n.outputs if v is not None]


class ProfileProgress:
    """A bar over the input files on a terminal (ember.progress), and a closing summary line when there
    were enough files to be worth one."""

    def __init__(self, total: int, stream: IO[str] | None = None, min_total: int = 10) -> None:
        self.total, self.stream = total, stream if stream is not None else sys.stderr
        self.enabled = total >= min_total
        self.bar = Progress(total, "profiling", "file", self.stream, min_total)
        self.start = time.perf_counter()

    def update(self, done: int) -> None:
        self.bar.update(done)

    def close(self, samples: int) -> None:
        self.bar.close()
        if self.enabled:
            self.stream.write(f"profiled {samples} sample(s) from {self.total} files in "
                              f"{time.perf_counter() - self.start:.1f}s\n")
            self.stream.flush()


def profile_model(model: str, data: list[str], output: str | Path, prep: Preprocess | None = None,
                  select: str | None = None, options: CompileOptions | None = None,
                  stream: IO[str] | None = None, named: list[str] | None = None) -> dict[str, Any]:
    """Profile `model` on `data` (files/folders for one input, or .npz files by input name) or on `named`
    (`NAME=PATH` specs, each input its own files); writes the YAML to `output` and returns it as a dict."""
    from ember.driver import lower
    from ember.passes.pipeline import Purpose
    from ember.runtime.capture import CaptureLibrary

    prep = prep or Preprocess()
    options = options or CompileOptions()
    by_name: dict[str, list[Path]] = {}
    for spec in named or []:
        name, _, path = spec.partition("=")
        if name in by_name:
            raise OptionError(f"--input {name} given twice")
        by_name[name] = collect_files([path])
    files = collect_files(data) if data or not by_name else []
    lowered = lower(model, options, Purpose.PROFILE, command="ember profile (capture build)")
    graph, plan, src, sha = lowered.graph, lowered.plan, lowered.sources, lowered.model_sha
    inputs = [InputInfo(v.name, v.shape, v.dtype.np) for v in graph.inputs]
    source = DataSource(files, inputs, prep, select, by_name)
    values = captured_values(graph)
    float_values = [(i, v) for i, v in enumerate(values) if v.dtype is DType.FLOAT32]
    offsets = np.full(len(values), -1, np.int64)
    slot = 0
    for i, v in float_values:
        offsets[i] = slot
        slot += (v.type.nbytes + 63) // 64 * 64
    hists: dict[str, Histogram] = {v.name: Histogram() for v in graph.inputs if v.dtype is DType.FLOAT32}
    hists.update({v.name: Histogram() for _, v in float_values})
    samples = 0
    with tempfile.TemporaryDirectory(prefix="ember-profile-") as tmp:
        c_path = Path(tmp) / f"{graph.name}.c"
        c_path.write_text(src.c)
        (Path(tmp) / f"{graph.name}.h").write_text(src.h)
        lib = CaptureLibrary(c_path, graph.name, plan.constant_bytes(), plan.mutable_size, plan.activations_size)
        lib.set_offsets(offsets)
        batch = max(1, _BATCH_BYTES // max(slot, 1))
        buffer = np.zeros(batch * max(slot, 1), np.uint8)
        feeds_seen: list[dict[str, np.ndarray]] = []
        progress = ProfileProgress(len(source), stream)

        def reduce() -> None:
            n = len(feeds_seen)
            rows = buffer[: n * max(slot, 1)].reshape(n, max(slot, 1))
            for i, v in float_values:
                off = int(offsets[i])
                hists[v.name].add(rows[:, off : off + v.type.nbytes].view(np.float32))
            for v in graph.inputs:
                if v.name in hists:
                    hists[v.name].add(np.stack([f[v.name] for f in feeds_seen]))
            feeds_seen.clear()

        for done, feed in source.samples():
            for v in graph.inputs:
                raw = np.ascontiguousarray(feed[v.name], dtype=v.dtype.np).reshape(-1).view(np.uint8)
                off = plan.where(v)[1]
                lib.mutable[off : off + raw.size] = raw
            k = len(feeds_seen)
            lib.run(buffer[k * slot : (k + 1) * slot] if slot else buffer)
            feeds_seen.append(feed)
            samples += 1
            if len(feeds_seen) == batch:
                reduce()
            progress.update(done)
        if feeds_seen:
            reduce()
        progress.close(samples)
    if source.skipped:
        print(f"ember: warning: the last {source.skipped} image(s) did not fill a batch and were not used",
              file=sys.stderr)
    doc = _document(model, sha, prep, select, options, samples, len(source), graph, hists)
    write_yaml(doc, Path(output))
    return doc


def _document(model: str, sha: str, prep: Preprocess, select: str | None, options: CompileOptions, samples: int,
              files: int, graph: Graph, hists: dict[str, Histogram]) -> dict[str, Any]:
    types = {v.name: v.type for v in [*graph.inputs, *captured_values(graph)]}
    tensors = {}
    for name, h in hists.items():
        if h.count == 0:
            continue
        tensors[name] = {"shape": list(types[name].shape), "min": float(h.min), "max": float(h.max),
                         "count": h.count, "nonfinite": h.nonfinite, "histogram": h.to_yaml()}
    return {
        "ember_profile": FORMAT, "ember_version": __version__, "model": str(model), "model_sha256": sha,
        "samples": samples, "files": files,
        "preprocessing": {**prep.to_json(), "input": select},
        "compile_options": {"defines": dict(options.defines), "inputs": dict(options.inputs),
                            "consts": {k: v.tolist() for k, v in options.consts.items()}},
        "bins": BINS,
        "note": "histogram: equal-width bins, edges = lo + (hi - lo) * i / len(counts)",
        "tensors": tensors,
    }


def write_yaml(doc: dict[str, Any], path: Path) -> None:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=None, width=120)
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # renamed into place whole; an interrupted write leaves neither a partial profile nor the .tmp
        tmp.write_text(text)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
