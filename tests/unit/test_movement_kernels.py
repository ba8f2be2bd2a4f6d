"""Shape, movement and resize lowerings on cases the node tests miss: other dtypes, run-time indices,
negative steps and pads, views that must copy, chained resizes. Reference: ONNX's own evaluator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from ember.reference import onnxruntime_session

RNG = np.random.default_rng(0)


def _check(tmp_path: Path, nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray],
           consts: dict[str, np.ndarray] | None = None, outputs: tuple[str, ...] = ("y",), opset: int = 18,
           ort: bool = False) -> None:
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    outs = [onnx.ValueInfoProto(name=o) for o in outputs]
    inits = [numpy_helper.from_array(a, n) for n, a in (consts or {}).items()]
    model = helper.make_model(helper.make_graph(nodes, "g", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    # A fresh folder per model: a process cannot dlopen a rebuilt library at the same path.
    tmp_path = tmp_path / f"m{len(list(tmp_path.iterdir()))}"
    tmp_path.mkdir()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    if ort:  # the ONNX reference rejects some valid inputs (negative pads)

        ref = onnxruntime_session(str(path)).run(None, feeds)
    else:
        ref = ReferenceEvaluator(model).run(None, feeds)
    got = ember.compile(path, tmp_path / "out", opt_level=1).run(feeds)
    for name, r in zip(outputs, ref, strict=True):
        r = np.asarray(r)
        assert got[name].shape == r.shape and got[name].dtype == r.dtype, name
        np.testing.assert_allclose(got[name].astype(np.float64), r.astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.bool_, np.int8])
def test_transpose_any_dtype(tmp_path: Path, dtype: type) -> None:
    x = (RNG.standard_normal((2, 3, 4, 5)) * 10).astype(dtype)
    _check(tmp_path, [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 3, 1])], {"x": x})


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_gather_runtime_indices(tmp_path: Path, idx_dtype: type) -> None:
    x = RNG.standard_normal((3, 5, 4)).astype(np.float32)
    i = np.array([[0, -1], [4, -5], [2, 2]], dtype=idx_dtype)
    _check(tmp_path, [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], {"x": x, "i": i})


def test_slice_negative_steps_and_clamping(tmp_path: Path) -> None:
    x = RNG.standard_normal((6, 7, 5)).astype(np.float32)
    consts = {"s": np.array([100, -2, 1], np.int64), "e": np.array([-100, 0, 1000], np.int64),
              "a": np.array([0, 1, -1], np.int64), "t": np.array([-2, -3, 2], np.int64)}
    _check(tmp_path, [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], {"x": x}, consts)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes_with_negative_pads(tmp_path: Path, mode: str) -> None:
    x = RNG.integers(-100, 100, (4, 5, 3)).astype(np.int32)
    consts = {"p": np.array([2, -1, 1, 1, 2, -1], np.int64), "v": np.array(7, np.int32)}
    _check(tmp_path, [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)], {"x": x}, consts,
           opset=19, ort=True)


def test_expand_tile_concat_split(tmp_path: Path) -> None:
    x = RNG.standard_normal((3, 1, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Expand", ["x", "shape"], ["e"]),
        helper.make_node("Tile", ["x", "reps"], ["t"]),
        helper.make_node("Concat", ["e", "t"], ["c"], axis=-2),
        helper.make_node("Split", ["c"], ["y", "z", "w"], axis=1, num_outputs=3),
    ]
    consts = {"shape": np.array([2, 3, 5, 4], np.int64), "reps": np.array([2, 3, 2], np.int64)}
    x2 = x.reshape(3, 1, 4)
    _check(tmp_path, nodes[:1] + [helper.make_node("Tile", ["x", "reps"], ["y"])], {"x": x2}, consts,
           outputs=("e", "y"))
    x3 = RNG.standard_normal((2, 3, 1, 4)).astype(np.float32)
    nodes[1] = helper.make_node("Tile", ["x", "reps4"], ["t"])
    consts["reps4"] = np.array([1, 1, 3, 1], np.int64)
    _check(tmp_path, nodes, {"x": x3}, consts, outputs=("y", "z", "w"))


def test_views_alias_or_copy(tmp_path: Path) -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "ax"], ["u"]),
        helper.make_node("Neg", ["u"], ["n"]),
        helper.make_node("Flatten", ["n"], ["y"], axis=2),
        helper.make_node("Squeeze", ["u", "ax"], ["z"]),
    ]
    consts = {"s": np.array([4, 0, -1], np.int64), "ax": np.array([1], np.int64)}
    _check(tmp_path, nodes, {"x": x}, consts, outputs=("y", "z"))


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_int64(tmp_path: Path, upper: int) -> None:
    x = RNG.integers(1, 9, (2, 4, 6)).astype(np.int64)
    _check(tmp_path, [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], {"x": x},
           {"k": np.array(-1, np.int64)})


def test_dropout_mask_output(tmp_path: Path) -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    _check(tmp_path, [helper.make_node("Dropout", ["x"], ["y", "m"])], {"x": x}, outputs=("y", "m"))


def test_resize_nearest_int8_and_linear_chain(tmp_path: Path) -> None:
    x = RNG.integers(-128, 127, (1, 2, 3, 5)).astype(np.int8)
    _check(tmp_path, [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest",
                                       nearest_mode="ceil", coordinate_transformation_mode="asymmetric")],
           {"x": x}, {"sc": np.array([1, 1, 2.5, 0.6], np.float32)})
    xf = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    _check(tmp_path, [helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear",
                                       coordinate_transformation_mode="tf_crop_and_resize",
                                       extrapolation_value=3.0)],
           {"x": xf}, {"roi": np.array([0, 0, -0.2, 0.1, 1, 1, 1.1, 0.8], np.float32),
                       "sz": np.array([2, 4, 7, 3], np.int64)})
