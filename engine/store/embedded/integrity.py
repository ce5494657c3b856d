"""Checks of the embedded store's files and in-memory indexes against each other.

Used after a crash (``bench/crashloop.py``) and by tests: SQLite is the source of
truth, so every index must hold exactly what the tables say, and the tables
must keep the invariants the store maintains.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from hippocampus.model import HUB_EDGE, MEMORY_EDGES, EdgeType, Memory
from hippocampus.store.embedded.graph import WALKED_EDGES, CollectionGraph
from hippocampus.store.embedded.index import CollectionIndex
from hippocampus.store.embedded.text_index import TextIndex

_SHOWN = 5  # ids named per problem
_HUB_KIND = {edge_type.value: kind.value for kind, edge_type in HUB_EDGE.items()}
_MEMORY_TYPES = frozenset(t.value for t in MEMORY_EDGES)
_WALKED = frozenset(t.value for t in WALKED_EDGES)


def database_problems(conn: sqlite3.Connection) -> list[str]:
    """SQLite's own ``PRAGMA integrity_check``: pages, indexes, constraints."""
    rows = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
    return [] if rows == ["ok"] else [f"integrity_check: {line}" for line in rows[:_SHOWN]]


def collection_problems(
    conn: sqlite3.Connection,
    collection: str,
    index: CollectionIndex,
    text: TextIndex,
    graph: CollectionGraph,
) -> list[str]:
    """One collection's tables against its vector index, text index and graph.

    The caller holds the store's write lock, so nothing changes meanwhile.
    """
    table = _memory_table(conn, collection)
    ids = table.ids
    problems: list[str] = []
    if table.bad_docs:
        problems.append(
            f"{collection}: {len(table.bad_docs)} memory documents disagree with their row, "
            f"e.g. {table.bad_docs[:_SHOWN]}"
        )
    problems += _vector_index_problems(conn, collection, table, index)
    problems += _differences(collection, "the text index", ids, text.ids())
    problems += _differences(
        collection, "the graph's memories", ids, {m for m in ids if graph.has_memory(m)}
    )
    edges = conn.execute(
        "SELECT source, type, target, weight, used_at FROM edges WHERE collection = ?",
        (collection,),
    ).fetchall()
    problems += _graph_problems(collection, edges, graph)
    problems += _edge_problems(conn, collection, edges, ids)
    problems += _total_problems(conn, collection)
    return problems


def _total_problems(conn: sqlite3.Connection, collection: str) -> list[str]:
    """The running totals stats() reads, against counts of the rows."""
    problems: list[str] = []
    for table, key, totals in (("edges", "type", "edge_totals"), ("hubs", "kind", "hub_totals")):
        counted = dict(
            conn.execute(
                f"SELECT {key}, count(*) FROM {table} WHERE collection = ? GROUP BY {key}",
                (collection,),
            ).fetchall()
        )
        kept = dict(
            conn.execute(
                f"SELECT {key}, n FROM {totals} WHERE collection = ? AND n != 0", (collection,)
            ).fetchall()
        )
        if counted != kept:
            problems.append(f"{collection}: {totals} {kept} disagree with the {table} {counted}")
    return problems


@dataclass(frozen=True, slots=True)
class _MemoryTable:
    """A collection's memory rows as the checks read them.

    Attributes:
        dims: each model's dimension (``vector_dims``).
        rows: ``(id, tier, category, doc, vector model, vector bytes)`` per memory.
        ids: the memories' ids.
        vectors: the model of each memory whose vector has its model's dimension.
        unvectored: rows with no vector at all (what stats() counts as pending).
        bad_docs: memories whose document disagrees with their row.
    """

    dims: dict[str, int]
    rows: list[Any]
    ids: set[str]
    vectors: dict[str, str]
    unvectored: int
    bad_docs: list[str]


