"""The embedded store's resurfacing index: which memories are due for spaced
repetition, and the most valuable of them, without reading the collection.

Every memory row carries its :class:`~hippocampus.schedule.DueKeys` (columns
``value, seed_due, seed_span, fsrs_due, fsrs_span``). Every write of a memory
row takes them from :func:`due_columns` (which computes them with
:func:`hippocampus.schedule.due_keys`, the one place they are computed) and, once
committed, hands the same values to the collection's :class:`DueIndex`
(``DueEntry.of(memory, columns)``). :class:`DueIndex` holds them in memory,
one numpy row per memory with whether it is active, so a
``/resurface`` is a few vectorized operations over the collection's arrays and
a partial sort of the due ones: a millisecond or two at 100k memories, however
many are due (often most: a memory nobody used for a week is due).

:func:`migrate_columns` fills the columns of a database from before them.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from hippocampus.model import Memory, Tier
from hippocampus.schedule import DueKeys, IndexedSchedule, due_keys
from hippocampus.store.embedded.rwlock import RWLock

_MIN_CAPACITY = 64
_ACTIVE = Tier.ACTIVE.value
_SHOWN = 5

DUE_COLUMNS = ", ".join(DueKeys._fields)
"""The memory columns of :class:`DueKeys`, named and ordered as its fields."""
SET_DUE_COLUMNS = ", ".join(f"{name} = :{name}" for name in DueKeys._fields)
"""The SET clause writing them, with :func:`due_columns`' names."""


def due_columns(memory: Memory) -> dict[str, Any]:
    """The due columns of a memory row as it is written, by column name: what
    every write of a memory row stores beside it."""
    return due_keys(memory)._asdict()


class DueEntry(NamedTuple):
    """A memory as the index holds it: its id, whether it is active, its keys."""

    id: str
    active: bool
    keys: DueKeys

    @classmethod
    def of(cls, memory: Memory, columns: dict[str, Any]) -> DueEntry:
        """The entry of a memory just written with ``columns`` (:func:`due_columns`)."""
        return cls(memory.id, Tier(memory.tier) == Tier.ACTIVE, DueKeys(**columns))


