"""The in-memory graph of one collection: weighted adjacency and associative expansion.

SQLite holds the edges; this mirror is built from it when a collection is first used
and updated by every write, in commit order, under the store's write lock. It keeps
every memory (edges or not), every hub, and the edges expansion walks: IN_DOMAIN,
HAS_TRIGGER and ABOUT between a memory and a hub, ASSOCIATED between two memories.
CONFLICTS_WITH, SUPERSEDES and SYNTHESIZED_FROM are not walked and live in SQLite
only.

The graph's storage is :mod:`~hippocampus.store.embedded.graph_layout`; the walk
(:mod:`~hippocampus.store.embedded.graph_walk`) processes all anchors together, one
hop at a time, with dense per-(anchor, node) scratch arrays borrowed from a small
pool; expansion (:mod:`~hippocampus.store.embedded.graph_expand`) sums and picks
what it reached, and :mod:`~hippocampus.store.embedded.graph_paths` reads back the
paths. See :meth:`CollectionGraph.expand` for the exact rules.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from itertools import islice, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from hippocampus.learn.rules import reinforced_weight
from hippocampus.model import EdgeType
from hippocampus.store.embedded.graph_expand import GraphExpand
from hippocampus.store.embedded.graph_layout import (
    EDGE_TO,
    EDGE_TYPE_CODES,
    F64,
    FREE,
    I64,
    KIND_CODE,
    KINDS,
    MEMORY,
    WALKED_EDGES,
    SlotSource,
)

__all__ = [
    "EDGE_TYPE_CODES",
    "WALKED_EDGES",
    "CollectionGraph",
    "EdgeReinforcement",
    "SlotSource",
    "WalkEdge",
    "reinforced",
]

logger = logging.getLogger(__name__)


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


class CollectionGraph(GraphExpand):
    """Adjacency of one collection's memories and hubs, and expansion over it.

    Thread safety: expansion and other reads hold a shared lock and run side by
    side; each mutator holds it exclusively. The store serializes the mutators
    behind its write lock and calls them after the matching SQLite commit.
    """

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        collection: str,
        slots: SlotSource,
        edges: Iterable[tuple[str, int, str, float, int]],
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
        a, b, w, u, hub_keys, hub_node = _resolve_edges(collection, memory_node, edges)
        n = n_memories + len(hub_keys)
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

        graph._lay_out_blocks(n_memories, a, b, w)
        for kind, name, blob, model in hub_vectors:
            key = (KIND_CODE.get(kind, FREE), name)
            if key in hub_node:
                graph.hub_vectors.put((kind, name), np.frombuffer(blob, dtype=np.float32), model)
        return graph

    def _lay_out_blocks(self, n_memories: int, a: I64, b: I64, w: F64) -> None:
        """Lay out the arena of a graph being built: nodes are numbered, the first
        ``n_memories`` memories; edge ``i`` joins ``a[i]`` and ``b[i]`` with
        weight ``w[i]``."""
        n, e, names = self._n_nodes, a.shape[0], self._names
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
        self._len = counts
        self._nassoc = np.bincount(
            owner[(owner < n_memories) & (neighbor < n_memories)], minlength=n
        ).astype(np.int64)
        self._layout(np.arange(n, dtype=np.int64), owner, neighbor, edge)

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
        return (KIND_CODE.get(kind, FREE), name) in self._hub_node

    def hub_degrees(self, names: Sequence[str]) -> list[tuple[str, str, int]]:
        """``(kind, name, degree)`` of every hub whose name is among ``names``, in the
        order of ``names`` then of kinds; degree is the memories linked."""
        found = []
        with self._lock.read():
            for name in dict.fromkeys(names):
                for code in range(1, len(KINDS)):
                    node = self._hub_node.get((code, name))
                    if node is not None:
                        found.append((KINDS[code], name, int(self._len[node])))
        return found

    def hub_degree(self, kind: str, name: str) -> int | None:
        """Memories linked to the hub; ``None`` when there is no such hub."""
        with self._lock.read():
            node = self._hub_node.get((KIND_CODE.get(kind, FREE), name))
            return int(self._len[node]) if node is not None else None

    def search_hub_vectors(
        self, query: npt.NDArray[np.float32], model: str, k: int, min_similarity: float
    ) -> list[tuple[str, str, float, int]]:
        """``(kind, name, similarity, degree)`` of the hubs whose name vector is
        closest to ``query``; best first."""
        with self._lock.read():
            hits = self.hub_vectors.search(query, model, k, min_similarity)
            return [
                (kind, name, similarity, int(self._len[self._hub_node[(KIND_CODE[kind], name)]]))
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
                if code == MEMORY and target < source:
                    source, target = target, source
                found.append(
                    (source, EDGE_TO[code].value, target, float(self._w[e]), int(self._used[e]))
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
                if code == FREE:
                    continue
                s, n = int(self._start[node]), int(self._len[node])
                assert n <= self._cap[node] and s + n <= self._top
                nbrs = self._nbr[s : s + n].tolist()
                eids = self._eid[s : s + n].tolist()
                for e in eids:
                    seen[e] = seen.get(e, 0) + 1
                keys: list[tuple[float, str]]
                if code == MEMORY:
                    keys = [(float(self._kind[v]), names[v]) for v in nbrs]
                    assert int(self._nassoc[node]) == sum(1 for k, _ in keys if k == MEMORY)
                else:
                    keys = [(-float(self._w[e]), names[v]) for v, e in zip(nbrs, eids, strict=True)]
                assert keys == sorted(keys), f"block of {names[node]!r} out of order"
                assert len(set(nbrs)) == n
            live = [e for e in range(self._n_edges) if self._a[e] >= 0]
            assert all(seen.get(e) == 2 for e in live) and len(seen) == len(live)

    # -- writing (the store serializes callers) -----------------------------------------

    def add_memories(
        self, memory_ids: Sequence[str], edges: Sequence[WalkEdge], slots: SlotSource
    ) -> None:
        """Add new memories, then upsert ``edges`` (as :meth:`put_edges`)."""
        with self._lock.write():
            if self._slot_source is not slots:
                self._sync_slots(slots)
            fresh = [memory_id for memory_id in memory_ids if memory_id not in self._memory_node]
            nodes = frozenset(
                self._new_node(MEMORY, memory_id, slot)
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
            # Memory blocks keep their order; hubs' follow their weights.
            self._resort_hubs(np.unique(ends[self._kind[ends] != MEMORY]))
            return int(hit.shape[0])

    def put_hub_vector(
        self, kind: str, name: str, vector: npt.NDArray[np.float32], model: str
    ) -> None:
        """Set a hub's name vector (the store checked the hub exists)."""
        with self._lock.write():
            self.hub_vectors.put((kind, name), vector, model)

    # -- internals --------------------------------------------------------------------

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


