"""Approximate nearest neighbours over one model's vectors, for partitions too
large to scan on every search.

Brute force over a million 384-d float32 rows streams 1.5 GB per search, tens of
milliseconds here. An HNSW graph (usearch) finds the candidates in a few. The
graph holds half-precision copies of the vectors; the partition's float32 rows
stay the one exact copy, and every candidate is scored again from them before the
cut: a score is never approximate, only the set of rows scored is.

usearch was chosen by measurement over faiss-cpu and hnswlib (``bench/ann.py``,
the benchmarks page): at the same degree and build width it reached the recall
of the others with half the memory for its vectors (half precision; hnswlib and
faiss's HNSW keep float32), removes and replaces vectors in place (faiss's HNSW
cannot), and saves and loads its graph in one call.
Filters are not the graph's business: the index asks for more candidates until
enough pass, and scans the allowed rows exactly when they are few.

Vectors reach the graph in the background: a write stages the slots it changed
and a worker thread adds them in batches, so writes never wait for the graph.
Until the staged slots are few, searches stay exact; after, the staged slots are
scored exactly beside the graph's candidates.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from hippocampus.store.embedded.folders import write_whole

logger = logging.getLogger(__name__)

APPROXIMATE_FROM = 200_000
"""Vectors of one model in one collection from which the graph is built. Below it,
an exact scan costs under ~10 ms here (``bench/recall.py``); above, it grows
linearly while the graph's cost grows with the logarithm."""

CONNECTIVITY = 32
"""Neighbours per node (HNSW's M): at 16 the graph's recall@10 on 100,000
synthetic memories stalled near 0.94 at any search width; 32 with a build width
of 400 reached 0.99 there."""

EXPANSION_ADD = 400
"""Search width while inserting: a wider one builds a better-connected graph, and
takes longer. On a million synthetic memories, recall@10 at search width 512 was
0.908 built at 256 (830 s on two cores) and 0.959 at 400 (969 s)."""

EXPANSION_SEARCH = 512
"""Search width of a query: candidates the graph keeps while it walks."""

MIN_CANDIDATES = 64
"""Candidates taken from the graph, at least, for one search (re-scored exactly)."""

MAX_CANDIDATES = 8_192
"""Past this many candidates a filtered search scans the allowed rows instead."""

STAGED_MAX = 20_000
"""Slots waiting for the graph beyond which searches stay exact: scoring them
one by one beside the graph would cost more than the scan."""

BATCH = 512
"""Slots added to the graph at once by the worker (the index's write lock is
held meanwhile, so a search waits at most one batch: a fraction of a second)."""

THREADS = max(1, min(4, os.cpu_count() or 1))
"""Threads usearch uses to add a batch."""

_VERIFY_CHUNK = 65_536
_AGREE = 4e-3  # half precision keeps ~3 decimal digits of a unit vector's terms


class Partition(Protocol):
    """What the graph reads of the partition it stands for
    (:class:`~hippocampus.store.embedded.index_storage.Partition`)."""

    dim: int
    ids: list[str]
    vectors: npt.NDArray[np.float32]
    slot_of_row: npt.NDArray[np.intp]
    row_of_slot: npt.NDArray[np.intp]

    @property
    def n(self) -> int: ...

    def row(self, slot: int) -> int: ...

    def rows_of(self, slots: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]: ...


