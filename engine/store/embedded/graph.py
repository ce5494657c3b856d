"""The in-memory graph of one collection: weighted adjacency and associative expansion.

SQLite holds the edges; this mirror is built from it when a collection is first used
and updated by every write, in commit order, under the store's write lock. It keeps
every memory (edges or not), every hub, and the edges expansion walks: IN_DOMAIN,
HAS_TRIGGER and ABOUT between a memory and a hub, ASSOCIATED between two memories.
CONFLICTS_WITH, SUPERSEDES and SYNTHESIZED_FROM are not walked and live in SQLite
only.

Layout, chosen so that one hop of expansion over every anchor is a handful of numpy
operations rather than a Python loop over nodes:

- Nodes (memories and hubs) are small integers. Per node: kind, name, and a *block*
  ``[start, start + len)`` of the *arena*, parallel arrays holding the neighbor,
  the edge id and (copied, so a hop reads it in order) the weight of each adjacent
  edge. Blocks have spare room; one that outgrows it moves to the arena's end, and
  the hole left behind is reclaimed by a compaction once holes outweigh live cells.
- Edges are integers too, with their weight and last use (microseconds: last
  co-occurrence, else creation) in flat arrays; each edge sits in both endpoints'
  blocks.
- A hub's block is kept sorted by (weight descending, memory id), so its
  ``hub_fanout`` strongest edges are its first entries and pruning costs nothing at
  query time. It is kept sorted by the writes (a binary search and one shift per
  block and batch), not re-sorted lazily by a read: reads then never write, and
  run side by side under a shared lock. A memory's block is sorted by (neighbor
  kind, neighbor name), its ASSOCIATED neighbors first, so the last hop can take
  only those. Both orders depend on names and weights alone: expansion gives the
  same answer, ties included, whether the graph was built at start or grown write
  by write.

The walk itself (:meth:`CollectionGraph._walk`) processes all anchors together, one
hop at a time, with dense per-(anchor, node) scratch arrays borrowed from a small
pool; see :meth:`CollectionGraph.expand` for its exact rules.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from hippocampus.learn.rules import reinforced_weight
from hippocampus.model import EdgeType, RecallFilters
from hippocampus.model.association import (
    MEMORY_NODE,
    Anchor,
    ExpandParams,
    Expansion,
    GraphPath,
    PathStep,
)
from hippocampus.store.embedded.hub_vectors import HubVectors
from hippocampus.store.embedded.rwlock import RWLock

logger = logging.getLogger(__name__)

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
_T = TypeVar("_T", bound=np.generic)

_KINDS: tuple[str, ...] = (MEMORY_NODE, "Domain", "Trigger", "Concept")
"""Node kinds by code; 0 is a memory, the others are hub kinds (HubKind values)."""
_KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(_KINDS)}
_EDGE_TO: tuple[EdgeType, ...] = (
    EdgeType.ASSOCIATED,
    EdgeType.IN_DOMAIN,
    EdgeType.HAS_TRIGGER,
    EdgeType.ABOUT,
)
"""The type of an edge from a memory to a node of each kind code."""
_KIND_TO: dict[str, int] = {edge_type.value: code for code, edge_type in enumerate(_EDGE_TO)}
WALKED_EDGES = frozenset(_EDGE_TO)
"""Edge types held in the graph and walked by expansion."""
EDGE_TYPE_CODES: dict[EdgeType, int] = {edge_type: code for code, edge_type in enumerate(_EDGE_TO)}
"""The code :meth:`CollectionGraph.build` takes for each walked edge type."""

_MEMORY = 0
_FREE = -1
_MIN_BLOCK = 4
_MIN_ARENA = 1024
_MIN_GARBAGE = 1 << 16  # arena cells wasted before a compaction is worth its pass
_NO_WIN = np.iinfo(np.int64).max
_SCRATCH_CELLS = 1 << 22  # (anchor, node) cells per walk, 20 bytes each: 80 MiB at most
_POOLED_SCRATCH = 2


class WalkEdge(NamedTuple):
    """A walked edge as written: its source memory, type, target (a hub name or a
    memory id), weight, and last use in microseconds (the last co-occurrence, else
    the creation)."""

    source: str
    type: str
    target: str
    weight: float
    used_at: int


class EdgeReinforcement(NamedTuple):
    """An edge reinforcement as the store applies it (see :class:`EdgeUpdate`):
    oriented as stored, ``used_at`` in microseconds, ``at`` as ISO 8601 text."""

    source: str
    type: str
    target: str
    delta: float
    cap: float
    initial: float
    used_at: int
    kind: str | None = None
    at: str = ""
    create: bool = True


def reinforced(weight: float | None, update: EdgeReinforcement) -> float:
    """The weight an edge has after ``update``: the learning rules' arithmetic
    (:func:`hippocampus.learn.reinforced_weight`), which the store's SQL
    computes the same, in doubles. Only called where the edge exists or
    ``update`` may create it."""
    after = reinforced_weight(weight, update)
    assert after is not None
    return after


class SlotSource(Protocol):
    """What the graph needs from the vector index to apply recall filters: the
    index's slot of each memory, and which slots pass a filter."""

    def slot_items(self) -> list[tuple[str, int]]:
        """``(memory id, slot)`` of every memory."""
        ...

    def slots_of(self, ids: Sequence[str]) -> list[int]:
        """The slots of ``ids`` (-1 for an unknown id)."""
        ...

    def slot_mask(self, filters: RecallFilters) -> Mask | None:
        """Per slot, whether its memory passes ``filters``; ``None`` when all do."""
        ...


@dataclass(frozen=True, slots=True)
class _States:
    """The paths an expansion kept, as arrays: state ``i`` reached ``node[i]`` from
    anchor ``anchor[i]`` (its position in the group) with strength ``value[i]``,
    over an edge of ``weight[i]`` from state ``parent[i]`` (-1: the anchor itself)."""

    node: I64
    anchor: I64
    value: F64
    parent: I64
    weight: F64


@dataclass(frozen=True, slots=True)
class _Ends:
    """The last hop's candidates: reaching ``node`` from ``anchor`` with ``value``
    over an edge of ``weight`` from state ``parent``."""

    node: I64
    anchor: I64
    value: F64
    parent: I64
    weight: F64

    @classmethod
    def empty(cls) -> _Ends:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, np.zeros(0), none, np.zeros(0))


@dataclass(frozen=True, slots=True)
class _Walked:
    """One group of anchors walked, its scratch still holding the best strengths.

    Attributes:
        anchors: the group's anchors, in order.
        grid: the scratch as ``nodes × anchors``: the best strength from each
            anchor to each node (0: not reached; an anchor's own cell is 0 too).
        states: the paths kept before the last hop.
        current: per state, whether it still holds its cell's best path.
        ends: the last hop's candidates.
        touched: every cell of ``grid`` (raveled) the walk wrote, with repeats: a
            walk reaches a small part of a large graph, and summing or clearing
            just those cells beats streaming the whole scratch.
    """

    anchors: list[Anchor]
    grid: F64
    states: _States
    current: Mask
    ends: _Ends
    touched: I64


