"""The Cortex-M DSP and Helium int8 kernels (kernels/qarm*.c, picked by passes/mcu_kernels.py) run bare
metal on QEMU, bit-identical to the host build: convolutions of odd channel counts, strides, asymmetric padding and a
non-square kernel, depthwise 3x3 of stride 1 and 2 with odd widths, a 1x1, a fully-connected layer of odd
sizes, two images (pairs of rows); and tests/ops/test_quant_ties.py's chain (uint8, power-of-two scales:
many exact ties, the requantisation's exact form) against ONNX's reference.

Each test also checks that the layers it means did take the qarm kernels, so that it cannot pass on the
portable path alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.cli import main
from tests.cross import require_tools
from tests.ops.test_quant_ties import chain_model
from tests.support import mcu

RNG = np.random.default_rng(23)


def _conv(name: str, src: str, c: int, m: int, k: tuple[int, int], inits: list, group: int = 1,
          **attrs: object) -> onnx.NodeProto:
    w = RNG.normal(0, 0.3, (m, c // group, *k)).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}_w"),
              numpy_helper.from_array(RNG.normal(0, 0.2, m).astype(np.float32), f"{name}_b")]
    return helper.make_node("Conv", [src, f"{name}_w", f"{name}_b"], [name], group=group, kernel_shape=list(k), **attrs)


def geometry_model() -> onnx.ModelProto:
    """[2, 3, 13, 17] -> conv 3x3/2 (5 channels) -> relu -> conv 3x2 stride (1, 2), pads (0, 1, 1, 0) (7)
    -> depthwise 3x3/1 (6x5: more rows than columns, Helium's transposed plane) -> relu -> depthwise 3x3 stride
    (2, 1), pads 1 (steps of four outputs and one left) -> depthwise 3x3/2, pads (0, 1, 1, 0) -> 1x1 (9)
    -> flatten -> FC 5."""
    inits: list = []
    nodes = [_conv("c1", "x", 3, 5, (3, 3), inits, strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             _conv("c2", "r1", 5, 7, (3, 2), inits, strides=[1, 2], pads=[0, 1, 1, 0]),
             _conv("d1", "c2", 7, 7, (3, 3), inits, group=7, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d1"], ["r2"]),
             _conv("d3", "r2", 7, 7, (3, 3), inits, group=7, strides=[2, 1], pads=[1, 1, 1, 1]),
             _conv("d2", "d3", 7, 7, (3, 3), inits, group=7, strides=[2, 2], pads=[0, 1, 1, 0]),
             _conv("p1", "d2", 7, 9, (1, 1), inits),
             helper.make_node("Flatten", ["p1"], ["f"])]
    # shapes: c1 7x9, c2 6x5, d1 6x5, d3 3x5, d2 1x2, p1 9 x 1x2 = 18 features
    inits += [numpy_helper.from_array(RNG.normal(0, 0.2, (18, 5)).astype(np.float32), "fc_w"),
              numpy_helper.from_array(RNG.normal(0, 0.2, 5).astype(np.float32), "fc_b")]
    nodes += [helper.make_node("MatMul", ["f", "fc_w"], ["mm"]), helper.make_node("Add", ["mm", "fc_b"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 13, 17])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    graph = helper.make_graph(nodes, "geometry", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _int8_pair(tmp_path: Path, model: onnx.ModelProto, calib: np.ndarray | dict[str, np.ndarray],
               target: str, schema: str = "asymmetric") -> tuple[ember.Bundle, ember.Bundle]:
    """`model` quantized to int8 (int8 I/O) from `ember profile` on `calib` (per input name where a dict), compiled
    for the host and for target."""
    onnx.save(model, tmp_path / "m.onnx")
    data = tmp_path / ("calib.npz" if isinstance(calib, dict) else "calib.npy")
    np.savez(data, **calib) if isinstance(calib, dict) else np.save(data, calib)
    assert main(["profile", str(tmp_path / "m.onnx"), str(data), "-o", str(tmp_path / "p.yaml")]) == 0
    opts = {"quantize": "int8", "profile": str(tmp_path / "p.yaml"), "io": "int8", "schema": schema}
    host = ember.compile(tmp_path / "m.onnx", tmp_path / "host", **opts)
    return host, ember.compile(tmp_path / "m.onnx", tmp_path / target, target=target, **opts)


# The kernels for a layer at a channels-last model's edge (ops/qarm.py reads_nhwc): tests/cross/test_qarm_nhwc_mcu.py.
HWC = ("ember_qarm_conv_hwc", "ember_qarm_conv_mul_hwc", "ember_qarm_conv_mve8_hwc", "ember_qarm_dw3_hwc",
       "ember_qarm_dw3_mul_hwc", "ember_qarm_dw3_mve8_hwc", "ember_qarm_dw3_mve_hwc")


def _qarm_calls(bundle: ember.Bundle) -> dict[str, int]:
    """Calls in the entry point's body (whose first argument is a cast output pointer, ops/qarm.py)."""
    text = (bundle.path / f"{bundle.name}.c").read_text()
    kernels = ("ember_qarm_conv", "ember_qarm_conv_mve", "ember_qarm_dw3", "ember_qarm_dw3_mve", "ember_qarm_fc",
               "ember_qarm_conv_add", "ember_qarm_conv_mve_add", "ember_qarm_conv_mve8", "ember_qarm_conv_mve8_add",
               "ember_qarm_dw3_mve8", "ember_qarm_conv_mul", "ember_qarm_conv_mul_add", "ember_qarm_dw3_mul",
               "ember_qarm_fc_mul", *HWC)
    return {k: len(re.findall(rf"^    {k}\(\(uint8_t \*\)", text, re.M)) for k in kernels}


# The layers each core's kernels take: the M55's convolutions and depthwise layers Helium's, its
# fully-connected layer the portable (compiler-vectorized) one.
NONE = dict.fromkeys(("ember_qarm_conv_add", "ember_qarm_conv_mve_add", "ember_qarm_conv_mve8_add",
                      "ember_qarm_conv_mul", "ember_qarm_conv_mul_add", "ember_qarm_dw3_mul", "ember_qarm_fc_mul",
                      *HWC), 0)
CALLS = {"cortex-m4": {"ember_qarm_conv": 3, "ember_qarm_conv_mve": 0, "ember_qarm_conv_mve8": 0, "ember_qarm_dw3": 3,
                       "ember_qarm_dw3_mve": 0, "ember_qarm_dw3_mve8": 0, "ember_qarm_fc": 1, **NONE},
         "cortex-m55": {"ember_qarm_conv": 0, "ember_qarm_conv_mve": 0, "ember_qarm_conv_mve8": 3, "ember_qarm_dw3": 0,
                        "ember_qarm_dw3_mve": 0, "ember_qarm_dw3_mve8": 3, "ember_qarm_fc": 0, **NONE}}
# Cortex-M0/M3 (no DSP, Target.int8_isa "mul"): qarm_mul.c's kernels (int8 weights in their product loops' order).
CALLS["cortex-m33"] = CALLS["cortex-m4"]
CALLS["cortex-m3"] = CALLS["cortex-m0"] = {**CALLS["cortex-m4"], "ember_qarm_conv": 0, "ember_qarm_conv_mul": 3,
                                           "ember_qarm_dw3": 0, "ember_qarm_dw3_mul": 3, "ember_qarm_fc": 0,
                                           "ember_qarm_fc_mul": 1}


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m33", "cortex-m55", "cortex-m3", "cortex-m0"])
def test_geometry_int8_on_qemu_equals_host(tmp_path: Path, target: str) -> None:
    require_tools(target, mcu.missing_tools(target))
    host, bundle = _int8_pair(tmp_path, geometry_model(), RNG.normal(0, 1, (8, 3, 13, 17)).astype(np.float32), target)
    assert _qarm_calls(bundle) == CALLS[target]
    x = {"x": RNG.integers(-128, 128, (2, 3, 13, 17)).astype(np.int8)}
    got = mcu.run_firmware(bundle.path, target, x, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, host.run(x)["y"])


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55", "cortex-m0"])
def test_ties_chain_equals_reference(tmp_path: Path, target: str) -> None:
    """uint8 activations, ties everywhere: the kernels' exact (64-bit, half to even) requantisation (on the
    Cortex-M0, without SMULL: the compiler's 64-bit multiply)."""
    require_tools(target, mcu.missing_tools(target))
    model, feeds = chain_model()
    onnx.save(model, tmp_path / "m.onnx")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / "out", target=target)
    calls = _qarm_calls(bundle)
    conv, dw = {"cortex-m55": ("ember_qarm_conv_mve8", "ember_qarm_dw3_mve"),
                "cortex-m0": ("ember_qarm_conv_mul", "ember_qarm_dw3_mul")}.get(target,
                                                                           ("ember_qarm_conv", "ember_qarm_dw3"))
    # the chain's residual Add goes into the convolution before it (passes/fuse_conv_add.py)
    assert calls[conv] == 2 and calls[f"{conv}_add"] == 1 and calls[dw] == 1, calls
    got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])


