"""One weight-only int4 layer: ember MatMulInt4 (packed) vs ember float32 (the weight dequantized at compile
time, what ember did before) vs onnxruntime's MatMulNBits, one thread, timed interleaved in one process.

The layer is com.microsoft MatMulNBits, Y[M, N] = X[M, K] @ W, W 4-bit with one float32 scale and one packed
4-bit zero point per block of K (random codes, fixed seed). Prints the constant region (flash) of both ember
bundles and the median latencies; the float32 model is the same layer with W dequantized (the outputs agree).

    python benchmarks/bench_int4.py [--m 1] [--k 4096] [--n 4096] [--block 32] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ember  # noqa: E402
from benchmarks.bench_int8 import interleave_all  # noqa: E402
from benchmarks.timing import EmberTimer, OrtTimer  # noqa: E402


def _models(m: int, k: int, n: int, block: int, folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    nblk = -(-k // block)
    codes = rng.integers(0, 16, (n, nblk * block), dtype=np.uint8)
    zeros = rng.integers(0, 16, (n, nblk + nblk % 2), dtype=np.uint8)
    scales = (rng.random((n, nblk)) * 0.02 + 0.001).astype(np.float32)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).reshape(n, nblk, block // 2)
    zpacked = zeros[:, 0::2] | (zeros[:, 1::2] << 4)
    q = codes.reshape(n, nblk, block).astype(np.float32)
    w = ((q - zeros[:, :nblk, None]) * scales[:, :, None]).reshape(n, -1)[:, :k].T
    io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    node = helper.make_node("MatMulNBits", ["x", "b", "s", "z"], ["y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block)
    inits = [numpy_helper.from_array(a, name) for a, name in ((packed, "b"), (scales, "s"), (zpacked, "z"))]
    int4, f32 = folder / "int4.onnx", folder / "f32.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "int4", *io, inits), opset_imports=opsets), int4)
    mm = helper.make_node("MatMul", ["x", "w"], ["y"])
    w_init = [numpy_helper.from_array(np.ascontiguousarray(w, np.float32), "w")]
    onnx.save(helper.make_model(helper.make_graph([mm], "f32", *io, w_init), opset_imports=opsets), f32)
    return int4, f32


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for dim, default in (("m", 1), ("k", 4096), ("n", 4096), ("block", 32)):
        ap.add_argument(f"--{dim}", type=int, default=default)
    ap.add_argument("--rounds", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        int4, f32 = _models(args.m, args.k, args.n, args.block, Path(tmp))
        b4, bf = ember.compile(int4, Path(tmp) / "e4"), ember.compile(f32, Path(tmp) / "ef")
        feeds = {"x": np.random.default_rng(1).standard_normal((args.m, args.k)).astype(np.float32)}
        timers = {"ember_int4": EmberTimer(b4, feeds), "ember_f32": EmberTimer(bf, feeds),
                  "ort_nbits": OrtTimer(int4, feeds)}
        ref = timers["ort_nbits"].outputs()["y"]
        for name in ("ember_int4", "ember_f32"):
            err = float(np.abs(timers[name].outputs()["y"] - ref).max())
            print(f"{name}: max abs diff vs onnxruntime {err:.3g} (output range {float(np.ptp(ref)):.3g})")
        times = interleave_all(timers, args.rounds, 0)
    print(f"layer [{args.m}, {args.k}] @ [{args.k}, {args.n}], block {args.block}, {len(times['ort_nbits'])} rounds")
    print(f"constant region: ember int4 {b4.manifest['memory']['constant']:,} B, "
          f"ember float32 {bf.manifest['memory']['constant']:,} B")
    for name, ts in times.items():
        print(f"{name:<11} median {statistics.median(ts) * 1e3:8.3f} ms   min {min(ts) * 1e3:8.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
