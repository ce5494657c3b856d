"""Graph health from edge ends, against networkx computing the same figures."""

from __future__ import annotations

import random
from collections import Counter

import networkx as nx
import pytest

from hippocampus.metrics import graph as graph_module
from hippocampus.metrics import graph_health
from hippocampus.model import EdgeType, target_kind

TYPES = [
    EdgeType.ABOUT,
    EdgeType.IN_DOMAIN,
    EdgeType.HAS_TRIGGER,
    EdgeType.ASSOCIATED,
    EdgeType.NEXT,
    EdgeType.CONFLICTS_WITH,
]


def _random_graph(
    seed: int, memories: int, hubs: int, edges: int
) -> list[tuple[str, str, str, float]]:
    rng = random.Random(seed)
    found = set()
    for _ in range(edges):
        edge_type = rng.choice(TYPES)
        source = f"m{rng.randrange(memories)}"
        if edge_type in (EdgeType.ABOUT, EdgeType.IN_DOMAIN, EdgeType.HAS_TRIGGER):
            target = f"h{rng.randrange(hubs)}"
        else:
            target = f"m{rng.randrange(memories)}"
            if target == source:
                continue
        found.add((source, edge_type.value, target, round(rng.random(), 2)))
    # Each (source, type, target) once, as a store holds them.
    unique = {(s, t, g): w for s, t, g, w in sorted(found)}
    return [(s, t, g, w) for (s, t, g), w in sorted(unique.items())]


def _networkx(edges: list[tuple[str, str, str, float]], memories: int) -> nx.Graph:
    graph = nx.Graph()
    graph.add_nodes_from(("Memory", f"m{i}") for i in range(memories))
    for source, edge_type, target, _ in edges:
        graph.add_edge(("Memory", source), (target_kind(EdgeType(edge_type)), target))
    return graph


@pytest.mark.parametrize("seed", range(4))
def test_figures_match_networkx_on_the_same_graph(seed: int) -> None:
    edges = _random_graph(seed, memories=300, hubs=40, edges=900)
    health = graph_health(edges, 320)  # 20 memories no edge touches, at least
    graph = _networkx(edges, 320)
    kinds = Counter(kind for kind, _ in graph.nodes)
    assert health.nodes == graph.number_of_nodes()
    assert health.nodes_by_kind == {k: n for k, n in kinds.items()}
    assert health.edges == len(edges)
    assert health.edges_by_type == dict(sorted(Counter(t for _, t, _, _ in edges).items()))
    assert health.mean_degree == pytest.approx(2 * len(edges) / graph.number_of_nodes())
    components = [len(c) for c in nx.connected_components(graph)]
    assert (health.components, health.largest_component) == (len(components), max(components))
    assert not health.clustering_sampled
    assert health.clustering == pytest.approx(nx.average_clustering(graph))
    assert sum(health.weight_histogram) == len(edges)


def test_a_large_graph_gets_an_estimate_close_to_the_exact_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edges = _random_graph(9, memories=2_000, hubs=60, edges=12_000)
    exact = nx.average_clustering(_networkx(edges, 2_000))
    monkeypatch.setattr(graph_module, "EXACT_CLUSTERING_MAX_NODES", 10)
    health = graph_health(edges, 2_000)
    assert health.clustering_sampled
    # The estimate's standard error is at most 0.011 (2,000 trials).
    assert health.clustering == pytest.approx(exact, abs=0.04)
    assert graph_health(edges, 2_000) == health  # seeded: the same every time


def test_an_empty_collection_and_one_without_edges() -> None:
    empty = graph_health([], 0)
    assert (empty.nodes, empty.edges, empty.components, empty.largest_component) == (0, 0, 0, 0)
    assert empty.clustering == 0.0 and empty.mean_degree == 0.0
    loose = graph_health([], 5)
    assert loose.nodes_by_kind == {"Memory": 5}
    assert (loose.components, loose.largest_component) == (5, 1)
