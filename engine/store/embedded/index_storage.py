"""The vector index's storage: per model, growing buffers of normalized
rows (:class:`Partition`) and of passage rows (:class:`Passages`); what the index
holds of each memory (:class:`IndexEntry`); and the scoring primitives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from hippocampus.model import Memory, Tier
from hippocampus.store.checks import micros
from hippocampus.store.records import Vector

if TYPE_CHECKING:
    from hippocampus.store.embedded.index_ann import Approximate

TIERS: tuple[Tier, ...] = tuple(Tier)
TIER_CODE: dict[str, int] = {tier.value: code for code, tier in enumerate(TIERS)}
MIN_CAPACITY = 64
NO_TIME = np.iinfo(np.int64).min  # the occurred_at of a free slot: no memory

Rows = npt.NDArray[np.intp]


class IndexEntry(NamedTuple):
    """What the index needs to know about one memory to filter it.

    A named tuple rather than a dataclass: a 100k-memory rebuild creates one per
    memory, and tuples are the cheapest to make.
    """

    id: str
    tier: Tier
    category: str
    tags: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    conversation_ids: tuple[str, ...] = ()
    speaker: str | None = None
    occurred: int = 0  # occurred_at, microseconds since the epoch

    @classmethod
    def of(cls, memory: Memory) -> IndexEntry:
        """The entry for ``memory``."""
        return cls(
            id=memory.id,
            tier=Tier(memory.tier),
            category=memory.category,
            tags=tuple(memory.tags),
            domains=tuple(memory.retrieval.domains),
            conversation_ids=tuple(memory.retrieval.conversation_ids),
            speaker=memory.speaker,
            occurred=micros(memory.occurred_at),
        )


StoredRow = tuple[str, str, str, str | None, str | None, bytes | None, str | None, int]
"""A memory as the index is built from it: ``(id, tier, category, filter JSON, model,
vector, speaker, occurred_at)``, where the filter JSON is ``[tags, domains,
conversation_ids]``, the vector is float32 bytes (``None`` with the model when the
memory has none) and occurred_at is in microseconds since the epoch."""


@dataclass(frozen=True, slots=True)
class IndexedVector:
    """One row of a snapshot: the model and the L2-normalized vector held for a memory."""

    model: str
    vector: Vector


def normalize_rows(
    matrix: npt.NDArray[np.float32], out: npt.NDArray[np.float32] | None = None
) -> npt.NDArray[np.float32]:
    """Rows scaled to unit L2 norm, into ``out`` (default: in place); all-zero rows
    stay zero. einsum and ``out=`` keep it to two passes with no temporary matrix."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    norms[norms == 0.0] = 1.0
    unit: npt.NDArray[np.float32] = np.divide(
        matrix, norms[:, None], out=matrix if out is None else out
    )
    return unit


