"""GET /v1/collections/{c}/stats."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.api.helpers import ADMIN, ALPHA, remember


def test_stats_counts_memories_by_category_and_tier(client: TestClient) -> None:
    remember(client, "Use idempotency keys on payment requests", category="pattern")
    remember(client, "Null pointer in the invoice exporter", category="bug_fix")
    archived = remember(client, "Old pricing decision from 2019", category="decision")
    client.patch(
        f"/v1/collections/team:alpha/memories/{archived['id']}",
        json={"tier": "archived"},
        headers=ALPHA,
    )
    r = client.get("/v1/collections/team:alpha/stats", headers=ALPHA)
    assert r.status_code == 200
    stats = r.json()
    assert stats["collection"] == "team:alpha"
    assert stats["memories"] == 3
    assert stats["by_category"] == {"pattern": 1, "bug_fix": 1, "decision": 1}
    assert stats["by_tier"] == {"active": 2, "archived": 1}
    assert stats["pending_embeddings"] == 0
    assert stats["embedder"] == "hashing-v1-384"
    assert stats["extractor"].startswith("spacy:")
    assert sum(stats["edges"].values()) > 0


def test_stats_of_an_empty_collection_are_zero(client: TestClient) -> None:
    stats = client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()
    assert stats["memories"] == 0
    assert stats["by_category"] == {}


def test_stats_of_a_collection_never_written_say_so(client: TestClient) -> None:
    remember(client, "Use idempotency keys on payment requests", category="pattern")
    r = client.get("/v1/collections/team:alpah/stats", headers=ADMIN)
    assert r.status_code == 200 and r.json()["memories"] == 0
    (warning,) = r.json()["warnings"]
    assert (
        "'team:alpah' holds no memories" in warning and "1 collection you may read holds" in warning
    )
    assert client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()["warnings"] == []
