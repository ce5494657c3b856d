"""The store contract: memories (add, read, replace, delete, list, find by hash)."""

from __future__ import annotations

import numpy as np
import pytest

from hippocampus.errors import ConflictError, InvalidInputError, NotFoundError
from hippocampus.model import Edge, EdgeType, RecallFilters, Tier
from hippocampus.store import GraphStore, MemoryRecord
from tests.contract.helpers import (
    ABOUT,
    ALL_TIERS,
    ASSOCIATED,
    HAS_TRIGGER,
    IN_DOMAIN,
    MODEL,
    add,
    edge,
    ids,
    memory,
    record,
    vec,
)


def test_store_meets_the_protocol(store: GraphStore) -> None:
    assert isinstance(store, GraphStore)


def test_added_memories_read_back_equal(store: GraphStore, collection: str, other: str) -> None:
    a = memory("a", collection, category="decision", tags=["ops", "db"], domains=["backend"])
    b = memory("b", collection, minutes=1, model=None)
    store.add_memories(collection, [record(a), record(b)])
    found = store.get_memories(collection, ["b", "a", "ghost", "a"])
    assert found == {"a": a, "b": b}
    assert store.get_memories(other, ["a"]) == {}
    assert store.get_memories(collection, []) == {}


def test_a_memory_stored_without_a_vector_has_no_embedding_model(
    store: GraphStore, collection: str
) -> None:
    m = memory("a", collection)
    store.add_memories(collection, [MemoryRecord(memory=m)])
    assert store.get_memories(collection, ["a"])["a"].embedding_model is None
    assert store.get_vectors(collection, ["a"]) == {}


def test_add_is_all_or_nothing_when_an_id_exists(store: GraphStore, collection: str) -> None:
    add(store, collection, ["a"])
    with pytest.raises(ConflictError):
        store.add_memories(
            collection,
            [record(memory("b", collection)), record(memory("a", collection, content="new"))],
        )
    assert set(store.get_memories(collection, ["a", "b"])) == {"a"}
    assert store.get_memories(collection, ["a"])["a"].content == "memory a"


def test_add_refuses_an_id_repeated_in_the_batch(store: GraphStore, collection: str) -> None:
    with pytest.raises(ConflictError):
        store.add_memories(
            collection, [record(memory("a", collection)), record(memory("a", collection))]
        )
    assert store.get_memories(collection, ["a"]) == {}


def test_add_refuses_inconsistent_records(store: GraphStore, collection: str, other: str) -> None:
    with pytest.raises(InvalidInputError):
        store.add_memories(collection, [record(memory("a", other))])
    with pytest.raises(InvalidInputError):
        store.add_memories(collection, [record(memory("a", collection), [edge("b", ABOUT, "x")])])
    with pytest.raises(InvalidInputError):
        m = memory("a", collection, model=None)
        store.add_memories(collection, [MemoryRecord(memory=m, vector=vec(1))])
    with pytest.raises(InvalidInputError):
        bad = np.full(8, np.nan, dtype=np.float32)
        store.add_memories(collection, [MemoryRecord(memory=memory("a", collection), vector=bad)])
    assert store.get_memories(collection, ["a"]) == {}


def test_iter_memories_gives_every_memory_oldest_first_across_pages(
    store: GraphStore, collection: str
) -> None:
    # Past one page (500) of every store's paging; added newest first.
    n = 620
    records = [
        MemoryRecord(memory=memory(f"m{i:04d}", collection, minutes=i)) for i in reversed(range(n))
    ]
    for start in range(0, n, 200):
        store.add_memories(collection, records[start : start + 200])
    listed = [m.id for m in store.iter_memories(collection)]
    assert listed == [f"m{i:04d}" for i in range(n)]


def test_find_by_hash_returns_every_memory_with_that_content(
    store: GraphStore, collection: str, other: str
) -> None:
    same = [memory(i, collection, minutes=n, content="Same text") for n, i in enumerate("ab")]
    store.add_memories(collection, [record(m) for m in [*same, memory("c", collection)]])
    assert store.find_by_hash(collection, same[0].content_hash) == ["a", "b"]
    assert store.find_by_hash(collection, "0" * 64) == []
    assert store.find_by_hash(other, same[0].content_hash) == []


