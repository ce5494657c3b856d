"""The embedded store: SQLite (WAL) is the source of truth, an in-memory vector
index per collection answers similarity searches.

Concurrency: every write takes one process-wide lock, runs as one
``BEGIN IMMEDIATE … COMMIT`` transaction on the single write connection, then
updates the collection's index before the lock is released, so index updates
happen in commit order. Reads take a connection from a small pool (WAL lets them
run beside the writer) and never wait for the write lock, except the first use of
a collection, which builds its index.

One process owns a data directory: ``hippo.lock`` is held with ``flock`` for the
store's lifetime and names the owner's pid. The kernel drops the lock when the
process dies, even on ``kill -9``.
"""

from __future__ import annotations

import errno
import fcntl
import importlib.resources
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np

from hippocampus.errors import (
    ConfigError,
    ConflictError,
    DataDirLockedError,
    InvalidInputError,
    NotFoundError,
    StoreError,
    StoreFullError,
    StoreReadOnlyError,
    StoreUnavailableError,
)
from hippocampus.model import (
    HUB_EDGE,
    MEMORY_EDGES,
    Edge,
    EdgeType,
    Event,
    HubKind,
    Memory,
    RecallFilters,
    Tier,
    with_learning_of,
)
from hippocampus.model.association import Anchor, EdgeUpdate, ExpandParams, Expansion, HubMatch
from hippocampus.schedule import IndexedSchedule
from hippocampus.store.checks import (
    check_collection,
    check_decay_pass,
    check_learned,
    check_lease,
    check_passages,
    check_vector,
    micros,
)
from hippocampus.store.embedded import due, graph_sql, integrity, turns
from hippocampus.store.embedded import events as event_log
from hippocampus.store.embedded.due import DueEntry, DueIndex
from hippocampus.store.embedded.graph import WALKED_EDGES, CollectionGraph, WalkEdge
from hippocampus.store.embedded.index import CollectionIndex, IndexEntry
from hippocampus.store.embedded.text_index import TextIndex
from hippocampus.store.records import (
    EdgeEnds,
    LearnChange,
    Learned,
    MemoryRecord,
    StoreStats,
    Vector,
)

logger = logging.getLogger(__name__)

DB_FILE = "hippo.sqlite3"
LOCK_FILE = "hippo.lock"
SCHEMA_VERSION = 5

_SYNC_MODES = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_BUSY_TIMEOUT_S = 10.0
_CHUNK = 500  # ids per IN (...) list, rows per page when streaming
_MAX_IDLE_READERS = 32
_COMPACT_BATCH = 5_000  # events dropped per transaction
_EDGE_PAGE = 5_000  # rows per page of iter_edge_ends: plain tuples, cheap to hold
_WRITER_CACHE_KIB = 64 * 1024
_HUB_KIND = {edge_type: kind for kind, edge_type in HUB_EDGE.items()}
# Per edge type: its name and the kind of hub it points at (None: it points at a memory).
_EDGE_TYPE_INFO: dict[str, tuple[str, str | None]] = {
    t: (t.value, _HUB_KIND[t].value if t in _HUB_KIND else None) for t in EdgeType
}
_HUB_TYPES_SQL = ", ".join(f"'{t.value}'" for t in HUB_EDGE.values())
_MEMORY_TYPES_SQL = ", ".join(f"'{t.value}'" for t in sorted(MEMORY_EDGES))
_WALKED_TYPES = frozenset(t.value for t in WALKED_EDGES)
_HUB_KINDS = frozenset(kind.value for kind in HubKind)

# sqlite3 messages that mean "cannot serve right now" rather than "this call is wrong"
# (besides a full disk and a read-only database: see _wrap).
_UNAVAILABLE_HINTS = (
    "disk i/o error",
    "unable to open",
    "database is locked",
    "cannot operate on a closed",
    "not a database",
    "malformed",
)

_PROBE_BYTES = 16 * 1024
"""What the readiness check writes (and deletes) after a write was refused."""

_INSERT_MEMORY = f"""
INSERT INTO memories
    (collection, id, doc, category, tier, content_hash, created_at, vector, vector_model,
     occurred_at, turn_of, {due.DUE_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# Edge statements take an _EdgeRow's first ten fields as ?1 … ?10: ?9 is the given
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
_SELECT_HUB_EDGES_OF = f"""
SELECT type, target FROM edges
WHERE collection = ? AND source = ? AND type IN ({_HUB_TYPES_SQL})
"""
_SELECT_EDGES_OF = """
SELECT source, type, target, weight, co_occurrences, last_co_occurred, kind, created_at
FROM edges WHERE collection = :c AND source = :m
UNION ALL
SELECT target, type, source, weight, co_occurrences, last_co_occurred, kind, created_at
FROM edges WHERE collection = :c AND target = :m AND type = 'ASSOCIATED'
ORDER BY 2, 3
"""
_SELECT_INDEX_ROWS = """
SELECT id, tier, category,
       json_extract(doc, '$.tags', '$.retrieval.domains', '$.retrieval.conversation_ids'),
       vector_model, vector, json_extract(doc, '$.speaker'), occurred_at
FROM memories WHERE collection = ?
ORDER BY created_at, rowid
"""
_SELECT_PASSAGES = """
SELECT memory_id, model, vector FROM passages WHERE collection = ? ORDER BY memory_id, n
"""
_SELECT_PENDING = """
SELECT doc FROM memories
WHERE collection = ?
  AND (vector IS NULL OR vector_model IS NOT ? OR length(vector) != ?)
