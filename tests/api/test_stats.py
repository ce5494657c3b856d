"""GET /v1/collections/{c}/stats."""

from __future__ import annotations

from fastapi.testclient import TestClient

from hippocampus.service import Hippocampus
from tests.api.helpers import ADMIN, ALPHA, OPERATOR, remember


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


def test_graph_health_is_kept_and_shows_its_age(client: TestClient, service: Hippocampus) -> None:
    base = "/v1/collections/team:alpha/stats"
    for text in ("a", "b"):
        remember(client, text, concepts=["redis"], triggers=[], domains=[], source=OPERATOR)
    first = client.get(base, headers=ALPHA).json()["graph"]
    assert (first["nodes"], first["components"]) == (3, 1)
    assert 0.0 <= first["age_s"] < 60.0 and first["took_s"] >= 0.0
    remember(client, "c", concepts=["kafka"], triggers=[], domains=[], source=OPERATOR)
    kept = client.get(base, headers=ALPHA).json()["graph"]
    # Counts as they are; the structure as computed, at the same moment as before.
    assert (kept["nodes"], kept["edges"]) == (5, 3)
    assert kept["nodes_by_kind"] == {"Memory": 3, "Concept": 2}
    assert (kept["components"], kept["computed_at"]) == (1, first["computed_at"])
    assert kept["age_s"] >= first["age_s"]
    fresh = client.get(base, params={"graph_max_age_s": 0}, headers=ALPHA).json()["graph"]
    assert (fresh["components"], fresh["largest_component"]) == (2, 3)
    assert fresh["computed_at"] > first["computed_at"]
    assert client.get(base, params={"graph_max_age_s": -1}, headers=ALPHA).status_code == 422


def test_stats_of_an_empty_collection_keep_nothing_there(
    client: TestClient, service: Hippocampus
) -> None:
    graph = client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()["graph"]
    assert (graph["nodes"], graph["components"]) == (0, 0)
    assert service.store.list_state_keys("team:alpha") == []
