"""Integer Winograd (QConvWinograd) against the kernel the CPU family picks otherwise, per 3x3 stride-1 layer shape:
both bundles of one QLinearConv layer timed in one process, pinned to one core, interleaved round by round;
prints the median time ratio new / old per shape (below 1: Winograd is faster).

    python benchmarks/bench_qwino.py [--core 1] [--rounds 200] [--shapes 64x56,128x28,256x14,512x7]
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


def layer(c: int, hw: int, seed: int = 5) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(seed)
    feeds = {"x": rng.integers(0, 256, (1, c, hw, hw)).astype(np.uint8)}
    # per-channel weights quantized from a normal distribution: most values small, the extremes +-127
    w = np.clip(np.round(rng.normal(0, 40, (c, c, 3, 3))), -127, 127).astype(np.int8)
    consts = {"xs": _f32(0.03), "xz": np.array(128, np.uint8), "w": w,
              "ws": rng.uniform(2e-4, 6e-4, c).astype(np.float32),
              "wz": np.zeros(c, np.int8), "ys": _f32(0.5), "yz": np.array(0, np.uint8),
              "b": rng.integers(-3000, 3000, c).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1])
    return _model([node], feeds, consts, ("y",), 21), feeds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--cpu", default=None)
    args = ap.parse_args()
    os.sched_setaffinity(0, {args.core})
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            c, hw = map(int, shape.split("x"))
            model, feeds = layer(c, hw)
            path = Path(tmp) / f"{shape}.onnx"
            onnx.save(model, path)
            bundles = {}
            for on in (False, True):
                with forced(on):
                    bundles[on] = ember.compile(path, Path(tmp) / f"{shape}_{on}", cpu=args.cpu)
            old, new = EmberTimer(bundles[False], feeds), EmberTimer(bundles[True], feeds)
            assert np.array_equal(old.outputs()["y"], new.outputs()["y"]), shape
            ops = [n["op"] for n in bundles[False].manifest["nodes"]]
            to, tn = interleave(old, new, args.rounds, 0)
            ratio = statistics.median(b / a for a, b in zip(to, tn, strict=True))
            print(f"{shape:>8} old {ops[0]:<14} {statistics.median(to) * 1e3:8.3f} ms  wino "
                  f"{statistics.median(tn) * 1e3:8.3f} ms  ratio {ratio:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