def _resolve_edges(
    collection: str,
    memory_node: dict[str, int],
    edges: Iterable[tuple[str, int, str, float, int]],
) -> tuple[I64, I64, F64, I64, list[tuple[int, str]], dict[tuple[int, str], int]]:
    """The ends, weights and last uses of the edges of a graph being built (see
    :meth:`CollectionGraph.build`), its memories numbered by ``memory_node``, and
    the hubs the edges name as ``(kind code, name)``, in (kind, name) order, with
    their nodes: hub ``i`` is node ``len(memory_node) + i``. Edges whose ends are
    unknown, and memory edges from a memory to itself, are left out.

    The rows are read :data:`_EDGE_CHUNK` at a time and turned into arrays at
    once: at a million memories (15M edges) rows held all together as tuples
    took gigabytes. Hubs are numbered as they come, then renumbered in order."""
    n_memories = len(memory_node)
    first_seen: dict[tuple[int, str], int] = {}
    parts: list[tuple[I64, I64, npt.NDArray[np.bool_], F64, I64]] = []
    rows_iter = iter(edges)
    while chunk := list(islice(rows_iter, _EDGE_CHUNK)):
        parts.append(_edge_chunk(chunk, memory_node, first_seen))
    hub_keys = sorted(first_seen)
    hub_node = {key: n_memories + i for i, key in enumerate(hub_keys)}
    # Hubs by first sight -> their node in (kind, name) order.
    renumber = np.empty(len(first_seen), dtype=np.int64)
    renumber[list(first_seen.values())] = [hub_node[key] for key in first_seen]
    empty = np.empty(0, dtype=np.int64)
    a = np.concatenate([p[0] for p in parts]) if parts else empty
    b = np.concatenate([p[1] for p in parts]) if parts else empty
    to_hub = np.concatenate([p[2] for p in parts]) if parts else empty.astype(bool)
    w = np.concatenate([p[3] for p in parts]) if parts else empty.astype(np.float64)
    u = np.concatenate([p[4] for p in parts]) if parts else empty
    b[to_hub] = renumber[b[to_hub]]
    keep = (a >= 0) & (b >= 0) & (a != b)
    dropped = a.shape[0] - int(keep.sum())
    if dropped:
        logger.warning(
            "collection %s: %d stored edges name no known memory and are not walked",
            collection,
            dropped,
        )
    return a[keep], b[keep], w[keep], u[keep], hub_keys, hub_node


_EDGE_CHUNK = 100_000
"""Edge rows read and turned into arrays at once while a graph is built."""


def _edge_chunk(
    edges: Sequence[tuple[str, int, str, float, int]],
    memory_node: dict[str, int],
    first_seen: dict[tuple[int, str], int],
) -> tuple[I64, I64, npt.NDArray[np.bool_], F64, I64]:
    """One chunk of edge rows as arrays: source node, target (a memory's node,
    or for a hub its number by first sight, recorded in ``first_seen``), whether
    the target is a hub, weight and last use."""
    m = len(edges)
    # One column at a time with itemgetter: far cheaper than zip(*rows).
    sources, codes, targets, weights, used = (
        list(map(itemgetter(column), edges)) for column in range(5)
    )
    code = np.fromiter(codes, dtype=np.int8, count=m)
    a = np.fromiter(map(memory_node.get, sources, repeat(-1)), dtype=np.int64, count=m)
    to_memory = code == MEMORY
    b = np.full(m, -1, dtype=np.int64)
    rows = np.flatnonzero(to_memory)
    b[rows] = np.fromiter(
        map(memory_node.get, (targets[r] for r in rows.tolist()), repeat(-1)), np.int64, rows.size
    )
    rows = np.flatnonzero(~to_memory)
    numbered = []
    for r in rows.tolist():
        key = (codes[r], targets[r])
        found = first_seen.get(key)
        if found is None:
            found = first_seen[key] = len(first_seen)
        numbered.append(found)
    b[rows] = numbered
    w = np.asarray(weights, dtype=np.float64)
    u = np.asarray(used, dtype=np.int64)
    return a, b, ~to_memory, w, u