def test_replace_keeps_the_vector_unless_a_new_one_is_given(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a"])
    first = store.get_vectors(collection, ["a"])["a"]
    edited = memory("a", collection, content="edited", category="decision", minutes=5)
    store.replace_memory(collection, MemoryRecord(memory=edited), replace_edges=False)
    got = store.get_memories(collection, ["a"])["a"]
    assert got.content == "edited" and got.category == "decision"
    assert got.embedding_model == MODEL
    np.testing.assert_array_equal(store.get_vectors(collection, ["a"])["a"], first)

    other_model = edited.model_copy(update={"embedding_model": "other-model"})
    store.replace_memory(
        collection, MemoryRecord(memory=other_model, vector=vec(99)), replace_edges=False
    )
    assert store.get_memories(collection, ["a"])["a"].embedding_model == "other-model"
    np.testing.assert_array_equal(store.get_vectors(collection, ["a"])["a"], vec(99))


def test_replace_with_drop_vector_leaves_the_memory_pending_and_out_of_vector_search(
    store: GraphStore, collection: str
) -> None:
    add(
        store,
        collection,
        [memory("a", collection, tags=["ops"]), memory("b", collection, minutes=1)],
        [edge("a", ABOUT, "redis")],
    )
    old = vec("a")
    assert store.search_vectors(collection, old, model=MODEL, k=5, filters=ALL_TIERS)[0][0] == "a"
    assert store.count_pending_embeddings(collection, MODEL) == 0

    edited = memory("a", collection, content="edited text", tags=["ops"], minutes=5)
    store.replace_memory(
        collection, MemoryRecord(memory=edited, drop_vector=True), replace_edges=False
    )

    got = store.get_memories(collection, ["a"])["a"]
    assert got.content == "edited text" and got.embedding_model is None
    assert store.get_vectors(collection, ["a"]) == {}
    found = store.search_vectors(collection, old, model=MODEL, k=5, filters=ALL_TIERS)
    assert "a" not in ids(found) and "b" in ids(found)
    assert [m.id for m in store.pending_embeddings(collection, MODEL, 10)] == ["a"]
    assert store.count_pending_embeddings(collection, MODEL) == 1
    assert store.stats(collection).pending_embeddings == 1
    # Still a memory of the collection: filtered, found by its new text and by its edges.
    with_tag = RecallFilters(tiers=list(Tier), tags=["ops"])
    assert ids(store.search_text(collection, "edited", k=5, filters=with_tag)) == ["a"]
    assert [e.target for e in store.edges_of(collection, "a")] == ["redis"]

    store.set_vectors(collection, [("a", vec("edited"), MODEL)])
    assert store.get_memories(collection, ["a"])["a"].embedding_model == MODEL
    assert store.count_pending_embeddings(collection, MODEL) == 0
    hits = store.search_vectors(collection, vec("edited"), model=MODEL, k=1, filters=ALL_TIERS)
    assert ids(hits) == ["a"]


def test_replace_refuses_a_vector_given_and_dropped_at_once(
    store: GraphStore, collection: str
) -> None:
    add(store, collection, ["a"])
    with pytest.raises(InvalidInputError):
        store.replace_memory(
            collection,
            MemoryRecord(memory=memory("a", collection), vector=vec(1), drop_vector=True),
            replace_edges=False,
        )
    np.testing.assert_array_equal(store.get_vectors(collection, ["a"])["a"], vec("a"))


def test_replace_of_an_absent_memory_is_not_found(store: GraphStore, collection: str) -> None:
    with pytest.raises(NotFoundError):
        store.replace_memory(
            collection, MemoryRecord(memory=memory("ghost", collection)), replace_edges=True
        )


def test_replace_edges_swaps_hub_edges_keeps_memory_edges_and_prunes_orphan_hubs(
    store: GraphStore, collection: str
) -> None:
    add(
        store,
        collection,
        ["a", "b"],
        [
            edge("a", ABOUT, "redis"),
            edge("a", IN_DOMAIN, "backend"),
            edge("b", ABOUT, "redis"),
            edge("a", ASSOCIATED, "b", 0.7),
        ],
    )
    store.replace_memory(
        collection,
        MemoryRecord(
            memory=memory("a", collection),
            edges=(edge("a", ABOUT, "kafka", 0.4), edge("a", HAS_TRIGGER, "deploy", 0.6)),
        ),
        replace_edges=True,
    )
    assert [(e.type, e.target, e.weight) for e in store.edges_of(collection, "a")] == [
        (ABOUT, "kafka", 0.4),
        (ASSOCIATED, "b", 0.7),
        (HAS_TRIGGER, "deploy", 0.6),
    ]
    hubs = {(h.kind, h.name, h.degree) for h in store.match_hubs(collection, ["redis", "backend"])}
    assert hubs == {("Concept", "redis", 1)}  # backend lost its last edge


def test_delete_removes_the_memory_its_edges_and_orphan_hubs(
    store: GraphStore, collection: str
) -> None:
    add(
        store,
        collection,
        ["a", "b"],
        [
            edge("a", ABOUT, "redis"),
            edge("a", ABOUT, "only-a"),
            edge("b", ABOUT, "redis"),
            edge("b", ASSOCIATED, "a"),
        ],
    )
    store.upsert_edges(collection, [Edge(source="a", type=EdgeType.CONFLICTS_WITH, target="b")])
    assert store.delete_memory(collection, "a") is True
    assert store.get_memories(collection, ["a"]) == {}
    assert [e.target for e in store.edges_of(collection, "b")] == ["redis"]
    assert all(e.source != "a" and e.target != "a" for e in store.iter_edges(collection))
    assert [h.name for h in store.match_hubs(collection, ["redis", "only-a"])] == ["redis"]
    assert store.delete_memory(collection, "a") is False
    assert [m.id for m in store.iter_memories(collection)] == ["b"]
