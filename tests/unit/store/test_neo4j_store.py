"""The Neo4j store around its Cypher, on a stand-in driver: how driver failures
reach callers, that a write is one transaction, schema setup, and how rows become
engine objects. What the Cypher itself does is the contract suite's job
(``tests/contract``), against a real server."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from neo4j.exceptions import (
    AuthError,
    ConnectionAcquisitionTimeoutError,
    ConstraintError,
    CypherSyntaxError,
    DatabaseUnavailable,
    IncompleteCommit,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from hippocampus.dense import CROWDING_SAMPLE
from hippocampus.errors import (
    ConfigError,
    ConflictError,
    HippoError,
    InvalidInputError,
    NotFoundError,
    StoreAuthError,
    StoreError,
    StoreFullError,
    StoreUnavailableError,
)
from hippocampus.model import Edge, EdgeType, Event, Memory, RecallFilters
from hippocampus.model import content_hash as hash_of
from hippocampus.model.association import Anchor, ExpandParams
from hippocampus.store import GraphStore, Learned, MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.schema import SCHEMA_OWNER, SCHEMA_VERSION
from tests.unit.store.neo4j_fake import FakeDriver, counted_vectors

C = "org:acme"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def memory(memory_id: str) -> Memory:
    text = f"memory {memory_id}"
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        created_at=T0,
        updated_at=T0,
        content_hash=hash_of(text),
    )


def make(driver: FakeDriver, dimensions: int = 8) -> Neo4jStore:
    return Neo4jStore(driver, dimensions=dimensions)  # type: ignore[arg-type]


def test_the_store_meets_the_protocol() -> None:
    assert isinstance(make(FakeDriver()), GraphStore)


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (ServiceUnavailable("connection refused"), StoreUnavailableError),
        (SessionExpired("routing table lost"), StoreUnavailableError),
        (ConnectionAcquisitionTimeoutError("pool exhausted"), StoreUnavailableError),
        (TransientError("deadlock, retries exhausted"), StoreUnavailableError),
        (DatabaseUnavailable("database starting"), StoreUnavailableError),
        (AuthError("wrong password"), StoreAuthError),
        (IncompleteCommit("lost while committing"), StoreUnavailableError),
        (ConnectionResetError("reset by peer"), StoreUnavailableError),
        (ConstraintError("already exists"), ConflictError),
        (CypherSyntaxError("bad statement"), StoreError),
    ],
)
def test_driver_failures_reach_callers_as_engine_errors(
    failure: Exception, expected: type[HippoError]
) -> None:
    for fail_on in (None, "memory/get_memories"):
        store = make(FakeDriver(failure=failure, fail_on=fail_on))
        with pytest.raises(expected) as raised:
            store.get_memories(C, ["a"])
        assert type(raised.value) is expected
        assert raised.value.__cause__ is failure
        assert "read memories" in raised.value.message


def test_a_write_is_one_transaction_and_a_failed_one_leaves_nothing() -> None:
    record = MemoryRecord(
        memory=memory("a"), edges=(Edge(source="a", type=EdgeType.ABOUT, target="cache"),)
    )
    driver = FakeDriver()
    make(driver).add_memories(C, [record])
    assert [[name for name, _ in tx] for tx in driver.committed] == [
        [
            "memory/existing_ids",
            "memory/add_memories",
            "memory/upsert_edges",
            "memory/add_counts",
            "memory/add_term_counts",
        ]
    ]

    broken = FakeDriver(failure=ServiceUnavailable("gone"), fail_on="memory/upsert_edges")
    with pytest.raises(StoreUnavailableError):
        make(broken).add_memories(C, [record])
    assert broken.committed == []

    taken = FakeDriver(answers={"memory/existing_ids": [{"id": "a"}]})
    with pytest.raises(ConflictError):
        make(taken).add_memories(C, [record])
    assert taken.committed == []


def test_every_session_is_chained_after_the_stores_own_writes() -> None:
    # A single server cannot show a read missing the caller's last write (a
    # cluster's replica can): what shows here is that every session, read or
    # write, carries the one bookmark manager of the store.
    driver = FakeDriver(answers={"memory/get_memories": []})
    store = make(driver)
    store.add_memories(C, [MemoryRecord(memory=memory("a"))])
    store.get_memories(C, ["a"])
    store.delete_memory(C, "a")
    other = make(driver)
    other.get_memories(C, ["a"])
    managers = [s["bookmark_manager"] for s in driver.sessions]
    assert len(managers) == 4 and all(m is not None for m in managers)
    assert managers[0] is managers[1] is managers[2] is not managers[3]
    assert {s["database"] for s in driver.sessions} == {"neo4j"}


def test_replacing_an_absent_memory_writes_nothing() -> None:
    driver = FakeDriver()
    with pytest.raises(NotFoundError):
        make(driver).replace_memory(C, MemoryRecord(memory=memory("a")), replace_edges=True)
    assert driver.committed == []


def test_a_dropped_vector_goes_to_the_statement_with_no_model_in_the_document() -> None:
    # Without a server the contract suite cannot run the Cypher: this checks what
    # it is given (the fake refuses a run missing any of its $parameters).
    driver = FakeDriver(answers={"memory/replace_memory": [{"id": "a"}]})
    stored = memory("a").model_copy(update={"embedding_model": "m"})
    make(driver).replace_memory(C, MemoryRecord(memory=stored), replace_edges=False)
    assert driver.params_of("memory/replace_memory")["drop_embedding"] is False

    driver = FakeDriver(answers={"memory/replace_memory": [{"id": "a"}]})
    make(driver).replace_memory(
        C, MemoryRecord(memory=stored, drop_vector=True), replace_edges=False
    )
    params = driver.params_of("memory/replace_memory")
    assert params["drop_embedding"] is True and params["embedding"] is None
    assert Memory.model_validate_json(params["properties"]["doc"]).embedding_model is None
    with pytest.raises(InvalidInputError):
        make(FakeDriver()).replace_memory(
            C,
            MemoryRecord(memory=stored, vector=np.ones(8, dtype=np.float32), drop_vector=True),
            replace_edges=False,
        )


def test_the_store_recovers_when_neo4j_comes_back() -> None:
    driver = FakeDriver(failure=ServiceUnavailable("down"))
    store = make(driver)
    with pytest.raises(StoreUnavailableError):
        store.check()
    driver.failure = None
    driver.answers["schema/read_schema_version"] = [{"version": SCHEMA_VERSION}]
    store.check()


def test_check_wants_the_schema_set_up_at_this_version() -> None:
    driver = FakeDriver(answers={"schema/read_schema_version": [{"version": None}]})
    with pytest.raises(StoreUnavailableError, match="hippo setup"):
        make(driver).check()
    driver.answers["schema/read_schema_version"] = [{"version": SCHEMA_VERSION + 1}]
    with pytest.raises(StoreUnavailableError):
        make(driver).check()


def test_a_closed_store_is_unavailable_and_closes_its_driver_once() -> None:
    driver = FakeDriver()
    store = make(driver)
    store.close()
    store.close()
    assert driver.closed == 1
    with pytest.raises(StoreUnavailableError):
        store.get_memories(C, ["a"])


def _indexes(state: str, dimensions: int = 8) -> list[dict[str, object]]:
    from hippocampus.store.neo4j.schema import _INDEXES, VECTOR_INDEX

    rows: list[dict[str, object]] = []
    for name in _INDEXES:
        options = {"indexConfig": {"vector.dimensions": dimensions}} if name == VECTOR_INDEX else {}
        rows.append({"name": name, "state": state, "options": options})
    return rows


def test_setup_applies_the_schema_waits_for_the_indexes_and_records_the_version() -> None:
    states = iter(["POPULATING", "ONLINE"])
    driver = FakeDriver(
        answers={
            "schema/show_indexes": lambda params: _indexes(next(states)),
            "schema/read_schema_version": [{"version": None}],
        }
    )
    make(driver).setup(timeout_s=10.0)
    ran = driver.ran()
    assert ran[0] == "schema/memory_key" and "schema/memory_terms" in ran
    assert ran.count("schema/show_indexes") == 2
    assert ran[-1] == "schema/write_schema_version"
    assert driver.params_of("schema/memory_embedding") == {"dimensions": 8}
    assert driver.params_of("schema/write_schema_version") == {
        "name": SCHEMA_OWNER,
        "version": SCHEMA_VERSION,
    }


def test_setup_reports_failed_slow_or_mismatched_indexes() -> None:
    failed = FakeDriver(answers={"schema/show_indexes": _indexes("FAILED")})
    with pytest.raises(StoreError):
        make(failed).setup()
    slow = FakeDriver(answers={"schema/show_indexes": _indexes("POPULATING")})
    with pytest.raises(StoreUnavailableError, match="not online"):
        make(slow).setup(timeout_s=0.0)
    other = FakeDriver(answers={"schema/show_indexes": _indexes("ONLINE", dimensions=1536)})
    with pytest.raises(ConfigError, match="1536"):
        make(other).setup()
    newer = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": SCHEMA_VERSION + 1}],
        }
    )
    with pytest.raises(StoreError, match="Upgrade"):
        make(newer).setup()


def test_an_expansion_through_a_node_deleted_mid_walk_is_left_out() -> None:
    # Reads see a committed delete at once: the deleted node's properties read
    # as null, in the result (a deleted memory) or on a path (a deleted hub).
    def row(memory_id: str | None, name: str | None) -> dict[str, Any]:
        step = {"type": "ABOUT", "weight": 0.5, "kind": "Concept", "name": name}
        return {
            "memory_id": memory_id,
            "strength": 0.5,
            "reached": [{"anchor": 0, "strength": 0.5, "steps": [step]}],
        }

    driver = FakeDriver(
        answers={
            "recall/expand": [{"found": [row(None, "cache"), row("m", None), row("n", "cache")]}]
        }
    )
    found = make(driver).expand(
        C, [Anchor(kind="Concept", name="cache")], params=ExpandParams(), filters=RecallFilters()
    )
    assert [e.memory_id for e in found] == ["n"]


def test_expansion_rows_become_expansions_with_paths_strongest_first() -> None:
    row = {
        "memory_id": "m",
        "strength": 0.9,
        "reached": [
            {
                "anchor": 0,
                "strength": 0.3,
                "steps": [
                    {"type": "ABOUT", "weight": 0.5, "kind": "Memory", "name": "m"},
                ],
            },
            {
                "anchor": 1,
                "strength": 0.6,
                "steps": [
                    {"type": "ASSOCIATED", "weight": 0.8, "kind": "Memory", "name": "m"},
                ],
            },
        ],
    }
    driver = FakeDriver(answers={"recall/expand": [{"found": [row]}]})
    anchors = [
        Anchor(kind="Memory", name="seed", strength=0.9),
        Anchor(kind="Concept", name="cache", strength=0.4),
        Anchor(kind="Concept", name="cache", strength=0.8),
        Anchor(kind="Planet", name="mars"),
    ]
    (found,) = make(driver).expand(C, anchors, params=ExpandParams(), filters=RecallFilters())
    # Merged (strongest kept), other kinds dropped, sorted by (kind, name): the
    # query's anchor indexes refer to this order.
    assert driver.params_of("recall/expand")["anchors"] == [
        {"kind": "Concept", "name": "cache", "strength": 0.8},
        {"kind": "Memory", "name": "seed", "strength": 0.9},
    ]
    assert (found.memory_id, found.strength, found.anchors) == ("m", 0.9, 2)
    assert [(p.anchor.name, p.strength) for p in found.paths] == [("seed", 0.6), ("cache", 0.3)]
    assert found.paths[0].steps[0].type is EdgeType.ASSOCIATED

    (bare,) = make(driver).expand(
        C, anchors, params=ExpandParams(), filters=RecallFilters(), paths=False
    )
    assert (bare.anchors, bare.paths) == (2, [])
    assert (
        make(FakeDriver()).expand(
            C, [Anchor(kind="Planet", name="x")], params=ExpandParams(), filters=RecallFilters()
        )
        == []
    )


def test_state_documents_are_written_in_one_statement_or_not_at_all() -> None:
    driver = FakeDriver(answers={"memory/get_states": [{"key": "k", "value": '{"turn":2}'}]})
    store = make(driver)
    store.put_states(C, {"k": {"turn": 2}, "j": {}})
    assert driver.ran() == ["memory/put_states"]
    # By key: writers of the same new keys MERGE them in one order.
    assert driver.params_of("memory/put_states")["items"] == [
        {"key": "j", "value": "{}"},
        {"key": "k", "value": '{"turn":2}'},
    ]
    with pytest.raises(InvalidInputError):
        store.put_states(C, {"fine": {}, "broken": {"x": float("nan")}})
    assert store.get_states(C, ["k", "k", "absent"]) == {"k": {"turn": 2}}
    assert driver.params_of("memory/get_states")["keys"] == ["k", "absent"]
    # Nothing to read or write runs nothing.
    store.put_states(C, {})
    assert store.get_states(C, []) == {}
    assert driver.ran() == ["memory/put_states", "memory/get_states"]


def test_a_vector_hit_of_a_memory_deleted_mid_search_is_left_out() -> None:
    # The index hands over a node deleted while the search ran: its properties
    # (the id, the vector's similarity, the vector) read as null.
    gone = [
        {"id": None, "similarity": None, "embedding": None},
        {"id": "b", "similarity": None, "embedding": None},
    ]
    found = {"id": "a", "similarity": 0.9, "embedding": [0.5] * 8}
    driver = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m"),
            "recall/search_vectors": [{"seen": 3, "hits": [*gone, found]}],
        }
    )
    store = make(driver)
    query = [1.0] + [0.0] * 7
    hits = store.search_vectors(
        C,
        query,
        model="m",
        k=1,
        filters=RecallFilters(),  # type: ignore[arg-type]
    )
    assert hits == [("a", 0.9)]
    # The hit's vector came with it: the recall's next read of it is no query.
    assert list(store.get_vectors(C, ["a"])["a"]) == [0.5] * 8
    assert "memory/get_vectors" not in driver.ran()


def test_a_text_hit_of_a_memory_deleted_mid_search_is_left_out() -> None:
    # The full-text index hands over a node deleted before its terms were read:
    # its id, its length and its term counts read as null.
    gone = [
        {"id": None, "length": None, "tfs": [None]},
        {"id": "b", "length": None, "tfs": [None]},
    ]
    driver = FakeDriver(
        answers={
            "recall/search_text": [
                {
                    "memories": 3,
                    "length": 9,
                    "dfs": [2],
                    "seen": 3,
                    "hits": [*gone, {"id": "a", "length": 3, "tfs": [1]}],
                }
            ],
        }
    )
    found = make(driver).search_text(C, "kafka", k=3, filters=RecallFilters())
    assert [memory_id for memory_id, _ in found] == ["a"]


def test_a_memory_deleted_while_it_is_read_is_left_out() -> None:
    # Matched by its index, then deleted by a concurrent transaction before its
    # properties were read: every property reads as null.
    gone = {"id": None, "created_at": None, "doc": None, "embedding_model": None}

    def row(memory_id: str) -> dict[str, Any]:
        doc = memory(memory_id).model_dump_json()
        return {"id": memory_id, "created_at": T0, "doc": doc, "embedding_model": None}

    driver = FakeDriver(
        answers={
            "memory/get_memories": [row("a"), gone],
            "memory/due_memories": [gone, row("b")],
            "memory/pending_embeddings": [gone, row("c")],
            "memory/get_vectors": [
                {"vectors": [{"id": None, "embedding": None}, {"id": "d", "embedding": [1]}]}
            ],
            "memory/find_by_hash": [{"id": None}, {"id": "e"}],
        }
    )
    store = make(driver)
    assert list(store.get_vectors(C, ["d", "x"])) == ["d"]
    assert store.find_by_hash(C, "h") == ["e"]
    assert list(store.get_memories(C, ["a", "x"])) == ["a"]
    assert [m.id for m in store.due_memories(C, schedule="fsrs", now=T0, limit=5)] == ["b"]
    assert [m.id for m in store.pending_embeddings(C, "m", limit=5)] == ["c"]

    # A page whose last row was deleted (nulls sort last) pages on from the last
    # row still there, not from the start.
    from hippocampus.store.neo4j.connection import PAGE

    first = [row(f"m{i:04d}") for i in range(PAGE - 1)] + [gone]
    pages = iter([first, [row("z")]])
    paged = FakeDriver(answers={"memory/iter_memories": lambda params: next(pages)})
    ids = [m.id for m in make(paged).iter_memories(C)]
    assert ids == [f"m{i:04d}" for i in range(PAGE - 1)] + ["z"]
    second = [params for tx in paged.committed for name, params in tx][-1]
    assert second["after_id"] == f"m{PAGE - 2:04d}" and second["after_at"] == T0


def test_dense_search_widens_then_falls_back_to_an_exact_scan_when_the_index_runs_short() -> None:
    from hippocampus.store.neo4j.vectors import _MIN_CANDIDATES, MAX_CANDIDATES

    query = [1.0] + [0.0] * 7
    enough = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m"),
            "recall/search_vectors": [{"seen": 3, "hits": [{"id": "a", "similarity": 0.9}]}],
        }
    )
    hits = make(enough).search_vectors(
        C,
        query,
        model="m",
        k=2,
        filters=RecallFilters(),  # type: ignore[arg-type]
    )
    assert hits == [("a", 0.9)]
    assert "recall/search_vectors_exact" not in enough.ran()

    short = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m"),
            # However wide the search, the filters leave one hit of the collection.
            "recall/search_vectors": lambda params: [
                {"seen": params["candidates"], "hits": [{"id": "a", "similarity": 0.9}]}
            ],
            "recall/search_vectors_exact": [
                {"id": "a", "similarity": 0.9},
                {"id": "b", "similarity": 0.5},
            ],
        }
    )
    hits = make(short).search_vectors(
        C,
        query,
        model="m",
        k=2,
        filters=RecallFilters(),  # type: ignore[arg-type]
        passages=False,
    )
    assert hits == [("a", 0.9), ("b", 0.5)]
    widths = [p["candidates"] for _, p in short.committed[0] if "candidates" in p]
    assert widths == [_MIN_CANDIDATES, 400, 1_600, 6_400, MAX_CANDIDATES]
    assert short.ran()[-1] == "recall/search_vectors_exact"


def test_a_first_dense_search_asks_for_what_the_collections_share_of_the_index_needs() -> None:
    # k=50 of a collection of 1,000: alone in the database, 100 candidates
    # (twice k, at least 100); a quarter of it, 400 (twice the 200 nearest that
    # should hold 50 of its memories); a twentieth, 2,000: more than the
    # collection holds, which the exact scan reads for less.
    query = [1.0] + [0.0] * 7
    hits = [{"id": f"m{i}", "similarity": 0.9 - i / 100} for i in range(50)]
    for database, first in ((1_000, 100), (4_000, 400), (20_000, None), (1_000_000, None)):
        driver = FakeDriver(
            answers={
                "memory/read_counts": counted_vectors("m", 1_000),
                "recall/index_size": [{"memories": database}],
                "recall/search_vectors": [{"seen": 3, "hits": hits}],
                "recall/search_vectors_exact": hits,
            }
        )
        found = make(driver).search_vectors(
            C,
            query,
            model="m",
            k=50,
            filters=RecallFilters(),
            passages=False,  # type: ignore[arg-type]
        )
        assert len(found) == 50
        asked = [p["candidates"] for _, p in driver.committed[0] if "candidates" in p]
        assert asked == ([first] if first else []), database
        assert ("recall/search_vectors_exact" in driver.ran()) is (first is None)


def test_the_databases_size_is_read_again_only_when_its_last_read_is_old(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hippocampus.store.neo4j.sizes import MAX_AGE_S

    query = [1.0] + [0.0] * 7
    hits = [{"id": f"m{i}", "similarity": 0.9 - i / 100} for i in range(50)]
    database = [4_000]
    driver = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m", 1_000),
            "recall/index_size": lambda p: [{"memories": database[0]}],
            "recall/search_vectors": [{"seen": 3, "hits": hits}],
        }
    )
    clock = [1000.0]
    monkeypatch.setattr("hippocampus.store.neo4j.sizes.time.monotonic", lambda: clock[0])
    store = make(driver)

    def first_width() -> int:
        driver.committed.clear()
        store.search_vectors(C, query, model="m", k=50, filters=RecallFilters(), passages=False)  # type: ignore[arg-type]
        return next(p["candidates"] for _, p in driver.committed[0] if "candidates" in p)

    assert first_width() == 400  # a quarter of the database's memories
    database[0] = 2_000
    clock[0] += MAX_AGE_S - 1.0
    assert first_width() == 400 and "recall/index_size" not in driver.ran()
    clock[0] += 2.0
    assert first_width() == 200 and "recall/index_size" in driver.ran()


def test_dense_search_with_a_filter_the_index_cannot_serve_scans_at_once() -> None:
    # 50 of 1,000 memories are decisions: the 10,000 nearest of the collection
    # would hold about 500, so the index may answer k=10. 50 of 100,000: they
    # would hold 5, and the exact scan answers at once. Fewer than k: likewise.
    query = [1.0] + [0.0] * 7
    exact = [{"id": "d", "similarity": 0.8}]
    for n, decisions, index in ((1_000, 50, True), (100_000, 50, False), (1_000, 5, False)):
        driver = FakeDriver(
            answers={
                "memory/read_counts": [
                    *counted_vectors("m", n - decisions),
                    {"key": '["memories","decision","active","m"]', "n": decisions},
                ],
                "recall/search_vectors": [{"seen": 3, "hits": exact}],
                "recall/search_vectors_exact": exact,
            }
        )
        filters = RecallFilters(categories=["decision"])
        found = make(driver).search_vectors(
            C,
            query,  # type: ignore[arg-type]
            model="m",
            k=10,
            filters=filters,
            passages=False,
        )
        assert found == [("d", 0.8)]
        assert ("recall/search_vectors" in driver.ran()) is index, (n, decisions)
        assert ("recall/search_vectors_exact" in driver.ran()) is not index, (n, decisions)


def test_many_dense_searches_share_one_statement_and_one_transaction() -> None:
    from hippocampus.store.neo4j.vectors import _MIN_CANDIDATES

    queries = [[1.0] + [0.0] * 7, [0.0] * 8, [0.0, 1.0] + [0.0] * 6]
    driver = FakeDriver(
        answers={
            "memory/read_counts": counted_vectors("m"),
            "recall/search_vectors_many": lambda params: [
                {"row": 0, "seen": 3, "hits": [{"id": "a", "similarity": 0.9}]},
                # The index ran out of room before two hits of this collection,
                # and does however wide the search.
                {"row": 2, "seen": _MIN_CANDIDATES, "hits": [{"id": "c", "similarity": 0.7}]},
            ],
            "recall/search_vectors": lambda params: [
                {"seen": params["candidates"], "hits": [{"id": "c", "similarity": 0.7}]}
            ],
            "recall/search_vectors_exact": [
                {"id": "c", "similarity": 0.7},
                {"id": "d", "similarity": 0.2},
            ],
        }
    )
    found = make(driver).search_vectors_many(
        C,
        queries,  # type: ignore[arg-type]
        model="m",
        k=2,
        filters=RecallFilters(),
        passages=False,
    )
    assert found == [[("a", 0.9)], [], [("c", 0.7), ("d", 0.2)]]
    assert len(driver.committed) == 1
    assert driver.ran() == [
        "memory/read_counts",
        "recall/index_size",
        "recall/search_vectors_many",
        *["recall/search_vectors"] * 4,
        "recall/search_vectors_exact",
    ]
    # The zero row is not sent; the rest keep their row numbers.
    sent = driver.params_of("recall/search_vectors_many")["queries"]
    assert [q["row"] for q in sent] == [0, 2]
    assert driver.params_of("recall/search_vectors_exact")["vector"] == queries[2]


def test_many_dense_searches_of_another_dimension_scan_the_collection() -> None:
    driver = FakeDriver(answers={"recall/search_vectors_exact": [{"id": "s", "similarity": 1.0}]})
    store = make(driver, dimensions=8)
    found = store.search_vectors_many(
        C,
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],  # type: ignore[arg-type]
        model="small",
        k=1,
        filters=RecallFilters(),
        passages=False,
    )
    assert found == [[("s", 1.0)], [("s", 1.0)]]
    assert driver.ran() == ["recall/search_vectors_exact", "recall/search_vectors_exact"]
    assert len(driver.committed) == 1
    # Nothing to search runs nothing.
    assert store.search_vectors_many(
        C,
        [[0.0, 0.0, 0.0]],  # type: ignore[arg-type]
        model="small",
        k=1,
        filters=RecallFilters(),
    ) == [[]]
    assert store.search_vectors_many(
        C,
        [[1.0, 0.0, 0.0]],  # type: ignore[arg-type]
        model="small",
        k=0,
        filters=RecallFilters(),
    ) == [[]]
    assert len(driver.committed) == 1


def test_pending_embeddings_are_counted_from_the_collections_counters() -> None:
    # Shards of a key come summed; memories with a vector of another model, or
    # none, are pending.
    driver = FakeDriver(
        answers={
            "memory/read_counts": [
                {"key": '["memories","insight","active","m"]', "n": 4},
                {"key": '["memories","insight","active","old"]', "n": 2},
                {"key": '["memories","decision","archived",null]', "n": 1},
                {"key": '["edges","ABOUT"]', "n": 9},
            ]
        }
    )
    assert make(driver).count_pending_embeddings(C, "m") == 3
    assert driver.params_of("memory/read_counts") == {"collection": C}


# -- conversation turns ---------------------------------------------------------------
# What the turn statements are given (the fake refuses a run missing any of their
# $parameters); what they do is the contract suite's (tests/contract/test_turns.py).


def _turn(memory_id: str, minute: int, conversation: str | None = "chat") -> Memory:
    return memory(memory_id).model_copy(
        update={
            "occurred_at": datetime(2024, 1, 1, 9, minute, tzinfo=UTC),
            "speaker": "ada",
            "retrieval": memory(memory_id).retrieval.model_copy(
                update={"conversation_ids": [conversation] if conversation else []}
            ),
        }
    )


def _stored_doc(m: Memory) -> list[dict[str, object]]:
    return [{"id": m.id, "doc": m.model_dump_json(), "embedding_model": None}]


def test_added_turns_are_linked_in_the_same_transaction() -> None:
    driver = FakeDriver()
    make(driver).add_memories(
        C, [MemoryRecord(memory=_turn("b", 2)), MemoryRecord(memory=_turn("x", 1, None))]
    )
    (tx,) = driver.committed
    assert [name for name, _ in tx] == [
        "memory/lock_turns",
        "memory/existing_ids",
        "memory/add_memories",
        "memory/link_turns",
        "memory/add_counts",
        "memory/add_term_counts",
    ]
    # The conversations are locked first, before any memory.
    assert driver.params_of("memory/lock_turns") == {"conversations": ["chat"], "collection": C}
    params = driver.params_of("memory/link_turns")
    assert params["places"] == [
        {"turn_of": "chat", "occurred_at": datetime(2024, 1, 1, 9, 2, tzinfo=UTC), "id": "b"}
    ]
    assert (params["weight"], params["kind"]) == (1.0, "sequence")
    row = driver.params_of("memory/add_memories")["memories"][0]
    assert (row["turn_of"], row["speaker"]) == ("chat", "ada")
    assert row["occurred_at"] == datetime(2024, 1, 1, 9, 2, tzinfo=UTC)

    plain = FakeDriver()
    make(plain).add_memories(C, [MemoryRecord(memory=memory("p"))])
    assert "memory/link_turns" not in plain.ran()


def test_a_turn_moved_or_deleted_relinks_its_old_and_new_place() -> None:
    stored = _turn("b", 2)
    driver = FakeDriver(
        answers={
            "memory/get_memories": _stored_doc(stored),
            "memory/replace_memory": [{"id": "b"}],
        }
    )
    make(driver).replace_memory(C, MemoryRecord(memory=_turn("b", 7)), replace_edges=False)
    # A move: read, its conversation locked, then the memory, read again.
    assert driver.ran() == [
        "memory/get_memories",
        "memory/lock_turns",
        "memory/lock_memories",
        "memory/get_memories",
        "memory/replace_memory",
        "memory/link_turns",
    ]
    assert [p["occurred_at"].minute for p in driver.params_of("memory/link_turns")["places"]] == [
        7,
        2,
    ]

    same = FakeDriver(
        answers={
            "memory/get_memories": _stored_doc(stored),
            "memory/replace_memory": [{"id": "b"}],
        }
    )
    make(same).replace_memory(C, MemoryRecord(memory=stored), replace_edges=False)
    assert same.ran() == [
        "memory/get_memories",
        "memory/lock_memories",
        "memory/get_memories",
        "memory/replace_memory",
    ]

    gone = FakeDriver(
        answers={
            "memory/get_memories": _stored_doc(stored),
            "memory/delete_memory": [{"deleted": True, "edges": ["NEXT"], "pruned": []}],
        }
    )
    assert make(gone).delete_memory(C, "b") is True
    assert gone.ran() == [
        "memory/get_memories",
        "memory/lock_turns",
        "memory/lock_memories",
        "memory/get_memories",
        "memory/delete_passages",
        "memory/delete_memory",
        "memory/link_turns",
        "memory/add_counts",
        "memory/add_term_counts",
    ]
    assert gone.params_of("memory/link_turns")["places"][0]["id"] == "b"

    absent = FakeDriver()
    assert make(absent).delete_memory(C, "b") is False
    assert "memory/lock_turns" not in absent.ran()


def test_neighbour_turns_and_time_filters_reach_the_statements() -> None:
    driver = FakeDriver(
        answers={
            "memory/neighbour_turns": [{"id": "b", "earlier": ["a"], "later": ["c", "d"]}],
            "recall/search_text": [
                {
                    "memories": 2,
                    "length": 5,
                    "dfs": [1],
                    "seen": 1,
                    "hits": [{"id": "b", "length": 2, "tfs": [1]}],
                }
            ],
        }
    )
    store = make(driver)
    assert store.neighbour_turns(C, ["b", "b", "z"], before=1, after=-3) == {
        "b": (["a"], ["c", "d"])
    }
    assert driver.params_of("memory/neighbour_turns") == {
        "collection": C,
        "ids": ["b", "z"],
        "before": 1,
        "after": 0,
    }
    after = datetime(2024, 1, 1, 9, 0)  # naive: UTC
    found = store.search_text(
        C, "kafka", k=3, filters=RecallFilters(occurred_after=after, speakers=["ada"])
    )
    assert [memory_id for memory_id, _ in found] == ["b"]
    params = driver.params_of("recall/search_text")
    assert params["occurred_after"] == after.replace(tzinfo=UTC)
    assert params["occurred_before"] is None and params["speakers"] == ["ada"]


def test_a_version_1_database_gets_its_turns_linked_at_setup_page_by_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hippocampus.store.neo4j import schema

    monkeypatch.setattr(schema, "WRITE_BATCH", 2)
    olds = [memory(f"m{i}") for i in range(3)]
    olds[1].retrieval.conversation_ids = ["talk"]

    def page(params: dict[str, Any]) -> list[dict[str, Any]]:
        rows = [m for m in olds if m.id > params["after"]][: params["limit"]]
        return [{"id": m.id, "doc": m.model_dump_json()} for m in rows]

    driver = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 1}],
            "memory/list_collections": lambda p: [{"collection": C}] if p["after"] < C else [],
            "schema/migrate_turns": page,
            # Version 6 then counts the collection afresh, and 7 ranks its hub edges.
            "schema/drop_counts": [{"deleted": 0}],
            "schema/rank_hub_edges": [{"memories": 0, "edges": 0, "last": None}],
        }
    )
    make(driver).setup(timeout_s=10.0)
    ran = driver.ran()
    assert "schema/memory_turn" in ran
    assert ran.index("schema/migrate_turns") < ran.index("schema/write_schema_version")
    pages = [tx for tx in driver.committed if tx and tx[0][0] == "schema/migrate_turns"]
    assert [params["after"] for _, params in (tx[0] for tx in pages)] == ["", "m1"]
    # The one turn is linked in the transaction of its page, nothing else.
    assert [[name for name, _ in tx] for tx in pages] == [
        ["schema/migrate_turns", "memory/lock_turns", "memory/link_turns"],
        ["schema/migrate_turns"],
    ]
    assert [p["id"] for p in pages[0][2][1]["places"]] == ["m1"]


def test_a_schema_of_version_one_gets_its_events_numbered_on_setup_batch_by_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hippocampus.store.neo4j import schema

    monkeypatch.setattr(schema, "WRITE_BATCH", 2)
    lasts = iter([T0.isoformat(), (T0 + timedelta(minutes=1)).isoformat()])
    driver = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 1}],
            "schema/list_event_collections": [{"collection": C}],
            "schema/number_events": lambda p: [
                {"numbered": 2 if p["after"] != T0.isoformat() else 1, "last": next(lasts)}
            ],
        }
    )
    make(driver).setup()
    ran = driver.ran()
    assert "schema/event_seq" in ran and "schema/event_log_key" in ran
    assert ran.index("schema/number_events") < ran.index("schema/write_schema_version")
    batches = [
        params for tx in driver.committed for name, params in tx if name == "schema/number_events"
    ]
    assert [(b["after"], b["limit"]) for b in batches] == [
        ("0001-01-01T00:00:00+00:00", 2),
        (T0.isoformat(), 2),
    ]
    assert driver.params_of("schema/write_schema_version")["version"] == SCHEMA_VERSION == 7

    fresh = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": None}],
        }
    )
    make(fresh).setup()
    assert "schema/number_events" not in fresh.ran()
    assert "schema/migrate_turns" not in fresh.ran()


def test_the_event_log_is_read_by_event_number_page_after_page() -> None:
    from hippocampus.store.neo4j.connection import PAGE

    def page(params: dict[str, object]) -> list[dict[str, object]]:
        after = int(params["after"])  # type: ignore[call-overload]
        numbers = range(after + 1, min(after + 1 + PAGE, PAGE + 3))
        return [
            {"type": "retrieval", "at": T0, "memory_ids": [], "payload": "", "seq": n}
            for n in numbers
        ]

    driver = FakeDriver(answers={"memory/iter_events": page})
    events = list(make(driver).iter_events(C))
    assert len(events) == PAGE + 3
    afters = [params["after"] for tx in driver.committed for _, params in tx]
    assert afters == [-1, PAGE - 1]


def test_appended_events_carry_no_client_side_order() -> None:
    # The server numbers them under the collection's log lock (commit order); a
    # client-made batch id would order concurrent appends by start time.
    from hippocampus.model import Event

    driver = FakeDriver()
    make(driver).append_events(C, [Event(type="retrieval", at=T0, memory_ids=["a"])])
    params = driver.params_of("memory/append_events")
    assert set(params) == {"events", "collection"}


def test_memories_are_listed_from_a_seekable_start() -> None:
    driver = FakeDriver()
    assert list(make(driver).iter_memories(C)) == []
    params = driver.params_of("memory/iter_memories")
    # A moment before any memory, never null: the page key is a range the
    # planner can seek (a null would make it an OR over the whole collection).
    assert params["after_at"] is not None and params["after_at"].year == 1
    assert params["after_id"] == ""


def test_a_decay_pass_goes_a_bounded_page_per_transaction_then_is_recorded() -> None:
    pages = iter(
        [
            [{"decayed": 7, "last": "m0999"}],
            [{"decayed": 2, "last": "m1500"}],
            [{"decayed": 0, "last": None}],
        ]
    )
    driver = FakeDriver(answers={"learn/decay_edges": lambda params: next(pages)})
    decayed = make(driver).decay_edges(C, period="2024-01", unused_before=T0, step=0.05, floor=0.1)
    assert decayed == 9
    assert [tx[0][0] for tx in driver.committed] == [
        "learn/decay_edges",
        "learn/decay_edges",
        "learn/decay_edges",
        "learn/record_decay_pass",
    ]
    afters = [tx[0][1]["after"] for tx in driver.committed[:3]]
    assert afters == ["", "m0999", "m1500"]
    assert all(tx[0][1]["limit"] <= 1_000 for tx in driver.committed[:3])
    assert driver.params_of("learn/record_decay_pass")["decayed"] == 9


def test_a_decay_pass_already_recorded_changes_nothing() -> None:
    driver = FakeDriver(answers={"learn/decay_edges": []})
    assert (
        make(driver).decay_edges(C, period="2024-01", unused_before=T0, step=0.05, floor=0.1) == 0
    )
    assert driver.ran() == ["learn/decay_edges"]


def test_dropping_a_collection_deletes_in_bounded_transactions_until_done() -> None:
    from hippocampus.store.neo4j.connection import WRITE_BATCH

    counts = iter([WRITE_BATCH, WRITE_BATCH, 17])
    passages = iter([WRITE_BATCH, 3])
    driver = FakeDriver(
        answers={
            "memory/drop_collection": lambda params: [{"deleted": next(counts)}],
            "memory/drop_passages": lambda params: [{"deleted": next(passages)}],
        }
    )
    make(driver).drop_collection(C)
    assert [[name for name, _ in tx] for tx in driver.committed] == [
        *[["memory/drop_passages"]] * 2,
        *[["memory/drop_collection"]] * 3,
    ]
    assert driver.params_of("memory/drop_collection")["limit"] == WRITE_BATCH


def test_updates_that_may_not_create_go_to_the_statement_that_creates_nothing() -> None:
    from hippocampus.model.association import EdgeUpdate

    def update(target: str, create: bool) -> EdgeUpdate:
        return EdgeUpdate(
            source="a",
            type=EdgeType.ABOUT,
            target=target,
            delta=0.1,
            cap=1.0,
            initial=0.3,
            at=T0,
            create=create,
        )

    driver = FakeDriver()
    make(driver).reinforce_edges(
        C, [update("x", True), update("y", True), update("x", False), update("z", True)]
    )
    # One transaction, edges in lock order; runs in order, so the second update
    # of x sees the first.
    assert len(driver.committed) == 1
    (tx,) = driver.committed
    assert [(name, [u["target"] for u in params["updates"]]) for name, params in tx] == [
        ("learn/reinforce_edges", ["x"]),
        ("learn/strengthen_edges", ["x"]),
        ("learn/reinforce_edges", ["y", "z"]),
    ]


def test_a_batch_names_its_hubs_in_one_order_across_its_memories() -> None:
    driver = FakeDriver()

    def record(memory_id: str, targets: str) -> MemoryRecord:
        edges = tuple(Edge(source=memory_id, type=EdgeType.ABOUT, target=t) for t in targets)
        return MemoryRecord(memory=memory(memory_id), edges=edges)

    make(driver).add_memories(C, [record("a", "zy"), record("b", "yz")])
    rows = driver.params_of("memory/upsert_edges")["edges"]
    assert [(r["target"], r["source"]) for r in rows] == [
        ("y", "a"),
        ("y", "b"),
        ("z", "a"),
        ("z", "b"),
    ]


def _server_error(code: str, message: str) -> Exception:
    """A failure as the driver raises it for a server's status code."""
    from neo4j.exceptions import Neo4jError

    return Neo4jError._hydrate_neo4j(code=code, message=message)


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (
            "Neo.DatabaseError.Transaction.TransactionLogError",
            "The database was unable to write transaction to log.",
            StoreFullError,
        ),
        (
            "Neo.DatabaseError.Transaction.TransactionCommitFailed",
            "Could not apply the transaction: java.io.IOException: No space left on device",
            StoreFullError,
        ),
        # Memory, not disk: the next call may well succeed.
        ("Neo.TransientError.General.OutOfMemoryError", "Java heap space", StoreUnavailableError),
        (
            "Neo.TransientError.General.MemoryPoolOutOfMemoryError",
            "The allocation of an extra 2.0 MiB would use more than the limit 1.0 GiB.",
            StoreUnavailableError,
        ),
        ("Neo.ClientError.Security.Unauthorized", "The client is unauthorized", StoreAuthError),
        ("Neo.DatabaseError.General.UnknownError", "something else", StoreError),
    ],
)
def test_server_status_codes_become_the_engine_errors_they_mean(
    code: str, message: str, expected: type[HippoError]
) -> None:
    failure = _server_error(code, message)
    with pytest.raises(expected) as raised:
        make(FakeDriver(failure=failure, fail_on="memory/add_memories")).add_memories(
            C, [MemoryRecord(memory=memory("a"))]
        )
    assert type(raised.value) is expected


