"""Expansion over the in-memory graph: anchors merged, walked in groups that fit
the scratch, strengths summed per memory, the strongest picked, their paths read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hippocampus.model import RecallFilters
from hippocampus.model.association import Anchor, ExpandParams, Expansion, GraphPath
from hippocampus.store.embedded.graph_layout import (
    F64,
    FREE,
    I64,
    KIND_CODE,
    MEMORY,
    Mask,
    SlotSource,
)
from hippocampus.store.embedded.graph_paths import GraphPaths
from hippocampus.store.embedded.graph_walk import (
    SCRATCH,
    SCRATCH_CELLS,
    GraphWalk,
    SizedPool,
    Walked,
)

logger = logging.getLogger(__name__)


class GraphExpand(GraphWalk, GraphPaths):
    """Expansion from anchors: the walk, the pick and the paths together."""

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
            key = (KIND_CODE.get(anchor.kind, FREE), anchor.name)
            if key[0] == FREE:
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
                self._memory_node.get(name) if code == MEMORY else self._hub_node.get((code, name))
            )
            if node is not None:
                found.append((node, anchor))
        if not found:
            return []
        nn = self._n_nodes
        # All anchors share one scratch of nodes × anchors cells, unless that would
        # be too large (a very large collection); then they go in groups, and a
        # recall that wants paths walks each group a second time for them.
        size = max(1, min(len(found), SCRATCH_CELLS // max(nn, 1)))
        parts = [found[i : i + size] for i in range(0, len(found), size)]
        # Anchors are reached but never walked through: a path from one anchor via
        # another is the other's support, and must not count as a second anchor.
        buffers = TOTALS.take(nn)
        anchors = [node for node, _ in found]
        barrier = buffers.barrier[:nn]
        barrier[anchors] = True
        totals = _Totals(
            strength=buffers.strength[:nn],
            best=buffers.best[:nn],
            best_of=buffers.best_of[:nn],
            count=buffers.count[:nn],
        )
        reached: list[I64] = []
        clean = False
        try:
            expansions = self._walk_parts(
                found, parts, params, mask, paths, totals, barrier, reached
            )
            clean = True
            return expansions
        finally:
            # The buffers go back as they came, cleared where this expansion wrote
            # them; an expansion that failed half-way leaves them to the collector.
            if clean:
                touched = np.concatenate(reached) if reached else np.empty(0, dtype=np.int64)
                totals.strength[touched] = 0.0
                totals.best[touched] = 0.0
                totals.best_of[touched] = -1
                totals.count[touched] = 0
                barrier[anchors] = False
                TOTALS.give(buffers)

    def _walk_parts(
        self,
        found: list[tuple[int, Anchor]],
        parts: list[list[tuple[int, Anchor]]],
        params: ExpandParams,
        mask: Mask | None,
        paths: bool,
        totals: _Totals,
        barrier: Mask,
        reached: list[I64],
    ) -> list[Expansion]:
        """Walk the anchors ``found`` in ``parts``, summing into ``totals`` (clean
        when called) and listing in ``reached`` the nodes each part reached; pick
        the strongest and read their paths."""
        nn = self._n_nodes
        done = 0  # anchors of earlier parts
        walked: list[tuple[Walked, F64]] = []
        picked: list[int] = []
        # Whatever the grouping, a walk's totals are summed, and its scratch
        # cleared, from the cells it wrote: a walk reaches a small part of a
        # large graph (a million memories are grouped two anchors at a time, and
        # streaming each group's whole scratch cost most of a recall).
        for part in parts:
            scratch = SCRATCH.take(len(part) * nn)
            walk = self._walk(part, params, scratch, barrier, paths=paths and len(parts) == 1)
            reached.append(_add_touched(totals, walk, len(part), nn, done))
            if len(parts) == 1:
                picked = self._pick(totals.strength, params, mask, among=reached[0])
                if paths:
                    walked.append((walk, walk.grid[:, picked].T.copy()))
            walk.grid.reshape(-1)[walk.touched] = 0.0
            # Only a walk that got this far left the scratch clean.
            SCRATCH.give(scratch)
            done += len(part)
        if len(parts) > 1:
            among: I64 = np.unique(np.concatenate(reached))
            picked = self._pick(totals.strength, params, mask, among=among)
            for part in parts if paths and picked else ():
                scratch = SCRATCH.take(len(part) * nn)
                walk = self._walk(part, params, scratch, barrier, paths=True)
                walked.append((walk, walk.grid[:, picked].T.copy()))
                walk.grid.reshape(-1)[walk.touched] = 0.0
                SCRATCH.give(scratch)
        return self._expansions(found, picked, totals, walked if paths else None)

    def _expansions(
        self,
        found: list[tuple[int, Anchor]],
        picked: list[int],
        totals: _Totals,
        walked: list[tuple[Walked, F64]] | None,
    ) -> list[Expansion]:
        """The picked memories as expansions; with their paths from ``walked`` (the
        walks and their grids' rows of the picked memories) unless ``None``."""
        names = self._names
        strength, best, best_of, count = totals.strength, totals.best, totals.best_of, totals.count
        if walked is None:
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

    def _pick(
        self, strength: F64, params: ExpandParams, mask: Mask | None, among: I64 | None = None
    ) -> list[int]:
        """The memory nodes to return: reached (with a positive strength), passing
        the filter mask, the ``max_results`` strongest, by strength descending
        then id. ``among``: the only nodes that can have a strength (sorted)."""
        if among is None:
            candidates = np.flatnonzero((strength > 0.0) & (self._kind[: self._n_nodes] == MEMORY))
        else:
            candidates = among[(strength[among] > 0.0) & (self._kind[among] == MEMORY)]
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


class _Buffers:
    """Per-node arrays an expansion sums into, of room for ``size`` nodes. Between
    uses: ``barrier`` all false, ``strength``, ``best`` and ``count`` all zero,
    ``best_of`` all -1."""

    __slots__ = ("barrier", "best", "best_of", "count", "strength")

    def __init__(self, size: int) -> None:
        self.barrier: Mask = np.zeros(size, dtype=bool)
        self.strength: F64 = np.zeros(size, dtype=np.float64)
        self.best: F64 = np.zeros(size, dtype=np.float64)
        self.best_of: I64 = np.full(size, -1, dtype=np.int64)
        self.count: I64 = np.zeros(size, dtype=np.int64)

    @property
    def size(self) -> int:
        return int(self.strength.shape[0])


def _room_to_grow(size: int) -> _Buffers:
    # A graph gains nodes with every write.
    return _Buffers(size + size // 8)


# A recall reaches a small part of a large graph, and four fresh arrays of every
# node per recall (zeroed page by page as they were written) cost milliseconds at
# a million memories; pooled ones are cleared where a recall wrote them.
TOTALS: SizedPool[_Buffers] = SizedPool(_room_to_grow, keep=2)


@dataclass(frozen=True, slots=True)
class _Totals:
    """Per node, over the anchors walked so far: the summed ``strength``, the
    ``best`` single-anchor strength and which anchor gave it (``best_of``, an index
    into the anchors found; -1: none), and how many anchors reached it."""

    strength: F64
    best: F64
    best_of: I64
    count: I64


def _add_touched(totals: _Totals, walk: Walked, g: int, nn: int, done: int) -> I64:
    """Add one walk of ``g`` anchors (the first ``done`` anchors were walked
    before) to ``totals`` from the cells it wrote; return the nodes it reached,
    sorted."""
    # Only the cells the walk wrote can be non-zero: sum those per node
    # (in anchor order, as a dense sum over the anchors' rows would).
    cells = np.unique(walk.touched)
    flat = walk.grid.reshape(-1)
    value = flat[cells]
    cells, value = cells[value > 0.0], value[value > 0.0]
    strength, best, best_of, count = totals.strength, totals.best, totals.best_of, totals.count
    # Anchor by anchor, in order, so sums round exactly as the dense
    # sum over the anchors' rows would (ties depend on it).
    bounds = np.searchsorted(cells, np.arange(g + 1) * nn)
    for a in range(g):
        lo, hi = bounds[a], bounds[a + 1]
        nodes = cells[lo:hi] - a * nn
        strength[nodes] += value[lo:hi]
        better = value[lo:hi] > best[nodes]
        best[nodes[better]] = value[lo:hi][better]
        best_of[nodes[better]] = done + a
        count[nodes] += 1
    reached: I64 = np.unique(cells % nn)
    return reached
