"""Seed rules over REST: co-use, and what /stats reports of them."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.helpers import ALPHA, BETA, remember

BASE = "/v1/collections/team:alpha"


def _used_together(
    client: TestClient, body: dict[str, Any], headers: dict[str, str] = ALPHA
) -> Any:
    return client.post(f"{BASE}/memories/used-together", json=body, headers=headers)


def test_co_use_over_rest_takes_an_edge_past_what_recall_can(client: TestClient) -> None:
    a = remember(client, "Raise the redis pool size before the holiday sale")["id"]
    b = remember(client, "Add a wait timeout to the pgbouncer connection queue")["id"]
    weights = []
    for _ in range(5):
        r = _used_together(client, {"ids": [a, b], "context": ["connection pool"]})
        assert r.status_code == 200, r.text
        (edge,) = r.json()["edges"]
        assert edge["type"] == "ASSOCIATED"
        weights.append(edge["weight"])
    assert [round(w, 6) for w in weights] == [0.3, 0.4, 0.5, 0.6, 0.7]
    assert weights[-1] > 0.6
    graph = client.get(f"{BASE}/graph", params={"center": a, "depth": 1}, headers=ALPHA).json()
    assert any(
        e["type"] == "ABOUT" and e["target"] == "Concept:connection pool" for e in graph["edges"]
    )


def test_co_use_names_the_bad_field_and_hides_other_collections(client: TestClient) -> None:
    a = remember(client, "Raise the redis pool size before the holiday sale")["id"]
    one = _used_together(client, {"ids": [a]})
    assert one.status_code == 422 and one.json()["error"]["field"] == "ids"
    missing = _used_together(client, {"ids": [a, "no-such-memory"]})
    assert missing.status_code == 404
    other = client.post(f"{BASE}/memories/used-together", json={"ids": [a, a]}, headers=BETA)
    assert other.status_code == 404


def test_stats_and_metrics_report_quality_retrievals_and_surfacing_figures(
    client: TestClient,
) -> None:
    remember(client, "Raise the redis pool size before the holiday sale because it ran out")
    r = client.post(f"{BASE}/recall", json={"query": "redis pool"}, headers=ALPHA)
    assert r.status_code == 200
    stats = client.get(f"{BASE}/stats?graph=false", headers=ALPHA).json()
    assert stats["retrieval_count"] == 1
    assert 0.0 < stats["average_quality"] <= 1.0
    surfacing = stats["surfacing"]
    assert {"mean_lead_time", "calibration_error", "decay_effectiveness"} <= set(surfacing)
    metrics = client.get("/metrics", headers=ALPHA).text
    assert 'hippo_retrievals_total{collection="team:alpha"} 1' in metrics
    assert 'hippo_average_quality{collection="team:alpha"}' in metrics
    assert "# TYPE hippo_confidence_calibration_error gauge" in metrics
