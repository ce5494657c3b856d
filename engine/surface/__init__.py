"""Proactive surfacing: conversation state, learned prediction, gates, engagement."""

from engine.surface.engine import (
    ConversationView,
    EngagementOutcome,
    Gate,
    Insight,
    MessageOutcome,
    Surfacer,
)
from engine.surface.metrics import SurfaceMetrics
from engine.surface.rules import CONVERSATION_TYPES, ENGAGEMENT_RULES, SurfaceConfig

__all__ = [
    "CONVERSATION_TYPES",
    "ENGAGEMENT_RULES",
    "ConversationView",
    "EngagementOutcome",
    "Gate",
    "Insight",
    "MessageOutcome",
    "SurfaceConfig",
    "SurfaceMetrics",
    "Surfacer",
]