class Partition:
    """The vectors of one model: growing buffers of normalized rows.

    Memories are known here by their collection slot (see :class:`CollectionIndex`).
    ``row_of_slot[s]`` is slot ``s``'s row (-1: none here), ``slot_of_row`` and
    ``ids`` the inverse. Removal swaps the last row into the hole, so rows stay
    dense and ``vectors[:n]`` is one contiguous block for the matrix product.
    """

    __slots__ = (
        "ann",
        "changes",
        "dim",
        "ids",
        "row_of_slot",
        "slot_of_row",
        "tier_counts",
        "tiers",
        "vectors",
    )

    def __init__(self, dim: int, capacity: int = MIN_CAPACITY) -> None:
        self.dim = dim
        capacity = max(capacity, MIN_CAPACITY)
        self.vectors: npt.NDArray[np.float32] = np.empty((capacity, dim), dtype=np.float32)
        self.tiers: npt.NDArray[np.int8] = np.empty(capacity, dtype=np.int8)
        self.slot_of_row: Rows = np.empty(capacity, dtype=np.intp)
        self.row_of_slot: Rows = np.full(capacity, -1, dtype=np.intp)
        self.ids: list[str] = []
        # Rows per tier code: lets a search tell in O(1) whether any row fails the
        # tier filter, so the common case (all active) builds no mask.
        self.tier_counts = [0] * len(TIERS)
        # Vectors put or removed so far: a sample of the rows is stale once it moves.
        self.changes = 0
        # The graph for approximate search, once the partition is large enough.
        self.ann: Approximate | None = None

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def from_rows(
        cls,
        dim: int,
        ids: list[str],
        slots: list[int],
        vectors: npt.NDArray[np.float32],
        tiers: list[int],
    ) -> Partition:
        """A partition over ``vectors[:len(ids)]`` (rows as stored; normalized in
        place), which it keeps as its buffer, the rows past them its room to grow."""
        n = len(ids)
        part = cls(dim, capacity=MIN_CAPACITY)
        if n:
            if vectors.shape[0] < n + n // 8:
                grown = np.empty((n + n // 8, dim), dtype=np.float32)
                grown[:n] = vectors[:n]
                vectors = grown
            normalize_rows(vectors[:n])
            part.vectors = vectors
            capacity = vectors.shape[0]
            part.tiers = np.empty(capacity, dtype=np.int8)
            part.slot_of_row = np.empty(capacity, dtype=np.intp)
            part.tiers[:n] = tiers
            part.slot_of_row[:n] = slots
            part._reserve_slot(max(slots))
            part.row_of_slot[slots] = np.arange(n, dtype=np.intp)
            part.ids = ids
            for code in tiers:
                part.tier_counts[code] += 1
        return part

    def _reserve(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        # Grown by an eighth, not doubled: at a million 384-d rows a doubling
        # would hold 1.5 GB of empty rows (any geometric step keeps appends
        # amortized O(1); a copy of the rows every eighth is cheap beside them).
        capacity = max(needed, capacity + max(capacity // 8, MIN_CAPACITY))
        n = self.n
        vectors = np.empty((capacity, self.dim), dtype=np.float32)
        vectors[:n] = self.vectors[:n]
        tiers = np.empty(capacity, dtype=np.int8)
        tiers[:n] = self.tiers[:n]
        slot_of_row = np.empty(capacity, dtype=np.intp)
        slot_of_row[:n] = self.slot_of_row[:n]
        self.vectors, self.tiers, self.slot_of_row = vectors, tiers, slot_of_row

    def _reserve_slot(self, slot: int) -> None:
        size = self.row_of_slot.shape[0]
        if slot < size:
            return
        grown = np.full(max(slot + 1, size * 2), -1, dtype=np.intp)
        grown[:size] = self.row_of_slot
        self.row_of_slot = grown

    def row(self, slot: int) -> int:
        """The slot's row, -1 when it has none here."""
        return int(self.row_of_slot[slot]) if slot < self.row_of_slot.shape[0] else -1

    def rows_of(self, slots: Rows) -> Rows:
        """The rows of those of ``slots`` that have one here."""
        slots = slots[slots < self.row_of_slot.shape[0]]
        rows = self.row_of_slot[slots]
        return rows[rows >= 0]

    def put(self, slot: int, memory_id: str, unit: Vector, tier: int) -> None:
        row = self.row(slot)
        if row < 0:
            row = self.n
            self._reserve(row + 1)
            self._reserve_slot(slot)
            self.ids.append(memory_id)
            self.slot_of_row[row] = slot
            self.row_of_slot[slot] = row
        else:
            self.tier_counts[int(self.tiers[row])] -= 1
        self.vectors[row] = unit
        self.tiers[row] = tier
        self.tier_counts[tier] += 1
        self.changes += 1
        if self.ann is not None:
            self.ann.stage(slot)

    def set_tier(self, slot: int, tier: int) -> None:
        row = self.row(slot)
        self.tier_counts[int(self.tiers[row])] -= 1
        self.tiers[row] = tier
        self.tier_counts[tier] += 1

    def remove(self, slot: int) -> None:
        row = self.row(slot)
        last = self.n - 1
        self.tier_counts[int(self.tiers[row])] -= 1
        if row != last:
            moved = int(self.slot_of_row[last])
            self.vectors[row] = self.vectors[last]
            self.tiers[row] = self.tiers[last]
            self.slot_of_row[row] = moved
            self.row_of_slot[moved] = row
            self.ids[row] = self.ids[last]
        self.row_of_slot[slot] = -1
        self.ids.pop()
        self.changes += 1
        if self.ann is not None:
            self.ann.discard(slot)

    def vector(self, slot: int) -> Vector:
        row: Vector = self.vectors[self.row(slot)]
        return row.copy()


class Passages:
    """The passage vectors of one model (those of long memories after their first
    passage): capacity-doubling buffers of normalized rows, each owned by a memory
    slot. Removal swaps the last row into each hole, so rows stay dense."""

    __slots__ = ("dim", "id_of", "n", "owners", "rows_of", "vectors")

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vectors: npt.NDArray[np.float32] = np.empty((MIN_CAPACITY, dim), dtype=np.float32)
        self.owners: Rows = np.empty(MIN_CAPACITY, dtype=np.intp)
        self.rows_of: dict[int, list[int]] = {}
        self.id_of: dict[int, str] = {}
        self.n = 0

    def add(self, slot: int, memory_id: str, units: npt.NDArray[np.float32]) -> None:
        count = units.shape[0]
        needed = self.n + count
        if needed > self.vectors.shape[0]:
            capacity = max(needed, self.vectors.shape[0] * 2)
            vectors = np.empty((capacity, self.dim), dtype=np.float32)
            vectors[: self.n] = self.vectors[: self.n]
            owners = np.empty(capacity, dtype=np.intp)
            owners[: self.n] = self.owners[: self.n]
            self.vectors, self.owners = vectors, owners
        self.vectors[self.n : needed] = units
        self.owners[self.n : needed] = slot
        self.rows_of[slot] = list(range(self.n, needed))
        self.id_of[slot] = memory_id
        self.n = needed

    def remove(self, slot: int) -> None:
        rows = self.rows_of.pop(slot, None)
        if rows is None:
            return
        del self.id_of[slot]
        # Highest first: the last row is then never one of the rows removed.
        for row in sorted(rows, reverse=True):
            last = self.n - 1
            if row != last:
                moved = int(self.owners[last])
                self.vectors[row] = self.vectors[last]
                self.owners[row] = moved
                held = self.rows_of[moved]
                held[held.index(last)] = row
            self.n = last

    def count(self, slot: int) -> int:
        return len(self.rows_of.get(slot, ()))

    def best(self, q: Vector, mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.float32]:
        """Per slot, the best similarity of its passages to the unit query ``q``
        (-inf for slots without passages, or failing ``mask``)."""
        n = self.n
        owners = self.owners[:n]
        scores = similarities(self.vectors[:n], q)
        size = int(owners.max()) + 1 if n else 0
        if mask is not None:
            ok = np.zeros(n, dtype=bool)
            inside = owners < mask.shape[0]
            ok[inside] = mask[owners[inside]]
            scores[~ok] = -np.inf
        best = np.full(size, -np.inf, dtype=np.float32)
        np.maximum.at(best, owners, scores)
        return best


def similarities(matrix: npt.NDArray[np.float32], q: Vector) -> npt.NDArray[np.float32]:
    """``matrix @ q`` (each row's dot product with ``q``), computed in this thread.

    ``matrix @ q`` hands any matrix of more than a few dozen rows to BLAS, which
    splits it over its own threads and spins until they are done. When the cores
    are busy (other requests of a served engine, other processes) those threads
    wait for a core while the caller spins: a product of a tenth of a millisecond
    took tens of milliseconds now and then, the whole of recall's tail on long
    memories. One row at a time in this thread is as fast at 100k rows and never
    waits: the product is memory-bound, and one core streams the matrix.
    """
    scores: npt.NDArray[np.float32] = np.vecdot(matrix, q)
    return scores


def top_k(scores: npt.NDArray[np.float32], k: int) -> Rows:
    """Positions of the ``k`` highest finite scores, highest first (masked rows hold -inf)."""
    m = scores.shape[0]
    k = min(k, m)
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    # argpartition is O(m); only the k winners get sorted.
    top = np.argpartition(scores, m - k)[m - k :] if k < m else np.arange(m, dtype=np.intp)
    top = top[np.argsort(-scores[top], kind="stable")]
    return top[scores[top] > -np.inf]
