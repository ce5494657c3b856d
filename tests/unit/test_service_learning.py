"""Learning changes retrieval: co-use builds edges recall walks; disuse decays them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import EdgeType, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "team:payments"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)

QUERY = "redis connection pool exhausted under checkout load"
PARTNER = "Raise pgbouncer max_client_conn before the holiday sale"
DISTRACTORS = [
    "Redis connection pool exhausted under checkout load on Black Friday",
    "Redis cluster failover dropped connections for two minutes",
    "Checkout load test showed the pool size was too small for redis",
    "Connection pool settings for redis documented in the runbook",
    "Redis memory fragmentation under sustained load",
    "Exhausted file descriptors on the checkout hosts",
    "Checkout latency alarms fire when redis is slow",
    "Pool exhaustion in the HTTP client caused checkout retries",
    "Load balancer drained connections during the redis upgrade",
    "Under heavy load the redis pool needs a wait timeout",
]


OPERATOR = "operator"


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    # Notes from the trusted operator are stored however short: these tests use
    # placeholder texts and give the concepts themselves.
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    yield service
    service.close()


def _ids(svc: Hippocampus) -> tuple[str, str]:
    outs = svc.remember_many(
        C, [NewMemory(content=text) for text in [*DISTRACTORS, PARTNER]], now=T0
    )
    return outs[0].memory.id, outs[-1].memory.id


def _remember_with(svc: Hippocampus, content: str, *, concepts: list[str]) -> str:
    note = NewMemory(content=content, concepts=concepts, source=OPERATOR)
    return svc.remember(C, note, now=T0).memory.id


def _associated_weight(svc: Hippocampus, a: str, b: str) -> float | None:
    for edge in svc.store.edges_of(C, a):
        if edge.type == EdgeType.ASSOCIATED and b in (edge.source, edge.target):
            return edge.weight
    return None


def test_repeated_co_use_brings_the_partner_up_with_the_path_explained(
    svc: Hippocampus,
) -> None:
    top, partner = _ids(svc)
    before = svc.recall(C, QUERY, limit=3, learn=False, now=T0)
    assert before.hits[0].memory.id == top
    assert partner not in [h.memory.id for h in before.hits]

    for day in range(5):
        svc.record_use(C, [top, partner], now=T0 + timedelta(days=day))
    assert _associated_weight(svc, top, partner) == pytest.approx(0.7)

    after = svc.recall(C, QUERY, limit=3, explain=True, learn=False, now=T0)
    found = {h.memory.id: h for h in after.hits}
    assert partner in found
    paths = found[partner].paths
    assert paths
    walked = [(p.anchor.name, [(s.type, s.name) for s in p.steps]) for p in paths]
    assert (top, [(EdgeType.ASSOCIATED, partner)]) in walked


def test_months_of_disuse_decay_the_learned_edge_once_per_day(svc: Hippocampus) -> None:
    top, partner = _ids(svc)
    for day in range(5):
        svc.record_use(C, [top, partner], now=T0 + timedelta(days=day))
    last_use = T0 + timedelta(days=4)

    assert svc.decay(C, now=last_use + timedelta(days=30)) == 0
    assert _associated_weight(svc, top, partner) == pytest.approx(0.7)

    later = last_use + timedelta(days=200)
    assert svc.decay(C, now=later) > 0
    assert _associated_weight(svc, top, partner) == pytest.approx(0.65)
    assert svc.decay(C, now=later + timedelta(hours=1)) == 0  # same day: no second decay
    assert _associated_weight(svc, top, partner) == pytest.approx(0.65)
    svc.decay(C, now=later + timedelta(days=1))
    assert _associated_weight(svc, top, partner) == pytest.approx(0.6)


def test_a_hundred_repeats_of_one_recall_leave_its_order_and_weights_unchanged(
    svc: Hippocampus,
) -> None:
    _ids(svc)
    shown = svc.recall(C, QUERY, limit=5, learn=False, now=T0)
    first, second = shown.hits[0].memory.id, shown.hits[1].memory.id
    svc.record_use(C, [first, second], now=T0)  # one learned association to walk
    before = svc.recall(C, QUERY, limit=5, learn=False, now=T0)
    edges_before = {(e.source, e.type, e.target): e.weight for e in svc.store.iter_edges(C)}
    for i in range(100):
        svc.recall(C, QUERY, limit=5, now=T0 + timedelta(minutes=i))
    svc.flush_learning()
    after = svc.recall(C, QUERY, limit=5, learn=False, now=T0)
    assert [h.memory.id for h in after.hits] == [h.memory.id for h in before.hits]
    edges_after = {(e.source, e.type, e.target): e.weight for e in svc.store.iter_edges(C)}
    assert edges_after == edges_before  # no weight moved, no edge created
    # The recalls still count as evidence on the edge their results share.
    shared = next(
        e
        for e in svc.store.edges_of(C, first)
        if e.type == EdgeType.ASSOCIATED and second in (e.source, e.target)
    )
    assert shared.co_occurrences > 1


def test_use_after_repeated_recalls_still_reinforces_by_the_seed_rule(svc: Hippocampus) -> None:
    top, partner = _ids(svc)
    for _ in range(20):
        svc.recall(C, QUERY, limit=5, now=T0)
    svc.flush_learning()
    assert _associated_weight(svc, top, partner) is None  # bare recalls created nothing
    svc.record_use(C, [top, partner], now=T0)
    assert _associated_weight(svc, top, partner) == pytest.approx(0.3)
    svc.record_use(C, [top, partner], now=T0)
    assert _associated_weight(svc, top, partner) == pytest.approx(0.4)


def test_associate_returns_every_holder_of_a_named_hub_strongest_first(
    svc: Hippocampus,
) -> None:
    svc.remember_many(
        C,
        [
            NewMemory(content="a", concepts=["redis", "connection pool"], source=OPERATOR),
            NewMemory(content="b", concepts=["redis"], source=OPERATOR),
            NewMemory(content="c", concepts=["kafka"], source=OPERATOR),
        ],
    )
    found = svc.associate(C, ["redis", "connection pool"]).results
    assert [a.memory.content for a in found] == ["a", "b"]
    assert [a.anchors for a in found] == [2, 1]
    assert found[0].strength > found[1].strength
    nothing = svc.associate(C, ["nothing known"])
    assert nothing.results == []
    assert nothing.warnings == ["'nothing known' names no hub and no tag in this collection"]


def test_associate_reaches_through_memories_only_past_the_gate(svc: Hippocampus) -> None:
    holder, partner = (
        _remember_with(svc, "a", concepts=["redis"]),
        _remember_with(svc, "b", concepts=["kafka"]),
    )
    svc.record_use(C, [holder, partner], now=T0)  # ASSOCIATED at 0.3
    # Through the holder: 0.4 (ABOUT) x 0.3 (ASSOCIATED) = 0.12.
    assert [a.memory.id for a in svc.associate(C, ["redis"]).results] == [holder]
    reached = svc.associate(C, ["redis"], min_path_strength=0.1).results
    assert [a.memory.id for a in reached] == [holder, partner]
    assert [len(p.steps) for p in reached[1].paths] == [2]


def test_graph_around_a_memory_shows_its_hubs(svc: Hippocampus) -> None:
    mem = svc.remember(
        C, NewMemory(content="x", concepts=["redis"], domains=["ops"], source=OPERATOR)
    ).memory
    graph = svc.subgraph(C, mem.id)
    ids = {n.id for n in graph.nodes}
    assert {f"Memory:{mem.id}", "Concept:redis", "Domain:ops"} <= ids
    assert {(e.type, e.target) for e in graph.edges} >= {(EdgeType.ABOUT, "redis")}
    around_hub = svc.subgraph(C, "Concept:redis")
    assert f"Memory:{mem.id}" in {n.id for n in around_hub.nodes}


def test_graph_health_counts_nodes_edges_and_components(svc: Hippocampus) -> None:
    svc.remember_many(
        C,
        [
            NewMemory(content="a", concepts=["redis"], triggers=[], domains=[], source=OPERATOR),
            NewMemory(content="b", concepts=["redis"], triggers=[], domains=[], source=OPERATOR),
            NewMemory(content="c", concepts=["kafka"], triggers=[], domains=[], source=OPERATOR),
        ],
    )
    health = svc.graph_health(C)
    assert health.nodes_by_kind == {"Memory": 3, "Concept": 2}
    assert health.edges_by_type == {"ABOUT": 3}
    assert health.components == 2
    assert health.largest_component == 3
    assert health.mean_degree == pytest.approx(2 * 3 / 5)
    assert sum(health.weight_histogram) == 3
