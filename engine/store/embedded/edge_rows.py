"""Edges as the embedded store writes them: one row per edge, the upserts that
date it, and the hub nodes created with their first edge and pruned with their
last.

Functions here take a connection and run inside the caller's write transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from hippocampus.errors import InvalidInputError
from hippocampus.model import HUB_EDGE, Edge, EdgeType
from hippocampus.store.checks import micros
from hippocampus.store.embedded.graph import WALKED_EDGES, WalkEdge

_HUB_KIND = {edge_type: kind for kind, edge_type in HUB_EDGE.items()}
# Per edge type: its name and the kind of hub it points at (None: it points at a memory).
_EDGE_TYPE_INFO: dict[str, tuple[str, str | None]] = {
    t: (t.value, _HUB_KIND[t].value if t in _HUB_KIND else None) for t in EdgeType
}
HUB_TYPES_SQL = ", ".join(f"'{t.value}'" for t in HUB_EDGE.values())
WALKED_TYPES = frozenset(t.value for t in WALKED_EDGES)

# Edge statements take an EdgeRow's first ten fields as ?1 … ?10: ?9 is the given
# creation (micros, or NULL), ?10 the last co-occurrence (micros, or NULL). A new
# edge given neither is dated by its memory's creation; an existing one keeps its
# creation unless one is given. used_at is always coalesce(last, creation).
_EDGE_UPSERT_TAIL = """
ON CONFLICT (collection, source, type, target) DO UPDATE SET
    weight = excluded.weight,
    co_occurrences = excluded.co_occurrences,
    last_co_occurred = excluded.last_co_occurred,
    kind = excluded.kind,
    created_at = coalesce(?9, edges.created_at),
    used_at = coalesce(?10, ?9, edges.created_at)
"""
_EDGE_INSERT_HEAD = """
INSERT INTO edges (collection, source, type, target, weight, co_occurrences,
                   last_co_occurred, kind, created_at, used_at)
"""
_EDGE_VALUES = """?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,
    coalesce(?9, ?10, (SELECT created_at FROM memories WHERE collection = ?1 AND id = ?2)),
    coalesce(?10, ?9, (SELECT created_at FROM memories WHERE collection = ?1 AND id = ?2))"""
_UPSERT_EDGE = _EDGE_INSERT_HEAD + f"VALUES ({_EDGE_VALUES})" + _EDGE_UPSERT_TAIL
_UPSERT_EDGE_IF_SOURCE = (
    _EDGE_INSERT_HEAD
    + f"""
SELECT {_EDGE_VALUES}
WHERE EXISTS (SELECT 1 FROM memories WHERE collection = ?1 AND id = ?2)
"""
    + _EDGE_UPSERT_TAIL
)
_UPSERT_EDGE_IF_BOTH = (
    _EDGE_INSERT_HEAD
    + f"""
SELECT {_EDGE_VALUES}
WHERE EXISTS (SELECT 1 FROM memories WHERE collection = ?1 AND id = ?2)
  AND EXISTS (SELECT 1 FROM memories WHERE collection = ?1 AND id = ?4)
"""
    + _EDGE_UPSERT_TAIL
)
# (collection, hub kind, name[, source memory])
_INSERT_HUB = "INSERT OR IGNORE INTO hubs (collection, kind, name) VALUES (?, ?, ?)"
_INSERT_HUB_IF_SOURCE = """
INSERT OR IGNORE INTO hubs (collection, kind, name)
SELECT ?1, ?2, ?3
WHERE EXISTS (SELECT 1 FROM memories WHERE collection = ?1 AND id = ?4)
"""
# Hubs are pruned when their last edge goes, so hub counts and exports only show
# hubs that something links to.
_PRUNE_HUB = """
DELETE FROM hubs
WHERE collection = ?1 AND kind = ?2 AND name = ?3
  AND NOT EXISTS (SELECT 1 FROM edges WHERE collection = ?1 AND target = ?3 AND type = ?4)
