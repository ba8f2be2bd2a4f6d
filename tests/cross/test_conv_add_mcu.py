"""A residual QAdd fused into its convolution on microcontrollers (passes/fuse_conv_add.py, ops/qconv_add.py):
bit-identical on QEMU to the host build (which keeps the Add apart), with each core's fused kernel (SMLAD's
ember_qarm_conv_add on M4, Helium's on M55; on Cortex-M0 the portable ember_qconv_add, which targets without
an int8_isa run, with the integer kernel choice turned off: the M0's own qarm_mul.c kernel is
tests/cross/test_qarm_mcu.py's) and the output written over the shortcut's buffer.

The model has a stem convolution and two residual blocks on a 9x11 map (99 pixels: partial stages of 16
pixels, qarm.c's, and of the portable kernel's blocks): an identity shortcut (the Add's second operand),
then a strided body beside a 1x1 strided shortcut convolution, Add(shortcut, body): the body's last
convolution is the Add's second operand (the swapped parameters); last a convolution to two pixels.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.cli import main
from ember.toolchain.targets import Target
from tests.cross import require_tools
from tests.support import mcu

RNG = np.random.default_rng(7)
KERNEL = {"cortex-m0": "ember_qconv_add", "cortex-m4": "ember_qarm_conv_add", "cortex-m55": "ember_qarm_conv_mve8_add"}


def _conv(name: str, src: str, c: int, m: int, k: int, inits: list, stride: int = 1) -> onnx.NodeProto:
    inits += [numpy_helper.from_array(RNG.normal(0, 0.3, (m, c, k, k)).astype(np.float32), f"{name}_w"),
              numpy_helper.from_array(RNG.normal(0, 0.2, m).astype(np.float32), f"{name}_b")]
    return helper.make_node("Conv", [src, f"{name}_w", f"{name}_b"], [name], kernel_shape=[k, k],
                            strides=[stride, stride], pads=[k // 2] * 4)


def residual_model() -> onnx.ModelProto:
    inits: list = []
    nodes = [_conv("c0", "x", 3, 8, 3, inits), helper.make_node("Relu", ["c0"], ["c0r"]),
             _conv("a1", "c0r", 8, 8, 3, inits), helper.make_node("Relu", ["a1"], ["a1r"]),
             _conv("a2", "a1r", 8, 8, 3, inits), helper.make_node("Add", ["a2", "c0r"], ["a"]),
             helper.make_node("Relu", ["a"], ["ar"]),
             _conv("b1", "ar", 8, 6, 3, inits, stride=2), helper.make_node("Relu", ["b1"], ["b1r"]),
             _conv("b2", "b1r", 6, 6, 3, inits), _conv("s", "ar", 8, 6, 1, inits, stride=2),
             helper.make_node("Add", ["s", "b2"], ["b"]), helper.make_node("Relu", ["b"], ["br"])]
    # two output pixels: ember_qconv's matrix-vector path, its one scratch row on a microcontroller
    inits += [numpy_helper.from_array(RNG.normal(0, 0.2, (4, 6, 5, 5)).astype(np.float32), "t_w")]
    nodes.append(helper.make_node("Conv", ["br", "t_w"], ["y"], kernel_shape=[5, 5]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 11])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 2])
    graph = helper.make_graph(nodes, "residual", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _calls(bundle: ember.Bundle, fn: str) -> list[list[str]]:
    """The arguments of each call of `fn` in the entry point's body."""
    text = (bundle.path / f"{bundle.name}.c").read_text()
    return [[a.strip() for a in m.group(1).split(", ")] for m in re.finditer(rf"^    {fn}\((.*)\);$", text, re.M)]


@pytest.mark.parametrize("target", sorted(KERNEL))
def test_fused_residual_on_qemu_equals_host(tmp_path: Path, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tools(target, mcu.missing_tools(target))
    if target == "cortex-m0":  # the portable kernels
        monkeypatch.setattr(Target, "int8_isa", property(lambda self: ""))
    onnx.save(residual_model(), tmp_path / "r.onnx")
    np.save(tmp_path / "calib.npy", RNG.normal(0, 1, (8, 3, 9, 11)).astype(np.float32))
    assert main(["profile", str(tmp_path / "r.onnx"), str(tmp_path / "calib.npy"), "-o", str(tmp_path / "p.yaml")]) == 0
    opts = {"quantize": "int8", "profile": str(tmp_path / "p.yaml"), "io": "int8"}
    host = ember.compile(tmp_path / "r.onnx", tmp_path / "host", **opts)
    bundle = ember.compile(tmp_path / "r.onnx", tmp_path / target, target=target, **opts)
    fused = _calls(bundle, KERNEL[target])
    assert len(fused) == 2 and not _calls(bundle, "ember_qadd")
    # each block's output over its shortcut: the call's y is its residual
    for args in fused:
        y_at, res_at = (re.search(r"activations \+ (\d+)", a) for a in (args[0], args[-3]))
        assert y_at is not None and res_at is not None and y_at.group(1) == res_at.group(1), args
    x = {"x": RNG.integers(-128, 128, (1, 3, 9, 11)).astype(np.int8)}
    got = mcu.run_firmware(bundle.path, target, x, tmp_path / "run").outputs["y"]
    np.testing.assert_array_equal(got, host.run(x)["y"])
