"""Fixtures shared by the test folders."""

from __future__ import annotations

import pytest

from tests.support.cache import ArtifactCache, shared_root


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> ArtifactCache:
    """Exported models and compiled bundles, built once per run and shared by xdist workers."""
    return ArtifactCache(shared_root(tmp_path_factory.getbasetemp()))
