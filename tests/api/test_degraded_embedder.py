"""The API with an embedder that is missing at start, or breaks at call time:
writes are accepted and say they wait for a vector, recall and conversation
messages answer 200 with a warning, /readyz stays ready and lists what is
degraded, and once the model is back the maintenance round embeds what waited."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.api.maintenance import MaintenanceLoop
from hippocampus.embed import Embedder, HashingEmbedder, UnavailableEmbedder
from hippocampus.errors import ConfigError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.retrieve.config import EMBEDDER_DOWN_WARNING
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from tests.api.helpers import ALPHA, TRUSTED_OPERATOR, AuditingClient, make_settings

BASE = "/v1/collections/team:alpha"
SECRET = "/srv/models/minilm on 10.0.0.7"
POOL = "Connection pool exhausted under load after the driver upgrade"
RETRY = "Retry storms follow a cache node restart"


class _Model:
    """A model folder that is absent until ``there``; once loaded, the hashing
    embedder, which raises while ``broken``."""

    def __init__(self) -> None:
        self.there = False
        self.broken = False

    def load(self) -> Embedder:
        if not self.there:
            raise ConfigError(f"no sentence-transformers model at {SECRET}")
        return _Breakable(self)


class _Breakable(HashingEmbedder):
    def __init__(self, model: _Model) -> None:
        super().__init__()
        self.model = model

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.model.broken:
            raise RuntimeError(f"model server {SECRET} refused")
        return super().encode(texts)


@pytest.fixture
def model() -> _Model:
    return _Model()


@pytest.fixture
def degraded(
    tmp_path: Path, model: _Model, spacy_extractor: SpacyConceptExtractor
) -> Iterator[tuple[TestClient, Hippocampus]]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        UnavailableEmbedder("hashing-v1-384", 384, "missing", load=model.load),
        spacy_extractor,
        quality=TRUSTED_OPERATOR,
    )
    settings = make_settings(tmp_path / "data", maintenance_interval_s=0)
    with AuditingClient(create_app(settings, service=service)) as client:
        yield client, service
    service.close()


def test_a_missing_model_degrades_every_route_then_heals(
    degraded: tuple[TestClient, Hippocampus], model: _Model
) -> None:
    client, service = degraded
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["ready"] is True and body["embedder"] == "hashing-v1-384"
    assert len(body["degraded"]) == 1 and body["degraded"][0].startswith("embedder: ")

    r = client.post(f"{BASE}/memories", json={"content": POOL}, headers=ALPHA)
    assert r.status_code == 201
    assert r.json()["created"] is True and r.json()["embedded"] is False
    assert any("flagged for re-embedding" in reason for reason in r.json()["reasons"])
    mid = r.json()["id"]
    assert client.get(f"{BASE}/memories/{mid}", headers=ALPHA).json()["embedding_model"] is None
    put = client.put(
        f"{BASE}/resources/ticket-7",
        json={"title": "Checkout times out", "description": POOL, "status": "OPEN"},
        headers=ALPHA,
    )
    assert put.status_code == 201, put.text
    assert put.json()["action"] == "created" and put.json()["embedded"] is False

    recall = client.post(f"{BASE}/recall", json={"query": "connection pool"}, headers=ALPHA)
    assert recall.status_code == 200
    assert recall.json()["warnings"] == [EMBEDDER_DOWN_WARNING]
    assert mid in [h["id"] for h in recall.json()["results"]]
    message = client.post(
        f"{BASE}/conversations/c-1/messages",
        json={"text": "the connection pool is exhausted again"},
        headers=ALPHA,
    )
    assert message.status_code == 200
    assert message.json()["warnings"] == [EMBEDDER_DOWN_WARNING]
    reindex = client.post(f"{BASE}/maintenance/reindex", headers=ALPHA)
    assert reindex.status_code == 503
    assert reindex.json()["error"]["code"] == "embedding_error"
    assert client.get(f"{BASE}/stats", headers=ALPHA).json()["pending_embeddings"] == 2

    for response in (ready, r, put, recall, message, reindex):
        assert "10.0.0.7" not in response.text and "/srv/models" not in response.text

    model.there = True
    MaintenanceLoop(service, interval_s=3600).run_once()
    assert client.get("/readyz").json()["degraded"] == []
    assert client.get(f"{BASE}/stats", headers=ALPHA).json()["pending_embeddings"] == 0
    dense = client.post(
        f"{BASE}/recall", json={"query": "connection pool", "recipe": "DENSE"}, headers=ALPHA
    )
    assert dense.json()["warnings"] == []
    assert mid in [h["id"] for h in dense.json()["results"]]


def test_content_edited_while_the_embedder_fails_waits_for_a_vector_of_its_own(
    degraded: tuple[TestClient, Hippocampus], model: _Model
) -> None:
    client, service = degraded
    model.there = True
    assert service.recover_embedder().healthy
    made = client.post(f"{BASE}/memories", json={"content": POOL}, headers=ALPHA).json()
    assert made["embedded"] is True
    mid = made["id"]

    def dense(query: str) -> list[str]:
        r = client.post(
            f"{BASE}/recall",
            json={"query": query, "recipe": "DENSE", "min_score": 0.9},
            headers=ALPHA,
        )
        assert r.status_code == 200 and r.json()["warnings"] == []
        return [h["id"] for h in r.json()["results"]]

    assert dense(POOL) == [mid]
    stats = f"{BASE}/stats"
    pending = client.get(stats, headers=ALPHA).json()["pending_embeddings"]

    model.broken = True
    r = client.patch(f"{BASE}/memories/{mid}", json={"content": RETRY}, headers=ALPHA)
    assert r.status_code == 200, r.text
    assert r.json()["content"] == RETRY and r.json()["embedding_model"] is None
    assert r.json()["embedded"] is False
    assert any("flagged for re-embedding" in reason for reason in r.json()["reasons"])
    assert "10.0.0.7" not in r.text
    assert client.get(f"{BASE}/memories/{mid}", headers=ALPHA).json()["embedding_model"] is None
    assert client.get(stats, headers=ALPHA).json()["pending_embeddings"] == pending + 1

    # Back up: the old text's exact wording no longer finds it by the old vector.
    model.broken = False
    assert dense(POOL) == []
    MaintenanceLoop(service, interval_s=3600).run_once()
    assert client.get(stats, headers=ALPHA).json()["pending_embeddings"] == pending
    assert client.get(f"{BASE}/memories/{mid}", headers=ALPHA).json()["embedding_model"] == (
        "hashing-v1-384"
    )
    assert dense(RETRY) == [mid]
    assert dense(POOL) == []


def test_an_embedder_that_raises_anything_never_fails_a_request(
    degraded: tuple[TestClient, Hippocampus], model: _Model
) -> None:
    client, service = degraded
    model.there = True
    assert service.recover_embedder().healthy
    model.broken = True
    batch = client.post(
        f"{BASE}/memories",
        json={"memories": [{"content": POOL}, {"content": "Retry storms after a cache restart"}]},
        headers=ALPHA,
    )
    assert batch.status_code == 201
    assert [o["embedded"] for o in batch.json()["results"]] == [False, False]
    recall = client.post(f"{BASE}/recall", json={"query": "retry storms"}, headers=ALPHA)
    assert recall.status_code == 200 and recall.json()["results"]
    assert recall.json()["warnings"] == [EMBEDDER_DOWN_WARNING]
    rag = client.post("/ai/rag-search", json={"query": "retry storms"}, headers=ALPHA)
    assert rag.status_code == 200
    assert client.get("/readyz").json()["degraded"]
    for response in (batch, recall, rag):
        assert "10.0.0.7" not in response.text and "RuntimeError" not in response.text
    model.broken = False
    MaintenanceLoop(service, interval_s=3600).run_once()
    assert client.get("/readyz").json()["degraded"] == []
    assert client.get(f"{BASE}/stats", headers=ALPHA).json()["pending_embeddings"] == 0
