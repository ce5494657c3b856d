"""Storage backends behind the :class:`GraphStore` contract."""

from hippocampus.store.base import (
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
