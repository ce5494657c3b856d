"""Recipes and explanations on recall; /associate, /graph, /maintenance/decay and
graph health in /stats."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hippocampus.demo import load_demo
from hippocampus.service import Hippocampus
from tests.api.helpers import ALPHA, BETA, OPERATOR, remember

BASE = "/v1/collections/team:alpha"


def test_recall_takes_a_recipe_and_names_it(client: TestClient) -> None:
    remember(client, "Payment gateway timeouts during checkout")
    for recipe in ["BM25", "DENSE", "HYBRID", "HYBRID_GRAPH", "WEIGHTED", "seed_composite"]:
        r = client.post(
            f"{BASE}/recall", json={"query": "gateway timeouts", "recipe": recipe}, headers=ALPHA
        )
        assert r.status_code == 200, r.text
        assert r.json()["recipe"] == recipe.upper()
        assert r.json()["results"]


def test_unknown_recipe_is_422_naming_the_field(client: TestClient) -> None:
    r = client.post(f"{BASE}/recall", json={"query": "x", "recipe": "MAGIC"}, headers=ALPHA)
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "recipe"


def test_explain_returns_real_paths(client: TestClient) -> None:
    remember(client, "Redis pool exhausted", concepts=["redis", "connection pool"])
    remember(client, "Raise the pool limit", concepts=["redis", "connection pool"])
    r = client.post(
        f"{BASE}/recall",
        json={"query": "redis connection pool", "explain": True, "recipe": "HYBRID_GRAPH"},
        headers=ALPHA,
    )
    assert r.status_code == 200, r.text
    paths = [p for hit in r.json()["results"] for p in hit["paths"]]
    assert paths
    for p in paths:
        assert p["steps"] and p["strength"] > 0
        assert p["steps"][-1]["kind"] == "Memory"


def test_associate_ranks_memories_holding_two_concepts_above_those_holding_one(
    client: TestClient,
) -> None:
    both = remember(client, "Redis pool exhausted", concepts=["redis", "connection pool"])
    one = remember(client, "Redis eviction", concepts=["redis"])
    r = client.post(
        f"{BASE}/associate", json={"context": ["redis", "connection pool"]}, headers=ALPHA
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [x["id"] for x in results] == [both["id"], one["id"]]
    assert [x["anchors"] for x in results] == [2, 1] and results[0]["paths"]
    assert r.json()["warnings"] == []


def test_associate_on_a_hub_of_fifty_memories_returns_them_strongest_first(
    client: TestClient,
) -> None:
    r = client.post(
        f"{BASE}/memories",
        json={
            "memories": [
                {"content": f"The nightly migrations of shard {i} finished in {i + 3} minutes"}
                for i in range(50)
            ]
        },
        headers=ALPHA,
    )
    assert r.status_code == 201, r.text
    ids = [x["id"] for x in r.json()["results"]]
    # Feedback strengthens three memories' edges to the concept, unequally.
    for times, memory_id in zip((3, 2, 1), (ids[40], ids[7], ids[22]), strict=True):
        for _ in range(times):
            client.post(
                f"{BASE}/memories/{memory_id}/feedback",
                json={"helpful": True, "context": ["migration"]},
                headers=ALPHA,
            )
    r = client.post(
        f"{BASE}/associate", json={"context": ["Migrations"], "limit": 50}, headers=ALPHA
    )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert sorted(x["id"] for x in results) == sorted(ids)
    assert [x["id"] for x in results[:3]] == [ids[40], ids[7], ids[22]]
    strengths = [x["strength"] for x in results]
    assert strengths == sorted(strengths, reverse=True)
    # Normalised by the hub's degree, as recall's walk is: a trigger edge's 0.5
    # shared by 50 memories.
    assert strengths[-1] == pytest.approx(0.5 / 50)


def test_associate_warns_of_a_context_that_names_nothing(client: TestClient) -> None:
    remember(client, "Postgres migrations lock the orders table", source=OPERATOR)
    r = client.post(
        f"{BASE}/associate", json={"context": ["migrations", "zeppelin"]}, headers=ALPHA
    )
    assert r.status_code == 200, r.text
    assert r.json()["results"]
    assert r.json()["warnings"] == ["'zeppelin' names no hub and no tag in this collection"]
    r = client.post(f"{BASE}/associate", json={"context": ["use"]}, headers=ALPHA)
    assert r.json()["results"] == []
    assert r.json()["warnings"] == [
        "'use' names no hub and no tag in this collection (a word this common is no hub)"
    ]


def test_the_readme_associate_example_finds_the_migration_memories(
    client: TestClient, service: Hippocampus
) -> None:
    load_demo(service, "team:alpha")
    mine = [
        remember(client, text, source=OPERATOR)["id"]
        for text in (
            "Run the Postgres migrations before the deploy, never during it",
            "Two migrations locked the orders table for a minute on Monday",
        )
    ]
    r = client.post(f"{BASE}/associate", json={"context": ["Migrations"]}, headers=ALPHA)
    assert r.status_code == 200, r.text
    assert sorted(x["id"] for x in r.json()["results"]) == sorted(mine)
    assert r.json()["warnings"] == []
    deploys = _associate(client, "deploy")
    assert {"demo-canary-deploys", "demo-k8s-probes"} <= {x["id"] for x in deploys}


def test_associate_validates_its_body(client: TestClient) -> None:
    r = client.post(f"{BASE}/associate", json={"context": []}, headers=ALPHA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "context"
    r = client.post(f"{BASE}/associate", json={"context": ["x"], "max_depth": 4}, headers=ALPHA)
    assert r.status_code == 422 and r.json()["error"]["field"] == "max_depth"


def test_graph_draws_the_neighbourhood_of_a_memory(client: TestClient) -> None:
    mem = remember(client, "Redis pool exhausted", concepts=["redis"], domains=["ops"])
    r = client.get(f"{BASE}/graph", params={"center": mem["id"], "depth": 2}, headers=ALPHA)
    assert r.status_code == 200, r.text
    ids = {n["id"] for n in r.json()["nodes"]}
    assert {f"Memory:{mem['id']}", "Concept:redis", "Domain:ops"} <= ids
    r = client.get(f"{BASE}/graph", params={"center": "Concept:redis"}, headers=ALPHA)
    assert f"Memory:{mem['id']}" in {n["id"] for n in r.json()["nodes"]}


def test_graph_edge_ends_are_node_ids_even_where_names_are_shared(client: TestClient) -> None:
    # "postgres" is both a Concept and a Trigger: bare ends could not say which.
    remember(
        client,
        "Postgres migrations lock the table",
        concepts=["postgres"],
        triggers=["postgres", "migration"],
        tags=["migrations"],
    )
    remember(client, "Postgres vacuum runs nightly", concepts=["postgres"], domains=["ops"])
    r = client.get(
        f"{BASE}/graph", params={"center": "Concept:postgres", "depth": 2}, headers=ALPHA
    )
    assert r.status_code == 200, r.text
    body = r.json()
    ids = {n["id"] for n in body["nodes"]}
    assert {"Concept:postgres", "Trigger:postgres"} <= ids
    assert body["edges"]
    for edge in body["edges"]:
        assert edge["source"] in ids and edge["target"] in ids, edge
        assert edge["source"].startswith("Memory:")


def test_graph_takes_its_own_node_ids_as_center(client: TestClient) -> None:
    mem = remember(client, "Redis pool exhausted", concepts=["redis"])
    r = client.get(f"{BASE}/graph", params={"center": f"Memory:{mem['id']}"}, headers=ALPHA)
    assert r.status_code == 200, r.text
    assert r.json()["center"] == f"Memory:{mem['id']}"
    assert "Concept:redis" in {n["id"] for n in r.json()["nodes"]}
    missing = client.get(f"{BASE}/graph", params={"center": "Memory:nope"}, headers=ALPHA)
    assert missing.status_code == 404


def test_graph_of_an_unknown_or_foreign_center_is_404(client: TestClient) -> None:
    mem = remember(client, "secret", concepts=["launch"], source=OPERATOR)
    assert client.get(f"{BASE}/graph", params={"center": "nope"}, headers=ALPHA).status_code == 404
    foreign = client.get(
        "/v1/collections/team:beta/graph", params={"center": mem["id"]}, headers=BETA
    )
    assert foreign.status_code == 404


def test_decay_route_runs_one_pass_per_day(client: TestClient) -> None:
    remember(client, "something old", source=OPERATOR)
    r = client.post(f"{BASE}/maintenance/decay", headers=ALPHA)
    assert r.status_code == 200, r.text
    assert r.json() == {"collection": "team:alpha", "decayed": 0}


def test_stats_include_graph_health(client: TestClient, service: Hippocampus) -> None:
    remember(client, "a", concepts=["redis"], triggers=[], domains=[], source=OPERATOR)
    remember(client, "b", concepts=["redis"], triggers=[], domains=[], source=OPERATOR)
    body = client.get(f"{BASE}/stats", headers=ALPHA).json()
    graph = body["graph"]
    assert graph["nodes_by_kind"] == {"Memory": 2, "Concept": 1}
    assert graph["edges_by_type"] == {"ABOUT": 2}
    assert graph["components"] == 1
    assert client.get(f"{BASE}/stats?graph=false", headers=ALPHA).json()["graph"] is None


def test_stats_of_a_large_graph_never_kept_compute_it_apart(
    client: TestClient, service: Hippocampus
) -> None:
    remember(client, "a", concepts=["redis"], triggers=[], domains=[], source=OPERATOR)
    remember(client, "b", concepts=["redis"], triggers=[], domains=[], source=OPERATOR)
    service.statistics.inline_graph_health_edges = 1  # two edges: "large"
    body = client.get(f"{BASE}/stats", headers=ALPHA).json()
    assert body["graph"] is None
    assert any("graph health of 2 edges is being computed" in w for w in body["warnings"])
    deadline = time.monotonic() + 30.0
    while service.graph_health_due("team:alpha") and time.monotonic() < deadline:
        time.sleep(0.02)
    graph = client.get(f"{BASE}/stats", headers=ALPHA).json()["graph"]
    assert graph["components"] == 1 and graph["edges_by_type"] == {"ABOUT": 2}
    # Asked for fresh figures, a caller waits for them.
    service.store.put_states("team:alpha", {"graph_health": {"computed_at": "never"}})
    fresh = client.get(f"{BASE}/stats?graph_max_age_s=0", headers=ALPHA).json()
    assert fresh["graph"]["components"] == 1 and not fresh["warnings"]


def _associate(client: TestClient, *context: str) -> list[dict[str, Any]]:
    r = client.post(f"{BASE}/associate", json={"context": list(context)}, headers=ALPHA)
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()["results"]
    return results


def test_associate_matches_context_as_memories_are_extracted(client: TestClient) -> None:
    migrations = remember(
        client,
        "Postgres migrations lock the orders table; run them at night",
        tags=["migrations"],
        source=OPERATOR,
    )
    tokens = remember(
        client, "Rotate the API tokens every ninety days", domains=["security"], source=OPERATOR
    )
    cache = remember(
        client,
        "Cache invalidation after deploys goes through the queue",
        tags=["redis"],
        source=OPERATOR,
    )
    # Case and inflection: the memory's trigger is the lemma "migration".
    assert migrations["id"] in {x["id"] for x in _associate(client, "Migrations")}
    assert migrations["id"] in {x["id"] for x in _associate(client, "postgres", "migrations")}
    # A domain is a hub like the others.
    assert tokens["id"] in {x["id"] for x in _associate(client, "security")}
    # A caller's tag counts, though tags are not hubs.
    tagged = {x["id"]: x for x in _associate(client, "redis")}
    assert cache["id"] in tagged and tagged[cache["id"]]["anchors"] == 1


def test_associate_does_not_hop_through_hubs_the_context_did_not_name(
    client: TestClient,
) -> None:
    pooling = remember(
        client,
        "Use connection pooling for Postgres behind the API",
        concepts=["postgres", "pooling"],
        triggers=["postgres", "use"],
        source=OPERATOR,
    )
    flags = remember(
        client,
        "Use feature flags for risky launches",
        concepts=["feature flag"],
        triggers=["use", "launch"],
        source=OPERATOR,
    )
    remember(
        client,
        "Vacuum Postgres tables weekly",
        concepts=["postgres", "pooling"],
        triggers=["postgres"],
        source=OPERATOR,
    )
    found = _associate(client, "postgres", "pooling")
    ids = {x["id"] for x in found}
    assert pooling["id"] in ids
    assert flags["id"] not in ids  # shares only the word "use" with a result
    named = {"postgres", "pooling"}
    for result in found:
        for path in result["paths"]:
            for step in path["steps"][:-1]:
                assert step["kind"] == "Memory" or step["name"] in named, path
