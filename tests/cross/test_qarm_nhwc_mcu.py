"""The Cortex-M int8 kernels (kernels/qarm*.c) at a channels-last model's edges: each reads its NHWC input and
stores its NHWC output itself (EMBER_QA_LAY), so no layout Transpose is left, and the firmware's outputs under QEMU
are bit-identical to the host build's. So do a RISC-V microcontroller's portable kernels, whose depthwise
convolution gathers a channel at a time there (no NCHW copies in scratch).

One model whose NHWC inputs each meet another geometry: an RGB stem of stride 2 (ember_qa_col_hwc's kernel rows as
runs, and its border taps), a 1x1 of 8 channels over 35 pixels (the zero point folded into the biases of the
channel quads' tile, but not for the last pixel alone), a dilated 3x3 (tap by tap), depthwise 3x3 of stride 1 over
two images and of stride 3 (the planes' strided fills, the rows' strided stores); its NHWC outputs are stored by
convolutions of 7, 8 and 5 channels over odd pixel counts (ember_qa_hwc_store's lone last pixel) and by depthwise
ones; a depthwise 5x5 takes the portable kernel on every core, in and out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.cross import require_tools
from tests.cross.test_qarm_mcu import _conv, _int8_pair, _qarm_calls
from tests.models.test_channels_last_edges import _layout_transposes
from tests.support import mcu
from tests.unit.test_transposes import TO_NCHW, TO_NHWC

RNG = np.random.default_rng(41)
INPUTS = {"a": (1, 9, 13, 3), "b": (1, 5, 7, 8), "c": (1, 7, 9, 4), "d": (2, 8, 10, 6), "e": (1, 9, 9, 5),
          "f": (1, 9, 8, 4)}


def edges_model() -> onnx.ModelProto:
    inits: list = []
    t = [helper.make_node("Transpose", [k], [f"{k}_t"], perm=TO_NCHW) for k in INPUTS]
    nodes = [*t,
             _conv("a1", "a_t", 3, 8, (3, 3), inits, strides=[2, 2], pads=[1, 1, 1, 1]),  # 5 x 7
             helper.make_node("Relu", ["a1"], ["a1r"]),
             _conv("a2", "a1r", 8, 7, (3, 3), inits, pads=[1, 1, 1, 1]),  # 7 channels, 35 pixels out
             _conv("a3", "a1r", 8, 8, (3, 3), inits, pads=[0, 1, 0, 1]),  # 8 channels (quads), 3 x 7 out
             _conv("b1", "b_t", 8, 8, (1, 1), inits),  # 1x1 in and out (quads: the zero point in the biases)
             _conv("c1", "c_t", 4, 5, (3, 3), inits, dilations=[2, 2], pads=[2, 1, 2, 1]),  # 7 x 7
             _conv("d1", "d_t", 6, 6, (3, 3), inits, group=6, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d1"], ["d1r"]),
             _conv("d2", "d1r", 6, 6, (3, 3), inits, group=6, strides=[2, 2], pads=[1, 1, 1, 1]),
             _conv("e1", "e_t", 5, 5, (3, 3), inits, group=5, strides=[3, 3], pads=[1, 1, 1, 1]),
             _conv("f1", "f_t", 4, 4, (5, 5), inits, group=4, pads=[2, 2, 2, 2])]  # qdwconv.c's, a channel at a time
    outs = ["a2", "a3", "b1", "c1", "d2", "e1", "f1"]
    nodes += [helper.make_node("Transpose", [o], [f"y_{o}"], perm=TO_NHWC) for o in outs]
    xs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s)) for k, s in INPUTS.items()]
    ys = [helper.make_tensor_value_info(f"y_{o}", TensorProto.FLOAT, None) for o in outs]
    graph = helper.make_graph(nodes, "nhwc_edges", xs, ys, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# Each core's kernels for the model's layers: every one has an NHWC side (d2's input is d1's NCHW output). On
# Helium e1's stride of 3 takes the int16 depthwise kernel, the others the int8 ones. RISC-V's are the portable
# ones (qconv.c; qdwconv.c a channel at a time, ops/qlinear.py _dw_per_channel).
KERNELS = {"cortex-m4": {"ember_qarm_conv_hwc": 5, "ember_qarm_dw3_hwc": 3},
           "cortex-m3": {"ember_qarm_conv_mul_hwc": 5, "ember_qarm_dw3_mul_hwc": 3},
           "cortex-m55": {"ember_qarm_conv_mve8_hwc": 5, "ember_qarm_dw3_mve8_hwc": 2, "ember_qarm_dw3_mve_hwc": 1},
           "riscv32": {}}


@pytest.mark.parametrize("target", list(KERNELS))
def test_nhwc_edges_in_place_on_qemu_equal_host(tmp_path: Path, target: str) -> None:
    require_tools(target, mcu.missing_tools(target))
    calib = {k: RNG.normal(0, 1, (4 * s[0], *s[1:])).astype(np.float32) for k, s in INPUTS.items()}
    host, bundle = _int8_pair(tmp_path, edges_model(), calib, target)
    assert _layout_transposes(tmp_path / "m.onnx", target, quantize="int8", profile=str(tmp_path / "p.yaml"),
                              io="int8") == []
    assert {k: v for k, v in _qarm_calls(bundle).items() if v} == KERNELS[target]
    for seed in range(2):
        rng = np.random.default_rng(seed)
        feeds = {k: rng.integers(-128, 128, s).astype(np.int8) for k, s in INPUTS.items()}
        got = mcu.run_firmware(bundle.path, target, feeds, tmp_path / f"run{seed}").outputs
        want = host.run(feeds)
        for name, v in want.items():
            np.testing.assert_array_equal(np.asarray(got[name]).reshape(v.shape), v, err_msg=name)
