"""A TFLite convolution between NHWC tensors runs no layout Transpose: it reads its NHWC input in place and stores
its output channels-last (passes/nhwc_views.py: `atrous`'s dilated convolution before the crop of its
SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND pair too, and `conv_variants`' convolution, whose NHWC output then runs
through channels-last pools to a FULLY_CONNECTED over its channels; float TRANSPOSE_CONV runs channels-last through
Transpose optimization), and gives LiteRT's reference results, as the host's build and as portable C under
AddressSanitizer and UndefinedBehaviorSanitizer (the channels-last paths of qdwconv.c's planes and q16.c's scalar
kernel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.toolchain.targets import get_target
from tests.frontends.tflite_support import FIXTURES, inputs_for, litert, run_ember, run_litert, run_sanitized

LAYOUT_PERMS = ([0, 3, 1, 2], [0, 2, 3, 1])
INTEGER = ["op_conv_relu6_int8", "op_depthwise_int8", "op_transpose_conv_int8", "op_conv_relu6_int16",
           "op_depthwise_int16", "op_transpose_conv_int16", "mobilenet_like_int16"]


# The fixtures refused on purpose (test_tflite_errors.py, test_tflite_ops_more.py; test_tflite_int16.py: HARD_SWISH).
REFUSED = {"refused_ops", "hard_swish_int16"}
# Microcontrollers (the DSP, Cortex-M0/M3 and Helium int8 kernels, and RISC-V 32's portable ones): there no kernel
# reads or stores the NHWC bytes through an NCHW copy in scratch (passes/nhwc_views.py `no_copies`), and yet none is
# left with a layout Transpose: the integer kernels build their columns and planes from NHWC (ops/qarm.py reads_nhwc;
# a portable depthwise a channel at a time, qlinear.py _dw_per_channel), a float depthwise convolution fills its
# planes at the pixel stride (conv.py dw_strided) and a float Conv's product goes transposed into its output
# (conv.py WEIGHTS_KM).
MCUS = ["cortex-m4", "cortex-m3", "cortex-m55", "riscv32"]
TARGETS = ["host", "x86_64", "i386", "aarch64", "armv7", "riscv64", "wasm32", *MCUS]


def _kept(path: Path, target: str) -> list[str]:
    t = get_target(target)
    graph, _, _ = build_graph(str(path), CompileOptions(target=target), target_kind=t.kind, int8_isa=t.int8_isa)
    return [n.name for n in graph.nodes if n.op == "Transpose" and list(n.attrs.get("perm", [])) in LAYOUT_PERMS]


@pytest.mark.parametrize("name", [*INTEGER, "transpose_conv_bias", "transpose_conv_bias_ref", "atrous", "conv_variants",
                                  "conv_variants_int8"])
def test_convolutions_keep_no_layout_transpose(name: str) -> None:
    assert _kept(FIXTURES / f"{name}.tflite", "host") == []


@pytest.mark.parametrize("target", TARGETS)
def test_no_fixture_keeps_a_layout_transpose_on_any_target(target: str) -> None:
    """Every TFLite fixture, float, int8 and int16, compiles with no NHWC <-> NCHW Transpose for each target: where the
    target's CPU family runs no channels-last regions, the NCHW convolutions at the model's edges read and store NHWC
    themselves."""
    kept = {path.stem for path in sorted(FIXTURES.glob("*.tflite"))
            if path.stem not in REFUSED and _kept(path, target)}
    assert kept == set()


@pytest.mark.parametrize("name", INTEGER)
def test_integer_convolutions_in_place_bit_exact(tmp_path: Path, name: str) -> None:
    path = FIXTURES / f"{name}.tflite"
    interp = litert(path)
    bundle = ember.compile(path, tmp_path / "b", name="m")
    for seed in (0, 1):
        xs = inputs_for(interp, seed)
        want = run_litert(interp, xs)
        builds = {"host": run_ember(bundle, interp, xs)}
        if seed == 0:
            builds["sanitized"] = run_sanitized(bundle, interp, xs, tmp_path / "drv")
        for build, got in builds.items():
            for w, g in zip(want, got, strict=True):
                np.testing.assert_array_equal(g, w, err_msg=f"{name} {build}")