def test_taking_a_pooled_connection_may_outlast_opening_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hippocampus.store.neo4j.store as module

    seen: dict[str, object] = {}

    def driver(uri: str, **config: object) -> FakeDriver:
        seen.update(config)
        return FakeDriver()

    monkeypatch.setattr(module.GraphDatabase, "driver", driver)
    Neo4jStore.connect("bolt://db:7687", user="neo4j", password="x", timeout_s=5.0, max_retry_s=5.0)
    acquisition, connection = seen["connection_acquisition_timeout"], seen["connection_timeout"]
    assert isinstance(acquisition, float) and isinstance(connection, float)
    assert acquisition > connection


_HUB_GONE = (
    "Neo.ClientError.Statement.EntityNotFound",
    "Unable to load NODE 4:0f1e:17: it was deleted by a concurrent transaction",
)
_HUB_LINKED = "Cannot delete node<17>, because it still has relationships."


def test_a_write_that_lost_a_race_for_a_hub_runs_again() -> None:
    # A delete pruned the hub between this write's MERGE finding it and linking
    # to it: the second run makes the hub anew.
    driver = FakeDriver(
        failure=_server_error(*_HUB_GONE), fail_on="memory/upsert_edges", fail_times=1
    )
    make(driver).upsert_edges(C, [Edge(source="a", type=EdgeType.ABOUT, target="cache")])
    assert driver.ran() == ["memory/upsert_edges"]

    # The prune's side: its hub gained an edge after its check.
    pruner = FakeDriver(
        failure=ConstraintError(_HUB_LINKED),
        fail_on="memory/delete_memory",
        fail_times=2,
        answers={"memory/delete_memory": [{"deleted": True, "edges": [], "pruned": ["Concept"]}]},
    )
    assert make(pruner).delete_memory(C, "a") is True
    # The memory is read, locked and read again first (a conversation turn's
    # neighbours are relinked, and the counts move by what it held).
    assert pruner.ran() == [
        "memory/get_memories",
        "memory/lock_memories",
        "memory/get_memories",
        "memory/delete_passages",
        "memory/delete_memory",
        "memory/add_counts",
    ]


