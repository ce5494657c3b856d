"""The in-memory vector index of one collection, rebuilt from SQLite at start.

Exact brute-force cosine: one float32 matrix-vector product per search. At the
scale one embedded data directory serves (up to a few hundred thousand memories
per collection) that is a few milliseconds, exact, and needs no extra dependency
or approximate structure to keep in step with the table.

Vectors are kept in one partition per embedding model. A search names its model,
so it scans only that model's rows and never needs a per-row model mask, and two
models of different dimensions (a model switch half-way through a re-embed) live
side by side. Each model has one dimension here, given by the store (the dimension
of the model's most recent vector, kept in SQLite); vectors of that model with
another dimension stay out of the index, and the store reports their memories as
pending re-embedding.

Filter metadata (tier, category, tags, domains, conversations, speaker) is kept
for every memory of the collection, with or without a vector, in inverted indexes;
when each memory happened (``occurred_at``) in one array by slot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from hippocampus.dense import (
    CROWDING_NEIGHBOURS,
    CROWDING_SAMPLE,
    PASSAGE_MARGIN,
    VectorSample,
    crowding_of,
)
from hippocampus.model import Memory, RecallFilters, Tier, speaker_key
from hippocampus.store.checks import micros
from hippocampus.store.embedded.rwlock import RWLock
from hippocampus.store.records import Vector

logger = logging.getLogger(__name__)

_TIERS: tuple[Tier, ...] = tuple(Tier)
_TIER_CODE: dict[str, int] = {tier.value: code for code, tier in enumerate(_TIERS)}
_MIN_CAPACITY = 64
_NO_TIME = np.iinfo(np.int64).min  # the occurred_at of a free slot: no memory

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


class _Partition:
    """The vectors of one model: capacity-doubling buffers of normalized rows.

    Memories are known here by their collection slot (see :class:`CollectionIndex`).
    ``row_of_slot[s]`` is slot ``s``'s row (-1: none here), ``slot_of_row`` and
    ``ids`` the inverse. Removal swaps the last row into the hole, so rows stay
    dense and ``vectors[:n]`` is one contiguous block for the matrix product.
    """

    __slots__ = (
        "changes",
        "dim",
        "ids",
        "row_of_slot",
        "slot_of_row",
        "tier_counts",
        "tiers",
        "vectors",
    )

    def __init__(self, dim: int, capacity: int = _MIN_CAPACITY) -> None:
        self.dim = dim
        capacity = max(capacity, _MIN_CAPACITY)
        self.vectors: npt.NDArray[np.float32] = np.empty((capacity, dim), dtype=np.float32)
        self.tiers: npt.NDArray[np.int8] = np.empty(capacity, dtype=np.int8)
        self.slot_of_row: Rows = np.empty(capacity, dtype=np.intp)
        self.row_of_slot: Rows = np.full(capacity, -1, dtype=np.intp)
        self.ids: list[str] = []
        # Rows per tier code: lets a search tell in O(1) whether any row fails the
        # tier filter, so the common case (all active) builds no mask.
        self.tier_counts = [0] * len(_TIERS)
        # Vectors put or removed so far: a sample of the rows is stale once it moves.
        self.changes = 0

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def from_rows(
        cls, dim: int, ids: list[str], slots: list[int], blobs: list[bytes], tiers: list[int]
    ) -> _Partition:
        n = len(ids)
        part = cls(dim, capacity=n + n // 4)
        if n:
            stored = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(n, dim)
            normalize_rows(stored, out=part.vectors[:n])
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
        capacity = max(needed, capacity * 2)
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

    def vector(self, slot: int) -> Vector:
        row: Vector = self.vectors[self.row(slot)]
        return row.copy()


class _Passages:
    """The passage vectors of one model (those of long memories after their first
    passage): capacity-doubling buffers of normalized rows, each owned by a memory
    slot. Removal swaps the last row into each hole, so rows stay dense."""

    __slots__ = ("dim", "id_of", "n", "owners", "rows_of", "vectors")

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vectors: npt.NDArray[np.float32] = np.empty((_MIN_CAPACITY, dim), dtype=np.float32)
        self.owners: Rows = np.empty(_MIN_CAPACITY, dtype=np.intp)
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


class CollectionIndex:
    """Vectors and filter metadata of one collection.

    Every memory gets a small integer *slot* for as long as it lives (slots of
    deleted memories are reused). The inverted indexes hold sets of slots, so a
    filter is evaluated with C-speed set operations and turned into rows with one
    numpy gather, never a Python loop over matching ids.

    Thread safety: searches hold a shared lock and run side by side (numpy drops
    the GIL in the matrix product); each mutator holds the lock exclusively, so a
    search sees every write either wholly or not at all. The store serializes the
    mutators themselves behind its write lock.
    """

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self._lock = RWLock()
        self._entries: dict[str, IndexEntry] = {}
        self._slot_of: dict[str, int] = {}
        self._free_slots: list[int] = []
        self._model_of: dict[str, str] = {}
        self._partitions: dict[str, _Partition] = {}
        self._dims: dict[str, int] = {}
        # Passage vectors of long memories, per model; a memory's passages are
        # indexed only beside its own vector, of the same model and dimension.
        self._passages: dict[str, _Passages] = {}
        # Per model: (partition, its changes then, sample) for crowding, when the
        # partition has more vectors than a sample holds.
        self._samples: dict[str, tuple[_Partition, int, VectorSample]] = {}
        self._passage_model_of: dict[str, str] = {}
        self._by_category: dict[str, set[int]] = {}
        self._tier_counts = dict.fromkeys(_TIERS, 0)
        # Slots per tier: lets a filter mask be built from the few memories of the
        # excluded tiers rather than from every memory of the searched ones.
        self._by_tier: dict[Tier, set[int]] = {tier: set() for tier in _TIERS}
        # Memories with no stored vector at all (a vector kept out of the index for
        # its dimension is still stored): the count stats() reports as pending.
        self._vectorless: set[str] = set()
        self._by_tag: dict[str, set[int]] = {}
        self._by_domain: dict[str, set[int]] = {}
        self._by_conversation: dict[str, set[int]] = {}
        self._by_speaker: dict[str, set[int]] = {}
        # occurred_at per slot (microseconds); _NO_TIME where no memory holds the slot.
        self._occurred: npt.NDArray[np.int64] = np.full(_MIN_CAPACITY, _NO_TIME, dtype=np.int64)

    # -- building -----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        collection: str,
        rows: Iterable[StoredRow],
        dims: dict[str, int] | None = None,
        passages: Iterable[tuple[str, str, bytes]] = (),
    ) -> CollectionIndex:
        """An index over stored rows, oldest first, and the passage vectors
        ``(memory id, model, float32 bytes)`` of long memories, each memory's in
        order.

        ``dims`` gives each model's dimension; a model missing there takes the
        dimension most of its vectors have. Vectors of another dimension are left
        out.

        Vectors are gathered per model and normalized in one numpy pass, and equal
        filter JSON texts are parsed once and share their tuples: a rebuild does
        little more than a few dict and set insertions per memory.
        """
        index = cls(collection)
        entries, slot_of = index._entries, index._slot_of
        by_category, by_tag = index._by_category, index._by_tag
        by_domain, by_conversation = index._by_domain, index._by_conversation
        tier_of = {tier.value: tier for tier in _TIERS}
        parsed: dict[str | None, tuple[tuple[str, ...], ...]] = {None: ((), (), ())}
        # (model, vector bytes) -> ids, slots, vectors, tier codes
        gathered: dict[tuple[str, int], tuple[list[str], list[int], list[bytes], list[int]]] = {}
        by_speaker = index._by_speaker
        occurred: list[int] = []
        for slot, row in enumerate(rows):
            memory_id, tier_value, category, filter_json, model, blob, speaker, when = row
            fields = parsed.get(filter_json)
            if fields is None:
                fields = parsed[filter_json] = tuple(
                    tuple(values or ()) for values in json.loads(filter_json or "[]")
                )
            tags, domains, conversations = fields
            tier = tier_of[tier_value]
            entries[memory_id] = IndexEntry(
                memory_id, tier, category, tags, domains, conversations, speaker, when
            )
            slot_of[memory_id] = slot
            occurred.append(when)
            if speaker is not None:
                by_speaker.setdefault(speaker_key(speaker), set()).add(slot)
            index._tier_counts[tier] += 1
            index._by_tier[tier].add(slot)
            slots = by_category.get(category)
            if slots is None:
                slots = by_category[category] = set()
            slots.add(slot)
            for inverted, keys in (
                (by_tag, tags),
                (by_domain, domains),
                (by_conversation, conversations),
            ):
                for key in keys:
                    slots = inverted.get(key)
                    if slots is None:
                        slots = inverted[key] = set()
                    slots.add(slot)
            if model is None or blob is None:
                index._vectorless.add(memory_id)
                continue
            found = gathered.get((model, len(blob)))
            if found is None:
                found = gathered[(model, len(blob))] = ([], [], [], [])
            found[0].append(memory_id)
            found[1].append(slot)
            found[2].append(blob)
            found[3].append(_TIER_CODE[tier_value])

        index._occurred = np.full(max(len(occurred), _MIN_CAPACITY), _NO_TIME, dtype=np.int64)
        index._occurred[: len(occurred)] = occurred
        most: dict[str, tuple[int, int]] = {}  # model -> (vector count, bytes)
        for (model, size), (ids, _, _, _) in gathered.items():
            if len(ids) > most.get(model, (0, 0))[0]:
                most[model] = (len(ids), size)
        index._dims = {model: size // 4 for model, (_, size) in most.items()}
        index._dims.update(dims or {})
        left_out = 0
        for (model, size), (ids, model_slots, blobs, tiers) in gathered.items():
            dim = index._dims[model]
            if size != dim * 4 or dim == 0:
                left_out += len(ids)
                continue
            index._partitions[model] = _Partition.from_rows(dim, ids, model_slots, blobs, tiers)
            index._model_of.update(dict.fromkeys(ids, model))
        index._build_passages(passages)
        if left_out:
            logger.warning(
                "collection %s: %d vectors have another dimension than the latest of "
                "their model and stay out of the index until re-embedded",
                collection,
                left_out,
            )
        return index

    def _build_passages(self, rows: Iterable[tuple[str, str, bytes]]) -> None:
        """Index stored passage vectors: those beside an indexed vector of their
        model and of its dimension."""
        gathered: dict[str, dict[str, list[bytes]]] = {}
        for memory_id, model, blob in rows:
            gathered.setdefault(memory_id, {}).setdefault(model, []).append(blob)
        for memory_id, by_model in gathered.items():
            held = self._model_of.get(memory_id)
            blobs = by_model.get(held) if held is not None else None
            if held is None or blobs is None:
                continue
            dim = self._dims[held]
            if any(len(blob) != dim * 4 for blob in blobs):
                continue
            stored = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
            self._put_passages(memory_id, stored, held)

    # -- reading ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._entries

    def dim_of(self, model: str) -> int | None:
        """The dimension of ``model``'s vectors here; ``None`` before its first one."""
        with self._lock.read():
            return self._dims.get(model)

    def vector_count(self, model: str) -> int:
        """How many vectors of ``model`` are indexed."""
        with self._lock.read():
            part = self._partitions.get(model)
            return part.n if part is not None else 0

    def counts(self) -> tuple[int, dict[str, int], dict[str, int], int]:
        """Memories, by category, by tier, and those without a stored vector."""
        with self._lock.read():
            return (
                len(self._entries),
                {category: len(slots) for category, slots in self._by_category.items()},
                {tier.value: n for tier, n in self._tier_counts.items() if n},
                len(self._vectorless),
            )

    def snapshot(self) -> tuple[dict[str, IndexEntry], dict[str, IndexedVector]]:
        """Copies of the entries and indexed vectors, by memory id (for checks and tests)."""
        with self._lock.read():
            vectors = {
                memory_id: IndexedVector(
                    model, self._partitions[model].vector(self._slot_of[memory_id])
                )
                for memory_id, model in self._model_of.items()
            }
            return dict(self._entries), vectors

    def passage_counts(self) -> dict[str, tuple[str, int]]:
        """``(model, passages)`` of every memory with indexed passages, by id (for
        checks and tests)."""
        with self._lock.read():
            return {
                memory_id: (model, self._passages[model].count(self._slot_of[memory_id]))
                for memory_id, model in self._passage_model_of.items()
            }

    def search(
        self,
        query: Vector,
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by cosine similarity to ``query`` among ``model``'s
        vectors that pass ``filters``; best first. With ``passages`` a memory scores
        the best similarity of its vector and its passages."""
        with self._lock.read():
            part = self._partitions.get(model)
            if part is None or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if q.shape[0] != part.dim:
                logger.warning(
                    "collection %s: a %d-d query cannot search %s's %d-d vectors",
                    self.collection,
                    q.shape[0],
                    model,
                    part.dim,
                )
                return []
            norm = float(np.linalg.norm(q))
            if norm == 0.0 or not np.isfinite(norm):
                return []
            q = q / np.float32(norm)
            hits = self._search(part, q, k, filters)
            return self._with_passages(model, part, q, k, filters, hits) if passages else hits

    def similarities(self, ids: Sequence[str], query: Vector, *, model: str) -> dict[str, float]:
        """The cosine similarity to ``query`` of each of ``ids``' own vector of
        ``model`` (those that have one), from the rows held here."""
        with self._lock.read():
            part = self._partitions.get(model)
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if part is None or q.shape[0] != part.dim:
                return {}
            norm = float(np.linalg.norm(q))
            if norm == 0.0 or not np.isfinite(norm):
                return {}
            found = [mid for mid in dict.fromkeys(ids) if self._model_of.get(mid) == model]
            rows = np.asarray([part.row(self._slot_of[mid]) for mid in found], dtype=np.intp)
            scores = similarities(part.vectors[rows], q / np.float32(norm))
            return dict(zip(found, scores.tolist(), strict=True))

    def crowding(self, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded each of ``ids``' neighbourhoods is among ``model``'s vectors
        (:func:`hippocampus.dense.crowding_of`): against all of them when there
        are no more than :data:`CROWDING_SAMPLE` (read in place, under the lock),
        else against an even sample of the rows, copied and drawn again after
        they change."""
        with self._lock.read():
            part = self._partitions.get(model)
            if part is None:
                return {}
            kept = self._samples.get(model)
            if part.n <= CROWDING_SAMPLE:
                self._samples.pop(model, None)
                sample = VectorSample(ids=part.ids, vectors=part.vectors[: part.n], total=part.n)
            elif kept is None or kept[0] is not part or kept[1] != part.changes:
                rows = np.linspace(0, part.n - 1, num=CROWDING_SAMPLE).astype(np.intp)
                sample = VectorSample(
                    ids=[part.ids[r] for r in rows.tolist()],
                    vectors=part.vectors[rows],
                    total=part.n,
                )
                # Readers may draw it side by side: the same sample, either kept.
                self._samples[model] = (part, part.changes, sample)
            else:
                sample = kept[2]
            found = [mid for mid in dict.fromkeys(ids) if self._model_of.get(mid) == model]
            rows = np.asarray([part.row(self._slot_of[mid]) for mid in found], dtype=np.intp)
            return crowding_of(found, part.vectors[rows], sample, CROWDING_NEIGHBOURS)

    def search_many(
        self,
        queries: npt.NDArray[np.float32],
        *,
        model: str,
        k: int,
        filters: RecallFilters,
        passages: bool = True,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`search` for each row of ``queries``. With no filter but tiers, all
        rows are scored by one matrix product (a pass over the vectors serves every
        query); otherwise one search per row. Passages (with ``passages``) are
        searched per row."""
        with self._lock.read():
            rows = np.asarray(queries, dtype=np.float32)
            if rows.ndim != 2:
                rows = rows.reshape(1, -1)
            part = self._partitions.get(model)
            if part is None or k <= 0 or rows.shape[0] == 0:
                return [[] for _ in range(rows.shape[0])]
            if rows.shape[1] != part.dim:
                logger.warning(
                    "collection %s: %d-d queries cannot search %s's %d-d vectors",
                    self.collection,
                    rows.shape[1],
                    model,
                    part.dim,
                )
                return [[] for _ in range(rows.shape[0])]
            norms = np.linalg.norm(rows, axis=1)
            usable = (norms > 0.0) & np.isfinite(norms)
            norms[~usable] = 1.0
            unit: npt.NDArray[np.float32] = (rows / norms[:, None]).astype(np.float32)
            plain = self._allowed(filters) is None and filters.exclude_conversation_id is None
            if not plain:
                each = [
                    self._search(part, unit[i], k, filters) if usable[i] else []
                    for i in range(unit.shape[0])
                ]
                return self._many_with_passages(model, part, unit, k, filters, each, passages)
            n = part.n
            scores: npt.NDArray[np.float32] = part.vectors[:n] @ unit.T  # n x queries
            tier_ok = np.ones(len(_TIERS), dtype=bool)
            if filters.tiers:
                tier_ok[:] = False
                tier_ok[[_TIER_CODE[t] for t in filters.tiers]] = True
            if sum(part.tier_counts[c] for c in np.flatnonzero(tier_ok)) != n:
                scores[~tier_ok[part.tiers[:n]], :] = -np.inf
            ids = part.ids
            out: list[list[tuple[str, float]]] = []
            for i in range(unit.shape[0]):
                if not usable[i]:
                    out.append([])
                    continue
                column: npt.NDArray[np.float32] = np.ascontiguousarray(scores[:, i])
                top = top_k(column, k)
                found = np.clip(column[top], -1.0, 1.0)
                out.append(
                    [(ids[r], float(s)) for r, s in zip(top.tolist(), found.tolist(), strict=True)]
                )
            return self._many_with_passages(model, part, unit, k, filters, out, passages)

    def _many_with_passages(
        self,
        model: str,
        part: _Partition,
        unit: npt.NDArray[np.float32],
        k: int,
        filters: RecallFilters,
        found: list[list[tuple[str, float]]],
        passages: bool,
    ) -> list[list[tuple[str, float]]]:
        if not passages or model not in self._passages:
            return found
        return [
            self._with_passages(model, part, unit[i], k, filters, hits) if hits else hits
            for i, hits in enumerate(found)
        ]

    def _with_passages(
        self,
        model: str,
        part: _Partition,
        q: Vector,
        k: int,
        filters: RecallFilters,
        hits: list[tuple[str, float]],
    ) -> list[tuple[str, float]]:
        """``hits`` (the top ``k`` by vector) rescored with the memories' passages:
        each memory scores max(its vector's similarity, its best passage's less
        :data:`PASSAGE_MARGIN`). The
        top ``k`` by that maximum lie among the top ``k`` by vector and the top
        ``k`` by best passage, so those two lists are merged. Caller holds the read
        lock."""
        store = self._passages.get(model)
        if store is None or store.n == 0:
            return hits
        # A later passage counts for its memory less the margin (see PASSAGE_MARGIN).
        best = store.best(q, self._slot_mask(filters)) - PASSAGE_MARGIN
        scores = dict(hits)
        for memory_id, similarity in hits:
            slot = self._slot_of[memory_id]
            if slot < best.shape[0] and best[slot] > similarity:
                scores[memory_id] = float(best[slot])
        for slot in top_k(best, k).tolist():
            memory_id = store.id_of[slot]
            if memory_id in scores:
                continue
            row = part.row(slot)
            head = float(part.vectors[row] @ q) if row >= 0 else -np.inf
            scores[memory_id] = max(head, float(best[slot]))
        ranked = sorted(scores.items(), key=lambda item: -item[1])[:k]
        return [(memory_id, min(1.0, max(-1.0, s))) for memory_id, s in ranked]

    def _search(
        self, part: _Partition, q: Vector, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        n = part.n
        tier_ok = np.ones(len(_TIERS), dtype=bool)
        if filters.tiers:
            tier_ok[:] = False
            tier_ok[[_TIER_CODE[t] for t in filters.tiers]] = True
        all_tiers_pass = sum(part.tier_counts[c] for c in np.flatnonzero(tier_ok)) == n
        allowed = self._allowed(filters)
        excluded: set[int] = set()
        if filters.exclude_conversation_id is not None:
            excluded = self._by_conversation.get(filters.exclude_conversation_id, set())

        rows: Rows | None = None
        if allowed is not None:
            if excluded:
                allowed = allowed - excluded
            rows = part.rows_of(np.fromiter(allowed, dtype=np.intp, count=len(allowed)))
            if not all_tiers_pass:
                rows = rows[tier_ok[part.tiers[rows]]]
            if rows.size == 0:
                return []
            # A row gathered costs about ten streamed by the dense product (measured
            # at 100k x 384), so gather only when under a tenth of the rows pass;
            # sorted rows gather faster.
            if rows.size * 10 < n:
                rows = np.sort(rows)
                scores = similarities(part.vectors[rows], q)
            else:
                scores = similarities(part.vectors[:n], q)[rows]
        else:
            # Unfiltered, the common case: one matrix product over the dense block;
            # masks are built only when some row actually fails.
            scores = similarities(part.vectors[:n], q)
            if not all_tiers_pass:
                scores[~tier_ok[part.tiers[:n]]] = -np.inf
            if excluded:
                gone = part.rows_of(np.fromiter(excluded, dtype=np.intp, count=len(excluded)))
                scores[gone] = -np.inf
        top = top_k(scores, k)
        scores = np.clip(scores[top], -1.0, 1.0)
        if rows is not None:
            top = rows[top]
        ids = part.ids
        return [(ids[r], float(s)) for r, s in zip(top.tolist(), scores.tolist(), strict=True)]

    def _allowed(self, filters: RecallFilters) -> set[int] | None:
        """Slots passing the domain, category, tag and speaker filters (any-of
        within a list, lists AND-ed) and the occurred_at range; ``None`` when none
        of them restricts."""
        allowed: set[int] | None = None
        for values, inverted in (
            (filters.domains, self._by_domain),
            (filters.categories, self._by_category),
            (filters.tags, self._by_tag),
            ([speaker_key(s) for s in filters.speakers], self._by_speaker),
        ):
            if not values:
                continue
            matching: set[int] = set().union(*(inverted.get(v, ()) for v in values))
            allowed = matching if allowed is None else allowed & matching
            if not allowed:
                return set()
        if filters.occurred_after is not None or filters.occurred_before is not None:
            # Scanned rather than kept sorted: one vectorized pass over an int64 per
            # memory, where a sorted structure would cost on every write.
            occurred = self._occurred
            ok = occurred != _NO_TIME
            if filters.occurred_after is not None:
                ok &= occurred >= micros(filters.occurred_after)
            if filters.occurred_before is not None:
                ok &= occurred < micros(filters.occurred_before)
            in_range = set(np.flatnonzero(ok).tolist())
            allowed = in_range if allowed is None else allowed & in_range
        return allowed

    @contextmanager
    def matching(self, filters: RecallFilters) -> Iterator[Callable[[str], bool] | None]:
        """A predicate on memory ids applying ``filters`` exactly as :meth:`search`
        does, for searches over another index of the collection (the store's BM25
        index); ``None`` when every memory of the collection passes.

        The read lock is held for the ``with`` block: the predicate works on slots,
        which a write could hand to another memory. The block must not write to
        this index.
        """
        with self._lock.read():
            yield self._matcher(filters)

    def _matcher(self, filters: RecallFilters) -> Callable[[str], bool] | None:
        tiers = frozenset(filters.tiers or _TIERS)
        all_tiers_pass = sum(self._tier_counts[t] for t in tiers) == len(self._entries)
        allowed = self._allowed(filters)
        excluded: set[int] = set()
        if filters.exclude_conversation_id is not None:
            excluded = self._by_conversation.get(filters.exclude_conversation_id, set())
        if allowed is None and all_tiers_pass and not excluded:
            return None
        slot_of, entries = self._slot_of, self._entries

        def passes(memory_id: str) -> bool:
            slot = slot_of.get(memory_id)
            return (
                slot is not None
                and (allowed is None or slot in allowed)
                and slot not in excluded
                and (all_tiers_pass or entries[memory_id].tier in tiers)
            )

        return passes

    # -- slots (for filtering other searches: the graph walk) -------------------------

    def slot_items(self) -> list[tuple[str, int]]:
        """``(memory id, slot)`` of every memory, in the order the index holds them."""
        with self._lock.read():
            return list(self._slot_of.items())

    def slots_of(self, ids: Sequence[str]) -> list[int]:
        """The slots of ``ids``; -1 for an id the index does not hold."""
        with self._lock.read():
            slot_of = self._slot_of
            return [slot_of.get(memory_id, -1) for memory_id in ids]

    def slot_mask(self, filters: RecallFilters) -> npt.NDArray[np.bool_] | None:
        """Per slot, whether its memory passes ``filters`` (as :meth:`search` applies
        them); ``None`` when every memory passes.

        Built from the inverted indexes with set operations and one scatter per set,
        so the cost follows the memories a filter names, not the collection size.
        """
        with self._lock.read():
            return self._slot_mask(filters)

    def _slot_mask(self, filters: RecallFilters) -> npt.NDArray[np.bool_] | None:
        # Slots run from 0 to the live count plus the free ones, minus one.
        size = len(self._slot_of) + len(self._free_slots)
        mask: npt.NDArray[np.bool_] | None = None

        def clear(slots: set[int]) -> None:
            nonlocal mask
            if slots:
                if mask is None:
                    mask = np.ones(size, dtype=bool)
                mask[np.fromiter(slots, dtype=np.intp, count=len(slots))] = False

        for tier in _TIERS:
            if tier not in filters.tiers:
                clear(self._by_tier[tier])
        allowed = self._allowed(filters)
        if allowed is not None:
            passing = np.zeros(size, dtype=bool)
            passing[np.fromiter(allowed, dtype=np.intp, count=len(allowed))] = True
            mask = passing if mask is None else mask & passing
        if filters.exclude_conversation_id is not None:
            clear(self._by_conversation.get(filters.exclude_conversation_id, set()))
        return mask

    # -- writing (the store serializes callers) -------------------------------------

    def put(
        self,
        items: Sequence[tuple[IndexEntry, Vector | None, str | None]],
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Add or update memories. With a vector (and its model) the memory's indexed
        vector is replaced, and its passages become ``passages[id]`` (none when
        absent); with ``None`` both are kept and only its metadata changes."""
        with self._lock.write():
            for entry, vector, model in items:
                slot = self._slot_of.get(entry.id)
                if slot is None:
                    slot = self._free_slots.pop() if self._free_slots else len(self._slot_of)
                    self._slot_of[entry.id] = slot
                    self._vectorless.add(entry.id)
                else:
                    self._unlink(self._entries[entry.id], slot)
                self._entries[entry.id] = entry
                self._link(entry, slot)
                if vector is not None and model is not None:
                    self._vectorless.discard(entry.id)
                    self._put_vector(entry.id, vector, model)
                    if passages is not None and entry.id in passages:
                        self._put_passages(entry.id, passages[entry.id], model)
                else:
                    current = self._model_of.get(entry.id)
                    if current is not None:
                        self._partitions[current].set_tier(slot, _TIER_CODE[entry.tier])

    def set_vectors(
        self,
        items: Sequence[tuple[str, Vector, str]],
        passages: Mapping[str, Vector] | None = None,
    ) -> None:
        """Replace the vectors of known memories, and their passages by
        ``passages[id]`` (none when absent); unknown ids are skipped."""
        with self._lock.write():
            for memory_id, vector, model in items:
                if memory_id in self._entries:
                    self._vectorless.discard(memory_id)
                    self._put_vector(memory_id, vector, model)
                    if passages is not None and memory_id in passages:
                        self._put_passages(memory_id, passages[memory_id], model)

    def drop_vectors(self, ids: Sequence[str]) -> None:
        """Take the vectors of known memories out of the index; the memories stay
        (entries, filters) and count as having no stored vector. Unknown ids are
        skipped."""
        with self._lock.write():
            for memory_id in ids:
                if memory_id in self._entries:
                    self._drop_vector(memory_id)
                    self._vectorless.add(memory_id)

    def remove(self, memory_id: str) -> None:
        """Forget a memory (no-op when unknown)."""
        with self._lock.write():
            if memory_id not in self._entries:
                return
            self._drop_vector(memory_id)
            slot = self._slot_of.pop(memory_id)
            self._unlink(self._entries.pop(memory_id), slot)
            self._vectorless.discard(memory_id)
            self._free_slots.append(slot)

    def _put_vector(self, memory_id: str, vector: Vector, model: str) -> None:
        self._drop_vector(memory_id)
        unit = np.asarray(vector, dtype=np.float32).reshape(-1)
        dim = self._dims.setdefault(model, unit.shape[0])
        if unit.shape[0] != dim or dim == 0:
            # The store rebuilds the index when a model's dimension changes, so
            # this is a stray vector among a batch of the model's current size.
            logger.warning(
                "collection %s: memory %s has a %d-d %s vector where that model's are "
                "%d-d; it stays out of the index until re-embedded",
                self.collection,
                memory_id,
                unit.shape[0],
                model,
                dim,
            )
            return
        part = self._partitions.get(model)
        if part is None:
            part = self._partitions[model] = _Partition(dim)
        norm = float(np.linalg.norm(unit))
        if norm > 0.0:
            unit = unit / np.float32(norm)
        tier = _TIER_CODE[self._entries[memory_id].tier]
        part.put(self._slot_of[memory_id], memory_id, unit, tier)
        self._model_of[memory_id] = model

    def _put_passages(self, memory_id: str, rows: Vector, model: str) -> None:
        """Index a memory's passages beside its vector (which must be indexed, of
        ``model`` and of the same dimension; otherwise they stay out)."""
        self._drop_passages(memory_id)
        units = np.array(rows, dtype=np.float32, ndmin=2)
        if units.shape[0] == 0 or self._model_of.get(memory_id) != model:
            return
        if units.shape[1] != self._dims[model]:
            return
        store = self._passages.get(model)
        if store is None:
            store = self._passages[model] = _Passages(units.shape[1])
        store.add(self._slot_of[memory_id], memory_id, normalize_rows(units))
        self._passage_model_of[memory_id] = model

    def _drop_passages(self, memory_id: str) -> None:
        model = self._passage_model_of.pop(memory_id, None)
        if model is None:
            return
        store = self._passages[model]
        store.remove(self._slot_of[memory_id])
        if store.n == 0:
            del self._passages[model]

    def _drop_vector(self, memory_id: str) -> None:
        """Take the memory's vector, and its passages with it, out of the index."""
        self._drop_passages(memory_id)
        model = self._model_of.pop(memory_id, None)
        if model is None:
            return
        part = self._partitions[model]
        part.remove(self._slot_of[memory_id])
        if part.n == 0:
            del self._partitions[model]

    def _link(self, entry: IndexEntry, slot: int) -> None:
        self._tier_counts[entry.tier] += 1
        self._by_tier[entry.tier].add(slot)
        size = self._occurred.shape[0]
        if slot >= size:
            grown = np.full(max(slot + 1, size * 2), _NO_TIME, dtype=np.int64)
            grown[:size] = self._occurred
            self._occurred = grown
        self._occurred[slot] = entry.occurred
        for inverted, keys in (
            (self._by_category, (entry.category,)),
            (self._by_tag, entry.tags),
            (self._by_domain, entry.domains),
            (self._by_conversation, entry.conversation_ids),
            (self._by_speaker, (speaker_key(entry.speaker),) if entry.speaker is not None else ()),
        ):
            for key in keys:
                inverted.setdefault(key, set()).add(slot)

    def _unlink(self, entry: IndexEntry, slot: int) -> None:
        self._tier_counts[entry.tier] -= 1
        self._by_tier[entry.tier].discard(slot)
        self._occurred[slot] = _NO_TIME
        for inverted, keys in (
            (self._by_category, (entry.category,)),
            (self._by_tag, entry.tags),
            (self._by_domain, entry.domains),
            (self._by_conversation, entry.conversation_ids),
            (self._by_speaker, (speaker_key(entry.speaker),) if entry.speaker is not None else ()),
        ):
            for key in keys:
                slots = inverted.get(key)
                if slots is not None:
                    slots.discard(slot)
                    if not slots:
                        del inverted[key]


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
