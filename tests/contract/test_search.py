"""The store contract: dense search over vectors, re-embedding, lexical search."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import RecallFilters, Tier
from hippocampus.store import GraphStore, MemoryRecord
from tests.contract.helpers import ALL_TIERS, MODEL, ids, memory, record, unit, vec


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# -- dense ------------------------------------------------------------------------------


def test_search_ranks_by_cosine_similarity_best_first(
    store: GraphStore, collection: str, other: str
) -> None:
    query = vec("query")
    # Vectors at known angles to the query: each is query + t * noise.
    noise = unit(vec("noise"))
    vectors = {f"m{t}": unit(query) + t * noise for t in (0.1, 0.5, 1.0, 2.0, 4.0)}
    store.add_memories(
        collection, [record(memory(i, collection), vector=v) for i, v in vectors.items()]
    )
    store.add_memories(other, [record(memory("elsewhere", other), vector=query)])
    hits = store.search_vectors(collection, query, model=MODEL, k=3, filters=RecallFilters())
    assert ids(hits) == ["m0.1", "m0.5", "m1.0"]
    for memory_id, similarity in hits:
        assert similarity == pytest.approx(_cosine(query, vectors[memory_id]), abs=1e-5)
    everything = store.search_vectors(collection, query, model=MODEL, k=50, filters=ALL_TIERS)
    assert ids(everything) == ["m0.1", "m0.5", "m1.0", "m2.0", "m4.0"]


def test_close_neighbours_are_told_apart_and_an_identical_vector_scores_one(
    store: GraphStore, collection: str
) -> None:
    # Differences far below what a quantized index resolves (its scores are
    # approximate and its order loose): the answer must still be the exact
    # cosine, in exact order, through the index as through a scan.
    query = unit(vec("query"))
    noise = unit(vec("noise"))
    vectors = {f"n{i}": unit(query + (0.01 * i) * noise) for i in (3, 1, 4, 2)}
    vectors["same"] = query
    store.add_memories(
        collection, [record(memory(i, collection), vector=v) for i, v in vectors.items()]
    )
    hits = store.search_vectors(collection, query, model=MODEL, k=4, filters=RecallFilters())
    assert ids(hits) == ["same", "n1", "n2", "n3"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-6)
    for memory_id, similarity in hits:
        assert similarity == pytest.approx(_cosine(query, vectors[memory_id]), abs=1e-6)
    (many,) = store.search_vectors_many(
        collection, query.reshape(1, -1), model=MODEL, k=4, filters=RecallFilters()
    )
    assert ids(many) == ids(hits)
    assert [s for _, s in many] == pytest.approx([s for _, s in hits], abs=1e-6)


def test_search_applies_every_filter(store: GraphStore, collection: str) -> None:
    query = vec("query")
    near = [unit(query) + 0.1 * i * unit(vec(i)) for i in range(6)]
    rows = [
        memory("active", collection, category="decision", tags=["ops"], domains=["backend"]),
        memory("archived", collection, tier=Tier.ARCHIVED, category="decision"),
        memory("quarantined", collection, tier=Tier.QUARANTINED),
        memory("tagged", collection, tags=["ops", "db"]),
        memory("in-conv", collection, domains=["backend"], conversations=["c-1"]),
        memory("plain", collection),
    ]
    store.add_memories(collection, [record(m, vector=v) for m, v in zip(rows, near, strict=True)])

    def found(filters: RecallFilters) -> set[str]:
        return set(ids(store.search_vectors(collection, query, model=MODEL, k=10, filters=filters)))

    assert found(RecallFilters()) == {"active", "tagged", "in-conv", "plain"}
    assert found(RecallFilters(tiers=[Tier.ARCHIVED, Tier.QUARANTINED])) == {
        "archived",
        "quarantined",
    }
    assert found(RecallFilters(categories=["decision"], tiers=list(Tier))) == {
        "active",
        "archived",
    }
    assert found(RecallFilters(tags=["db", "nothing"])) == {"tagged"}
    assert found(RecallFilters(tags=["ops"], domains=["backend"])) == {"active"}
    assert found(RecallFilters(domains=["backend"])) == {"active", "in-conv"}
    assert found(RecallFilters(exclude_conversation_id="c-1")) == {"active", "tagged", "plain"}


def test_search_sees_only_vectors_of_the_requested_model(
    store: GraphStore, collection: str
) -> None:
    query = vec("query")
    store.add_memories(
        collection,
        [
            record(memory("mine", collection), vector=unit(query) + 0.5 * unit(vec(1))),
            record(memory("theirs", collection, model="other-model"), vector=query),
            MemoryRecord(memory=memory("none", collection, model=None)),
        ],
    )
    assert ids(store.search_vectors(collection, query, model=MODEL, k=5, filters=ALL_TIERS)) == [
        "mine"
    ]
    other = store.search_vectors(collection, query, model="other-model", k=5, filters=ALL_TIERS)
    assert ids(other) == ["theirs"]
    assert other[0][1] == pytest.approx(1.0, abs=1e-5)
    assert store.search_vectors(collection, query, model="nobody", k=5, filters=ALL_TIERS) == []


def test_vectors_of_another_dimension_are_searched_among_themselves(
    store: GraphStore, collection: str
) -> None:
    query = vec("small", dim=16)
    small = {f"s{i}": unit(query) + 0.3 * i * unit(vec(i, dim=16)) for i in range(4)}
    store.add_memories(
        collection,
        [record(memory(i, collection, model="small"), vector=v) for i, v in small.items()],
    )
    hits = store.search_vectors(collection, query, model="small", k=3, filters=ALL_TIERS)
    assert ids(hits) == ["s0", "s1", "s2"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    # A query of the wrong size finds nothing; so does a zero query.
    assert store.search_vectors(collection, vec(1), model="small", k=3, filters=ALL_TIERS) == []
    zero = np.zeros(16, dtype=np.float32)
    assert store.search_vectors(collection, zero, model="small", k=3, filters=ALL_TIERS) == []


def test_set_vectors_updates_existing_memories_and_skips_missing(
    store: GraphStore, collection: str
) -> None:
    store.add_memories(collection, [MemoryRecord(memory=memory("a", collection, model=None))])
    store.set_vectors(collection, [("a", vec(7), "new-model"), ("ghost", vec(8), "new-model")])
    assert store.get_memories(collection, ["a"])["a"].embedding_model == "new-model"
    assert set(store.get_vectors(collection, ["a", "ghost"])) == {"a"}
    np.testing.assert_array_equal(store.get_vectors(collection, ["a"])["a"], vec(7))
    hits = store.search_vectors(collection, vec(7), model="new-model", k=1, filters=ALL_TIERS)
    assert ids(hits) == ["a"]
    with pytest.raises(InvalidInputError):
        store.set_vectors(collection, [("a", vec(7), "")])
    with pytest.raises(InvalidInputError):
        store.set_vectors(collection, [("a", np.array([np.inf], dtype=np.float32), "m")])


def test_pending_embeddings_lists_missing_and_stale_vectors_oldest_first(
    store: GraphStore, collection: str
) -> None:
    store.add_memories(
        collection,
        [
            MemoryRecord(memory=memory("late", collection, minutes=3, model=None)),
            record(memory("current", collection, minutes=0)),
            record(memory("stale", collection, minutes=2, model="old-model")),
            MemoryRecord(memory=memory("early", collection, minutes=1, model=None)),
        ],
    )
    pending = store.pending_embeddings(collection, MODEL, 10)
    assert [m.id for m in pending] == ["early", "stale", "late"]
    assert [m.id for m in store.pending_embeddings(collection, MODEL, 2)] == ["early", "stale"]
    assert store.pending_embeddings(collection, MODEL, 0) == []


def test_count_pending_embeddings_counts_what_pending_embeddings_lists(
    store: GraphStore, collection: str, other: str
) -> None:
    assert store.count_pending_embeddings(collection, MODEL) == 0
    store.add_memories(
        collection,
        [
            MemoryRecord(memory=memory("none", collection, model=None)),
            record(memory("current", collection, minutes=1)),
            record(memory("stale", collection, minutes=2, model="old-model")),
            MemoryRecord(memory=memory("none-2", collection, minutes=3, model=None)),
        ],
    )
    store.add_memories(other, [MemoryRecord(memory=memory("elsewhere", other, model=None))])
    assert store.count_pending_embeddings(collection, MODEL) == 3
    assert store.count_pending_embeddings(collection, MODEL) == len(
        store.pending_embeddings(collection, MODEL, 100)
    )
    # For the old model, everything but its own vector is pending.
    assert store.count_pending_embeddings(collection, "old-model") == 3
    store.set_vectors(collection, [("none", vec("none"), MODEL), ("stale", vec("stale"), MODEL)])
    assert store.count_pending_embeddings(collection, MODEL) == 1
    assert store.count_pending_embeddings(other, MODEL) == 1
    store.delete_memory(collection, "none-2")
    assert store.count_pending_embeddings(collection, MODEL) == 0


def _near_rows(store: GraphStore, collection: str, other: str) -> np.ndarray:
    """Memories around three queries, some filtered out, some in another collection
    or by another model; returns the queries (and a zero row) as a matrix."""
    queries = [vec("q0"), vec("q1"), vec("q2")]
    rows = []
    for q, query in enumerate(queries):
        for n in range(4):
            rows.append(
                record(
                    memory(
                        f"q{q}-{n}",
                        collection,
                        minutes=q * 4 + n,
                        category="decision" if n % 2 else "insight",
                        tier=Tier.ARCHIVED if n == 3 else Tier.ACTIVE,
                        conversations=["c-1"] if n == 0 else [],
                    ),
                    vector=unit(query) + 0.2 * (n + 1) * unit(vec(f"noise-{q}-{n}")),
                )
            )
    rows.append(record(memory("theirs", collection, model="other-model"), vector=queries[0]))
    store.add_memories(collection, rows)
    store.add_memories(other, [record(memory("elsewhere", other), vector=queries[1])])
    return np.stack([*queries, np.zeros(len(queries[0]), dtype=np.float32)])


@pytest.mark.parametrize(
    "filters",
    [
        RecallFilters(),
        ALL_TIERS,
        RecallFilters(categories=["decision"], tiers=list(Tier)),
        RecallFilters(exclude_conversation_id="c-1"),
    ],
    ids=["active", "all-tiers", "category", "not-in-conversation"],
)
@pytest.mark.parametrize("k", [1, 3, 20])
def test_search_vectors_many_answers_each_row_as_search_vectors_does(
    store: GraphStore, collection: str, other: str, filters: RecallFilters, k: int
) -> None:
    queries = _near_rows(store, collection, other)
    many = store.search_vectors_many(collection, queries, model=MODEL, k=k, filters=filters)
    assert len(many) == len(queries)
    for query, hits in zip(queries, many, strict=True):
        one = store.search_vectors(collection, query, model=MODEL, k=k, filters=filters)
        assert ids(hits) == ids(one)
        assert [s for _, s in hits] == pytest.approx([s for _, s in one], abs=1e-5)
    assert many[-1] == []  # the zero row
    # Each row is its own query's answer, not another row's.
    assert [ids(hits)[0].split("-")[0] for hits in many[:3]] == ["q0", "q1", "q2"]
    assert not {"theirs", "elsewhere"} & {i for hits in many for i in ids(hits)}


def test_search_vectors_many_finds_nothing_where_search_vectors_finds_nothing(
    store: GraphStore, collection: str, other: str
) -> None:
    queries = _near_rows(store, collection, other)
    none = RecallFilters()
    assert store.search_vectors_many(collection, queries, model=MODEL, k=0, filters=none) == [
        [],
        [],
        [],
        [],
    ]
    assert store.search_vectors_many(collection, queries, model="nobody", k=3, filters=none) == [
        [],
        [],
        [],
        [],
    ]
    assert store.search_vectors_many(
        other, queries[:1], model="other-model", k=3, filters=none
    ) == [[]]
    empty = np.zeros((0, queries.shape[1]), dtype=np.float32)
    assert store.search_vectors_many(collection, empty, model=MODEL, k=3, filters=none) == []


def test_search_vectors_many_searches_vectors_of_another_dimension_among_themselves(
    store: GraphStore, collection: str
) -> None:
    queries = np.stack([vec("small-a", dim=16), vec("small-b", dim=16)])
    store.add_memories(
        collection,
        [
            record(memory(f"s{q}{i}", collection, model="small"), vector=v)
            for q, query in enumerate(queries)
            for i, v in enumerate(unit(query) + 0.3 * i * unit(vec(i, dim=16)) for i in range(3))
        ],
    )
    many = store.search_vectors_many(collection, queries, model="small", k=2, filters=ALL_TIERS)
    assert [ids(hits) for hits in many] == [["s00", "s01"], ["s10", "s11"]]
    assert many[0][0][1] == pytest.approx(1.0, abs=1e-5)
    # Queries of the wrong size find nothing.
    wrong = np.stack([vec(1), vec(2)])
    assert store.search_vectors_many(collection, wrong, model="small", k=2, filters=ALL_TIERS) == [
        [],
        [],
    ]


def test_similarities_are_the_cosines_dense_search_gives(
    store: GraphStore, collection: str, other: str
) -> None:
    query = vec("query")
    noise = unit(vec("noise"))
    vectors = {f"m{t}": 3.0 * (unit(query) + t * noise) for t in (0.2, 1.0, 5.0)}
    store.add_memories(
        collection,
        [
            *(record(memory(i, collection), vector=v) for i, v in vectors.items()),
            record(memory("other-model", collection, model="other-model"), vector=query),
            record(memory("small", collection, model="small"), vector=vec("small", dim=16)),
            record(memory("bare", collection, model=None)),
        ],
    )
    store.add_memories(other, [record(memory("m0.2", other), vector=-query)])
    wanted = ["m5.0", "m0.2", "ghost", "other-model", "small", "bare", "m1.0", "m0.2"]
    found = store.similarities(collection, wanted, query, model=MODEL)
    assert set(found) == set(vectors)  # of the model, in this collection
    searched = dict(store.search_vectors(collection, query, model=MODEL, k=10, filters=ALL_TIERS))
    for memory_id, v in vectors.items():
        assert found[memory_id] == pytest.approx(_cosine(query, v), abs=1e-5)
        assert found[memory_id] == pytest.approx(searched[memory_id], abs=1e-5)
    assert store.similarities(collection, ["m0.2"], 2.5 * query, model=MODEL) == pytest.approx(
        {"m0.2": found["m0.2"]}, abs=1e-5
    )
    zero = np.zeros_like(query)
    assert store.similarities(collection, ["m0.2"], zero, model=MODEL) == {}
    assert store.similarities(collection, ["m0.2"], vec(1, dim=16), model=MODEL) == {}
    small = store.similarities(collection, ["small"], vec("small", dim=16), model="small")
    assert small == pytest.approx({"small": 1.0}, abs=1e-5)
    assert store.similarities(collection, [], query, model=MODEL) == {}
    assert store.similarities(collection, ["m0.2"], query, model="nobody") == {}


# -- lexical ----------------------------------------------------------------------------

_DOCS = {
    "pool": "The nightly export failed: the Postgres connection pool was exhausted",
    "cache": "Redis cache eviction under memory pressure slowed the dashboard",
    "lunch": "Team lunch moved to Friday",
    "pool-2": "Connection timeouts again; we resized the pool and the export recovered",
}


def _add_docs(store: GraphStore, collection: str) -> None:
    store.add_memories(
        collection,
        [
            record(memory(i, collection, content=text, minutes=n, tags=["ops"] if n else []))
            for n, (i, text) in enumerate(_DOCS.items())
        ],
    )


def test_search_text_ranks_memories_sharing_query_words_best_first(
    store: GraphStore, collection: str
) -> None:
    _add_docs(store, collection)
    hits = store.search_text(collection, "Postgres connection pool", k=5, filters=ALL_TIERS)
    assert ids(hits)[0] == "pool"
    assert set(ids(hits)) == {"pool", "pool-2"}
    scores = [score for _, score in hits]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)
    assert ids(store.search_text(collection, "redis", k=5, filters=ALL_TIERS)) == ["cache"]


def test_text_neighbours_are_the_memories_sharing_the_most_words_of_any_tier(
    store: GraphStore, collection: str, other: str
) -> None:
    _add_docs(store, collection)
    store.add_memories(
        collection,
        [
            record(
                memory(
                    "pool-archived",
                    collection,
                    content="Postgres connection pool exhausted during the export",
                    tier=Tier.ARCHIVED,
                )
            )
        ],
    )
    store.add_memories(other, [record(memory("pool", other, content=_DOCS["pool"]))])
    text = "The nightly export failed because the Postgres connection pool was exhausted"
    found = store.text_neighbours(collection, text, k=5)
    assert found[0] == "pool"
    assert set(found) == {"pool", "pool-archived", "pool-2"}
    assert store.text_neighbours(collection, text, k=1) == ["pool"]
    assert store.text_neighbours(collection, "quarterly roadmap", k=5) == []
    assert store.text_neighbours(collection, text, k=0) == []


def test_search_text_finds_nothing_without_shared_words(
    store: GraphStore, collection: str, other: str
) -> None:
    _add_docs(store, collection)
    assert store.search_text(collection, "kubernetes ingress", k=5, filters=ALL_TIERS) == []
    assert store.search_text(collection, "?! ()", k=5, filters=ALL_TIERS) == []
    assert store.search_text(other, "redis cache", k=5, filters=ALL_TIERS) == []


def test_search_text_applies_filters(store: GraphStore, collection: str) -> None:
    _add_docs(store, collection)
    assert ids(
        store.search_text(collection, "connection pool", k=5, filters=RecallFilters(tags=["ops"]))
    ) == ["pool-2"]
    store.replace_memory(
        collection,
        MemoryRecord(
            memory=memory("pool-2", collection, content=_DOCS["pool-2"], tier=Tier.ARCHIVED)
        ),
        replace_edges=False,
    )
    assert ids(store.search_text(collection, "connection pool", k=5, filters=RecallFilters())) == [
        "pool"
    ]


def test_set_vectors_stamps_when_the_vector_was_made(store: GraphStore, collection: str) -> None:
    store.add_memories(collection, [MemoryRecord(memory=memory("a", collection, model=None))])
    at = datetime(2026, 5, 4, 3, 2, 1, tzinfo=UTC)
    store.set_vectors(collection, [("a", vec(7), "new-model")], at=at)
    stored = store.get_memories(collection, ["a"])["a"]
    assert (stored.embedding_model, stored.embedding_generated_at) == ("new-model", at)
    assert next(iter(store.iter_memories(collection))) == stored
    store.set_vectors(collection, [("a", vec(8), "newer-model")])
    assert store.get_memories(collection, ["a"])["a"].embedding_generated_at is None


# -- crowding ---------------------------------------------------------------------------


def test_crowding_is_the_mean_similarity_of_the_nearest_other_memories(
    store: GraphStore, collection: str, other: str
) -> None:
    base = unit(vec("theme"))
    vectors = {f"near{i}": unit(base + 0.3 * unit(vec(f"near{i}"))) for i in range(3)}
    vectors["apart"] = unit(vec("apart"))
    store.add_memories(
        collection, [record(memory(i, collection), vector=v) for i, v in vectors.items()]
    )
    store.add_memories(collection, [record(memory("pending", collection, model=None))])
    # Another collection's twin of "apart" is no neighbour of it.
    store.add_memories(other, [record(memory("twin", other), vector=vectors["apart"])])
    wanted = [*vectors, "pending", "unknown"]
    crowding = store.crowding(collection, wanted, model=MODEL)
    assert set(crowding) == set(vectors)
    # Four memories: each one's neighbours are the three others, itself never.
    for mid, v in vectors.items():
        others = [_cosine(v, w) for o, w in vectors.items() if o != mid]
        assert crowding[mid] == pytest.approx(sum(others) / 3, abs=1e-5)
    assert min(crowding[f"near{i}"] for i in range(3)) > crowding["apart"]
    assert store.crowding(collection, wanted, model="another-model") == {}


def test_vectors_read_again_at_once_follow_every_write_between(
    store: GraphStore, collection: str
) -> None:
    # One recall reads the same vectors a few times (dense search, crowding,
    # variety): a store may answer the later reads from the earlier ones, but a
    # re-embedding, an edit that drops the vector or a deletion in between is seen.
    vectors = {f"m{i}": unit(vec(f"m{i}")) for i in range(6)}
    store.add_memories(
        collection, [record(memory(i, collection), vector=v) for i, v in vectors.items()]
    )
    for _ in range(2):
        store.search_vectors(collection, vectors["m0"], model=MODEL, k=4, filters=ALL_TIERS)
        assert set(store.crowding(collection, list(vectors), model=MODEL)) == set(vectors)
        read = store.get_vectors(collection, list(vectors))
        for mid, v in vectors.items():
            np.testing.assert_allclose(read[mid], v, atol=1e-7)

    store.set_vectors(collection, [("m0", vec("again"), MODEL), ("m1", vec("m1"), "another")])
    np.testing.assert_array_equal(store.get_vectors(collection, ["m0"])["m0"], vec("again"))
    np.testing.assert_array_equal(store.get_vectors(collection, ["m1"])["m1"], vec("m1"))
    measured = store.crowding(collection, list(vectors), model=MODEL)
    assert set(measured) == {"m0", "m2", "m3", "m4", "m5"}

    edited = memory("m2", collection, content="edited")
    store.replace_memory(
        collection, MemoryRecord(memory=edited, drop_vector=True), replace_edges=False
    )
    assert store.delete_memory(collection, "m3")
    assert set(store.get_vectors(collection, list(vectors))) == {"m0", "m1", "m4", "m5"}
    assert set(store.crowding(collection, list(vectors), model=MODEL)) == {"m0", "m4", "m5"}
