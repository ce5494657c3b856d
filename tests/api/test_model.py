"""Recall with the real MiniLM model: meaning, not shared words."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.api.app import create_app
from hippocampus.demo import DEMO_MEMORIES
from hippocampus.embed import SentenceTransformerEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
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


def test_recall_prefers_what_happened_when_the_question_says_and_shows_how_it_read_it(
    minilm_client: TestClient,
) -> None:
    # The demo's notes, a week or so apart from January to August 2025, and three
    # fixes by Tom: by meaning alone the April one ranks last of the three.
    start = datetime(2025, 1, 6, tzinfo=UTC)
    notes = [
        {
            "content": m.content,
            "category": m.category,
            "occurred_at": (start + timedelta(days=6 * i)).isoformat(),
        }
        for i, m in enumerate(DEMO_MEMORIES)
    ]
    fixes = [
        ("2025-02-11T10:00:00Z", "Tom fixed the flaky login test: the session cookie expired "
         "between two steps of the test, so the test now refreshes it first."),
        ("2025-04-15T16:00:00Z", "Tom fixed the CSV export, which dropped every row with a "
         "comma inside a quoted field; the exporter now uses the csv module's quoting."),
        ("2025-07-08T09:00:00Z", "Tom fixed the payment client's retry loop, which never gave "
         "up; it now stops after five attempts and reports the last error."),
    ]  # fmt: skip
    r = minilm_client.post(
        "/v1/collections/team:alpha/memories",
        json={
            "memories": notes
            + [{"content": c, "category": "bug_fix", "occurred_at": at} for at, c in fixes]
        },
        headers=ALPHA,
    )
    assert r.status_code == 201
    february, april, july = [item["id"] for item in r.json()["results"][-3:]]

    def recall(query: str, **more: Any) -> dict[str, Any]:
        r = minilm_client.post(
            "/v1/collections/team:alpha/recall", json={"query": query, **more}, headers=ALPHA
        )
        assert r.status_code == 200
        body: dict[str, Any] = r.json()
        return body

    untimed = [hit["id"] for hit in recall("what did Tom fix")["results"]]
    assert untimed.index(april) > max(untimed.index(february), untimed.index(july))

    body = recall("what did Tom fix in April")
    assert body["times"] == [
        {"phrase": "in April", "start": "2025-04-01T00:00:00Z", "end": "2025-05-01T00:00:00Z"}
    ]
    results = body["results"]
    assert results[0]["id"] == april
    assert results[0]["time"] > 0
    rank = {hit["id"]: i for i, hit in enumerate(results)}
    assert rank[february] < len(results) and rank[july] < len(results)
    assert results[rank[february]]["time"] is None and results[rank[july]]["time"] is None

    # Asked from another moment, "last week" is the week before that moment.
    asked = recall("what did Tom fix last week", as_of="2025-04-21T12:00:00Z")
    assert asked["times"] == [
        {"phrase": "last week", "start": "2025-04-14T00:00:00Z", "end": "2025-04-21T00:00:00Z"}
    ]
    timed = {hit["id"]: hit for hit in asked["results"]}
    assert timed[april]["time"] > 0 and timed[july]["time"] is None
    ranked = list(timed)
    assert ranked.index(april) < ranked.index(february)  # last of the three untimed
    later = recall("what did Tom fix last week", as_of="2025-07-14T12:00:00Z")
    assert later["times"][0]["start"] == "2025-07-07T00:00:00Z"
    assert later["results"][0]["id"] == july and later["results"][0]["time"] > 0
    naive = minilm_client.post(
        "/v1/collections/team:alpha/recall",
        json={"query": "what did Tom fix", "as_of": "2025-04-21T12:00:00"},
        headers=ALPHA,
    )
    assert naive.status_code == 422 and naive.json()["error"]["field"] == "as_of"
