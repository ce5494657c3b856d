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

The storage is :mod:`~hippocampus.store.embedded.index_storage`, the slots and
filters :mod:`~hippocampus.store.embedded.index_filters`, the searches
:mod:`~hippocampus.store.embedded.index_search`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from hippocampus.model import speaker_key
from hippocampus.store.embedded.index_ann import Approximate, GraphPolicy, graph_folder
from hippocampus.store.embedded.index_search import IndexSearch
from hippocampus.store.embedded.index_storage import (
    MIN_CAPACITY,
    NO_TIME,
    TIER_CODE,
    TIERS,
    IndexedVector,
    IndexEntry,
    Partition,
    Passages,
    StoredRow,
    normalize_rows,
    similarities,
    top_k,
)
from hippocampus.store.records import Vector

__all__ = [
    "CollectionIndex",
    "IndexEntry",
    "IndexedVector",
    "StoredRow",
    "normalize_rows",
    "similarities",
    "top_k",
]

logger = logging.getLogger(__name__)


class _Gathered:
    """The stored vectors of one (model, size) as a build reads them: ids, slots
    and tier codes, and the vectors copied into one float32 buffer as they come
    (the rows' bytes are never held all at once: a million of them is 1.5 GB)."""

    __slots__ = ("dim", "ids", "n", "slots", "tiers", "vectors")

    def __init__(self, size: int, capacity: int) -> None:
        self.dim = size // 4
        self.ids: list[str] = []
        self.slots: list[int] = []
        self.tiers: list[int] = []
        self.vectors: npt.NDArray[np.float32] = np.empty(
            (max(capacity, MIN_CAPACITY), self.dim), dtype=np.float32
        )
        self.n = 0

    def add(self, memory_id: str, slot: int, blob: bytes, tier: int) -> None:
        if self.n == self.vectors.shape[0]:
            grown = np.empty((self.n + max(self.n // 8, MIN_CAPACITY), self.dim), np.float32)
            grown[: self.n] = self.vectors
            self.vectors = grown
        self.vectors[self.n] = np.frombuffer(blob, dtype=np.float32)
        self.ids.append(memory_id)
        self.slots.append(slot)
        self.tiers.append(tier)
        self.n += 1


class CollectionIndex(IndexSearch):
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

    def __init__(self, collection: str, graphs: GraphPolicy | None = None) -> None:
        super().__init__(collection)
        self._graph_policy = graphs
        self._graph_worker: threading.Thread | None = None
        self._graph_wake = threading.Event()
        self._closing = False

    # -- building -----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        collection: str,
        rows: Iterable[StoredRow],
        dims: dict[str, int] | None = None,
        passages: Iterable[tuple[str, str, bytes]] = (),
        graphs: GraphPolicy | None = None,
        expected: int = 0,
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

        ``expected`` (how many rows there are, about) sizes the vector buffer of
        the first model read, so it is not grown and copied as rows come.

        ``graphs`` says from what size a model's vectors get a graph for
        approximate search, and where graphs are saved: a saved graph is loaded
        and made to agree with the rows, else one is built in the background.
        """
        index = cls(collection, graphs)
        gathered, occurred = index._load_entries(rows, expected)
        index._occurred = np.full(max(len(occurred), MIN_CAPACITY), NO_TIME, dtype=np.int64)
        index._occurred[: len(occurred)] = occurred
        left_out = index._load_vectors(gathered, dims)
        index._build_passages(passages)
        index._plan_graphs(load=True)
        if left_out:
            logger.warning(
                "collection %s: %d vectors have another dimension than the latest of "
                "their model and stay out of the index until re-embedded",
                collection,
                left_out,
            )
        return index

    def _load_entries(
        self, rows: Iterable[StoredRow], expected: int
    ) -> tuple[dict[tuple[str, int], _Gathered], list[int]]:
        """Take every row's entry, slot and filter metadata (a fresh index); return
        the rows' vectors gathered by (model, vector bytes), and when each memory
        happened, by slot."""
        entries, slot_of = self._entries, self._slot_of
        by_category, by_tag = self._by_category, self._by_tag
        by_domain, by_conversation = self._by_domain, self._by_conversation
        tier_of = {tier.value: tier for tier in TIERS}
        parsed: dict[str | None, tuple[tuple[str, ...], ...]] = {None: ((), (), ())}
        gathered: dict[tuple[str, int], _Gathered] = {}
        by_speaker = self._by_speaker
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
            self._tier_counts[tier] += 1
            self._by_tier[tier].add(slot)
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
                self._vectorless.add(memory_id)
                continue
            found = gathered.get((model, len(blob)))
            if found is None:
                capacity = expected + expected // 8 if not gathered else 0
                found = gathered[(model, len(blob))] = _Gathered(len(blob), capacity)
            found.add(memory_id, slot, blob, TIER_CODE[tier_value])
        return gathered, occurred

    def _load_vectors(
        self, gathered: dict[tuple[str, int], _Gathered], dims: dict[str, int] | None
    ) -> int:
        """Lay out each model's partition from the gathered vectors of its
        dimension (``dims``, else that of most of them); return how many vectors
        were left out for another dimension."""
        most: dict[str, tuple[int, int]] = {}  # model -> (vector count, bytes)
        for (model, size), found in gathered.items():
            if found.n > most.get(model, (0, 0))[0]:
                most[model] = (found.n, size)
        self._dims = {model: size // 4 for model, (_, size) in most.items()}
        self._dims.update(dims or {})
        left_out = 0
        for (model, size), found in gathered.items():
            dim = self._dims[model]
            if size != dim * 4 or dim == 0:
                left_out += found.n
                continue
            self._partitions[model] = Partition.from_rows(
                dim, found.ids, found.slots, found.vectors, found.tiers
            )
            self._model_of.update(dict.fromkeys(found.ids, model))
        return left_out

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
                        self._partitions[current].set_tier(slot, TIER_CODE[entry.tier])
            self._plan_graphs(load=False)

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
            self._plan_graphs(load=False)

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

    # -- graphs for approximate search ------------------------------------------------

    def graph_state(self) -> dict[str, tuple[int, int]]:
        """Per model with a graph: ``(vectors in the graph, vectors waiting for it)``."""
        with self._lock.read():
            return {
                model: (len(part.ann), len(part.ann.staged))
                for model, part in self._partitions.items()
                if part.ann is not None
            }

    def graph_problems(self) -> list[str]:
        """How each graph disagrees with the rows it stands for (see
        :meth:`Approximate.problems`)."""
        with self._lock.read():
            return [
                f"{self.collection}: {model}: {problem}"
                for model, part in self._partitions.items()
                if part.ann is not None
                for problem in part.ann.problems(part)
            ]

    def wait_for_graphs(self, timeout_s: float | None = None) -> bool:
        """Block until no vector waits for a graph (``False`` on timeout, or when
        the index closes first)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while any(staged for _, staged in self.graph_state().values()):
            if self._closing or (deadline is not None and time.monotonic() > deadline):
                return False
            time.sleep(0.05)
        return True

    def close(self, *, save: bool) -> None:
        """Stop adding to the graphs and, with ``save``, write each graph beside
        the database so the next start loads it rather than building it."""
        self._closing = True
        self._graph_wake.set()
        worker = self._graph_worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        policy = self._graph_policy
        if not save or policy is None or policy.root is None:
            return
        with self._lock.read():
            for model, part in self._partitions.items():
                if part.ann is None:
                    continue
                started = time.perf_counter()
                folder = graph_folder(policy.root, self.collection, model)
                try:
                    part.ann.save(folder, part)
                except OSError:
                    logger.exception("saving the vector graph to %s failed", folder)
                    continue
                logger.info(
                    "collection %s: graph of %d %s vectors saved in %.1f s",
                    self.collection,
                    len(part.ann),
                    model,
                    time.perf_counter() - started,
                )

    def plan_graphs(self) -> None:
        """Give the partitions large enough their graph, the saved one when usable
        (as a build does): for an index restored from a snapshot."""
        self._plan_graphs(load=True)

    def _plan_graphs(self, *, load: bool) -> None:
        """Give each partition that reached the policy's size a graph (with
        ``load``, the saved one when it is usable; else an empty one with every
        row staged), and wake the worker when vectors wait. Caller holds the write
        lock, or the index is not published yet."""
        policy = self._graph_policy
        if policy is None or self._closing:
            return
        for model, part in self._partitions.items():
            if part.ann is not None or part.n < policy.approximate_from:
                continue
            ann = None
            if load and policy.root is not None:
                folder = graph_folder(policy.root, self.collection, model)
                ann = Approximate.load(folder, part, self._slot_of)
            if ann is None:
                ann = Approximate(part.dim)
                ann.staged = set(part.slot_of_row[: part.n].tolist())
            part.ann = ann
        if any(p.ann is not None and p.ann.staged for p in self._partitions.values()):
            self._graph_wake.set()
            if self._graph_worker is None:
                self._graph_worker = threading.Thread(
                    target=self._add_to_graphs, name="hippo-graph", daemon=True
                )
                self._graph_worker.start()

    def _add_to_graphs(self) -> None:
        """The worker: adds staged vectors to their graphs a batch at a time, each
        batch under the write lock, until the index closes."""
        reported = time.monotonic()
        while not self._closing:
            self._graph_wake.wait()
            self._graph_wake.clear()
            while not self._closing:
                with self._lock.write():
                    waiting = [
                        (model, part)
                        for model, part in self._partitions.items()
                        if part.ann is not None and part.ann.staged
                    ]
                    if not waiting or self._closing:
                        break
                    model, part = waiting[0]
                    assert part.ann is not None
                    try:
                        part.ann.add_staged(part)
                    except (RuntimeError, ValueError):
                        logger.exception(
                            "collection %s: adding to the vector graph failed", self.collection
                        )
                        part.ann = None
                        continue
                    left, held = len(part.ann.staged), len(part.ann)
                if time.monotonic() - reported > 10.0:
                    reported = time.monotonic()
                    logger.info(
                        "collection %s: vector graph of %s: %d vectors in, %d to go",
                        self.collection,
                        model,
                        held,
                        left,
                    )
                # Let waiting searches in before the next batch (writers go first).
                time.sleep(0.001)

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
            part = self._partitions[model] = Partition(dim)
        norm = float(np.linalg.norm(unit))
        if norm > 0.0:
            unit = unit / np.float32(norm)
        tier = TIER_CODE[self._entries[memory_id].tier]
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
            store = self._passages[model] = Passages(units.shape[1])
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
