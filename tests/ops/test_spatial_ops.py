"""GridSample, AffineGrid, Col2Im, RoiAlign, MaxUnpool, DeformConv, Det, LpNormalization,
MeanVarianceNormalization and CenterCropPad on attribute combinations the ONNX node tests leave out,
against onnxruntime, each also run in the C driver under AddressSanitizer + UBSan.

The hostile cases feed run-time coordinates and indices that point anywhere (NaN and huge grid values,
boxes far outside the image, batch and unpool indices out of range): the kernels must not touch memory
outside their tensors, and must give the values the spec leaves them (zeros where nothing is sampled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ember
from tests.support import cdriver
from tests.support.models import assert_close, onnxruntime_outputs

RNG = np.random.default_rng(3)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@dataclass
class Case:
    op: str
    inputs: dict[str, np.ndarray]  # run-time inputs, in node order unless `order` says otherwise
    consts: dict[str, np.ndarray] = field(default_factory=dict)  # compile-time inputs (initializers)
    attrs: dict = field(default_factory=dict)
    order: list[str] | None = None  # the node's input names ('' for an absent optional input)
    opset: int = 22
    rel: float = 1e-4
    # onnxruntime, or the ONNX reference implementation where the two disagree and the node tests side with
    # the reference (cubic GridSample with border padding: onnxruntime clamps coordinates the reference keeps).
    reference: str = "onnxruntime"


def _grid(n: int, *out: int, nd: int, spread: float = 1.3) -> np.ndarray:
    return (RNG.uniform(-spread, spread, (n, *out, nd))).astype(np.float32)


def _boxes() -> np.ndarray:
    return np.array([[0.5, 1.0, 6.5, 7.0], [2.0, 2.0, 3.0, 3.5], [-3.0, 4.0, 12.0, 9.5], [1.0, 1.0, 1.2, 1.1]],
                    np.float32)


CASES: dict[str, Case] = {
    "gridsample_cubic_reflection_align": Case(
        "GridSample", {"X": _randn(2, 3, 5, 7), "grid": _grid(2, 4, 6, nd=2, spread=2.5)},
        attrs={"mode": "cubic", "padding_mode": "reflection", "align_corners": 1}),
    "gridsample_cubic_border": Case(
        "GridSample", {"X": _randn(1, 2, 6, 4), "grid": _grid(1, 5, 5, nd=2, spread=1.8)},
        attrs={"mode": "cubic", "padding_mode": "border"}, reference="onnx"),
    "gridsample_linear_reflection": Case(
        "GridSample", {"X": _randn(1, 2, 4, 5), "grid": _grid(1, 3, 7, nd=2, spread=3.0)},
        attrs={"mode": "linear", "padding_mode": "reflection"}),
    "gridsample_nearest_border_3d": Case(
        "GridSample", {"X": _randn(1, 2, 3, 4, 5), "grid": _grid(1, 2, 3, 4, nd=3, spread=1.5)},
        attrs={"mode": "nearest", "padding_mode": "border"}),
    "gridsample_linear_zeros_3d_align": Case(
        "GridSample", {"X": _randn(2, 1, 4, 3, 5), "grid": _grid(2, 3, 2, 4, nd=3)},
        attrs={"mode": "linear", "align_corners": 1}),
    "gridsample_opset16_bilinear": Case(
        "GridSample", {"X": _randn(1, 2, 5, 5), "grid": _grid(1, 4, 4, nd=2)},
        attrs={"mode": "bilinear"}, opset=16),
    "affine_grid_2d": Case("AffineGrid", {"theta": _randn(3, 2, 3)},
                           consts={"size": np.array([3, 1, 4, 7], np.int64)}, opset=20),
    "affine_grid_3d_align": Case("AffineGrid", {"theta": _randn(2, 3, 4)},
                                 consts={"size": np.array([2, 5, 3, 4, 2], np.int64)},
                                 attrs={"align_corners": 1}, opset=20),
    "col2im_all_attrs": Case(
        "Col2Im", {"input": _randn(2, 3 * 6, 9)},
        consts={"image_shape": np.array([7, 9], np.int64), "block_shape": np.array([2, 3], np.int64)},
        attrs={"strides": [2, 3], "dilations": [2, 1], "pads": [1, 0, 0, 2]}, opset=18),
    "roialign_adaptive_avg": Case(
        "RoiAlign", {"X": _randn(2, 3, 10, 12), "rois": _boxes()},
        consts={"batch_indices": np.array([0, 1, 1, 0], np.int64)},
        attrs={"output_height": 3, "output_width": 4, "spatial_scale": 0.8}, opset=16),
    "roialign_max_output_half_pixel": Case(
        "RoiAlign", {"X": _randn(1, 2, 9, 9), "rois": _boxes(), "batch_indices": np.zeros(4, np.int64)},
        attrs={"mode": "max", "output_height": 2, "output_width": 3, "sampling_ratio": 3,
               "coordinate_transformation_mode": "output_half_pixel"}, opset=16),
    "roialign_opset10": Case(
        "RoiAlign", {"X": _randn(1, 2, 9, 9), "rois": _boxes(), "batch_indices": np.zeros(4, np.int64)},
        attrs={"output_height": 2, "output_width": 2, "sampling_ratio": 2}, opset=10),
    "maxunpool_pads_3d": Case(
        "MaxUnpool", {"X": _randn(1, 2, 2, 2, 3),
                      "I": RNG.choice(2 * 3 * 3 * 5, 24, replace=False).astype(np.int64).reshape(1, 2, 2, 2, 3)},
        attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2], "pads": [0, 1, 0, 1, 0, 0]}),
    "deform_conv_groups_strides": Case(
        "DeformConv", {"X": _randn(2, 4, 7, 6), "offset": _randn(2, 2 * 6 * 2, 4, 3) * 1.5,
                       "mask": RNG.uniform(0, 1, (2, 2 * 6, 4, 3)).astype(np.float32)},
        consts={"W": _randn(6, 2, 2, 3), "B": _randn(6)},
        attrs={"group": 2, "offset_group": 2, "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 0, 1]},
        order=["X", "W", "offset", "B", "mask"], opset=19),
    "det_batched": Case("Det", {"X": _randn(2, 3, 4, 4)}),
    "det_singular": Case("Det", {"X": np.array([[[1, 2, 3], [2, 4, 6], [0, 1, 1]]], np.float32)}),
    "lpnorm_p1_axis0": Case("LpNormalization", {"x": _randn(4, 3, 5)}, attrs={"p": 1, "axis": 0}),
    "lpnorm_p2_axis1_zero_row": Case("LpNormalization", {"x": np.array([[0, 0, 0], [3, 4, 0]], np.float32)},
                                     attrs={"axis": 1}),
    "mvn_axes_1_3": Case("MeanVarianceNormalization", {"X": _randn(2, 3, 4, 5)}, attrs={"axes": [1, 3]}),
    "mvn_last_axis": Case("MeanVarianceNormalization", {"X": _randn(3, 7)}, attrs={"axes": [-1]}),
    "center_crop_pad_mixed": Case("CenterCropPad", {"x": _randn(5, 8, 3)},
                                  consts={"shape": np.array([8, 3], np.int64)}, attrs={"axes": [1, 0]}),
}


def _model(path: Path, case: Case) -> None:
    order = case.order or [*case.inputs, *case.consts]
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
              for n, a in case.inputs.items()]
    inits = [numpy_helper.from_array(a, n) for n, a in case.consts.items()]
    node = helper.make_node(case.op, order, ["y"], **case.attrs)
    graph = helper.make_graph([node], "op", inputs, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8
    onnx.save(model, path)


def _compile(tmp_path: Path, case: Case) -> ember.Bundle:
    path = tmp_path / "op.onnx"
    _model(path, case)
    return ember.compile(path, tmp_path / "out")


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    bundle = _compile(tmp_path, case)
    if case.reference == "onnx":
        ref = ReferenceEvaluator(str(tmp_path / "op.onnx")).run(None, case.inputs)[0]
    else:
        ref = onnxruntime_outputs(tmp_path / "op.onnx", case.inputs)["y"]
    assert_close(bundle.run(case.inputs)["y"], ref, name, case.rel)
    assert_close(cdriver.run(bundle.path, tmp_path / "drv", case.inputs, sanitize=True)["y"], ref, f"{name} (ASan)")


def _wild_grid(shape: tuple[int, ...]) -> np.ndarray:
    values = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -7.5, 0.25, 1.0, -1.0], np.float32)
    return RNG.choice(values, shape).astype(np.float32)


# name: (case, check of the output given the inputs)
HOSTILE: dict[str, tuple[Case, Callable[[np.ndarray, dict[str, np.ndarray]], None]]] = {}


def _finite_or_nan(y: np.ndarray, feeds: dict[str, np.ndarray]) -> None:
    del feeds
    assert y.shape and not np.isinf(y).any()


def _zeros_for_bad_rois(y: np.ndarray, feeds: dict[str, np.ndarray]) -> None:
    bad = (feeds["batch_indices"] < 0) | (feeds["batch_indices"] >= feeds["X"].shape[0])
    assert bad.any() and (y[bad] == 0).all()
    assert np.isfinite(y[~bad & np.isfinite(feeds["rois"]).all(axis=1)]).all()


def _unpool_skips_bad(y: np.ndarray, feeds: dict[str, np.ndarray]) -> None:
    idx, x = feeds["I"].reshape(-1), feeds["X"].reshape(-1)
    want = np.zeros(y.size, np.float32)
    ok = (idx >= 0) & (idx < y.size)
    want[idx[ok]] = x[ok]
    np.testing.assert_array_equal(y.reshape(-1), want)


for _mode in ("nearest", "linear", "cubic"):
    for _pad in ("zeros", "border", "reflection"):
        HOSTILE[f"gridsample_{_mode}_{_pad}"] = (
            Case("GridSample", {"X": _randn(1, 2, 4, 5), "grid": _wild_grid((1, 6, 6, 2))},
                 attrs={"mode": _mode, "padding_mode": _pad}), _finite_or_nan)
HOSTILE["gridsample_3d_wild"] = (
    Case("GridSample", {"X": _randn(1, 1, 3, 4, 2), "grid": _wild_grid((1, 3, 3, 3, 3))},
         attrs={"mode": "linear", "padding_mode": "zeros", "align_corners": 1}), _finite_or_nan)
HOSTILE["roialign_wild_boxes_and_batches"] = (
    Case("RoiAlign", {"X": _randn(2, 2, 6, 6), "rois": np.array(
        [[np.nan, 0, 3, 3], [-1e30, -1e30, 1e30, 1e30], [0, 0, np.inf, 2], [1, 1, 4, 4], [1, 1, 4, 4]], np.float32),
        "batch_indices": np.array([0, 1, 0, -3, 7], np.int64)},
        attrs={"output_height": 2, "output_width": 2}), _zeros_for_bad_rois)
HOSTILE["maxunpool_wild_indices"] = (
    Case("MaxUnpool", {"X": _randn(1, 1, 2, 3), "I": np.array([[[[-1, 5, 10**12], [3, 35, 36]]]], np.int64)},
         attrs={"kernel_shape": [2, 2], "strides": [2, 2]}), _unpool_skips_bad)
HOSTILE["deform_conv_wild_offsets"] = (
    Case("DeformConv", {"X": _randn(1, 1, 4, 4), "offset": _wild_grid((1, 8, 3, 3))},
         consts={"W": _randn(1, 1, 2, 2)}, order=["X", "W", "offset"], opset=19), _finite_or_nan)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_run_time_coordinates_stay_in_bounds(name: str, tmp_path: Path) -> None:
    case, check = HOSTILE[name]
    bundle = _compile(tmp_path, case)
    # float-cast-overflow too (not in GCC's -fsanitize=undefined): a NaN or huge coordinate must not reach an
    # integer conversion.
    y = cdriver.run(bundle.path, tmp_path / "drv", case.inputs, sanitize=True,
                    cflags=("-fsanitize=float-cast-overflow",))["y"]
    check(y, case.inputs)
