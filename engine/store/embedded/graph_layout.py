"""The in-memory graph's storage: nodes, edges and the arena of adjacency blocks,
and the primitives that keep them (adding and freeing nodes, creating, reweighting
and dropping edges, merging entries into blocks in block order, compaction).

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
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from hippocampus.model import EdgeType, RecallFilters
from hippocampus.model.association import MEMORY_NODE
from hippocampus.store.embedded.hub_vectors import HubVectors
from hippocampus.store.embedded.rwlock import RWLock

logger = logging.getLogger(__name__)

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
_T = TypeVar("_T", bound=np.generic)

KINDS: tuple[str, ...] = (MEMORY_NODE, "Domain", "Trigger", "Concept")
"""Node kinds by code; 0 is a memory, the others are hub kinds (HubKind values)."""
KIND_CODE: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
EDGE_TO: tuple[EdgeType, ...] = (
    EdgeType.ASSOCIATED,
    EdgeType.IN_DOMAIN,
    EdgeType.HAS_TRIGGER,
    EdgeType.ABOUT,
)
"""The type of an edge from a memory to a node of each kind code."""
KIND_TO: dict[str, int] = {edge_type.value: code for code, edge_type in enumerate(EDGE_TO)}
WALKED_EDGES = frozenset(EDGE_TO)
"""Edge types held in the graph and walked by expansion."""
EDGE_TYPE_CODES: dict[EdgeType, int] = {edge_type: code for code, edge_type in enumerate(EDGE_TO)}
"""The code :meth:`CollectionGraph.build` takes for each walked edge type."""

MEMORY = 0
FREE = -1
_MIN_BLOCK = 4
_MIN_ARENA = 1024
_MIN_GARBAGE = 1 << 16  # arena cells wasted before a compaction is worth its pass


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


def segments(starts: I64, counts: I64) -> I64:
    """Arena positions of the blocks ``[starts[i], starts[i] + counts[i])``, in order."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    cells: I64 = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - counts), counts)
    return cells


def grown(array: npt.NDArray[_T], size: int, fill: object) -> npt.NDArray[_T]:
    """``array`` with room for ``size`` items (doubling), new cells set to ``fill``."""
    old = array.shape[0]
    if size <= old:
        return array
    grown = np.empty(max(size, 2 * old, 16), dtype=array.dtype)
    grown[:old] = array
    grown[old:] = fill
    return grown