class _Scratch:
    """Dense per-(node, anchor) work arrays. Between uses ``best`` is all zero and
    ``win`` all ``_NO_WIN``; ``ref`` is only read where the same walk wrote it."""

    __slots__ = ("best", "ref", "win")

    def __init__(self, size: int) -> None:
        self.best: F64 = np.zeros(size, dtype=np.float64)
        self.ref: I32 = np.zeros(size, dtype=np.int32)
        # int64 like the positions written to it: ufunc.at is slow when it casts.
        self.win: I64 = np.full(size, _NO_WIN, dtype=np.int64)

    @property
    def size(self) -> int:
        return int(self.best.shape[0])


class _ScratchPool:
    """A few scratches shared by all graphs: expansions run concurrently, and a
    scratch per thread would pin tens of MB per idle worker thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[_Scratch] = []

    def take(self, size: int) -> _Scratch:
        with self._lock:
            for i, scratch in enumerate(self._free):
                if scratch.size >= size:
                    return self._free.pop(i)
        return _Scratch(size)

    def give(self, scratch: _Scratch) -> None:
        with self._lock:
            if len(self._free) < _POOLED_SCRATCH:
                self._free.append(scratch)
            else:
                smallest = min(range(len(self._free)), key=lambda i: self._free[i].size)
                if self._free[smallest].size < scratch.size:
                    self._free[smallest] = scratch


_SCRATCH = _ScratchPool()


def _strongest(anchor: I64, value: F64, g: int, limit: int) -> I64:
    """Positions of at most ``limit`` entries per anchor (of ``g``): the highest
    values, ties to the earlier entry; returned in entry order.

    Anchors with no more than ``limit`` entries keep them all without sorting, the
    common case for all but the widest hop.
    """
    per_anchor = np.bincount(anchor, minlength=g)
    if per_anchor.max(initial=0) <= limit:
        return np.arange(anchor.shape[0], dtype=np.int64)
    keep = np.ones(anchor.shape[0], dtype=bool)
    for a in np.flatnonzero(per_anchor > limit).tolist():
        mine = np.flatnonzero(anchor == a)
        values = value[mine]
        cut = np.partition(values, values.shape[0] - limit)[values.shape[0] - limit]
        # Everything above the cut stays; of the ties at the cut, the earliest.
        tied = np.flatnonzero(values == cut)
        room = limit - int((values > cut).sum())
        drop = values < cut
        drop[tied[room:]] = True
        keep[mine[drop]] = False
    return np.flatnonzero(keep)


def _segments(starts: I64, counts: I64) -> I64:
    """Arena positions of the blocks ``[starts[i], starts[i] + counts[i])``, in order."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    cells: I64 = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)
    return cells


def _grown(array: npt.NDArray[_T], size: int, fill: object) -> npt.NDArray[_T]:
    """``array`` with room for ``size`` items (doubling), new cells set to ``fill``."""
    old = array.shape[0]
    if size <= old:
        return array
    grown = np.empty(max(size, 2 * old, 16), dtype=array.dtype)
    grown[:old] = array
    grown[old:] = fill
    return grown


