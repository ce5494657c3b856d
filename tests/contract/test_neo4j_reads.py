"""Reads of the Neo4j store on a live server, where only a real one shows their cost
and their ranking (skipped without one; ``NEO4J_REQUIRED=1`` makes that a failure).

- ``stats()`` and the pending-embedding count read counters kept by the writes:
  their database hits do not grow with the collection (``PROFILE``), and the
  counters stay exact under concurrent writers.
- Lexical search ranks a collection by BM25 with that collection's own
  statistics, as the embedded store does, whatever other collections hold, and
  reads a bounded number of full-text hits.
- Filtered dense search widens the vector index search step by step before it
  gives up on the index, and goes straight to the exact scan when the filter
  leaves too few memories for the index to find.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from hippocampus.model import EdgeType, Event, RecallFilters, Tier
from hippocampus.store import MemoryRecord, StoreStats
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.neo4j import Neo4jStore
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import ALL_TIERS, DIM, MODEL, T0, edge, memory, named, record, unit, vec
from tests.contract.plans import db_hits, planning

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])

ABOUT, IN_DOMAIN, ASSOCIATED = EdgeType.ABOUT, EdgeType.IN_DOMAIN, EdgeType.ASSOCIATED
SMALL, LARGE = 200, 5_000
CATEGORIES = ("decision", "insight", "bug_fix")
BATCH = 1_000


# -- counters ---------------------------------------------------------------------


def _varied(i: int, collection: str) -> MemoryRecord:
    """Memory ``i`` of a collection with a bit of everything: three categories,
    every tenth archived, three in four without a vector, a quality score on
    every other one, edges to a shared domain, a concept of its own and its
    predecessor."""
    mid = f"m{i:05d}"
    m = memory(
        mid,
        collection,
        minutes=i,
        category=CATEGORIES[i % 3],
        tier=Tier.ARCHIVED if i % 10 == 0 else Tier.ACTIVE,
        model=MODEL if i % 4 == 0 else None,
    )
    if i % 2:
        meta = m.retrieval.model_copy(update={"quality_score": 0.25 + (i % 5) / 10})
        m = m.model_copy(update={"retrieval": meta})
    edges = [edge(mid, IN_DOMAIN, "shared"), edge(mid, ABOUT, f"concept {i}")]
    if i:
        edges.append(edge(mid, ASSOCIATED, f"m{i - 1:05d}"))
    return record(m, edges)


def _fill(store: Neo4jStore, collection: str, n: int) -> None:
    for start in range(0, n, BATCH):
        store.add_memories(
            collection, [_varied(i, collection) for i in range(start, min(n, start + BATCH))]
        )
    events = [Event(type="retrieval" if i % 3 else "use", at=T0) for i in range(n // 10)]
    store.append_events(collection, events)


def _expected(n: int) -> StoreStats:
    records = [_varied(i, "x") for i in range(n)]
    memories = [r.memory for r in records]
    scored = [m.retrieval.quality_score for m in memories if m.retrieval.quality_score is not None]
    return StoreStats(
        memories=n,
        by_category=dict(Counter(m.category for m in memories)),
        by_tier=dict(Counter(str(m.tier) for m in memories)),
        pending_embeddings=sum(m.embedding_model is None for m in memories),
        hubs={"Domain": 1, "Concept": n},
        edges={"IN_DOMAIN": n, "ABOUT": n, "ASSOCIATED": n - 1},
        events=n // 10,
        events_by_type=dict(Counter("retrieval" if i % 3 else "use" for i in range(n // 10))),
        events_retained=n // 10,
        quality_scored=len(scored),
        quality_sum=sum(scored),
    )


def _same(got: StoreStats, want: StoreStats) -> None:
    assert got.model_dump(exclude={"quality_sum"}) == want.model_dump(exclude={"quality_sum"})
    assert got.quality_sum == pytest.approx(want.quality_sum)


def _counting_cost(store: Neo4jStore, collection: str) -> tuple[int, StoreStats, int]:
    """Database hits of ``stats()`` and ``count_pending_embeddings()``, with what
    they answered."""
    driver, planned = planning(store, mode="PROFILE")
    stats = planned.stats(collection)
    pending = planned.count_pending_embeddings(collection, MODEL)
    return sum(db_hits(p.plan) for p in driver.planned), stats, pending


def test_stats_and_the_pending_count_cost_the_same_at_any_size(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    small, large = named(dropped, "small"), named(dropped, "large")
    _fill(neo4j_store, small, SMALL)
    _fill(neo4j_store, large, LARGE)
    small_hits, small_stats, small_pending = _counting_cost(neo4j_store, small)
    large_hits, large_stats, large_pending = _counting_cost(neo4j_store, large)
    _same(small_stats, _expected(SMALL))
    _same(large_stats, _expected(LARGE))
    assert (small_pending, large_pending) == (SMALL * 3 // 4, LARGE * 3 // 4)
    assert large_hits <= 1.5 * small_hits, (small_hits, large_hits)


def _counted(store: Neo4jStore, collection: str) -> StoreStats:
    """What ``stats()`` must say, counted from what the collection holds."""
    memories = list(store.iter_memories(collection))
    vectors = store.get_vectors(collection, [m.id for m in memories])
    edges = list(store.iter_edges(collection))
    scored = [m.retrieval.quality_score for m in memories if m.retrieval.quality_score is not None]
    hub_kinds = {IN_DOMAIN: "Domain", ABOUT: "Concept"}
    hubs = {(hub_kinds[e.type], e.target) for e in edges if e.type in hub_kinds}
    return StoreStats(
        memories=len(memories),
        by_category=dict(Counter(m.category for m in memories)),
        by_tier=dict(Counter(str(m.tier) for m in memories)),
        pending_embeddings=sum(m.id not in vectors for m in memories),
        hubs=dict(Counter(kind for kind, _ in hubs)),
        edges=dict(Counter(str(e.type) for e in edges)),
        quality_scored=len(scored),
        quality_sum=sum(scored),
    )


def test_counters_stay_exact_under_concurrent_writers(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "busy")
    threads, each = 6, 12
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for j in range(each):
                i = n * 100 + j
                neo4j_store.add_memories(c, [_varied(i, c), _varied(i + 50, c)])
                if j % 3 == 0:
                    neo4j_store.delete_memory(c, f"m{i + 50:05d}")
                if j % 4 == 1:
                    moved = _varied(i, c).memory.model_copy(
                        update={"tier": Tier.QUARANTINED, "category": "outcome"}
                    )
                    neo4j_store.replace_memory(
                        c, MemoryRecord(memory=moved, drop_vector=True), replace_edges=True
                    )
                if j % 4 == 2:
                    neo4j_store.set_vectors(c, [(f"m{i + 50:05d}", vec(i), MODEL)])
        except BaseException as e:  # handed to the test thread below
            failures.append(e)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not failures, failures[0]
    want = _counted(neo4j_store, c)
    got = neo4j_store.stats(c)
    _same(got, want)
    assert neo4j_store.count_pending_embeddings(c, MODEL) == want.pending_embeddings


def test_setup_counts_a_collection_written_before_the_store_kept_counters(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "older")
    _fill(neo4j_store, c, SMALL)
    neo4j_store.compact_events(c, keep=5)
    want = neo4j_store.stats(c)
    assert (want.events, want.events_retained) == (SMALL // 10, 5)
    found = neo4j_store.search_text(c, "memory m00007", k=5, filters=ALL_TIERS)
    assert found[0][0] == "m00007" and len(found) == 5
    # A collection as schema version 5 left it: no counters, no terms indexed.
    with neo4j_store._driver.session(database=neo4j_store._database) as session:
        for wipe in (
            "MATCH (n:Count {collection: $c}) WHERE n.key IS NOT NULL AND n.shard IS NOT NULL "
            "DELETE n",
            "MATCH (n:TermCount {collection: $c}) WHERE n.term IS NOT NULL "
            "AND n.shard IS NOT NULL DELETE n",
            "MATCH (m:Memory {collection: $c}) WHERE m.id IS NOT NULL REMOVE m.terms",
        ):
            session.run(wipe, c=c).consume()
    assert neo4j_store.stats(c).memories == 0
    assert neo4j_store.search_text(c, "memory m00007", k=5, filters=ALL_TIERS) == []
    # What setup() runs for each collection of a database of schema version 5.
    neo4j_store._count_collection(c)
    _same(neo4j_store.stats(c), want)
    assert neo4j_store.search_text(c, "memory m00007", k=5, filters=ALL_TIERS) == found
    neo4j_store._count_collection(c)  # run again (a setup cut short): counted afresh
    _same(neo4j_store.stats(c), want)
    assert neo4j_store.search_text(c, "memory m00007", k=5, filters=ALL_TIERS) == found


# -- lexical ----------------------------------------------------------------------

_TOPICS = (
    "cache invalidation after deploy",
    "postgres connection pool exhausted under load",
    "redis cache eviction policy",
    "deploy pipeline flaky integration test",
    "timeout talking to the payment gateway",
    "index rebuild blocks writes on the orders table",
)


def _corpus(n: int) -> list[str]:
    """``n`` short notes mixing a few topics, with repeats, so that terms differ in
    document frequency and documents in length."""
    rng = np.random.default_rng(7)
    notes = []
    for i in range(n):
        picked = rng.choice(len(_TOPICS), size=1 + i % 3, replace=False)
        words = " ".join(_TOPICS[j] for j in picked)
        notes.append(f"note {i}: {words}" + " cache" * int(rng.integers(0, 3)))
    return notes


def _skewed(n: int) -> list[str]:
    """Another collection's notes: "cache" in every one, "payment" in most."""
    return [f"cache payment cache ledger entry {i}" for i in range(n)]


