"""No tracebacks for a user's mistake or environment (closed pipes, Ctrl-C), help text for every argument,
and `ember.compile` taking a path, an onnx.ModelProto or a torch.nn.Module."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import ember
import ember.api
from ember.cli import build_parser, main
from ember.errors import OptionError

from .helpers import ROOT, add_model, snapshot


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    model = add_model(tmp_path / "m.onnx")
    assert main(["compile", str(model), "-o", str(tmp_path / "b")]) == 0
    np.save(tmp_path / "x.npy", np.zeros((500, 2, 3), np.float32))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    p = subprocess.Popen([sys.executable, "-m", "ember.cli", "run", str(tmp_path / "b"), "--input",
                          str(tmp_path / "x.npy"), "--top-k", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    p.stdout.close()  # `| head` that has already gone: every write fails with EPIPE
    err = p.stderr.read().decode()
    assert p.wait() == 141 and err == ""


def test_ctrl_c_leaves_no_partial_bundle(tmp_path: Path, monkeypatch, capsys) -> None:
    model = add_model(tmp_path / "m.onnx")
    out = tmp_path / "b"
    assert main(["compile", str(model), "-o", str(out)]) == 0
    before = snapshot(out)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ember.api, "compile_object", interrupted)  # Ctrl-C while the C compiler runs
    assert main(["compile", str(model), "-o", str(out), "-O", "1"]) == 130
    assert capsys.readouterr().err.strip() == "ember: interrupted"
    assert snapshot(out) == before  # the earlier bundle intact, no temporary folder left
    assert main(["compile", str(model), "-o", str(tmp_path / "new" / "b")]) == 130
    assert not (tmp_path / "new").exists()  # folders it created are removed again
    with pytest.raises(KeyboardInterrupt):
        main(["--debug", "compile", str(model), "-o", str(out)])


def test_every_argument_has_help() -> None:
    def walk(p: argparse.ArgumentParser, path: str):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif not isinstance(a, argparse._HelpAction | argparse._VersionAction):
                yield path, a

    missing = [f"{path} {a.dest}" for path, a in walk(build_parser(), "ember") if not a.help]
    assert not missing
    text = build_parser()._subparsers._group_actions[0].choices["validate"].format_help()
    assert "cosine >= 0.99," in text and "rel err <= 0.0001" in text  # the defaults per bundle kind are stated


def test_compile_takes_a_model_proto(tmp_path: Path) -> None:
    proto = onnx.load(add_model(tmp_path / "m.onnx"))
    proto.graph.name = "tiny add"
    bundle = ember.compile(proto, tmp_path / "b")
    assert bundle.name == "tiny_add"
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(bundle.run({"x": x})["y"], x + np.arange(3, dtype=np.float32))
    with pytest.raises(OptionError, match=r"^ember.compile: model must be a path, an onnx.ModelProto, a "
                       r"torch.nn.Module \(with example_inputs\), a Keras model or a SavedModel directory, not dict$"):
        ember.compile({"graph": 1}, tmp_path / "c")


def test_compile_takes_a_torch_module(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 5))
    x = torch.randn(1, 3, 8, 8)
    bundle = ember.compile(net, tmp_path / "b", example_inputs=(x,))
    assert bundle.name == "sequential" and [e["name"] for e in bundle.inputs] == ["input_0"]
    with torch.no_grad():
        want = net(x).numpy()
    (got,) = bundle.run({"input_0": x.numpy()}).values()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(OptionError, match="needs example_inputs"):
        ember.compile(net, tmp_path / "c")


def test_missing_torch_is_an_install_hint(tmp_path: Path, monkeypatch) -> None:
    fake = type("Module", (), {"__module__": "torch.nn.modules.module"})  # a Module while torch is absent
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(OptionError, match=r"needs torch: pip install 'ember\[torch\]'$"):
        ember.compile(fake(), tmp_path / "b", example_inputs=1)


def test_a_real_ctrl_c_during_compile(tmp_path: Path) -> None:
    """SIGINT while the bundle's files are being built (its temporary folder exists): exit 130, one line,
    nothing left in the output folder."""
    import signal
    import time

    model = add_model(tmp_path / "m.onnx")
    out = tmp_path / "b"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin:/usr/local/bin"}

    def as_in_a_terminal() -> None:
        # A test run started in the background (`cmd &` in a script) ignores SIGINT, and a Python started with
        # SIGINT ignored keeps ignoring it: give the command the disposition a terminal gives it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen([sys.executable, "-m", "ember.cli", "compile", str(model), "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=as_in_a_terminal)
    deadline = time.monotonic() + 60
    while not (out.is_dir() and any(out.glob(".ember-m-*"))):
        assert p.poll() is None and time.monotonic() < deadline, "the compile ended before it could be interrupted"
        time.sleep(0.002)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and err.decode().strip() == "ember: interrupted", (p.returncode, err.decode())
    # On a busy machine the signal can land after the finished bundle was moved into place: then the folder
    # holds that whole bundle; otherwise nothing at all. Never a temporary folder or a part of a bundle.
    if out.exists():
        assert not list(out.glob(".ember-*")), sorted(p.name for p in out.iterdir())
        assert {f.name for f in out.iterdir()} >= {"m.json", "m.h", "m.o", "m.weights.bin"}
