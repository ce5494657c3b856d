"""The embedded store's SQL for the graph: schema migration, loading the in-memory
graph, set-based reinforcement and decay, edge iteration, hub name vectors.

Functions here take a connection and run inside the caller's transaction (or read);
locking, transactions and keeping the in-memory graph in step are the store's job.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from hippocampus.model import (
    HUB_EDGE,
    SEQUENCE_KIND,
    SEQUENCE_WEIGHT,
    STRUCTURAL_EDGES,
    Edge,
    EdgeType,
)
from hippocampus.model.association import EdgeUpdate
from hippocampus.store.checks import from_micros, micros
from hippocampus.store.embedded import due
from hippocampus.store.embedded.graph import (
    EDGE_TYPE_CODES,
    WALKED_EDGES,
    CollectionGraph,
    EdgeReinforcement,
    SlotSource,
)

logger = logging.getLogger(__name__)

_HUB_KIND: dict[str, str] = {edge_type.value: kind.value for kind, edge_type in HUB_EDGE.items()}
_WALKED_SQL = ", ".join(f"'{t.value}'" for t in sorted(WALKED_EDGES))

EDGE_COLUMNS = "source, type, target, weight, co_occurrences, last_co_occurred, kind, created_at"
"""The columns :func:`edge_of_row` reads, in its order."""

# The type as its small-integer code: Python shares small ints, where each text
# value would be a new string object, and 1.5M of them cost.
_TYPE_CODE_SQL = " ".join(f"WHEN '{t.value}' THEN {c}" for t, c in EDGE_TYPE_CODES.items())
_SELECT_WALKED = f"""
SELECT source, CASE type {_TYPE_CODE_SQL} END, target, weight, used_at FROM edges
WHERE collection = ? AND type IN ({_WALKED_SQL})
"""
_SELECT_HUB_VECTORS = """
SELECT kind, name, vector, vector_model FROM hubs
WHERE collection = ? AND vector IS NOT NULL
"""
# (collection, source, type, target, initial, at ISO, kind, at micros, cap, delta)
_REINFORCE = """
INSERT INTO edges (collection, source, type, target, weight, co_occurrences,
                   last_co_occurred, kind, created_at, used_at)
VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8, ?8)
ON CONFLICT (collection, source, type, target) DO UPDATE SET
    weight = max(edges.weight, min(?9, edges.weight + ?10)),
    co_occurrences = edges.co_occurrences + 1,
    last_co_occurred = ?6,
    used_at = ?8,
    kind = coalesce(edges.kind, ?7)
"""
# The same for evidence that may not create an edge: existing edges only.
_REINFORCE_EXISTING = """
UPDATE edges SET
    weight = max(weight, min(?9, weight + ?10)),
    co_occurrences = co_occurrences + 1,
    last_co_occurred = ?6,
    used_at = ?8,
    kind = coalesce(kind, ?7)
WHERE collection = ?1 AND source = ?2 AND type = ?3 AND target = ?4
  AND ?5 IS NOT NULL
"""
_INSERT_HUB = "INSERT OR IGNORE INTO hubs (collection, kind, name) VALUES (?, ?, ?)"
_STRUCTURAL_SQL = ", ".join(f"'{t.value}'" for t in sorted(STRUCTURAL_EDGES))
# Structural edges (NEXT) are not learned, so they never decay.
_DECAY = f"""
UPDATE edges SET weight = max(:floor, weight - :step)
WHERE collection = :c AND used_at < :before AND weight > :floor
  AND type NOT IN ({_STRUCTURAL_SQL})
"""
_ITER_EDGES_FIRST = f"""
SELECT {EDGE_COLUMNS} FROM edges WHERE collection = ?
ORDER BY source, type, target LIMIT ?
"""
_ITER_EDGES_NEXT = f"""
SELECT {EDGE_COLUMNS} FROM edges
WHERE collection = ? AND (source, type, target) > (?, ?, ?)
ORDER BY source, type, target LIMIT ?
"""


def edge_of_row(row: Sequence[Any]) -> Edge:
    """The edge of a row selected as :data:`EDGE_COLUMNS`."""
    source, edge_type, target, weight, co_occurrences, last, kind, created = row
    return Edge(
        source=source,
        type=EdgeType(edge_type),
        target=target,
        weight=weight,
        co_occurrences=co_occurrences,
        last_co_occurred=datetime.fromisoformat(last) if last is not None else None,
        created_at=from_micros(created) if created is not None else None,
        kind=kind,
    )


# -- schema ------------------------------------------------------------------------------


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Bring a database of schema ``version`` to the current one, in place, each
    step in one transaction (a failed step leaves the database as it was)."""
    if version < 2:
        _to_version_2(conn)
    if version < 3:
        _to_version_3(conn)
    if version < 4:
        _to_version_4(conn)
    if version < 5:
        _to_version_5(conn)
    if version < 6:
        _to_version_6(conn)


