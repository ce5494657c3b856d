"""Storage backends behind the :class:`GraphStore` contract."""

from engine.store.base import GraphStore, MemoryRecord, StoreStats, Vector

__all__ = ["GraphStore", "MemoryRecord", "StoreStats", "Vector"]
