"""The embedded store's bounded growth beyond the contract: the event log's
retention (databases from before it, compaction in bounded transactions) and
the resurfacing index (its partial sort, databases from before it, its checks)."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hippocampus.model import Edge, EdgeType, Event, Memory, RetrievalMeta, Tier, content_hash
from hippocampus.schedule import DueKeys
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded import edges as edges_module
from hippocampus.store.embedded import events as events_module
from hippocampus.store.embedded import store as store_module
from hippocampus.store.embedded.due import DueEntry, DueIndex
from tests.unit.store.test_embedded_store_graph import V1_SCHEMA

C = "org:acme"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_events_of_an_older_database_get_their_time_and_totals(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / store_module.DB_FILE)
    conn.executescript(V1_SCHEMA)
    # As the store wrote them: isoformat(), and pydantic's JSON (Z for UTC).
    stamps = [(T0 + timedelta(days=d)).isoformat() for d in range(4)] + ["2024-01-10T00:00:00Z"]
    conn.executemany(
        "INSERT INTO events (collection, type, at, memory_ids, payload) VALUES (?, ?, ?, ?, ?)",
        [(C, "retrieval", at, "[]", "{}") for at in stamps],
    )
    conn.commit()
    conn.close()

    with EmbeddedStore(tmp_path) as store:
        assert store.stats(C).events == 5
        assert store.compact_events(C, before=T0 + timedelta(days=2)) == 2
        assert [e.at for e in store.iter_events(C)] == [
            T0 + timedelta(days=2),
            T0 + timedelta(days=3),
            T0 + timedelta(days=9),
        ]
        assert store.compact_events(C, before=T0 + timedelta(days=9, seconds=1)) == 3
        stats = store.stats(C)
        assert (stats.events, stats.events_retained) == (5, 0)


def test_compaction_goes_a_bounded_batch_per_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events_module, "_COMPACT_BATCH", 7)
    with EmbeddedStore(tmp_path) as store:
        events = [Event(type="use", at=T0 + timedelta(minutes=i)) for i in range(30)]
        store.append_events(C, events)
        commits: list[int] = []
        real = events_module.compact

        def counted(*args: object, **kwargs: object) -> int:
            n = real(*args, **kwargs)  # type: ignore[arg-type]
            commits.append(n)
            return n

        monkeypatch.setattr(events_module, "compact", counted)
        assert store.compact_events(C, before=T0, keep=10) == 20
        assert commits == [7, 7, 6]
        assert list(store.iter_events(C)) == events[20:]
        assert store.stats(C).events_by_type == {"use": 30}


# -- the resurfacing index -----------------------------------------------------------------


def _full_sort(entries: list[DueEntry], schedule: str, now: int, limit: int) -> list[str]:
    rows = []
    for memory_id, active, keys in entries:
        due = keys.seed_due if schedule == "seed" else keys.fsrs_due
        span = keys.seed_span if schedule == "seed" else keys.fsrs_span
        if active and due <= now:
            rows.append((-keys.value, -(1.0 + (now - due) / span), memory_id))
    return [memory_id for _, _, memory_id in sorted(rows)[:limit]]


@pytest.mark.parametrize("ties", ["none", "values", "everything"])
def test_the_due_index_takes_what_a_full_sort_would(ties: str) -> None:
    rng = random.Random(3)
    entries = []
    for i in range(3_000):
        value = 0.25 if ties != "none" else rng.random()
        due = 1_000 if ties == "everything" else rng.randrange(0, 10_000)
        span = 500 if ties == "everything" else rng.randrange(1, 5_000)
        entries.append(
            DueEntry(
                f"m{rng.randrange(10**9):09d}-{i}",
                rng.random() < 0.9,
                DueKeys(value, due, span, due + 7, span),
            )
        )
    index = DueIndex()
    index.put(entries)
    for schedule in ("seed", "fsrs"):
        for now in (0, 2_000, 20_000):
            for limit in (1, 10, 5_000):
                assert index.due(schedule, now, limit) == _full_sort(  # type: ignore[arg-type]
                    entries, schedule, now, limit
                ), (schedule, now, limit)
    # Removing rows keeps the others whole.
    for entry in entries[::3]:
        index.remove(entry.id)
    kept = [e for i, e in enumerate(entries) if i % 3]
    assert index.snapshot() == {e.id: e for e in kept}
    assert index.due("fsrs", 20_000, 50) == _full_sort(kept, "fsrs", 20_000, 50)


def test_memories_of_an_older_database_get_their_due_dates(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / store_module.DB_FILE)
    conn.executescript(V1_SCHEMA)
    made = [
        _memory("fresh", days=0),
        _memory("week", days=-7),
        _memory("used", days=-7, last_used=T0 - timedelta(days=1), uses=3),
        _memory("archived", days=-30, tier=Tier.ARCHIVED),
    ]
    conn.executemany(
        "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                C,
                m.id,
                m.model_dump_json(),
                m.category,
                m.tier.value,
                m.content_hash,
                (m.created_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1),
                None,
                None,
            )
            for m in made
        ],
    )
    conn.commit()
    conn.close()
    with EmbeddedStore(tmp_path) as store:
        assert store.integrity_problems() == []
        assert [m.id for m in store.due_memories(C, schedule="seed", now=T0, limit=10)] == ["week"]
        due = store.due_memories(C, schedule="fsrs", now=T0 + timedelta(days=7), limit=10)
        assert [m.id for m in due] == ["week", "used", "fresh"]  # most overdue first


def test_the_integrity_check_finds_due_dates_out_of_step(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        store.add_memories(C, [MemoryRecord(memory=_memory(f"m{i}", days=-i)) for i in range(5)])
        assert store.integrity_problems() == []
        with store._write_lock, store._transaction("spoil") as conn:
            conn.execute("UPDATE memories SET fsrs_due = 0 WHERE id = 'm1'")
        problems = store.integrity_problems()
        assert any("disagree with their documents" in p for p in problems), problems
        assert any("due index differs" in p for p in problems), problems


def _memory(
    memory_id: str,
    *,
    days: int,
    tier: Tier = Tier.ACTIVE,
    last_used: datetime | None = None,
    uses: int = 0,
) -> Memory:
    text = f"memory {memory_id}"
    at = T0 + timedelta(days=days)
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        tier=tier,
        created_at=at,
        updated_at=at,
        content_hash=content_hash(text),
        retrieval=RetrievalMeta(last_used=last_used, usage_count=uses),
    )


def test_edge_ends_stream_page_after_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edges_module, "_EDGE_PAGE", 3)
    with EmbeddedStore(tmp_path) as store:
        store.add_memories(
            C,
            [
                MemoryRecord(
                    memory=_memory(f"m{i}", days=0),
                    edges=[
                        Edge(source=f"m{i}", type=EdgeType.ABOUT, target=f"c{j}", weight=0.5)
                        for j in range(i % 3 + 1)
                    ],
                )
                for i in range(7)
            ],
        )
        ends = list(store.iter_edge_ends(C))
        assert ends == [(e.source, e.type.value, e.target, e.weight) for e in store.iter_edges(C)]
        assert len(ends) == 13  # 1 + 2 + 3 + 1 + 2 + 3 + 1