class DueIndex:
    """Due dates, spans and values of one collection's memories, in arrays.

    Rows are dense: a removed memory's row is filled with the last one. Reads
    hold a shared lock, writes (which the store serializes) an exclusive one.
    """

    def __init__(self) -> None:
        self._lock = RWLock()
        self._ids: list[str] = []
        self._row_of: dict[str, int] = {}
        self._active: npt.NDArray[np.bool_] = np.zeros(_MIN_CAPACITY, dtype=bool)
        self._value: npt.NDArray[np.float64] = np.zeros(_MIN_CAPACITY, dtype=np.float64)
        # Per schedule: due dates and spans, microseconds.
        self._due: dict[str, npt.NDArray[np.int64]] = {
            s: np.zeros(_MIN_CAPACITY, dtype=np.int64) for s in ("seed", "fsrs")
        }
        self._span: dict[str, npt.NDArray[np.int64]] = {
            s: np.ones(_MIN_CAPACITY, dtype=np.int64) for s in ("seed", "fsrs")
        }

    @classmethod
    def build(cls, rows: Iterable[Sequence[Any]]) -> DueIndex:
        """An index over ``(id, tier, value, seed_due, seed_span, fsrs_due,
        fsrs_span)`` rows, each column read straight into its array (a million
        rows in a few seconds; an entry per row took 25 s)."""
        index = cls()
        ids: list[str] = []
        active: list[bool] = []
        value: list[float] = []
        seed_due: list[int] = []
        seed_span: list[int] = []
        fsrs_due: list[int] = []
        fsrs_span: list[int] = []
        keys: tuple[list[Any], ...] = (value, seed_due, seed_span, fsrs_due, fsrs_span)
        for row in rows:
            ids.append(row[0])
            active.append(row[1] == _ACTIVE)
            for column, cell in zip(keys, row[2:7], strict=True):
                column.append(cell)
        n = len(ids)
        index._reserve(n)
        index._ids = ids
        index._row_of = {memory_id: row for row, memory_id in enumerate(ids)}
        index._active[:n] = active
        index._value[:n] = value
        index._due["seed"][:n] = seed_due
        index._span["seed"][:n] = seed_span
        index._due["fsrs"][:n] = fsrs_due
        index._span["fsrs"][:n] = fsrs_span
        return index

    def __len__(self) -> int:
        return len(self._ids)

    def due(self, schedule: IndexedSchedule, now: int, limit: int) -> list[str]:
        """Ids of the active memories due at ``now`` (microseconds) by
        ``schedule``'s stored dates: the ``limit`` most valuable, then most
        overdue (urgency ``1 + (now - due) / span``), then by id. Where exact
        ties of value and urgency straddle the cut, the smallest ids are taken,
        as a full sort would."""
        if limit <= 0:
            return []
        with self._lock.read():
            n = len(self._ids)
            due = self._due[schedule][:n]
            rows = np.flatnonzero(self._active[:n] & (due <= now))
            if rows.size == 0:
                return []
            value = self._value[rows]
            span = self._span[schedule][rows].astype(np.float64)
            urgency = 1.0 + (now - due[rows]).astype(np.float64) / span
            ids = self._ids
            if rows.size > limit:
                rows, value, urgency = _best(rows, value, urgency, limit, ids)
            picked = [
                (-float(v), -float(u), ids[r]) for r, v, u in zip(rows, value, urgency, strict=True)
            ]
        picked.sort()
        return [memory_id for _, _, memory_id in picked[:limit]]

    def put(self, entries: Sequence[DueEntry]) -> None:
        """Add or update memories."""
        with self._lock.write():
            for memory_id, active, keys in entries:
                row = self._row_of.get(memory_id)
                if row is None:
                    row = len(self._ids)
                    self._reserve(row + 1)
                    self._ids.append(memory_id)
                    self._row_of[memory_id] = row
                self._active[row] = active
                self._value[row] = keys.value
                self._due["seed"][row] = keys.seed_due
                self._span["seed"][row] = keys.seed_span
                self._due["fsrs"][row] = keys.fsrs_due
                self._span["fsrs"][row] = keys.fsrs_span

    def remove(self, memory_id: str) -> None:
        """Forget a memory (no-op when unknown)."""
        with self._lock.write():
            row = self._row_of.pop(memory_id, None)
            if row is None:
                return
            last = len(self._ids) - 1
            moved = self._ids.pop()
            if row != last:
                self._ids[row] = moved
                self._row_of[moved] = row
                for array in (self._active, self._value, *self._due.values(), *self._span.values()):
                    array[row] = array[last]

    def snapshot(self) -> dict[str, DueEntry]:
        """Every memory's entry, by id (for checks and tests)."""
        with self._lock.read():
            return {
                memory_id: DueEntry(
                    memory_id,
                    bool(self._active[row]),
                    DueKeys(
                        float(self._value[row]),
                        int(self._due["seed"][row]),
                        int(self._span["seed"][row]),
                        int(self._due["fsrs"][row]),
                        int(self._span["fsrs"][row]),
                    ),
                )
                for memory_id, row in self._row_of.items()
            }

    def _reserve(self, needed: int) -> None:
        capacity = self._value.shape[0]
        if needed <= capacity:
            return
        size = max(needed, capacity * 2)
        self._active = _grown(self._active, size)
        self._value = _grown(self._value, size)
        self._due = {s: _grown(a, size) for s, a in self._due.items()}
        self._span = {s: _grown(a, size, fill=1) for s, a in self._span.items()}


