"""Fixtures for the API tests: the real embedded store in a temp dir, the hashing
embedder (counting its calls), spaCy extraction, and a client that checks every
response it gets for leaked vectors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.config import HippoSettings
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from tests.api.helpers import TRUSTED_OPERATOR, AuditingClient, CountingEmbedder, make_settings


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def service(
    tmp_path: Path, embedder: CountingEmbedder, spacy_extractor: SpacyConceptExtractor
) -> Iterator[Hippocampus]:
    svc = Hippocampus(
        EmbeddedStore(tmp_path / "data"), embedder, spacy_extractor, quality=TRUSTED_OPERATOR
    )
    yield svc
    svc.close()


@pytest.fixture
def settings(tmp_path: Path) -> HippoSettings:
    return make_settings(tmp_path / "data")


@pytest.fixture
def app(settings: HippoSettings, service: Hippocampus) -> FastAPI:
    return create_app(settings, service=service)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with AuditingClient(app) as c:
        yield c


@pytest.fixture
def local_client(tmp_path: Path, service: Hippocampus) -> Iterator[TestClient]:
    """A loopback client of a server with no API keys configured."""
    app = create_app(make_settings(tmp_path / "data", api_keys=""), service=service)
    with AuditingClient(app) as c:
        yield c
