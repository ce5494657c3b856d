"""/healthz and /readyz: no key needed."""

from __future__ import annotations

import os

from fastapi.testclient import TestClient

from hippocampus.service import Hippocampus


def test_healthz_is_ok_without_a_key(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "pid": os.getpid()}


def test_readyz_reports_store_and_embedder_when_ready(client: TestClient) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200
    body = r.json()
    assert body["ready"] is True
    assert body["store"] == "EmbeddedStore"
    assert body["embedder"] == "hashing-v1-384"
    assert body["extractor"].startswith("spacy:")


def test_readyz_is_503_in_error_shape_when_the_store_is_closed(
    client: TestClient, service: Hippocampus
) -> None:
    service.store.close()
    r = client.get("/readyz")
    assert r.status_code == 503
    body = r.json()
    assert body["ready"] is False
    assert body["store"] == "EmbeddedStore"
    assert body["error"]["code"] == "store_unavailable"
    assert "data" not in body["error"]["message"]  # no paths leaked


def test_healthz_stays_200_when_the_store_is_closed(
    client: TestClient, service: Hippocampus
) -> None:
    service.store.close()
    assert client.get("/healthz").status_code == 200
