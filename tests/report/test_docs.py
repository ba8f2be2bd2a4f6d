"""The documentation cannot rot: docs/commands.md is what scripts/command_docs.py makes of the argument parser,
every option `ember <command> --help` shows is in its section, and every link in README and docs/ resolves
to a file inside the repository."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ember.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ROOT / "docs" / "commands.md"


def test_commands_md_is_generated_from_the_parser():
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "command_docs.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _help(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return out.getvalue()


def test_every_option_of_every_command_is_documented():
    doc = COMMANDS.read_text()
    sections = dict(re.findall(r"^## ember (\S+)\n(.*?)(?=^## |\Z)", doc, re.S | re.M))
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(sections) == set(commands)
    for name in commands:
        invocations = [m.group(1) for m in re.finditer(r"^  (-\S.*?)(?:  |$)", _help(name), re.M)]
        flags = {f for inv in invocations for f in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", inv)}
        flags -= {"-h", "--help"}
        assert len(flags) > 0 or name in ("targets", "info"), name
        documented = set(re.findall(r"`(--?[a-zA-Z][\w-]*)`", sections[name]))
        assert flags <= documented, (name, flags - documented)


def test_links_stay_inside_the_repository():
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    for f in files:
        text = f.read_text()
        assert "../shared" not in text and "PRODUCT.md" not in text, f
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            path = (f.parent / target).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), (f.name, target)
    readme = (ROOT / "README.md").read_text()
    # The two fresh-machine commands, exactly.
    assert ("pip install -e '.[validate]' && python examples/make_lenet.py examples/lenet.onnx && ember compile "
            "examples/lenet.onnx -o out/lenet && ember validate examples/lenet.onnx out/lenet") in readme
    assert "bash scripts/test.sh" in readme
    assert "Apache License" in (ROOT / "LICENSE").read_text()
