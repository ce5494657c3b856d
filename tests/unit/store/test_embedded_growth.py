"""The embedded store's event log retention beyond the contract: databases from
before it, and compaction in bounded transactions."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.model import Event
from engine.store.embedded import EmbeddedStore
from engine.store.embedded import store as store_module
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
    monkeypatch.setattr(store_module, "_COMPACT_BATCH", 7)
    with EmbeddedStore(tmp_path) as store:
        events = [Event(type="use", at=T0 + timedelta(minutes=i)) for i in range(30)]
        store.append_events(C, events)
        commits: list[int] = []
        real = store_module.event_log.compact

        def counted(*args: object, **kwargs: object) -> int:
            n = real(*args, **kwargs)  # type: ignore[arg-type]
            commits.append(n)
            return n

        monkeypatch.setattr(store_module.event_log, "compact", counted)
        assert store.compact_events(C, before=T0 + timedelta(minutes=20), keep=25) == 20
        assert commits == [7, 7, 6]
        assert list(store.iter_events(C)) == events[20:]
        assert store.stats(C).events_by_type == {"use": 30}
