"""A convolution at a channels-last model's edge on the targets without channels-last regions: its NCHW kernel reads
the NHWC input and stores the NHWC output itself (tests/models/test_channels_last_edges.py), compiled for aarch64
(NEON), riscv64 (scalar) and wasm32 and run under qemu-user or wasmtime. Criterion: float, onnxruntime's outputs
within 1e-4 of their range, as the host's model tests; the int8 and int16 TFLite fixtures on WebAssembly (which took
no in-place edge before), LiteRT's reference kernels' bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from tests.cross import require_tools
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_litert
from tests.models.test_channels_last_edges import EDGES
from tests.support import crossrun
from tests.support.models import assert_close, onnxruntime_outputs

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
