"""Classic ML models (ai.onnx.ml) from scikit-learn (skl2onnx), LightGBM and XGBoost (onnxmltools) against
onnxruntime: labels exactly, probabilities and regression values at 1e-4 relative.

Each model is trained here on a small synthetic dataset, converted without ZipMap (ember compiles tensors;
a ZipMap gets a one-line error naming the converter option), compiled and run on 64 rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

import ember
from ember.errors import UnsupportedOperatorError
from tests.support.models import assert_outputs_match, onnxruntime_outputs

pytest.importorskip("sklearn")
skl2onnx = pytest.importorskip("skl2onnx")
from sklearn import datasets, ensemble, linear_model, pipeline, preprocessing, svm  # noqa: E402
from sklearn.base import is_classifier  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402

ROWS = 64


def _data(classes: int | None, features: int = 8) -> tuple[np.ndarray, np.ndarray]:
    if classes is None:
        x, y = datasets.make_regression(400, features, n_informative=5, noise=0.5, random_state=0)
    else:
        x, y = datasets.make_classification(400, features, n_informative=5, n_classes=classes, random_state=0)
    return x.astype(np.float32), y


def _check(model: onnx.ModelProto, x: np.ndarray, tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    name = model.graph.input[0].name
    feeds = {name: x[:ROWS]}
    want = onnxruntime_outputs(path, feeds)
    shape = "x".join(str(d) for d in feeds[name].shape)
    got = ember.compile(path, tmp_path / "out", inputs={name: f"float32:{shape}"}).run(feeds)
    assert_outputs_match(got, want)


def _convert(estimator: object, x: np.ndarray) -> onnx.ModelProto:
    options = {id(estimator): {"zipmap": False}} if is_classifier(estimator) else None
    return skl2onnx.to_onnx(estimator, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})


SKLEARN = {
    "random_forest_binary": (lambda: ensemble.RandomForestClassifier(8, max_depth=5, random_state=0), 2),
    "random_forest_multiclass": (lambda: ensemble.RandomForestClassifier(8, max_depth=5, random_state=0), 3),
    "gradient_boosting_binary": (lambda: ensemble.GradientBoostingClassifier(n_estimators=10, random_state=0), 2),
    "gradient_boosting_multiclass": (lambda: ensemble.GradientBoostingClassifier(n_estimators=10, random_state=0), 3),
    "random_forest_regressor": (lambda: ensemble.RandomForestRegressor(8, max_depth=6, random_state=0), None),
    "gradient_boosting_regressor": (lambda: ensemble.GradientBoostingRegressor(n_estimators=10, random_state=0), None),
    "logistic_pipeline_binary": (lambda: pipeline.make_pipeline(preprocessing.StandardScaler(),
                                                                linear_model.LogisticRegression()), 2),
    "logistic_pipeline_multiclass": (lambda: pipeline.make_pipeline(preprocessing.StandardScaler(),
                                                                    linear_model.LogisticRegression()), 3),
    "linear_regression": (lambda: linear_model.LinearRegression(), None),
    "svc_rbf_binary": (lambda: svm.SVC(kernel="rbf", gamma=0.1), 2),
    "svc_rbf_multiclass": (lambda: pipeline.make_pipeline(preprocessing.StandardScaler(), svm.SVC(kernel="rbf")), 3),
    "svc_poly_multiclass": (lambda: svm.SVC(kernel="poly", degree=2, gamma=0.05), 3),
    "svc_linear_binary": (lambda: pipeline.make_pipeline(preprocessing.StandardScaler(), svm.SVC(kernel="linear")),
                          2),
    "svr_rbf": (lambda: svm.SVR(kernel="rbf", gamma=0.05, C=10.0), None),
    "normalizer_then_ridge": (lambda: pipeline.make_pipeline(preprocessing.Normalizer("l2"), linear_model.Ridge()),
                              None),
    "minmax_then_forest": (lambda: pipeline.make_pipeline(preprocessing.MinMaxScaler(),
                                                          ensemble.ExtraTreesClassifier(6, random_state=0)), 3),
}


@pytest.mark.parametrize("name", sorted(SKLEARN))
def test_sklearn_model(name: str, tmp_path: Path) -> None:
    make, classes = SKLEARN[name]
    x, y = _data(classes)
    estimator = make().fit(x, y)
    _check(_convert(estimator, x), x, tmp_path)


def test_imputer_and_binarizer(tmp_path: Path) -> None:
    x, y = _data(2)
    x[::7, 2] = np.nan
    estimator = pipeline.make_pipeline(SimpleImputer(strategy="mean"), preprocessing.Binarizer(threshold=0.2),
                                       linear_model.LogisticRegression()).fit(x, y)
    _check(_convert(estimator, x), x, tmp_path)


def test_zipmap_is_refused_with_the_converter_option(tmp_path: Path) -> None:
    x, y = _data(2)
    model = skl2onnx.to_onnx(linear_model.LogisticRegression().fit(x, y), x[:1])  # ZipMap kept
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorError, match="ZipMap.*zipmap"):
        ember.compile(tmp_path / "m.onnx", tmp_path / "out", inputs={"X": "float32:4x8"})


@pytest.mark.parametrize("classes", [2, 3, None])
@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_gradient_boosting_library(library: str, classes: int | None, tmp_path: Path) -> None:
    """LightGBM and XGBoost models converted by onnxmltools."""
    lib = pytest.importorskip(library)
    onnxmltools = pytest.importorskip("onnxmltools")
    from onnxmltools.convert.common.data_types import FloatTensorType

    x, y = _data(classes)
    if library == "lightgbm":
        kind = lib.LGBMRegressor if classes is None else lib.LGBMClassifier
        estimator = kind(n_estimators=12, num_leaves=8, verbose=-1).fit(x, y)
        convert, options = onnxmltools.convert_lightgbm, {"zipmap": False}
    else:
        kind = lib.XGBRegressor if classes is None else lib.XGBClassifier
        estimator = kind(n_estimators=12, max_depth=4).fit(x, y)
        convert, options = onnxmltools.convert_xgboost, {}
    model = convert(estimator, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=15,
                    **options)
    _check(model, x, tmp_path)


def test_forest_bundle_is_sanitizer_clean_and_builds_for_cortex_m(tmp_path: Path) -> None:
    """The tree walk's C under ASan/UBSan with -Werror (rows with NaN features too), and for a Cortex-M4."""
    from tests.support import cdriver

    x, y = _data(3)
    x[::5, 1] = np.nan
    model = _convert(ensemble.RandomForestClassifier(6, max_depth=6, random_state=0).fit(np.nan_to_num(x), y), x)
    path = tmp_path / "forest.onnx"
    onnx.save(model, path)
    feeds = {"X": x[:16]}
    want = onnxruntime_outputs(path, feeds)
    bundle = ember.compile(path, tmp_path / "host", inputs={"X": "float32:16x8"})
    got = cdriver.run(bundle.path, tmp_path / "drv", feeds, sanitize=True)
    np.testing.assert_array_equal(got["label"], want["label"])
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-5, atol=1e-6)
    mcu = ember.compile(path, tmp_path / "m4", inputs={"X": "float32:1x8"}, target="cortex-m4")
    assert (mcu.path / f"{mcu.name}.o").stat().st_size > 0


def test_features_equal_to_thresholds_follow_the_branch_mode(tmp_path: Path) -> None:
    """Rows whose features sit exactly on split thresholds: BRANCH_LEQ sends them the true way."""
    x, y = _data(3)
    model = _convert(ensemble.RandomForestClassifier(4, max_depth=5, random_state=0).fit(x, y), x)
    trees = next(n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in trees.attribute}
    splits = [v for v, m in zip(attrs["nodes_values"], attrs["nodes_modes"], strict=True) if m == b"BRANCH_LEQ"]
    rows = x[:ROWS].copy()
    for i, value in enumerate(splits[:ROWS]):
        rows[i, :] = np.float32(value)  # every feature, the split's among them, on the threshold
    _check(model, rows, tmp_path)
