"""Recall with the real MiniLM model: meaning, not shared words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from engine.embed import SentenceTransformerEmbedder
from engine.extract import SpacyConceptExtractor
from engine.service import Hippocampus
from engine.store.embedded import EmbeddedStore
from tests.api.helpers import ALPHA, AuditingClient, make_settings

pytestmark = pytest.mark.model


@pytest.fixture
def minilm_client(
    tmp_path: Path, minilm: SentenceTransformerEmbedder, spacy_extractor: SpacyConceptExtractor
) -> Iterator[TestClient]:
    service = Hippocampus(EmbeddedStore(tmp_path / "data"), minilm, spacy_extractor)
    try:
        with AuditingClient(create_app(make_settings(tmp_path / "data"), service=service)) as c:
            yield c
    finally:
        service.close()


def test_minilm_recall_finds_the_slow_mobile_app_report_for_a_paraphrase(
    minilm_client: TestClient,
) -> None:
    contents = [
        "Customer reported that the mobile app takes 5+ seconds to load the dashboard",
        "Payment gateway timeouts during checkout",
        "Team lunch moved to Friday",
    ]
    r = minilm_client.post(
        "/v1/collections/team:alpha/memories",
        json={"memories": [{"content": c} for c in contents]},
        headers=ALPHA,
    )
    assert r.status_code == 201
    first_id = r.json()["results"][0]["id"]

    r = minilm_client.post(
        "/v1/collections/team:alpha/recall", json={"query": "app is slow on mobile"}, headers=ALPHA
    )
    assert r.status_code == 200
    body = r.json()
    assert body["embedder"].startswith("all-MiniLM-L6-v2") or "minilm" in body["embedder"].lower()
    assert body["results"][0]["id"] == first_id
    assert body["results"][0]["memory"]["content"] == contents[0]
