"""Fixtures for the service tests that embed with a model that can fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hippocampus.extract import SpacyConceptExtractor
from hippocampus.service import Hippocampus
from tests.unit.flaky import FlakyEmbedder, operator_service


@pytest.fixture
def flaky_embedder() -> FlakyEmbedder:
    """The hashing embedder, down while a test sets ``down``."""
    return FlakyEmbedder()


@pytest.fixture
def flaky_service(
    tmp_path: Path, flaky_embedder: FlakyEmbedder, spacy_extractor: SpacyConceptExtractor
) -> Iterator[Hippocampus]:
    """:func:`tests.unit.flaky.operator_service` on ``flaky_embedder``."""
    with operator_service(tmp_path / "data", flaky_embedder, spacy_extractor) as service:
        yield service