def test_int16_weight_loop_entries_on_qemu_equal_host(tmp_path: Path) -> None:
    """Convolutions whose G = Kp / 4 groups leave each remainder mod 4 (K = 20, 6, 30, 12: G = 5, 2, 8, 3): the
    int16-weight product loop of four groups entered at each of its four points (qarm_gemm2.c EMBER_QA_LOOP22H)."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    inits: list = []
    nodes = [_conv("k20", "x", 5, 6, (2, 2), inits),  # G = 5
             _conv("k8", "k20", 6, 5, (1, 1), inits),  # K 6 -> Kp 8: G = 2
             _conv("k30", "k8", 5, 4, (3, 2), inits, pads=[1, 0, 1, 1], strides=[1, 2]),  # 30 -> 32: G = 8
             _conv("k12", "k30", 4, 3, (3, 1), inits, pads=[1, 0, 1, 0]),  # G = 3
             _conv("y", "k12", 3, 2, (2, 2), inits)]  # G = 3
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 9, 11])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "loops", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    host, bundle = _int8_pair(tmp_path, model, RNG.normal(0, 1, (8, 5, 9, 11)).astype(np.float32), target)
    assert _qarm_calls(bundle)["ember_qarm_conv"] == 5
    feeds = {"x": RNG.integers(-128, 128, (1, 5, 9, 11)).astype(np.int8)}
    got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, host.run(feeds)["y"])


def test_channel_quads_on_qemu_equal_host(tmp_path: Path) -> None:
    """The 4-channel x 2-pixel tile (qarm_gemm4.c ember_qa_gemm42s, ember_qa_dot42) and its leftovers: M = 7, 9, 10, 4
    (quads, then a pair, a pair and a zero row, or none), Kp = 48, 8, 84, 12 (Kp / 4 mod 4 = 0, 2, 1, 3: the
    loop's four entries), an odd pixel count (the last pixel alone: ember_qa_gemm4_t's plain column), im2col and 1x1
    (direct) columns; depthwise 3x3 rows of stride 1 and 2 whose last step stores 3, 2 or 4 outputs. A broken
    tile, tail or entry changes output bytes."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    inits: list = []
    nodes = [_conv("q7", "x", 5, 7, (3, 3), inits, pads=[1, 1, 1, 1]),  # K 45 -> 48; 77 pixels
             helper.make_node("Relu", ["q7"], ["r7"]),
             _conv("q9", "r7", 7, 9, (1, 1), inits),  # direct, Kp 8, 77 pixels
             # depthwise rows in assembly (ember_qa_dw3_row1/2) in steps of four, the last of 3, 2 or 4
             _conv("d1", "q9", 9, 9, (3, 3), inits, group=9, pads=[1, 1, 1, 1]),  # 7x11
             helper.make_node("Relu", ["d1"], ["rd"]),
             _conv("d2", "rd", 9, 9, (3, 3), inits, group=9, pads=[1, 1, 1, 1], strides=[2, 2]),  # 4x6
             _conv("d3", "d2", 9, 9, (3, 3), inits, group=9, pads=[1, 0, 1, 0]),  # 4x4
             _conv("q10", "d3", 9, 10, (3, 3), inits, pads=[1, 1, 1, 1]),  # K 81 -> 84
             helper.make_node("Relu", ["q10"], ["r10"]),
             _conv("y", "r10", 10, 4, (1, 1), inits)]  # Kp 12, 16 pixels
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 7, 11])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "quads", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    host, bundle = _int8_pair(tmp_path, model, RNG.normal(0, 1, (8, 5, 7, 11)).astype(np.float32), target)
    calls = _qarm_calls(bundle)
    assert calls["ember_qarm_conv"] == 4 and calls["ember_qarm_dw3"] == 3, calls
    for seed in range(2):
        feeds = {"x": np.random.default_rng(seed).integers(-128, 128, (1, 5, 7, 11)).astype(np.int8)}
        got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / f"run{seed}").outputs["y"]
        np.testing.assert_array_equal(got, host.run(feeds)["y"])


