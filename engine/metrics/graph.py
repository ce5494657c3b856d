"""Graph health: size, degree, clustering, components and weights, via networkx."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel

from engine.model import Edge, HubKind, target_kind

EXACT_CLUSTERING_MAX_NODES = 20_000
"""Above this many nodes the clustering coefficient is estimated by sampling."""


class GraphHealth(BaseModel):
    """How the memory graph is doing.

    Attributes:
        nodes: memories and hub nodes that have at least one edge, plus isolated memories.
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


def graph_health(edges: Iterable[Edge], memory_ids: Iterable[str], *, seed: int = 0) -> GraphHealth:
    """Measure the graph made of ``edges`` over the given memories."""
    import networkx as nx

    graph = nx.Graph()
    kinds: Counter[str] = Counter()
    for mid in memory_ids:
        graph.add_node(("Memory", mid))
        kinds["Memory"] += 1
    by_type: Counter[str] = Counter()
    weights: list[float] = []
    for edge in edges:
        target = (target_kind(edge.type), edge.target)
        if target not in graph:
            kinds[target[0]] += 1
        graph.add_edge(("Memory", edge.source), target)
        by_type[edge.type.value] += 1
        weights.append(edge.weight)
    n = graph.number_of_nodes()
    m = sum(by_type.values())
    sampled = n > EXACT_CLUSTERING_MAX_NODES
    if n == 0:
        clustering = 0.0
    elif sampled:
        from networkx.algorithms import approximation

        clustering = float(approximation.average_clustering(graph, trials=2000, seed=seed))
    else:
        clustering = float(nx.average_clustering(graph))
    components = [len(c) for c in nx.connected_components(graph)]
    histogram, _ = np.histogram(np.asarray(weights, dtype=float), bins=10, range=(0.0, 1.0))
    return GraphHealth(
        nodes=n,
        nodes_by_kind={k: kinds[k] for k in ["Memory", *(h.value for h in HubKind)] if kinds[k]},
        edges=m,
        edges_by_type=dict(sorted(by_type.items())),
        mean_degree=(2.0 * m / n) if n else 0.0,
        clustering=clustering,
        clustering_sampled=sampled,
        components=len(components),
        largest_component=max(components, default=0),
        weight_histogram=[int(x) for x in histogram],
    )
