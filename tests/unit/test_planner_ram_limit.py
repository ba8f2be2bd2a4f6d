"""--ram-limit / ember.compile(ram_limit=...): a plan that fits compiles; one that does not fails with one line
stating the smallest RAM ember reaches (mutable + activations of the best order's plan)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ember
from ember.config import CompileOptions
from ember.driver import lower
from ember.errors import OptionError, ResourceLimitError
from tests.cli.helpers import ember as run_ember
from tests.cli.helpers import one_error_line
from tests.unit.test_planner_order import _towers_onnx


def _ram(path: Path) -> int:
    plan = lower(str(path), CompileOptions()).plan
    return plan.mutable_size + plan.activations_size


def test_ram_limit_api(tmp_path: Path) -> None:
    path = _towers_onnx(tmp_path)
    need = _ram(path)
    # The reordered towers: one expansion at a time (breadth first would need another 4 x 32 x 48 floats).
    assert need < 2 * 4 * 32 * 64 * 4
    ember.compile(path, tmp_path / "fits", ram_limit=need)
    with pytest.raises(ResourceLimitError) as e:
        ember.compile(path, tmp_path / "over", ram_limit=need - 1)
    msg = str(e.value)
    assert "\n" not in msg and "--ram-limit" in msg and f"{need:,} bytes" in msg and "1 over the limit" in msg
    with pytest.raises(OptionError):
        CompileOptions(ram_limit=0)


def test_ram_limit_cli(tmp_path: Path) -> None:
    path = _towers_onnx(tmp_path)
    line = one_error_line(run_ember("compile", str(path), "-o", str(tmp_path / "b"), "--ram-limit", "1K"))
    assert line.startswith("ember: error: --ram-limit 1,024: the smallest RAM ember reaches for this model is ")
    need = int(re.search(r"reaches for this model is ([\d,]+) bytes", line).group(1).replace(",", ""))
    assert need == _ram(path)
    line = one_error_line(run_ember("compile", str(path), "-o", str(tmp_path / "b"), "--ram-limit", "lots"))
    assert "--ram-limit lots" in line
