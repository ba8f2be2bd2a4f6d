"""Outputs planned over their own input (OpDef.overlap, ember/ops/overlap.py): every declared kernel variant
gives the same bytes as a plan that keeps input and output apart. An overlap in the wrong order corrupts
values without touching memory outside the bundle's buffers, which ASan cannot see, so this comparison is the
check: on the host (ember_qconv's pointwise path), under QEMU on the Cortex-M4 (qarm_dw3.c's ember_qarm_dw3 and
direct ember_qarm_conv), the Cortex-M55 (their Helium variants) and the Cortex-M0 with its integer kernel
choice turned off (the portable ember_qdwconv and ember_qconv, which targets of no int8_isa run: RISC-V, the
Cortex-A cores)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.ops import registry
from ember.toolchain.targets import Target
from tests.cross import require_tools
from tests.support import mcu

RNG = np.random.default_rng(23)
# (name, input channels, output channels, kernel, stride, group): a stem, then depthwise (stride 1 and 2) and
# pointwise layers that widen and narrow: each overlapping layer's input dies at it.
LAYERS = [("stem", 3, 8, 3, 1, 1), ("dw1", 8, 8, 3, 1, 8), ("pw1", 8, 16, 1, 1, 1), ("dw2", 16, 16, 3, 2, 16),
          ("pw2", 16, 12, 1, 1, 1), ("dw3", 12, 12, 3, 1, 12), ("head", 12, 4, 3, 1, 1)]
OVERLAPPING = ("dw1", "pw1", "dw2", "pw2", "dw3")


def _model(path: Path) -> Path:
    """A chain of int8 QLinearConv layers on a 1x3x14x18 input; scales keep the outputs spread."""
    inits, nodes, prev = [], [], "x"
    scale = 0.05
    for name, cin, cout, k, stride, group in LAYERS:
        w = RNG.integers(-70, 71, (cout, cin // group, k, k)).astype(np.int8)
        fan = cin // group * k * k
        out_scale = scale * 0.01 * 40 * np.sqrt(fan) / 2
        inits += [numpy_helper.from_array(w, f"{name}_w"),
                  numpy_helper.from_array(np.float32(0.01), f"{name}_ws"),
                  numpy_helper.from_array(np.int8(0), f"{name}_wz"),
                  numpy_helper.from_array(RNG.integers(-500, 500, cout).astype(np.int32), f"{name}_b"),
                  numpy_helper.from_array(np.float32(scale), f"{name}_xs"),
                  numpy_helper.from_array(np.int8(3), f"{name}_xz"),
                  numpy_helper.from_array(np.float32(out_scale), f"{name}_ys"),
                  numpy_helper.from_array(np.int8(-2), f"{name}_yz")]
        out = "y" if name == "head" else f"{name}_out"
        nodes.append(helper.make_node(
            "QLinearConv", [prev, f"{name}_xs", f"{name}_xz", f"{name}_w", f"{name}_ws", f"{name}_wz", f"{name}_ys",
                            f"{name}_yz", f"{name}_b"], [out], name=name, kernel_shape=[k, k],
            pads=[k // 2] * 4, strides=[stride, stride], group=group))
        prev, scale = out, out_scale
    graph = helper.make_graph(nodes, "overlap", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 3, 14, 18])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _model(tmp_path_factory.mktemp("overlap") / "overlap.onnx")


def _compile(model: Path, out: Path, target: str, overlap: bool, monkeypatch: pytest.MonkeyPatch) -> ember.Bundle:
    with monkeypatch.context() as m:
        if not overlap:
            m.setattr(registry.get("QConv"), "overlap", None)
        if target == "cortex-m0":  # the portable kernels (the M0's own, qarm_mul.c's, share the M4's overlaps)
            m.setattr(Target, "int8_isa", property(lambda self: ""))
        # The host's int8 layout pass would make the activations channel-blocked, which no kernel overlaps.
        return ember.compile(str(model), out, target=target, opt_level=1 if target == "host" else 3)


def _calls(bundle: ember.Bundle) -> list[tuple[str, str]]:
    """Each convolution kernel call's output and input buffers (region + offset), from NAME.c."""
    src = (bundle.path / f"{bundle.name}.c").read_text()
    calls = re.findall(r"^\s*(?:ember_qconv|ember_qdwconv|ember_qarm_conv\w*|ember_qarm_dw3\w*)\((.*)$", src, re.M)
    return [tuple(re.findall(r"(?:activations|mutableWeight) \+ \d+", args)[:2]) for args in calls]


def _shared(bundle: ember.Bundle) -> int:
    """How many convolution calls write where they read."""
    return sum(len(c) == 2 and c[0] == c[1] for c in _calls(bundle))


@pytest.mark.parametrize("target", ["host", "cortex-m4", "cortex-m55", "cortex-m0"])
def test_overlapping_plan_is_bit_identical_to_separate_buffers(model: Path, tmp_path: Path, target: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if target != "host":
        require_tools(target, mcu.missing_tools(target))
    apart = _compile(model, tmp_path / "apart", target, False, monkeypatch)
    over = _compile(model, tmp_path / "over", target, True, monkeypatch)
    # Every depthwise and pointwise layer overlaps on microcontrollers; the host declares its pointwise path.
    want = len(OVERLAPPING) if target != "host" else 2
    assert _shared(apart) == 0 and _shared(over) == want, _calls(over)
    if target == "cortex-m0":
        assert "ember_qdwconv(" in (over.path / f"{over.name}.c").read_text()
    if target != "host":  # (the host's plan is led by its kernels' scratch here)
        assert over.manifest["memory"]["activations"] < apart.manifest["memory"]["activations"]
    x = {"x": RNG.integers(-128, 128, (1, 3, 14, 18)).astype(np.int8)}
    if target == "host":
        got, ref = over.run(x)["y"], apart.run(x)["y"]
    else:
        got = mcu.run_firmware(over.path, target, x, tmp_path / "run_over", count_instructions=False).outputs["y"]
        ref = mcu.run_firmware(apart.path, target, x, tmp_path / "run_apart", count_instructions=False).outputs["y"]
    assert len(np.unique(ref)) > 8, "degenerate test: the output is nearly constant"
    assert got.tobytes() == ref.tobytes(), f"{int(np.count_nonzero(got != ref))} of {ref.size} output bytes differ"