"""
SELECT_HUB_EDGES_OF = f"""
SELECT type, target FROM edges
WHERE collection = ? AND source = ? AND type IN ({HUB_TYPES_SQL})
"""


class EdgeRow(NamedTuple):
    """An edge as written: the ``edges`` columns, then the hub kind (``None`` for
    memory edges)."""

    collection: str
    source: str
    type: str
    target: str
    weight: float
    co_occurrences: int
    last_co_occurred: str | None
    kind: str | None
    created_at: int | None
    used_at: int | None
    hub: str | None


def edge_row(collection: str, edge: Edge, created: int | None = None) -> EdgeRow | None:
    """The row of one edge; ``None`` for a memory edge to itself. ``created`` dates
    an edge given no ``created_at``; ``used_at`` here is the last co-occurrence."""
    source, target = edge.source, edge.target
    type_name, hub = _EDGE_TYPE_INFO[edge.type]
    if hub is None:
        if source == target:
            return None
        if type_name == "ASSOCIATED" and target < source:
            source, target = target, source
    last = edge.last_co_occurred
    return EdgeRow(
        collection,
        source,
        type_name,
        target,
        edge.weight,
        edge.co_occurrences,
        last.isoformat() if last is not None else None,
        edge.kind,
        micros(edge.created_at) if edge.created_at is not None else created,
        micros(last) if last is not None else None,
        hub,
    )


def walked(rows: Sequence[EdgeRow]) -> list[WalkEdge]:
    """The walked edges among ``rows``, dated by last use; rows must carry a date."""
    return [
        WalkEdge(
            r.source,
            r.type,
            r.target,
            r.weight,
            r.used_at if r.used_at is not None else r.created_at or 0,
        )
        for r in rows
        if r.type in WALKED_TYPES
    ]


def edges_of_record(
    collection: str, memory_id: str, edges: Sequence[Edge], created: int
) -> list[EdgeRow]:
    rows = []
    for edge in edges:
        if edge.source != memory_id:
            raise InvalidInputError(
                f"an edge of memory {memory_id!r} leaves {edge.source!r}", field="edges"
            )
        row = edge_row(collection, edge, created)
        if row is not None:
            rows.append(row)
    return rows


def write_edges(conn: sqlite3.Connection, rows: list[EdgeRow], *, sources_exist: bool) -> None:
    """Upsert edges and create their hubs. Edges whose memories are missing are
    skipped; ``sources_exist`` (all sources were just written) spares that check
    for hub edges."""
    hub_edges = [r for r in rows if r.hub is not None]
    memory_edges = [r[:10] for r in rows if r.hub is None]
    if hub_edges:
        # One hub insert per distinct hub: a batch often names the same concept many times.
        hubs = {(r.hub, r.target): r for r in hub_edges}
        if sources_exist:
            conn.executemany(_INSERT_HUB, [(r.collection, r.hub, r.target) for r in hubs.values()])
            conn.executemany(_UPSERT_EDGE, [r[:10] for r in hub_edges])
        else:
            conn.executemany(
                _INSERT_HUB_IF_SOURCE,
                [(r.collection, r.hub, r.target, r.source) for r in hubs.values()],
            )
            conn.executemany(_UPSERT_EDGE_IF_SOURCE, [r[:10] for r in hub_edges])
    if memory_edges:
        conn.executemany(_UPSERT_EDGE_IF_BOTH, memory_edges)


def prune_hubs(conn: sqlite3.Connection, collection: str, hub_edges: list[Any]) -> None:
    """Delete the hubs these (type, name) edges pointed at, if nothing else does."""
    if hub_edges:
        conn.executemany(
            _PRUNE_HUB,
            [
                (collection, _EDGE_TYPE_INFO[EdgeType(type_name)][1], name, type_name)
                for type_name, name in hub_edges
            ],
        )
