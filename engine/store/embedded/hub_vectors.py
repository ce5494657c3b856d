"""Name embeddings of one collection's hub nodes, for matching query phrases to hubs.

Exact brute-force cosine, one partition per embedding model, like the memory vector
index: a collection has a few thousand hubs at most, so one matrix-vector product
answers a search in well under a millisecond.
"""

from __future__ import annotations

import logging

import numpy as np
import numpy.typing as npt

from hippocampus.store.embedded.index import similarities, top_k
from hippocampus.store.records import Vector

logger = logging.getLogger(__name__)

HubKey = tuple[str, str]
"""A hub as ``(kind, name)``."""

_MIN_CAPACITY = 64


class _Partition:
    """The normalized name vectors of one model, in capacity-doubling rows.

    Removal swaps the last row into the hole, so ``vectors[:n]`` stays dense.
    """

    __slots__ = ("dim", "keys", "row_of", "vectors")

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vectors: npt.NDArray[np.float32] = np.empty((_MIN_CAPACITY, dim), dtype=np.float32)
        self.keys: list[HubKey] = []
        self.row_of: dict[HubKey, int] = {}

    def put(self, key: HubKey, unit: Vector) -> None:
        row = self.row_of.get(key)
        if row is None:
            row = len(self.keys)
            if row == self.vectors.shape[0]:
                grown = np.empty((row * 2, self.dim), dtype=np.float32)
                grown[:row] = self.vectors[:row]
                self.vectors = grown
            self.keys.append(key)
            self.row_of[key] = row
        self.vectors[row] = unit

    def remove(self, key: HubKey) -> None:
        row = self.row_of.pop(key)
        last = len(self.keys) - 1
        if row != last:
            moved = self.keys[last]
            self.vectors[row] = self.vectors[last]
            self.keys[row] = moved
            self.row_of[moved] = row
        self.keys.pop()


class HubVectors:
    """Hub name vectors of one collection, by model. Each hub has at most one vector
    (of one model) at a time, as in the ``hubs`` table.

    Not locked here: the owning :class:`~hippocampus.store.embedded.graph.CollectionGraph`
    guards it with its own lock.
    """

    def __init__(self) -> None:
        self._parts: dict[str, _Partition] = {}
        self._model_of: dict[HubKey, str] = {}

    def __len__(self) -> int:
        return len(self._model_of)

    def model_of(self, key: HubKey) -> str | None:
        """The model of the hub's vector, ``None`` without one."""
        return self._model_of.get(key)

    def dim_of(self, model: str) -> int | None:
        """The dimension of ``model``'s hub vectors, ``None`` before the first one."""
        part = self._parts.get(model)
        return part.dim if part is not None else None

    def put(self, key: HubKey, vector: Vector, model: str) -> None:
        """Set the hub's vector, replacing any of another model. A vector whose
        dimension differs from the model's current one starts the model afresh (the
        store clears the other vectors of that model in SQLite at the same time)."""
        unit = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(unit))
        if norm > 0.0:
            unit = unit / np.float32(norm)
        self.remove(key)
        part = self._parts.get(model)
        if part is not None and part.dim != unit.shape[0]:
            for other in part.keys:
                del self._model_of[other]
            part = None
        if part is None:
            part = self._parts[model] = _Partition(unit.shape[0])
        part.put(key, unit)
        self._model_of[key] = model

    def remove(self, key: HubKey) -> None:
        """Forget the hub's vector (no-op without one)."""
        model = self._model_of.pop(key, None)
        if model is None:
            return
        part = self._parts[model]
        part.remove(key)
        if not part.keys:
            del self._parts[model]

    def search(
        self, query: Vector, model: str, k: int, min_similarity: float
    ) -> list[tuple[HubKey, float]]:
        """Up to ``k`` hubs whose ``model`` vector has cosine ≥ ``min_similarity`` with
        ``query``; best first, ties by (kind, name)."""
        part = self._parts.get(model)
        if part is None or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != part.dim:
            logger.warning(
                "a %d-d query cannot search %s's %d-d hub vectors", q.shape[0], model, part.dim
            )
            return []
        norm = float(np.linalg.norm(q))
        if norm == 0.0 or not np.isfinite(norm):
            return []
        n = len(part.keys)
        scores = np.clip(similarities(part.vectors[:n], q / np.float32(norm)), -1.0, 1.0)
        scores[scores < np.float32(min_similarity)] = -np.inf
        top = top_k(scores, k)
        if top.size == k:
            # Every row tied with the k-th joins, so that the tie is broken by name.
            top = np.union1d(top, np.flatnonzero(scores == scores[top[-1]]))
        found = [(part.keys[r], float(scores[r])) for r in top.tolist()]
        found.sort(key=lambda hit: (-hit[1], hit[0]))
        return found[:k]

    def entries(self) -> list[tuple[HubKey, str]]:
        """Every ``((kind, name), model)`` held (for checks and tests)."""
        return sorted(self._model_of.items())
