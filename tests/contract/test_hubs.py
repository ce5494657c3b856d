"""The store contract: hub nodes found by name and by the embedding of their name."""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.store import GraphStore
from tests.contract.helpers import ABOUT, HAS_TRIGGER, IN_DOMAIN, MODEL, add, edge, vec


def test_match_hubs_finds_every_kind_by_exact_name_with_its_degree(
    store: GraphStore, collection: str, other: str
) -> None:
    add(
        store,
        collection,
        ["a", "b", "c"],
        [
            edge("a", ABOUT, "cache"),
            edge("b", ABOUT, "cache"),
            edge("c", HAS_TRIGGER, "cache"),
            edge("c", IN_DOMAIN, "cache"),
            edge("a", IN_DOMAIN, "payments"),
        ],
    )
    found = store.match_hubs(collection, ["payments", "Cache", "cache", "payments", "nothing"])
    assert [(h.kind, h.name, h.similarity, h.degree) for h in found] == [
        ("Domain", "payments", 1.0, 1),
        ("Domain", "cache", 1.0, 1),
        ("Trigger", "cache", 1.0, 1),
        ("Concept", "cache", 1.0, 2),
    ]
    assert store.match_hubs(collection, []) == []
    assert store.match_hubs(other, ["cache"]) == []


def test_hub_vectors_are_stored_listed_and_searched(
    store: GraphStore, collection: str, other: str
) -> None:
    add(store, collection, ["a"], [edge("a", ABOUT, n) for n in ("cache", "queue", "pool")])
    add(store, collection, ["b"], [edge("b", ABOUT, "cache"), edge("b", HAS_TRIGGER, "cache")])
    assert store.hubs_without_vectors(collection, MODEL, 10) == [
        ("Concept", "cache"),
        ("Concept", "pool"),
        ("Concept", "queue"),
        ("Trigger", "cache"),
    ]
    cache, queue, noise = (v / np.linalg.norm(v) for v in (vec("cache"), vec("queue"), vec(3)))
    near_cache = (cache + 0.4 * noise).astype(np.float32)
    store.set_hub_vectors(
        collection,
        [
            ("Concept", "cache", cache, MODEL),
            ("Concept", "queue", queue, MODEL),
            ("Trigger", "cache", near_cache, MODEL),
            ("Concept", "ghost", cache, MODEL),  # no such hub: skipped
        ],
    )
    assert store.hubs_without_vectors(collection, MODEL, 10) == [("Concept", "pool")]
    assert store.hubs_without_vectors(collection, "other-model", 2) == [
        ("Concept", "cache"),
        ("Concept", "pool"),
    ]
    assert [(k, n, m) for k, n, _, m in store.iter_hub_vectors(collection)] == [
        ("Concept", "cache", MODEL),
        ("Concept", "queue", MODEL),
        ("Trigger", "cache", MODEL),
    ]
    stored = {(k, n): v for k, n, v, _ in store.iter_hub_vectors(collection)}
    np.testing.assert_array_equal(stored[("Trigger", "cache")], near_cache)

    hits = store.search_hubs(collection, cache, model=MODEL, k=5, min_similarity=0.5)
    assert [(h.kind, h.name, h.degree) for h in hits] == [
        ("Concept", "cache", 2),
        ("Trigger", "cache", 1),
    ]
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    expected = float(np.dot(cache, near_cache) / np.linalg.norm(near_cache))
    assert hits[1].similarity == pytest.approx(expected, abs=1e-5)
    assert len(store.search_hubs(collection, cache, model=MODEL, k=1, min_similarity=-1.0)) == 1
    assert store.search_hubs(collection, cache, model="nobody", k=5, min_similarity=0.0) == []
    assert store.search_hubs(other, cache, model=MODEL, k=5, min_similarity=0.0) == []


def test_a_hub_vector_leaves_with_its_hub(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a", "b"], [edge("a", ABOUT, "cache"), edge("b", ABOUT, "queue")])
    store.set_hub_vectors(
        collection,
        [("Concept", "cache", vec("cache"), MODEL), ("Concept", "queue", vec("queue"), MODEL)],
    )
    store.delete_memory(collection, "a")
    assert [n for _, n, _, _ in store.iter_hub_vectors(collection)] == ["queue"]
    assert store.search_hubs(collection, vec("cache"), model=MODEL, k=5, min_similarity=0.9) == []


def test_set_hub_vectors_refuses_bad_input(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a"], [edge("a", ABOUT, "cache")])
    with pytest.raises(InvalidInputError):
        store.set_hub_vectors(collection, [("Memory", "a", vec(1), MODEL)])
    with pytest.raises(InvalidInputError):
        store.set_hub_vectors(collection, [("Concept", "cache", vec(1), "")])
    with pytest.raises(InvalidInputError):
        bad = np.array([np.nan, 1.0], np.float32)
        store.set_hub_vectors(collection, [("Concept", "cache", bad, MODEL)])
    assert list(store.iter_hub_vectors(collection)) == []
