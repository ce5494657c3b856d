"""The Neo4j store as an operator runs it, on a live server (skipped without one;
``NEO4J_REQUIRED=1`` makes that a failure): what crowding's sample costs as a
collection grows, how data of an old schema version is migrated in bounded
transactions, and how the Browser guide's queries find a collection.
"""

from __future__ import annotations

import importlib.resources
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hippocampus.model import EdgeType, Event
from hippocampus.store import MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.statements import statement
from tests.contract.backends import neo4j_plan
from tests.contract.helpers import MODEL, T0, edge, memory, named, record
from tests.contract.plans import SCANS, db_hits, operator_name, operators, planning

pytestmark = pytest.mark.skipif(neo4j_plan()[0] is None, reason=neo4j_plan()[1])


def _with_vectors(store: Neo4jStore, collection: str, n: int) -> None:
    for start in range(0, n, 2_000):
        store.add_memories(
            collection,
            [record(memory(f"v{i:05d}", collection)) for i in range(start, min(n, start + 2_000))],
        )


# -- crowding's sample --------------------------------------------------------------------


def _sample_hits(store: Neo4jStore, collection: str) -> int:
    """The database hits of reading one sample of the collection's vectors."""
    driver, planned = planning(store, "PROFILE", frozenset({"memory/sample_vectors"}))
    assert planned.crowding(collection, ["v00000"], model=MODEL)
    return sum(db_hits(plan) for plan in driver.plans_of("memory/sample_vectors"))