@pytest.mark.parametrize(
    "failure", [_server_error(*_HUB_GONE), ConstraintError(_HUB_LINKED)], ids=["gone", "linked"]
)
def test_a_write_that_keeps_losing_races_is_unavailable_never_a_store_fault(
    failure: Exception,
) -> None:
    from hippocampus.model.association import EdgeUpdate

    driver = FakeDriver(failure=failure, fail_on="learn/reinforce_edges")
    update = EdgeUpdate(
        source="a", type=EdgeType.ABOUT, target="cache", delta=0.1, cap=1.0, initial=0.3, at=T0
    )
    with pytest.raises(StoreUnavailableError) as raised:
        make(driver).reinforce_edges(C, [update])
    assert type(raised.value) is StoreUnavailableError
    assert driver.committed == []
    # A read that meets a deleted node is unavailable too (the driver's error
    # would otherwise be a 500).
    reader = FakeDriver(failure=failure, fail_on="memory/get_memories")
    with pytest.raises(StoreUnavailableError):
        make(reader).get_memories(C, ["a"])


def _deadlock_under_a_failed_result() -> Exception:
    """A deadlock as the driver's rollback can report it: under a failed result."""
    from neo4j.exceptions import ResultFailedError

    deadlock = _server_error(
        "Neo.TransientError.Transaction.DeadlockDetected",
        "ForsetiClient[transactionId=2269] can't acquire ExclusiveLock on NODE(7201)",
    )
    failed = ResultFailedError(None, "The result has failed.")
    failed.__cause__ = deadlock
    return failed