def _helium8_model(shape: tuple[int, ...]) -> onnx.ModelProto:
    """Convolutions for ember_qarm_conv_mve8 (qarm_mve.c) of odd sizes: on [1, 19, 9, 7] (63 pixels: the last
    pixel alone) a 1x1 of 19 channels (16 gathered, 3 in a predicated step) to 7 (a zero row after the last
    pair), a 3x3 padded (the border's scalar windows, the inside's predicated row copies) to 37, a 1x1 of 37
    channels (two steps and 5) to 5, a 1 x 17 window (wider than a vector: the scalar path) and a dilated
    3x3; on [1, 3, 70, 70] a 1x1 whose planes lie too far apart for 16-bit gather offsets."""
    inits: list = []
    c = shape[1]
    if c == 3:
        nodes = [_conv("y", "x", 3, 5, (1, 1), inits)]
    else:
        nodes = [_conv("a", "x", c, 7, (1, 1), inits), helper.make_node("Relu", ["a"], ["ar"]),
                 _conv("b", "ar", 7, 37, (3, 3), inits, pads=[1, 1, 1, 1]),
                 _conv("p", "b", 37, 5, (1, 1), inits),
                 _conv("w", "p", 5, 6, (1, 17), inits, pads=[0, 8, 0, 8]),
                 _conv("y", "w", 6, 3, (3, 3), inits, dilations=[2, 2], pads=[2, 2, 2, 2])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "helium8", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("shape", [(1, 19, 9, 7), (1, 3, 70, 70)])
def test_helium_int8_columns_on_qemu_equal_host(tmp_path: Path, shape: tuple[int, ...]) -> None:
    """Cortex-M55's VMLADAVA.S8 convolutions (the zero point folded into the bias, the windows' bytes as they
    are) at every tail and fallback of their column building, bit-identical to the host build."""
    target = "cortex-m55"
    require_tools(target, mcu.missing_tools(target))
    model = _helium8_model(shape)
    host, bundle = _int8_pair(tmp_path, model, RNG.normal(0, 1, (4, *shape[1:])).astype(np.float32), target)
    assert _qarm_calls(bundle)["ember_qarm_conv_mve8"] == len(model.graph.node) - (shape[1] != 3)
    feeds = {"x": RNG.integers(-128, 128, shape).astype(np.int8)}
    got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, host.run(feeds)["y"])


