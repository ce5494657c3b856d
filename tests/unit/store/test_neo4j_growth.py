"""The Neo4j store's bounded growth around its Cypher, on a stand-in driver: the
event log's retention and the due dates of resurfacing. What the Cypher does is
the contract suite's job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory, RetrievalMeta, content_hash
from hippocampus.schedule import due_keys
from hippocampus.store import MemoryRecord
from hippocampus.store.neo4j import Neo4jStore
from hippocampus.store.neo4j.connection import WRITE_BATCH
from tests.unit.store.neo4j_fake import FakeDriver

C = "org:acme"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def make(driver: FakeDriver) -> Neo4jStore:
    return Neo4jStore(driver, dimensions=8)  # type: ignore[arg-type]


def test_compaction_goes_a_bounded_batch_per_transaction_until_done() -> None:
    counts = iter([WRITE_BATCH, WRITE_BATCH, 12])
    driver = FakeDriver(
        answers={"memory/compact_events": lambda params: [{"dropped": next(counts)}]}
    )
    assert make(driver).compact_events(C, before=T0, keep=50) == 2 * WRITE_BATCH + 12
    assert [[name for name, _ in tx] for tx in driver.committed] == [["memory/compact_events"]] * 3
    assert driver.params_of("memory/compact_events") == {
        "collection": C,
        "before": T0,
        "keep": 50,
        "limit": WRITE_BATCH,
    }


def test_compaction_without_bounds_runs_nothing_and_a_negative_count_is_refused() -> None:
    driver = FakeDriver()
    store = make(driver)
    assert store.compact_events(C) == 0
    with pytest.raises(InvalidInputError):
        store.compact_events(C, keep=-1)
    assert driver.ran() == []


def test_stats_count_every_event_appended_and_hold_back_those_compacted() -> None:
    driver = FakeDriver(
        answers={
            "memory/read_counts": [
                {"key": '["events","retrieval"]', "n": 14},
                {"key": '["events","surfaced"]', "n": 3},
                {"key": '["events","use"]', "n": 1},
            ],
            "memory/stats_compacted_events": [
                {"type": "retrieval", "n": 10},
                {"type": "surfaced", "n": 3},
            ],
        }
    )
    stats = make(driver).stats(C)
    assert stats.events_by_type == {"retrieval": 14, "surfaced": 3, "use": 1}
    assert (stats.events, stats.events_retained) == (18, 5)


# -- the resurfacing index -----------------------------------------------------------------


def _memory(memory_id: str, **retrieval: object) -> Memory:
    text = f"memory {memory_id}"
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        created_at=T0,
        updated_at=T0,
        content_hash=content_hash(text),
        retrieval=RetrievalMeta.model_validate(retrieval),
    )


def test_every_memory_write_carries_the_memorys_due_dates() -> None:
    m = _memory("a", usage_count=2)
    keys = due_keys(m)
    expected = {
        "seed_due": keys.seed_due,
        "seed_span": keys.seed_span,
        "fsrs_due": keys.fsrs_due,
        "fsrs_span": keys.fsrs_span,
    }
    driver = FakeDriver(answers={"memory/existing_ids": [], "memory/replace_memory": [{"id": "a"}]})
    store = make(driver)
    store.add_memories(C, [MemoryRecord(memory=m)])
    (row,) = driver.params_of("memory/add_memories")["memories"]
    assert {k: row[k] for k in expected} == expected
    store.replace_memory(C, MemoryRecord(memory=m), replace_edges=False)
    props = driver.params_of("memory/replace_memory")["properties"]
    assert {k: props[k] for k in expected} == expected


def test_due_memories_ask_the_index_for_the_schedule_and_read_the_documents() -> None:
    m = _memory("a")
    driver = FakeDriver(
        answers={"memory/due_memories": [{"doc": m.model_dump_json(), "embedding_model": None}]}
    )
    store = make(driver)
    assert store.due_memories(C, schedule="fsrs", now=T0, limit=7) == [m]
    assert driver.params_of("memory/due_memories") == {
        "collection": C,
        "schedule": "fsrs",
        "now": 1_704_067_200_000_000,
        "limit": 7,
    }
    with pytest.raises(InvalidInputError):
        store.due_memories(C, schedule="daily", now=T0, limit=7)  # type: ignore[arg-type]


def test_setup_dates_the_memories_of_a_version_4_database_page_by_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hippocampus.store.neo4j import schema
    from tests.unit.store.test_neo4j_store import _indexes

    monkeypatch.setattr(schema, "WRITE_BATCH", 2)
    olds = [_memory(f"m{i}", usage_count=i) for i in range(3)]

    def undated(params: dict[str, object]) -> list[dict[str, object]]:
        after = str(params["after"])
        rows = [m for m in olds if m.id > after][:2]
        return [{"id": m.id, "doc": m.model_dump_json()} for m in rows]

    driver = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 4}],
            "memory/list_collections": lambda p: [{"collection": C}] if p["after"] < C else [],
            "schema/list_undated_memories": undated,
            "schema/drop_counts": [{"deleted": 0}],
            "schema/rank_hub_edges": [{"memories": 0, "edges": 0, "last": None}],
        }
    )
    make(driver).setup()
    ran = driver.ran()
    assert "schema/memory_fsrs_due" in ran and "schema/memory_seed_due" in ran
    assert ran.count("schema/date_memories") == 2
    assert ran.index("schema/date_memories") < ran.index("schema/write_schema_version")
    dated = [
        item
        for tx in driver.committed
        for name, params in tx
        if name == "schema/date_memories"
        for item in params["items"]
    ]
    assert [item["id"] for item in dated] == ["m0", "m1", "m2"]
    assert dated[2]["seed_due"] == due_keys(olds[2]).seed_due


def test_setup_counts_the_collections_of_a_version_5_database_once() -> None:
    from tests.unit.store.test_neo4j_store import _indexes

    driver = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 5}],
            "memory/list_collections": lambda p: [{"collection": C}] if p["after"] < C else [],
            "schema/drop_counts": [{"deleted": 0}],
            "schema/count_memories": [
                {
                    "category": "insight",
                    "tier": "active",
                    "model": "m",
                    "n": 3,
                    "scored": 2,
                    "quality_sum": 1.5,
                },
                {
                    "category": "insight",
                    "tier": "active",
                    "model": None,
                    "n": 1,
                    "scored": 0,
                    "quality_sum": None,
                },
            ],
            "schema/count_edges": [{"type": "ABOUT", "n": 4}],
            "schema/count_hubs": [{"kind": "Concept", "n": 2}, {"kind": "Domain", "n": 0}],
            "schema/count_events": [{"type": "use", "n": 2}],
            "memory/stats_compacted_events": [{"type": "use", "n": 5}],
            "schema/rank_hub_edges": [{"memories": 0, "edges": 0, "last": None}],
        }
    )
    make(driver).setup()
    ran = driver.ran()
    assert "schema/count_key" in ran
    assert ran.index("schema/drop_counts") < ran.index("memory/add_counts")
    assert ran.index("memory/add_counts") < ran.index("schema/write_schema_version")
    params = driver.params_of("memory/add_counts")
    assert (params["collection"], params["shard"]) == (C, 0)
    assert {row["key"]: row["n"] for row in params["counts"]} == {
        '["edges","ABOUT"]': 4,
        '["events","use"]': 7,
        '["hubs","Concept"]': 2,
        '["memories","insight","active","m"]': 3,
        '["memories","insight","active",null]': 1,
        '["quality_scored"]': 2,
        '["quality_sum"]': 1.5,
    }

    current = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 7}],
        }
    )
    make(current).setup()
    assert "memory/add_counts" not in current.ran()


def test_setup_ranks_the_hub_edges_of_a_version_6_database_page_by_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hippocampus.store.neo4j import schema
    from tests.unit.store.test_neo4j_store import _indexes

    monkeypatch.setattr(schema, "WRITE_BATCH", 2)
    ids = ["m0", "m1", "m2"]

    def page(params: dict[str, object]) -> list[dict[str, object]]:
        done = [i for i in ids if i > str(params["after"])][: int(str(params["limit"]))]
        return [{"memories": len(done), "edges": 3 * len(done), "last": max(done, default=None)}]

    driver = FakeDriver(
        answers={
            "schema/show_indexes": _indexes("ONLINE"),
            "schema/read_schema_version": [{"version": 6}],
            "memory/list_collections": lambda p: [{"collection": C}] if p["after"] < C else [],
            "schema/rank_hub_edges": page,
        }
    )
    make(driver).setup()
    ran = driver.ran()
    assert "schema/trigger_edge_rank" in ran and "memory/add_counts" not in ran
    assert ran.index("schema/rank_hub_edges") < ran.index("schema/write_schema_version")
    pages = [p for tx in driver.committed for n, p in tx if n == "schema/rank_hub_edges"]
    # A page per transaction: two memories, then the last one.
    assert [p["after"] for p in pages] == ["", "m1"]
    assert all(len(tx) == 1 for tx in driver.committed if tx[0][0] == "schema/rank_hub_edges")


def test_edge_ends_come_page_by_page_as_plain_tuples() -> None:
    from hippocampus.store.neo4j.connection import PAGE

    def page(params: dict[str, object]) -> list[dict[str, object]]:
        start = 0 if params["after"] == "" else int(str(params["after"])[1:]) + 1
        return [
            {"source": f"m{i:04d}", "edges": [["ABOUT", "redis", 0.5]] if i % 2 else []}
            for i in range(start, min(start + PAGE, PAGE + 2))
        ]

    driver = FakeDriver(answers={"memory/iter_edge_ends": page})
    ends = list(make(driver).iter_edge_ends(C))
    assert len(ends) == (PAGE + 2) // 2
    assert ends[0] == ("m0001", "ABOUT", "redis", 0.5)
    assert driver.ran() == ["memory/iter_edge_ends"] * 2
