"""Measures of the engine: graph health now; surfacing metrics later."""

from hippocampus.metrics.graph import CachedGraphHealth, GraphHealth, graph_health

__all__ = ["CachedGraphHealth", "GraphHealth", "graph_health"]