def _mixed_model() -> onnx.ModelProto:
    """A QDQ 1x1 convolution of int8 [1, 16, 9, 15] (135 pixels: the last one alone) to 12 channels whose
    channel 5 has a power-of-two weight scale (requantisation multiplier 2^-3: a tie wherever a sum is 4 mod 8),
    the others scales that rule ties out; output zero point 3."""
    rng = np.random.default_rng(5)  # its own: the ties this test needs do not depend on the tests before it
    ws = rng.uniform(0.01, 0.03, 12).astype(np.float32)
    ws[5] = 0.125
    inits = [numpy_helper.from_array(np.array(0.25, np.float32), "xs"),
             numpy_helper.from_array(np.array(0, np.int8), "xz"),
             numpy_helper.from_array(rng.integers(-3, 4, (12, 16, 1, 1)).astype(np.int8), "w"),
             numpy_helper.from_array(ws, "ws"), numpy_helper.from_array(np.zeros(12, np.int8), "wz"),
             numpy_helper.from_array(rng.integers(-20, 21, 12).astype(np.int32), "b"),
             numpy_helper.from_array(0.25 * ws, "bs"), numpy_helper.from_array(np.zeros(12, np.int32), "bz"),
             numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
             numpy_helper.from_array(np.array(3, np.int8), "yz")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 16, 9, 15])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, None)
    return helper.make_model(helper.make_graph(nodes, "mixed", [x], [y], inits),
                             opset_imports=[helper.make_opsetid("", 21)])


