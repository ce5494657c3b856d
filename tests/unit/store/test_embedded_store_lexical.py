"""EmbeddedStore.search_text: BM25 over memory content, kept in step with writes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from hippocampus.errors import StoreUnavailableError
from hippocampus.lexical import BM25Index
from hippocampus.model import Memory, RecallFilters, RetrievalMeta, Tier
from hippocampus.model import content_hash as hash_of
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
OTHER = "persona:ada"
MODEL = "hashing-8"
T0 = datetime(2024, 1, 1, tzinfo=UTC)
ACTIVE = RecallFilters()
ALL_TIERS = RecallFilters(tiers=list(Tier))

TEXTS = {
    "pool": "Connection pool exhausted in Postgres during the checkout spike",
    "retry": "Retry storm against Redis: added exponential backoff with jitter",
    "dns": "Stale DNS entry after the failover broke the checkout service",
    "tz": "Timezone bug around daylight saving in the nightly reports",
    "pg": "Postgres vacuum fell behind; added an index on orders.customer_id",
}


def memory(
    memory_id: str,
    content: str,
    collection: str = C,
    *,
    minutes: int = 0,
    tier: Tier = Tier.ACTIVE,
    category: str = "insight",
    tags: tuple[str, ...] = (),
    domains: tuple[str, ...] = (),
    conversations: tuple[str, ...] = (),
    model: str | None = MODEL,
) -> Memory:
    at = T0 + timedelta(minutes=minutes)
    return Memory(
        id=memory_id,
        collection=collection,
        content=content,
        category=category,
        tier=tier,
        tags=list(tags),
        created_at=at,
        updated_at=at,
        content_hash=hash_of(content),
        embedding_model=model,
        retrieval=RetrievalMeta(domains=list(domains), conversation_ids=list(conversations)),
    )


def record(m: Memory) -> MemoryRecord:
    vector = None
    if m.embedding_model is not None:
        vector = np.random.default_rng(len(m.id)).standard_normal(8).astype(np.float32)
    return MemoryRecord(memory=m, vector=vector)


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in hits]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    s.add_memories(
        C, [record(memory(i, text, minutes=n)) for n, (i, text) in enumerate(TEXTS.items())]
    )
    yield s
    s.close()


def test_search_text_ranks_by_bm25_over_content(store: EmbeddedStore) -> None:
    reference = BM25Index()
    reference.add_many(TEXTS.items())
    hits = store.search_text(C, "postgres checkout", k=10, filters=ACTIVE)
    assert hits == reference.search("postgres checkout", k=10)
    # "pool" holds both terms; "dns" and "pg" one each, of equal idf: the shorter wins.
    assert ids(hits) == ["pool", "dns", "pg"]
    assert all(score > 0 for _, score in hits)
    assert ids(store.search_text(C, "postgres checkout", k=1, filters=ACTIVE)) == ["pool"]


def test_search_text_finds_nothing_without_shared_terms(store: EmbeddedStore) -> None:
    assert store.search_text(C, "kubernetes", k=5, filters=ACTIVE) == []
    assert store.search_text(C, "the of and", k=5, filters=ACTIVE) == []
    assert store.search_text("empty", "postgres", k=5, filters=ACTIVE) == []


def test_search_text_matches_word_forms(store: EmbeddedStore) -> None:
    assert ids(store.search_text(C, "retries", k=5, filters=ACTIVE)) == ["retry"]
    assert ids(store.search_text(C, "TIMEZONES", k=5, filters=ACTIVE)) == ["tz"]


def test_search_text_applies_filters_like_search_vectors(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(
            C,
            [
                record(memory("a", "kafka lag", category="bug_fix", tags=("infra",))),
                record(memory("b", "kafka lag", category="decision", domains=("data",))),
                record(memory("c", "kafka lag", tags=("infra",), domains=("data",))),
                record(memory("d", "kafka lag", conversations=("conv-1",))),
                record(memory("e", "kafka lag", tier=Tier.ARCHIVED)),
                record(memory("f", "kafka lag", tier=Tier.QUARANTINED, model=None)),
            ],
        )
        cases = [
            (RecallFilters(), ["a", "b", "c", "d"]),
            (ALL_TIERS, ["a", "b", "c", "d", "e", "f"]),
            (RecallFilters(tiers=[Tier.ARCHIVED]), ["e"]),
            (RecallFilters(categories=["bug_fix", "decision"]), ["a", "b"]),
            (RecallFilters(tags=["infra"]), ["a", "c"]),
            (RecallFilters(domains=["data"]), ["b", "c"]),
            (RecallFilters(tags=["infra"], domains=["data"]), ["c"]),
            (RecallFilters(domains=["nowhere"]), []),
            (RecallFilters(exclude_conversation_id="conv-1"), ["a", "b", "c"]),
            (RecallFilters(exclude_conversation_id="conv-9"), ["a", "b", "c", "d"]),
        ]
        for filters, expected in cases:
            assert ids(s.search_text(C, "kafka", k=10, filters=filters)) == expected, filters
            # The same memories pass as in the vector search (the filters are shared).
            vector_ids = s.search_vectors(
                C, np.ones(8, dtype=np.float32), model=MODEL, k=10, filters=filters
            )
            assert set(ids(vector_ids)) == set(expected) - {"f"}


def test_collections_have_their_own_text_index(store: EmbeddedStore) -> None:
    store.add_memories(OTHER, [record(memory("x", "Postgres upgrade plan", OTHER))])
    assert ids(store.search_text(OTHER, "postgres", k=10, filters=ACTIVE)) == ["x"]
    assert "x" not in ids(store.search_text(C, "postgres", k=10, filters=ACTIVE))
    # Document frequencies are per collection too: one document of one.
    alone = BM25Index()
    alone.add("x", "Postgres upgrade plan")
    assert store.search_text(OTHER, "postgres", k=10, filters=ACTIVE) == alone.search(
        "postgres", k=10
    )


def test_the_text_index_is_rebuilt_from_sqlite_on_reopen(tmp_path: Path) -> None:
    queries = ("postgres checkout", "redis retry", "dns failover", "index")
    with EmbeddedStore(tmp_path) as s:
        s.add_memories(C, [record(memory(i, t)) for i, t in TEXTS.items()])
        s.delete_memory(C, "dns")
        s.replace_memory(
            C, record(memory("tz", "Checkout timeouts in Postgres")), replace_edges=False
        )
        before = {q: s.search_text(C, q, k=10, filters=ACTIVE) for q in queries}
    with EmbeddedStore(tmp_path) as s:
        for q in queries:
            assert s.search_text(C, q, k=10, filters=ACTIVE) == before[q]
        assert "tz" in ids(s.search_text(C, "postgres", k=10, filters=ACTIVE))


def test_writes_after_first_use_update_the_text_index(store: EmbeddedStore) -> None:
    assert ids(store.search_text(C, "kafka", k=5, filters=ACTIVE)) == []
    store.add_memories(C, [record(memory("k", "Kafka consumer lag", minutes=9, model=None))])
    assert ids(store.search_text(C, "kafka", k=5, filters=ACTIVE)) == ["k"]

    # New content replaces the old terms.
    store.replace_memory(C, record(memory("k", "RabbitMQ consumer lag")), replace_edges=False)
    assert store.search_text(C, "kafka", k=5, filters=ACTIVE) == []
    assert ids(store.search_text(C, "rabbitmq", k=5, filters=ACTIVE)) == ["k"]

    # Same content, new tier: the filter sees it, the scores do not change.
    scores = store.search_text(C, "consumer", k=5, filters=ALL_TIERS)
    archived = memory("k", "RabbitMQ consumer lag", tier=Tier.ARCHIVED, model=None)
    store.replace_memory(C, record(archived), replace_edges=False)
    assert store.search_text(C, "consumer", k=5, filters=ACTIVE) == []
    assert store.search_text(C, "consumer", k=5, filters=ALL_TIERS) == scores

    assert store.delete_memory(C, "k")
    assert store.search_text(C, "rabbitmq", k=5, filters=ALL_TIERS) == []


def test_a_failed_add_leaves_the_text_index_unchanged(store: EmbeddedStore) -> None:
    with pytest.raises(Exception, match="already exist"):
        store.add_memories(
            C, [record(memory("new", "kafka lag")), record(memory("pool", "kafka lag"))]
        )
    assert store.search_text(C, "kafka", k=5, filters=ACTIVE) == []


def test_a_closed_store_cannot_search_text(tmp_path: Path) -> None:
    s = EmbeddedStore(tmp_path)
    s.close()
    with pytest.raises(StoreUnavailableError):
        s.search_text(C, "postgres", k=5, filters=ACTIVE)


def test_text_searches_run_beside_writes_and_see_whole_batches(store: EmbeddedStore) -> None:
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                hits = store.search_text(C, "kafka", k=500, filters=ACTIVE)
                # Batches of 8 land whole; archived memories never show, whether or
                # not one exists at the moment (the tier filter is skipped when none does).
                assert len(hits) % 8 == 0
                assert not any(i.startswith("gone") for i in ids(hits))
        except BaseException as e:
            errors.append(e)

    readers = [threading.Thread(target=search) for _ in range(3)]
    for t in readers:
        t.start()
    for batch in range(10):
        store.add_memories(
            C, [record(memory(f"b{batch}-{i}", f"kafka lag {batch} {i}")) for i in range(8)]
        )
        gone = memory(f"gone{batch}", "kafka", tier=Tier.ARCHIVED)
        store.add_memories(C, [record(gone)])
        store.replace_memory(
            C, record(gone.model_copy(update={"content": "kafka kafka"})), replace_edges=False
        )
        store.delete_memory(C, gone.id)
    stop.set()
    for t in readers:
        t.join()
    assert errors == []
    assert len(store.search_text(C, "kafka", k=500, filters=ACTIVE)) == 80
