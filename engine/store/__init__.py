"""Storage backends behind the :class:`GraphStore` contract (:mod:`.roles`)."""

from hippocampus.store.records import (
    EdgeEnds,
    LearnChange,
    Learned,
    MemoryRecord,
    StoreStats,
    Vector,
)
from hippocampus.store.roles import (
    AdminRole,
    EventRole,
    GraphRole,
    GraphStore,
    HubRole,
    LearningRole,
    MemoryRole,
    StateRole,
    TextRole,
    VectorRole,
)

__all__ = [
    "AdminRole",
    "EdgeEnds",
    "EventRole",
    "GraphRole",
    "GraphStore",
    "HubRole",
    "LearnChange",
    "Learned",
    "LearningRole",
    "MemoryRecord",
    "MemoryRole",
    "StateRole",
    "StoreStats",
    "TextRole",
    "Vector",
    "VectorRole",
]
