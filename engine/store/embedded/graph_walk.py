"""The walk of the in-memory graph: hop-bounded max-product relaxation from many
anchors at once, over dense per-(anchor, node) scratch arrays borrowed from a
small pool. :meth:`~hippocampus.store.embedded.graph.CollectionGraph.expand`
states the rules it follows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from hippocampus.model.association import Anchor, ExpandParams
from hippocampus.store.embedded.graph_layout import (
    F64,
    I32,
    I64,
    MEMORY,
    GraphLayout,
    Mask,
    segments,
)

_NO_WIN = np.iinfo(np.int64).max
SCRATCH_CELLS = 1 << 22  # (anchor, node) cells per walk, 20 bytes each: 80 MiB at most
_POOLED_SCRATCH = 2


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


_Pooled = TypeVar("_Pooled", bound=_Sized)


@dataclass(frozen=True, slots=True)
class States:
    """The paths an expansion kept, as arrays: state ``i`` reached ``node[i]`` from
    anchor ``anchor[i]`` (its position in the group) with strength ``value[i]``,
    over an edge of ``weight[i]`` from state ``parent[i]`` (-1: the anchor itself)."""

    node: I64
    anchor: I64
    value: F64
    parent: I64
    weight: F64


@dataclass(frozen=True, slots=True)
class Ends:
    """The last hop's candidates: reaching ``node`` from ``anchor`` with ``value``
    over an edge of ``weight`` from state ``parent``."""

    node: I64
    anchor: I64
    value: F64
    parent: I64
    weight: F64

    @classmethod
    def empty(cls) -> Ends:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none, np.zeros(0), none, np.zeros(0))


@dataclass(frozen=True, slots=True)
class Walked:
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
    states: States
    current: Mask
    ends: Ends
    touched: I64


class Scratch:
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


class SizedPool(Generic[_Pooled]):
    """A few work arrays shared by all graphs: expansions run concurrently, and a
    set per thread would pin tens of MB per idle worker thread. ``take`` lends
    one of at least a size (made by ``make`` when none is free); ``give`` takes
    it back, keeping the ``keep`` largest."""

    def __init__(self, make: Callable[[int], _Pooled], keep: int) -> None:
        self._make = make
        self._keep = keep
        self._lock = threading.Lock()
        self._free: list[_Pooled] = []

    def take(self, size: int) -> _Pooled:
        with self._lock:
            for i, pooled in enumerate(self._free):
                if pooled.size >= size:
                    return self._free.pop(i)
        return self._make(size)

    def give(self, pooled: _Pooled) -> None:
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(pooled)
            else:
                smallest = min(range(len(self._free)), key=lambda i: self._free[i].size)
                if self._free[smallest].size < pooled.size:
                    self._free[smallest] = pooled


SCRATCH: SizedPool[Scratch] = SizedPool(Scratch, _POOLED_SCRATCH)


def strongest(anchor: I64, value: F64, g: int, limit: int) -> I64:
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


def degree_factors(degree: I64, params: ExpandParams) -> F64:
    if params.hub_degree_mode == "inverse":
        return 1.0 / np.maximum(degree, 1).astype(np.float64)
    # log(1 + x), not log1p: the Neo4j store's Cypher has only log(), and equal
    # paths must stay equal to the last bit in both stores, or ties (and so
    # frontiers and fan-outs) would break differently.
    return 1.0 / (1.0 + np.log(1.0 + degree / params.hub_degree_pivot))


def degree_factor(degree: int, params: ExpandParams) -> float:
    """The damping a hub of ``degree`` memories applies to paths through it
    (computed as the walk does, to the last bit)."""
    return float(degree_factors(np.array([degree], dtype=np.int64), params)[0])


class GraphWalk(GraphLayout):
    """The walk over a graph's layout, for its expansion."""

    def _walk(
        self,
        part: list[tuple[int, Anchor]],
        params: ExpandParams,
        scratch: Scratch,
        barrier: Mask,
        *,
        paths: bool,
    ) -> Walked:
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
        best, ref = scratch.best, scratch.ref
        start, arena_nbr, arena_eid, edge_w = self._start, self._nbr, self._eid, self._w

        anchor_ids = np.arange(g, dtype=np.int64)
        keys = anchor_ids * nn + nodes
        kept = _Kept(
            node=[nodes],
            anchor=[anchor_ids],
            value=[strengths],
            parent=[np.full(g, -1, dtype=np.int64)],
            weight=[np.zeros(g)],
            touched=[keys],
            n_states=g,
            f_state=anchor_ids,
            f_node=nodes,
            f_anchor=anchor_ids,
            f_value=strengths,
        )
        best[keys] = strengths
        ref[keys] = anchor_ids
        end = Ends.empty()

        for hop in range(1, params.max_depth + 1):
            last = hop == params.max_depth
            fanned = self._fan_out(kept.f_node, kept.f_value, params, last=last)
            if fanned is None:
                break
            counts, step = fanned
            # Per-candidate copies of frontier values by repeat, not by gathering
            # through an owner index: repeat streams, a gather does not.
            cells = segments(start[kept.f_node], counts)
            neighbor = arena_nbr[cells].astype(np.int64)
            weight = edge_w[arena_eid[cells]]
            value = np.repeat(step, counts) * weight
            key = np.repeat(kept.f_anchor * nn, counts) + neighbor
            if last:
                np.maximum.at(best, key, value)
                kept.touched.append(key)
                if paths:
                    anchor = np.repeat(kept.f_anchor, counts)
                    end = Ends(neighbor, anchor, value, np.repeat(kept.f_state, counts), weight)
                break
            candidates = (neighbor, weight, value, key)
            if not _advance(kept, scratch, barrier, counts, candidates, g, params.frontier):
                break
        return _walked(part, kept, scratch, keys, end, nn, paths=paths)

    def _fan_out(
        self, f_node: I64, f_value: F64, params: ExpandParams, *, last: bool
    ) -> tuple[I64, F64] | None:
        """How many entries of each frontier node's block the hop reads, and the
        strength each step from it carries before the edge weight; ``None`` when
        the hop reads nothing."""
        kind, length, nassoc = self._kind, self._len, self._nassoc
        hub = kind[f_node] != MEMORY
        degree = length[f_node]
        counts = np.where(hub, np.minimum(degree, params.hub_fanout), degree)
        if params.max_hub_degree is not None:
            # A hub too common to say anything about any one of its members
            # is not walked through, with or without the penalty (the Neo4j
            # store skips it alike).
            counts = np.where(hub & (degree > params.max_hub_degree), 0, counts)
        if params.hub_degree_penalty:
            factors = degree_factors(degree, params)
            # A hub whose factor makes every path through it negligible is
            # not walked through (the Neo4j store skips it alike).
            counts = np.where(hub & (factors < params.hub_min_factor), 0, counts)
        if last:
            # Only memories are results: from a memory, only its ASSOCIATED
            # edges (first in its block) can still reach one.
            counts = np.where(hub, counts, nassoc[f_node])
        if not counts.any():
            return None
        step = f_value * params.damping
        if params.hub_degree_penalty:
            step = np.where(hub, step * factors, step)
        return counts, step


