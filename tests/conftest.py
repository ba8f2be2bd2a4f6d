"""Fixtures shared by the test folders."""

from __future__ import annotations

import pytest

from tests.support.cache import ArtifactCache, shared_root


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> ArtifactCache:
    """Exported models and compiled bundles, built once per run and shared by xdist workers."""
    return ArtifactCache(shared_root(tmp_path_factory.getbasetemp()))


# ONNX backend node tests (tests/ops/test_onnx_node.py): the pass rate is measured from the outcomes
# of this run. When the whole suite ran it must be at least 97% (known failures count as failures).
_NODE_TESTS = "tests/ops/test_onnx_node.py::test_node["
_NODE_PASS_RATE = 0.97
_node_outcomes: dict[str, bool] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not report.nodeid.startswith(_NODE_TESTS):
        return
    if report.when == "call" or report.outcome != "passed":
        passed = report.passed and not hasattr(report, "wasxfail")
        _node_outcomes[report.nodeid] = _node_outcomes.get(report.nodeid, True) and passed


def _node_rate(config: pytest.Config) -> tuple[int, int, int] | None:
    """(passed, ran, counted) when this process saw node test results (the xdist controller or a plain run)."""
    if not _node_outcomes or hasattr(config, "workerinput"):
        return None
    from tests.ops.test_onnx_node import COUNTED

    return sum(_node_outcomes.values()), len(_node_outcomes), len(COUNTED)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rate = _node_rate(session.config)
    if rate is not None and rate[1] == rate[2] and rate[0] < _NODE_PASS_RATE * rate[2]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    rate = _node_rate(config)
    if rate is None:
        return
    passed, ran, counted = rate
    line = f"ONNX node tests: {passed} of {ran} run passed ({100.0 * passed / ran:.1f}%), {counted} in scope"
    if ran == counted and passed < _NODE_PASS_RATE * counted:
        line += f": below the {100 * _NODE_PASS_RATE:.0f}% bar"
    terminalreporter.write_line(line)
