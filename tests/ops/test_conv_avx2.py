"""The AVX2 family's convolution choices and matmul blocks (toolchain/cpus.py, `--cpu x86-64-v3`) against
onnxruntime: Winograd F(2x2) on a 7x7 map and F(4x4) on a 14x14 one (the family's thresholds), and the
products of at most 64 columns that pack each K block of B whole (EMBER_MM_BLOCK_N): a 1x1 conv at 7x7
(49 columns: strips 16, 16, 16 and an overlapping 8), a strided 3x3 through im2col with K over two K
blocks, ConvShifted's 61 columns (b_row views: the overlapping last strip) and a 7x7 stride-2 stem (64-pixel
rows: one product per output row, into the output itself), without and with a fused Relu. With K over several
K blocks the columns after the last whole vector (1 of 49, 5 of 61) are dot products along K.
Strided ConvShifted layers fill both column phases of an input row in one pass (vectors of its even and odd
floats inside the row, single floats at its ends: rows of 30 and 37, the stem's 128 with 3 columns of padding);
im2col at stride 2 takes the even floats of vector pairs the same way.
Convolutions with weight rows of at least the family's row_panels_min_k floats on maps over 64 pixels read their
weights from row panels (K block by K block, one per register tile, k-major), Winograd's transformed weights too
(each position's matrix); MaxPool 3x3 at
stride 2 takes its own kernel (row maxima, then the even, odd and next even floats of vector pairs).
One model holds every case (one compile); it also runs in a C driver built for AVX2 with AddressSanitizer
+ UBSan, where a strip packed past the stack block or a B row read past the planes fails. Its C also compiles
warning-free for AVX-512 (16-float vectors) and, with zig's clang, for AArch64 NEON (4-float vectors).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# output name: (input channels, input size, output channels, kernel, stride, pad, relu, the op AVX2 picks)
CASES = {
    "wino2_7x7": (16, 7, 24, 3, 1, 1, True, "ConvWinograd"),
    "wino4_14x14": (16, 14, 16, 3, 1, 1, False, "ConvWinograd4"),
    "direct_1x1_7x7": (40, 7, 45, 1, 1, 0, True, "Conv"),  # 45 rows: 6-row tiles, then 4 + 4 + 1
    "im2col_s2_7x7": (32, 14, 20, 3, 2, 1, False, "Conv"),  # K = 288: a K block of 256 and one of 32
    "shifted_61": (8, 7, 13, 3, 1, 1, True, "ConvShifted"),  # 8 channels: no Winograd; nq = 6 * 9 + 7
    "stem_7x7_s2": (3, 128, 16, 7, 2, 3, True, "ConvShifted"),  # 64-pixel rows: one product per output row
    # K over three K blocks: the column after 6 whole vectors (49 = 48 + 1) as dot products along K
    "direct_1x1_7x7_k520": (520, 7, 20, 1, 1, 0, True, "Conv"),
    "shifted_61_k288": (32, 7, 13, 3, 1, 1, True, "ConvShifted"),  # the same for 61 = 56 + 5 columns
    # stride 2: both column phases of a row in one pass, vectors inside the row, single floats at its ends
    "shifted_s2_even": (16, 30, 24, 3, 2, 1, True, "ConvShifted"),
    "shifted_s2_odd": (16, 37, 8, 3, 2, 1, False, "ConvShifted"),
    # im2col at stride 2 (a 1x1 shortcut; 9 products an output, too few for ConvShifted): even floats of vector
    # pairs inside the row, single floats at its ends (columns -1 and 40 with the padding)
    "im2col_1x1_s2": (8, 38, 16, 1, 2, 0, False, "Conv"),
    "im2col_s2_k9": (1, 40, 8, 3, 2, 1, True, "Conv"),
    # weights in row panels (K >= the family's row_panels_min_k, more than 64 pixels; 45 rows: tiles of 6, then
    # 4 + 4 + 1): K over a whole K block and a part of one (300 = 256 + 44), im2col (a 1x1 at stride 2, K = 96)
    "rows_1x1_14x14": (300, 14, 45, 1, 1, 0, True, "Conv"),
    "rows_im2col_1x1_s2": (96, 24, 45, 1, 2, 0, True, "Conv"),
    "rows_shifted_s2": (32, 20, 20, 3, 2, 1, True, "ConvShifted"),  # K = 288: ConvShifted's b_row strips
    # Winograd's U[e] in row panels (C >= row_panels_min_k): F(4x4) on 14x14 (16 tiles: the row-tile path; 20 rows:
    # tiles 6, 6, 4, 4), F(2x2) on 7x7 with C over a whole K block and a part of one (300 = 256 + 44; 19 rows: 6,
    # 6, 6, 1), F(4x4) on 36x36 (81 tiles: strips of 16 and an overlapping last one), and F(4x4) on 28x28 (49 tiles:
    # B packed whole per K block, the last column as vectors across each tile's rows), with C over two K blocks
    "rows_wino4_14x14": (96, 14, 20, 3, 1, 1, True, "ConvWinograd4"),
    "rows_wino2_7x7": (300, 7, 19, 3, 1, 1, False, "ConvWinograd"),
    "rows_wino4_36x36": (64, 36, 16, 3, 1, 1, True, "ConvWinograd4"),
    "rows_wino4_28x28": (264, 28, 23, 3, 1, 1, True, "ConvWinograd4"),
}
# Conv + Add(shortcut) + Relu, the residual fused (ResNet's blocks; on maps over 64 pixels a pass after the
# product), with weights in row panels: (input channels, size, output channels); K over three K blocks.
RESIDUAL_CASES = {"rows_res_14x14": (520, 14, 13)}
# MaxPool 3x3 stride 2 (kernels/pool.c ember_maxpool3s2_f32): (channels, size, pads, ceil_mode): ResNet's padded
# one on an even and an odd plane, and windows past the bottom and right edges (ceil_mode).
POOL_CASES = {"pool_even": (3, 40, 1, 0), "pool_odd": (2, 37, 1, 0), "pool_ceil": (2, 30, 0, 1)}


def _have_avx2() -> bool:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return " avx2" in flags and " fma" in flags


def _model(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    nodes, inits, inputs, outs, feed = [], [], [], [], {}
    for name, (c, hw, m, k, s, p, relu, _) in CASES.items():
        inits += [numpy_helper.from_array(rng.standard_normal((m, c, k, k)).astype(np.float32), f"w_{name}"),
                  numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), f"b_{name}")]
        conv_out = f"{name}_conv" if relu else name
        nodes.append(helper.make_node("Conv", [f"x_{name}", f"w_{name}", f"b_{name}"], [conv_out],
                                      kernel_shape=[k, k], strides=[s, s], pads=[p] * 4))
        if relu:
            nodes.append(helper.make_node("Relu", [conv_out], [name]))
        inputs.append(helper.make_tensor_value_info(f"x_{name}", TensorProto.FLOAT, [1, c, hw, hw]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        feed[f"x_{name}"] = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    for name, (c, hw, m) in RESIDUAL_CASES.items():
        inits += [numpy_helper.from_array(rng.standard_normal((m, c, 1, 1)).astype(np.float32), f"w_{name}"),
                  numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), f"b_{name}")]
        nodes += [helper.make_node("Conv", [f"x_{name}", f"w_{name}", f"b_{name}"], [f"{name}_conv"]),
                  helper.make_node("Add", [f"{name}_conv", f"s_{name}"], [f"{name}_sum"]),
                  helper.make_node("Relu", [f"{name}_sum"], [name])]
        inputs += [helper.make_tensor_value_info(f"x_{name}", TensorProto.FLOAT, [1, c, hw, hw]),
                   helper.make_tensor_value_info(f"s_{name}", TensorProto.FLOAT, [1, m, hw, hw])]
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        feed[f"x_{name}"] = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
        feed[f"s_{name}"] = rng.standard_normal((1, m, hw, hw)).astype(np.float32)
    for name, (c, hw, pad, ceil) in POOL_CASES.items():
        nodes.append(helper.make_node("MaxPool", [f"x_{name}"], [name], kernel_shape=[3, 3], strides=[2, 2],
                                      pads=[pad] * 4, ceil_mode=ceil))
        inputs.append(helper.make_tensor_value_info(f"x_{name}", TensorProto.FLOAT, [1, c, hw, hw]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        feed[f"x_{name}"] = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    graph = helper.make_graph(nodes, "convavx2", inputs, outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return feed


def test_avx2_choices_and_column_blocks_match_onnxruntime(tmp_path: Path) -> None:
    if not _have_avx2():
        pytest.skip("needs AVX2 + FMA to run an x86-64-v3 bundle")
    path = tmp_path / "convavx2.onnx"
    feed = _model(path)
    bundle = ember.compile(path, tmp_path / "out", cpu="x86-64-v3")
    chosen = {a["node"]: a["choice"] for a in bundle.manifest["algorithms"]}
    ops = sorted(n["op"].split("+")[0] for n in bundle.manifest["nodes"])
    expected = [case[-1] for case in CASES.values()] + ["Conv"] * len(RESIDUAL_CASES) + ["MaxPool"] * len(POOL_CASES)
    assert ops == sorted(expected), chosen
    source = (bundle.path / "convavx2.c").read_text()
    assert "#define EMBER_MM_BLOCK_N 64" in source
    assert "#define EMBER_MM_ROW_PANELS 1" in source
    # the four "rows_" convolutions, and no other, run on row panels (ember_conv_f32's argument before the last, its
    # input's pixel stride)
    assert len(re.findall(r"ember_conv_f32\([^;]*, 1, 1\);", source)) == 3
    # (ember_conv_shifted_f32's argument before the last: row panels; the last: a channels-last output)
    assert len(re.findall(r"ember_conv_shifted_f32\([^;]*, 1, 0\);", source)) == 1
    assert len(re.findall(r"ember_conv_winograd4?_f32\([^;]*, 1\);", source)) == 4  # the "rows_wino" ones
    assert source.count("ember_maxpool3s2_f32(") == len(POOL_CASES) + 1  # the calls and the definition
    ref = onnxruntime_outputs(path, feed)
    got = bundle.run(feed)
    sanitized = cdriver.run(bundle.path, tmp_path / "asan", feed, sanitize=True, cflags=("-march=x86-64-v3",))
    for name in [*CASES, *RESIDUAL_CASES, *POOL_CASES]:
        for out, what in ((got, name), (sanitized, f"{name} (sanitized C driver)")):
            assert_close(out[name], ref[name], what)
    flags = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding", "-c", str(bundle.path / "convavx2.c"),
             "-o", str(tmp_path / "other.o")]
    cdriver.run_cmd(["cc", "-march=skylake-avx512", *flags])
    if importlib.util.find_spec("ziglang") is not None:
        cdriver.run_cmd([sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-linux-musl", *flags])