@contextmanager
def _migration_step(conn: sqlite3.Connection, version: int) -> Iterator[None]:
    """One migration step as one transaction: the ``with`` block's changes and the
    new schema ``version`` commit together, or none of them does."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    logger.info("database migrated to schema version %d", version)


def _to_version_2(conn: sqlite3.Connection) -> None:
    """Version 2: edges get ``created_at`` (filled from their memory's creation) and
    ``used_at`` (last co-occurrence, else creation), hubs get a name vector, and
    ``decay_periods`` (created by schema.sql) records decay passes."""
    with _migration_step(conn, 2):
        # ADD COLUMN ... NOT NULL needs a default; every write gives both values.
        conn.execute("ALTER TABLE edges ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0")
        conn.execute("ALTER TABLE edges ADD COLUMN used_at INTEGER NOT NULL DEFAULT 0")
        conn.execute(
            "UPDATE edges SET created_at = coalesce((SELECT m.created_at FROM memories m"
            " WHERE m.collection = edges.collection AND m.id = edges.source), 0)"
        )
        conn.execute("UPDATE edges SET used_at = created_at")
        reinforced = conn.execute(
            "SELECT collection, source, type, target, last_co_occurred FROM edges"
            " WHERE last_co_occurred IS NOT NULL"
        ).fetchall()
        conn.executemany(
            "UPDATE edges SET used_at = ?"
            " WHERE collection = ? AND source = ? AND type = ? AND target = ?",
            [(micros(datetime.fromisoformat(last)), c, s, t, g) for c, s, t, g, last in reinforced],
        )
        conn.execute("ALTER TABLE hubs ADD COLUMN vector BLOB")
        conn.execute("ALTER TABLE hubs ADD COLUMN vector_model TEXT")


def _to_version_3(conn: sqlite3.Connection) -> None:
    """Version 3: memories get ``occurred_at`` (their creation: none had one yet) and
    ``turn_of`` (their first conversation id), indexed for the conversation order,
    and the turns of each conversation are linked by NEXT edges."""
    with _migration_step(conn, 3):
        conn.execute("ALTER TABLE memories ADD COLUMN occurred_at INTEGER NOT NULL DEFAULT 0")
        conn.execute("ALTER TABLE memories ADD COLUMN turn_of TEXT")
        conn.execute(
            "UPDATE memories SET occurred_at = created_at,"
            " turn_of = json_extract(doc, '$.retrieval.conversation_ids[0]')"
        )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS memories_by_turn"
            " ON memories (collection, turn_of, occurred_at, id) WHERE turn_of IS NOT NULL"
        )
        now = micros(datetime.now(UTC))
        conn.execute(
            f"""
            INSERT OR IGNORE INTO edges (collection, source, type, target, weight,
                co_occurrences, last_co_occurred, kind, created_at, used_at)
            SELECT collection, id, '{EdgeType.NEXT.value}', following, {SEQUENCE_WEIGHT}, 0,
                   NULL, '{SEQUENCE_KIND}', ?1, ?1
            FROM (SELECT collection, id, lead(id) OVER (
                      PARTITION BY collection, turn_of ORDER BY occurred_at, id) AS following
                  FROM memories WHERE turn_of IS NOT NULL)
            WHERE following IS NOT NULL
            """,
            (now,),
        )


def _to_version_4(conn: sqlite3.Connection) -> None:
    """Version 4: events get ``appended_at``, when they were appended, in
    microseconds, indexed, so that the retention finds the events older than its
    bound with one seek. The events already there were not timed as they came:
    their own time (``at``) stands in for it."""
    with _migration_step(conn, 4):
        conn.execute("ALTER TABLE events ADD COLUMN appended_at INTEGER")
        # julianday reads ISO 8601 with a zone offset or Z, to the millisecond:
        # enough for a bound counted in days.
        conn.execute(
            "UPDATE events SET appended_at ="
            " CAST(round((julianday(at) - 2440587.5) * 86400000000.0) AS INTEGER)"
        )
        conn.execute("CREATE INDEX IF NOT EXISTS events_by_age ON events (collection, appended_at)")


def _to_version_5(conn: sqlite3.Connection) -> None:
    """Version 5: memories get their due dates for resurfacing (see
    :mod:`hippocampus.store.embedded.due`), computed from their documents."""
    with _migration_step(conn, 5):
        due.migrate_columns(conn)


def _to_version_6(conn: sqlite3.Connection) -> None:
    """Version 6: hubs whose name waits for a vector (every write looks for them)
    and hubs by the model of their vector (is any left from another model?) are
    indexed: each a seek, where a scan read every hub's vector."""
    with _migration_step(conn, 6):
        conn.execute(
            "CREATE INDEX IF NOT EXISTS hubs_without_vector ON hubs (collection, kind, name)"
            " WHERE vector IS NULL"
        )
        conn.execute(
            "CREATE INDEX IF NOT EXISTS hubs_by_vector_model ON hubs (collection, vector_model)"
            " WHERE vector IS NOT NULL"
        )


# -- the in-memory graph -----------------------------------------------------------------


def load_graph(conn: sqlite3.Connection, collection: str, slots: SlotSource) -> CollectionGraph:
    """The collection's graph, built from its walked edges and hub vectors."""
    # Cursors, not lists: the rows are read a chunk at a time as the graph is built.
    edges = conn.execute(_SELECT_WALKED, (collection,))
    vectors = conn.execute(_SELECT_HUB_VECTORS, (collection,))
    return CollectionGraph.build(collection, slots, edges, vectors)


# -- learning ----------------------------------------------------------------------------


def reinforcements(
    graph: CollectionGraph, updates: Sequence[EdgeUpdate]
) -> list[EdgeReinforcement]:
    """The updates that apply, oriented as stored: both memories exist (the graph
    holds every memory), no memory edge to itself, ASSOCIATED from the smaller id.
    Caller holds the store's write lock."""
    applied = []
    for update in updates:
        source, target = update.source, update.target
        if not graph.has_memory(source):
            continue
        edge_type = EdgeType(update.type)
        if edge_type in STRUCTURAL_EDGES:
            continue  # structure, not learned: never reinforced
        if edge_type not in HUB_EDGE.values():
            if source == target or not graph.has_memory(target):
                continue
            if edge_type is EdgeType.ASSOCIATED and target < source:
                source, target = target, source
        applied.append(
            EdgeReinforcement(
                source=source,
                type=edge_type.value,
                target=target,
                delta=update.delta,
                cap=update.cap,
                initial=update.initial,
                used_at=micros(update.at),
                kind=update.kind,
                at=update.at.isoformat(),
                create=update.create,
            )
        )
    return applied


def reinforce(
    conn: sqlite3.Connection, collection: str, applied: Sequence[EdgeReinforcement]
) -> None:
    """Write :func:`reinforcements`, in order, creating missing hubs (and edges,
    for the updates that may create them)."""
    hubs = dict.fromkeys(
        (_HUB_KIND[r.type], r.target) for r in applied if r.type in _HUB_KIND and r.create
    )
    conn.executemany(_INSERT_HUB, [(collection, kind, name) for kind, name in hubs])
    # In order, a run of updates of one kind per statement.
    for create, run in itertools.groupby(applied, key=lambda r: r.create):
        conn.executemany(
            _REINFORCE if create else _REINFORCE_EXISTING,
            [
                (
                    collection,
                    r.source,
                    r.type,
                    r.target,
                    r.initial,
                    r.at,
                    r.kind,
                    r.used_at,
                    r.cap,
                    r.delta,
                )
                for r in run
            ],
        )


def decay(
    conn: sqlite3.Connection,
    collection: str,
    *,
    period: str,
    unused_before: int,
    step: float,
    floor: float,
    types: Sequence[EdgeType] | None = None,
) -> int | None:
    """One decay pass over the edges of ``types`` (``None``: all), or ``None``
    (nothing changed) when ``period`` was already applied to the collection.
    Returns how many edges lost weight."""
    done = conn.execute(
        "SELECT 1 FROM decay_periods WHERE collection = ? AND period = ?", (collection, period)
    ).fetchone()
    if done is not None:
        return None
    params: dict[str, Any] = {
        "c": collection,
        "before": unused_before,
        "step": step,
        "floor": floor,
    }
    sql = _DECAY
    if types is not None:
        names = sorted({EdgeType(t).value for t in types})
        params.update({f"t{i}": name for i, name in enumerate(names)})
        marks = ", ".join(f":t{i}" for i in range(len(names)))
        sql += f" AND type IN ({marks})" if names else " AND 0"
    decayed = conn.execute(sql, params).rowcount
    conn.execute(
        "INSERT INTO decay_periods (collection, period, unused_before, decayed)"
        " VALUES (?, ?, ?, ?)",
        (collection, period, unused_before, decayed),
    )
    return int(decayed)


# -- reading -----------------------------------------------------------------------------


def edge_page(
    conn: sqlite3.Connection, collection: str, after: tuple[str, str, str] | None, limit: int
) -> list[Any]:
    """Up to ``limit`` edges (rows of :data:`EDGE_COLUMNS`) after the key ``after``
    (source, type, target), in key order."""
    if after is None:
        return conn.execute(_ITER_EDGES_FIRST, (collection, limit)).fetchall()
    return conn.execute(_ITER_EDGES_NEXT, (collection, *after, limit)).fetchall()


_EDGE_ENDS_FIRST = """
SELECT source, type, target, weight FROM edges WHERE collection = ?
ORDER BY source, type, target LIMIT ?
"""
_EDGE_ENDS_NEXT = """
SELECT source, type, target, weight FROM edges
WHERE collection = ? AND (source, type, target) > (?, ?, ?)
ORDER BY source, type, target LIMIT ?
"""


def edge_ends_page(
    conn: sqlite3.Connection, collection: str, after: tuple[str, str, str] | None, limit: int
) -> list[tuple[str, str, str, float]]:
    """Up to ``limit`` edges as ``(source, type, target, weight)`` after the key
    ``after``, in key order."""
    if after is None:
        return conn.execute(_EDGE_ENDS_FIRST, (collection, limit)).fetchall()
    return conn.execute(_EDGE_ENDS_NEXT, (collection, *after, limit)).fetchall()


def hubs_without_vectors(
    conn: sqlite3.Connection, collection: str, model: str, limit: int
) -> list[tuple[str, str]]:
    """``(kind, name)`` of hubs with no name vector from ``model``, by kind and name.

    Most often only new hubs lack one: they are read from the index of hubs with
    no vector. Only while vectors of another model remain (the embedder changed)
    are the hubs read in order until ``limit`` lack one."""
    # INDEXED BY: without statistics the planner would rather walk the key in order.
    by_model = "SELECT 1 FROM hubs INDEXED BY hubs_by_vector_model WHERE collection = ?1"
    other_models = conn.execute(
        f"SELECT EXISTS ({by_model} AND vector IS NOT NULL AND vector_model < ?2)"
        f" OR EXISTS ({by_model} AND vector IS NOT NULL AND vector_model > ?2)"
        f" OR EXISTS ({by_model} AND vector IS NOT NULL AND vector_model IS NULL)",
        (collection, model),
    ).fetchone()[0]
    if other_models:
        rows = conn.execute(
            "SELECT kind, name FROM hubs WHERE collection = ?"
            " AND (vector IS NULL OR vector_model IS NOT ?) ORDER BY kind, name LIMIT ?",
            (collection, model, limit),
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT kind, name FROM hubs INDEXED BY hubs_without_vector"
            " WHERE collection = ? AND vector IS NULL ORDER BY kind, name LIMIT ?",
            (collection, limit),
        ).fetchall()
    return [(kind, name) for kind, name in rows]


def set_hub_vectors(
    conn: sqlite3.Connection,
    collection: str,
    items: Iterable[tuple[str, str, bytes, str, bool]],
) -> None:
    """Store ``(kind, name, float32 bytes, model, new dimension)`` hub vectors in
    order; with ``new dimension`` the model's vectors of other sizes are cleared
    first (they wait to be embedded again)."""
    for kind, name, blob, model, resized in items:
        if resized:
            conn.execute(
                "UPDATE hubs SET vector = NULL, vector_model = NULL"
                " WHERE collection = ? AND vector_model = ? AND length(vector) != ?",
                (collection, model, len(blob)),
            )
        conn.execute(
            "UPDATE hubs SET vector = ?, vector_model = ?"
            " WHERE collection = ? AND kind = ? AND name = ?",
            (blob, model, collection, kind, name),
        )