def test_mixed_requantisation_on_qemu_equals_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A layer whose one tie-prone channel keeps the exact (half to even) requantisation while the quads
    around it take the SMLAD tile's fast form (ops/qarm.py `_tables`' mixed out table, qarm_gemm4.c ember_qa_gemm4):
    the ties land in the exact quad, so a wrong split changes output bytes."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    from ember.ops import qarm

    exacts: list[frozenset[int]] = []
    table = qarm.rq_table

    def spy(requant: object, bias: object, fast: bool, zp: int = 0, exact: frozenset[int] = frozenset()) -> list[int]:
        exacts.append(exact)
        return table(requant, bias, fast, zp, exact)

    monkeypatch.setattr(qarm, "rq_table", spy)
    onnx.save(_mixed_model(), tmp_path / "m.onnx")
    host = ember.compile(tmp_path / "m.onnx", tmp_path / "host")
    bundle = ember.compile(tmp_path / "m.onnx", tmp_path / target, target=target)
    assert exacts == [frozenset({4, 5, 6, 7})] and _qarm_calls(bundle)["ember_qarm_conv"] == 1
    for seed in range(2):
        feeds = {"x": np.random.default_rng(seed).integers(-16, 17, (1, 16, 9, 15)).astype(np.int8)}
        got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / f"run{seed}").outputs["y"]
        np.testing.assert_array_equal(got, host.run(feeds)["y"])


P1 = [1, 1, 1, 1]


def _rows_model(name: str) -> onnx.ModelProto:
    """Depthwise chains for qarm_dw3.c's assembly rows (ember_qa_dw3_fast) at every step count and tail. "six":
    [1, 5, 6, 6], rows of 6 (ember_qa_dw3_row6p), then of 3. "wide": [1, 3, 11, 70], rows longer than a plane
    of fixed pitch holds (ember_qa_dw3_row1, _row2): stride 1 (70 outputs: steps of four, two left), stride 2
    (35: three left), stride 2 unpadded left and top (17 of a fixed pitch, _row2p: one left), stride 1 (17),
    unpadded (15); a Relu after the second. "short": [1, 4, 19, 7], the fill's rows of 7, 5, 4 and 2 bytes and
    the rows' 7, 5, 4, 2 and 1 outputs (steps of two alone), many short rows (no fixed pitch, ops/qarm.py
    dw3_pitch), two Relus, 1x1 layers of 4 channels (qarm_cols.c ember_qa_direct4: 95 pixels, four at a time, then
    a pair and one; 5 pixels) on the first Relu's output and at the end. A layer before a Relu takes the
    clamped fast form where the Relu's output is uint8 (the symmetric_with_uint8 schema): the C rows
    (ember_qa_dw3_quad, _quad2), and the next layer fills from uint8."""
    inits: list = []
    if name == "six":  # VWW's last maps: 6 x 6 (ember_qa_dw3_row6p), then 3 x 3 (rows under 4: the _s variants)
        shape, c = [1, 5, 6, 6], 5
        nodes = [_conv("d0", "x", c, c, (3, 3), inits, group=c, pads=P1),
                 _conv("d1", "d0", c, c, (3, 3), inits, group=c, pads=P1),
                 _conv("d2", "d1", c, c, (3, 3), inits, group=c, pads=P1, strides=[2, 2]),
                 _conv("y", "d2", c, c, (3, 3), inits, group=c, pads=P1)]
        outs = ["y"]
    elif name == "wide":
        shape, c = [1, 3, 11, 70], 3
        nodes = [_conv("d0", "x", c, c, (3, 3), inits, group=c, pads=P1),
                 _conv("d1", "d0", c, c, (3, 3), inits, group=c, pads=P1, strides=[2, 2]),
                 helper.make_node("Relu", ["d1"], ["r1"]),
                 _conv("d2", "r1", c, c, (3, 3), inits, group=c, pads=[0, 1, 1, 0], strides=[2, 2]),
                 _conv("d3", "d2", c, c, (3, 3), inits, group=c, pads=P1),
                 _conv("y", "d3", c, c, (3, 3), inits, group=c)]
        outs = ["y"]
    else:
        shape, c = [1, 4, 19, 7], 4
        nodes = [_conv("d0", "x", c, c, (3, 3), inits, group=c, pads=P1),  # 19 x 7
                 _conv("d1", "d0", c, c, (3, 3), inits, group=c, pads=[1, 0, 1, 0]),  # 19 x 5
                 helper.make_node("Relu", ["d1"], ["r1"]),
                 _conv("y2", "r1", c, 8, (1, 1), inits),
                 _conv("d2", "r1", c, c, (3, 3), inits, group=c, pads=P1),  # 19 x 5
                 _conv("d3", "d2", c, c, (3, 3), inits, group=c, pads=[1, 1, 1, 0]),  # 19 x 4
                 _conv("d4", "d3", c, c, (3, 3), inits, group=c, pads=P1, strides=[2, 2]),  # 10 x 2
                 helper.make_node("Relu", ["d4"], ["r4"]),
                 _conv("d5", "r4", c, c, (3, 3), inits, group=c, pads=P1),  # 10 x 2
                 _conv("d6", "d5", c, c, (3, 3), inits, group=c, pads=P1, strides=[2, 2]),  # 5 x 1
                 _conv("d7", "d6", c, c, (3, 3), inits, group=c, pads=P1),  # 5 x 1
                 _conv("y", "d7", c, 8, (1, 1), inits)]
        outs = ["y", "y2"]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    ys = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs]
    return helper.make_model(helper.make_graph(nodes, name, [x], ys, inits),
                             opset_imports=[helper.make_opsetid("", 17)])