class GraphLayout:
    """The nodes, edges and arena of one collection's graph, with the primitives
    that change them; :class:`~hippocampus.store.embedded.graph.CollectionGraph`
    builds on it. Callers hold the graph's lock."""

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
        # int32: node ids stay far below 2**31, and at a million memories the
        # arena holds about 53 million entries (200 MB less than in int64). A hop
        # converts the entries it reads to numpy's index type (a few thousand).
        self._nbr: I32 = np.empty(0, dtype=np.int32)
        # Each entry's edge, whose weight a hop gathers from the edges' (no copy
        # beside it: at a million memories that would be 400 MB more).
        self._eid: I32 = np.empty(0, dtype=np.int32)
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
        self._nbr = np.zeros(size, dtype=np.int32)
        self._eid = np.zeros(size, dtype=np.int32)
        first = np.cumsum(counts) - counts
        position = np.zeros(self._kind.shape[0], dtype=np.int64)
        position[nodes] = starts - first
        cells = np.arange(owner.shape[0], dtype=np.int64) + position[owner]
        self._nbr[cells] = neighbor
        self._eid[cells] = edge

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

    def _ends(
        self, source: str, edge_type: str, target: str, *, create: bool
    ) -> tuple[int, int] | None:
        """The nodes of an edge: its memory and its other end (a hub, created when
        absent and ``create``); ``None`` when the edge cannot be held."""
        code = KIND_TO.get(edge_type)
        a = self._memory_node.get(source)
        if code is None or a is None:
            return None
        if code == MEMORY:
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

    def _new_node(self, code: int, name: str, slot: int) -> int:
        if self._free_nodes:
            node = self._free_nodes.pop()
            self._names[node] = name
        else:
            node = self._n_nodes
            self._n_nodes += 1
            self._names.append(name)
            size = self._n_nodes
            self._kind = grown(self._kind, size, FREE)
            self._slot = grown(self._slot, size, -1)
            self._start = grown(self._start, size, 0)
            self._len = grown(self._len, size, 0)
            self._cap = grown(self._cap, size, 0)
            self._nassoc = grown(self._nassoc, size, 0)
        self._kind[node] = code
        self._slot[node] = slot
        self._len[node] = 0
        self._nassoc[node] = 0
        self._cap[node] = 0
        self._start[node] = self._top
        if code == MEMORY:
            self._memory_node[name] = node
        else:
            self._hub_node[(code, name)] = node
        return node

    def _free_node(self, node: int) -> None:
        self._garbage += int(self._cap[node])
        self._kind[node] = FREE
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
        self._w = grown(self._w, size, 0.0)
        self._used = grown(self._used, size, 0)
        self._a = grown(self._a, size, -1)
        self._b = grown(self._b, size, -1)
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
        if self._kind[b] != MEMORY:
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
        if code != MEMORY and self._len[b] == 0:
            name = self._names[b]
            del self._hub_node[(code, name)]
            self.hub_vectors.remove((KINDS[code], name))
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
        hub = kind[owner] != MEMORY
        if hub:
            entries.sort(key=lambda x: (-x[2], names[x[0]]))
        else:
            codes = kind[[v for v, _, _ in entries]].tolist()
            order = sorted(range(k), key=lambda i: (codes[i], names[entries[i][0]]))
            entries = [entries[i] for i in order]
            self._nassoc[owner] += sum(1 for c in codes if c == MEMORY)
        self._len[owner] = n + k
        end = s + n + k
        if n == 0:
            # A new block (a memory just added): the sorted entries are the block.
            nbr[s:end] = [v for v, _, _ in entries]
            self._eid[s:end] = [e for _, e, _ in entries]
            return
        places = self._places(s, n, entries, hub=hub)
        if k == 1:
            # One entry: shift the tail by one cell (numpy copes with the overlap).
            at = s + places[0]
            for array in (nbr, self._eid):
                array[at + 1 : end] = array[at : end - 1]
            nbr[at], self._eid[at] = entries[0][0], entries[0][1]
            return
        # Entry i lands at its place + i (places ascend; equal places keep the
        # order of entries); the old entries fill the other cells, in order.
        landing = np.asarray(places, dtype=np.int64) + np.arange(k)
        old = np.ones(n + k, dtype=bool)
        old[landing] = False
        for array, values in (
            (nbr, [v for v, _, _ in entries]),
            (self._eid, [e for _, e, _ in entries]),
        ):
            block = array[s:end]
            block[old] = array[s : s + n].copy()
            block[landing] = values

    def _places(
        self, s: int, n: int, entries: list[tuple[int, int, float]], *, hub: bool
    ) -> list[int]:
        """Where each entry goes in the block of ``n`` cells from ``s``, in block
        order (a hub's: weight descending, then name; a memory's: the neighbor's
        kind, then name): a binary search that reads only the cells it probes (a
        hub's block can hold a large share of the collection)."""
        names, kind, nbr, eid, weights = self._names, self._kind, self._nbr, self._eid, self._w

        def at(cell: int) -> tuple[float, str]:
            v = int(nbr[cell])
            first = -float(weights[eid[cell]]) if hub else float(kind[v])
            return first, names[v]

        places = []
        for neighbor, _, weight in entries:
            key = (-weight if hub else float(kind[neighbor]), names[neighbor])
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) // 2
                if at(s + mid) < key:
                    lo = mid + 1
                else:
                    hi = mid
            places.append(lo)
        return places

    def _remove(self, owner: int, e: int) -> None:
        s, n = int(self._start[owner]), int(self._len[owner])
        at = self._cell(owner, e)
        neighbor = int(self._nbr[at])
        self._nbr[at : s + n - 1] = self._nbr[at + 1 : s + n]
        self._eid[at : s + n - 1] = self._eid[at + 1 : s + n]
        self._len[owner] = n - 1
        if self._kind[owner] == MEMORY and self._kind[neighbor] == MEMORY:
            self._nassoc[owner] -= 1

    def _move_block(self, node: int, cap: int) -> None:
        """Give ``node`` a block of ``cap`` cells at the arena's end."""
        s, n = int(self._start[node]), int(self._len[node])
        top = self._top
        if top + cap > self._nbr.shape[0]:
            size = max(top + cap, 2 * self._nbr.shape[0], _MIN_ARENA)
            self._nbr = grown(self._nbr, size, 0)
            self._eid = grown(self._eid, size, 0)
        self._nbr[top : top + n] = self._nbr[s : s + n]
        self._eid[top : top + n] = self._eid[s : s + n]
        self._garbage += int(self._cap[node])
        self._start[node] = top
        self._cap[node] = cap
        self._top = top + cap

    def _maybe_compact(self) -> None:
        """Reclaim the holes moved blocks left, once they outweigh the live cells."""
        if self._garbage < max(_MIN_GARBAGE, self._top // 2):
            return
        nodes = np.flatnonzero(self._kind[: self._n_nodes] != FREE).astype(np.int64)
        counts = self._len[nodes]
        cells = segments(self._start[nodes], counts)
        owner = np.repeat(nodes, counts)
        neighbor = self._nbr[cells].astype(np.int64)
        self._layout(nodes, owner, neighbor, self._eid[cells].astype(np.int64))
        logger.debug("collection %s: graph arena compacted to %d cells", self.collection, self._top)

    def _resort_hubs(self, hubs: I64) -> None:
        """Restore the (weight descending, memory id) order of these hubs' blocks
        after many weights changed at once."""
        if hubs.shape[0] == 0:
            return
        counts = self._len[hubs]
        cells = segments(self._start[hubs], counts)
        group = np.repeat(np.arange(hubs.shape[0]), counts)
        neighbor = self._nbr[cells].astype(np.int64)
        edge = self._eid[cells].astype(np.int64)
        members = np.unique(neighbor).tolist()
        rank = np.zeros(self._n_nodes, dtype=np.int64)
        rank[sorted(members, key=self._names.__getitem__)] = np.arange(len(members))
        order = np.lexsort((rank[neighbor], -self._w[edge], group))
        self._nbr[cells] = neighbor[order]
        self._eid[cells] = edge[order]
