"""The vector index's slots and filters: every memory's slot, its filter metadata
in inverted indexes (tier, category, tags, domains, conversations, speaker) and
when it happened, and recall filters evaluated over them as sets of slots, a
predicate or a mask.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

from hippocampus.dense import VectorSample
from hippocampus.model import RecallFilters, Tier, speaker_key
from hippocampus.store.checks import micros
from hippocampus.store.embedded.index_storage import (
    MIN_CAPACITY,
    NO_TIME,
    TIERS,
    IndexEntry,
    Partition,
    Passages,
)
from hippocampus.store.embedded.rwlock import RWLock


class SlotFilter:
    """Which memory ids pass a filter, from a mask over slots: one id at a time,
    or a list of them at once (:class:`~hippocampus.lexical.ManyFilter`)."""

    __slots__ = ("_mask", "_slot_of")

    def __init__(self, slot_of: dict[str, int], mask: npt.NDArray[np.bool_]) -> None:
        self._slot_of = slot_of
        self._mask = mask

    def __call__(self, memory_id: str) -> bool:
        slot = self._slot_of.get(memory_id)
        return slot is not None and bool(self._mask[slot])

    def many(self, memory_ids: Sequence[str]) -> npt.NDArray[np.bool_]:
        get = self._slot_of.get
        slots = np.fromiter(
            (get(memory_id, -1) for memory_id in memory_ids), dtype=np.intp, count=len(memory_ids)
        )
        known = slots >= 0
        passed: npt.NDArray[np.bool_] = known & self._mask[np.where(known, slots, 0)]
        return passed


class IndexFilters:
    """The state of a :class:`~hippocampus.store.embedded.index.CollectionIndex`
    (its vectors too), and its filters over slots."""

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self._lock = RWLock()
        self._entries: dict[str, IndexEntry] = {}
        self._slot_of: dict[str, int] = {}
        self._free_slots: list[int] = []
        self._model_of: dict[str, str] = {}
        self._partitions: dict[str, Partition] = {}
        self._dims: dict[str, int] = {}
        # Passage vectors of long memories, per model; a memory's passages are
        # indexed only beside its own vector, of the same model and dimension.
        self._passages: dict[str, Passages] = {}
        # Per model: (partition, its changes then, sample) for crowding, when the
        # partition has more vectors than a sample holds.
        self._samples: dict[str, tuple[Partition, int, VectorSample]] = {}
        self._passage_model_of: dict[str, str] = {}
        self._by_category: dict[str, set[int]] = {}
        self._tier_counts = dict.fromkeys(TIERS, 0)
        # Slots per tier: lets a filter mask be built from the few memories of the
        # excluded tiers rather than from every memory of the searched ones.
        self._by_tier: dict[Tier, set[int]] = {tier: set() for tier in TIERS}
        # Memories with no stored vector at all (a vector kept out of the index for
        # its dimension is still stored): the count stats() reports as pending.
        self._vectorless: set[str] = set()
        self._by_tag: dict[str, set[int]] = {}
        self._by_domain: dict[str, set[int]] = {}
        self._by_conversation: dict[str, set[int]] = {}
        self._by_speaker: dict[str, set[int]] = {}
        # occurred_at per slot (microseconds); NO_TIME where no memory holds the slot.
        self._occurred: npt.NDArray[np.int64] = np.full(MIN_CAPACITY, NO_TIME, dtype=np.int64)
        # Memories linked or unlinked so far: a tier mask is stale once it moves.
        self._links = 0
        # The mask of the last tiers a filter left out: (those tiers, links then, mask).
        self._tier_mask: tuple[frozenset[Tier], int, npt.NDArray[np.bool_]] | None = None

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
            ok = occurred != NO_TIME
            if filters.occurred_after is not None:
                ok &= occurred >= micros(filters.occurred_after)
            if filters.occurred_before is not None:
                ok &= occurred < micros(filters.occurred_before)
            in_range = set(np.flatnonzero(ok).tolist())
            allowed = in_range if allowed is None else allowed & in_range
        return allowed

    @contextmanager
    def matching(self, filters: RecallFilters) -> Iterator[SlotFilter | None]:
        """A predicate on memory ids applying ``filters`` exactly as :meth:`search`
        does, for searches over another index of the collection (the store's BM25
        index); ``None`` when every memory of the collection passes.

        The read lock is held for the ``with`` block: the predicate works on slots,
        which a write could hand to another memory. The block must not write to
        this index.
        """
        with self._lock.read():
            yield self._matcher(filters)

    def _matcher(self, filters: RecallFilters) -> SlotFilter | None:
        mask = self._slot_mask(filters)
        return None if mask is None else SlotFilter(self._slot_of, mask)

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
        mask = self._tiers_mask(frozenset(t for t in TIERS if t not in filters.tiers), size)

        def clear(slots: set[int]) -> None:
            nonlocal mask
            if slots:
                if mask is None:
                    mask = np.ones(size, dtype=bool)
                mask[np.fromiter(slots, dtype=np.intp, count=len(slots))] = False

        allowed = self._allowed(filters)
        if allowed is not None:
            passing = np.zeros(size, dtype=bool)
            passing[np.fromiter(allowed, dtype=np.intp, count=len(allowed))] = True
            mask = passing if mask is None else mask & passing
        if filters.exclude_conversation_id is not None:
            clear(self._by_conversation.get(filters.exclude_conversation_id, set()))
        return mask

    def _tiers_mask(self, left_out: frozenset[Tier], size: int) -> npt.NDArray[np.bool_] | None:
        """Per slot, whether its memory is in none of the ``left_out`` tiers (a
        copy, the caller's to change); ``None`` when no memory is. The mask of the
        last tiers asked is kept until a memory is linked or unlinked: a recall
        leaves out the same tiers every time, and building it walks every
        memory of those tiers (tens of thousands of archived ones at a million)."""
        if not any(self._by_tier[tier] for tier in left_out):
            return None
        kept = self._tier_mask
        if (
            kept is None
            or kept[0] != left_out
            or kept[1] != self._links
            or kept[2].shape[0] != size
        ):
            mask = np.ones(size, dtype=bool)
            for tier in left_out:
                slots = self._by_tier[tier]
                mask[np.fromiter(slots, dtype=np.intp, count=len(slots))] = False
            # Readers may build it side by side: the same mask, either kept.
            kept = self._tier_mask = (left_out, self._links, mask)
        return kept[2].copy()

    def _link(self, entry: IndexEntry, slot: int) -> None:
        self._links += 1
        self._tier_counts[entry.tier] += 1
        self._by_tier[entry.tier].add(slot)
        size = self._occurred.shape[0]
        if slot >= size:
            grown = np.full(max(slot + 1, size * 2), NO_TIME, dtype=np.int64)
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
        self._links += 1
        self._tier_counts[entry.tier] -= 1
        self._by_tier[entry.tier].discard(slot)
        self._occurred[slot] = NO_TIME
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
