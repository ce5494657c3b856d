"""Storage backends behind the :class:`GraphStore` contract."""

from engine.store.base import EdgeEnds, GraphStore, MemoryRecord, StoreStats, Vector

__all__ = ["EdgeEnds", "GraphStore", "MemoryRecord", "StoreStats", "Vector"]
