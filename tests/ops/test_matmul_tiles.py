"""Float matmul register tiles at their edges: M, N and K that are not multiples of the tile (rows 6 with
8-float vectors; 8 and 9 rows go in 4-row tiles), of the 16-column strip or of the K block (256), through
the compile-time panels (MatMulPanels, --cpu x86-64-v3) and the run-time operand path (MatMul, Gemm)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.reference import onnxruntime_session

# (M, K, N): M covers 1, 4-row and 6-row tiles and their mixes (8 = 4 + 4, 9 = 4 + 4 + 1, 13 = 6 + 6 + 1,
# 32 = 4 x 6 + 4 + 4, 128 = 20 x 6 + 4 + 4); K one and several K blocks with a remainder; N whole panels (16
# columns for AVX2, so 16 and 48 are panels there too).
PANEL_SHAPES = [(1, 33, 32), (8, 300, 64), (9, 70, 96), (13, 9, 32), (32, 64, 128), (7, 256, 64), (128, 520, 96),
                (14, 257, 160), (5, 40, 16), (10, 30, 48)]
# Run-time B: N not a multiple of the strip either (overlapping last strips, a scalar column). N in (32, 64]
# with more than 6 rows packs B whole per K block on AVX2 (EMBER_MM_BLOCK_N): one K block with overlapping
# strips (9 x 40 x 50, 32 x 64 x 33), several without (13 x 300 x 49: 3 strips + 1 column, 40 x 520 x 61:
# 3 strips + 1 vector + 5 columns; 7 x 257 x 64: whole strips).
# N of 8 to 15 with 16-float vectors (AVX-512) go in half-vector strips, the last one overlapping the first: one K
# block (30 x 40 x 8, 9 x 20 x 15) and several (13 x 300 x 12).
RUNTIME_SHAPES = [(8, 300, 20), (9, 40, 50), (32, 64, 33), (17, 5, 7), (13, 300, 49), (40, 520, 61), (7, 257, 64),
                  (30, 40, 8), (9, 20, 15), (13, 300, 12)]


def _have(*flags: str) -> bool:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return all(f" {flag}" in text for flag in flags)


def _model(path: Path, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], list[str]]:
    nodes, inputs, outputs, inits, feed = [], [], [], [], {}
    for i, (m, k, n) in enumerate(PANEL_SHAPES):
        inits.append(numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [f"x{i}", f"w{i}"], [f"y{i}"]))
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [m, k]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [m, n]))
        feed[f"x{i}"] = rng.standard_normal((m, k)).astype(np.float32)
    for i, (m, k, n) in enumerate(RUNTIME_SHAPES):
        nodes.append(helper.make_node("MatMul", [f"a{i}", f"b{i}"], [f"z{i}"]))
        inputs += [helper.make_tensor_value_info(f"a{i}", TensorProto.FLOAT, [m, k]),
                   helper.make_tensor_value_info(f"b{i}", TensorProto.FLOAT, [k, n])]
        outputs.append(helper.make_tensor_value_info(f"z{i}", TensorProto.FLOAT, [m, n]))
        feed[f"a{i}"] = rng.standard_normal((m, k)).astype(np.float32)
        feed[f"b{i}"] = rng.standard_normal((k, n)).astype(np.float32)
    # Gemm with a bias along N and Relu: the epilogue after the tiles, on 9 rows (4 + 4 + 1).
    inits += [numpy_helper.from_array(rng.standard_normal((40, 70)).astype(np.float32), "gw"),
              numpy_helper.from_array(rng.standard_normal(40).astype(np.float32), "gc")]
    nodes += [helper.make_node("Gemm", ["g", "gw", "gc"], ["gt"], transB=1), helper.make_node("Relu", ["gt"], ["gy"])]
    inputs.append(helper.make_tensor_value_info("g", TensorProto.FLOAT, [9, 70]))
    outputs.append(helper.make_tensor_value_info("gy", TensorProto.FLOAT, [9, 40]))
    feed["g"] = rng.standard_normal((9, 70)).astype(np.float32)
    graph = helper.make_graph(nodes, "tiles", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return feed, [o.name for o in outputs]


@pytest.mark.parametrize("cpu", ["x86-64-v4", "x86-64-v3", "x86-64"])
def test_tile_edges_match_onnxruntime(tmp_path: Path, cpu: str) -> None:
    if cpu == "x86-64-v3" and not _have("avx2", "fma"):
        pytest.skip("needs AVX2 + FMA to run an x86-64-v3 bundle")
    if cpu == "x86-64-v4" and not _have("avx512f", "avx512bw", "avx512dq", "avx512vl"):
        pytest.skip("needs AVX-512 to run an x86-64-v4 bundle")

    feed, names = _model(tmp_path / "tiles.onnx", np.random.default_rng(7))
    bundle = ember.compile(tmp_path / "tiles.onnx", tmp_path / "out", cpu=cpu)
    ops = [n["op"] for n in bundle.manifest["nodes"]]
    if cpu != "x86-64":
        assert ops.count("MatMulPanels") == sum(n % (16 if cpu == "x86-64-v3" else 32) == 0 for _, _, n in PANEL_SHAPES)
    got = bundle.run(feed)
    want = onnxruntime_session(str(tmp_path / "tiles.onnx")).run(names, feed)
    for name, w in zip(names, want, strict=True):
        # float32 sums of up to 520 products of unit normals: |error| well under 1e-4 of sqrt(K)-sized values
        np.testing.assert_allclose(got[name], w, rtol=1e-4, atol=1e-4, err_msg=name)