def _grown(array: npt.NDArray[Any], size: int, fill: int = 0) -> npt.NDArray[Any]:
    grown = np.full(size, fill, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


def _best(
    rows: npt.NDArray[np.intp],
    value: npt.NDArray[np.float64],
    urgency: npt.NDArray[np.float64],
    limit: int,
    ids: list[str],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The rows that may be among the ``limit`` best by (value desc, urgency desc,
    id): every row better than the limit-th on value, and of the rows tied with
    it on value those that may make the cut on urgency (ties on both cut by id).
    Two partial partitions and, only for exact ties, a look at the ids."""
    cut = np.partition(value, value.size - limit)[value.size - limit]
    above = value > cut
    room = limit - int(np.count_nonzero(above))
    tied = np.flatnonzero(value == cut)
    if tied.size > room:
        tied_urgency = urgency[tied]
        bar = np.partition(tied_urgency, tied.size - room)[tied.size - room]
        better = tied[tied_urgency > bar]
        level = tied[tied_urgency == bar]
        room -= better.size
        if level.size > room:
            # Exact ties on value and urgency (memories made in one batch and
            # never used): the smallest ids, as the sort would take them.
            smallest = set(heapq.nsmallest(room, (ids[rows[i]] for i in level)))
            level = level[[ids[rows[i]] in smallest for i in level]]
        tied = np.concatenate([better, level])
    keep = np.concatenate([np.flatnonzero(above), tied])
    return rows[keep], value[keep], urgency[keep]


# -- the columns ---------------------------------------------------------------------------


def migrate_columns(conn: sqlite3.Connection) -> None:
    """Add the due columns to ``memories`` and fill them from each memory's
    document, in the caller's transaction."""
    for column in DueKeys._fields:
        # Every write gives them; the defaults only fill rows until the update below.
        kind, default = ("REAL", "0.0") if column == "value" else ("INTEGER", "0")
        conn.execute(f"ALTER TABLE memories ADD COLUMN {column} {kind} NOT NULL DEFAULT {default}")
    after: tuple[str, str] | None = None
    while True:
        if after is None:
            page = conn.execute(
                "SELECT collection, id, doc FROM memories ORDER BY collection, id LIMIT 1000"
            ).fetchall()
        else:
            page = conn.execute(
                "SELECT collection, id, doc FROM memories WHERE (collection, id) > (?, ?)"
                " ORDER BY collection, id LIMIT 1000",
                after,
            ).fetchall()
        conn.executemany(
            f"UPDATE memories SET {SET_DUE_COLUMNS} WHERE collection = :c AND id = :i",
            [
                {"c": c, "i": i, **due_columns(Memory.model_validate_json(doc))}
                for c, i, doc in page
            ],
        )
        if len(page) < 1000:
            return
        after = (page[-1][0], page[-1][1])


def load(conn: sqlite3.Connection, collection: str) -> DueIndex:
    """The collection's index, from its rows."""
    rows = conn.execute(
        f"SELECT id, tier, {DUE_COLUMNS} FROM memories WHERE collection = ?", (collection,)
    )
    return DueIndex.build(rows)


def problems(conn: sqlite3.Connection, collection: str, index: DueIndex) -> list[str]:
    """The collection's due columns against its documents, and the index against
    the columns (for checks after a crash, and tests)."""
    found: list[str] = []
    stale: list[str] = []
    stored: dict[str, DueEntry] = {}
    for memory_id, tier, doc, *keys in conn.execute(
        f"SELECT id, tier, doc, {DUE_COLUMNS} FROM memories WHERE collection = ?", (collection,)
    ):
        entry = DueEntry(memory_id, tier == _ACTIVE, DueKeys(*keys))
        stored[memory_id] = entry
        if entry.keys != due_keys(Memory.model_validate_json(doc)):
            stale.append(memory_id)
    if stale:
        found.append(
            f"{collection}: {len(stale)} memories' due columns disagree with their documents,"
            f" e.g. {sorted(stale)[:_SHOWN]}"
        )
    held = index.snapshot()
    differ = sorted(i for i in stored.keys() | held.keys() if stored.get(i) != held.get(i))
    if differ:
        found.append(
            f"{collection}: the due index differs from the table for {len(differ)} memories,"
            f" e.g. {differ[:_SHOWN]}"
        )
    return found
