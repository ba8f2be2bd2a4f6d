"""Bundle.run's fast path: regions kept between calls, inputs of the right dtype copied straight into the bundle
(no conversion copy), and `out=`: outputs written into the caller's arrays, wrong ones a one-line error."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from ember.errors import BundleError
from tests.cli.helpers import save_model
from tests.support.models import onnxruntime_outputs

SHAPE = [64, 512]  # 128 KiB a tensor: an allocation of one shows in tracemalloc's peak
Z = np.empty(SHAPE, np.float32)  # a right array for the output the wrong cases do not test


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two outputs: y = relu(x) * 2, z = -x."""
    root = tmp_path_factory.mktemp("pyrun")
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in ("x", "y", "z")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "r"], ["y"]),
             helper.make_node("Neg", ["x"], ["z"])]
    return save_model(root / "two.onnx", nodes, vi[:1], vi[1:])


@pytest.fixture(scope="module")
def bundle(model: Path) -> ember.Bundle:
    return ember.compile(model, model.parent / "b")


@pytest.fixture
def x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)


def test_out_dict_and_list_receive_the_outputs(bundle: ember.Bundle, model: Path, x: np.ndarray) -> None:
    want = onnxruntime_outputs(model, {"x": x})
    y, z = np.full(SHAPE, np.nan, np.float32), np.full(SHAPE, np.nan, np.float32)
    got = bundle.run({"x": x}, out={"z": z, "y": y})
    assert got["y"] is y and got["z"] is z
    np.testing.assert_allclose(y, want["y"], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(z, want["z"])
    y2, z2 = np.empty_like(y), np.empty_like(z)
    got = bundle.run({"x": -x}, out=[y2, z2])  # NAME.json's order
    assert got["y"] is y2 and got["z"] is z2
    np.testing.assert_array_equal(z2, x)
    np.testing.assert_array_equal(y, want["y"])  # the first call's arrays are the caller's, untouched since


@pytest.mark.parametrize(("out", "match"), [
    ({"y": np.empty(SHAPE, np.float64), "z": Z}, r"out 'y': float64\[64, 512\]; the bundle writes .*float32"),
    ({"y": np.empty([64, 511], np.float32), "z": Z}, r"out 'y': float32\[64, 511\]"),
    ({"y": np.empty([512, 64], np.float32).T, "z": Z}, r"out 'y': .*not C-contiguous"),
    ({"y": np.broadcast_to(np.float32(0), SHAPE), "z": Z}, r"out 'y': .*read-only"),
    ({"y": [0.0], "z": Z}, r"out 'y': list; the bundle writes"),
    ({"y": None}, r"out=: missing output\(s\) \['z'\]; the bundle writes \['y', 'z'\]"),
    ({"y": None, "w": None}, r"out=: unknown output\(s\) \['w'\]"),
    ([None], r"out=: 1 arrays for the bundle's 2 outputs"),
    (np.empty(SHAPE, np.float32), r"out= must be a dict or list of numpy arrays, not ndarray"),
])
def test_wrong_out_is_one_line_error(bundle: ember.Bundle, x: np.ndarray, out, match: str) -> None:
    with pytest.raises(BundleError, match=match) as e:
        bundle.run({"x": x}, out=out)
    assert "\n" not in str(e.value)


def test_right_inputs_are_not_copied_before_the_run(bundle: ember.Bundle, x: np.ndarray) -> None:
    assert bundle.check_inputs({"x": x})["x"] is x  # the checked path keeps a right array as it is
    y, z = np.empty(SHAPE, np.float32), np.empty(SHAPE, np.float32)
    bundle.run({"x": x}, out=[y, z])  # the bundle's regions exist from here on
    nbytes = x.nbytes
    tracemalloc.start()  # numpy reports its data buffers to tracemalloc
    try:
        tracemalloc.reset_peak()
        bundle.run({"x": x}, out=[y, z])
        peak_out = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        got = bundle.run({"x": x})
        peak_new = tracemalloc.get_traced_memory()[1]
        strided = np.asfortranarray(x)  # the right dtype, not C-contiguous: copied once, into the region
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        bundle.run({"x": strided}, out=[y, z])
        peak_strided = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak_out < nbytes // 8, f"out=: {peak_out} bytes allocated during the run"
    assert peak_new < 2 * nbytes + nbytes // 8, f"{peak_new} bytes for two {nbytes}-byte outputs"
    assert peak_strided < nbytes // 8, f"a strided input: {peak_strided} bytes allocated"
    np.testing.assert_array_equal(got["z"], -x)
    np.testing.assert_array_equal(z, -x)
    with pytest.raises(BundleError, match=r"input 'x': dtype float64, the bundle expects float32"):
        bundle.run({"x": x.astype(np.float64)})  # the checked path still reports a wrong one
    np.testing.assert_array_equal(bundle.run({"x": x.astype(np.float64)}, cast=True)["z"], -x)


def test_counted_output_in_out_is_a_trimmed_view(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("NonZero", ["x"], ["where"])], "nz",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("where", TensorProto.INT64, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "nz.onnx")
    b = ember.compile(tmp_path / "nz.onnx", tmp_path / "out")
    x = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 4]], np.float32)
    out = [np.empty(p.shape, p.dtype) for p in b.ports_out]
    got = b.run({"x": x}, out=out)
    np.testing.assert_array_equal(got["where"], np.stack(np.nonzero(x)))
    assert np.shares_memory(got["where"], out[0])
    np.testing.assert_array_equal(b.run({"x": x})["where"], got["where"])