@dataclass(slots=True)
class _Kept:
    """What a walk keeps from hop to hop: its states so far, in pieces (one per
    hop, concatenated into :class:`States` at the end), every scratch cell it
    wrote, and its frontier: the states (``f_state``, at ``f_node`` from
    ``f_anchor`` with ``f_value``) the next hop steps from."""

    node: list[I64]
    anchor: list[I64]
    value: list[F64]
    parent: list[I64]
    weight: list[F64]
    touched: list[I64]
    n_states: int
    f_state: I64
    f_node: I64
    f_anchor: I64
    f_value: F64


def _advance(
    kept: _Kept,
    scratch: Scratch,
    barrier: Mask,
    counts: I64,
    candidates: tuple[I64, F64, F64, I64],
    g: int,
    frontier: int,
) -> bool:
    """Take one hop's ``(neighbor, weight, value, key)`` candidates, ``counts`` per
    frontier node: the cells they improve get their maximum, and the first
    candidate reaching it as a new state; the next frontier is drawn from those.
    Returns whether any cell improved (else the walk is over)."""
    best, ref, win = scratch.best, scratch.ref, scratch.win
    neighbor, weight, value, key = candidates
    owner = np.repeat(np.arange(kept.f_node.shape[0], dtype=np.int64), counts)
    anchor = kept.f_anchor[owner]
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
        return False
    np.maximum.at(best, key, value)
    kept.touched.append(key)
    pos = np.flatnonzero(value == best[key])
    won = key[pos]
    np.minimum.at(win, won, pos)
    pos = pos[win[won] == pos]
    win[won] = _NO_WIN
    # One new state per improved cell, in candidate (discovery) order.
    n_states = kept.n_states
    new = np.arange(n_states, n_states + pos.shape[0], dtype=np.int64)
    ref[key[pos]] = new
    node_new, anchor_new, value_new = neighbor[pos], anchor[pos], value[pos]
    kept.node.append(node_new)
    kept.anchor.append(anchor_new)
    kept.value.append(value_new)
    kept.parent.append(kept.f_state[owner[pos]])
    kept.weight.append(weight[pos])
    kept.n_states = n_states + pos.shape[0]
    onward = np.flatnonzero(~barrier[node_new])
    chosen = onward[strongest(anchor_new[onward], value_new[onward], g, frontier)]
    kept.f_state, kept.f_node = new[chosen], node_new[chosen]
    kept.f_anchor, kept.f_value = anchor_new[chosen], value_new[chosen]
    return True


def _walked(
    part: list[tuple[int, Anchor]],
    kept: _Kept,
    scratch: Scratch,
    keys: I64,
    end: Ends,
    nn: int,
    *,
    paths: bool,
) -> Walked:
    """The walk's result, its scratch still holding the best strengths (the
    anchors' own cells cleared)."""
    best, ref = scratch.best, scratch.ref
    g = len(part)
    states = States(
        node=np.concatenate(kept.node),
        anchor=np.concatenate(kept.anchor),
        value=np.concatenate(kept.value),
        parent=np.concatenate(kept.parent),
        weight=np.concatenate(kept.weight),
    )
    # Which states still hold their cell's best path: only paths need it.
    current = (
        ref[states.anchor * nn + states.node] == np.arange(kept.n_states)
        if paths
        else np.zeros(0, dtype=bool)
    )
    # An anchor's own cell holds its starting strength: never its result.
    best[keys] = 0.0
    return Walked(
        anchors=[anchor for _, anchor in part],
        grid=best[: nn * g].reshape(g, nn),
        states=states,
        current=current,
        ends=end,
        touched=np.concatenate(kept.touched),
    )
