"""Shared fixtures. Heavy parts (spaCy, MiniLM) load once per test session."""

from __future__ import annotations

import pytest

from hippocampus.embed import HashingEmbedder, SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from tests.contract.backends import neo4j_plan


def pytest_report_header(config: pytest.Config) -> str:
    """Say once whether the contract suite runs against Neo4j, and if not why."""
    return neo4j_plan()[1]


@pytest.fixture(scope="session")
def spacy_extractor() -> SpacyConceptExtractor:
    return SpacyConceptExtractor()


@pytest.fixture(scope="session")
def hashing_embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()
