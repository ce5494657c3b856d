"""POST /v1/collections/{c}/recall."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import ADMIN_KEY, ALPHA, BETA, remember

URL = "/v1/collections/team:alpha/recall"


def recall(client: TestClient, query: str, **fields: Any) -> dict[str, Any]:
    r = client.post(URL, json={"query": query, **fields}, headers=ALPHA)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_recall_ranks_the_closest_memory_first(client: TestClient) -> None:
    remember(client, "The checkout page crashes when the cart is empty")
    best = remember(client, "Kubernetes pods restart because of memory limits")
    remember(client, "Quarterly planning meeting notes")

    body = recall(client, "why do kubernetes pods restart")
    assert body["query"] == "why do kubernetes pods restart"
    assert body["embedder"] == "hashing-v1-384"
    assert body["warnings"] == []
    results = body["results"]
    assert results[0]["id"] == best["id"]
    assert results[0]["memory"]["content"] == "Kubernetes pods restart because of memory limits"
    scores = [x["score"] for x in results]
    assert scores == sorted(scores, reverse=True)
    assert set(results[0]) == {
        "id",
        "score",
        "similarity",
        "lexical",
        "graph",
        "time",
        "paths",
        "memory",
    }
    assert results[0]["paths"] is None  # only with explain


def test_recall_limit_caps_the_results(client: TestClient) -> None:
    for i in range(5):
        remember(client, f"deploy note number {i} about the deploy pipeline")
    assert len(recall(client, "deploy pipeline", limit=2)["results"]) == 2


def test_recall_min_score_drops_weak_matches(client: TestClient) -> None:
    strong = remember(client, "Redis cache eviction policy is allkeys-lru")
    remember(client, "The office plants need water on Mondays")
    everything = recall(client, "redis cache eviction policy", min_score=-1.0)["results"]
    assert len(everything) == 2
    # min_score bounds the similarity, whatever else the recipe adds to the score.
    cut = (everything[0]["similarity"] + everything[1]["similarity"]) / 2
    kept = recall(client, "redis cache eviction policy", min_score=cut)["results"]
    assert [x["id"] for x in kept] == [strong["id"]]


def test_recall_filters_by_category_and_tags(client: TestClient) -> None:
    bug = remember(client, "Login fails after password reset", category="bug_fix", tags=["auth"])
    remember(client, "Login page redesign decision", category="decision", tags=["ui"])
    by_category = recall(client, "login", filters={"categories": ["bug_fix"]})["results"]
    assert [x["id"] for x in by_category] == [bug["id"]]
    by_tag = recall(client, "login", filters={"tags": ["auth"]})["results"]
    assert [x["id"] for x in by_tag] == [bug["id"]]


def test_recall_filters_by_domain(client: TestClient) -> None:
    db = remember(client, "Slow query on the orders table", domains=["database"])
    remember(client, "Slow query screen in the admin UI", domains=["frontend"])
    results = recall(client, "slow query", filters={"domains": ["database"]})["results"]
    assert [x["id"] for x in results] == [db["id"]]


def test_archived_memories_are_recalled_only_when_asked(client: TestClient) -> None:
    made = remember(client, "Legacy billing cron runs at midnight")
    client.patch(
        f"/v1/collections/team:alpha/memories/{made['id']}",
        json={"tier": "archived"},
        headers=ALPHA,
    )
    assert recall(client, "billing cron")["results"] == []
    found = recall(client, "billing cron", filters={"include_archived": True})["results"]
    assert [x["id"] for x in found] == [made["id"]]


def test_recall_excludes_a_conversation(client: TestClient) -> None:
    remember(client, "Webhook retries double-charge customers", conversation_id="conv-7")
    other = remember(client, "Webhook signature check uses the raw body")
    results = recall(client, "webhook", exclude_conversation_id="conv-7")["results"]
    assert [x["id"] for x in results] == [other["id"]]


def test_recall_in_empty_collection_returns_no_results(client: TestClient) -> None:
    assert recall(client, "anything at all")["results"] == []


def test_recall_with_bad_limit_is_422_naming_limit(client: TestClient) -> None:
    r = client.post(URL, json={"query": "x", "limit": 0}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "limit"


def test_recall_with_oversized_query_is_422_naming_query(client: TestClient) -> None:
    r = client.post(URL, json={"query": "q" * 2001}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "query"


def test_recall_with_infinite_min_score_is_422(client: TestClient) -> None:
    r = client.post(
        URL,
        content=b'{"query": "x", "min_score": -Infinity}',
        headers={**ALPHA, "Content-Type": "application/json"},
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "min_score"


def test_recall_with_unknown_filter_is_422_naming_it(client: TestClient) -> None:
    r = client.post(URL, json={"query": "x", "filters": {"tier": ["quarantined"]}}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "filters.tier"


def test_recall_is_compact_by_default_and_full_on_request(client: TestClient) -> None:
    stored = remember(client, "Kubernetes pods restart because of memory limits", tags=["k8s"])
    compact = recall(client, "kubernetes pods restart")["results"][0]
    full = recall(client, "kubernetes pods restart", detail="full")["results"][0]
    assert compact["id"] == full["id"] == stored["id"]
    # Full: the memory as GET /memories/{id} gives it (which adds its hubs).
    got = client.get(f"/v1/collections/team:alpha/memories/{stored['id']}", headers=ALPHA)
    assert set(full["memory"]) == set(got.json()) - {"hubs"}
    assert {"retrieval", "content_hash", "id"} <= set(full["memory"])
    # Compact: the id once, no bookkeeping; every other field of the full memory kept
    # (so fields added to memories later show in both).
    left_out = {"id", "collection", "content_hash", "embedding_model", "retrieval", "updated_at"}
    assert set(compact["memory"]) == set(full["memory"]) - left_out
    assert compact["memory"]["content"] == full["memory"]["content"]
    assert compact["memory"]["tags"] == ["k8s"]
    assert set(compact) == set(full)
    for signal in ("score", "similarity", "lexical", "graph"):
        value = compact[signal]
        assert value is None or value == round(value, 4)


def test_recall_detail_is_validated(client: TestClient) -> None:
    r = client.post(URL, json={"query": "x", "detail": "everything"}, headers=ALPHA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "detail"


def test_reading_a_collection_never_written_says_so(client: TestClient) -> None:
    remember(client, "Kubernetes pods restart because of memory limits")
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    r = client.post(
        "/v1/collections/team:alpah/recall", json={"query": "kubernetes"}, headers=admin
    )
    assert r.status_code == 200 and r.json()["results"] == []
    (warning,) = r.json()["warnings"]
    assert (
        "'team:alpah' holds no memories" in warning and "1 collection you may read holds" in warning
    )
    r = client.post(
        "/v1/collections/team:alpah/associate", json={"context": ["kubernetes"]}, headers=admin
    )
    assert r.status_code == 200 and "holds no memories" in r.json()["warnings"][0]
    # A collection that holds memories answers without it, found or not.
    assert recall(client, "kubernetes")["warnings"] == []
    assert recall(client, "zzzz qqqq", min_score=0.99)["warnings"] == []
    # The count names only what the key may see: beta sees none with memories.
    r = client.post("/v1/collections/team:beta/recall", json={"query": "kubernetes"}, headers=BETA)
    assert "0 collections you may read hold" in r.json()["warnings"][0]
