"""Graph health: size, degree, clustering, components and weights.

Computed from each edge's ends, type and weight (``GraphStore.iter_edge_ends``)
and the number of memories: nodes become integers as the edges stream in, and
the figures come from numpy arrays and a sparse adjacency matrix (scipy), so a
graph of 100k memories and 1.5M edges takes seconds and a few hundred MiB, not
the half a minute and gigabytes a networkx graph of it took. Small graphs get
their clustering coefficient exactly (networkx's, on at most
:data:`EXACT_CLUSTERING_MAX_NODES` nodes); large ones an estimate by sampling.

The figures are costly at scale, so ``/stats`` shows the structural ones as last
computed, with their age (:class:`CachedGraphHealth`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from hippocampus.model import EdgeType, HubKind, target_kind

EXACT_CLUSTERING_MAX_NODES = 20_000
"""Above this many nodes the clustering coefficient is estimated by sampling."""
CLUSTERING_TRIALS = 2_000
"""Sampled wedges of the estimate: its standard error is at most 0.011."""

_KIND_OF: dict[str, str] = {t.value: target_kind(t) for t in EdgeType}


class GraphHealth(BaseModel):
    """How the memory graph is doing.

    Attributes:
        nodes: memories (with edges or not) and hub nodes.
        nodes_by_kind: Memory, Domain, Trigger, Concept counts.
        edges_by_type: counts per relationship type.
        mean_degree: 2·edges / nodes.
        clustering: average clustering coefficient (sampled on large graphs).
        clustering_sampled: whether ``clustering`` is an estimate.
        components: connected components (isolated memories count as one each).
        largest_component: nodes in the biggest one.
        weight_histogram: edge counts per weight bucket [0, 0.1), … [0.9, 1.0].
    """

    nodes: int
    nodes_by_kind: dict[str, int]
    edges: int
    edges_by_type: dict[str, int]
    mean_degree: float
    clustering: float
    clustering_sampled: bool
    components: int
    largest_component: int
    weight_histogram: list[int]


class CachedGraphHealth(GraphHealth):
    """Graph health as ``/stats`` shows it: the counts (nodes, edges, mean degree)
    as they are now, the structural figures (clustering, components, largest
    component, weight histogram) as computed at ``computed_at``.

    Attributes:
        computed_at: when the structural figures were computed.
        age_s: how long ago that was, in seconds.
        took_s: how long computing them took.
    """

    computed_at: datetime
    age_s: float = Field(ge=0.0)
    took_s: float = Field(ge=0.0)


def graph_health(
    edges: Iterable[tuple[str, str, str, float]], memories: int, *, random_seed: int = 0
) -> GraphHealth:
    """Measure the graph of ``edges`` (``(source, type, target, weight)``, each
    edge once) over a collection of ``memories`` memories (those no edge touches
    are isolated nodes)."""
    ids: dict[tuple[str, str], int] = {}
    kinds: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    sources: list[int] = []
    targets: list[int] = []
    weights: list[float] = []
    for source, edge_type, target, weight in edges:
        a = ids.get(("Memory", source))
        if a is None:
            a = ids[("Memory", source)] = len(ids)
            kinds["Memory"] += 1
        kind = _KIND_OF[edge_type]
        b = ids.get((kind, target))
        if b is None:
            b = ids[(kind, target)] = len(ids)
            kinds[kind] += 1
        sources.append(a)
        targets.append(b)
        by_type[edge_type] += 1
        weights.append(weight)
    linked = len(ids)
    # Memories no edge touches (a memory id read from an edge is one of them).
    isolated = max(0, memories - kinds["Memory"])
    kinds["Memory"] += isolated
    n = linked + isolated
    m = len(weights)
    adjacency = _simple_graph(np.asarray(sources, np.int64), np.asarray(targets, np.int64), linked)
    del sources, targets
    sampled = n > EXACT_CLUSTERING_MAX_NODES
    if n == 0:
        clustering = 0.0
    elif sampled:
        clustering = _sampled_clustering(adjacency, n, random_seed)
    else:
        clustering = _exact_clustering(adjacency, n)
    components, largest = _components(adjacency, isolated)
    histogram, _ = np.histogram(np.asarray(weights, dtype=float), bins=10, range=(0.0, 1.0))
    return GraphHealth(
        nodes=n,
        nodes_by_kind={k: kinds[k] for k in ["Memory", *(h.value for h in HubKind)] if kinds[k]},
        edges=m,
        edges_by_type=dict(sorted(by_type.items())),
        mean_degree=(2.0 * m / n) if n else 0.0,
        clustering=clustering,
        clustering_sampled=sampled,
        components=components,
        largest_component=largest,
        weight_histogram=[int(x) for x in histogram],
    )


Adjacency = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]
"""A simple undirected graph as CSR: ``indptr`` (n + 1) and sorted ``indices``."""


def _simple_graph(
    sources: npt.NDArray[np.int64], targets: npt.NDArray[np.int64], n: int
) -> Adjacency:
    """The undirected simple graph of the edges over nodes ``0 .. n - 1``: edges of
    several types between two nodes count once (as networkx's Graph has them),
    each neighbour list sorted."""
    low, high = np.minimum(sources, targets), np.maximum(sources, targets)
    keys = np.unique(low[low != high] * max(n, 1) + high[low != high])
    a, b = keys // max(n, 1), keys % max(n, 1)
    rows = np.concatenate([a, b])
    cols = np.concatenate([b, a])
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols


def _components(adjacency: Adjacency, isolated: int) -> tuple[int, int]:
    """Connected components and the size of the largest, the isolated memories
    counted as one each."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    indptr, indices = adjacency
    n = indptr.shape[0] - 1
    if n == 0:
        return isolated, 1 if isolated else 0
    matrix = csr_array((np.ones(indices.shape[0], dtype=np.int8), indices, indptr), shape=(n, n))
    count, labels = connected_components(matrix, directed=False)
    largest = int(np.bincount(labels).max())
    return int(count) + isolated, max(largest, 1 if isolated else 0)


def _exact_clustering(adjacency: Adjacency, n: int) -> float:
    """The average clustering coefficient over ``n`` nodes (the adjacency's, then
    isolated ones at 0), exactly: networkx's, on a graph small enough for it."""
    import networkx as nx

    indptr, indices = adjacency
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    upper = rows < indices
    graph.add_edges_from(zip(rows[upper].tolist(), indices[upper].tolist(), strict=True))
    return float(nx.average_clustering(graph))


def _sampled_clustering(adjacency: Adjacency, n: int, seed: int) -> float:
    """The average clustering coefficient estimated as networkx's
    ``approximation.average_clustering`` does it: pick a node at random (of all
    ``n``), two of its neighbours at random, and count how often those two are
    linked (a node with fewer than two neighbours counts as not)."""
    indptr, indices = adjacency
    linked = indptr.shape[0] - 1
    rng = np.random.default_rng(seed)
    nodes = rng.integers(0, n, size=CLUSTERING_TRIALS)
    nodes = nodes[nodes < linked]  # the isolated ones close no triangle
    degree = indptr[nodes + 1] - indptr[nodes]
    nodes, degree = nodes[degree >= 2], degree[degree >= 2]
    if nodes.size == 0:
        return 0.0
    first = rng.integers(0, degree)
    second = rng.integers(0, degree - 1)
    second = second + (second >= first)  # two distinct neighbours
    j = indices[indptr[nodes] + first]
    k = indices[indptr[nodes] + second]
    # Each (row, column) of the adjacency as one sorted key: a pair is linked when
    # its key is there.
    rows = np.repeat(np.arange(linked, dtype=np.int64), np.diff(indptr))
    keys = rows * linked + indices
    wanted = j * linked + k
    at = np.minimum(np.searchsorted(keys, wanted), keys.shape[0] - 1)
    return float(np.count_nonzero(keys[at] == wanted)) / CLUSTERING_TRIALS
