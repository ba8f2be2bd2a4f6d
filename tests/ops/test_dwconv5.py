"""Depthwise convolutions five taps wide (ember_dwconv_planes_f32's row-at-a-time path: EfficientNet's and
MobileNetV3's 5x5) against onnxruntime: strides 1 and 2, dilation, asymmetric pads, a channel multiplier,
a 3x5 window, odd plane sizes, and Inf/NaN inputs that must stay inside their windows. One model holds
every case as a branch of the same input (one compile); it also runs in a C driver built with
AddressSanitizer + UBSan, where a tap that reads past the padded planes fails. With 20 channels the same
cases (but the multiplier) take the channel-blocked path (kernels/dwblock.c), whose last block of channels
overlaps the one before it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

# output name: (kernel (h, w), strides, pads (top, left, bottom, right), dilations, channel multiplier)
CASES = {
    "s1": ((5, 5), 1, (2, 2, 2, 2), 1, 1),
    "s2": ((5, 5), 2, (2, 2, 2, 2), 1, 1),
    "s2_asym_pads": ((5, 5), 2, (1, 2, 2, 1), 1, 1),
    "dilated": ((5, 5), 1, (4, 4, 4, 4), 2, 1),
    "mult2_nopad": ((5, 5), 1, (0, 0, 0, 0), 1, 2),
    "k3x5_s2": ((3, 5), 2, (1, 2, 1, 2), 1, 1),
}


def _model(path: Path, C: int) -> None:
    rng = np.random.default_rng(5)
    nodes, inits, outs = [], [], []
    for name, ((kh, kw), s, pads, d, mult) in CASES.items():
        inits += [numpy_helper.from_array(rng.standard_normal((C * mult, 1, kh, kw)).astype(np.float32), f"w_{name}"),
                  numpy_helper.from_array(rng.standard_normal(C * mult).astype(np.float32), f"b_{name}")]
        nodes.append(helper.make_node("Conv", ["x", f"w_{name}", f"b_{name}"], [name], group=C, strides=[s, s],
                                      pads=[pads[0], pads[1], pads[2], pads[3]], dilations=[d, d]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "dw5", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 13, 11])],
                              outs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@pytest.mark.parametrize("C", [4, 20])
def test_five_wide_depthwise_matches_onnxruntime(C: int, tmp_path: Path) -> None:
    path = tmp_path / "dw5.onnx"
    _model(path, C)
    bundle = ember.compile(path, tmp_path / "out")
    assert ("ember_dwconv_blocked_f32(" in (bundle.path / "dw5.c").read_text()) == (C > 4)
    x = np.random.default_rng(6).standard_normal((1, C, 13, 11)).astype(np.float32)
    x[0, 1, 0, 10] = np.inf  # top right corner: only windows that contain it may go non-finite
    x[0, 2, 12, 0] = np.nan  # bottom left corner
    ref = onnxruntime_outputs(path, {"x": x})
    got = bundle.run({"x": x})
    sanitized = cdriver.run(bundle.path, tmp_path / "asan", {"x": x}, sanitize=True)
    for name in CASES:
        for out, what in ((got, name), (sanitized, f"{name} (sanitized C driver)")):
            np.testing.assert_array_equal(np.isfinite(out[name]), np.isfinite(ref[name]), err_msg=what)
            fin = np.isfinite(ref[name])
            assert_close(np.where(fin, out[name], 0), np.where(fin, ref[name], 0), what)
