"""The embedded store's event log upkeep: dropping what its retention no longer
keeps, without changing the totals ``stats()`` reports.

``event_totals`` (kept by triggers, schema.sql) counts the events the log holds;
``events_compacted`` counts, by type, those compaction dropped. The log's totals
are their sum, so they stay as they were however much is dropped, and the
events still held are counted without a scan. Functions run inside the
caller's write transaction.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

_HELD = "SELECT coalesce(sum(n), 0) FROM event_totals WHERE collection = ?"
_OLDEST = "SELECT seq FROM events WHERE collection = ? ORDER BY seq LIMIT ?"
# Seeks events_by_age.
_OLDER_THAN = "SELECT seq FROM events WHERE collection = ? AND appended_at < ? LIMIT ?"
_COUNT_COMPACTED = """
INSERT INTO events_compacted (collection, type, n) VALUES (?, ?, ?)
ON CONFLICT (collection, type) DO UPDATE SET n = n + excluded.n
"""
_IN_CHUNK = 500


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
