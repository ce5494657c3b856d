"""What sizes a first vector search on Neo4j is kept between searches: read again
once old, after this store changes the collection's memories, and for a bounded
number of collections."""

from __future__ import annotations

import pytest

from hippocampus.model import RecallFilters
from hippocampus.store import MemoryRecord
from hippocampus.store.neo4j import Neo4jStore, sizes
from tests.unit.store.neo4j_fake import FakeDriver, counted_vectors
from tests.unit.store.test_neo4j_store import C, make, memory

QUERY = [1.0] + [0.0] * 7
HITS = [{"id": f"m{i}", "similarity": 0.9 - i / 100} for i in range(10)]


def _driver() -> FakeDriver:
    return FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m", 1_000),
            "recall/index_size": [{"memories": 1_000}],
            "recall/search_vectors": [{"seen": 3, "hits": HITS}],
        }
    )


def _counts_read(driver: FakeDriver, store: Neo4jStore, collection: str = C) -> int:
    """How many times one more search of ``collection`` read its counters."""
    before = driver.ran().count("memory/read_counts")
    store.search_vectors(
        collection,
        QUERY,  # type: ignore[arg-type]
        model="m",
        k=10,
        filters=RecallFilters(),
        passages=False,
    )
    return driver.ran().count("memory/read_counts") - before


def test_the_counters_are_read_again_once_old(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("hippocampus.store.neo4j.sizes.time.monotonic", lambda: clock[0])
    driver = _driver()
    store = make(driver)
    assert _counts_read(driver, store) == 1
    clock[0] += sizes.MAX_AGE_S - 1.0
    assert _counts_read(driver, store) == 0
    clock[0] += 2.0
    assert _counts_read(driver, store) == 1


def test_a_change_to_the_collections_memories_reads_them_again() -> None:
    driver = _driver()
    store = make(driver)
    assert _counts_read(driver, store) == 1
    assert _counts_read(driver, store) == 0
    store.add_memories(C, [MemoryRecord(memory=memory("a"))])
    assert _counts_read(driver, store) == 1
    # Another collection's change leaves this one's counters kept.
    other = memory("b").model_copy(update={"collection": "org:other"})
    store.add_memories("org:other", [MemoryRecord(memory=other)])
    assert _counts_read(driver, store) == 0


def test_the_kept_counters_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sizes, "KEPT_COLLECTIONS", 2)
    driver = _driver()
    store = make(driver)
    for collection in ("a", "b", "a", "c"):
        _counts_read(driver, store, collection)
    # "b" was the least recently read when "c" came.
    assert _counts_read(driver, store, "a") == 0
    assert _counts_read(driver, store, "b") == 1