class Approximate:
    """An HNSW graph over one partition's rows, keyed by its own keys.

    ``slot_of_key[key]`` is the memory slot a key stands for (-1: removed);
    ``key_of_slot[slot]`` the inverse (-1: not in the graph). ``staged`` holds the
    slots whose current vector the graph lacks. All mutation happens under the
    collection index's write lock; searches run under its read lock.
    """

    __slots__ = ("graph", "key_of_slot", "next_key", "slot_of_key", "staged")

    def __init__(self, dim: int, graph: Any = None) -> None:
        self.graph = graph if graph is not None else _new_graph(dim)
        self.graph.expansion_search = EXPANSION_SEARCH  # a loaded graph keeps its own
        self.slot_of_key: npt.NDArray[np.int64] = np.full(0, -1, dtype=np.int64)
        self.key_of_slot: npt.NDArray[np.int64] = np.full(0, -1, dtype=np.int64)
        self.next_key = 0
        self.staged: set[int] = set()

    def __len__(self) -> int:
        return int(self.graph.size)

    @property
    def ready(self) -> bool:
        """Whether searches use the graph (few enough slots wait for it)."""
        return len(self.staged) <= STAGED_MAX

    # -- writes (under the index's write lock) -------------------------------------

    def stage(self, slot: int) -> None:
        """The slot's vector changed (or is new): the graph gets it later."""
        self.staged.add(slot)

    def discard(self, slot: int) -> None:
        """The slot lost its vector: out of the graph and of the staged set."""
        self.staged.discard(slot)
        key = self._key(slot)
        if key >= 0:
            self.graph.remove(key)
            self.slot_of_key[key] = -1
            self.key_of_slot[slot] = -1

    def add_staged(self, part: Partition, limit: int = BATCH) -> int:
        """Add up to ``limit`` staged slots' current rows to the graph; return how
        many were taken. Staged slots that lost their row are dropped."""
        taken: list[int] = []
        while self.staged and len(taken) < limit:
            taken.append(self.staged.pop())
        if not taken:
            return 0
        slots = np.asarray(taken, dtype=np.int64)
        rows = part.rows_of(slots)
        slots = part.slot_of_row[rows].astype(np.int64) if rows.size else slots[:0]
        for slot in slots.tolist():
            key = self._key(slot)
            if key >= 0:  # a replaced vector: its old node goes first
                self.graph.remove(key)
                self.slot_of_key[key] = -1
        if rows.size:
            keys = np.arange(self.next_key, self.next_key + rows.size, dtype=np.int64)
            self.next_key += int(rows.size)
            vectors = np.ascontiguousarray(part.vectors[rows])
            self.graph.add(keys.astype(np.uint64), vectors, threads=THREADS)
            self._grow(int(slots.max()) + 1)
            self.slot_of_key[keys] = slots
            self.key_of_slot[slots] = keys
        return len(taken)

    def _key(self, slot: int) -> int:
        return int(self.key_of_slot[slot]) if slot < self.key_of_slot.shape[0] else -1

    def _grow(self, slots: int) -> None:
        if self.slot_of_key.shape[0] < self.next_key:
            grown = np.full(max(self.next_key, 2 * self.slot_of_key.shape[0]), -1, np.int64)
            grown[: self.slot_of_key.shape[0]] = self.slot_of_key
            self.slot_of_key = grown
        if self.key_of_slot.shape[0] < slots:
            grown = np.full(max(slots, 2 * self.key_of_slot.shape[0]), -1, np.int64)
            grown[: self.key_of_slot.shape[0]] = self.key_of_slot
            self.key_of_slot = grown

    # -- reads (under the index's read lock) ----------------------------------------

    def candidates(self, q: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        """The slots of up to ``count`` graph nodes nearest the unit query ``q``."""
        found = self.graph.search(q, count, threads=1)
        return self._slots(np.asarray(found.keys, dtype=np.int64))

    def candidates_many(
        self, queries: npt.NDArray[np.float32], count: int
    ) -> list[npt.NDArray[np.int64]]:
        """:meth:`candidates` of each row of ``queries``, searched side by side on
        :data:`THREADS` threads (the graph releases the GIL while it searches)."""
        found = self.graph.search(queries, count, threads=THREADS)
        keys = np.asarray(found.keys, dtype=np.int64).reshape(queries.shape[0], -1)
        counts = np.asarray(found.counts, dtype=np.int64).reshape(-1)
        return [self._slots(keys[i, : counts[i]]) for i in range(queries.shape[0])]

    def _slots(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        slots: npt.NDArray[np.int64] = self.slot_of_key[keys[keys < self.slot_of_key.shape[0]]]
        return slots[slots >= 0]

    def problems(self, part: Partition) -> list[str]:
        """How the graph disagrees with the partition's rows: keys and slots that do
        not answer each other, rows neither in the graph nor staged, vectors that
        differ."""
        problems: list[str] = []
        live = np.flatnonzero(self.slot_of_key[: self.next_key] >= 0)
        slots = self.slot_of_key[live]
        if len(self) != live.size:
            problems.append(f"the graph holds {len(self)} vectors, its keys name {live.size}")
        back = self.key_of_slot[slots] if slots.size else slots
        if slots.size and (back != live).any():
            problems.append("graph keys and slots do not answer each other")
        rows = np.array([part.row(int(s)) for s in slots.tolist()], dtype=np.int64)
        if (rows < 0).any():
            problems.append(f"{int((rows < 0).sum())} graph nodes stand for no vector")
        keyed = set(slots.tolist()) | self.staged
        missing = [s for s in part.slot_of_row[: part.n].tolist() if s not in keyed]
        if missing:
            problems.append(f"{len(missing)} vectors are neither in the graph nor staged")
        ok = rows >= 0
        if self._disagree(live[ok], rows[ok], part).any():
            problems.append("graph vectors differ from the index's rows")
        return problems

    def _disagree(
        self, keys: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], part: Partition
    ) -> npt.NDArray[np.bool_]:
        """Per key, whether the graph's vector differs from the row's (or the
        graph lacks the key)."""
        out = np.ones(keys.shape[0], dtype=bool)
        for start in range(0, keys.shape[0], _VERIFY_CHUNK):
            chunk = keys[start : start + _VERIFY_CHUNK].astype(np.uint64)
            present = np.asarray(self.graph.contains(chunk), dtype=bool).reshape(-1)
            if not present.any():
                continue
            held = np.asarray(self.graph.get(chunk[present]), dtype=np.float32)
            exact = part.vectors[rows[start : start + _VERIFY_CHUNK][present]]
            differs = np.abs(held.reshape(exact.shape) - exact).max(axis=1) > _AGREE
            out[start : start + chunk.shape[0]][present] = differs
        return out

    # -- files -----------------------------------------------------------------------

    def save(self, folder: Path, part: Partition) -> None:
        """Write the graph and the memory id of each key into ``folder``, whole or
        not at all (written beside it, then renamed into place). Staged slots are
        not in the graph; they are staged again at load."""
        live = np.flatnonzero(self.slot_of_key[: self.next_key] >= 0)
        names = [part.ids[part.row(int(s))] for s in self.slot_of_key[live].tolist()]

        def fill(fresh: Path) -> None:
            np.save(fresh / "keys.npy", live)
            (fresh / "ids.txt").write_text("\n".join(names), encoding="utf-8")
            self.graph.save(str(fresh / "graph.usearch"))

        write_whole(folder, fill)

    @classmethod
    def load(cls, folder: Path, part: Partition, slot_of: dict[str, int]) -> Approximate | None:
        """The graph saved in ``folder``, made to agree with ``part``: nodes whose
        memory is gone or whose vector differs are removed, rows the graph lacks
        are staged. ``None`` when there is no usable graph there."""
        from usearch.index import Index

        if not folder.is_dir():
            return None
        try:
            keys = np.load(folder / "keys.npy").astype(np.int64)
            names = (folder / "ids.txt").read_text(encoding="utf-8").split("\n")
            graph = Index.restore(str(folder / "graph.usearch"))
        except (OSError, ValueError, RuntimeError) as e:
            logger.warning("the vector graph in %s cannot be read (%s); rebuilding", folder, e)
            return None
        if not keys.size:
            return None
        if graph is None or len(names) != keys.shape[0] or graph.ndim != part.dim:
            logger.warning("the vector graph in %s is incomplete; rebuilding", folder)
            return None
        if len(graph) != keys.shape[0] or not np.all(graph.contains(keys.astype(np.uint64))):
            logger.warning("the vector graph in %s disagrees with its keys; rebuilding", folder)
            return None
        ann = cls(part.dim, graph)
        ann.next_key = int(keys.max()) + 1
        ann._grow(max(part.row_of_slot.shape[0], 1))
        slots = np.array([slot_of.get(name, -1) for name in names], dtype=np.int64)
        rows = np.array([part.row(s) if s >= 0 else -1 for s in slots.tolist()], dtype=np.int64)
        ok = rows >= 0
        differ = np.zeros(keys.shape[0], dtype=bool)
        differ[ok] = ann._disagree(keys[ok], rows[ok], part)
        # A row is named by at most one key: a repeated slot keeps its first.
        seen: set[int] = set()
        stale: list[int] = []
        for i, (key, slot) in enumerate(zip(keys.tolist(), slots.tolist(), strict=True)):
            if not ok[i] or differ[i] or slot in seen:
                stale.append(key)
                continue
            seen.add(slot)
            ann.slot_of_key[key] = slot
            ann.key_of_slot[slot] = key
        if stale:
            graph.remove(np.asarray(stale, dtype=np.uint64))
        ann.staged = set(part.slot_of_row[: part.n].tolist()) - seen
        logger.info(
            "vector graph loaded from %s: %d nodes, %d removed as stale, %d rows to add",
            folder,
            len(seen),
            len(stale),
            len(ann.staged),
        )
        return ann


def _new_graph(dim: int) -> Any:
    """An empty usearch graph of ``dim``-d half-precision vectors, by inner product."""
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric="ip",
        dtype="f16",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def graph_folder(root: Path, collection: str, model: str) -> Path:
    """Where the graph of ``model``'s vectors in ``collection`` is saved under ``root``."""
    digest = hashlib.sha256(f"{collection}\0{model}".encode()).hexdigest()[:24]
    return root / digest


@dataclass(frozen=True)
class GraphPolicy:
    """When a collection index builds graphs, and where it keeps them.

    Attributes:
        approximate_from: vectors of one model from which it gets a graph.
        root: the folder graphs are saved in and loaded from (``None``: never saved).
    """

    approximate_from: int = APPROXIMATE_FROM
    root: Path | None = None