def _texts(store: Neo4jStore | EmbeddedStore, collection: str, texts: Sequence[str]) -> None:
    for start in range(0, len(texts), BATCH):
        store.add_memories(
            collection,
            [
                record(
                    memory(
                        f"t{i:05d}",
                        collection,
                        content=texts[i],
                        model=None,
                        tier=Tier.ARCHIVED if i % 7 == 0 else Tier.ACTIVE,
                        category=CATEGORIES[i % 3],
                    )
                )
                for i in range(start, min(len(texts), start + BATCH))
            ],
        )


QUERIES = (
    "cache",
    "payment gateway timeout",
    "deploy cache invalidation",
    "postgres pool",
    "orders table index rebuild writes",
    "nothing matches this",
)
FILTERS = (
    RecallFilters(),
    ALL_TIERS,
    RecallFilters(categories=["decision"], tiers=list(Tier)),
)


def test_lexical_ranking_is_the_embedded_stores_whatever_other_collections_hold(
    neo4j_store: Neo4jStore, dropped: list[str], tmp_path: Path
) -> None:
    c, crowd = named(dropped, "lexical"), named(dropped, "skewed")
    corpus = _corpus(60)
    _texts(neo4j_store, crowd, _skewed(3_000))
    _texts(neo4j_store, c, corpus)
    with EmbeddedStore(tmp_path / "embedded") as embedded:
        _texts(embedded, c, corpus)
        for query in QUERIES:
            for filters in FILTERS:
                for k in (1, 5, 100):
                    want = embedded.search_text(c, query, k=k, filters=filters)
                    got = neo4j_store.search_text(c, query, k=k, filters=filters)
                    # The same memories in the same order, and the same scores
                    # to the last bit.
                    assert got == want, (query, filters, k)


