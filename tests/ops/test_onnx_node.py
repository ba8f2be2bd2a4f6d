"""ONNX backend node tests: ember's bundle vs the expected outputs shipped with the onnx package.

When every counted test runs, at least 97% must pass: tests/conftest.py measures it from the outcomes
(known failures, run as strict xfails, count as failures) and fails the session below the bar.
"""

from __future__ import annotations

import re

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
    bundle = ember.compile(path, tmp_path / "out", opt_level=1, inputs=node_suite.compile_inputs(model, feeds))
    got = bundle.run(feeds)
    expected = case.data_sets[0][1]
    for out_name, ref in zip(out_names, expected, strict=True):
        if isinstance(ref, list):  # a sequence output: Bundle.run gives a list of its elements
            assert (why := node_suite.same(ref, got[out_name], case.rtol, case.atol)) is None, f"{out_name}: {why}"
            continue
        ref = node_suite.as_array(ref)
        res = got[out_name]
        assert res.shape == ref.shape, f"{out_name}: shape {res.shape} != {ref.shape}"
        assert res.dtype == ref.dtype, f"{out_name}: dtype {res.dtype} != {ref.dtype}"
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(res, ref)
        else:
            np.testing.assert_allclose(res, ref, rtol=case.rtol, atol=case.atol)


def test_scope() -> None:
    # The pass rate itself is measured from this run's outcomes of test_node (tests/conftest.py).
    assert len(COUNTED) >= 700, f"only {len(COUNTED)} node tests in scope"


def test_exclusions_have_reasons() -> None:
    names = node_suite.all_node_tests()
    for name in node_suite.KNOWN_FAILURES:
        assert name in names, f"{name} is not an ONNX node test"
    for pattern in node_suite.EXCLUDED:
        assert any(re.fullmatch(pattern, n) for n in names), f"exclusion {pattern} matches no ONNX node test"
    for name in SCOPE:
        reason = node_suite.exclusion_reason(name)
        assert reason is None or len(reason) > 10
