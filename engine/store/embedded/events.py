"""The embedded store's event log (:class:`~hippocampus.store.roles.EventRole`):
appended, read back in order, and compacted: dropping what its retention no longer
keeps, without changing the totals ``stats()`` reports.

``event_totals`` (kept by triggers, schema.sql) counts the events the log holds;
``events_compacted`` counts, by type, those compaction dropped. The log's totals
are their sum, so they stay as they were however much is dropped, and the
events still held are counted without a scan. :func:`compact` runs inside the
caller's write transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime

from hippocampus.errors import InvalidInputError
from hippocampus.model import Event
from hippocampus.store.checks import micros
from hippocampus.store.embedded import tables
from hippocampus.store.embedded.base import EmbeddedBase

_HELD = "SELECT coalesce(sum(n), 0) FROM event_totals WHERE collection = ?"
_OLDEST = "SELECT seq FROM events WHERE collection = ? ORDER BY seq LIMIT ?"
# Seeks events_by_age.
_OLDER_THAN = "SELECT seq FROM events WHERE collection = ? AND appended_at < ? LIMIT ?"
_COUNT_COMPACTED = """
INSERT INTO events_compacted (collection, type, n) VALUES (?, ?, ?)
ON CONFLICT (collection, type) DO UPDATE SET n = n + excluded.n
"""
_IN_CHUNK = 500
_COMPACT_BATCH = 5_000  # events dropped per transaction


def compact(
    conn: sqlite3.Connection,
    collection: str,
    *,
    before: int | None,
    keep: int | None,
    limit: int,
) -> int:
    """Drop up to ``limit`` events of the collection: first the oldest beyond the
    newest ``keep`` (by append order), then those appended before ``before``
    (microseconds since the epoch). ``None`` leaves a bound off.
    Each type dropped is counted into ``events_compacted``.

    Returns:
        How many events were dropped (fewer than ``limit``: none are left to drop).
    """
    doomed: dict[int, None] = {}
    if keep is not None:
        (held,) = conn.execute(_HELD, (collection,)).fetchone()
        excess = min(int(held) - keep, limit)
        if excess > 0:
            doomed.update(dict.fromkeys(s for (s,) in conn.execute(_OLDEST, (collection, excess))))
    if before is not None and len(doomed) < limit:
        # A second pass may find some of the first's again: asking for as many
        # more as were found keeps the total at or above what is there to drop.
        rows = conn.execute(_OLDER_THAN, (collection, before, limit)).fetchall()
        for (seq,) in rows:
            if len(doomed) >= limit:
                break
            doomed[seq] = None
    if not doomed:
        return 0
    dropped: Counter[str] = Counter()
    seqs = list(doomed)
    for start in range(0, len(seqs), _IN_CHUNK):
        chunk = seqs[start : start + _IN_CHUNK]
        marks = ", ".join("?" * len(chunk))
        dropped.update(
            event_type
            for (event_type,) in conn.execute(
                f"DELETE FROM events WHERE seq IN ({marks}) RETURNING type", chunk
            )
        )
    conn.executemany(
        _COUNT_COMPACTED, [(collection, event_type, n) for event_type, n in dropped.items()]
    )
    return sum(dropped.values())


class EmbeddedEvents(EmbeddedBase):
    """The event log of an embedded store."""

    def append_events(self, collection: str, events: Sequence[Event]) -> None:
        """Append to the collection's event log, in the order given."""
        if not events:
            return
        with self._write_lock, self._transaction("append events") as conn:
            tables.insert_events(conn, collection, events)

    def iter_events(self, collection: str) -> Iterator[Event]:
        """The collection's event log, in the order it was appended. Streams in pages
        like :meth:`iter_memories`."""
        after = 0
        while True:
            with self._reading("list events") as conn:
                page = conn.execute(
                    "SELECT seq, type, at, memory_ids, payload FROM events"
                    " WHERE collection = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (collection, after, tables.CHUNK),
                ).fetchall()
            for _, event_type, at, memory_ids, payload in page:
                yield Event(
                    type=event_type,
                    at=datetime.fromisoformat(at),
                    memory_ids=json.loads(memory_ids),
                    payload=json.loads(payload),
                )
            if len(page) < tables.CHUNK:
                return
            after = page[-1][0]

    def compact_events(
        self, collection: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Drop the events appended before ``before`` and the oldest beyond the
        newest ``keep``; the totals :meth:`stats` reports stay as they were (see
        :mod:`hippocampus.store.embedded.events`). Works in transactions of at most
        ``_COMPACT_BATCH`` events, so writes wait for one batch at most.

        Raises:
            InvalidInputError: a negative ``keep``.
        """
        if keep is not None and keep < 0:
            raise InvalidInputError("keep must not be negative", field="keep")
        if before is None and keep is None:
            return 0
        cutoff = micros(before) if before is not None else None
        dropped = 0
        while True:
            with self._write_lock, self._transaction("compact the event log") as conn:
                n = compact(conn, collection, before=cutoff, keep=keep, limit=_COMPACT_BATCH)
            dropped += n
            if n < _COMPACT_BATCH:
                return dropped
