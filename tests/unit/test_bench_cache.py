"""The benchmarks' model cache (tests/support/models.build with a recipe) never serves a model that another
definition wrote: bench_python.py once wrote its small "transformer" where bench_models.py then read it."""

from pathlib import Path

from tests.support.models import build


def _writer(content: bytes):
    def write(path: Path) -> None:
        path.write_bytes(content)
    return write


def test_a_model_of_another_recipe_is_built_again(tmp_path: Path) -> None:
    small = build("transformer", tmp_path, _writer(b"small"))  # written without a recipe
    assert build("transformer", tmp_path, _writer(b"large"), "large v1").read_bytes() == b"large"
    assert build("transformer", tmp_path, _writer(b"other"), "large v1").read_bytes() == b"large"  # kept
    assert build("transformer", tmp_path, _writer(b"large v2"), "large v2").read_bytes() == b"large v2"
    assert small == tmp_path / "transformer.onnx"
