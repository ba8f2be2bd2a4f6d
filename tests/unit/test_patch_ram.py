"""--ram-limit below the plan's RAM: the first stage runs in P x P patches (passes/patch_ram.py), the RAM in
NAME.json is within the limit and the outputs are those of the unpatched bundle; a limit below what patches
reach fails with one line stating the patched and the unpatched RAM."""

from __future__ import annotations

import platform
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.errors import ResourceLimitError
from tests.support import cdriver

SHAPE = (1, 3, 48, 48)


def _cnn(path: Path) -> Path:
    """Conv 3x3 -> depthwise 3x3 -> MaxPool -> 1x1 -> strided 3x3 -> GAP -> Gemm, each conv with Relu."""
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    inits = [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 8, 1, 3, 3), w("b2", 8), w("w3", 16, 8, 1, 1), w("b3", 16),
             w("w4", 16, 16, 3, 3), w("b4", 16), w("wf", 10, 16), w("bf", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8), node("Relu", ["c2"], ["r2"]),
             node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p2", "w3", "b3"], ["c3"]), node("Relu", ["c3"], ["r3"]),
             node("Conv", ["r3", "w4", "b4"], ["c4"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c4"], ["r4"]), node("GlobalAveragePool", ["r4"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The model and its int8 profile."""
    from ember.runtime.profile import profile_model

    folder = tmp_path_factory.mktemp("patch")
    path = _cnn(folder / "cnn.onnx")
    np.save(folder / "calib.npy", np.random.default_rng(1).standard_normal((8, *SHAPE[1:])).astype(np.float32))
    profile_model(str(path), [str(folder / "calib.npy")], folder / "profile.yaml")
    return path, folder / "profile.yaml"


def _ram(bundle: Path) -> int:
    mem = cdriver.manifest(bundle)["memory"]
    return mem["mutable"] + mem["activations"]


def _compile_run(path: Path, out: Path, x: np.ndarray, sanitize: bool, **opts: object) -> tuple[int, np.ndarray]:
    bundle = ember.compile(path, out, **opts)
    return _ram(bundle.path), cdriver.run(bundle.path, out / "drv", {"x": x}, sanitize=sanitize)["y"]


@pytest.mark.parametrize("quantized", [False, True], ids=["float", "int8"])
def test_patched_bundle_fits_and_matches(cnn: tuple[Path, Path], tmp_path: Path, quantized: bool) -> None:
    path, profile = cnn
    opts: dict[str, object] = {"quantize": "int8", "profile": str(profile)} if quantized else {}
    x = np.random.default_rng(2).standard_normal(SHAPE).astype(np.float32)
    whole, want = _compile_run(path, tmp_path / "whole", x, False, **opts)
    # The 48x48x8 maps are most of the unpatched plan: the limit needs patches of the stage before the 24x24 maps.
    limit = whole * 6 // 10
    ram, got = _compile_run(path, tmp_path / "patched", x, True, ram_limit=limit, **opts)
    assert ram <= limit < whole
    assert "_patched" in (tmp_path / "patched" / "cnn.c").read_text()  # the stage's patches joined
    np.testing.assert_array_equal(got, want)


def test_limit_below_the_patched_floor(cnn: tuple[Path, Path], tmp_path: Path) -> None:
    path, _ = cnn
    with pytest.raises(ResourceLimitError) as e:
        ember.compile(path, tmp_path / "b", ram_limit=1000)
    msg = str(e.value)
    m = re.fullmatch(r"--ram-limit 1,000: the smallest RAM ember reaches for this model is ([\d,]+) bytes "
                     r"\(mutable \+ activations\) with patch-based execution "
                     r"\((\d)x(\d) patches of the first \d+ layers\), ([\d,]+) bytes without; ([\d,]+) over the limit",
                     msg)
    assert m is not None, msg
    patched, whole = (int(m.group(k).replace(",", "")) for k in (1, 4))
    assert patched < whole // 2 and int(m.group(5).replace(",", "")) == patched - 1000


def _winograd_cnn(path: Path) -> Path:
    """Two 3x3 stride-1 float convs (the second one Winograd on the host) before a strided one."""
    rng = np.random.default_rng(3)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    node = helper.make_node
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), node("Relu", ["c2"], ["r2"]),
             node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("GlobalAveragePool", ["c3"], ["g"]), node("Flatten", ["g"], ["y"])]
    inits = [w("w1", 16, 3, 3, 3), w("b1", 16), w("w2", 16, 16, 3, 3), w("b2", 16), w("w3", 16, 16, 3, 3), w("b3", 16)]
    graph = helper.make_graph(nodes, "wino", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 50, 50))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _fits_bit_identical(tmp_path: Path, cpu_params: list[str]) -> int:
    """How many of two --ram-limit compiles of _winograd_cnn fit; each that does computes the whole's bytes."""
    path = _winograd_cnn(tmp_path / "w.onnx")
    whole = ember.compile(path, tmp_path / "whole", cpu_params=cpu_params)
    ram = whole.manifest["memory"]["mutable"] + whole.manifest["memory"]["activations"]
    x = {"x": np.random.default_rng(4).standard_normal((1, 3, 50, 50)).astype(np.float32)}
    want = whole.run(x)["y"]
    fitted = 0
    for tenths in (4, 3):
        try:
            patched = ember.compile(path, tmp_path / f"p{tenths}", ram_limit=ram * tenths // 10, cpu_params=cpu_params)
        except ResourceLimitError:
            continue
        fitted += 1
        assert patched.run(x)["y"].tobytes() == want.tobytes()
    return fitted


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="--cpu-param: x86-64 CPU families")
def test_winograd_inside_the_stage_is_refused(tmp_path: Path) -> None:
    """A Winograd map inside the stage would start its tiles where the halo does (other roundings): at limits
    whose fit would need one, ember fits otherwise or refuses; whatever compiles is bit-identical. With F(4x4)
    from 16 tiles and F(2x2) from 49 pixels (as the AVX2 family sets them, whatever the host's family), the stage's
    last patches keep the whole's F(4x4), so some limit fits."""
    assert _fits_bit_identical(tmp_path, ["winograd4_min_tiles=16", "winograd_min_pixels=49", "nhwc_dense=false"])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="--cpu-param: x86-64 CPU families")
def test_winograd_variant_of_a_patch_is_the_wholes(tmp_path: Path) -> None:
    """With F(4x4) only from 49 tiles, the whole's 50x50 map takes F(4x4) but a row stripe of it has too few
    tiles and would take F(2x2), which rounds otherwise: such a fit is refused (it was taken, one ulp off)."""
    _fits_bit_identical(tmp_path, ["winograd_min_pixels=64", "winograd4_min_tiles=49", "nhwc_dense=false"])


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="--cpu-param: x86-64 CPU families")
def test_a_stage_the_whole_runs_channels_last_is_not_patched(tmp_path: Path) -> None:
    """Where the whole runs the stage's convs channels-last (dense convs in a region: the stem, Winograd on vectors of
    channels, the strided conv as an im2col product), NCHW patches would sum in other orders: no fit is taken."""
    assert _fits_bit_identical(tmp_path, ["nhwc_dense=true", "nhwc_min_convs=3"]) == 0
