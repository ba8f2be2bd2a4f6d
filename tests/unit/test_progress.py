"""Progress bars appear on a terminal only: logs, pipes and captured output get nothing."""

from __future__ import annotations

import io
from pathlib import Path

from ember.api import COMPILE_PHASES, write_bundle
from ember.config import CompileOptions
from ember.progress import Progress
from tests.cli.helpers import add_model


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_on_a_terminal_nothing_elsewhere() -> None:
    tty, log = _Tty(), io.StringIO()
    for stream in (tty, log):
        bar = Progress(3, "deploying", "bundle", stream)
        for label in ("a for host", "b for host", "a for cortex-m4"):
            bar.step(label)
        bar.close()
    assert "deploying" in tty.getvalue() and "a for host" in tty.getvalue()
    assert log.getvalue() == ""


def test_compile_reports_each_phase(tmp_path: Path) -> None:
    phases: list[str] = []
    write_bundle(str(add_model(tmp_path / "m.onnx")), tmp_path / "out", CompileOptions(), phase=phases.append)
    assert len(phases) == COMPILE_PHASES and len(set(phases)) == COMPILE_PHASES
