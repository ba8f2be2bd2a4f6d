"""A float convolution at a channels-last model's edge on the targets without channels-last regions: its NCHW kernel
reads the NHWC input and stores the NHWC output itself (tests/models/test_channels_last_edges.py), compiled for
aarch64 (NEON), riscv64 (scalar) and wasm32 and run under qemu-user or wasmtime. Criterion: onnxruntime's outputs
within 1e-4 of their range, as the host's model tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import ember
from tests.cross import require_tools
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