def test_crowding_reads_a_sample_that_costs_the_same_at_ten_times_the_memories(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    small, large = named(dropped, "sample-1k"), named(dropped, "sample-10k")
    _with_vectors(neo4j_store, small, 1_000)
    _with_vectors(neo4j_store, large, 10_000)
    at_small, at_large = _sample_hits(neo4j_store, small), _sample_hits(neo4j_store, large)
    assert at_large < 1.5 * at_small, (at_small, at_large)


# -- migrations ---------------------------------------------------------------------------


def _cypher(store: Neo4jStore, query: str, **params: Any) -> list[dict[str, Any]]:
    """A statement of the test's own, on the store's server."""
    with store._driver.session(database=store._database) as session:
        return [record.data() for record in session.run(query, params)]


_NEXT_EDGES = """
MATCH (a:Memory {collection: $c})-[:NEXT]->(b:Memory)
WHERE a.id IS NOT NULL
RETURN a.id AS a, b.id AS b ORDER BY a
"""
_AS_VERSION_1 = (
    # What schema version 1 wrote: no occurred_at or turn_of, no NEXT edges...
    """
    MATCH (m:Memory {collection: $c})
    WHERE m.id IS NOT NULL
    OPTIONAL MATCH (m)-[r:NEXT]->()
    DELETE r
    REMOVE m.occurred_at, m.turn_of
    """,
    # ...events in the order of (appended_at, batch, position), unnumbered...
    """
    MATCH (e:Event {collection: $c})
    WHERE e.seq IS NOT NULL
    SET e.batch = 0, e.position = e.seq
    REMOVE e.seq
    """,
    # ...and no log counting them.
    "MATCH (log:EventLog {collection: $c}) DELETE log",
)


def test_a_version_1_collection_is_migrated_a_bounded_page_per_transaction(
    neo4j_store: Neo4jStore, dropped: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    c = named(dropped, "migrate")
    # Two conversations and a memory outside any, ids in another order than time.
    turns = [("m6", "x", 0), ("m2", "x", 1), ("m4", "y", 2), ("m0", "x", 3), ("m5", "y", 4)]
    turns += [("m1", "x", 5), ("m3", None, 6)]
    neo4j_store.add_memories(
        c,
        [
            record(memory(i, c, minutes=at, conversations=[talk] if talk else []))
            for i, talk, at in turns
        ],
    )
    for n in range(3):  # three appends: three appended_at
        events = [Event(type="retrieval", at=T0 + timedelta(minutes=n), memory_ids=[f"m{n}"])]
        neo4j_store.append_events(c, events * (n + 1))
    linked, logged = _cypher(neo4j_store, _NEXT_EDGES, c=c), list(neo4j_store.iter_events(c))
    assert len(linked) == 4 and len(logged) == 6
    for strip in _AS_VERSION_1:
        _cypher(neo4j_store, strip, c=c)
    assert _cypher(neo4j_store, _NEXT_EDGES, c=c) == []

    from hippocampus.store.neo4j import schema

    monkeypatch.setattr(schema, "WRITE_BATCH", 2)
    migrations = frozenset({"schema/migrate_turns", "schema/number_events"})
    driver, store = planning(neo4j_store, "EXPLAIN", migrations)
    store._migrate_turns(c)
    store._number_events(c)

    assert _cypher(neo4j_store, _NEXT_EDGES, c=c) == linked
    assert list(neo4j_store.iter_events(c)) == logged
    # 7 memories and 6 events, at most 2 a transaction (a statement each).
    assert len(driver.plans_of("schema/migrate_turns")) == 4
    assert len(driver.plans_of("schema/number_events")) == 4
    assert {p.params["limit"] for p in driver.planned} == {2}
    scans = {operator_name(n) for p in driver.planned for n in operators(p.plan)} & set(SCANS)
    assert not scans


# -- the Browser guide ----------------------------------------------------------------------

BROWSER = Path(str(importlib.resources.files("hippocampus.cypher"))) / "browser"
RELATIONSHIP_SCANS = ("DirectedRelationshipTypeScan", "UndirectedRelationshipTypeScan")
"""Operators that read every relationship of a type, whatever its collection."""
LISTINGS = {"collections"}
"""Queries that list the collections: they must read an entry per memory, and
read it from an index (NodeIndexScan), not from the nodes."""


def _plan_operators(store: Neo4jStore, query: str, params: dict[str, Any]) -> set[str]:
    with store._driver.session(database=store._database) as session:
        plan = session.run(f"EXPLAIN {query}", params).consume().plan
    return {operator_name(node) for node in operators(plan or {})}


def test_the_browser_guides_queries_seek_the_collection_through_an_index(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    # A crowd of other memories, hubs and associations first: the planner
    # chooses by cost, and a scan looks cheap in an empty database.
    crowd = named(dropped, "browser-crowd")
    neo4j_store.add_memories(
        crowd,
        [
            MemoryRecord(
                memory=memory(f"c{i:04d}", crowd, model=None),
                edges=(
                    edge(f"c{i:04d}", EdgeType.ABOUT, f"concept {i % 40}"),
                    edge(f"c{i:04d}", EdgeType.IN_DOMAIN, f"domain {i % 7}"),
                    *([edge(f"c{i:04d}", EdgeType.ASSOCIATED, f"c{i - 1:04d}")] if i else []),
                ),
            )
            for i in range(2_000)
        ],
    )
    params = {
        "collection": named(dropped, "browser"),
        "memory_id": "m",
        "conversation_id": "t",
        "after": "",
    }
    queries = {path.stem: path.read_text(encoding="utf-8") for path in BROWSER.glob("*.cypher")}
    assert len(queries) >= 6
    # The store's own listing of collections, which maintenance runs every round.
    queries["memory/list_collections"] = statement("memory/list_collections")
    scans = {}
    for name, query in sorted(queries.items()):
        found = _plan_operators(neo4j_store, query, params)
        wrong = found & {*SCANS, *RELATIONSHIP_SCANS}
        if name in LISTINGS:
            wrong |= {"NodeIndexScan"} - found
        if wrong:
            scans[name] = sorted(wrong)
    assert not scans, scans


# -- export's iteration -----------------------------------------------------------------


def test_iteration_pages_through_memories_written_at_one_moment(
    neo4j_store: Neo4jStore, dropped: list[str]
) -> None:
    # More memories share one created_at than a page holds (a batch import):
    # the next page starts after the last (created_at, id), however the server
    # hands the moment back.
    c = named(dropped, "moment")
    _with_vectors(neo4j_store, c, 1_200)
    ids = [m.id for m in neo4j_store.iter_memories(c)]
    assert ids == [f"v{i:05d}" for i in range(1_200)]
