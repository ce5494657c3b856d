"""Proactive surfacing's pure parts: conversation state, the learned models,
the seed's rules and the metrics. The orchestration over a store is
:mod:`hippocampus.surfacing`."""

from hippocampus.surface.metrics import SurfaceMetrics
from hippocampus.surface.rules import CONVERSATION_TYPES, ENGAGEMENT_RULES, SurfaceConfig

__all__ = [
    "CONVERSATION_TYPES",
    "ENGAGEMENT_RULES",
    "SurfaceConfig",
    "SurfaceMetrics",
]