def test_a_deadlock_reported_under_a_failed_result_runs_again() -> None:
    driver = FakeDriver(
        failure=_deadlock_under_a_failed_result(), fail_on="memory/upsert_edges", fail_times=1
    )
    make(driver).upsert_edges(C, [Edge(source="a", type=EdgeType.ABOUT, target="cache")])
    assert driver.ran() == ["memory/upsert_edges"]
    assert len(driver.committed) == 1

    # Still deadlocking after the runs again, or on a read: unavailable (503,
    # try again), never a store fault (500).
    stuck = FakeDriver(failure=_deadlock_under_a_failed_result(), fail_on="memory/upsert_edges")
    with pytest.raises(StoreUnavailableError) as raised:
        make(stuck).upsert_edges(C, [Edge(source="a", type=EdgeType.ABOUT, target="cache")])
    assert type(raised.value) is StoreUnavailableError and stuck.committed == []
    reader = FakeDriver(failure=_deadlock_under_a_failed_result(), fail_on="memory/get_memories")
    with pytest.raises(StoreUnavailableError):
        make(reader).get_memories(C, ["a"])


def test_a_lost_race_reported_under_a_failed_result_runs_again() -> None:
    from neo4j.exceptions import ResultFailedError

    failed = ResultFailedError(None, "The result has failed.")
    failed.__cause__ = _server_error(*_HUB_GONE)
    driver = FakeDriver(failure=failed, fail_on="memory/upsert_edges", fail_times=1)
    make(driver).upsert_edges(C, [Edge(source="a", type=EdgeType.ABOUT, target="cache")])
    assert driver.ran() == ["memory/upsert_edges"]