class CollectionGraph:
    """Adjacency of one collection's memories and hubs, and expansion over it.

    Thread safety: expansion and other reads hold a shared lock and run side by
    side; each mutator holds it exclusively. The store serializes the mutators
    behind its write lock and calls them after the matching SQLite commit.
    """

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self.hub_vectors = HubVectors()
        self._lock = RWLock()
        # nodes
        self._names: list[str] = []
        self._kind: npt.NDArray[np.int8] = np.empty(0, dtype=np.int8)
        self._slot: I64 = np.empty(0, dtype=np.int64)
        self._start: I64 = np.empty(0, dtype=np.int64)
        self._len: I64 = np.empty(0, dtype=np.int64)
        self._cap: I64 = np.empty(0, dtype=np.int64)
        self._nassoc: I64 = np.empty(0, dtype=np.int64)
        self._n_nodes = 0  # high-water mark; freed ids are reused first
        self._free_nodes: list[int] = []
        self._memory_node: dict[str, int] = {}
        self._hub_node: dict[tuple[int, str], int] = {}
        # arena
        # int64 although node ids are small: numpy turns every other index array
        # into intp before using it, so int32 would cost a conversion per hop.
        self._nbr: I64 = np.empty(0, dtype=np.int64)
        self._eid: I32 = np.empty(0, dtype=np.int32)
        # Each entry's edge weight again, beside it: a hop reads weights in the
        # order it reads neighbors instead of gathering them from all edges.
        self._wt: F64 = np.empty(0, dtype=np.float64)
        self._top = 0
        self._garbage = 0
        # edges (endpoint a is always a memory; b is a hub or, ASSOCIATED, a memory)
        self._w: F64 = np.empty(0, dtype=np.float64)
        self._used: I64 = np.empty(0, dtype=np.int64)
        self._a: I32 = np.empty(0, dtype=np.int32)
        self._b: I32 = np.empty(0, dtype=np.int32)
        self._n_edges = 0  # high-water mark
        self._free_edges: list[int] = []
        self._slot_source: object | None = None

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        collection: str,
        slots: SlotSource,
        edges: Sequence[tuple[str, int, str, float, int]],
        hub_vectors: Iterable[tuple[str, str, bytes, str]] = (),
    ) -> CollectionGraph:
        """A graph over every memory ``slots`` knows and the given walked edges
        ``(source, type code, target, weight, used_at)`` (codes as in
        :data:`EDGE_TYPE_CODES`); ``hub_vectors`` are stored ``(kind, name, float32
        bytes, model)`` name embeddings.

        Past reading the rows, the work is C-level maps and numpy: at 100k memories
        and 1.5M edges, fetching the rows costs most of the time. Edges whose
        memories are unknown, and memory edges from a memory to itself, are left
        out.
        """
        graph = cls(collection)
        items = slots.slot_items()
        names = [memory_id for memory_id, _ in items]
        n_memories = len(names)
        memory_node = {memory_id: node for node, memory_id in enumerate(names)}
        m = len(edges)
        # One column at a time with itemgetter: far cheaper than zip(*rows).
        sources, codes, targets, weights, used = (
            list(map(itemgetter(column), edges)) for column in range(5)
        )
        code = np.fromiter(codes, dtype=np.int8, count=m)
        a = np.fromiter(map(memory_node.get, sources, repeat(-1)), dtype=np.int64, count=m)
        b = np.full(m, -1, dtype=np.int64)
        hub_keys: list[tuple[int, str]] = []
        by_code: list[tuple[npt.NDArray[np.intp], list[str]]] = []
        for c in range(len(_KINDS)):
            rows = np.flatnonzero(code == c)
            of_kind = [targets[r] for r in rows.tolist()]
            by_code.append((rows, of_kind))
            if c != _MEMORY:
                hub_keys.extend((c, name) for name in sorted(set(of_kind)))
        hub_node = {key: n_memories + i for i, key in enumerate(hub_keys)}
        for c, (rows, of_kind) in enumerate(by_code):
            lookup = (
                memory_node if c == _MEMORY else {n: v for (k, n), v in hub_node.items() if k == c}
            )
            b[rows] = np.fromiter(map(lookup.get, of_kind, repeat(-1)), np.int64, len(of_kind))
        n = n_memories + len(hub_keys)
        keep = (a >= 0) & (b >= 0) & (a != b)
        dropped = m - int(keep.sum())
        if dropped:
            logger.warning(
                "collection %s: %d stored edges name no known memory and are not walked",
                collection,
                dropped,
            )
        a, b = a[keep], b[keep]
        w = np.asarray(weights, dtype=np.float64)[keep]
        u = np.asarray(used, dtype=np.int64)[keep]
        e = a.shape[0]

        graph._names = names + [name for _, name in hub_keys]
        graph._kind = np.zeros(n, dtype=np.int8)
        graph._kind[n_memories:] = [code for code, _ in hub_keys]
        graph._slot = np.full(n, -1, dtype=np.int64)
        graph._slot[:n_memories] = [slot for _, slot in items]
        graph._n_nodes = n
        graph._memory_node = memory_node
        graph._hub_node = hub_node
        graph._w, graph._used = w, u
        graph._a, graph._b = a.astype(np.int32), b.astype(np.int32)
        graph._n_edges = e
        graph._slot_source = slots

        # Every edge in both endpoints' blocks, in block order: hubs by (weight
        # descending, memory name), memories by (neighbor kind, neighbor name). Hub
        # nodes are numbered in (kind, name) order, so one rank orders every name.
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n_memories), key=names.__getitem__)] = np.arange(n_memories)
        rank[n_memories:] = np.arange(n_memories, n)
        eids = np.arange(e, dtype=np.int64)
        owner = np.concatenate([a, b])
        neighbor = np.concatenate([b, a])
        edge = np.concatenate([eids, eids])
        by_weight = np.where(owner >= n_memories, -w[edge], 0.0)
        order = np.lexsort((rank[neighbor], by_weight, owner))
        owner, neighbor, edge = owner[order], neighbor[order], edge[order]
        counts = np.bincount(owner, minlength=n).astype(np.int64)
        graph._len = counts
        graph._nassoc = np.bincount(
            owner[(owner < n_memories) & (neighbor < n_memories)], minlength=n
        ).astype(np.int64)
        graph._layout(np.arange(n, dtype=np.int64), owner, neighbor, edge)
        for kind, name, blob, model in hub_vectors:
            key = (_KIND_CODE.get(kind, _FREE), name)
            if key in hub_node:
                graph.hub_vectors.put((kind, name), np.frombuffer(blob, dtype=np.float32), model)
        return graph

    def _layout(self, nodes: I64, owner: I64, neighbor: I64, edge: I64) -> None:
        """Lay out a fresh arena holding, for ``nodes`` (ascending), the entries
        ``(owner, neighbor, edge)`` grouped by owner in block order; ``_len`` must
        already count them."""
        counts = self._len[nodes]
        caps = counts + np.maximum(_MIN_BLOCK, counts >> 2)
        starts = np.cumsum(caps) - caps
        self._start = np.zeros(self._kind.shape[0], dtype=np.int64)
        self._cap = np.zeros(self._kind.shape[0], dtype=np.int64)
        self._start[nodes] = starts
        self._cap[nodes] = caps
        self._top = int(caps.sum())
        self._garbage = 0
        size = max(_MIN_ARENA, self._top + self._top // 4)
        self._nbr = np.zeros(size, dtype=np.int64)
        self._eid = np.zeros(size, dtype=np.int32)
        self._wt = np.zeros(size, dtype=np.float64)
        first = np.cumsum(counts) - counts
        position = np.zeros(self._kind.shape[0], dtype=np.int64)
        position[nodes] = starts - first
        cells = np.arange(owner.shape[0], dtype=np.int64) + position[owner]
        self._nbr[cells] = neighbor
        self._eid[cells] = edge
        self._wt[cells] = self._w[edge]

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        """Nodes held: memories and hubs."""
        return len(self._memory_node) + len(self._hub_node)

    @property
    def edge_count(self) -> int:
        """Walked edges held (each ASSOCIATED edge once)."""
        return self._n_edges - len(self._free_edges)

    def has_memory(self, memory_id: str) -> bool:
        """Whether the collection holds the memory (a plain dict read: callers hold
        the store's write lock, under which the graph does not change)."""
        return memory_id in self._memory_node

    def has_hub(self, kind: str, name: str) -> bool:
        """Whether the hub exists (as :meth:`has_memory`)."""
        return (_KIND_CODE.get(kind, _FREE), name) in self._hub_node

    def hub_degrees(self, names: Sequence[str]) -> list[tuple[str, str, int]]:
        """``(kind, name, degree)`` of every hub whose name is among ``names``, in the
        order of ``names`` then of kinds; degree is the memories linked."""
        found = []
        with self._lock.read():
            for name in dict.fromkeys(names):
                for code in range(1, len(_KINDS)):
                    node = self._hub_node.get((code, name))
                    if node is not None:
                        found.append((_KINDS[code], name, int(self._len[node])))
        return found

    def hub_degree(self, kind: str, name: str) -> int | None:
        """Memories linked to the hub; ``None`` when there is no such hub."""
        with self._lock.read():
            node = self._hub_node.get((_KIND_CODE.get(kind, _FREE), name))
            return int(self._len[node]) if node is not None else None

    def search_hub_vectors(
        self, query: npt.NDArray[np.float32], model: str, k: int, min_similarity: float
    ) -> list[tuple[str, str, float, int]]:
        """``(kind, name, similarity, degree)`` of the hubs whose name vector is
        closest to ``query``; best first."""
        with self._lock.read():
            hits = self.hub_vectors.search(query, model, k, min_similarity)
            return [
                (kind, name, similarity, int(self._len[self._hub_node[(_KIND_CODE[kind], name)]]))
                for (kind, name), similarity in hits
            ]

    def edges(self) -> list[tuple[str, str, str, float, int]]:
        """Every walked edge as ``(source, type, target, weight, used_at)``, oriented
        as SQLite stores it (ASSOCIATED from the smaller id), sorted (for checks and
        tests)."""
        with self._lock.read():
            found = []
            names = self._names
            for e in range(self._n_edges):
                a = int(self._a[e])
                if a < 0:
                    continue
                b = int(self._b[e])
                code = int(self._kind[b])
                source, target = names[a], names[b]
                if code == _MEMORY and target < source:
                    source, target = target, source
                found.append(
                    (source, _EDGE_TO[code].value, target, float(self._w[e]), int(self._used[e]))
                )
            return sorted(found)

    def check(self) -> None:
        """Assert the internal invariants (for tests): block orders, counts, and
        that every live edge sits in both endpoints' blocks."""
        with self._lock.read():
            seen: dict[int, int] = {}
            names = self._names
            for node in range(self._n_nodes):
                code = int(self._kind[node])
                if code == _FREE:
                    continue
                s, n = int(self._start[node]), int(self._len[node])
                assert n <= self._cap[node] and s + n <= self._top
                nbrs = self._nbr[s : s + n].tolist()
                eids = self._eid[s : s + n].tolist()
                for e in eids:
                    seen[e] = seen.get(e, 0) + 1
                keys: list[tuple[float, str]]
                if code == _MEMORY:
                    keys = [(float(self._kind[v]), names[v]) for v in nbrs]
                    assert int(self._nassoc[node]) == sum(1 for k, _ in keys if k == _MEMORY)
                else:
                    keys = [(-float(self._w[e]), names[v]) for v, e in zip(nbrs, eids, strict=True)]
                assert keys == sorted(keys), f"block of {names[node]!r} out of order"
                weights = self._wt[s : s + n].tolist()
                assert weights == [float(self._w[e]) for e in eids], "stale weight copies"
                assert len(set(nbrs)) == n
            live = [e for e in range(self._n_edges) if self._a[e] >= 0]
            assert all(seen.get(e) == 2 for e in live) and len(seen) == len(live)

    # -- expansion --------------------------------------------------------------------

    def expand(
        self,
        anchors: Sequence[Anchor],
        params: ExpandParams,
        filters: RecallFilters,
        slots: SlotSource,
        *,
        paths: bool = True,
    ) -> list[Expansion]:
        """Memories reached from ``anchors`` over walked edges, strongest first.

        Semantics (the Neo4j store's query implements the same):

        - Anchors are merged by (kind, name), keeping the strongest; unknown ones
          are ignored. Each anchor is walked on its own.
        - A step from node ``u`` with strength ``s`` over an edge of weight ``w``
          reaches its neighbor with ``s × damping × w``, times, when ``u`` is a hub
          and ``hub_degree_penalty`` is on, the factor ``hub_degree_mode`` gives for
          its degree (:func:`degree_factor`); a hub whose factor is below
          ``hub_min_factor``, or that links more than ``max_hub_degree``
          memories (with or without the penalty), is not walked through.
          Edges are walked both ways; from a hub only its ``hub_fanout`` strongest
          edges (ties by memory id).
        - Per anchor, hop by hop up to ``max_depth``: every frontier node is
          stepped from, and a node whose best strength from this anchor improves
          (strictly) takes the new path. The next frontier is the ``frontier``
          strongest nodes improved in this hop (ties: the earlier found), in the
          order found; other anchors' nodes are reached but never walked
          through, so that a path via another anchor does not count as a second
          anchor's support. Ties between equal paths go to the one found first,
          in the order (anchor, frontier position, block order), which depends
          only on names and weights.
        - A memory's strength is the sum over anchors of its best path from each,
          ``anchors`` how many reach it; an anchor's own node is never its result.
          Memories failing ``filters`` are walked through but not returned.
        - At most ``max_results`` memories, by strength descending, then id.

        With ``paths`` false the expansions carry no paths: building a pydantic
        object per path (up to ``max_results`` × anchors of them) costs more than
        the walk itself.
        """
        merged: dict[tuple[int, str], Anchor] = {}
        for anchor in anchors:
            key = (_KIND_CODE.get(anchor.kind, _FREE), anchor.name)
            if key[0] == _FREE:
                logger.debug("anchor kind %r is not a node kind; ignored", anchor.kind)
                continue
            held = merged.get(key)
            if held is None or anchor.strength > held.strength:
                merged[key] = anchor
        ordered = sorted(merged.items(), key=lambda item: (item[1].kind, item[1].name))
        mask = slots.slot_mask(filters)
        while True:
            with self._lock.read():
                if self._slot_source is slots:
                    return self._expand(ordered, params, mask, paths)
            # The index was rebuilt (a model changed dimension): its slots moved.
            self.sync_slots(slots)

    def _expand(
        self,
        ordered: list[tuple[tuple[int, str], Anchor]],
        params: ExpandParams,
        mask: Mask | None,
        paths: bool,
    ) -> list[Expansion]:
        found = []
        for (code, name), anchor in ordered:
            node = (
                self._memory_node.get(name) if code == _MEMORY else self._hub_node.get((code, name))
            )
            if node is not None:
                found.append((node, anchor))
        if not found:
            return []
        nn = self._n_nodes
        # All anchors share one scratch of nodes × anchors cells, unless that would
        # be too large (a very large collection); then they go in groups, and a
        # recall that wants paths walks each group a second time for them.
        size = max(1, min(len(found), _SCRATCH_CELLS // max(nn, 1)))
        parts = [found[i : i + size] for i in range(0, len(found), size)]
        # Anchors are reached but never walked through: a path from one anchor via
        # another is the other's support, and must not count as a second anchor.
        barrier = np.zeros(nn, dtype=bool)
        barrier[[node for node, _ in found]] = True
        strength = np.zeros(nn, dtype=np.float64)
        best = np.zeros(nn, dtype=np.float64)
        best_of = np.full(nn, -1, dtype=np.int64)  # index into found of the best anchor
        done = 0  # anchors of earlier parts
        count = np.zeros(nn, dtype=np.int64)
        walked: list[tuple[_Walked, F64]] = []
        picked: list[int] = []
        for part in parts:
            scratch = _SCRATCH.take(len(part) * nn)
            walk = self._walk(part, params, scratch, barrier, paths=paths and len(parts) == 1)
            if len(parts) == 1:
                # Only the cells the walk wrote can be non-zero: sum those per node
                # (in anchor order, as a dense sum over the anchors' rows would).
                cells = np.unique(walk.touched)
                flat = walk.grid.reshape(-1)
                value = flat[cells]
                cells, value = cells[value > 0.0], value[value > 0.0]
                # Anchor by anchor, in order, so sums round exactly as the dense
                # sum over the anchors' rows would (ties depend on it).
                bounds = np.searchsorted(cells, np.arange(len(part) + 1) * nn)
                for a in range(len(part)):
                    lo, hi = bounds[a], bounds[a + 1]
                    nodes = cells[lo:hi] - a * nn
                    strength[nodes] += value[lo:hi]
                    better = value[lo:hi] > best[nodes]
                    best[nodes[better]] = value[lo:hi][better]
                    best_of[nodes[better]] = done + a
                    count[nodes] += 1
                reached = np.unique(cells % nn)
                picked = self._pick(strength, params, mask, among=reached)
                if paths:
                    walked.append((walk, walk.grid[:, picked].T.copy()))
                flat[walk.touched] = 0.0
            else:
                # Summing the anchors' rows streams the scratch once. Groups add
                # in order.
                strength += walk.grid.sum(axis=0)
                top = walk.grid.max(axis=0)
                better = top > best
                best[better] = top[better]
                best_of[better] = done + walk.grid.argmax(axis=0)[better]
                count += np.count_nonzero(walk.grid, axis=0)
                walk.grid[:] = 0.0
            # Only a walk that got this far left the scratch clean.
            _SCRATCH.give(scratch)
            done += len(part)
        if len(parts) > 1:
            picked = self._pick(strength, params, mask)
            for part in parts if paths and picked else ():
                scratch = _SCRATCH.take(len(part) * nn)
                walk = self._walk(part, params, scratch, barrier, paths=True)
                walked.append((walk, walk.grid[:, picked].T.copy()))
                walk.grid[:] = 0.0
                _SCRATCH.give(scratch)
        names = self._names
        if not paths:
            return [
                Expansion(
                    memory_id=names[node],
                    strength=float(strength[node]),
                    anchors=int(count[node]),
                    best=float(best[node]),
                    best_anchor=found[best_of[node]][1] if best_of[node] >= 0 else None,
                    paths=[],
                )
                for node in picked
            ]
        found_paths: dict[int, list[tuple[float, int, GraphPath]]] = {n: [] for n in picked}
        base = 0
        for walk, table in walked:
            self._paths(walk, table, picked, base, found_paths)
            base += len(walk.anchors)
        expansions = []
        for node in picked:
            ranked = sorted(found_paths[node], key=lambda item: (item[0], item[1]))
            expansions.append(
                Expansion(
                    memory_id=names[node],
                    strength=float(strength[node]),
                    anchors=len(ranked),
                    best=float(best[node]),
                    best_anchor=found[best_of[node]][1] if best_of[node] >= 0 else None,
                    paths=[path for _, _, path in ranked],
                )
            )
        return expansions

    def _walk(
        self,
        part: list[tuple[int, Anchor]],
        params: ExpandParams,
        scratch: _Scratch,
        barrier: Mask,
        *,
        paths: bool,
    ) -> _Walked:
        """Hop-bounded max-product relaxation from each anchor of ``part`` at once.

        Cell ``node × g + anchor`` of the scratch (g anchors; node-major, so that
        the anchors' cells of one node share cache lines and a node's row sums to
        its strength) holds the best strength found from that anchor to that node
        (``best``), the state holding its path (``ref``), and, within a hop, the
        first candidate reaching it (``win``). Each hop gathers the frontier's
        blocks, keeps the candidates that beat the best so far, takes the per-cell
        maximum and keeps the first candidate reaching it as a new state. The last
        hop only takes the maxima: its candidates end paths, and only those of
        returned memories are looked at again (:meth:`_paths`).
        """
        nn = self._n_nodes
        g = len(part)
        nodes = np.array([node for node, _ in part], dtype=np.int64)
        strengths = np.array([anchor.strength for _, anchor in part], dtype=np.float64)
        best, ref, win = scratch.best, scratch.ref, scratch.win
        kind, length, nassoc, start = self._kind, self._len, self._nassoc, self._start
        arena_nbr, arena_w = self._nbr, self._wt
        damping, fanout = params.damping, params.hub_fanout

        anchor_ids = np.arange(g, dtype=np.int64)
        s_node, s_anchor, s_value = [nodes], [anchor_ids], [strengths]
        s_parent, s_weight = [np.full(g, -1, dtype=np.int64)], [np.zeros(g)]
        keys = anchor_ids * nn + nodes
        touched = [keys]
        best[keys] = strengths
        ref[keys] = anchor_ids
        n_states = g
        f_state, f_node, f_anchor, f_value = anchor_ids, nodes, anchor_ids, strengths
        end = _Ends.empty()

        for hop in range(1, params.max_depth + 1):
            last = hop == params.max_depth
            hub = kind[f_node] != _MEMORY
            degree = length[f_node]
            counts = np.where(hub, np.minimum(degree, fanout), degree)
            if params.max_hub_degree is not None:
                # A hub too common to say anything about any one of its members
                # is not walked through, with or without the penalty (the Neo4j
                # store skips it alike).
                counts = np.where(hub & (degree > params.max_hub_degree), 0, counts)
            if params.hub_degree_penalty:
                factors = _degree_factors(degree, params)
                # A hub whose factor makes every path through it negligible is
                # not walked through (the Neo4j store skips it alike).
                counts = np.where(hub & (factors < params.hub_min_factor), 0, counts)
            if last:
                # Only memories are results: from a memory, only its ASSOCIATED
                # edges (first in its block) can still reach one.
                counts = np.where(hub, counts, nassoc[f_node])
            if not counts.any():
                break
            step = f_value * damping
            if params.hub_degree_penalty:
                step = np.where(hub, step * factors, step)
            # Per-candidate copies of frontier values by repeat, not by gathering
            # through an owner index: repeat streams, a gather does not.
            cells = _segments(start[f_node], counts)
            neighbor = arena_nbr[cells]
            weight = arena_w[cells]
            value = np.repeat(step, counts) * weight
            key = np.repeat(f_anchor * nn, counts) + neighbor
            if last:
                np.maximum.at(best, key, value)
                touched.append(key)
                if paths:
                    anchor = np.repeat(f_anchor, counts)
                    end = _Ends(neighbor, anchor, value, np.repeat(f_state, counts), weight)
                break
            owner = np.repeat(np.arange(f_node.shape[0], dtype=np.int64), counts)
            anchor = f_anchor[owner]
            better = value > best[key]
            if not better.all():
                owner, neighbor, weight, value, anchor, key = (
                    owner[better],
                    neighbor[better],
                    weight[better],
                    value[better],
                    anchor[better],
                    key[better],
                )
            if key.shape[0] == 0:
                break
            np.maximum.at(best, key, value)
            touched.append(key)
            pos = np.flatnonzero(value == best[key])
            won = key[pos]
            np.minimum.at(win, won, pos)
            pos = pos[win[won] == pos]
            win[won] = _NO_WIN
            # One new state per improved cell, in candidate (discovery) order.
            new = np.arange(n_states, n_states + pos.shape[0], dtype=np.int64)
            ref[key[pos]] = new
            node_new, anchor_new, value_new = neighbor[pos], anchor[pos], value[pos]
            s_node.append(node_new)
            s_anchor.append(anchor_new)
            s_value.append(value_new)
            s_parent.append(f_state[owner[pos]])
            s_weight.append(weight[pos])
            n_states += pos.shape[0]
            onward = np.flatnonzero(~barrier[node_new])
            chosen = onward[_strongest(anchor_new[onward], value_new[onward], g, params.frontier)]
            f_state, f_node = new[chosen], node_new[chosen]
            f_anchor, f_value = anchor_new[chosen], value_new[chosen]

        states = _States(
            node=np.concatenate(s_node),
            anchor=np.concatenate(s_anchor),
            value=np.concatenate(s_value),
            parent=np.concatenate(s_parent),
            weight=np.concatenate(s_weight),
        )
        # Which states still hold their cell's best path: only paths need it.
        current = (
            ref[states.anchor * nn + states.node] == np.arange(n_states)
            if paths
            else np.zeros(0, dtype=bool)
        )
        # An anchor's own cell holds its starting strength: never its result.
        best[keys] = 0.0
        return _Walked(
            anchors=[anchor for _, anchor in part],
            grid=best[: nn * g].reshape(g, nn),
            states=states,
            current=current,
            ends=end,
            touched=np.concatenate(touched),
        )

    def _pick(
        self, strength: F64, params: ExpandParams, mask: Mask | None, among: I64 | None = None
    ) -> list[int]:
        """The memory nodes to return: reached (with a positive strength), passing
        the filter mask, the ``max_results`` strongest, by strength descending
        then id. ``among``: the only nodes that can have a strength (sorted)."""
        if among is None:
            candidates = np.flatnonzero((strength > 0.0) & (self._kind[: self._n_nodes] == _MEMORY))
        else:
            candidates = among[(strength[among] > 0.0) & (self._kind[among] == _MEMORY)]
        if mask is not None:
            slot = self._slot[candidates]
            inside = (slot >= 0) & (slot < mask.shape[0])
            passing = np.zeros(candidates.shape[0], dtype=bool)
            passing[inside] = mask[slot[inside]]
            candidates = candidates[passing]
        names = self._names
        k = params.max_results
        if candidates.shape[0] > k:
            values = strength[candidates]
            kth = np.partition(values, values.shape[0] - k)[values.shape[0] - k]
            above = candidates[values > kth]
            tied = sorted(candidates[values == kth].tolist(), key=names.__getitem__)
            picked = above.tolist() + tied[: k - above.shape[0]]
        else:
            picked = candidates.tolist()
        totals = strength[picked].tolist()
        order = sorted(range(len(picked)), key=lambda i: (-totals[i], names[picked[i]]))
        return [picked[i] for i in order]

    def _paths(
        self,
        walk: _Walked,
        table: F64,
        picked: list[int],
        base: int,
        paths: dict[int, list[tuple[float, int, GraphPath]]],
    ) -> None:
        """Add to ``paths`` the best path from each of the walk's anchors to each
        picked memory, as ``(-strength, anchor position, path)``; ``table`` holds
        the picked memories' rows of the walk's grid.

        A cell's best path is the state holding it, unless the last hop beat it:
        then it is the first last-hop candidate reaching the cell's value.
        """
        row_of = np.full(self._n_nodes, -1, dtype=np.int64)
        row_of[picked] = np.arange(len(picked))
        states, ends = walk.states, walk.ends

        held = np.flatnonzero(walk.current & (states.parent >= 0) & (row_of[states.node] >= 0))
        held = held[states.value[held] == table[row_of[states.node[held]], states.anchor[held]]]
        held_keys = states.anchor[held] * self._n_nodes + states.node[held]

        ending = np.flatnonzero(row_of[ends.node] >= 0)
        ending = ending[ends.value[ending] == table[row_of[ends.node[ending]], ends.anchor[ending]]]
        end_keys = ends.anchor[ending] * self._n_nodes + ends.node[ending]
        keep = ~np.isin(end_keys, held_keys)
        ending, end_keys = ending[keep], end_keys[keep]
        # The first candidate per cell, in discovery order.
        _, first = np.unique(end_keys, return_index=True)
        ending = ending[first]

        # The states on these paths, read out of numpy once: indexing arrays one
        # scalar at a time costs more than the pydantic objects built from them.
        chain = np.concatenate([held, ends.parent[ending]])
        on_paths = [chain]
        while chain.shape[0]:
            chain = states.parent[chain]
            chain = chain[chain >= 0]
            on_paths.append(chain)
        needed = np.unique(np.concatenate(on_paths))
        nodes = states.node[needed]
        state_info = dict(
            zip(
                needed.tolist(),
                zip(
                    nodes.tolist(),
                    self._kind[nodes].tolist(),
                    states.parent[needed].tolist(),
                    states.weight[needed].tolist(),
                    strict=True,
                ),
                strict=True,
            )
        )
        cache: dict[int, list[PathStep]] = {}
        anchors = walk.anchors
        for state, node, anchor, value in zip(
            held.tolist(),
            states.node[held].tolist(),
            states.anchor[held].tolist(),
            states.value[held].tolist(),
            strict=True,
        ):
            path = GraphPath(
                anchor=anchors[anchor], steps=self._steps(state_info, state, cache), strength=value
            )
            paths[node].append((-value, base + anchor, path))
        names = self._names
        memory_kind = _KINDS[_MEMORY]
        for node, anchor, parent, value, weight in zip(
            ends.node[ending].tolist(),
            ends.anchor[ending].tolist(),
            ends.parent[ending].tolist(),
            ends.value[ending].tolist(),
            ends.weight[ending].tolist(),
            strict=True,
        ):
            step = PathStep(
                type=_EDGE_TO[state_info[parent][1]],
                weight=weight,
                kind=memory_kind,
                name=names[node],
            )
            path = GraphPath(
                anchor=anchors[anchor],
                steps=[*self._steps(state_info, parent, cache), step],
                strength=value,
            )
            paths[node].append((-value, base + anchor, path))

    def _steps(
        self,
        state_info: dict[int, tuple[int, int, int, float]],
        state: int,
        cache: dict[int, list[PathStep]],
    ) -> list[PathStep]:
        """The steps of the path held by ``state`` (``state_info``: its node, the
        node's kind code, its parent state, the edge weight); prefixes are shared
        through ``cache``, as many results hang off the same few early states."""
        held = cache.get(state)
        if held is not None:
            return held
        node, code, parent, weight = state_info[state]
        if parent < 0:
            cache[state] = []
            return cache[state]
        # A hub edge whichever way it was walked; ASSOCIATED between two memories.
        via = code if code != _MEMORY else state_info[parent][1]
        step = PathStep(
            type=_EDGE_TO[via], weight=weight, kind=_KINDS[code], name=self._names[node]
        )
        steps = [*self._steps(state_info, parent, cache), step]
        cache[state] = steps
        return steps

    # -- writing (the store serializes callers) -----------------------------------------

    def sync_slots(self, slots: SlotSource) -> None:
        """Take every memory's slot from ``slots`` (after the vector index was
        rebuilt, which renumbers them)."""
        with self._lock.write():
            self._sync_slots(slots)

    def _sync_slots(self, slots: SlotSource) -> None:
        if self._slot_source is slots:
            return
        self._slot[:] = -1
        for memory_id, slot in slots.slot_items():
            node = self._memory_node.get(memory_id)
            if node is not None:
                self._slot[node] = slot
        self._slot_source = slots

    def add_memories(
        self, memory_ids: Sequence[str], edges: Sequence[WalkEdge], slots: SlotSource
    ) -> None:
        """Add new memories, then upsert ``edges`` (as :meth:`put_edges`)."""
        with self._lock.write():
            if self._slot_source is not slots:
                self._sync_slots(slots)
            fresh = [memory_id for memory_id in memory_ids if memory_id not in self._memory_node]
            nodes = frozenset(
                self._new_node(_MEMORY, memory_id, slot)
                for memory_id, slot in zip(fresh, slots.slots_of(fresh), strict=True)
            )
            self._put_edges(edges, nodes)
            self._maybe_compact()

    def remove_memory(self, memory_id: str) -> None:
        """Forget a memory with its edges; hubs left without edges go too."""
        with self._lock.write():
            node = self._memory_node.get(memory_id)
            if node is None:
                return
            s, n = int(self._start[node]), int(self._len[node])
            for e in self._eid[s : s + n].tolist():
                self._drop_edge(e)
            del self._memory_node[memory_id]
            self._free_node(node)
            self._maybe_compact()

    def remove_hub_edges(self, memory_id: str) -> None:
        """Drop the memory's hub edges (IN_DOMAIN, HAS_TRIGGER, ABOUT); hubs left
        without edges go too."""
        with self._lock.write():
            node = self._memory_node.get(memory_id)
            if node is None:
                return
            s, n = int(self._start[node]), int(self._len[node])
            a = int(self._nassoc[node])
            for e in self._eid[s + a : s + n].tolist():
                self._drop_edge(e)

    def put_edges(self, edges: Sequence[WalkEdge]) -> None:
        """Create edges, or overwrite the weight and last use of existing ones. Hubs
        are created when absent; edges whose memories are unknown, and memory edges
        from a memory to itself, are skipped."""
        with self._lock.write():
            self._put_edges(edges)
            self._maybe_compact()

    def reinforce(self, updates: Sequence[EdgeReinforcement]) -> None:
        """Apply reinforcements in order, as the store's SQL does (see
        :func:`reinforced`); other than walked edge types are ignored."""
        with self._lock.write():
            for update in updates:
                ends = self._ends(update.source, update.type, update.target, create=update.create)
                if ends is None:
                    continue
                a, b = ends
                e = self._find_edge(a, b)
                if e < 0:
                    if update.create:
                        self._new_edge(a, b, reinforced(None, update), update.used_at)
                else:
                    self._set_edge(e, reinforced(float(self._w[e]), update), update.used_at)
            self._maybe_compact()

    def decay(
        self,
        unused_before: int,
        step: float,
        floor: float,
        *,
        types: Sequence[EdgeType] | None = None,
    ) -> int:
        """Lower by ``step`` (to no less than ``floor``) every edge of ``types``
        (``None``: all) last used before ``unused_before`` (micros) and above
        ``floor``; return how many."""
        with self._lock.write():
            n = self._n_edges
            due = (self._a[:n] >= 0) & (self._used[:n] < unused_before) & (self._w[:n] > floor)
            if types is not None:
                # An edge's type follows from the kind of node it reaches.
                codes = [EDGE_TYPE_CODES[t] for t in types if t in EDGE_TYPE_CODES]
                due &= np.isin(self._kind[np.maximum(self._b[:n], 0)], codes)
            hit = np.flatnonzero(due)
            if hit.shape[0] == 0:
                return 0
            self._w[hit] = np.maximum(floor, self._w[hit] - step)
            ends = self._b[hit].astype(np.int64)
            self._resort_hubs(np.unique(ends[self._kind[ends] != _MEMORY]))
            # Memory blocks keep their order; refresh every cell's weight copy
            # (holes too: their stale edge ids still index the weight array).
            top = self._top
            self._wt[:top] = self._w[self._eid[:top]]
            return int(hit.shape[0])

    def put_hub_vector(
        self, kind: str, name: str, vector: npt.NDArray[np.float32], model: str
    ) -> None:
        """Set a hub's name vector (the store checked the hub exists)."""
        with self._lock.write():
            self.hub_vectors.put((kind, name), vector, model)

    # -- internals --------------------------------------------------------------------

    def _ends(
        self, source: str, edge_type: str, target: str, *, create: bool
    ) -> tuple[int, int] | None:
        """The nodes of an edge: its memory and its other end (a hub, created when
        absent and ``create``); ``None`` when the edge cannot be held."""
        code = _KIND_TO.get(edge_type)
        a = self._memory_node.get(source)
        if code is None or a is None:
            return None
        if code == _MEMORY:
            b = self._memory_node.get(target)
            if b is None or b == a:
                return None
            return a, b
        hub = self._hub_node.get((code, target))
        if hub is None:
            if not create:
                return None
            hub = self._new_node(code, target, -1)
        return a, hub

    def _put_edges(self, edges: Sequence[WalkEdge], fresh: frozenset[int] = frozenset()) -> None:
        """Upsert edges, the last of repeated ones winning. Edges of ``fresh``
        memories (just added, so without edges) are known to be new; all new edges
        are laid out together, each block merged once however many edges it gains
        (a hub may gain hundreds in one batch)."""
        new: dict[tuple[int, int], tuple[float, int]] = {}
        for edge in edges:
            ends = self._ends(edge.source, edge.type, edge.target, create=True)
            if ends is None:
                continue
            a, b = ends
            if ends in new or a in fresh or b in fresh:
                new[ends] = (edge.weight, edge.used_at)
                continue
            e = self._find_edge(a, b)
            if e < 0:
                new[ends] = (edge.weight, edge.used_at)
            else:
                self._set_edge(e, edge.weight, edge.used_at)
        if new:
            self._new_edges(new)

    def _new_node(self, code: int, name: str, slot: int) -> int:
        if self._free_nodes:
            node = self._free_nodes.pop()
            self._names[node] = name
        else:
            node = self._n_nodes
            self._n_nodes += 1
            self._names.append(name)
            size = self._n_nodes
            self._kind = _grown(self._kind, size, _FREE)
            self._slot = _grown(self._slot, size, -1)
            self._start = _grown(self._start, size, 0)
            self._len = _grown(self._len, size, 0)
            self._cap = _grown(self._cap, size, 0)
            self._nassoc = _grown(self._nassoc, size, 0)
        self._kind[node] = code
        self._slot[node] = slot
        self._len[node] = 0
        self._nassoc[node] = 0
        self._cap[node] = 0
        self._start[node] = self._top
        if code == _MEMORY:
            self._memory_node[name] = node
        else:
            self._hub_node[(code, name)] = node
        return node

    def _free_node(self, node: int) -> None:
        self._garbage += int(self._cap[node])
        self._kind[node] = _FREE
        self._slot[node] = -1
        self._len[node] = 0
        self._cap[node] = 0
        self._names[node] = ""
        self._free_nodes.append(node)

    def _find_edge(self, a: int, b: int) -> int:
        """The edge between memory ``a`` and node ``b``, -1 if none. Searches ``a``'s
        block: a memory has tens of edges where a hub may have thousands."""
        s, n = int(self._start[a]), int(self._len[a])
        hits = np.flatnonzero(self._nbr[s : s + n] == b)
        return int(self._eid[s + int(hits[0])]) if hits.shape[0] else -1

    def _new_edge(self, a: int, b: int, weight: float, used_at: int) -> None:
        self._new_edges({(a, b): (weight, used_at)})

    def _new_edges(self, new: dict[tuple[int, int], tuple[float, int]]) -> None:
        """Create edges ``(memory a, node b) -> (weight, used_at)`` none of which exist."""
        k = len(new)
        reused = self._free_edges[-k:] if k <= len(self._free_edges) else list(self._free_edges)
        del self._free_edges[len(self._free_edges) - len(reused) :]
        first = self._n_edges
        self._n_edges += k - len(reused)
        size = self._n_edges
        self._w = _grown(self._w, size, 0.0)
        self._used = _grown(self._used, size, 0)
        self._a = _grown(self._a, size, -1)
        self._b = _grown(self._b, size, -1)
        eids = [*reused, *range(first, size)]
        ends = list(new)
        values = list(new.values())
        self._a[eids] = [a for a, _ in ends]
        self._b[eids] = [b for _, b in ends]
        self._w[eids] = [w for w, _ in values]
        self._used[eids] = [u for _, u in values]
        gained: dict[int, list[tuple[int, int, float]]] = {}
        for (a, b), e, (w, _) in zip(ends, eids, values, strict=True):
            gained.setdefault(a, []).append((b, e, w))
            gained.setdefault(b, []).append((a, e, w))
        for owner, entries in gained.items():
            self._merge(owner, entries)

    def _set_edge(self, e: int, weight: float, used_at: int) -> None:
        self._used[e] = used_at
        if float(self._w[e]) == weight:
            return
        self._w[e] = weight
        a, b = int(self._a[e]), int(self._b[e])
        self._wt[self._cell(a, e)] = weight
        if self._kind[b] == _MEMORY:
            self._wt[self._cell(b, e)] = weight
        else:
            # A hub's block is ordered by weight: move the entry to its new place.
            self._remove(b, e)
            self._insert(b, a, e)

    def _cell(self, owner: int, e: int) -> int:
        """The arena cell of edge ``e`` in ``owner``'s block."""
        s, n = int(self._start[owner]), int(self._len[owner])
        return s + int(np.flatnonzero(self._eid[s : s + n] == e)[0])

    def _drop_edge(self, e: int) -> None:
        a, b = int(self._a[e]), int(self._b[e])
        self._remove(a, e)
        self._remove(b, e)
        self._a[e] = -1
        self._b[e] = -1
        self._free_edges.append(e)
        code = int(self._kind[b])
        if code != _MEMORY and self._len[b] == 0:
            name = self._names[b]
            del self._hub_node[(code, name)]
            self.hub_vectors.remove((_KINDS[code], name))
            self._free_node(b)

    def _insert(self, owner: int, neighbor: int, e: int) -> None:
        """Put ``(neighbor, e)`` in ``owner``'s block at its place in block order."""
        self._merge(owner, [(neighbor, e, float(self._w[e]))])

    def _merge(self, owner: int, entries: list[tuple[int, int, float]]) -> None:
        """Put ``(neighbor, edge, weight)`` entries in ``owner``'s block, each at its
        place in block order, with one pass over the block."""
        names, kind = self._names, self._kind
        n, k = int(self._len[owner]), len(entries)
        if n + k > int(self._cap[owner]):
            self._move_block(owner, max(_MIN_BLOCK, 2 * (n + k)))
        s = int(self._start[owner])
        nbr = self._nbr
        hub = kind[owner] != _MEMORY
        # Each new entry's place: first the run of equal leading keys (weight for a
        # hub, neighbor kind for a memory) by searchsorted, then by name in it.
        held: npt.NDArray[np.generic]
        if hub:
            entries.sort(key=lambda x: (-x[2], names[x[0]]))
            # Weights descending: search the negated weights, which ascend.
            held = -self._wt[s : s + n]
            keys: npt.NDArray[np.generic] = np.array([-w for _, _, w in entries])
        else:
            codes = kind[[v for v, _, _ in entries]].tolist()
            order = sorted(range(k), key=lambda i: (codes[i], names[entries[i][0]]))
            entries = [entries[i] for i in order]
            held = kind[nbr[s : s + n]]
            keys = np.array([codes[i] for i in order], dtype=held.dtype)
            self._nassoc[owner] += sum(1 for c in codes if c == _MEMORY)
        self._len[owner] = n + k
        end = s + n + k
        if n == 0:
            # A new block (a memory just added): the sorted entries are the block.
            nbr[s:end] = [v for v, _, _ in entries]
            self._eid[s:end] = [e for _, e, _ in entries]
            self._wt[s:end] = [w for _, _, w in entries]
            return
        starts = np.searchsorted(held, keys, side="left").tolist()
        stops = np.searchsorted(held, keys, side="right").tolist()
        places = []
        for (neighbor, _, _), lo, hi in zip(entries, starts, stops, strict=True):
            name = names[neighbor]
            while lo < hi:
                mid = (lo + hi) // 2
                if names[nbr[s + mid]] < name:
                    lo = mid + 1
                else:
                    hi = mid
            places.append(lo)
        if k == 1:
            # One entry: shift the tail by one cell (numpy copes with the overlap).
            at = s + places[0]
            for array in (nbr, self._eid, self._wt):
                array[at + 1 : end] = array[at : end - 1]
            (nbr[at], self._eid[at], self._wt[at]) = entries[0]
            return
        # Entry i lands at its place + i (places ascend; equal places keep the
        # order of entries); the old entries fill the other cells, in order.
        landing = np.asarray(places, dtype=np.int64) + np.arange(k)
        old = np.ones(n + k, dtype=bool)
        old[landing] = False
        for array, values in (
            (nbr, [v for v, _, _ in entries]),
            (self._eid, [e for _, e, _ in entries]),
            (self._wt, [w for _, _, w in entries]),
        ):
            block = array[s:end]
            block[old] = array[s : s + n].copy()
            block[landing] = values

    def _remove(self, owner: int, e: int) -> None:
        s, n = int(self._start[owner]), int(self._len[owner])
        at = self._cell(owner, e)
        neighbor = int(self._nbr[at])
        self._nbr[at : s + n - 1] = self._nbr[at + 1 : s + n]
        self._eid[at : s + n - 1] = self._eid[at + 1 : s + n]
        self._wt[at : s + n - 1] = self._wt[at + 1 : s + n]
        self._len[owner] = n - 1
        if self._kind[owner] == _MEMORY and self._kind[neighbor] == _MEMORY:
            self._nassoc[owner] -= 1

    def _move_block(self, node: int, cap: int) -> None:
        """Give ``node`` a block of ``cap`` cells at the arena's end."""
        s, n = int(self._start[node]), int(self._len[node])
        top = self._top
        if top + cap > self._nbr.shape[0]:
            size = max(top + cap, 2 * self._nbr.shape[0], _MIN_ARENA)
            self._nbr = _grown(self._nbr, size, 0)
            self._eid = _grown(self._eid, size, 0)
            self._wt = _grown(self._wt, size, 0.0)
        self._nbr[top : top + n] = self._nbr[s : s + n]
        self._eid[top : top + n] = self._eid[s : s + n]
        self._wt[top : top + n] = self._wt[s : s + n]
        self._garbage += int(self._cap[node])
        self._start[node] = top
        self._cap[node] = cap
        self._top = top + cap

    def _maybe_compact(self) -> None:
        """Reclaim the holes moved blocks left, once they outweigh the live cells."""
        if self._garbage < max(_MIN_GARBAGE, self._top // 2):
            return
        nodes = np.flatnonzero(self._kind[: self._n_nodes] != _FREE).astype(np.int64)
        counts = self._len[nodes]
        cells = _segments(self._start[nodes], counts)
        owner = np.repeat(nodes, counts)
        self._layout(nodes, owner, self._nbr[cells], self._eid[cells].astype(np.int64))
        logger.debug("collection %s: graph arena compacted to %d cells", self.collection, self._top)

    def _resort_hubs(self, hubs: I64) -> None:
        """Restore the (weight descending, memory id) order of these hubs' blocks
        after many weights changed at once."""
        if hubs.shape[0] == 0:
            return
        counts = self._len[hubs]
        cells = _segments(self._start[hubs], counts)
        group = np.repeat(np.arange(hubs.shape[0]), counts)
        neighbor = self._nbr[cells]
        edge = self._eid[cells].astype(np.int64)
        members = np.unique(neighbor).tolist()
        rank = np.zeros(self._n_nodes, dtype=np.int64)
        rank[sorted(members, key=self._names.__getitem__)] = np.arange(len(members))
        order = np.lexsort((rank[neighbor], -self._w[edge], group))
        self._nbr[cells] = neighbor[order]
        self._eid[cells] = edge[order]
        self._wt[cells] = self._w[edge[order]]


def _degree_factors(degree: I64, params: ExpandParams) -> F64:
    if params.hub_degree_mode == "inverse":
        return 1.0 / np.maximum(degree, 1).astype(np.float64)
    # log(1 + x), not log1p: the Neo4j store's Cypher has only log(), and equal
    # paths must stay equal to the last bit in both stores, or ties (and so
    # frontiers and fan-outs) would break differently.
    return 1.0 / (1.0 + np.log(1.0 + degree / params.hub_degree_pivot))


def degree_factor(degree: int, params: ExpandParams) -> float:
    """The damping a hub of ``degree`` memories applies to paths through it
    (computed as the walk does, to the last bit)."""
    return float(_degree_factors(np.array([degree], dtype=np.int64), params)[0])