def test_lexical_search_reads_a_bounded_number_of_full_text_hits(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c, crowd = named(dropped, "lexical"), named(dropped, "skewed")
    _texts(neo4j_store, crowd, _skewed(3_000))
    _texts(neo4j_store, c, _corpus(60))
    driver, store = planning(neo4j_store, mode="PROFILE", only=frozenset({"recall/search_text"}))
    assert store.search_text(c, "cache payment", k=5, filters=RecallFilters())
    hits = sum(db_hits(p.plan) for p in driver.planned)
    # The other collection's 3,000 notes all hold both words: none is read.
    assert hits < 1_000, hits


# -- filtered dense search --------------------------------------------------------

CLUSTER = 2_000


def _clustered(
    store: Neo4jStore,
    collection: str,
    rare: Callable[[int], str | None],
    *,
    tagged: bool = False,
) -> None:
    """``CLUSTER`` memories whose vectors lie around one direction (so that they are
    the vector index's nearest to a query there, whatever other collections the
    index holds); memory ``i`` is of category ``rare(i)``, or "insight" (with
    ``tagged``: an insight tagged ``rare(i)``, a filter no counter knows)."""
    rng = np.random.default_rng(11)
    centre = unit(vec("centre"))
    for start in range(0, CLUSTER, BATCH):
        records = []
        for i in range(start, start + BATCH):
            v = (centre + 0.3 * unit(rng.standard_normal(DIM).astype(np.float32))).astype(
                np.float32
            )
            label = rare(i)
            if tagged:
                m = memory(f"v{i:05d}", collection, tags=[label] if label else [])
            else:
                m = memory(f"v{i:05d}", collection, category=label or "insight")
            records.append(MemoryRecord(memory=m, vector=v))
        store.add_memories(collection, records)


def _exact(
    store: Neo4jStore, collection: str, query: np.ndarray, ids: list[str], k: int
) -> list[str]:
    """The top ``k`` of ``ids`` by cosine with ``query``, computed here."""
    vectors = store.get_vectors(collection, ids)
    q = unit(query)
    return sorted(ids, key=lambda i: (-float(np.dot(unit(vectors[i]), q)), i))[:k]


def test_a_counted_filter_of_one_in_twenty_is_answered_by_one_index_search(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "counted")
    _clustered(neo4j_store, c, lambda i: "rare" if i % 20 == 0 else None)
    driver, store = planning(neo4j_store)
    query = unit(vec("centre")) + 0.1 * unit(vec("query"))
    filters = RecallFilters(categories=["rare"])
    hits = store.search_vectors(c, query, model=MODEL, k=10, filters=filters, passages=False)
    ran = [p.name for p in driver.planned]
    # The counters know the category: 100 of the database's memories pass, and
    # the first search asks for twice the candidates that should hold 10 of them,
    # unless that is more than the collection's 2,000 (a database of 10,000
    # memories or more): then the exact scan reads less.
    with neo4j_store._driver.session(database=neo4j_store._database) as session:
        database = session.run("MATCH (m:Memory) RETURN count(m) AS n").single(strict=True)["n"]
    width = max(-(-2 * 10 * database // 100), 100)
    widths = [p.params["candidates"] for p in driver.planned if p.name == "recall/search_vectors"]
    if width < CLUSTER:
        assert widths == [width] and "recall/search_vectors_exact" not in ran, (widths, database)
    else:
        assert widths == [] and "recall/search_vectors_exact" in ran, (widths, database)
    rare = [f"v{i:05d}" for i in range(0, CLUSTER, 20)]
    # The index is approximate (HNSW): near ties at the edge of the candidates
    # may swap, so one of the ten may differ from the exact answer.
    assert len({i for i, _ in hits} & set(_exact(neo4j_store, c, query, rare, 10))) >= 9
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_a_filter_no_counter_knows_is_answered_by_a_widened_index_search(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "widen")
    # Ten tagged memories among the 2,000 nearest: found only by asking for
    # about all 2,000, where the first search asks for the share of 10 in 2,000.
    _clustered(neo4j_store, c, lambda i: "rare" if i % 200 == 0 else None, tagged=True)
    driver, store = planning(neo4j_store)
    query = unit(vec("centre")) + 0.1 * unit(vec("query"))
    filters = RecallFilters(tags=["rare"])
    hits = store.search_vectors(c, query, model=MODEL, k=10, filters=filters, passages=False)
    ran = [p.name for p in driver.planned]
    assert "recall/search_vectors_exact" not in ran
    widths = [p.params["candidates"] for p in driver.planned if p.name == "recall/search_vectors"]
    assert len(widths) >= 2 and widths == sorted(widths), widths
    rare = [f"v{i:05d}" for i in range(0, CLUSTER, 200)]
    assert len({i for i, _ in hits} & set(rare)) >= 9
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)

    driver.planned.clear()
    many = store.search_vectors_many(
        c, np.stack([query, query]), model=MODEL, k=10, filters=filters, passages=False
    )
    assert [[i for i, _ in row] for row in many] == [[i for i, _ in hits]] * 2
    assert "recall/search_vectors_exact" not in [p.name for p in driver.planned]


def test_a_filter_too_selective_for_the_index_goes_straight_to_the_exact_scan(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    c = named(dropped, "selective")
    _clustered(neo4j_store, c, lambda i: "unique" if i == 1_234 else None)
    driver, store = planning(neo4j_store)
    query = unit(vec("centre"))
    filters = RecallFilters(categories=["unique"])
    hits = store.search_vectors(c, query, model=MODEL, k=10, filters=filters, passages=False)
    assert [i for i, _ in hits] == ["v01234"]
    ran = [p.name for p in driver.planned]
    assert "recall/search_vectors" not in ran
    assert "recall/search_vectors_exact" in ran


def test_names_the_database_does_not_hold_yet_log_no_warning(
    neo4j_store: Neo4jStore, caplog: pytest.LogCaptureFixture
) -> None:
    # A fresh database has no `speaker` or `superseded_by` yet: the server says so
    # for every statement naming one, and the driver would log each statement
    # whole as a warning.
    caplog.set_level(logging.INFO, logger="neo4j")
    probe = "MATCH (m:Memory {collection: $c}) RETURN m.a_property_nobody_has AS x"
    rows = neo4j_store._read("probe", lambda tx: list(tx.run(probe, c="none")))
    assert rows == []
    assert not [r.getMessage() for r in caplog.records if "does not exist" in r.getMessage()]