def test_a_failed_result_with_no_server_error_beneath_is_a_store_fault() -> None:
    from neo4j.exceptions import ResultFailedError

    driver = FakeDriver(
        failure=ResultFailedError(None, "The result has failed."), fail_on="memory/upsert_edges"
    )
    with pytest.raises(StoreError) as raised:
        make(driver).upsert_edges(C, [Edge(source="a", type=EdgeType.ABOUT, target="cache")])
    assert type(raised.value) is StoreError and driver.committed == []


def test_a_uniqueness_conflict_is_not_taken_for_a_race() -> None:
    driver = FakeDriver(
        failure=ConstraintError("Node(17) already exists with label `Memory`"),
        fail_on="memory/add_memories",
    )
    with pytest.raises(ConflictError):
        make(driver).add_memories(C, [MemoryRecord(memory=memory("a"))])


def test_the_plan_checks_see_each_statement_a_store_runs_with_its_operators() -> None:
    # tests/contract/test_plans.py runs only against a server; its machinery is
    # checked here, on the stand-in driver.
    from tests.contract.plans import SCANS, PlanningDriver, db_hits, operator_name, operators

    scan = {
        "operatorType": "ProduceResults@neo4j",
        "dbHits": 1,
        "children": [{"operatorType": "NodeByLabelScan@neo4j", "dbHits": 7, "children": []}],
    }
    fake = FakeDriver(plans={"memory/get_memories": scan})
    planning = PlanningDriver(fake)
    store = Neo4jStore(planning, dimensions=8)  # type: ignore[arg-type]
    store.get_memories(C, ["a"])
    (planned,) = planning.planned
    assert planned.name == "memory/get_memories" and planned.params["ids"] == ["a"]
    names = [operator_name(node) for node in operators(planned.plan)]
    assert names == ["ProduceResults", "NodeByLabelScan"] and names[1] in SCANS
    assert db_hits(planned.plan) == 8
    assert fake.ran() == ["memory/get_memories"]  # the statement itself ran once

    profiling = PlanningDriver(fake, mode="PROFILE", only=frozenset({"memory/read_counts"}))
    fake.answers["memory/read_counts"] = [{"key": '["events","retrieval"]', "n": 0}]
    fake.plans["memory/read_counts"] = {"operatorType": "NodeIndexSeek@neo4j", "dbHits": 3}
    Neo4jStore(profiling, dimensions=8).stats(C)  # type: ignore[arg-type]
    assert [p.name for p in profiling.planned] == ["memory/read_counts"]
    assert db_hits(profiling.plans_of("memory/read_counts")[0]) == 3


