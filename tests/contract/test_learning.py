"""The store contract: what use teaches the graph (reinforcement) and what time takes
from it (decay)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.learn.rules import (
    BARE_RETRIEVAL,
    REAL_USE,
    DecayPolicy,
    Reinforcement,
    decay_period,
    decayed_weight,
    reinforced_weight,
)
from hippocampus.model import Edge, EdgeType, EdgeUpdate
from hippocampus.store import GraphStore
from tests.contract.helpers import (
    ABOUT,
    ASSOCIATED,
    T0,
    D,
    add,
    concept,
    edge,
    expand,
    factor,
    memory,
    seed,
)


def update(
    source: str,
    target: str,
    edge_type: EdgeType = ASSOCIATED,
    *,
    at: datetime = T0,
    delta: float = 0.1,
    cap: float = 1.0,
    initial: float = 0.3,
    kind: str | None = "co_retrieval",
    create: bool = True,
) -> EdgeUpdate:
    return EdgeUpdate(
        source=source,
        type=edge_type,
        target=target,
        delta=delta,
        cap=cap,
        initial=initial,
        at=at,
        kind=kind,
        create=create,
    )


def test_a_new_edge_starts_at_initial_with_its_counters(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a", "b"])
    at = T0 + timedelta(days=2)
    store.reinforce_edges(collection, [update("b", "a", at=at, initial=0.25)])
    expected = Edge(
        source="a",
        type=ASSOCIATED,
        target="b",
        weight=0.25,
        co_occurrences=1,
        last_co_occurred=at,
        created_at=at,
        kind="co_retrieval",
    )
    assert store.edges_of(collection, "a") == [expected]
    assert store.edges_of(collection, "b") == [
        expected.model_copy(update={"source": "b", "target": "a"})
    ]
    assert store.stats(collection).edges == {"ASSOCIATED": 1}
    assert expand(store, collection, [seed("a")])["b"].strength == pytest.approx(D * 0.25)


def test_reinforcement_adds_delta_up_to_the_cap_and_counts(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"], [edge("a", ABOUT, "cache", 0.5)])
    for day in range(6):
        at = T0 + timedelta(days=day)
        store.reinforce_edges(
            collection,
            [
                update("a", "b", at=at, cap=0.6),
                update("a", "cache", ABOUT, at=at, delta=0.2, kind=None),
            ],
        )
    edges = {e.type: e for e in store.edges_of(collection, "a")}
    assert edges[ASSOCIATED].weight == pytest.approx(0.6)
    assert edges[ASSOCIATED].co_occurrences == 6
    assert edges[ASSOCIATED].last_co_occurred == T0 + timedelta(days=5)
    assert edges[ASSOCIATED].created_at == T0
    assert edges[ABOUT].weight == pytest.approx(1.0)
    assert edges[ABOUT].co_occurrences == 6
    assert edges[ABOUT].created_at == T0  # its memory's creation: it came with it


def test_reinforcement_never_lowers_a_weight_above_its_cap(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])
    store.upsert_edges(collection, [edge("a", ASSOCIATED, "b", 0.9)])
    store.reinforce_edges(collection, [update("a", "b", cap=0.6, delta=0.02)])
    (e,) = store.edges_of(collection, "a")
    assert e.weight == pytest.approx(0.9) and e.co_occurrences == 1


def test_reinforcement_creates_hubs_and_skips_what_cannot_exist(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])
    store.reinforce_edges(
        collection,
        [
            update("a", "fresh concept", ABOUT, kind=None),
            update("a", "ghost"),
            update("ghost", "a"),
            update("ghost", "topic", ABOUT),
            update("a", "a"),
            update("b", "a", EdgeType.CONFLICTS_WITH, kind=None),
        ],
    )
    stats = store.stats(collection)
    assert stats.edges == {"ABOUT": 1, "CONFLICTS_WITH": 1}
    assert stats.hubs == {"Concept": 1}
    found = store.match_hubs(collection, ["fresh concept", "topic"])
    assert [(h.name, h.degree) for h in found] == [("fresh concept", 1)]
    assert [e.target for e in store.edges_of(collection, "b")] == ["a"]
    assert expand(store, collection, [concept("fresh concept")])["a"].strength == pytest.approx(
        D * factor(1) * 0.3
    )


def test_an_update_that_may_not_create_only_strengthens_existing_edges(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b", "c"], [edge("a", ABOUT, "known", 0.5)])
    later = T0 + timedelta(days=1)
    store.reinforce_edges(
        collection,
        [
            update("a", "b", create=False),
            update("a", "unknown", ABOUT, create=False, kind=None),
            update("a", "c", EdgeType.CONFLICTS_WITH, create=False, kind=None),
            update("a", "known", ABOUT, create=False, kind=None, at=later),
            # In order: created by the first, strengthened by the second.
            update("b", "c", create=True),
            update("b", "c", create=False),
        ],
    )
    stats = store.stats(collection)
    assert stats.edges == {"ABOUT": 1, "ASSOCIATED": 1}
    assert stats.hubs == {"Concept": 1}
    assert store.match_hubs(collection, ["unknown"]) == []
    (known,) = store.edges_of(collection, "a")
    assert (known.target, known.weight, known.co_occurrences) == ("known", pytest.approx(0.6), 1)
    assert known.last_co_occurred == later
    (bc,) = [e for e in store.edges_of(collection, "b") if e.target == "c"]
    assert (bc.weight, bc.co_occurrences) == (pytest.approx(0.4), 2)


def test_updates_of_one_edge_in_one_batch_apply_in_order(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b"])
    store.reinforce_edges(collection, [update("a", "b"), update("b", "a"), update("a", "b")])
    (e,) = store.edges_of(collection, "a")
    assert e.weight == pytest.approx(0.5) and e.co_occurrences == 3


def test_decay_lowers_only_edges_unused_before_the_cutoff(
    store: GraphStore, collection: str
) -> None:
    add(
        store,
        collection,
        [memory("old", collection), memory("young", collection, minutes=100 * 24 * 60), "other"],
        [
            edge("old", ABOUT, "cache", 0.5),
            edge("young", ABOUT, "cache", 0.5),
            edge("old", ABOUT, "near-floor", 0.12),
            edge("old", ABOUT, "at-floor", 0.1),
        ],
    )
    # Created long ago but reinforced recently: not decayed.
    store.reinforce_edges(collection, [update("old", "other", at=T0 + timedelta(days=90))])
    cutoff = T0 + timedelta(days=50)
    decayed = store.decay_edges(collection, period="p1", unused_before=cutoff, step=0.05, floor=0.1)
    assert decayed == 2
    weights = {e.target: e.weight for e in store.edges_of(collection, "old")}
    assert weights == pytest.approx(
        {"cache": 0.45, "near-floor": 0.1, "at-floor": 0.1, "other": 0.3}
    )
    assert {e.target: e.weight for e in store.edges_of(collection, "young")} == {"cache": 0.5}
    found = expand(store, collection, [concept("cache")], hub_degree_penalty=False)
    assert found["old"].strength == pytest.approx(D * 0.45)


def test_decay_is_idempotent_per_period(store: GraphStore, collection: str, other: str) -> None:
    add(store, collection, ["a"], [edge("a", ABOUT, "cache", 0.5)])
    add(store, other, ["a"], [edge("a", ABOUT, "cache", 0.5)])
    later = T0 + timedelta(days=200)

    def decay(where: str, period: str) -> int:
        return store.decay_edges(where, period=period, unused_before=later, step=0.05, floor=0.1)

    assert decay(collection, "2024-09-17") == 1
    assert decay(collection, "2024-09-17") == 0
    assert store.edges_of(collection, "a")[0].weight == pytest.approx(0.45)
    assert decay(other, "2024-09-17") == 1  # periods are per collection
    assert decay(collection, "2024-09-18") == 1
    assert store.edges_of(collection, "a")[0].weight == pytest.approx(0.4)


def test_decay_reorders_hub_fanout(store: GraphStore, collection: str) -> None:
    add(
        store,
        collection,
        [memory("a", collection), memory("b", collection, minutes=100 * 24 * 60)],
        [edge("a", ABOUT, "hub", 0.6), edge("b", ABOUT, "hub", 0.55)],
    )
    assert list(expand(store, collection, [concept("hub")], hub_fanout=1)) == ["a"]
    cutoff = T0 + timedelta(days=50)
    store.decay_edges(collection, period="p", unused_before=cutoff, step=0.1, floor=0.1)
    assert list(expand(store, collection, [concept("hub")], hub_fanout=1)) == ["b"]


def test_decay_refuses_bad_arguments(store: GraphStore, collection: str) -> None:
    with pytest.raises(InvalidInputError):
        store.decay_edges(collection, period="", unused_before=T0, step=0.05, floor=0.1)
    with pytest.raises(InvalidInputError):
        store.decay_edges(collection, period="p", unused_before=T0, step=-0.1, floor=0.1)
    with pytest.raises(InvalidInputError):
        store.decay_edges(collection, period="p", unused_before=T0, step=0.05, floor=1.5)


def test_evidence_that_may_not_create_counts_only_on_existing_edges(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a", "b", "c"])
    store.upsert_edges(collection, [edge("a", ASSOCIATED, "b", 0.4)])
    weak = {"delta": 0.0, "cap": 0.0, "initial": 0.0}
    store.reinforce_edges(
        collection,
        [
            update("a", "b", **weak).model_copy(update={"create": False}),
            update("a", "c", **weak).model_copy(update={"create": False}),
            update("a", "new hub", ABOUT, kind=None, **weak).model_copy(update={"create": False}),
        ],
    )
    edges = store.edges_of(collection, "a")
    assert [(e.target, e.weight, e.co_occurrences) for e in edges] == [("b", 0.4, 1)]
    assert not store.match_hubs(collection, ["new hub"])


def test_decay_limited_to_some_types_leaves_the_others(store: GraphStore, collection: str) -> None:
    add(
        store,
        collection,
        ["a", "b"],
        [edge("a", ABOUT, "cache", 0.5), edge("a", EdgeType.IN_DOMAIN, "ops", 0.5)],
    )
    store.upsert_edges(collection, [edge("a", EdgeType.ASSOCIATED, "b", 0.5)])
    later = T0 + timedelta(days=400)
    decayed = store.decay_edges(
        collection,
        period="p",
        unused_before=later,
        step=0.05,
        floor=0.1,
        types=[EdgeType.ASSOCIATED],
    )
    assert decayed == 1
    weights = {(e.type, e.target): e.weight for e in store.edges_of(collection, "a")}
    assert weights == pytest.approx(
        {(ABOUT, "cache"): 0.5, (EdgeType.IN_DOMAIN, "ops"): 0.5, (EdgeType.ASSOCIATED, "b"): 0.45}
    )
    found = expand(store, collection, [concept("cache")], hub_degree_penalty=False)
    assert found["a"].strength == pytest.approx(D * 0.5)
    found = expand(store, collection, [seed("b")], hub_degree_penalty=False)
    assert found["a"].strength == pytest.approx(D * 0.45)


# -- the store's arithmetic is learn's ---------------------------------------------

REINFORCEMENT_CASES: list[tuple[float | None, Reinforcement]] = [
    (None, REAL_USE),
    (0.05, REAL_USE),
    (0.3, REAL_USE),
    (0.95, REAL_USE),
    (1.0, REAL_USE),
    (0.9, Reinforcement(delta=0.02, cap=0.6, initial=0.3)),
    (0.55, Reinforcement(delta=0.2, cap=0.6, initial=0.3)),
    (None, Reinforcement(delta=0.1, cap=1.0, initial=0.25, create=False)),
    (0.4, Reinforcement(delta=0.1, cap=1.0, initial=0.25, create=False)),
    (None, BARE_RETRIEVAL),
    (0.4, BARE_RETRIEVAL),
]


def test_reinforcement_is_the_arithmetic_of_the_learning_rules(
    store: GraphStore, collection: str
) -> None:
    # Each store computes weights in its own language (Python, SQL, Cypher):
    # on the same cases they must give what hippocampus.learn says.
    pairs = [(f"a{i}", f"b{i}") for i in range(len(REINFORCEMENT_CASES))]
    add(store, collection, [m for pair in pairs for m in pair])
    store.upsert_edges(
        collection,
        [
            edge(a, ASSOCIATED, b, weight)
            for (a, b), (weight, _) in zip(pairs, REINFORCEMENT_CASES, strict=True)
            if weight is not None
        ],
    )
    store.reinforce_edges(
        collection,
        [
            update(a, b, delta=rule.delta, cap=rule.cap, initial=rule.initial, create=rule.create)
            for (a, b), (_, rule) in zip(pairs, REINFORCEMENT_CASES, strict=True)
        ],
    )
    for (a, b), (weight, rule) in zip(pairs, REINFORCEMENT_CASES, strict=True):
        found = [e.weight for e in store.edges_of(collection, a) if e.target == b]
        expected = reinforced_weight(weight, rule)
        assert found == ([] if expected is None else [pytest.approx(expected)]), (weight, rule)


def test_decay_is_the_arithmetic_of_the_learning_rules(store: GraphStore, collection: str) -> None:
    policy = DecayPolicy()
    now = T0 + timedelta(days=400)
    cases = [
        (weight, idle)
        for weight in (0.08, 0.1, 0.12, 0.15, 0.5, 1.0)
        for idle in (timedelta(days=10), policy.unused_for, policy.unused_for + timedelta(hours=1))
    ]
    pairs = [(f"a{i}", f"b{i}") for i in range(len(cases))]
    add(store, collection, [m for pair in pairs for m in pair])
    store.upsert_edges(
        collection,
        [edge(a, ASSOCIATED, b, w) for (a, b), (w, _) in zip(pairs, cases, strict=True)],
    )
    # Last used `idle` before now: counted on the edge, its weight left as it is.
    store.reinforce_edges(
        collection,
        [
            update(a, b, at=now - idle, delta=0.0, cap=0.0, initial=0.0, create=False)
            for (a, b), (_, idle) in zip(pairs, cases, strict=True)
        ],
    )
    store.decay_edges(
        collection,
        period=decay_period(now),
        unused_before=now - policy.unused_for,
        step=policy.step,
        floor=policy.floor,
    )
    for (a, b), (weight, idle) in zip(pairs, cases, strict=True):
        (found,) = [e.weight for e in store.edges_of(collection, a) if e.target == b]
        expected = decayed_weight(weight, now - idle, now, policy)
        assert found == pytest.approx(expected), (weight, idle)