def _memory_table(conn: sqlite3.Connection, collection: str) -> _MemoryTable:
    dims = dict(
        conn.execute(
            "SELECT model, dim FROM vector_dims WHERE collection = ?", (collection,)
        ).fetchall()
    )
    rows = conn.execute(
        "SELECT id, tier, category, doc, vector_model, length(vector) FROM memories "
        "WHERE collection = ?",
        (collection,),
    ).fetchall()
    ids: set[str] = set()
    vectors: dict[str, str] = {}
    bad_docs: list[str] = []
    unvectored = 0  # rows with no vector at all: what stats() counts as pending
    for memory_id, tier, category, doc, model, size in rows:
        ids.add(memory_id)
        unvectored += model is None or size is None
        try:
            memory = Memory.model_validate_json(doc)
        except ValidationError:
            bad_docs.append(memory_id)
            continue
        if (memory.id, memory.tier.value, memory.category) != (memory_id, tier, category):
            bad_docs.append(memory_id)
        if memory.embedding_model != model:
            bad_docs.append(memory_id)
        if model is not None and size is not None and size == 4 * dims.get(model, -1):
            vectors[memory_id] = model
    return _MemoryTable(dims, rows, ids, vectors, unvectored, bad_docs)


def _vector_index_problems(
    conn: sqlite3.Connection, collection: str, table: _MemoryTable, index: CollectionIndex
) -> list[str]:
    """The vector index against the memory rows: its entries, vectors, models and
    passages."""
    rows, vectors = table.rows, table.vectors
    problems: list[str] = []
    entries, indexed = index.snapshot()
    problems += _differences(collection, "the vector index's memories", table.ids, set(entries))
    stale = sorted(
        memory_id
        for memory_id, tier, category, *_ in rows
        if memory_id in entries
        and (entries[memory_id].tier.value, entries[memory_id].category) != (tier, category)
    )
    if stale:
        problems.append(f"{collection}: stale index entries, e.g. {stale[:_SHOWN]}")
    problems += _differences(collection, "the vector index's vectors", set(vectors), set(indexed))
    vectorless = index.counts()[3]
    if vectorless != table.unvectored:
        problems.append(
            f"{collection}: the vector index counts {vectorless} memories without a vector, "
            f"the table {table.unvectored}"
        )
    wrong_model = sorted(m for m, v in indexed.items() if m in vectors and v.model != vectors[m])
    if wrong_model:
        problems.append(f"{collection}: vectors of the wrong model, e.g. {wrong_model[:_SHOWN]}")
    problems += _passage_problems(conn, collection, index, vectors, table.dims)
    problems += index.graph_problems()
    return problems


def _graph_problems(collection: str, edges: list[Any], graph: CollectionGraph) -> list[str]:
    """The graph against the stored ``edges``: exactly the walked ones, with their
    weights and use times, and its own invariants."""
    problems: list[str] = []
    walked = {f"{s} {t} {g}": (float(w), int(u)) for s, t, g, w, u in edges if t in _WALKED}
    held = {f"{s} {t} {g}": (w, u) for s, t, g, w, u in graph.edges()}
    problems += _differences(collection, "the graph's edges", set(walked), set(held))
    unequal = sorted(
        key
        for key, (w, u) in walked.items()
        if key in held and (abs(held[key][0] - w) > 1e-9 or held[key][1] != u)
    )
    if unequal:
        problems.append(
            f"{collection}: graph edges with another weight or use time, e.g. {unequal[:_SHOWN]}"
        )
    try:
        graph.check()
    except AssertionError as e:
        problems.append(f"{collection}: the graph's invariants fail: {e}")
    return problems