def test_a_learning_update_locks_before_it_reads_and_writes_in_the_same_transaction() -> None:
    stored = memory("a")
    driver = FakeDriver(
        answers={
            "memory/get_memories": [
                {"id": "a", "doc": stored.model_dump_json(), "embedding_model": None}
            ],
            # A document made by the lock itself has no value yet: it is absent.
            "memory/get_states": [
                {"key": "counter", "value": '{"n":1}'},
                {"key": "new", "value": None},
            ],
            "memory/replace_memory": [{"id": "a"}],
        }
    )
    store = make(driver)
    given: dict[str, object] = {}

    def change(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        given.update(states=dict(states))
        meta = memories["a"].retrieval
        return Learned(
            memories=[
                memories["a"].model_copy(
                    update={"retrieval": meta.model_copy(update={"usage_count": 1})}
                )
            ],
            states={"counter": {"n": 2}},
            events=[Event(type="use", at=T0, memory_ids=["a"])],
        )

    store.learn(C, memory_ids=["a", "a"], state_keys=["new", "counter"], change=change)
    assert given == {"states": {"counter": {"n": 1}}}
    assert len(driver.committed) == 1
    assert driver.committed[0][:2] == [
        ("learn/lock_memories", {"ids": ["a"], "collection": C}),
        ("learn/lock_states", {"keys": ["counter", "new"], "collection": C}),
    ]
    assert driver.ran()[2:] == [
        "memory/get_memories",
        "memory/get_states",
        "memory/replace_memory",
        "memory/put_states",
        "learn/drop_unwritten_states",
        "memory/append_events",
        "memory/add_counts",
    ]
    assert driver.params_of("learn/drop_unwritten_states")["keys"] == ["new"]
    written = Memory.model_validate_json(
        driver.params_of("memory/replace_memory")["properties"]["doc"]
    )
    assert written.retrieval.usage_count == 1


def test_an_edit_that_keeps_learning_locks_the_memory_before_reading_it() -> None:
    stored = memory("a")
    meta = stored.retrieval
    learned = stored.model_copy(update={"retrieval": meta.model_copy(update={"usage_count": 7})})
    driver = FakeDriver(
        answers={
            "memory/get_memories": [
                {"id": "a", "doc": learned.model_dump_json(), "embedding_model": None}
            ],
            "memory/replace_memory": [{"id": "a"}],
        }
    )
    store = make(driver)
    edited = stored.model_copy(update={"importance": 0.9})
    store.replace_memory(C, MemoryRecord(memory=edited, keep_learned=True), replace_edges=False)
    # The first read only looks for a move among turns (whose conversations would
    # be locked before the memory); the one the edit keeps comes after the lock.
    assert driver.ran()[:4] == [
        "memory/get_memories",
        "learn/lock_memories",
        "memory/get_memories",
        "memory/replace_memory",
    ]
    written = Memory.model_validate_json(
        driver.params_of("memory/replace_memory")["properties"]["doc"]
    )
    assert (written.importance, written.retrieval.usage_count) == (0.9, 7)


def test_a_learning_update_that_makes_a_turn_runs_again_its_conversation_locked_first() -> None:
    loose = _turn("a", 3, None)
    driver = FakeDriver(answers={"memory/get_memories": _stored_doc(loose)})
    calls = 0

    def merged(memories: Mapping[str, Memory], states: Mapping[str, dict[str, Any]]) -> Learned:
        nonlocal calls
        calls += 1
        return Learned(memories=[_turn("a", 3)])  # now a turn of "chat"

    make(driver).learn(C, memory_ids=["a"], change=merged)
    # The first try found the conversation unlocked and was rolled back; the
    # second locked it before the memory.
    assert calls == 2 and len(driver.committed) == 1
    assert driver.ran()[:2] == ["memory/lock_turns", "learn/lock_memories"]
    assert driver.params_of("memory/lock_turns")["conversations"] == ["chat"]
    assert driver.ran()[-1] == "memory/link_turns"


def _sampled(vectors: Mapping[str, np.ndarray]) -> Any:
    """An answer to ``memory/sample_vectors``: the memories of ``vectors`` whose
    hashes (their ids spelt out in hex) lie in the arc asked for."""
    hashes = {mid: mid.encode().hex().ljust(64, "0") for mid in vectors}

    def answer(params: dict[str, Any]) -> list[dict[str, Any]]:
        inside = sorted(
            (h, mid) for mid, h in hashes.items() if params["low"] <= h < params["high"]
        )
        return [
            {"id": mid, "hash": h, "embedding": vectors[mid].tolist()}
            for h, mid in inside[: params["size"]]
        ]

    return answer


def _samples_read(driver: FakeDriver) -> int:
    """Transactions that read a sample (one or two runs of the statement each)."""
    return sum(1 for tx in driver.committed if any(n == "memory/sample_vectors" for n, _ in tx))


def test_crowding_measures_against_a_sample_read_once_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    e = np.eye(8, dtype=np.float32)
    vectors = {"a": e[1], "b": 0.8 * e[1] + 0.6 * e[2], "c": 2.0 * e[3]}
    driver = FakeDriver(
        answers={
            "memory/sample_vectors": _sampled(vectors),
            "memory/model_vectors": lambda p: [
                {
                    "vectors": [
                        {"id": i, "embedding": vectors[i].tolist()}
                        for i in p["ids"]
                        if i in vectors
                    ]
                }
            ],
        }
    )
    clock = [1000.0]
    monkeypatch.setattr("hippocampus.store.neo4j.crowding.time.monotonic", lambda: clock[0])
    store = make(driver)
    crowding = store.crowding(C, ["a", "c", "missing"], model="m")
    # Three memories: each one's neighbours are the two others, itself never
    # (c's stored vector is not at unit length; it counts as one).
    assert crowding == pytest.approx({"a": (0.8 + 0.0) / 2, "c": 0.0})
    assert driver.params_of("memory/sample_vectors")["model"] == "m"
    assert driver.params_of("memory/model_vectors")["model"] == "m"
    store.crowding(C, ["b"], model="m")
    assert _samples_read(driver) == 1
    clock[0] += 61.0
    store.crowding(C, ["b"], model="m")
    assert _samples_read(driver) == 2


def test_a_sample_goes_round_the_hashes_from_a_random_one_and_estimates_the_total() -> None:
    from hippocampus.store.neo4j.crowding import _sample_total

    def rows(*hashes: str) -> list[dict[str, str]]:
        return [{"hash": h} for h in hashes]

    start = "8" + "0" * 15  # half way round
    # Short: every memory there is, whatever the hashes.
    assert _sample_total(start, rows("9" * 64), rows("1" * 64)) == 2
    full = CROWDING_SAMPLE
    # A full sample from half way to three quarters round: a quarter of the
    # circle holds it, so the collection holds four times as many.
    onward = rows(*["a" * 64] * (full - 1), "c" + "0" * 63)
    assert _sample_total(start, onward, []) == 4 * full
    # Going round past the end: from half way to a quarter after the start.
    assert _sample_total(start, rows("f" * 64), rows(*["0" * 64] * (full - 2), "4" + "0" * 63)) == (
        pytest.approx(full / 0.75, abs=1)
    )
    # Hashes the engine did not make: the sample counts as the whole.
    assert _sample_total(start, rows(*["not a hash"] * full), []) == full


def test_samples_are_kept_for_the_most_recently_used_collections_only() -> None:
    from hippocampus.store.neo4j.crowding import SAMPLES_KEPT

    e = np.eye(8, dtype=np.float32)
    vectors = {"a": e[1], "b": e[2]}
    driver = FakeDriver(
        answers={
            "memory/sample_vectors": _sampled(vectors),
            "memory/model_vectors": lambda p: [
                {
                    "vectors": [
                        {"id": i, "embedding": vectors[i].tolist()}
                        for i in p["ids"]
                        if i in vectors
                    ]
                }
            ],
        }
    )
    store = make(driver)
    for n in range(SAMPLES_KEPT + 1):
        store.crowding(f"c{n}", ["a"], model="m")
    assert _samples_read(driver) == SAMPLES_KEPT + 1
    store.crowding(f"c{SAMPLES_KEPT}", ["a"], model="m")  # the newest: still kept
    assert _samples_read(driver) == SAMPLES_KEPT + 1
    store.crowding("c0", ["a"], model="m")  # the oldest: gone, read again
    assert _samples_read(driver) == SAMPLES_KEPT + 2


def test_one_thread_reads_a_sample_while_the_others_wait_for_it() -> None:
    e = np.eye(8, dtype=np.float32)
    vectors = {"a": e[1], "b": e[2]}
    sampled = _sampled(vectors)
    reading, release = threading.Event(), threading.Event()

    def slow(params: dict[str, Any]) -> list[dict[str, Any]]:
        reading.set()
        release.wait(timeout=10)
        return sampled(params)  # type: ignore[no-any-return]

    driver = FakeDriver(
        answers={
            "memory/sample_vectors": slow,
            "memory/model_vectors": lambda p: [
                {
                    "vectors": [
                        {"id": i, "embedding": vectors[i].tolist()}
                        for i in p["ids"]
                        if i in vectors
                    ]
                }
            ],
        }
    )
    store = make(driver)
    found: list[dict[str, float]] = []
    threads = [
        threading.Thread(target=lambda: found.append(store.crowding(C, ["a"], model="m")))
        for _ in range(4)
    ]
    threads[0].start()
    assert reading.wait(timeout=10)
    for t in threads[1:]:
        t.start()
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert found == [{"a": 0.0}] * 4
    assert _samples_read(driver) == 1