def _dw3_forms(bundle: ember.Bundle) -> list[tuple[int, str]]:
    """Per ember_qarm_dw3 call its input's signedness and its out table ([zero point, lo, hi, fast])."""
    text = (bundle.path / f"{bundle.name}.c").read_text()
    tables = dict(re.findall(r"static const int32_t (\w+)\[\d+\] = \{([^}]*)\}", text))
    calls = [re.split(r",(?![^(]*\))", c) for c in re.findall(r"^    ember_qarm_dw3\((.*)\);", text, re.M)]
    return [(int(a[2]), tables[a[8].strip()]) for a in calls]


SSAT = "0, -128, 127, 1"  # the assembly rows' form: fast, the zero point in ra, the whole int8 range


@pytest.mark.parametrize(("name", "schema"), [("six", "asymmetric"), ("wide", "asymmetric"),
                                              ("wide", "symmetric_with_uint8"), ("short", "asymmetric"),
                                              ("short", "symmetric_with_uint8")])
def test_depthwise_rows_on_qemu_equal_host(tmp_path: Path, name: str, schema: str) -> None:
    """qarm_dw3.c's depthwise assembly (ember_qa_dw3_fast: the fill, the rows' steps of four and two, TBB's tails)
    and 1x1 column builder (ember_qa_direct4) on int8 and uint8 inputs, bit-identical to the host build."""
    target = "cortex-m4"
    require_tools(target, mcu.missing_tools(target))
    model = _rows_model(name)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    host, bundle = _int8_pair(tmp_path, model, RNG.normal(0, 1, (4, *shape[1:])).astype(np.float32), target, schema)
    forms = _dw3_forms(bundle)
    assert len(forms) == {"six": 4, "wide": 5, "short": 8}[name]
    if schema == "asymmetric":
        assert forms == [(1, SSAT)] * len(forms)
    else:  # the Relus' uint8 outputs (their clamp: the C rows), read by the next layers' uint8 fill
        clamped = [1, 4] if name == "short" else [1]
        for i in clamped:
            assert forms[i] == (1, "0, 0, 255, 1") and forms[i + 1] == (0, SSAT), forms
        assert forms.count((1, SSAT)) == len(forms) - 2 * len(clamped), forms
    for seed in range(2):
        feeds = {"x": np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)}
        got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / f"run{seed}").outputs
        want = host.run(feeds)
        for out in got:
            np.testing.assert_array_equal(got[out], want[out])
        assert set(got) == {o.name for o in model.graph.output}
