"""The standing fuzzing harness (scripts/fuzz.py): a short deterministic budget must give no traceback,
and the mutants that once did (tests/fuzz/corpus) must stay clean errors."""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from ember.errors import EmberError, ModelFormatError, ShapeError

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.onnx"))


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("ember_fuzz", ROOT / "scripts" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ember_fuzz"] = mod
    spec.loader.exec_module(mod)
    return mod


fuzz = _fuzz_module()


def test_short_budget_has_no_traceback() -> None:
    counts = fuzz.fuzz(200, seed=0, timeout=60.0, save=None)
    assert sum(counts.values()) == 200
    assert counts["traceback"] == 0 and counts["crash"] == 0, dict(counts)
    assert counts["ok"] > 0  # the mutants are not all refused at the door


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_former_crashers_are_clean_errors(path: Path) -> None:
    # A malformed model: a one-line error naming the problem (a ModelFormatError, or a ShapeError naming the
    # node whose attributes do not fit), never another exception.
    with pytest.raises((ModelFormatError, ShapeError)) as err:
        fuzz.compile_front(str(path))
    assert "\n" not in str(err.value)


def test_corpus_is_not_empty() -> None:
    assert len(CORPUS) >= 3


def test_harness_tells_tracebacks_and_timeouts_from_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(path: str) -> None:
        raise IndexError("a bug")

    def refusal(path: str) -> None:
        raise EmberError("bad model")

    def hang(path: str) -> None:
        time.sleep(60)

    for fn, outcome in ((bug, "traceback"), (refusal, "error"), (hang, "timeout")):
        monkeypatch.setattr(fuzz, "compile_front", fn)  # the forked child inherits the patch
        assert fuzz.run_one(b"", 2.0, tmp_path)[0] == outcome


VALID = sorted((Path(__file__).parent / "valid").glob("*.onnx"))


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_former_crashers_that_are_valid_models_compile(path: Path) -> None:
    # A Conv whose output is empty (a zero dimension) once asked for scratch the planner never gave it;
    # names that are not UTF-8 (protobuf hands them back as bytes) once reached the C writer.
    fuzz.compile_front(str(path))
