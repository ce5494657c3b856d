"""The Neo4j store's memories: adding, reading, replacing and deleting them,
each write in one transaction with its edges, passages, conversation turns and
counters."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from neo4j import ManagedTransaction

from hippocampus.errors import ConflictError, InvalidInputError, NotFoundError
from hippocampus.model import Memory, with_learning_of
from hippocampus.schedule import IndexedSchedule
from hippocampus.store import checks
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    DAWN,
    PAGE,
    Neo4jConnection,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.counts import Tally
from hippocampus.store.neo4j.graph import upsert_edge_rows
from hippocampus.store.neo4j.turns import link_turns, lock_turns, turn_place
from hippocampus.store.neo4j.vectors import passage_values
from hippocampus.store.records import MemoryRecord, Vector


class Neo4jMemories(Neo4jConnection):
    """Memories, written whole with what they hold."""

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        """Insert new memories with their vectors and edges, all or nothing.

        Hub nodes named by the edges are created when absent; memory edges whose
        target memory exists neither in the store nor in the batch are skipped.

        Raises:
            ConflictError: an id already exists in the collection, or is repeated in
                the batch (nothing is written).
            InvalidInputError: a memory of another collection, an edge that does not
                leave its memory, a vector without ``embedding_model``, or a vector
                that is not a finite one-dimensional array.
        """
        if not records:
            return
        rows: list[dict[str, Any]] = []
        edges: list[dict[str, Any]] = []
        passages: list[dict[str, Any]] = []
        stored: list[tuple[Memory, str | None]] = []
        seen: set[str] = set()
        repeated: list[str] = []
        for record in records:
            memory = record.memory
            checks.check_collection(collection, memory)
            if memory.id in seen:
                repeated.append(memory.id)
            seen.add(memory.id)
            vector = self._record_vector(record)
            item = _passage_item(record, vector)
            if item["passages"]:
                passages.append(item)
            rows.append(convert.memory_properties(memory, vector))
            stored.append((memory, memory.embedding_model if vector is not None else None))
            edges.extend(convert.record_edge_rows(memory, record.edges))
        if repeated:
            raise ConflictError(f"ids repeated in the batch: {_some(repeated)}", field="id")
        ids = list(seen)
        added = [r.memory for r in records]

        def work(tx: ManagedTransaction) -> None:
            # The conversations first, before any memory (see turns.lock_turns).
            locked = lock_turns(tx, collection, added)
            existing = [
                r["id"] for r in run_statement(tx, "memory/existing_ids", collection, ids=ids)
            ]
            if existing:
                raise ConflictError(
                    f"memories already exist in {collection!r}: {_some(existing)}", field="id"
                )
            run_statement(tx, "memory/add_memories", collection, memories=rows)
            tally = Tally()
            for memory, model in stored:
                tally.memory(memory, model)
            if passages:
                run_statement(tx, "memory/set_passages", collection, items=passages)
            # One order over the whole batch, not record by record.
            upsert_edge_rows(tx, collection, edges, tally)
            link_turns(tx, collection, added, tally, locked)
            tally.write(tx, collection)

        self._write("add memories", work)
        self._memories_written(collection, ids)

    def get_memories(self, collection: str, ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among ``ids`` that exist in the collection, by id."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self._read(
            "read memories", one_statement("memory/get_memories", {"ids": wanted}, collection)
        )
        return {memory.id: memory for memory in convert.memories_of(rows)}

    def replace_memory(self, collection: str, record: MemoryRecord, *, replace_edges: bool) -> None:
        """Overwrite an existing memory.

        The vector is replaced when ``record.vector`` is given (with the memory's
        ``embedding_model``), removed with ``record.drop_vector`` (the memory is then
        pending re-embedding) and kept otherwise. With ``replace_edges`` the memory's
        hub edges become the hub edges of ``record.edges``; memory edges among
        ``record.edges`` are upserted and its other memory edges kept. Hubs left
        without edges are deleted.

        Raises:
            NotFoundError: no such memory in the collection.
            InvalidInputError: as for :meth:`add_memories`, or ``drop_vector`` with
                a vector.
        """
        memory = record.memory
        checks.check_collection(collection, memory)
        if record.drop_vector:
            if record.vector is not None:
                raise InvalidInputError(
                    f"memory {memory.id!r}: a vector cannot be given and dropped at once",
                    field="vector",
                )
            memory = memory.model_copy(update={"embedding_model": None})
        vector = self._record_vector(record)
        passages = _passage_item(record, vector)
        properties = convert.memory_properties(memory, vector, with_vector=False)
        edges = convert.record_edge_rows(memory, record.edges) if replace_edges else []
        params = {
            "id": memory.id,
            "properties": properties,
            "embedding": convert.vector_value(vector) if vector is not None else None,
            "embedding_model": memory.embedding_model if vector is not None else None,
            "drop_embedding": record.drop_vector,
        }

        def work(tx: ManagedTransaction) -> None:
            written = params
            was = _stored(tx, collection, memory.id)
            locked: frozenset[str] = frozenset()
            if was is not None and turn_place(was) != turn_place(memory):
                # A move: its conversations are locked first (before any memory).
                locked = lock_turns(tx, collection, [memory, was])
            # Locked before it is read again: no write of it commits between (a
            # learning update's, or one whose counts would then be lost).
            lock = "learn/lock_memories" if record.keep_learned else "memory/lock_memories"
            run_statement(tx, lock, collection, ids=[memory.id])
            was = _stored(tx, collection, memory.id)
            now = memory
            if record.keep_learned and was is not None:
                now = with_learning_of(memory, was, tier=record.keep_tier)
                written = {
                    **params,
                    "properties": convert.memory_properties(now, vector, with_vector=False),
                }
            if not run_statement(tx, "memory/replace_memory", collection, **written):
                raise NotFoundError(f"no memory {memory.id!r} in {collection!r}")
            tally = Tally()
            if was is not None:
                tally.changed(was, was.embedding_model, now, _model_after(record, was))
            if vector is not None or record.drop_vector:
                run_statement(tx, "memory/set_passages", collection, items=[passages])
            if was is not None and turn_place(was) != turn_place(memory):
                link_turns(tx, collection, [memory, was], tally, locked)
            if replace_edges:
                _replace_hub_edges(tx, collection, memory.id, edges, tally)
            tally.write(tx, collection)

        self._write("replace a memory", work)
        self._memories_written(collection, [memory.id])

    def delete_memory(self, collection: str, memory_id: str) -> bool:
        """Remove a memory with every edge that touches it; hubs left without edges
        go too. ``False`` if absent."""

        def work(tx: ManagedTransaction) -> bool:
            was = _stored(tx, collection, memory_id)
            locked: frozenset[str] = frozenset()
            if was is not None and was.turn_of is not None:
                # A turn: its conversation is locked first (before any memory).
                locked = lock_turns(tx, collection, [was])
            # Locked, then read again: the counts move from what it holds.
            run_statement(tx, "memory/lock_memories", collection, ids=[memory_id])
            was = _stored(tx, collection, memory_id)
            run_statement(tx, "memory/delete_passages", collection, ids=[memory_id])
            found = run_statement(tx, "memory/delete_memory", collection, id=memory_id)
            if not found:
                return False
            tally = Tally()
            for edge_type in found[0]["edges"]:
                tally.edges(edge_type, -1)
            for kind in found[0]["pruned"]:
                tally.hubs(kind, -1)
            if was is not None:
                tally.memory(was, was.embedding_model, -1)
                link_turns(tx, collection, [was], tally, locked)
            tally.write(tx, collection)
            return True

        deleted = self._write("delete a memory", work)
        self._memories_written(collection, [memory_id])
        return deleted

    def iter_memories(self, collection: str) -> Iterator[Memory]:
        """Every memory of the collection, oldest first (ties by id).

        Streams in pages, each its own read: a memory written while the iteration
        runs may or may not be seen.
        """
        after_at: Any = DAWN
        after_id = ""
        while True:
            page = self._read(
                "list memories",
                one_statement(
                    "memory/iter_memories",
                    {"after_at": after_at, "after_id": after_id, "limit": PAGE},
                    collection,
                ),
            )
            yield from convert.memories_of(page)
            if len(page) < PAGE:
                return
            # As a plain UTC offset, the way memories store it: the server hands
            # it back in the zone "UTC", which it orders apart from the same
            # moment at +00:00, so a page key read back as given matched
            # nothing at its own moment and the pages after the first were lost.
            # The key is the last row still there: one deleted while read has null
            # properties (and sorts last).
            last = next((r for r in reversed(page) if r["created_at"] is not None), None)
            if last is None:
                return
            moment = convert.native_datetime(last["created_at"])
            after_at = moment.astimezone(UTC) if moment is not None else DAWN
            after_id = last["id"]

    def due_memories(
        self, collection: str, *, schedule: IndexedSchedule, now: datetime, limit: int
    ) -> list[Memory]:
        """Active memories due at ``now`` by the due dates stored on them under
        ``schedule``, the ``limit`` most valuable first (then the most overdue,
        then by id), through the schedule's index on due dates.

        Raises:
            InvalidInputError: an unknown schedule.
        """
        if schedule not in ("seed", "fsrs"):
            raise InvalidInputError(f"no stored due dates for {schedule!r}", field="schedule")
        if limit <= 0:
            return []
        params = {"schedule": schedule, "now": checks.micros(now), "limit": limit}
        rows = self._read(
            "list due memories", one_statement("memory/due_memories", params, collection)
        )
        return convert.memories_of(rows)

    def find_by_hash(self, collection: str, content_hash: str) -> list[str]:
        """Ids of memories whose normalized content hashes to ``content_hash``, oldest
        first."""
        rows = self._read(
            "find memories by hash",
            one_statement("memory/find_by_hash", {"content_hash": content_hash}, collection),
        )
        return [row["id"] for row in rows if row["id"] is not None]

    def _record_vector(self, record: MemoryRecord) -> Vector | None:
        if record.vector is None:
            return None
        if record.memory.embedding_model is None:
            raise InvalidInputError(
                f"memory {record.memory.id!r} has a vector but no embedding_model",
                field="embedding_model",
            )
        return checks.check_vector(record.vector, record.memory.id)


def _passage_item(record: MemoryRecord, vector: Vector | None) -> dict[str, Any]:
    """The ``memory/set_passages`` row of a record: its passages, which need its
    vector (none without one)."""
    if record.passages is not None and vector is None:
        raise InvalidInputError(
            f"memory {record.memory.id!r} has passage vectors but no vector", field="passages"
        )
    return {
        "id": record.memory.id,
        "model": record.memory.embedding_model,
        "passages": passage_values(record.passages, vector, record.memory.id)
        if vector is not None
        else [],
    }


def _stored(tx: ManagedTransaction, collection: str, memory_id: str) -> Memory | None:
    """The memory as stored now, inside ``tx``."""
    rows = run_statement(tx, "memory/get_memories", collection, ids=[memory_id])
    return convert.memory_of(rows[0]["doc"], rows[0]["embedding_model"]) if rows else None


def _model_after(record: MemoryRecord, was: Memory) -> str | None:
    """The model of the vector a memory holds once ``record`` replaced it (``was``
    as stored before): the record's with a vector, none when it drops the vector,
    else the one it had."""
    if record.vector is not None:
        return record.memory.embedding_model
    return None if record.drop_vector else was.embedding_model


def _replace_hub_edges(
    tx: ManagedTransaction,
    collection: str,
    memory_id: str,
    rows: Sequence[dict[str, Any]],
    tally: Tally,
) -> None:
    """Make ``rows`` the memory's hub edges (and upsert its memory edges among
    them); hubs left without edges go. Counted in ``tally``."""
    (dropped,) = run_statement(tx, "memory/drop_hub_edges", collection, id=memory_id)
    for edge_type in dropped["types"]:
        tally.edges(edge_type, -1)
    upsert_edge_rows(tx, collection, rows, tally)
    if dropped["hubs"]:
        for row in run_statement(tx, "memory/prune_hubs", collection, hubs=dropped["hubs"]):
            tally.hubs(row["kind"], -int(row["n"]))


def _some(ids: Sequence[str], shown: int = 5) -> str:
    """A short list of ids for a message."""
    head = ", ".join(repr(i) for i in ids[:shown])
    return head if len(ids) <= shown else f"{head} and {len(ids) - shown} more"