ORDER BY created_at, rowid
LIMIT ?
"""


FIND_BY_HASH_SQL = (
    "SELECT id FROM memories WHERE collection = ? AND content_hash = ?"
    # The unary + keeps the planner on the hash index: ordering by the created_at
    # index instead scans the whole collection on every remember.
    " ORDER BY +created_at, rowid"
)


class EmbeddedStore:
    """A :class:`~hippocampus.store.GraphStore` in one local data directory.

    Files: ``hippo.sqlite3`` (with its WAL) and ``hippo.lock``. The vector index of
    a collection, and its BM25 index of content, are built from SQLite on the
    collection's first use in the process.

    Beyond the contract:

    - ASSOCIATED is undirected: stored once, and :meth:`edges_of` returns it from
      either end with ``source`` set to the memory asked about.
    - Memory edges from a memory to itself are ignored.
    - Hub nodes are deleted with their last edge.
    - ``Memory.embedding_model`` as stored always names the model of the stored
      vector (``None`` without one), whatever the caller's copy said.
    - Each model has one dimension per collection: that of its most recently
      written vector. Its vectors of another dimension (a model that changed size
      under the same name) leave the index and are returned by
      :meth:`pending_embeddings` until re-embedded.
    - Search filters match exactly (no case folding).
    """

    parallel_reads = False
    """Its reads run on the caller's CPU: a second at once only takes turns."""

    def __init__(self, data_dir: Path, *, synchronous: str = "FULL") -> None:
        """Open (creating when needed) the store in ``data_dir``.

        Args:
            data_dir: the directory holding the store's files; created if absent.
            synchronous: SQLite ``PRAGMA synchronous``. ``FULL`` (the default)
                makes every acknowledged write survive a power loss; ``NORMAL``
                survives a process crash (``kill -9``) but may lose the last
                writes on power loss, and is faster.

        Raises:
            ConfigError: ``synchronous`` is not a SQLite mode.
            DataDirLockedError: another store (in this process or another) has
                the directory open.
            StoreUnavailableError: the directory or database cannot be opened.
            StoreError: the database was written by a newer schema version.
        """
        sync = synchronous.upper()
        if sync not in _SYNC_MODES:
            raise ConfigError(
                f"synchronous must be one of {', '.join(sorted(_SYNC_MODES))}, not {synchronous!r}"
            )
        self._data_dir = Path(data_dir)
        self._db_path = self._data_dir / DB_FILE
        self._synchronous = sync
        self._closed = False
        self._write_lock = threading.RLock()
        self._pool_lock = threading.Lock()
        self._idle_readers: list[sqlite3.Connection] = []
        self._indexes: dict[str, CollectionIndex] = {}
        # BM25 over content, per collection: built with the collection's index and
        # kept beside it (a vector-index rebuild leaves content, and it, unchanged).
        self._texts: dict[str, TextIndex] = {}
        # The walked graph per collection, built and published with its index.
        self._graphs: dict[str, CollectionGraph] = {}
        # Due dates for resurfacing per collection, built and published with its index.
        self._dues: dict[str, DueIndex] = {}
        # Why the latest write was refused (disk full, read-only), until one succeeds.
        self._writes_refused: StoreUnavailableError | None = None
        # Leases by name: (holder, end of term on the monotonic clock). The data
        # directory lock makes this process the store's only one: held here,
        # a lease is held against everyone.
        self._leases: dict[str, tuple[str, float]] = {}
        self._leases_lock = threading.Lock()
        try:
            self._data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreUnavailableError(
                f"cannot create the data directory {self._data_dir}: {e.strerror}"
            ) from e
        self._lock_fd: int | None = _lock_data_dir(self._data_dir)
        self._writer: sqlite3.Connection | None = None
        try:
            self._writer = self._connect(writer=True)
            self._create_schema(self._writer)
        except BaseException:
            self._closed = True
            if self._writer is not None:
                self._writer.close()
            _unlock_data_dir(self._lock_fd)
            self._lock_fd = None
            raise
        logger.info("embedded store opened at %s (synchronous=%s)", self._data_dir, sync)

    def __repr__(self) -> str:
        return f"EmbeddedStore({str(self._data_dir)!r})"

    def __enter__(self) -> EmbeddedStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def data_dir(self) -> Path:
        """The directory this store owns."""
        return self._data_dir

    # -- memories -------------------------------------------------------------------

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        """Insert new memories with their vectors and edges, all or nothing.

        Hub nodes named by the edges are created when absent; memory edges whose
        target memory exists neither in the store nor in the batch are skipped.
        When this returns the write is durable.

        Raises:
            ConflictError: an id already exists in the collection, or is repeated in
                the batch (nothing is written).
            InvalidInputError: a memory of another collection, an edge that does not
                leave its memory, a vector without ``embedding_model``, or a vector
                that is not a finite one-dimensional array.
        """
        if not records:
            return
        rows: list[tuple[Any, ...]] = []
        edges: list[_EdgeRow] = []
        entries: list[tuple[IndexEntry, Vector | None, str | None]] = []
        dues: list[DueEntry] = []
        passages: dict[str, Vector] = {}
        seen: set[str] = set()
        repeated: list[str] = []
        for record in records:
            memory = record.memory
            check_collection(collection, memory)
            if memory.id in seen:
                repeated.append(memory.id)
            seen.add(memory.id)
            vector: Vector | None = None
            if record.vector is not None:
                if memory.embedding_model is None:
                    raise InvalidInputError(
                        f"memory {memory.id!r} has a vector but no embedding_model",
                        field="embedding_model",
                    )
                vector = check_vector(record.vector, memory.id)
            elif memory.embedding_model is not None:
                # No vector stored means no model: keep the doc equal to the columns.
                memory = memory.model_copy(update={"embedding_model": None})
            checked = check_passages(record.passages, vector, memory.id)
            if checked is not None:
                passages[memory.id] = checked
            columns = due.due_columns(memory)
            rows.append((*_memory_row(collection, memory, vector), *columns.values()))
            dues.append(DueEntry.of(memory, columns))
            edges.extend(
                _edges_of_record(collection, memory.id, record.edges, micros(memory.created_at))
            )
            entries.append((IndexEntry.of(memory), vector, memory.embedding_model))
        if repeated:
            raise ConflictError(f"ids repeated in the batch: {_some(repeated)}", field="id")

        with self._write_lock:
            index = self._index(collection)
            with self._transaction("add memories") as conn:
                existing = _existing_ids(conn, collection, list(seen))
                if existing:
                    raise ConflictError(
                        f"memories already exist in {collection!r}: {_some(existing)}",
                        field="id",
                    )
                try:
                    conn.executemany(_INSERT_MEMORY, rows)
                except sqlite3.IntegrityError as e:
                    raise ConflictError(f"memories already exist in {collection!r}") from e
                _write_edges(conn, edges, sources_exist=True)
                turns.relink(conn, collection, _turn_keys(records), micros(_now()))
                _write_passages(conn, collection, _passage_rows(records, passages))
                rebuild = _record_dims(
                    conn, index, [(m, v.shape[0]) for _, v, m in entries if v is not None and m]
                )
            self._refresh_index(index, entries, rebuild, passages)
            # Text after filters, and the reverse on delete: an unfiltered text search
            # (which skips the filter index) never returns a memory the filter index
            # does not hold; between the two updates it only misses the new ones.
            self._texts[collection].add([(r.memory.id, r.memory.content) for r in records])
            self._graphs[collection].add_memories(
                [r.memory.id for r in records], _walked(edges), self._indexes[collection]
            )
            self._dues[collection].put(dues)

    def get_memories(self, collection: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among ``ids`` that exist in the collection, by id, in the
        order asked."""
        with self._reading("read memories") as conn:
            return _read_memories(conn, collection, list(dict.fromkeys(ids)))

    def replace_memory(self, collection: str, record: MemoryRecord, *, replace_edges: bool) -> None:
        """Overwrite an existing memory.

        The vector is replaced when ``record.vector`` is given (with the memory's
        ``embedding_model``), removed with ``record.drop_vector`` (the memory is then
        pending re-embedding) and kept otherwise. With ``replace_edges`` the memory's
        hub edges (IN_DOMAIN, HAS_TRIGGER, ABOUT) become the hub edges of
        ``record.edges``; memory edges among ``record.edges`` are upserted and the
        memory's other memory edges are kept. Hubs left without edges are deleted.

        Raises:
            NotFoundError: no such memory in the collection.
            InvalidInputError: as for :meth:`add_memories`, or ``drop_vector`` with
                a vector.
        """
        memory = record.memory
        check_collection(collection, memory)
        vector: Vector | None = None
        if record.drop_vector:
            if record.vector is not None:
                raise InvalidInputError(
                    f"memory {memory.id!r}: a vector cannot be given and dropped at once",
                    field="vector",
                )
            memory = memory.model_copy(update={"embedding_model": None})
        elif record.vector is not None:
            if memory.embedding_model is None:
                raise InvalidInputError(
                    f"memory {memory.id!r} has a vector but no embedding_model",
                    field="embedding_model",
                )
            vector = check_vector(record.vector, memory.id)
        passages = check_passages(record.passages, vector, memory.id)
        edges = (
            _edges_of_record(collection, memory.id, record.edges, micros(memory.created_at))
            if replace_edges
            else []
        )

        with self._write_lock:
            index = self._index(collection)
            with self._transaction("replace a memory") as conn:
                key = {"c": collection, "i": memory.id}
                if record.keep_learned:
                    stored = _read_memories(conn, collection, [memory.id]).get(memory.id)
                    if stored is None:
                        raise NotFoundError(f"no memory {memory.id!r} in {collection!r}")
                    memory = with_learning_of(memory, stored, tier=record.keep_tier)
                due_columns = due.due_columns(memory)
                columns = {
                    "category": memory.category,
                    "tier": Tier(memory.tier).value,
                    "hash": memory.content_hash,
                    "created": micros(memory.created_at),
                    "occurred": micros(memory.occurred_at),
                    "turn_of": memory.turn_of,
                    **due_columns,
                }
                was = turns.key_of(conn, collection, memory.id)
                if vector is not None:
                    cursor = conn.execute(
                        "UPDATE memories SET doc = :doc, category = :category, tier = :tier,"
                        " content_hash = :hash, created_at = :created, vector = :vector,"
                        " vector_model = :model, occurred_at = :occurred, turn_of = :turn_of,"
                        f" {due.SET_DUE_COLUMNS} WHERE collection = :c AND id = :i",
                        {
                            **key,
                            **columns,
                            "doc": memory.model_dump_json(),
                            "vector": vector.tobytes(),
                            "model": memory.embedding_model,
                        },
                    )
                elif record.drop_vector:
                    cursor = conn.execute(
                        "UPDATE memories SET doc = :doc, category = :category, tier = :tier,"
                        " content_hash = :hash, created_at = :created, vector = NULL,"
                        " vector_model = NULL, occurred_at = :occurred, turn_of = :turn_of,"
                        f" {due.SET_DUE_COLUMNS} WHERE collection = :c AND id = :i",
                        {**key, **columns, "doc": memory.model_dump_json()},
                    )
                else:
                    # The stored vector stays, so its model (not the caller's) goes in the doc.
                    cursor = conn.execute(
                        "UPDATE memories SET"
                        " doc = json_set(:doc, '$.embedding_model', vector_model),"
                        " category = :category, tier = :tier, content_hash = :hash,"
                        " created_at = :created, occurred_at = :occurred, turn_of = :turn_of,"
                        f" {due.SET_DUE_COLUMNS} WHERE collection = :c AND id = :i",
                        {**key, **columns, "doc": memory.model_dump_json()},
                    )
                if cursor.rowcount == 0:
                    raise NotFoundError(f"no memory {memory.id!r} in {collection!r}")
                if vector is not None or record.drop_vector:
                    _delete_passages(conn, collection, [memory.id])
                    if passages is not None:
                        _write_passages(
                            conn,
                            collection,
                            _passage_rows([record], {memory.id: passages}),
                        )
                placed = _turn_keys([record])
                if placed != ([was] if was is not None else []):
                    moved = [*placed, *([was] if was is not None else [])]
                    turns.relink(conn, collection, moved, micros(_now()))
                if replace_edges:
                    old_hubs = conn.execute(
                        _SELECT_HUB_EDGES_OF, (collection, memory.id)
                    ).fetchall()
                    conn.execute(
                        f"DELETE FROM edges WHERE collection = ? AND source = ?"
                        f" AND type IN ({_HUB_TYPES_SQL})",
                        (collection, memory.id),
                    )
                    _write_edges(conn, edges, sources_exist=True)
                    _prune_hubs(conn, collection, old_hubs)
                rebuild = vector is not None and _record_dims(
                    conn, index, [(str(memory.embedding_model), vector.shape[0])]
                )
            if record.drop_vector:
                # Out of the vector index before the entry is touched: a search in
                # between never finds the memory by its old vector.
                index.drop_vectors([memory.id])
            entries = [(IndexEntry.of(memory), vector, memory.embedding_model)]
            self._refresh_index(
                index, entries, rebuild, {memory.id: passages} if passages is not None else None
            )
            self._texts[collection].replace(memory.id, memory.content)
            self._dues[collection].put([DueEntry.of(memory, due_columns)])
            if replace_edges:
                graph = self._graphs[collection]
                graph.remove_hub_edges(memory.id)
                graph.put_edges(_walked(edges))

    def delete_memory(self, collection: str, memory_id: str) -> bool:
        """Remove a memory with every edge that touches it; hubs left without edges
        go too. ``False`` if absent."""
        with self._write_lock:
            index = self._index(collection)
            with self._transaction("delete a memory") as conn:
                was = turns.key_of(conn, collection, memory_id)
                deleted = conn.execute(
                    "DELETE FROM memories WHERE collection = ? AND id = ?", (collection, memory_id)
                ).rowcount
                if deleted == 0:
                    return False
                _delete_passages(conn, collection, [memory_id])
                old_hubs = conn.execute(_SELECT_HUB_EDGES_OF, (collection, memory_id)).fetchall()
                conn.execute(
                    "DELETE FROM edges WHERE collection = ? AND source = ?", (collection, memory_id)
                )
                # Only memory edges point at memory ids; a hub may share the id's text.
                conn.execute(
                    f"DELETE FROM edges WHERE collection = ? AND target = ?"
                    f" AND type IN ({_MEMORY_TYPES_SQL})",
                    (collection, memory_id),
                )
                _prune_hubs(conn, collection, old_hubs)
                if was is not None:
                    turns.relink(conn, collection, [was], micros(_now()))
            # Before the filter index: see add_memories.
            self._texts[collection].remove(memory_id)
            # The graph before the index too: a walk filters by index slots, and a
            # slot the index has freed may soon name another memory.
            self._graphs[collection].remove_memory(memory_id)
            self._dues[collection].remove(memory_id)
            index.remove(memory_id)
            return True

    def iter_memories(self, collection: str) -> Iterator[Memory]:
        """Every memory of the collection, oldest first.

        Streams in pages; no read transaction stays open between pages, so a
        memory written while the iteration runs may or may not be seen.
        """
        after: tuple[int, int] | None = None
        while True:
            with self._reading("list memories") as conn:
                if after is None:
                    page = conn.execute(
                        "SELECT created_at, rowid, doc FROM memories WHERE collection = ?"
                        " ORDER BY created_at, rowid LIMIT ?",
                        (collection, _CHUNK),
                    ).fetchall()
                else:
                    page = conn.execute(
                        "SELECT created_at, rowid, doc FROM memories WHERE collection = ?"
                        " AND (created_at, rowid) > (?, ?) ORDER BY created_at, rowid LIMIT ?",
                        (collection, *after, _CHUNK),
                    ).fetchall()
            for _, _, doc in page:
                yield Memory.model_validate_json(doc)
            if len(page) < _CHUNK:
                return
            after = (page[-1][0], page[-1][1])

    def neighbour_turns(
        self, collection: str, ids: Sequence[str], *, before: int, after: int
    ) -> dict[str, tuple[list[str], list[str]]]:
        """For each of ``ids`` that is a conversation turn, the ids of up to
        ``before`` turns just before it and ``after`` just after it in its
        conversation, each list in the order they happened (``NEXT`` order). One
        index seek per list."""
        with self._reading("read neighbouring turns") as conn:
            return turns.neighbours(conn, collection, ids, max(0, before), max(0, after))

    def due_memories(
        self, collection: str, *, schedule: IndexedSchedule, now: datetime, limit: int
    ) -> list[Memory]:
        """Active memories due at ``now`` by their stored due dates under
        ``schedule``, the ``limit`` most valuable first (then the most overdue,
        then by id), from the in-memory due index
        (:mod:`hippocampus.store.embedded.due`); the documents of those only are read.

        Raises:
            InvalidInputError: an unknown schedule.
        """
        if schedule not in ("seed", "fsrs"):
            raise InvalidInputError(f"no stored due dates for {schedule!r}", field="schedule")
        self._index(collection)
        dues = self._dues.get(collection)
        if dues is None:  # closed since _index() returned
            self._check_open()
            raise StoreUnavailableError(f"the store at {self._data_dir} is closing")
        ids = dues.due(schedule, micros(now), limit)
        found = self.get_memories(collection, ids)
        # A memory deleted or edited since the index was read is left out, or
        # comes as it now is: the caller checks what it gets.
        return [found[i] for i in ids if i in found]

    def find_by_hash(self, collection: str, content_hash: str) -> list[str]:
        """Ids of memories whose normalized content hashes to ``content_hash``, oldest
        first."""
        with self._reading("find memories by hash") as conn:
            rows = conn.execute(FIND_BY_HASH_SQL, (collection, content_hash)).fetchall()
        return [row[0] for row in rows]

    # -- lexical --------------------------------------------------------------------

    def search_text(
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by BM25 relevance of their content to ``query``, among
        those that pass ``filters`` (applied as by :meth:`search_vectors`); best
        first, scores > 0 only, ties by id.

        Content is tokenized by :func:`hippocampus.lexical.tokenize` (case-folded,
        stop words dropped, lightly stemmed); each distinct query term counts once.
        """
        self._check_open()
        index = self._index(collection)
        text = self._texts.get(collection)
        if text is None:  # only when closed since _index() returned
            self._check_open()
            return []
        with index.matching(filters) as passes:
            return text.search(query, k=k, allowed=passes)

    def text_neighbours(self, collection: str, text: str, *, k: int) -> list[str]:
        """Up to ``k`` memories of any tier sharing words with ``text``, best first
        by BM25 (:meth:`search_text`'s ranking, which costs nothing more here)."""
        hits = self.search_text(collection, text, k=k, filters=RecallFilters(tiers=list(Tier)))
        return [memory_id for memory_id, _ in hits]

    # -- vectors --------------------------------------------------------------------

    def search_vectors(
        self,
        collection: str,
        vector: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by cosine similarity among those whose vector was made
        by ``model`` and that pass ``filters``; best first. With ``passages`` a long
        memory scores the best similarity of its vector and its passages' (the
        filters apply to the memory).

        Filters: any-of within ``domains``, ``categories`` and ``tags``, the lists
        AND-ed; ``tiers`` (empty: every tier); ``exclude_conversation_id`` drops
        memories whose ``retrieval.conversation_ids`` hold it. A query whose
        dimension differs from the model's vectors finds nothing.
        """
        self._check_open()
        return self._index(collection).search(
            vector, model=model, k=k, filters=filters, passages=passages
        )

    def search_vectors_many(
        self,
        collection: str,
        vectors: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`search_vectors` for each row of ``vectors`` (one result list per
        row, in order), sharing one pass over the index where the filters allow."""
        self._check_open()
        return self._index(collection).search_many(
            vectors, model=model, k=k, filters=filters, passages=passages
        )

    def set_vectors(
        self,
        collection: str,
        items: Sequence[tuple[str, Vector, str]],
        *,
        at: datetime | None = None,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Store ``(memory_id, vector, model)`` for existing memories (re-embedding),
        stamped ``embedding_generated_at = at``, each with its passages
        ``passages[memory_id]`` (none when absent: stored passages go). Ids that no
        longer exist are skipped.

        Raises:
            InvalidInputError: a vector that is not a finite one-dimensional array,
                passages that are not a finite 2-D array of the vector's dimension,
                or an empty model name.
        """
        if not items:
            return
        checked: list[tuple[str, Vector, str]] = []
        rows_of: dict[str, Vector] = {}
        for memory_id, vector, model in items:
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked.append((memory_id, check_vector(vector, memory_id), model))
            rows = check_passages((passages or {}).get(memory_id), checked[-1][1], memory_id)
            if rows is not None:
                rows_of[memory_id] = rows
        with self._write_lock:
            index = self._index(collection)
            # The index mirrors the table under the write lock: it knows which ids exist.
            known = [item for item in checked if item[0] in index]
            if not known:
                return
            with self._transaction("store vectors") as conn:
                stamp = at.isoformat() if at is not None else None
                conn.executemany(
                    "UPDATE memories SET vector = ?, vector_model = ?,"
                    " doc = json_set(doc, '$.embedding_model', ?, '$.embedding_generated_at', ?)"
                    " WHERE collection = ? AND id = ?",
                    [(v.tobytes(), m, m, stamp, collection, i) for i, v, m in known],
                )
                _delete_passages(conn, collection, [i for i, _, _ in known])
                _write_passages(
                    conn,
                    collection,
                    [
                        (collection, i, n, m, row.tobytes())
                        for i, _, m in known
                        if i in rows_of
                        for n, row in enumerate(rows_of[i], start=1)
                    ],
                )
                rebuild = _record_dims(conn, index, [(m, v.shape[0]) for i, v, m in known])
            if rebuild:
                self._indexes[collection] = self._build_index(collection)
            else:
                index.set_vectors(known, rows_of)

    def get_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored vectors of the given memories (those that have one), as given to
        the store (not normalized)."""
        found: dict[str, Vector] = {}
        with self._reading("read vectors") as conn:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                for memory_id, blob in conn.execute(
                    f"SELECT id, vector FROM memories WHERE collection = ? AND id IN ({marks})"
                    " AND vector IS NOT NULL",
                    (collection, *chunk),
                ):
                    found[memory_id] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def similarities(
        self, collection: str, ids: Sequence[str], vector: Vector, *, model: str
    ) -> dict[str, float]:
        """The cosine similarity to ``vector`` of the given memories' own vectors of
        ``model``, from the in-memory index (the rows dense search reads)."""
        self._check_open()
        return self._index(collection).similarities(ids, vector, model=model)

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded the given memories' neighbourhoods are, from the in-memory
        index (its sample is evenly spaced rows of the model's vectors, drawn again
        after any of them changes)."""
        self._check_open()
        return self._index(collection).crowding(ids, model=model)

    def get_passages(self, collection: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored passage vectors (2-D, in order, as given) of the given memories
        that have any."""
        found: dict[str, list[bytes]] = {}
        with self._reading("read passage vectors") as conn:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                marks = ", ".join("?" * len(chunk))
                for memory_id, blob in conn.execute(
                    f"SELECT memory_id, vector FROM passages WHERE collection = ?"
                    f" AND memory_id IN ({marks}) ORDER BY memory_id, n",
                    (collection, *chunk),
                ):
                    found.setdefault(memory_id, []).append(blob)
        return {
            memory_id: np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
            for memory_id, blobs in found.items()
        }

    def pending_embeddings(self, collection: str, model: str, limit: int) -> list[Memory]:
        """Memories with no vector, a vector from another model, or one of ``model``
        whose dimension is not that of its newest vector; oldest first."""
        if limit <= 0:
            return []
        dim = self._index(collection).dim_of(model)
        with self._reading("list pending embeddings") as conn:
            rows = conn.execute(
                _SELECT_PENDING,
                (collection, model, dim * 4 if dim is not None else None, limit),
            ).fetchall()
        return [Memory.model_validate_json(row[0]) for row in rows]

    def count_pending_embeddings(self, collection: str, model: str) -> int:
        """How many memories :meth:`pending_embeddings` would list with no limit: those
        the index holds no vector of ``model`` for."""
        index = self._index(collection)
        return len(index) - index.vector_count(model)

    # -- edges ----------------------------------------------------------------------

    def edges_of(self, collection: str, memory_id: str) -> list[Edge]:
        """Edges leaving the memory, and ASSOCIATED edges reaching it (turned so that
        ``source`` is ``memory_id``); ordered by type, then target."""
        with self._reading("read edges") as conn:
            rows = conn.execute(_SELECT_EDGES_OF, {"c": collection, "m": memory_id}).fetchall()
        return [graph_sql.edge_of_row(row) for row in rows]

    def upsert_edges(self, collection: str, edges: Sequence[Edge]) -> None:
        """Create or overwrite edges (weights and counters as given).

        Hub nodes are created when absent. Edges whose source memory (or, for
        memory edges, target memory) does not exist are skipped, as are memory
        edges from a memory to itself.
        """
        rows = [row for edge in edges if (row := _edge_row(collection, edge)) is not None]
        if not rows:
            return
        with self._write_lock:
            self._index(collection)
            with self._transaction("write edges") as conn:
                _write_edges(conn, rows, sources_exist=False)
                # A walked edge given no date takes its memory's creation, or keeps
                # its own: read back what was stored.
                undated = [
                    r
                    for r in rows
                    if r.type in _WALKED_TYPES and r.created_at is None and r.used_at is None
                ]
                stored = {
                    (r.source, r.type, r.target): row[0]
                    for r in undated
                    if (
                        row := conn.execute(
                            "SELECT used_at FROM edges WHERE collection = ? AND source = ?"
                            " AND type = ? AND target = ?",
                            (collection, r.source, r.type, r.target),
                        ).fetchone()
                    )
                    is not None
                }
            dated = [
                r._replace(used_at=stored[(r.source, r.type, r.target)])
                if r.created_at is None and r.used_at is None
                else r
                for r in rows
                if r.created_at is not None
                or r.used_at is not None
                or (r.source, r.type, r.target) in stored
            ]
            self._graphs[collection].put_edges(_walked(dated))

    def iter_edges(self, collection: str) -> Iterator[Edge]:
        """Every edge of the collection, each ASSOCIATED edge once (from its smaller
        id), ordered by source, type, target.

        Streams in pages like :meth:`iter_memories`: an edge written while the
        iteration runs may or may not be seen.
        """
        after: tuple[str, str, str] | None = None
        while True:
            with self._reading("list edges") as conn:
                page = graph_sql.edge_page(conn, collection, after, _CHUNK)
            for row in page:
                yield graph_sql.edge_of_row(row)
            if len(page) < _CHUNK:
                return
            after = (page[-1][0], page[-1][1], page[-1][2])

    def iter_edge_ends(self, collection: str) -> Iterator[EdgeEnds]:
        """``(source, type, target, weight)`` of every edge, as :meth:`iter_edges`
        orders them; streamed in pages of plain rows."""
        after: tuple[str, str, str] | None = None
        while True:
            with self._reading("list edges") as conn:
                page = graph_sql.edge_ends_page(conn, collection, after, _EDGE_PAGE)
            yield from page
            if len(page) < _EDGE_PAGE:
                return
            after = (page[-1][0], page[-1][1], page[-1][2])

    # -- hubs -----------------------------------------------------------------------

    def match_hubs(self, collection: str, names: Sequence[str]) -> list[HubMatch]:
        """Hubs of any kind named exactly (no case folding) one of ``names``, with
        similarity 1.0 and their degree; in the order of ``names``, then of kinds
        (Domain, Trigger, Concept)."""
        return [
            HubMatch(kind=kind, name=name, similarity=1.0, degree=degree)
            for kind, name, degree in self._graph(collection).hub_degrees(names)
        ]

    def search_hubs(
        self, collection: str, vector: Vector, *, model: str, k: int, min_similarity: float
    ) -> list[HubMatch]:
        """Up to ``k`` hubs whose name embedding by ``model`` has cosine similarity of
        at least ``min_similarity`` with ``vector``; best first, ties by kind and
        name. A vector whose dimension differs from the model's finds nothing."""
        found = self._graph(collection).search_hub_vectors(
            np.asarray(vector, dtype=np.float32), model, k, min_similarity
        )
        return [
            HubMatch(kind=kind, name=name, similarity=similarity, degree=degree)
            for kind, name, similarity, degree in found
        ]

    def hubs_without_vectors(
        self, collection: str, model: str, limit: int
    ) -> list[tuple[str, str]]:
        """``(kind, name)`` of up to ``limit`` hubs with no name embedding from
        ``model``, by kind then name."""
        if limit <= 0:
            return []
        with self._reading("list hubs without vectors") as conn:
            return graph_sql.hubs_without_vectors(conn, collection, model, limit)

    def set_hub_vectors(
        self, collection: str, items: Sequence[tuple[str, str, Vector, str]]
    ) -> None:
        """Store ``(kind, name, vector, model)`` name embeddings of existing hubs;
        others are skipped. A hub holds one vector: one of another model is
        replaced. A model has one dimension per collection, that of its latest
        vector: its vectors of another size are dropped (and listed again by
        :meth:`hubs_without_vectors`).

        Raises:
            InvalidInputError: an unknown hub kind, an empty model name, or a vector
                that is not a finite one-dimensional array.
        """
        checked: list[tuple[str, str, Vector, str]] = []
        for kind, name, vector, model in items:
            if kind not in _HUB_KINDS:
                raise InvalidInputError(f"{kind!r} is not a hub kind", field="kind")
            if not model:
                raise InvalidInputError("a vector needs the name of its model", field="model")
            checked.append((kind, name, check_vector(vector, f"{kind} {name}"), model))
        if not checked:
            return
        with self._write_lock:
            graph = self._graph(collection)
            known = [item for item in checked if graph.has_hub(item[0], item[1])]
            dims: dict[str, int | None] = {}
            rows = []
            for kind, name, vector, model in known:
                current = dims.get(model, graph.hub_vectors.dim_of(model))
                dims[model] = vector.shape[0]
                resized = current is not None and current != vector.shape[0]
                rows.append((kind, name, vector.tobytes(), model, resized))
            if not rows:
                return
            with self._transaction("store hub vectors") as conn:
                graph_sql.set_hub_vectors(conn, collection, rows)
            for kind, name, vector, model in known:
                graph.put_hub_vector(kind, name, vector, model)

    def iter_hub_vectors(self, collection: str) -> Iterator[tuple[str, str, Vector, str]]:
        """``(kind, name, vector, model)`` of every hub that has a name embedding, by
        kind then name; vectors as given."""
        with self._reading("read hub vectors") as conn:
            rows = conn.execute(
                "SELECT kind, name, vector, vector_model FROM hubs"
                " WHERE collection = ? AND vector IS NOT NULL ORDER BY kind, name",
                (collection,),
            ).fetchall()
        for kind, name, blob, model in rows:
            yield kind, name, np.frombuffer(blob, dtype=np.float32).copy(), model

    # -- graph ----------------------------------------------------------------------

    def expand(
        self,
        collection: str,
        anchors: Sequence[Anchor],
        *,
        params: ExpandParams,
        filters: RecallFilters,
        paths: bool = True,
    ) -> list[Expansion]:
        """Walk weighted edges from the anchors and return the memories reached that
        pass ``filters``, strongest first; see
        :meth:`~hippocampus.store.embedded.graph.CollectionGraph.expand` for the exact
        rules (per-anchor best paths, frontier and fan-out, tie-breaking)."""
        graph = self._graph(collection)
        return graph.expand(anchors, params, filters, self._index(collection), paths=paths)

    def reinforce_edges(self, collection: str, updates: Sequence[EdgeUpdate]) -> None:
        """Apply reinforcements in one transaction, in order: an existing edge gains
        ``delta`` up to ``cap`` (a weight already above the cap is kept, never
        lowered), a missing one starts at ``initial``; ``co_occurrences += 1``,
        ``last_co_occurred = at``. ASSOCIATED is stored from its smaller id. Updates
        whose memories do not exist, and memory edges from a memory to itself, are
        skipped; hubs are created when absent."""
        if not updates:
            return
        with self._write_lock:
            graph = self._graph(collection)
            applied = graph_sql.reinforcements(graph, updates)
            if not applied:
                return
            with self._transaction("reinforce edges") as conn:
                graph_sql.reinforce(conn, collection, applied)
            graph.reinforce(applied)

    def decay_edges(
        self,
        collection: str,
        *,
        period: str,
        unused_before: datetime,
        step: float,
        floor: float,
        types: Sequence[EdgeType] | None = None,
    ) -> int:
        """One decay pass: every edge of the ``types`` (``None``: all) last used
        (reinforced, else created) before ``unused_before`` and above ``floor``
        loses ``step``, never below ``floor``.
        Idempotent per ``period``: a period already applied to the collection
        changes nothing and returns 0.

        Returns:
            How many edges were decayed.

        Raises:
            InvalidInputError: an empty period, a negative step, or a floor outside
                [0, 1].
        """
        check_decay_pass(period, step, floor)
        cutoff = micros(unused_before)
        with self._write_lock:
            graph = self._graph(collection)
            with self._transaction("decay edges") as conn:
                decayed = graph_sql.decay(
                    conn,
                    collection,
                    period=period,
                    unused_before=cutoff,
                    step=step,
                    floor=floor,
                    types=types,
                )
            if decayed is None:
                return 0
            graph.decay(cutoff, step, floor, types=types)
            return decayed

    # -- events ---------------------------------------------------------------------

    def append_events(self, collection: str, events: Sequence[Event]) -> None:
        """Append to the collection's event log, in the order given."""
        if not events:
            return
        with self._write_lock, self._transaction("append events") as conn:
            _insert_events(conn, collection, events)

    def iter_events(self, collection: str) -> Iterator[Event]:
        """The collection's event log, in the order it was appended. Streams in pages
        like :meth:`iter_memories`."""
        after = 0
        while True:
            with self._reading("list events") as conn:
                page = conn.execute(
                    "SELECT seq, type, at, memory_ids, payload FROM events"
                    " WHERE collection = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (collection, after, _CHUNK),
                ).fetchall()
            for _, event_type, at, memory_ids, payload in page:
                yield Event(
                    type=event_type,
                    at=datetime.fromisoformat(at),
                    memory_ids=json.loads(memory_ids),
                    payload=json.loads(payload),
                )
            if len(page) < _CHUNK:
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
                n = event_log.compact(
                    conn, collection, before=cutoff, keep=keep, limit=_COMPACT_BATCH
                )
            dropped += n
            if n < _COMPACT_BATCH:
                return dropped

    # -- state ----------------------------------------------------------------------

    def get_states(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """State documents by key; absent keys are left out."""
        with self._reading("read state") as conn:
            return _read_states(conn, collection, list(dict.fromkeys(keys)))

    def put_states(self, collection: str, items: Mapping[str, dict[str, Any]]) -> None:
        """Write state documents in one transaction, replacing same-key ones."""
        if not items:
            return
        rows = _state_rows(collection, items)
        with self._write_lock, self._transaction("write state") as conn:
            conn.executemany(_UPSERT_STATE, rows)

    def list_state_keys(self, collection: str, prefix: str = "") -> list[str]:
        """Keys of state documents starting with ``prefix``, sorted."""
        with self._reading("list state") as conn:
            rows = conn.execute(
                "SELECT key FROM states WHERE collection = ? AND substr(key, 1, ?) = ?"
                " ORDER BY key",
                (collection, len(prefix), prefix),
            ).fetchall()
        return [key for (key,) in rows]

    # -- learning -------------------------------------------------------------------

    def learn(
        self,
        collection: str,
        *,
        memory_ids: Sequence[str] = (),
        state_keys: Sequence[str] = (),
        change: LearnChange,
    ) -> Learned:
        """Apply one learning update atomically (see :meth:`GraphStore.learn`).

        The write lock and the ``BEGIN IMMEDIATE`` transaction make the read, the
        change and the write one step: no other write, in this process or
        another, can come between them.
        """
        ids = list(dict.fromkeys(memory_ids))
        keys = list(dict.fromkeys(state_keys))
        with self._write_lock:
            index = self._index(collection)
            graph = self._graph(collection)
            with self._transaction("learn") as conn:
                read = _read_memories(conn, collection, ids)
                states = _read_states(conn, collection, keys)
                learned = change(read, states)
                check_learned(collection, read, learned)
                memories = list({m.id: m for m in learned.memories}.values())
                dues = {m.id: due.due_columns(m) for m in memories}
                conn.executemany(
                    "UPDATE memories SET doc = json_set(:doc, '$.embedding_model', vector_model),"
                    " category = :category, tier = :tier, occurred_at = :occurred,"
                    f" turn_of = :turn_of, {due.SET_DUE_COLUMNS}"
                    " WHERE collection = :c AND id = :i",
                    [
                        {
                            "doc": m.model_dump_json(),
                            "category": m.category,
                            "tier": Tier(m.tier).value,
                            "occurred": micros(m.occurred_at),
                            "turn_of": m.turn_of,
                            "c": collection,
                            "i": m.id,
                            **dues[m.id],
                        }
                        for m in memories
                    ],
                )
                # A merged repeat can make a memory a turn of its conversation.
                moved = [
                    place
                    for m in memories
                    if _place(m) != _place(read[m.id])
                    for place in _turn_keys(
                        [MemoryRecord(memory=m), MemoryRecord(memory=read[m.id])]
                    )
                ]
                if moved:
                    turns.relink(conn, collection, moved, micros(_now()))
                if learned.states:
                    conn.executemany(_UPSERT_STATE, _state_rows(collection, learned.states))
                applied = graph_sql.reinforcements(graph, learned.reinforce)
                if applied:
                    graph_sql.reinforce(conn, collection, applied)
                _insert_events(conn, collection, learned.events)
            if memories:
                # The stored vector (and its model) stay: the entries say only
                # what the index filters on.
                index.put([(IndexEntry.of(m), None, read[m.id].embedding_model) for m in memories])
                self._dues[collection].put([DueEntry.of(m, dues[m.id]) for m in memories])
            if applied:
                graph.reinforce(applied)
        return learned

    # -- collections ----------------------------------------------------------------

    def list_collections(self) -> list[str]:
        """Collections holding at least one memory, sorted."""
        with self._reading("list collections") as conn:
            rows = conn.execute(
                "SELECT DISTINCT collection FROM memories ORDER BY collection"
            ).fetchall()
        return [row[0] for row in rows]

    def warm(self) -> int:
        """Build every collection's indexes (vectors, text, graph) now rather than
        on its first request, which would otherwise wait for them: a tenth of a
        second for a few hundred long memories, seconds at 100k. A server runs this
        in the background as it starts. Stops quietly when the store is closed.

        Returns:
            How many collections it built (those already built are not counted).
        """
        built = 0
        try:
            for collection in self.list_collections():
                if collection not in self._indexes:
                    self._index(collection)
                    built += 1
        except StoreUnavailableError:
            if not self._closed:
                raise
        return built

    def stats(self, collection: str) -> StoreStats:
        """Counts for one collection. Memory counts come from the in-memory index (a
        scan of the memory rows, vectors and all, would take most of a second at
        100k); hubs, edges and events from SQLite. ``pending_embeddings`` counts
        memories with no vector at all. Events by type and the quality total are
        running totals kept by triggers (schema.sql); events count those compacted
        away too (:meth:`compact_events`)."""
        memories, by_category, by_tier, vectorless = self._index(collection).counts()
        with self._reading("read stats") as conn:

            def counts(sql: str) -> dict[str, int]:
                return dict(conn.execute(sql, (collection,)).fetchall())

            hubs = counts("SELECT kind, count(*) FROM hubs WHERE collection = ? GROUP BY kind")
            edges = counts("SELECT type, count(*) FROM edges WHERE collection = ? GROUP BY type")
            held = counts("SELECT type, n FROM event_totals WHERE collection = ? AND n > 0")
            compacted = counts("SELECT type, n FROM events_compacted WHERE collection = ?")
            quality = conn.execute(
                "SELECT scored, total FROM quality_totals WHERE collection = ?", (collection,)
            ).fetchone()
        scored, total = quality if quality is not None else (0, 0.0)
        by_type = {t: held.get(t, 0) + compacted.get(t, 0) for t in sorted({*held, *compacted})}
        return StoreStats(
            memories=memories,
            by_category=by_category,
            by_tier=by_tier,
            pending_embeddings=vectorless,
            hubs=hubs,
            edges=edges,
            events=sum(by_type.values()),
            events_by_type=by_type,
            events_retained=sum(held.values()),
            quality_scored=scored,
            quality_sum=total if scored else 0.0,
        )

    def check(self) -> None:
        """Raise StoreUnavailableError if the store cannot serve right now: closed,
        the data directory or database not writable, a trivial query failing, or
        the latest write refused (disk full, read-only) and a probe write refused
        too. The probe runs only after a refusal, so the check clears by itself
        once space is freed or write access is back.

        Raises:
            StoreFullError: the disk is full.
            StoreReadOnlyError: the directory, database or file system may not be
                written.
            StoreUnavailableError: any other reason.
        """
        self._check_open()
        for path in (self._data_dir, self._db_path):
            if not os.access(path, os.W_OK):
                raise StoreReadOnlyError(f"{path} is not writable")
        with self._reading("check the store") as conn:
            conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if self._writes_refused is not None:
            # Room for a few pages, given back in the same transaction: writes that
            # fail for want of space fail here too.
            with self._write_lock, self._transaction("check that writes are taken") as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe', zeroblob(?))",
                    (_PROBE_BYTES,),
                )
                conn.execute("DELETE FROM meta WHERE key = 'write_probe'")

    def integrity_problems(self) -> list[str]:
        """Check the database and the in-memory indexes against each other (this
        store only: for checks after a crash, and tests). SQLite's
        ``PRAGMA integrity_check``; then per collection: every memory document
        agrees with its row; the vector index holds exactly the memories (tier,
        category) and a vector for each stored one of its model's dimension; the
        text index and the graph hold exactly the memories; the graph holds
        exactly the walked edges, with their weights; no edge hangs from a
        missing memory or hub, no hub is left without an edge, ASSOCIATED is
        stored from its smaller id. Collections not used since the store opened
        get their indexes built first (so those are checked as rebuilt from disk).
        Writes wait meanwhile.

        Returns:
            One line per problem found; empty when all is well.
        """
        with self._write_lock, self._reading("check integrity") as conn:
            problems = integrity.database_problems(conn)
            collections = [
                row[0]
                for row in conn.execute(
                    "SELECT collection FROM memories UNION SELECT collection FROM edges "
                    "UNION SELECT collection FROM hubs UNION SELECT collection FROM passages"
                ).fetchall()
            ]
            for collection in collections:
                index = self._index(collection)
                problems += integrity.collection_problems(
                    conn, collection, index, self._texts[collection], self._graphs[collection]
                )
                problems += due.problems(conn, collection, self._dues[collection])
        return problems

    def close(self) -> None:
        """Release the database connections and the data directory lock. Idempotent.

        Reads still running finish on their connection, which is closed when they
        give it back.
        """
        with self._write_lock:
            if self._closed:
                return
            with self._pool_lock:
                self._closed = True
                idle, self._idle_readers = self._idle_readers, []
            self._indexes.clear()
            self._texts.clear()
            self._graphs.clear()
            self._dues.clear()
            for conn in [*idle, self._writer]:
                if conn is None:
                    continue
                try:
                    conn.close()
                except sqlite3.Error:
                    logger.exception("closing a connection to %s failed", self._db_path)
            self._writer = None
            _unlock_data_dir(self._lock_fd)
            self._lock_fd = None
        logger.info("embedded store at %s closed", self._data_dir)

    # -- leases ---------------------------------------------------------------------

    def take_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take the lease ``name`` for ``holder`` (see the contract), in memory: no
        other process opens this store, so its threads are the only contenders."""
        check_lease(name, holder, ttl_s)
        self._check_open()
        with self._leases_lock:
            now = time.monotonic()
            held = self._leases.get(name)
            if held is not None and held[0] != holder and held[1] > now:
                return False
            self._leases[name] = (holder, now + ttl_s)
            return True

    # -- internals ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailableError(f"the store at {self._data_dir} is closed")

    def _connect(self, *, writer: bool) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._db_path,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE … COMMIT
                check_same_thread=False,  # used by whichever thread holds the lock / lease
            )
        except sqlite3.Error as e:
            raise _wrap(e, f"open {self._db_path}") from e
        try:
            with _translated(f"configure {self._db_path}"):
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                if writer:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if str(mode).lower() != "wal":
                        raise StoreUnavailableError(
                            f"{self._db_path} cannot use write-ahead logging (journal mode {mode})"
                        )
                    # Checked against _SYNC_MODES in the constructor: safe to inline.
                    conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                    # Inserts touch several indexes at random keys (ids, hashes,
                    # targets): a larger page cache keeps their inner pages resident.
                    conn.execute(f"PRAGMA cache_size = -{_WRITER_CACHE_KIB}")
                else:
                    conn.execute("PRAGMA query_only = ON")
        except BaseException:
            conn.close()
            raise
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> None:
        script = (
            importlib.resources.files("hippocampus.store.embedded")
            .joinpath("schema.sql")
            .read_text(encoding="utf-8")
        )
        with _translated("create the schema"):
            conn.executescript(script)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self._db_path} has schema version {version}; this Hippocampus reads "
                f"version {SCHEMA_VERSION} and older. Upgrade Hippocampus."
            )
        if version < SCHEMA_VERSION:
            with _translated(f"migrate the schema from version {version}"):
                graph_sql.migrate(conn, version)

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction on the write connection. Caller holds the write lock."""
        self._check_open()
        conn = self._writer
        assert conn is not None
        try:
            with _translated(action):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        try:
                            conn.execute("ROLLBACK")
                        except sqlite3.Error:
                            logger.exception("rollback failed in %s", self._db_path)
                    raise
        except (StoreFullError, StoreReadOnlyError) as e:
            if self._writes_refused is None:
                logger.error("writes to %s are refused: %s", self._db_path, e.message)
            self._writes_refused = e
            raise
        if self._writes_refused is not None:
            logger.warning("writes to %s are taken again", self._db_path)
            self._writes_refused = None

    @contextmanager
    def _reading(self, action: str) -> Iterator[sqlite3.Connection]:
        """Lend a read connection for the ``with`` block."""
        conn = self._acquire_reader()
        try:
            with _translated(action):
                yield conn
        finally:
            self._release_reader(conn)

    def _acquire_reader(self) -> sqlite3.Connection:
        with self._pool_lock:
            self._check_open()
            if self._idle_readers:
                return self._idle_readers.pop()
        return self._connect(writer=False)

    def _release_reader(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            logger.exception("resetting a read connection to %s failed", self._db_path)
            conn.close()
            return
        with self._pool_lock:
            if not self._closed and len(self._idle_readers) < _MAX_IDLE_READERS:
                self._idle_readers.append(conn)
                return
        conn.close()

    def _index(self, collection: str) -> CollectionIndex:
        """The collection's vector index, built from SQLite on first use."""
        index = self._indexes.get(collection)
        if index is not None:
            return index
        # Built under the write lock so no write commits between the table scan
        # and the index going live (writes update only indexes already built).
        with self._write_lock:
            self._check_open()
            index = self._indexes.get(collection)
            if index is None:
                index = self._build_index(collection)
                # The text index and graph go live first: whoever sees the collection
                # index (the unlocked fast path above) finds them too.
                self._texts[collection] = self._build_text_index(collection)
                self._graphs[collection] = self._build_graph(collection, index)
                with self._reading("build the due index") as conn:
                    self._dues[collection] = due.load(conn, collection)
                self._indexes[collection] = index
            return index

    def _refresh_index(
        self,
        index: CollectionIndex,
        entries: list[tuple[IndexEntry, Vector | None, str | None]],
        rebuild: bool,
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Bring the index in step with a committed write. Caller holds the write lock."""
        if rebuild:
            self._indexes[index.collection] = self._build_index(index.collection)
        else:
            index.put(entries, passages)

    def _build_text_index(self, collection: str) -> TextIndex:
        started = time.perf_counter()
        with self._reading("build the text index") as conn:
            cursor = conn.execute(
                "SELECT id, json_extract(doc, '$.content') FROM memories WHERE collection = ?",
                (collection,),
            )
            index = TextIndex.build(collection, cursor)
        if len(index):
            logger.info(
                "collection %s: text index of %d memories built in %.2f s",
                collection,
                len(index),
                time.perf_counter() - started,
            )
        return index

    def _graph(self, collection: str) -> CollectionGraph:
        """The collection's graph, built with its index on first use."""
        self._index(collection)
        graph = self._graphs.get(collection)
        if graph is None:  # closed since _index() returned
            self._check_open()
            raise StoreUnavailableError(f"the store at {self._data_dir} is closing")
        return graph

    def _build_graph(self, collection: str, index: CollectionIndex) -> CollectionGraph:
        started = time.perf_counter()
        with self._reading("build the graph") as conn:
            graph = graph_sql.load_graph(conn, collection, index)
        if len(graph):
            logger.info(
                "collection %s: graph of %d nodes and %d edges built in %.2f s",
                collection,
                len(graph),
                graph.edge_count,
                time.perf_counter() - started,
            )
        return graph

    def _build_index(self, collection: str) -> CollectionIndex:
        started = time.perf_counter()
        with self._reading("build the vector index") as conn:
            dims = dict(
                conn.execute(
                    "SELECT model, dim FROM vector_dims WHERE collection = ?", (collection,)
                ).fetchall()
            )
            cursor = conn.execute(_SELECT_INDEX_ROWS, (collection,))
            passages = conn.execute(_SELECT_PASSAGES, (collection,)).fetchall()
            index = CollectionIndex.build(collection, cursor, dims, passages)
        if len(index):
            logger.info(
                "collection %s: index of %d memories built in %.2f s",
                collection,
                len(index),
                time.perf_counter() - started,
            )
        return index


# -- helpers ------------------------------------------------------------------------


def _lock_data_dir(data_dir: Path) -> int:
    """Take ``hippo.lock`` exclusively and write our pid in it; return its descriptor."""
    path = data_dir / LOCK_FILE
    try:
        # No O_TRUNC: if another process holds the lock, its pid must stay readable.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise StoreUnavailableError(f"cannot open the lock file {path}: {e.strerror}") from e
    try:
        # flock locks belong to the open file description, so a second open() of the
        # same file conflicts even inside one process: one store per directory.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = _read_pid(fd)
        os.close(fd)
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreUnavailableError(f"cannot lock {path}: {e.strerror}") from e
        if holder == str(os.getpid()):
            raise DataDirLockedError(
                f"{data_dir} is already open in this process (pid {holder}); "
                "close the other store first"
            ) from None
        raise DataDirLockedError(
            f"{data_dir} is in use by another Hippocampus process (pid {holder or 'unknown'}); "
            "stop it or choose another --data-dir"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    except OSError as e:
        _unlock_data_dir(fd)
        raise StoreUnavailableError(f"cannot write the lock file {path}: {e.strerror}") from e
    return fd


def _read_pid(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""


def _unlock_data_dir(fd: int | None) -> None:
    if fd is None:
        return
    try:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        logger.warning("releasing the data directory lock failed", exc_info=True)
    finally:
        os.close(fd)


def _wrap(error: sqlite3.Error, action: str) -> StoreError:
    message = f"cannot {action}: {error}"
    text = str(error).lower()
    name = getattr(error, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in text:
        return StoreFullError(message)
    if name.startswith("SQLITE_READONLY") or "readonly" in text or "read-only" in text:
        return StoreReadOnlyError(message)
    if any(hint in text for hint in _UNAVAILABLE_HINTS):
        return StoreUnavailableError(message)
    return StoreError(message)


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """Turn sqlite3 errors raised in the block into StoreError / StoreUnavailableError."""
    try:
        yield
    except sqlite3.Error as e:
        raise _wrap(e, action) from e


def _passage_rows(
    records: Sequence[MemoryRecord], passages: Mapping[str, Vector]
) -> list[tuple[str, str, int, str, bytes]]:
    """``passages`` rows for the records that have passages (checked ones)."""
    return [
        (r.memory.collection, r.memory.id, n, str(r.memory.embedding_model), row.tobytes())
        for r in records
        if r.memory.id in passages
        for n, row in enumerate(passages[r.memory.id], start=1)
    ]


def _write_passages(
    conn: sqlite3.Connection, collection: str, rows: list[tuple[str, str, int, str, bytes]]
) -> None:
    if rows:
        conn.executemany(
            "INSERT INTO passages (collection, memory_id, n, model, vector) VALUES (?, ?, ?, ?, ?)",
            rows,
        )


def _delete_passages(conn: sqlite3.Connection, collection: str, ids: list[str]) -> None:
    conn.executemany(
        "DELETE FROM passages WHERE collection = ? AND memory_id = ?",
        [(collection, memory_id) for memory_id in ids],
    )


_UPSERT_STATE = (
    "INSERT INTO states (collection, key, value) VALUES (?, ?, ?)"
    " ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value"
)


def _state_rows(collection: str, items: Mapping[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """State documents as rows of ``states``.

    Raises:
        InvalidInputError: a document JSON cannot hold.
    """
    rows = []
    for key, value in items.items():
        try:
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"state {key!r} is not plain JSON: {e}") from e
        rows.append((collection, key, text))
    return rows


def _read_states(
    conn: sqlite3.Connection, collection: str, keys: list[str]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for chunk in _chunks(keys):
        marks = ", ".join("?" * len(chunk))
        for key, value in conn.execute(
            f"SELECT key, value FROM states WHERE collection = ? AND key IN ({marks})",
            (collection, *chunk),
        ):
            found[key] = json.loads(value)
    return found


def _read_memories(conn: sqlite3.Connection, collection: str, ids: list[str]) -> dict[str, Memory]:
    """The memories among ``ids`` that exist, by id, in the order asked."""
    docs: dict[str, str] = {}
    for chunk in _chunks(ids):
        marks = ", ".join("?" * len(chunk))
        docs.update(
            conn.execute(
                f"SELECT id, doc FROM memories WHERE collection = ? AND id IN ({marks})",
                (collection, *chunk),
            ).fetchall()
        )
    return {i: Memory.model_validate_json(docs[i]) for i in ids if i in docs}


def _insert_events(conn: sqlite3.Connection, collection: str, events: Sequence[Event]) -> None:
    rows = []
    for event in events:
        data = event.model_dump(mode="json")
        rows.append(
            (
                collection,
                event.type,
                data["at"],
                json.dumps(data["memory_ids"]),
                json.dumps(data["payload"], separators=(",", ":")),
            )
        )
    appended = micros(_now())
    conn.executemany(
        "INSERT INTO events (collection, type, at, memory_ids, payload, appended_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(*row, appended) for row in rows],
    )


def _memory_row(collection: str, memory: Memory, vector: Vector | None) -> tuple[Any, ...]:
    return (
        collection,
        memory.id,
        memory.model_dump_json(),
        memory.category,
        Tier(memory.tier).value,
        memory.content_hash,
        micros(memory.created_at),
        vector.tobytes() if vector is not None else None,
        memory.embedding_model if vector is not None else None,
        micros(memory.occurred_at),
        memory.turn_of,
    )


def _place(memory: Memory) -> tuple[str | None, int]:
    return memory.turn_of, micros(memory.occurred_at)


def _turn_keys(records: Sequence[MemoryRecord]) -> list[turns.TurnKey]:
    """The places of the records' memories among their conversation's turns."""
    return [
        turns.TurnKey(turn_of, micros(r.memory.occurred_at), r.memory.id)
        for r in records
        if (turn_of := r.memory.turn_of) is not None
    ]


def _now() -> datetime:
    return datetime.now(UTC)


class _EdgeRow(NamedTuple):
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


def _edge_row(collection: str, edge: Edge, created: int | None = None) -> _EdgeRow | None:
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
    return _EdgeRow(
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


def _walked(rows: Sequence[_EdgeRow]) -> list[WalkEdge]:
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
        if r.type in _WALKED_TYPES
    ]


def _edges_of_record(
    collection: str, memory_id: str, edges: Sequence[Edge], created: int
) -> list[_EdgeRow]:
    rows = []
    for edge in edges:
        if edge.source != memory_id:
            raise InvalidInputError(
                f"an edge of memory {memory_id!r} leaves {edge.source!r}", field="edges"
            )
        row = _edge_row(collection, edge, created)
        if row is not None:
            rows.append(row)
    return rows


def _write_edges(conn: sqlite3.Connection, rows: list[_EdgeRow], *, sources_exist: bool) -> None:
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


def _prune_hubs(conn: sqlite3.Connection, collection: str, hub_edges: list[Any]) -> None:
    """Delete the hubs these (type, name) edges pointed at, if nothing else does."""
    if hub_edges:
        conn.executemany(
            _PRUNE_HUB,
            [
                (collection, _EDGE_TYPE_INFO[EdgeType(type_name)][1], name, type_name)
                for type_name, name in hub_edges
            ],
        )


def _record_dims(
    conn: sqlite3.Connection, index: CollectionIndex, written: list[tuple[str, int]]
) -> bool:
    """Keep each model's newest vector dimension in ``vector_dims``.

    Returns whether the index must be rebuilt rather than updated in place: a
    model's dimension changed (its older vectors leave the index and become
    pending), or one write mixed dimensions of one model.
    """
    newest: dict[str, int] = {}
    rebuild = False
    for model, dim in written:
        rebuild = rebuild or newest.get(model, dim) != dim
        newest[model] = dim
    for model, dim in newest.items():
        current = index.dim_of(model)
        if current == dim:
            continue
        conn.execute(
            "INSERT INTO vector_dims (collection, model, dim) VALUES (?, ?, ?)"
            " ON CONFLICT (collection, model) DO UPDATE SET dim = excluded.dim",
            (index.collection, model, dim),
        )
        if current is not None:
            rebuild = True
            logger.warning(
                "collection %s: %s vectors are now %d-d, were %d-d; the older ones leave "
                "the index until re-embedded",
                index.collection,
                model,
                dim,
                current,
            )
    return rebuild


def _existing_ids(conn: sqlite3.Connection, collection: str, ids: list[str]) -> list[str]:
    found: list[str] = []
    for chunk in _chunks(ids):
        marks = ", ".join("?" * len(chunk))
        found.extend(
            row[0]
            for row in conn.execute(
                f"SELECT id FROM memories WHERE collection = ? AND id IN ({marks})",
                (collection, *chunk),
            )
        )
    return found


def _chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A short list of ids for a message."""
    head = ", ".join(repr(i) for i in ids[:shown])
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown} more"
