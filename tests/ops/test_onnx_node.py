"""ONNX backend node tests: ember's bundle vs the expected outputs shipped with the onnx package."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import ember
from tests.ops import node_suite

SCOPE = node_suite.in_scope()
COUNTED = [n for n in SCOPE if node_suite.exclusion_reason(n) is None]


def _param(name: str):
    reason = node_suite.KNOWN_FAILURES.get(name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_param(n) for n in COUNTED])
def test_node(name: str, tmp_path) -> None:
    case = node_suite.all_node_tests()[name]
    model, feeds, out_names = node_suite.bake_shape_inputs(name)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    bundle = ember.compile(path, tmp_path / "out", opt_level=1)
    got = bundle.run(feeds)
    expected = case.data_sets[0][1]
    for out_name, ref in zip(out_names, expected, strict=True):
        ref = node_suite.as_array(ref)
        res = got[out_name]
        assert res.shape == ref.shape, f"{out_name}: shape {res.shape} != {ref.shape}"
        assert res.dtype == ref.dtype, f"{out_name}: dtype {res.dtype} != {ref.dtype}"
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(res, ref)
        else:
            np.testing.assert_allclose(res, ref, rtol=case.rtol, atol=case.atol)


def test_pass_rate_at_least_97_percent() -> None:
    failing = [n for n in COUNTED if n in node_suite.KNOWN_FAILURES]
    assert len(COUNTED) >= 700, f"only {len(COUNTED)} node tests in scope"
    assert len(failing) <= 0.03 * len(COUNTED), f"{len(failing)} of {len(COUNTED)} node tests are known failures"


def test_exclusions_have_reasons() -> None:
    for name in node_suite.EXCLUDED.keys() | node_suite.KNOWN_FAILURES.keys():
        assert name in node_suite.all_node_tests(), f"{name} is not an ONNX node test"
    for name in SCOPE:
        reason = node_suite.exclusion_reason(name)
        assert reason is None or len(reason) > 10
