"""occurred_at and speaker over REST: remembered (one and batch), read back,
corrected by PATCH, refused with a 422 naming the field, and used as recall
filters."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.service import Hippocampus
from tests.api.helpers import ALPHA

C = "team:alpha"
URL = f"/v1/collections/{C}/memories"
RECALL = f"/v1/collections/{C}/recall"

TURNS = [
    ("t1", "2024-05-01T09:00:00Z", "ada", "Ada says the Kafka consumer lag grew after the deploy"),
    ("t2", "2024-05-01T09:01:00+02:00", "bob", "Bob thinks the Kafka partition count is too low"),
    ("t3", "2024-05-01T09:02:00Z", "ada", "Ada raises the Kafka partitions to twelve tonight"),
]


def remember_turns(client: TestClient) -> dict[str, Any]:
    r = client.post(
        URL,
        json={
            "memories": [
                {
                    "id": i,
                    "content": text,
                    "occurred_at": at,
                    "speaker": who,
                    "conversation_id": "standup",
                }
                for i, at, who, text in TURNS
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def test_batch_remember_returns_and_stores_time_and_speaker(client: TestClient) -> None:
    results = remember_turns(client)["results"]
    assert [(x["occurred_at"], x["speaker"]) for x in results] == [
        ("2024-05-01T09:00:00Z", "ada"),
        # An offset is converted to UTC.
        ("2024-05-01T07:01:00Z", "bob"),
        ("2024-05-01T09:02:00Z", "ada"),
    ]
    got = client.get(f"{URL}/t1", headers=ALPHA).json()
    assert (got["occurred_at"], got["speaker"]) == ("2024-05-01T09:00:00Z", "ada")


def test_occurred_at_defaults_to_when_it_was_remembered(client: TestClient) -> None:
    r = client.post(
        URL, json={"content": "The build cache lives on the shared runner disk"}, headers=ALPHA
    )
    assert r.status_code == 201
    assert r.json()["speaker"] is None
    got = client.get(f"{URL}/{r.json()['id']}", headers=ALPHA).json()
    assert got["occurred_at"] == got["created_at"] and got["speaker"] is None


def test_patch_corrects_time_and_speaker_and_the_turn_order(
    client: TestClient, service: Hippocampus
) -> None:
    remember_turns(client)
    # t2 happened at 07:01 UTC, so it is first: t2, t1, t3.
    assert service.store.neighbour_turns(C, ["t1"], before=1, after=1) == {"t1": (["t2"], ["t3"])}
    r = client.patch(
        f"{URL}/t2",
        json={"occurred_at": "2024-05-01T09:01:00Z", "speaker": "carol"},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    assert (r.json()["occurred_at"], r.json()["speaker"]) == ("2024-05-01T09:01:00Z", "carol")
    assert service.store.neighbour_turns(C, ["t2"], before=1, after=1) == {"t2": (["t1"], ["t3"])}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "ok", "occurred_at": "yesterday"}, "occurred_at"),
        ({"content": "ok", "occurred_at": "2024-05-01T09:00:00"}, "occurred_at"),
        ({"content": "ok", "speaker": ""}, "speaker"),
        ({"content": "ok", "speaker": "x" * 101}, "speaker"),
        (
            {"memories": [{"content": "a"}, {"content": "b", "occurred_at": 1e30}]},
            "memories.1.occurred_at",
        ),
    ],
)
def test_bad_time_or_speaker_is_422_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    r = client.post(URL, json=body, headers=ALPHA)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field


def test_a_speaker_with_control_characters_is_refused_by_the_engine(client: TestClient) -> None:
    r = client.post(
        URL,
        json={
            "memories": [
                {"content": "a fine memory"},
                {"content": "another fine memory", "speaker": "a\u200bb"},
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "memories.1.speaker"
    stats = client.get(f"/v1/collections/{C}/stats", headers=ALPHA).json()
    assert stats["memories"] == 0


def test_patch_with_a_naive_time_is_422(client: TestClient) -> None:
    remember_turns(client)
    r = client.patch(f"{URL}/t1", json={"occurred_at": "2024-05-01 09:00"}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "occurred_at"


def _recalled(client: TestClient, filters: dict[str, Any]) -> set[str]:
    r = client.post(
        RECALL, json={"query": "kafka partitions", "limit": 10, "filters": filters}, headers=ALPHA
    )
    assert r.status_code == 200, r.text
    hits = r.json()["results"]
    for hit in hits:
        assert "occurred_at" in hit["memory"] and "speaker" in hit["memory"]
    return {hit["id"] for hit in hits}


def test_recall_filters_by_time_and_speaker(client: TestClient) -> None:
    remember_turns(client)
    assert _recalled(client, {}) == {"t1", "t2", "t3"}
    assert _recalled(client, {"speakers": ["ada"]}) == {"t1", "t3"}
    assert _recalled(
        client,
        {"occurred_after": "2024-05-01T09:00:00Z", "occurred_before": "2024-05-01T09:02:00Z"},
    ) == {"t1"}
    assert _recalled(client, {"occurred_before": "2024-05-01T09:00:00Z"}) == {"t2"}


def test_speaker_filters_ignore_case_and_say_when_nothing_was_said(client: TestClient) -> None:
    remember_turns(client)
    assert _recalled(client, {"speakers": ["ADA"]}) == {"t1", "t3"}
    r = client.post(
        RECALL,
        json={"query": "kafka partitions", "filters": {"speakers": ["maria"]}},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"] == []
    assert any("'maria'" in w for w in r.json()["warnings"]), r.json()["warnings"]


def test_recall_filter_with_a_bad_time_is_422(client: TestClient) -> None:
    r = client.post(
        RECALL,
        json={"query": "kafka", "filters": {"occurred_after": "2024-05-01"}},
        headers=ALPHA,
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "filters.occurred_after"


def test_turns_route_reads_the_conversation_around_a_memory(client: TestClient) -> None:
    remember_turns(client)
    # Said after the fact: it happened between t1 and t3.
    r = client.post(
        URL,
        json={
            "id": "t1b",
            "content": "Carol asks whether the Kafka consumers rebalance too often",
            "occurred_at": "2024-05-01T09:01:30Z",
            "speaker": "carol",
            "conversation_id": "standup",
        },
        headers=ALPHA,
    )
    assert r.status_code == 201, r.text
    body = client.get(f"{URL}/t1/turns?before=5&after=5", headers=ALPHA).json()
    assert body["memory"]["id"] == "t1"
    assert [m["id"] for m in body["before"]] == ["t2"]
    assert [m["id"] for m in body["after"]] == ["t1b", "t3"]
    assert body["after"][0]["speaker"] == "carol"

    assert client.delete(f"{URL}/t1b", headers=ALPHA).status_code == 204
    body = client.get(f"{URL}/t1/turns?after=1&before=0", headers=ALPHA).json()
    assert ([m["id"] for m in body["before"]], [m["id"] for m in body["after"]]) == ([], ["t3"])


def test_turns_of_a_memory_outside_conversations_are_empty(client: TestClient) -> None:
    r = client.post(URL, json={"content": "Deploys freeze on Fridays after noon"}, headers=ALPHA)
    body = client.get(f"{URL}/{r.json()['id']}/turns", headers=ALPHA).json()
    assert (body["before"], body["after"]) == ([], [])
    assert client.get(f"{URL}/nope/turns", headers=ALPHA).status_code == 404
    bad = client.get(f"{URL}/{r.json()['id']}/turns?before=51", headers=ALPHA)
    assert bad.status_code == 422
