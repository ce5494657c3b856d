"""The embedded store's conversation order: the ``NEXT`` edges that link the turns
of one conversation in the order they happened, and reading a turn's neighbours.

A memory is a turn of ``turn_of`` (its first conversation id); its place is the key
``(occurred_at, id)``. The ``memories`` table keeps both as columns, indexed, so a
turn's predecessor and successor are one index seek each.

Linking is local: a turn placed, moved or removed only changes the outgoing edge of
the turn before it (old and new place) and its own. :func:`relink` is given the
keys that changed and re-points exactly those edges, so inserting out of order
(A→C, then B) splices, and deleting re-links the neighbours. Functions run inside
the caller's write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from hippocampus.model import SEQUENCE_KIND, SEQUENCE_WEIGHT, EdgeType

_NEXT = EdgeType.NEXT.value

# ?1 collection, ?2 conversation, ?3 occurred_at, ?4 id
_BEFORE = """
SELECT id FROM memories
WHERE collection = ?1 AND turn_of = ?2 AND (occurred_at, id) < (?3, ?4)
ORDER BY occurred_at DESC, id DESC LIMIT ?5
"""
_AFTER = """
SELECT id FROM memories
WHERE collection = ?1 AND turn_of = ?2 AND (occurred_at, id) > (?3, ?4)
ORDER BY occurred_at, id LIMIT ?5
"""
_KEYS_CHUNK = 500
"""Ids per statement when reading keys: under SQLite's bound-parameter limit."""
_KEY_OF = "SELECT turn_of, occurred_at FROM memories WHERE collection = ? AND id = ?"
_DROP_NEXT = f"DELETE FROM edges WHERE collection = ? AND source = ? AND type = '{_NEXT}'"
_ADD_NEXT = f"""
INSERT INTO edges (collection, source, type, target, weight, co_occurrences,
                   last_co_occurred, kind, created_at, used_at)
VALUES (?, ?, '{_NEXT}', ?, {SEQUENCE_WEIGHT}, 0, NULL, '{SEQUENCE_KIND}', ?, ?)
ON CONFLICT (collection, source, type, target) DO NOTHING
"""


class TurnKey(NamedTuple):
    """Where a turn sits (or sat): its conversation, occurred_at in microseconds
    since the epoch, and id."""

    turn_of: str
    occurred: int
    id: str


def key_of(conn: sqlite3.Connection, collection: str, memory_id: str) -> TurnKey | None:
    """The stored key of a memory; ``None`` when it is no turn (or absent)."""
    row = conn.execute(_KEY_OF, (collection, memory_id)).fetchone()
    if row is None or row[0] is None:
        return None
    return TurnKey(row[0], row[1], memory_id)


def keys_of(conn: sqlite3.Connection, collection: str, ids: Sequence[str]) -> dict[str, TurnKey]:
    """The stored keys of those of ``ids`` that are turns, read in chunks of
    :data:`_KEYS_CHUNK` ids (one statement each, not one per id)."""
    found: dict[str, TurnKey] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _KEYS_CHUNK):
        chunk = unique[start : start + _KEYS_CHUNK]
        marks = ", ".join("?" * len(chunk))
        for memory_id, turn_of, occurred in conn.execute(
            "SELECT id, turn_of, occurred_at FROM memories"
            f" WHERE collection = ? AND id IN ({marks}) AND turn_of IS NOT NULL",
            (collection, *chunk),
        ):
            found[memory_id] = TurnKey(turn_of, occurred, memory_id)
    return found


def relink(conn: sqlite3.Connection, collection: str, keys: Iterable[TurnKey], at: int) -> None:
    """Re-point the NEXT edges around turns placed, moved or removed.

    ``keys`` are the places that changed: the new place of a turn added or moved,
    the old place of one moved or deleted (the table already shows the change).
    The turn just before each place gets its NEXT edge to its true successor, and
    so does the turn at the place, if it is still there. ``at`` (microseconds)
    dates the edges created.
    """
    fix: dict[str, TurnKey] = {}
    for key in keys:
        before = conn.execute(_BEFORE, (collection, *key, 1)).fetchone()
        if before is not None:
            found = key_of(conn, collection, before[0])
            if found is not None:
                fix[found.id] = found
        current = key_of(conn, collection, key.id)
        if current == key:
            fix[key.id] = key
        elif current is None:
            # No longer a turn (or gone): it leads nowhere.
            conn.execute(_DROP_NEXT, (collection, key.id))
    for key in fix.values():
        conn.execute(_DROP_NEXT, (collection, key.id))
        after = conn.execute(_AFTER, (collection, *key, 1)).fetchone()
        if after is not None:
            conn.execute(_ADD_NEXT, (collection, key.id, after[0], at, at))


def neighbours(
    conn: sqlite3.Connection, collection: str, ids: Sequence[str], before: int, after: int
) -> dict[str, tuple[list[str], list[str]]]:
    """For each of ``ids`` that is a turn: up to ``before`` turns that came just
    before it and ``after`` that came just after, each list in the order they
    happened."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    keys = keys_of(conn, collection, ids)
    for memory_id in dict.fromkeys(ids):
        key = keys.get(memory_id)
        if key is None:
            continue
        earlier = (
            [r[0] for r in conn.execute(_BEFORE, (collection, *key, before))] if before > 0 else []
        )
        later = [r[0] for r in conn.execute(_AFTER, (collection, *key, after))] if after > 0 else []
        out[memory_id] = (earlier[::-1], later)
    return out
