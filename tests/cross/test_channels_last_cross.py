"""A convolution at a channels-last model's edge on the targets without channels-last regions: its NCHW kernel reads
the NHWC input and stores the NHWC output itself (tests/models/test_channels_last_edges.py), compiled for aarch64
(NEON), riscv64 (scalar) and wasm32 and run under qemu-user or wasmtime, and for Cortex-M4 and RISC-V 32
microcontrollers under qemu-system. Criterion: float, onnxruntime's outputs within 1e-4 of their range, as the host's
model tests; the int8 and int16 TFLite fixtures on WebAssembly (which took no in-place edge before), LiteRT's
reference kernels' bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from tests.cross import require_tools
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_litert
from tests.models.test_channels_last_edges import EDGES, Edge, _layout_transposes
from tests.support import crossrun, mcu
from tests.support.models import assert_close, onnxruntime_outputs
from tests.unit.test_transposes import TO_NHWC, Net

# One of each kernel path: a Conv's transposed product blocks, a 1x1 gathered by register transposes, a grouped one
# from its NCHW copy, a depthwise and a Winograd one between NCHW copies, ConvNarrow's pixel-major product.
CROSS = ["im2col_3x3_8_to_12", "direct_1x1", "grouped", "depthwise_strided", "winograd2_batch", "narrow_1x1"]
REL = 1e-4


@pytest.mark.parametrize("target", ["aarch64", "riscv64", "wasm32"])
def test_edges_on_cross_targets_match_onnxruntime(tmp_path: Path, target: str) -> None:
    require_tools(target, crossrun.missing_tools(target))
    for edge in (e for e in EDGES if e.name in CROSS):
        path, out = edge.save(tmp_path / f"{edge.name}.onnx")
        bundle = ember.compile(path, tmp_path / edge.name, target=target)
        assert not any(op == "Transpose" for op in bundle.manifest["ops"]), (edge.name, bundle.manifest["ops"])
        x = edge.input()
        work = tmp_path / f"{edge.name}_run"
        got = (crossrun.run_wasm(bundle.path, x, work) if target == "wasm32"
               else crossrun.run_linux(bundle.path, target, x, work))
        assert_close(got[out], onnxruntime_outputs(path, x)[out], f"{edge.name} on {target}", rel=REL)


# A microcontroller's float edges (small: they run on the board's RAM): depthwise planes filled and stored at the
# pixel stride (ops/conv.py dw_strided) of stride 1 with an activation, stride 2 (the planes' deinterleave),
# multiplier 2, 5x5 dilated; windows over 6 channels gathered by im2col, their products transposed into the NHWC
# output (ember_conv_hwc_f32) with an activation, of 2 groups over two images, with HardSwish after the product.
MCU_EDGES = [Edge("dw_s1", 1, 9, 11, 6, 6, 3, group=6, act="Relu"),
             Edge("dw_s2", 1, 10, 9, 5, 5, 3, stride=2, group=5),
             Edge("dw_mult2", 2, 8, 7, 4, 8, 3, group=4),
             Edge("dw_dilated_5x5", 1, 12, 11, 3, 3, 5, group=3, dilation=2),
             Edge("dense_6_to_5", 1, 9, 9, 6, 5, 3, act="Relu"),
             Edge("grouped_2", 2, 7, 9, 6, 8, 3, group=2),
             Edge("strided_hardswish", 1, 11, 10, 5, 7, 3, stride=2, act="HardSwish")]


def _nchw_in_1x1(path: Path) -> tuple[Path, str]:
    """An NCHW input into a 1x1 whose output is NHWC: ember_conv_hwc_f32's `direct` product (A read down the input's
    planes)."""
    net = Net()
    y = net.op("Conv", ["x", net.w(6, 5, 1, 1), net.w(6)])
    out = net.op("Transpose", [y], perm=TO_NHWC)
    return net.save(path, [("x", [1, 5, 7, 9])], [out]), out


@pytest.mark.parametrize("target", ["cortex-m4", "riscv32"])
def test_microcontroller_edges_match_onnxruntime(tmp_path: Path, target: str) -> None:
    require_tools(target, mcu.missing_tools(target))
    models = [(e.name, *e.save(tmp_path / f"{e.name}.onnx"), e.input()) for e in MCU_EDGES]
    direct, out = _nchw_in_1x1(tmp_path / "direct.onnx")
    models.append(("direct_1x1", direct, out, {"x": np.random.default_rng(1).standard_normal((1, 5, 7, 9),
                                                                                                np.float32)}))
    for name, path, out, x in models:
        assert _layout_transposes(path, target) == [], name
        bundle = ember.compile(path, tmp_path / name, target=target)
        got = mcu.run_firmware(bundle.path, target, x, tmp_path / f"{name}_run").outputs[out]
        want = onnxruntime_outputs(path, x)[out]
        assert_close(np.asarray(got).reshape(want.shape), want, f"{name} on {target}", rel=REL)


@pytest.mark.parametrize("name", ["op_conv_relu6_int8", "op_depthwise_int8", "op_conv_relu6_int16"])
def test_integer_edges_in_wasmtime_bit_exact(tmp_path: Path, name: str) -> None:
    require_tools("wasm32", crossrun.missing_tools("wasm32"))
    path = FIXTURES / f"{name}.tflite"
    bundle = ember.compile(path, tmp_path / "b", target="wasm32", name="m")
    assert "Transpose" not in bundle.manifest["ops"] and bundle.manifest["ops"].get("NhwcView") == 2, \
        bundle.manifest["ops"]
    interp = litert(path)
    xs = inputs_for(interp, 0)
    want = run_litert(interp, xs)
    got = crossrun.run_wasm(bundle.path, dict(zip([v["name"] for v in bundle.manifest["inputs"]], xs, strict=True)),
                            tmp_path / "run")
    names = [v["name"] for v in bundle.manifest["outputs"]]
    assert len(names) == len(want) == 1
    np.testing.assert_array_equal(got[names[0]], want[0], err_msg=f"{name} on wasm32")
