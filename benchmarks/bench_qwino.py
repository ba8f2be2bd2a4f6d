"""Integer Winograd (QConvWinograd) against the kernel the CPU family picks otherwise, per 3x3 stride-1 layer shape:
both bundles of one QLinearConv layer timed in one process, pinned to one core, interleaved round by round;
prints the median time ratio new / old per shape (below 1: Winograd is faster). --chain: the layer between two
1x1 layers, so that it reads and writes channel-blocked values as inside a network (passes/int8_layout.py); the
1x1 layers' median time, measured alone interleaved with the old chain, is subtracted from both medians.

    python benchmarks/bench_qwino.py [--core 1] [--rounds 200] [--shapes 64x56,128x28,256x14,512x7] [--chain]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.timing import EmberTimer, interleave  # noqa: E402
from ember.ops import qwino  # noqa: E402
from ember.passes import conv_algorithms  # noqa: E402
from tests.ops.test_quant_kernels import _f32, _model  # noqa: E402

# ResNet-18/50's 3x3 stride-1 layers: channels x map size
DEFAULT_SHAPES = "64x56,128x28,256x14,512x7"


@contextlib.contextmanager
def forced(on: bool) -> Iterator[None]:
    old = conv_algorithms.qconv_wino_fits
    conv_algorithms.qconv_wino_fits = (lambda node, cpu: qwino.qconv_wino_takes(node)) if on else (lambda n, c: False)
    try:
        yield
    finally:
        conv_algorithms.qconv_wino_fits = old


def layer(c: int, hw: int, seed: int = 5, kernels: tuple[int, ...] = (3,)) -> tuple[onnx.ModelProto, dict]:
    """QLinearConvs of c channels in a chain, of these kernel sizes (same padding), from x to y."""
    rng = np.random.default_rng(seed)
    feeds = {"x": rng.integers(0, 256, (1, c, hw, hw)).astype(np.uint8)}
    consts = {"s": _f32(0.03), "z": np.array(128, np.uint8)}
    nodes, src = [], "x"
    for i, k in enumerate(kernels):
        # per-channel weights quantized from a normal distribution: most values small, the extremes +-127
        consts[f"w{i}"] = np.clip(np.round(rng.normal(0, 40, (c, c, k, k))), -127, 127).astype(np.int8)
        consts[f"ws{i}"] = (rng.uniform(0.5, 1.5, c) / (40 * np.sqrt(c * k * k))).astype(np.float32)
        consts[f"wz{i}"] = np.zeros(c, np.int8)
        consts[f"b{i}"] = rng.integers(-3000, 3000, c).astype(np.int32)
        out = "y" if i == len(kernels) - 1 else f"t{i}"
        nodes.append(helper.make_node("QLinearConv", [src, "s", "z", f"w{i}", f"ws{i}", f"wz{i}", "s", "z", f"b{i}"],
                                      [out], pads=[k // 2] * 4))
        src = out
    return _model(nodes, feeds, consts, ("y",), 21), feeds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--cpu", default=None)
    ap.add_argument("--chain", action="store_true", help="1x1 -> the 3x3 -> 1x1, the 1x1s' time subtracted")
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.core})
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            c, hw = map(int, shape.split("x"))
            bundles = {}
            for key, kernels, on in (("old", (1, 3, 1), False), ("new", (1, 3, 1), True), ("base", (1, 1), False)):
                if not args.chain:
                    kernels = (3,)
                model, feeds = layer(c, hw, kernels=kernels)
                path = Path(tmp) / f"{shape}_{key}.onnx"
                onnx.save(model, path)
                with forced(on):
                    bundles[key] = ember.compile(path, Path(tmp) / f"{shape}_{key}", cpu=args.cpu)
            timers = {k: EmberTimer(b, feeds) for k, b in bundles.items()}
            assert np.array_equal(timers["old"].outputs()["y"], timers["new"].outputs()["y"]), shape
            ops = [n["op"] for n in bundles["old"].manifest["nodes"]]
            to, tn = interleave(timers["old"], timers["new"], args.rounds, 0)
            base = 0.0
            if args.chain:  # the 1x1s alone, interleaved with the old bundle for the same machine state
                _, tb = interleave(timers["old"], timers["base"], args.rounds, 0)
                base = statistics.median(tb)
            ratio = ((statistics.median(tn) - base) / (statistics.median(to) - base) if args.chain
                     else statistics.median(b / a for a, b in zip(to, tn, strict=True)))
            print(f"{shape:>8} old {ops[len(ops) // 2]:<14} {(statistics.median(to) - base) * 1e3:8.3f} ms  wino "
                  f"{(statistics.median(tn) - base) * 1e3:8.3f} ms  ratio {ratio:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
