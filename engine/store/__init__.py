"""Storage backends behind the :class:`GraphStore` contract."""

from engine.store.base import (
    EdgeEnds,
    GraphStore,
    LearnChange,
    Learned,
    MemoryRecord,
    StoreStats,
    Vector,
)

__all__ = [
    "EdgeEnds",
    "GraphStore",
    "LearnChange",
    "Learned",
    "MemoryRecord",
    "StoreStats",
    "Vector",
]
