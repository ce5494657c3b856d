"""Proactive surfacing, in one package.

The pure parts: conversation state (``conversation``), the learned models
(``predict``), the seed's rules and the settings (``rules``), the metrics
(``metrics``), what surfacing answers and keeps (``outcomes``) and which
memories a message offers, and why (``offers``). Over a store:
:class:`~hippocampus.surface.surfacer.Surfacer` (``surfacer``), which the
service's conversations use, with the batched writes of learned state
(``learning``) and what an engagement writes (``engagement``); importing this
package does not load them."""

from hippocampus.surface.metrics import SurfaceMetrics
from hippocampus.surface.rules import CONVERSATION_TYPES, ENGAGEMENT_RULES, SurfaceConfig

__all__ = [
    "CONVERSATION_TYPES",
    "ENGAGEMENT_RULES",
    "SurfaceConfig",
    "SurfaceMetrics",
]
