"""A whole conversation through the API: messages in, insights out, engagement
back, a later explicit recall counted as surfaced before search; feedback,
resurfacing, stats and /metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import ADMIN, ALPHA, BETA, remember

BASE = "/v1/collections/team:alpha"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
FIX = "Redis connection pool exhausted at checkout: raise the pool size and add a wait timeout"


def say(client: TestClient, text: str, minute: int, **extra: Any) -> dict[str, Any]:
    r = client.post(
        f"{BASE}/conversations/chat-1/messages",
        json={"text": text, "at": (T0 + timedelta(minutes=minute)).isoformat(), **extra},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_conversation_gets_an_insight_before_it_asks(client: TestClient) -> None:
    fix = remember(client, FIX, category="bug_fix")
    remember(client, "The office plants need water on Mondays", category="insight")

    first = say(client, "checkout is failing with errors since the sale started", 0)
    assert first["conversation"]["type"] == "debugging"
    assert not first["conversation"]["type_given"]
    second = say(client, "the redis connection pool looks exhausted at checkout", 2)
    offered = {i["memory"]["id"]: i for i in first["insights"] + second["insights"]}
    assert fix["id"] in offered
    insight = offered[fix["id"]]
    assert insight["confidence"] >= 0.6  # the debugging bar
    assert {g["name"] for g in insight["gates"]} >= {"confidence", "trigger_matches"}
    assert "embedding" not in insight["memory"]
    # Why, in words that were said; not foreseen.
    said = "checkout is failing with errors since the sale started " + (
        "the redis connection pool looks exhausted at checkout"
    )
    assert insight["matched_topics"] and insight["foreseen"] is False
    assert all(w in said for t in insight["matched_topics"] for w in t.split())
    assert all(f'"{t}"' in insight["reason"] for t in insight["matched_topics"])
    assert insight["foreseen_topics"] == []

    r = client.post(
        f"{BASE}/surfacings/{insight['surfacing_id']}/engagement",
        json={"engagement": "used"},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["retrieval"]["usage_count"] == 1
    again = client.post(
        f"{BASE}/surfacings/{insight['surfacing_id']}/engagement",
        json={"engagement": "used"},
        headers=ALPHA,
    )
    assert again.status_code == 409

    say(client, "we tried restarting the workers, no luck", 4)
    say(client, "how did we fix the redis pool exhaustion last time?", 6)
    r = client.post(
        f"{BASE}/recall",
        json={"query": "redis pool exhausted fix", "conversation_id": "chat-1", "limit": 3},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    before = r.json()["surfaced_before"]
    lead = 4 - (1 if fix["id"] in {i["memory"]["id"] for i in first["insights"]} else 2)
    assert before == [{"memory_id": fix["id"], "lead": lead}]

    stats = client.get(f"{BASE}/stats?graph=false", headers=ALPHA).json()
    surfacing = stats["surfacing"]
    assert surfacing["engagements"]["used"] == 1
    assert surfacing["explicit_recalls"] == 1 and surfacing["recall_before_search"] == 1.0
    assert surfacing["median_lead_time"] == lead
    assert stats["latency"]["recalls"] == 1 and stats["latency"]["p50_ms"] > 0
    # One recall is too few to judge how well similarity corroborates words here.
    assert stats["corroboration"]["median"] is None
    assert stats["corroboration"]["lexical_lean"] == 1.0

    metrics = client.get("/metrics", headers=ALPHA)
    assert metrics.status_code == 200
    assert 'hippo_recall_before_search{collection="team:alpha"} 1' in metrics.text
    assert 'hippo_engagements_total{collection="team:alpha",engagement="used"} 1' in metrics.text
    assert 'hippo_recall_lexical_lean{collection="team:alpha"} 1\n' in metrics.text
    # Another tenant's key sees nothing of this collection.
    assert "team:alpha" not in client.get("/metrics", headers=BETA).text


def test_conversation_state_and_bad_input(client: TestClient) -> None:
    say(client, "let us explore an idea for the cache design", 0, conversation_type="exploration")
    state = client.get(f"{BASE}/conversations/chat-1", headers=ALPHA).json()
    assert state["type"] == "exploration" and state["type_given"] and state["messages"] == 1
    assert client.get(f"{BASE}/conversations/nope", headers=ALPHA).status_code == 404
    for body, field in [
        ({"text": ""}, "text"),
        ({"text": "hi", "conversation_type": "chatty"}, "conversation_type"),
        ({"text": "hi", "at": "2026-04-01T09:00:00"}, "at"),
        ({"text": "hi", "extra": 1}, "extra"),
    ]:
        r = client.post(f"{BASE}/conversations/chat-2/messages", json=body, headers=ALPHA)
        assert r.status_code == 422, body
        assert field in r.text
    r = client.post(
        f"{BASE}/surfacings/unknown/engagement", json={"engagement": "used"}, headers=ALPHA
    )
    assert r.status_code == 404
    r = client.post(
        f"{BASE}/surfacings/unknown/engagement", json={"engagement": "loved"}, headers=ALPHA
    )
    assert r.status_code == 422
    # Nothing of a conversation leaks to another collection's key.
    r = client.get("/v1/collections/team:beta/conversations/chat-1", headers=BETA)
    assert r.status_code == 404


def test_feedback_and_resurfacing(client: TestClient) -> None:
    m = remember(client, FIX, category="bug_fix", importance=0.9)
    r = client.post(
        f"{BASE}/memories/{m['id']}/feedback",
        json={"helpful": True, "context": ["checkout outage"]},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    retrieval = r.json()["retrieval"]
    assert retrieval["usage_count"] == 1 and retrieval["confidence"] == 0.6
    assert retrieval["review"]["stability"] > 0
    # Just reviewed: not due yet.
    due = client.get(f"{BASE}/resurface", headers=ALPHA).json()
    assert due["scheduler"] == "fsrs" and due["results"] == []
    r = client.post(f"{BASE}/memories/{m['id']}/feedback", json={"helpful": False}, headers=ALPHA)
    assert r.json()["retrieval"]["recent_dismissals"] == 2.0
    # The record carries surfacing's fields and hygiene's alike.
    assert r.json()["retrieval"]["dismissed_at"] is not None
    assert r.json()["retrieval"]["duplicates"] == 0
    assert client.get(f"{BASE}/resurface?limit=0", headers=ALPHA).status_code == 422


def test_debugging_is_recognised_and_logged_out_is_not_logging(client: TestClient) -> None:
    logging_pattern = remember(
        client,
        "Structured JSON logging: log every request with its trace id and the user id",
        category="pattern",
    )
    messages = [
        "hey, users keep getting logged out after the deploy",
        "the session cookie looks expired right after they sign in",
        "the auth service logs show 401s for tokens that should be valid",
        "rolling back the release didn't help",
    ]
    for i, text in enumerate(messages):
        body = say(client, text, 2 * i)
        assert body["conversation"]["type"] == "debugging", (text, body["conversation"])
        offered = {x["memory"]["id"] for x in body["insights"]}
        assert logging_pattern["id"] not in offered, text
    r = client.post(
        f"{BASE}/conversations/other/messages",
        json={"text": "they get logged out again", "at": T0.isoformat()},
        headers=ALPHA,
    )
    topics = r.json()["conversation"]["recent_topics"]
    assert "log out" in topics and "log" not in topics


def test_messages_without_at_at_curl_speed_are_held_back_saying_why(client: TestClient) -> None:
    remember(client, FIX, category="bug_fix")
    held = None
    for text in ["checkout is failing", "the redis connection pool looks exhausted"] * 2:
        r = client.post(f"{BASE}/conversations/fast/messages", json={"text": text}, headers=ALPHA)
        held = r.json()["held_back"]
    assert held is not None and "momentum" in held and "`at`" in held


def test_messages_and_resurfacing_on_a_collection_never_written_say_so(
    client: TestClient,
) -> None:
    remember(client, FIX, category="bug_fix")
    misspelt = "/v1/collections/team:alpah"
    text = "the redis connection pool looks exhausted at checkout"
    r = client.post(
        f"{misspelt}/conversations/chat-1/messages",
        json={"text": text, "at": T0.isoformat()},
        headers=ADMIN,
    )
    assert r.status_code == 200 and r.json()["insights"] == []
    (warning,) = r.json()["warnings"]
    assert (
        "'team:alpah' holds no memories" in warning and "1 collection you may read holds" in warning
    )
    r = client.get(f"{misspelt}/resurface", headers=ADMIN)
    assert r.status_code == 200 and r.json()["results"] == []
    assert "'team:alpah' holds no memories" in r.json()["warnings"][0]
    # A collection that holds memories says nothing of the kind, offering nothing or not.
    assert say(client, "the office plants need water on mondays", 0)["warnings"] == []
    due = client.get(f"{BASE}/resurface", headers=ALPHA).json()
    assert due["results"] == [] and due["warnings"] == []