def _edge_problems(
    conn: sqlite3.Connection, collection: str, edges: list[Any], ids: set[str]
) -> list[str]:
    """The stored edges and hubs against each other and the memories: no edge to
    or from nothing, no hub without an edge, ASSOCIATED from the smaller id."""
    problems: list[str] = []
    hubs = {
        (kind, name)
        for kind, name in conn.execute(
            "SELECT kind, name FROM hubs WHERE collection = ?", (collection,)
        ).fetchall()
    }
    orphans = sorted(f"{s} {t} {g}" for s, t, g, _, _ in edges if s not in ids)
    orphans += sorted(
        f"{s} {t} {g}" for s, t, g, _, _ in edges if t in _MEMORY_TYPES and g not in ids
    )
    orphans += sorted(
        f"{s} {t} {g}"
        for s, t, g, _, _ in edges
        if t in _HUB_KIND and (_HUB_KIND[t], g) not in hubs
    )
    if orphans:
        problems.append(
            f"{collection}: {len(orphans)} edges to or from nothing, e.g. {orphans[:_SHOWN]}"
        )
    linked = {(_HUB_KIND[t], g) for _, t, g, _, _ in edges if t in _HUB_KIND}
    lonely = sorted(f"{kind}:{name}" for kind, name in hubs - linked)
    if lonely:
        problems.append(f"{collection}: {len(lonely)} hubs without edges, e.g. {lonely[:_SHOWN]}")
    backwards = sorted(
        f"{s} {g}" for s, t, g, _, _ in edges if t == EdgeType.ASSOCIATED.value and s >= g
    )
    if backwards:
        problems.append(
            f"{collection}: ASSOCIATED edges not stored from the smaller id, "
            f"e.g. {backwards[:_SHOWN]}"
        )
    return problems


def _differences(collection: str, what: str, expected: set[str], held: set[str]) -> list[str]:
    """What ``what`` lacks of ``expected``, and what it holds beyond it."""
    problems: list[str] = []
    missing, extra = sorted(expected - held), sorted(held - expected)
    if missing:
        problems.append(f"{collection}: {what} lacks {len(missing)}, e.g. {missing[:_SHOWN]}")
    if extra:
        problems.append(f"{collection}: {what} has {len(extra)} extra, e.g. {extra[:_SHOWN]}")
    return problems


def _passage_problems(
    conn: sqlite3.Connection,
    collection: str,
    index: CollectionIndex,
    vectors: dict[str, str],
    dims: dict[str, int],
) -> list[str]:
    """The passage table against the memories and the index: every memory's
    passages are numbered 1..n, of its vector's model and dimension, and the index
    holds exactly those of the memories whose vector it holds."""
    problems: list[str] = []
    rows = conn.execute(
        "SELECT p.memory_id, p.model, count(*), min(p.n), max(p.n),"
        " min(length(p.vector)), max(length(p.vector)), m.vector_model, length(m.vector)"
        " FROM passages p LEFT JOIN memories m"
        " ON m.collection = p.collection AND m.id = p.memory_id"
        " WHERE p.collection = ? GROUP BY p.memory_id, p.model",
        (collection,),
    ).fetchall()
    expected: dict[str, tuple[str, int]] = {}
    wrong: list[str] = []
    for memory_id, model, count, first, last, low, high, vector_model, size in rows:
        if (
            vector_model != model
            or size is None
            or (first, last) != (1, count)
            or low != high
            or high != size
        ):
            wrong.append(memory_id)
            continue
        if vectors.get(memory_id) == model and size == 4 * dims.get(model, -1):
            expected[memory_id] = (model, count)
    if wrong:
        problems.append(
            f"{collection}: {len(wrong)} memories with passages that do not match their "
            f"vector (missing memory, model, numbering or size), e.g. {sorted(wrong)[:_SHOWN]}"
        )
    held = index.passage_counts()
    unequal = sorted(
        set(expected) ^ set(held) | {m for m in expected if m in held and expected[m] != held[m]}
    )
    if unequal:
        problems.append(
            f"{collection}: the index's passages differ from the table for "
            f"{len(unequal)} memories, e.g. {unequal[:_SHOWN]}"
        )
    return problems
