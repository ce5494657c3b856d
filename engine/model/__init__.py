"""Pydantic data: memories, edges, recall shapes. No I/O here."""

from engine.model.association import (
    MEMORY_NODE,
    Anchor,
    EdgeUpdate,
    ExpandParams,
    Expansion,
    GraphPath,
    HubMatch,
    PathStep,
)
from engine.model.event import Event
from engine.model.graph import (
    HUB_EDGE,
    HUB_OF_EDGE,
    MEMORY_EDGES,
    Edge,
    EdgeType,
    HubKind,
    target_kind,
)
from engine.model.memory import (
    KNOWN_CATEGORIES,
    Memory,
    MemoryPatch,
    NewMemory,
    RetrievalMeta,
    Review,
    Tier,
    content_hash,
    faded_dismissals,
    normalize_content,
    utcnow,
)
from engine.model.recall import RecallFilters, RecallHit, RecallResult, SurfacedBefore
from engine.model.resource import Resource

__all__ = [
    "HUB_EDGE",
    "HUB_OF_EDGE",
    "KNOWN_CATEGORIES",
    "MEMORY_EDGES",
    "MEMORY_NODE",
    "Anchor",
    "Edge",
    "EdgeType",
    "EdgeUpdate",
    "Event",
    "ExpandParams",
    "Expansion",
    "GraphPath",
    "HubKind",
    "HubMatch",
    "Memory",
    "MemoryPatch",
    "NewMemory",
    "PathStep",
    "RecallFilters",
    "RecallHit",
    "RecallResult",
    "Resource",
    "RetrievalMeta",
    "Review",
    "SurfacedBefore",
    "Tier",
    "content_hash",
    "faded_dismissals",
    "normalize_content",
    "target_kind",
    "utcnow",
]
