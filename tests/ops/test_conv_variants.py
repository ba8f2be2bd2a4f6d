"""Conv kernel paths the node tests reach only partly, against onnxruntime.

Depthwise convolutions (polyphase padded-plane kernel at any stride and dilation, 3x3 specialised,
the 3-D row kernel), grouped and im2col convolutions with strides, dilations and asymmetric pads,
Winograd F(2x2, 3x3) and F(4x4, 3x3) with odd output sizes and asymmetric pads, pixel-major convolutions with
transposed weights, stride-1 convolutions over shifted views of the input, and the fused Relu/Clip epilogues.
Each case also runs in a C driver built with AddressSanitizer + UBSan, so a tap read past its
padded plane or a bad index fails the test.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# name: (input shape, out channels, kernel, attrs, activation after the conv)
CASES: dict[str, tuple[tuple[int, ...], int, tuple[int, ...], dict, str | None]] = {
    "dw3x3_s1_same": ((1, 8, 14, 14), 8, (3, 3), {"group": 8, "pads": [1, 1, 1, 1]}, "Clip"),
    "dw3x3_s1_valid_rect": ((1, 4, 9, 17), 4, (3, 3), {"group": 4}, None),
    "dw3x3_s2_odd": ((1, 6, 15, 15), 6, (3, 3), {"group": 6, "strides": [2, 2], "pads": [1, 1, 1, 1]}, "Relu"),
    "dw3x3_s2_nopad": ((1, 6, 16, 16), 6, (3, 3), {"group": 6, "strides": [2, 2]}, None),
    "dw5x5_s1_dilated_asym": ((1, 5, 12, 11), 5, (5, 5),
                              {"group": 5, "dilations": [2, 1], "pads": [3, 1, 4, 2]}, None),
    "dw3x3_mult2_s3": ((2, 3, 13, 10), 6, (3, 3), {"group": 3, "strides": [3, 2], "pads": [0, 1, 2, 0]}, None),
    "dw1x7_row": ((1, 4, 5, 20), 4, (1, 7), {"group": 4, "pads": [0, 3, 0, 3]}, "Relu"),
    "dw3d": ((1, 3, 4, 6, 6), 3, (2, 3, 3), {"group": 3, "pads": [1, 1, 1, 0, 1, 1]}, None),
    "im2col_s2_asym": ((1, 3, 23, 21), 20, (7, 7), {"strides": [2, 2], "pads": [3, 2, 3, 4]}, "Relu"),
    "im2col_dilated_s3": ((1, 5, 19, 19), 33, (3, 3), {"strides": [3, 1], "dilations": [2, 2]}, None),
    "grouped": ((1, 8, 10, 10), 12, (3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, "Clip"),
    "pointwise_ragged_n": ((1, 40, 7, 7), 70, (1, 1), {}, "Relu"),
    "pointwise_n17": ((1, 16, 1, 17), 24, (1, 1), {}, None),
    "winograd_odd": ((1, 16, 9, 11), 24, (3, 3), {"pads": [1, 1, 1, 1]}, "Relu"),
    "winograd_asym_pads": ((2, 20, 12, 10), 16, (3, 3), {"pads": [0, 1, 2, 0]}, "Clip"),
    "winograd_valid": ((1, 32, 10, 13), 17, (3, 3), {}, None),
    "winograd4_odd": ((1, 16, 29, 27), 20, (3, 3), {"pads": [1, 1, 1, 1]}, "Relu"),
    "winograd4_asym_pads": ((2, 17, 28, 30), 16, (3, 3), {"pads": [2, 0, 0, 1]}, "Clip"),
    "winograd4_valid": ((1, 24, 30, 31), 33, (3, 3), {}, None),
    "narrow_3x3": ((1, 48, 7, 7), 96, (3, 3), {"pads": [1, 1, 1, 1]}, "Relu"),
    "narrow_s2_asym": ((2, 24, 9, 12), 64, (3, 3), {"strides": [2, 2], "pads": [0, 1, 1, 0]}, None),
    "narrow_pointwise": ((1, 40, 5, 6), 128, (1, 1), {}, "Clip"),
    "shifted_valid": ((1, 6, 14, 14), 16, (5, 5), {}, "Relu"),
    "shifted_padded_asym": ((2, 3, 11, 13), 7, (5, 3), {"pads": [2, 0, 1, 1]}, None),
    "shifted_dilated": ((1, 5, 12, 20), 9, (3, 3), {"dilations": [2, 3], "pads": [1, 2, 3, 4]}, "Clip"),
    "shifted_same_upper": ((1, 4, 7, 8), 6, (3, 3), {"auto_pad": "SAME_UPPER"}, None),
    "shifted_s2_stem": ((1, 3, 61, 59), 16, (7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}, "Relu"),
    "shifted_s2_3x3_blocks": ((2, 24, 29, 30), 40, (3, 3), {"strides": [2, 2], "pads": [1, 0, 0, 1]}, "Clip"),
    "shifted_s3x2_dilated": ((1, 8, 26, 31), 12, (3, 5), {"strides": [3, 2], "dilations": [2, 1],
                                                           "pads": [2, 1, 0, 3]}, None),
}
# The algorithm ember/passes/conv_algorithms.py must choose (im2col or direct Conv for the others).
ALGORITHM = {"winograd_odd": "ConvWinograd", "winograd_asym_pads": "ConvWinograd", "winograd_valid": "ConvWinograd",
             "winograd4_odd": "ConvWinograd4", "winograd4_asym_pads": "ConvWinograd4",
             "winograd4_valid": "ConvWinograd4", "shifted_valid": "ConvShifted",
             "shifted_padded_asym": "ConvShifted", "shifted_dilated": "ConvShifted",
             "shifted_same_upper": "ConvShifted", "shifted_s2_stem": "ConvShifted",
             "shifted_s2_3x3_blocks": "ConvShifted", "shifted_s3x2_dilated": "ConvShifted",
             "narrow_3x3": "ConvNarrow", "narrow_s2_asym": "ConvNarrow", "narrow_pointwise": "ConvNarrow"}


def _model(path: Path, shape: tuple[int, ...], m: int, kernel: tuple[int, ...], attrs: dict, act: str | None) -> None:
    rng = np.random.default_rng(sum(shape) + m)
    group = attrs.get("group", 1)
    w = rng.standard_normal((m, shape[1] // group, *kernel)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if act else "y"], **attrs)]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif act == "Sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["c"], ["y"]))
    elif act == "Clip":
        inits += [numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(1.5), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _check(case: str, spec: tuple, op: str, tmp_path: Path, cflags: tuple[str, ...] = (), **options: object
           ) -> ember.Bundle:
    """The case's conv compiled with `options` is one `op` node (its activation in the epilogue, not a node of its
    own) and matches onnxruntime, in Python and in a C driver under ASan/UBSan."""
    shape, m, kernel, attrs, act = spec
    path = tmp_path / "conv.onnx"
    _model(path, shape, m, kernel, attrs, act)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ref = onnxruntime_outputs(path, {"x": x})["y"]
    bundle = ember.compile(path, tmp_path / "out", **options)
    assert [n["op"] for n in bundle.manifest["nodes"]] == [f"{op}+{act}" if act else op]
    assert_close(bundle.run({"x": x})["y"], ref, case)
    assert_close(cdriver.run(bundle.path, tmp_path / "drv", {"x": x}, sanitize=True, cflags=cflags)["y"], ref,
                 f"{case} (ASan)")
    return bundle


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_variant_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    # The pixel-major cases build for the x86-64 family, which takes that path on any x86 host (the AVX2
    # family never does: toolchain/cpus.py), so its kernel is covered everywhere.
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    _check(case, CASES[case], ALGORITHM.get(case, "Conv"), tmp_path,
           cpu="x86-64" if x86 and case.startswith("narrow") else None)


# AVX-512's pixel-major path (kernels/matmul.c ember_matmul_wide_f32: 64-channel weight panels, tiles of up to 7 rows
# by 4 vectors, the rows split evenly): 49 pixels (7 tiles of 7), 64 (7 x 8 + 4 x 2), two images of 30 (6 x 5), and
# an activation its tiles do not apply (Sigmoid: after each strip).
WIDE_CASES: dict[str, tuple[tuple[int, ...], int, tuple[int, ...], dict, str | None]] = {
    "wide_3x3_49": ((1, 48, 7, 7), 128, (3, 3), {"pads": [1, 1, 1, 1]}, "Relu"),
    "wide_pointwise_64": ((1, 40, 8, 8), 64, (1, 1), {}, "Clip"),
    "wide_s2_batch2": ((2, 24, 9, 12), 64, (3, 3), {"strides": [2, 2], "pads": [0, 1, 1, 0]}, None),
    "wide_sigmoid": ((1, 32, 5, 5), 192, (3, 3), {"pads": [1, 1, 1, 1]}, "Sigmoid"),
}


def _host_avx512() -> bool:
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not _host_avx512(), reason="needs a host that runs AVX-512 code")
@pytest.mark.parametrize("case", sorted(WIDE_CASES))
def test_wide_pixel_major_path_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    bundle = _check(case, WIDE_CASES[case], "ConvNarrow", tmp_path, cflags=("-march=x86-64-v4",), cpu="x86-64-v4",
                    cpu_params=["narrow_panel=64"])
    assert "ember_matmul_wide_f32(" in next(bundle.path.glob("*.c")).read_text()


@pytest.mark.skipif(not _host_avx512(), reason="needs a host that runs AVX-512 code")
def test_wide_panels_are_right_without_avx512_tiles(tmp_path: Path) -> None:
    """A bundle whose ConvNarrow weights are in 64-channel panels, its C built without AVX-512 (the sanitized driver's
    plain x86-64 build), takes the general matmul's strips over those panels."""
    _check("wide_3x3_49", WIDE_CASES["wide_3x3_49"], "ConvNarrow", tmp_path, cpu="x86-64-v4",
           cpu_params=["narrow_panel=64"])
