"""The embedded store's memories (:class:`~hippocampus.store.roles.MemoryRole`):
written, read, edited and deleted with their vectors, passages and edges; found by
hash, by due date and in conversation order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hippocampus.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StoreUnavailableError,
)
from hippocampus.model import MEMORY_EDGES, Memory, Tier, with_learning_of
from hippocampus.schedule import IndexedSchedule
from hippocampus.store.checks import check_collection, check_passages, check_vector, micros
from hippocampus.store.embedded import due, edge_rows, tables, turns
from hippocampus.store.embedded.base import EmbeddedBase
from hippocampus.store.embedded.due import DueEntry
from hippocampus.store.embedded.index import IndexEntry
from hippocampus.store.records import MemoryRecord, Vector

_MEMORY_TYPES_SQL = ", ".join(f"'{t.value}'" for t in sorted(MEMORY_EDGES))

_INSERT_MEMORY = f"""
INSERT INTO memories
    (collection, id, doc, category, tier, content_hash, created_at, vector, vector_model,
     occurred_at, turn_of, {due.DUE_COLUMNS})
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

FIND_BY_HASH_SQL = (
    "SELECT id FROM memories WHERE collection = ? AND content_hash = ?"
    # The unary + keeps the planner on the hash index: ordering by the created_at
    # index instead scans the whole collection on every remember.
    " ORDER BY +created_at, rowid"
)


class EmbeddedMemories(EmbeddedBase):
    """The memories of an embedded store, with what is written beside them: vectors,
    passages, hub and memory edges, due dates, conversation links."""

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        """Insert new memories with their vectors and batch.edges, all or nothing.

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
        batch = _checked_batch(collection, records)
        with self._write_lock:
            index = self._index(collection)
            with self._transaction("add memories") as conn:
                existing = _existing_ids(conn, collection, list(batch.ids))
                if existing:
                    raise ConflictError(
                        f"memories already exist in {collection!r}: {_some(existing)}",
                        field="id",
                    )
                try:
                    conn.executemany(_INSERT_MEMORY, batch.rows)
                except sqlite3.IntegrityError as e:
                    raise ConflictError(f"memories already exist in {collection!r}") from e
                edge_rows.write_edges(conn, batch.edges, sources_exist=True)
                turns.relink(conn, collection, tables.turn_keys(records), micros(tables.now()))
                tables.write_passages(
                    conn, collection, tables.passage_rows(records, batch.passages)
                )
                rebuild = tables.record_dims(
                    conn,
                    index,
                    [(m, v.shape[0]) for _, v, m in batch.entries if v is not None and m],
                )
            self._refresh_index(index, batch.entries, rebuild, batch.passages)
            # Text after filters, and the reverse on delete: an unfiltered text search
            # (which skips the filter index) never returns a memory the filter index
            # does not hold; between the two updates it only misses the new ones.
            self._texts[collection].add([(r.memory.id, r.memory.content) for r in records])
            self._graphs[collection].add_memories(
                [r.memory.id for r in records],
                edge_rows.walked(batch.edges),
                self._indexes[collection],
            )
            self._dues[collection].put(batch.dues)

    def get_memories(self, collection: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among ``ids`` that exist in the collection, by id, in the
        order asked."""
        with self._reading("read memories") as conn:
            return tables.read_memories(conn, collection, list(dict.fromkeys(ids)))

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
        r = _checked_replacement(collection, record, replace_edges=replace_edges)
        with self._write_lock:
            index = self._index(collection)
            with self._transaction("replace a memory") as conn:
                if record.keep_learned:
                    r.memory = _with_stored_learning(conn, collection, r.memory, record)
                due_columns = due.due_columns(r.memory)
                was = turns.key_of(conn, collection, r.memory.id)
                _update_row(conn, collection, r, due_columns)
                _rewrite_around(conn, collection, r, was)
                rebuild = r.vector is not None and tables.record_dims(
                    conn, index, [(str(r.memory.embedding_model), r.vector.shape[0])]
                )
            memory, vector, passages = r.memory, r.vector, r.passages
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
                graph.put_edges(edge_rows.walked(r.edges))

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
                tables.delete_passages(conn, collection, [memory_id])
                old_hubs = conn.execute(
                    edge_rows.SELECT_HUB_EDGES_OF, (collection, memory_id)
                ).fetchall()
                conn.execute(
                    "DELETE FROM edges WHERE collection = ? AND source = ?", (collection, memory_id)
                )
                # Only memory edges point at memory ids; a hub may share the id's text.
                conn.execute(
                    f"DELETE FROM edges WHERE collection = ? AND target = ?"
                    f" AND type IN ({_MEMORY_TYPES_SQL})",
                    (collection, memory_id),
                )
                edge_rows.prune_hubs(conn, collection, old_hubs)
                if was is not None:
                    turns.relink(conn, collection, [was], micros(tables.now()))
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
                        (collection, tables.CHUNK),
                    ).fetchall()
                else:
                    page = conn.execute(
                        "SELECT created_at, rowid, doc FROM memories WHERE collection = ?"
                        " AND (created_at, rowid) > (?, ?) ORDER BY created_at, rowid LIMIT ?",
                        (collection, *after, tables.CHUNK),
                    ).fetchall()
            for _, _, doc in page:
                yield Memory.model_validate_json(doc)
            if len(page) < tables.CHUNK:
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


