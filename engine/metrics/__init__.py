"""Measures of the engine: graph health now; surfacing metrics later."""

from engine.metrics.graph import CachedGraphHealth, GraphHealth, graph_health

__all__ = ["CachedGraphHealth", "GraphHealth", "graph_health"]
