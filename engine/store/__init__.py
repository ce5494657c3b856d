"""Storage backends behind the :class:`GraphStore` contract."""

from engine.store.base import GraphStore, LearnChange, Learned, MemoryRecord, StoreStats, Vector

__all__ = ["GraphStore", "LearnChange", "Learned", "MemoryRecord", "StoreStats", "Vector"]