@dataclass(slots=True)
class _Batch:
    """Records checked for :meth:`EmbeddedMemories.add_memories`, as rows to write
    and entries for the in-memory indexes."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    edges: list[edge_rows.EdgeRow] = field(default_factory=list)
    entries: list[tuple[IndexEntry, Vector | None, str | None]] = field(default_factory=list)
    dues: list[DueEntry] = field(default_factory=list)
    passages: dict[str, Vector] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)


def _checked_batch(collection: str, records: Sequence[MemoryRecord]) -> _Batch:
    """Check the records of one :meth:`EmbeddedMemories.add_memories` call and lay
    out what it writes.

    Raises:
        ConflictError: an id repeated in the batch.
        InvalidInputError: as for :meth:`EmbeddedMemories.add_memories`.
    """
    batch = _Batch()
    seen = batch.ids
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
            batch.passages[memory.id] = checked
        columns = due.due_columns(memory)
        batch.rows.append((*_memory_row(collection, memory, vector), *columns.values()))
        batch.dues.append(DueEntry.of(memory, columns))
        batch.edges.extend(
            edge_rows.edges_of_record(
                collection, memory.id, record.edges, micros(memory.created_at)
            )
        )
        batch.entries.append((IndexEntry.of(memory), vector, memory.embedding_model))
    if repeated:
        raise ConflictError(f"ids repeated in the batch: {_some(repeated)}", field="id")
    return batch


@dataclass(slots=True)
class _Replacement:
    """One :meth:`EmbeddedMemories.replace_memory` call, checked: the memory as it
    will be stored and what is written beside it. Threaded through the steps of
    its transaction."""

    record: MemoryRecord
    memory: Memory
    vector: Vector | None
    passages: Vector | None
    replace_edges: bool
    edges: list[edge_rows.EdgeRow]  # empty unless replace_edges


def _checked_replacement(
    collection: str, record: MemoryRecord, *, replace_edges: bool
) -> _Replacement:
    """Check a :meth:`EmbeddedMemories.replace_memory` call before any write.

    Raises:
        InvalidInputError: as for :meth:`EmbeddedMemories.replace_memory`.
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
        edge_rows.edges_of_record(collection, memory.id, record.edges, micros(memory.created_at))
        if replace_edges
        else []
    )
    return _Replacement(record, memory, vector, passages, replace_edges, edges)


def _with_stored_learning(
    conn: sqlite3.Connection, collection: str, memory: Memory, record: MemoryRecord
) -> Memory:
    """``memory`` with what learning stored on its stored version (``keep_learned``).

    Raises:
        NotFoundError: no such memory in the collection.
    """
    stored = tables.read_memories(conn, collection, [memory.id]).get(memory.id)
    if stored is None:
        raise NotFoundError(f"no memory {memory.id!r} in {collection!r}")
    return with_learning_of(memory, stored, tier=record.keep_tier)


def _update_row(
    conn: sqlite3.Connection, collection: str, r: _Replacement, due_columns: dict[str, Any]
) -> None:
    """Overwrite the memory's row: its vector replaced, dropped, or kept.

    Raises:
        NotFoundError: no such memory in the collection.
    """
    memory, vector = r.memory, r.vector
    key = {"c": collection, "i": memory.id}
    columns = {
        "category": memory.category,
        "tier": Tier(memory.tier).value,
        "hash": memory.content_hash,
        "created": micros(memory.created_at),
        "occurred": micros(memory.occurred_at),
        "turn_of": memory.turn_of,
        **due_columns,
    }
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
    elif r.record.drop_vector:
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


def _rewrite_around(
    conn: sqlite3.Connection, collection: str, r: _Replacement, was: turns.TurnKey | None
) -> None:
    """Rewrite what sits beside the replaced row: its passages (with a new or dropped
    vector), its conversation links (if it moved among the turns, ``was`` being its
    place before) and, with ``replace_edges``, its hub edges."""
    memory, record = r.memory, r.record
    if r.vector is not None or record.drop_vector:
        tables.delete_passages(conn, collection, [memory.id])
        if r.passages is not None:
            tables.write_passages(
                conn,
                collection,
                tables.passage_rows([record], {memory.id: r.passages}),
            )
    placed = tables.turn_keys([record])
    if placed != ([was] if was is not None else []):
        moved = [*placed, *([was] if was is not None else [])]
        turns.relink(conn, collection, moved, micros(tables.now()))
    if r.replace_edges:
        old_hubs = conn.execute(edge_rows.SELECT_HUB_EDGES_OF, (collection, memory.id)).fetchall()
        conn.execute(
            f"DELETE FROM edges WHERE collection = ? AND source = ?"
            f" AND type IN ({edge_rows.HUB_TYPES_SQL})",
            (collection, memory.id),
        )
        edge_rows.write_edges(conn, r.edges, sources_exist=True)
        edge_rows.prune_hubs(conn, collection, old_hubs)


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


def _existing_ids(conn: sqlite3.Connection, collection: str, ids: list[str]) -> list[str]:
    found: list[str] = []
    for chunk in tables.chunks(ids):
        marks = ", ".join("?" * len(chunk))
        found.extend(
            row[0]
            for row in conn.execute(
                f"SELECT id FROM memories WHERE collection = ? AND id IN ({marks})",
                (collection, *chunk),
            )
        )
    return found


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A short list of ids for a message."""
    head = ", ".join(repr(i) for i in ids[:shown])
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown} more"
