"""Rows the embedded store's roles share: memory and state documents read back,
events appended, passage rows, places among a conversation's turns, each model's
vector dimension, and ids cut into ``IN (...)`` lists.

Functions here take a connection and run inside the caller's transaction (or read);
locking and keeping the in-memory indexes in step are the store's job.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hippocampus.errors import InvalidInputError
from hippocampus.model import Event, Memory
from hippocampus.store.checks import micros
from hippocampus.store.embedded import turns
from hippocampus.store.embedded.index import CollectionIndex
from hippocampus.store.records import MemoryRecord, Vector

logger = logging.getLogger(__name__)

CHUNK = 500  # ids per IN (...) list, rows per page when streaming


def passage_rows(
    records: Sequence[MemoryRecord], passages: Mapping[str, Vector]
) -> list[tuple[str, str, int, str, bytes]]:
    """``passages`` rows for the records that have passages (checked ones)."""
    return [
        (r.memory.collection, r.memory.id, n, str(r.memory.embedding_model), row.tobytes())
        for r in records
        if r.memory.id in passages
        for n, row in enumerate(passages[r.memory.id], start=1)
    ]


def write_passages(
    conn: sqlite3.Connection, collection: str, rows: list[tuple[str, str, int, str, bytes]]
) -> None:
    if rows:
        conn.executemany(
            "INSERT INTO passages (collection, memory_id, n, model, vector) VALUES (?, ?, ?, ?, ?)",
            rows,
        )


def delete_passages(conn: sqlite3.Connection, collection: str, ids: list[str]) -> None:
    conn.executemany(
        "DELETE FROM passages WHERE collection = ? AND memory_id = ?",
        [(collection, memory_id) for memory_id in ids],
    )


UPSERT_STATE = (
    "INSERT INTO states (collection, key, value) VALUES (?, ?, ?)"
    " ON CONFLICT (collection, key) DO UPDATE SET value = excluded.value"
)


def state_rows(collection: str, items: Mapping[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
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


def read_states(
    conn: sqlite3.Connection, collection: str, keys: list[str]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for chunk in chunks(keys):
        marks = ", ".join("?" * len(chunk))
        for key, value in conn.execute(
            f"SELECT key, value FROM states WHERE collection = ? AND key IN ({marks})",
            (collection, *chunk),
        ):
            found[key] = json.loads(value)
    return found


def read_memories(conn: sqlite3.Connection, collection: str, ids: list[str]) -> dict[str, Memory]:
    """The memories among ``ids`` that exist, by id, in the order asked."""
    docs: dict[str, str] = {}
    for chunk in chunks(ids):
        marks = ", ".join("?" * len(chunk))
        docs.update(
            conn.execute(
                f"SELECT id, doc FROM memories WHERE collection = ? AND id IN ({marks})",
                (collection, *chunk),
            ).fetchall()
        )
    return {i: Memory.model_validate_json(docs[i]) for i in ids if i in docs}


def insert_events(conn: sqlite3.Connection, collection: str, events: Sequence[Event]) -> None:
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
    appended = micros(now())
    conn.executemany(
        "INSERT INTO events (collection, type, at, memory_ids, payload, appended_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(*row, appended) for row in rows],
    )


def place(memory: Memory) -> tuple[str | None, int]:
    return memory.turn_of, micros(memory.occurred_at)


def turn_keys(records: Sequence[MemoryRecord]) -> list[turns.TurnKey]:
    """The places of the records' memories among their conversation's turns."""
    return [
        turns.TurnKey(turn_of, micros(r.memory.occurred_at), r.memory.id)
        for r in records
        if (turn_of := r.memory.turn_of) is not None
    ]


def now() -> datetime:
    return datetime.now(UTC)


def record_dims(
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


def chunks(items: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]
