"""POST/GET/PATCH/DELETE /v1/collections/{c}/memories."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from hippocampus.service import Hippocampus
from tests.api.helpers import ALPHA, CountingEmbedder, remember

URL = "/v1/collections/team:alpha/memories"


def test_remember_one_returns_201_with_id_tier_and_outcome(client: TestClient) -> None:
    r = client.post(
        URL,
        json={
            "content": "Retry the payment webhook with exponential backoff",
            "category": "pattern",
            "importance": 0.8,
            "tags": ["payments"],
        },
        headers=ALPHA,
    )
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {
        "id",
        "tier",
        "created",
        "rejected",
        "duplicate_of",
        "conflicts_with",
        "supersedes",
        "embedded",
        "quality",
        "sanitized",
        "reasons",
        "occurred_at",
        "speaker",
    }
    assert body["tier"] == "active"
    assert body["created"] is True
    assert body["rejected"] is False
    assert body["duplicate_of"] is None
    assert body["conflicts_with"] == []
    assert body["embedded"] is True
    assert body["quality"] > 0.5
    assert body["sanitized"] is False
    assert body["reasons"] == []


def test_remembered_memory_reads_back_with_its_fields_and_retrieval_metadata(
    client: TestClient,
) -> None:
    made = remember(
        client,
        "Database connection pool exhausted under load; raise max_connections",
        id="ticket-42",
        category="bug_fix",
        importance=0.9,
        source="oncall",
        tags=["db", "incident"],
        conversation_id="conv-1",
    )
    assert made["id"] == "ticket-42"

    r = client.get(f"{URL}/ticket-42", headers=ALPHA)
    assert r.status_code == 200
    memory = r.json()
    assert memory["id"] == "ticket-42"
    assert memory["collection"] == "team:alpha"
    assert memory["category"] == "bug_fix"
    assert memory["importance"] == 0.9
    assert memory["source"] == "oncall"
    assert memory["tags"] == ["db", "incident"]
    assert memory["tier"] == "active"
    assert memory["embedding_model"] == "hashing-v1-384"
    assert memory["retrieval"]["confidence"] == 0.5
    assert memory["retrieval"]["conversation_ids"] == ["conv-1"]
    assert memory["retrieval"]["concepts"]  # extracted by spaCy
    assert "embedding" not in memory


def test_reading_a_memory_shows_its_hubs_with_their_edge_weights(client: TestClient) -> None:
    made = remember(client, "Our Postgres migrations lock the orders table during deploys")
    before = client.get(f"{URL}/{made['id']}", headers=ALPHA).json()["hubs"]
    assert set(before) == {"domains", "triggers", "concepts"}
    names = {kind: {h["name"]: h["weight"] for h in hubs} for kind, hubs in before.items()}
    assert names["domains"]["database"] == 0.5
    assert names["triggers"]["migration"] == 0.5
    assert names["concepts"]["postgres"] == 0.8  # a name's edge starts stronger
    client.post(
        f"{URL}/{made['id']}/feedback",
        json={"helpful": True, "context": ["postgres"]},
        headers=ALPHA,
    )
    after = client.get(f"{URL}/{made['id']}", headers=ALPHA).json()["hubs"]["concepts"]
    assert after[0]["name"] == "postgres" and after[0]["weight"] == pytest.approx(0.9)


def test_caller_given_concepts_replace_extracted_ones(client: TestClient) -> None:
    made = remember(client, "Cache the session tokens in Redis", concepts=["Caching", "Redis"])
    memory = client.get(f"{URL}/{made['id']}", headers=ALPHA).json()
    assert memory["retrieval"]["concepts"] == ["caching", "redis"]


def test_remember_same_content_twice_reports_duplicate_with_200(client: TestClient) -> None:
    first = remember(client, "Use feature flags for risky deploys")
    r = client.post(URL, json={"content": "  use FEATURE flags for risky deploys "}, headers=ALPHA)
    assert r.status_code == 200
    body = r.json()
    assert body["created"] is False
    assert body["duplicate_of"] == first["id"]
    assert body["id"] == first["id"]


def test_remember_batch_returns_one_result_per_memory_in_order(client: TestClient) -> None:
    r = client.post(
        URL,
        json={
            "memories": [
                {"content": "Pin the numpy version in the build image"},
                {"content": "The search page times out for large tenants", "category": "bug_fix"},
                {"content": "Pin the numpy version in the build image"},
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 201
    results = r.json()["results"]
    assert len(results) == 3
    assert [x["created"] for x in results] == [True, True, False]
    assert results[2]["duplicate_of"] == results[0]["id"]
    stats = client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()
    assert stats["memories"] == 2
    assert stats["by_category"] == {"insight": 1, "bug_fix": 1}


def test_batch_with_one_schema_invalid_item_stores_nothing(client: TestClient) -> None:
    r = client.post(
        URL,
        json={
            "memories": [
                {"content": "first valid memory about deploys"},
                {"content": "second valid memory about caching"},
                {"content": "third", "importance": 7},
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "memories.2.importance"
    assert client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()["memories"] == 0


def test_batch_with_one_blank_item_stores_nothing_and_names_it(client: TestClient) -> None:
    # Whitespace passes the schema; the engine refuses it before writing anything.
    r = client.post(
        URL,
        json={
            "memories": [
                {"content": "first valid memory about deploys"},
                {"content": "   "},
                {"content": "third valid memory about caching"},
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["field"] == "memories.1.content"
    assert client.get("/v1/collections/team:alpha/stats", headers=ALPHA).json()["memories"] == 0


def test_remember_with_an_existing_id_is_409_and_stores_nothing(client: TestClient) -> None:
    remember(client, "the original text", id="fixed-id")
    r = client.post(URL, json={"content": "a different text", "id": "fixed-id"}, headers=ALPHA)
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "conflict"
    assert client.get(f"{URL}/fixed-id", headers=ALPHA).json()["content"] == "the original text"


def test_get_unknown_id_is_404(client: TestClient) -> None:
    r = client.get(f"{URL}/no-such-id", headers=ALPHA)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_patch_updates_fields_and_returns_the_memory(client: TestClient) -> None:
    made = remember(client, "Flaky test in the checkout suite", tags=["ci"])
    r = client.patch(
        f"{URL}/{made['id']}",
        json={"category": "bug_fix", "importance": 0.2, "tier": "archived", "tags": ["ci", "qa"]},
        headers=ALPHA,
    )
    assert r.status_code == 200
    memory = r.json()
    assert memory["category"] == "bug_fix"
    assert memory["importance"] == 0.2
    assert memory["tier"] == "archived"
    assert memory["tags"] == ["ci", "qa"]
    assert memory["content"] == "Flaky test in the checkout suite"
    # The edit's answer is the memory as read, plus whether it has a vector and
    # what its new content contradicts (no new content here).
    assert memory.pop("embedded") is True and memory.pop("reasons") == []
    assert memory.pop("conflicts_with") == [] and memory.pop("supersedes") == []
    # Reading it gives the same memory, and its hubs besides.
    read = client.get(f"{URL}/{made['id']}", headers=ALPHA).json()
    assert set(read.pop("hubs")) == {"domains", "triggers", "concepts"}
    assert read == memory


def test_patch_reembeds_only_when_content_changes(
    client: TestClient, embedder: CountingEmbedder
) -> None:
    def contents() -> list[str]:
        # Hub names (concepts, triggers) are embedded too; count memory contents only.
        return [t for t in embedder.texts if t.casefold().startswith("rotate the")]

    made = remember(client, "Rotate the signing keys every quarter")
    assert len(contents()) == 1

    client.patch(f"{URL}/{made['id']}", json={"importance": 0.9}, headers=ALPHA)
    client.patch(
        f"{URL}/{made['id']}",
        json={"content": "rotate the  SIGNING keys every quarter"},
        headers=ALPHA,
    )
    assert len(contents()) == 1, "unchanged content (after normalization) was re-embedded"

    r = client.patch(
        f"{URL}/{made['id']}",
        json={"content": "Rotate the signing keys every month"},
        headers=ALPHA,
    )
    assert r.status_code == 200
    assert contents()[1:] == ["Rotate the signing keys every month"]
    assert r.json()["content"] == "Rotate the signing keys every month"


def test_patch_into_a_reversal_names_the_rule_it_contradicts(client: TestClient) -> None:
    rule = remember(client, "Use Redis for session storage because it is fast")
    note = remember(client, "Session storage needs a review this quarter")
    r = client.patch(
        f"{URL}/{note['id']}",
        json={"content": "Do not use Redis for session storage: evictions log users out"},
        headers=ALPHA,
    )
    assert r.status_code == 200
    body = r.json()
    assert body["conflicts_with"] == [rule["id"]]
    assert body["supersedes"] == [rule["id"]]
    assert any(rule["id"] in reason for reason in body["reasons"])
    stale = client.get(f"{URL}/{rule['id']}", headers=ALPHA).json()
    assert stale["superseded_by"] == [note["id"]]


def test_patch_unknown_id_is_404(client: TestClient) -> None:
    r = client.patch(f"{URL}/missing", json={"importance": 0.1}, headers=ALPHA)
    assert r.status_code == 404


def test_patch_with_unknown_field_is_422_naming_it(client: TestClient) -> None:
    made = remember(client, "Something worth keeping")
    r = client.patch(f"{URL}/{made['id']}", json={"embedding": [0.1, 0.2]}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "embedding"


def test_delete_forgets_the_memory(client: TestClient, service: Hippocampus) -> None:
    made = remember(client, "Old runbook for the v1 cluster")
    r = client.delete(f"{URL}/{made['id']}", headers=ALPHA)
    assert r.status_code == 204
    assert r.content == b""
    assert client.get(f"{URL}/{made['id']}", headers=ALPHA).status_code == 404
    assert service.store.edges_of("team:alpha", made["id"]) == []


def test_delete_unknown_id_is_404(client: TestClient) -> None:
    assert client.delete(f"{URL}/missing", headers=ALPHA).status_code == 404
