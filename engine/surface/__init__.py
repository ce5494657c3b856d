"""Proactive surfacing, in one package.

The pure parts: conversation state (``conversation``), the learned models
(``predict``), the seed's rules and the settings (``rules``), the metrics
(``metrics``) and what surfacing answers and keeps (``outcomes``). Over a
store: :class:`~hippocampus.surface.surfacer.Surfacer` (``surfacer``), which
the service's conversations use; importing this package does not load it."""

from hippocampus.surface.metrics import SurfaceMetrics
from hippocampus.surface.rules import CONVERSATION_TYPES, ENGAGEMENT_RULES, SurfaceConfig

__all__ = [
    "CONVERSATION_TYPES",
    "ENGAGEMENT_RULES",
    "SurfaceConfig",
    "SurfaceMetrics",
]
