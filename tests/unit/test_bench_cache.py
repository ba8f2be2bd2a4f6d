"""The benchmarks' model cache (tests/support/models.build with a recipe) never serves a model that another
definition wrote: bench_python.py once wrote its small "transformer" where bench_models.py then read it."""

from pathlib import Path

import pytest

from tests.support.models import build


def _writer(content: bytes):
    def write(path: Path) -> None:
        path.write_bytes(content)
    return write


def _missing_package(path: Path) -> None:
    raise ImportError("no module named 'torchvision'")


def test_a_model_of_another_recipe_is_built_again(tmp_path: Path) -> None:
    build("transformer", tmp_path, _writer(b"small"))  # written without a recipe
    assert build("transformer", tmp_path, _writer(b"large"), "large v1").read_bytes() == b"large"
    assert build("transformer", tmp_path, _writer(b"other"), "large v1").read_bytes() == b"large"  # kept
    assert build("transformer", tmp_path, _writer(b"large v2"), "large v2").read_bytes() == b"large v2"


def test_an_unstamped_model_is_kept_only_where_it_cannot_be_rebuilt(tmp_path: Path) -> None:
    build("vit", tmp_path, _writer(b"old export"))  # from before stamps
    assert build("vit", tmp_path, _missing_package, "vit v1").read_bytes() == b"old export"
    assert not (tmp_path / ".vit.recipe").exists() and not (tmp_path / ".vit.building").exists()
    build("vit", tmp_path, _writer(b"new export"), "vit v1")
    with pytest.raises(ImportError):  # stamped with another recipe: never served
        build("vit", tmp_path, _missing_package, "vit v2")
    assert (tmp_path / "vit.onnx").read_bytes() == b"new export"
