"""Measures of the engine: graph health now; surfacing metrics later."""

from engine.metrics.graph import GraphHealth, graph_health

__all__ = ["GraphHealth", "graph_health"]
