"""int8 products on AMX tiles (kernels/qamx.c): on a host that has AMX-INT8 and whose Linux grants the tile state, the
outputs must equal ONNX's reference and the AVX-512 VNNI build's (`--cpu-param qamx=false`) bytes exactly, in-process
and as a C program under ASan and UBSan: bands of 32 and 16 output channels, full and partial blocks of pixels (100 =
64 + 36, 49, 25), K of 64 to 576 bytes, channel-blocked outputs between two convolutions, weight offsets (the sums
stored, then requantised), a QLinearMatMul. Which convolutions stay QConv for the tiles is checked on any host."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.config import CompileOptions
from ember.driver import build_graph
from ember.toolchain.cpus import resolve_cpu
from tests.ops.test_quant_kernels import _f32, _model, _q
from tests.ops.test_quant_shifted import _qconv_model
from tests.support import cdriver

RNG = np.random.default_rng(31)


def _amx_granted() -> bool:
    """The host has AMX-INT8 and Linux hands this process the tile state (what qamx.c asks for)."""
    choice = resolve_cpu("host", None)
    if choice is None or not choice.family.amx_int8:
        return False
    return ctypes.CDLL(None).syscall(158, 0x1023, 18) == 0  # arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)


needs_amx = pytest.mark.skipif(not _amx_granted(), reason="needs a Linux host with AMX-INT8 tiles")

CONV_CASES = {
    # name: (x dtype, x shape, w shape (M, C, kh, kw), attrs)
    "1x1_m48_100px": (np.uint8, (1, 64, 10, 10), (48, 64, 1, 1), {}),
    "3x3_k576_49px": (np.int8, (1, 64, 7, 7), (32, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
    "3x3_s2_batch2": (np.uint8, (2, 64, 16, 16), (16, 64, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "1x1_k128_25px": (np.int8, (1, 128, 5, 5), (64, 128, 1, 1), {}),
}


def _both(tmp_path: Path, model: onnx.ModelProto) -> tuple[ember.Bundle, ember.Bundle]:
    """The model compiled as it comes (the tiles) and with qamx=false (AVX-512 VNNI)."""
    onnx.save(model, tmp_path / "m.onnx")
    return (ember.compile(tmp_path / "m.onnx", tmp_path / "amx"),
            ember.compile(tmp_path / "m.onnx", tmp_path / "vnni", cpu_params=["qamx=false"]))


def _ops(bundle: ember.Bundle) -> list[str]:
    return [n["op"] for n in bundle.manifest["nodes"]]


@needs_amx
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_on_tiles_matches_reference_and_vnni(tmp_path: Path, case: str) -> None:
    model, feeds = _qconv_model(*CONV_CASES[case])
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    amx, vnni = _both(tmp_path, model)
    assert _ops(amx) == ["QConv"]
    np.testing.assert_array_equal(amx.run(feeds)["y"], ref)
    np.testing.assert_array_equal(vnni.run(feeds)["y"], ref)
    got = cdriver.run(amx.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-march=native",))
    np.testing.assert_array_equal(got["y"], ref)


@needs_amx
def test_block_chain_and_weight_offsets(tmp_path: Path) -> None:
    """Two convolutions whose middle tensor is channel-blocked (the tiles store channel quads' words), a QLinearAdd of
    the input, and a third convolution of uint8 weights with zero points (weight offsets: the sums go out unrequantised
    first, then ember_qstore)."""
    c = 64
    feeds = {"x": _q((1, c, 12, 12), np.uint8)}
    consts = {"s": _f32(0.05), "z": np.array(100, np.uint8), "ws": RNG.uniform(0.001, 0.004, c).astype(np.float32),
              "wz": np.zeros(c, np.int8), "w1": _q((c, c, 1, 1), np.int8), "w2": _q((c, c, 3, 3), np.int8),
              "b": RNG.integers(-2000, 2000, c).astype(np.int32), "w3": _q((32, c, 1, 1), np.uint8),
              "w3s": _f32(0.002), "w3z": np.array(131, np.uint8)}
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "s", "z", "b"], ["h"]),
             helper.make_node("QLinearConv", ["h", "s", "z", "w2", "ws", "wz", "s", "z", "b"], ["g"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("QLinearAdd", ["g", "s", "z", "x", "s", "z", "s", "z"], ["a"], domain="com.microsoft"),
             helper.make_node("QLinearConv", ["a", "s", "z", "w3", "w3s", "w3z", "s", "z"], ["y"])]
    model = _model(nodes, feeds, consts, ("y",), 21)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    amx, vnni = _both(tmp_path, model)
    assert _ops(amx).count("QConv") == 3
    want = vnni.run(feeds)["y"]
    np.testing.assert_array_equal(amx.run(feeds)["y"], want)
    got = cdriver.run(amx.path, tmp_path / "drv", feeds, sanitize=True, cflags=("-march=native",))
    np.testing.assert_array_equal(got["y"], want)


@needs_amx
def test_qlinearmatmul_on_tiles(tmp_path: Path) -> None:
    a, b = _q((70, 128), np.uint8), _q((128, 48), np.int8)
    consts = {"as": _f32(0.02), "az": np.array(120, np.uint8), "b": b, "bs": _f32(0.01), "bz": np.array(0, np.int8),
              "ys": _f32(0.9), "yz": np.array(128, np.uint8)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = _model([node], {"a": a}, consts, ("y",), 21)
    ref = ReferenceEvaluator(model).run(None, {"a": a})[0]
    amx, vnni = _both(tmp_path, model)
    np.testing.assert_array_equal(amx.run({"a": a})["y"], ref)
    np.testing.assert_array_equal(vnni.run({"a": a})["y"], ref)


@needs_amx
def test_threads_on_tiles(tmp_path: Path) -> None:
    """Two threads, each running its blocks of pixels on its own tiles: the single-thread bytes."""
    model, feeds = _qconv_model(np.int8, (1, 64, 20, 20), (32, 64, 3, 3), {"pads": [1, 1, 1, 1]})
    ref = ReferenceEvaluator(model).run(None, feeds)[0]
    onnx.save(model, tmp_path / "m.onnx")
    one = ember.compile(tmp_path / "m.onnx", tmp_path / "t1")
    two = ember.compile(tmp_path / "m.onnx", tmp_path / "t2", threads=2)
    np.testing.assert_array_equal(one.run(feeds)["y"], ref)
    np.testing.assert_array_equal(two.run(feeds)["y"], ref)


@pytest.mark.parametrize(("cpu", "op"), [("sapphirerapids", "QConv"), ("cascadelake", "QConvShifted")])
def test_tiles_keep_im2col(tmp_path: Path, cpu: str, op: str) -> None:
    """A 3x3 of 64 channels to 32, which QConvShifted would take, stays a QConv (im2col and the tiles) on a CPU with
    AMX-INT8; 8 channels (K = 72 bytes, not whole tiles) is shifted on both."""
    for channels, want in ((64, op), (8, "QConvShifted")):
        model, _ = _qconv_model(np.uint8, (1, channels, 9, 40), (32, channels, 3, 3), {"pads": [1, 1, 1, 1]})
        path = tmp_path / f"{cpu}_{channels}.onnx"
        onnx.save(model, path)
        graph, _, _ = build_graph(str(path), CompileOptions(target="x86_64", cpu=cpu))
        assert [n.op for n in graph.nodes] == [want], (cpu, channels)
