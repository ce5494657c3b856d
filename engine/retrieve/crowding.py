"""Crowding: how much of a memory's similarity comes from sitting in a crowded
part of the vector space (see :attr:`SearchConfig.crowding`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from hippocampus.retrieve.config import SearchConfig
from hippocampus.retrieve.fusion import spread
from hippocampus.store import GraphStore


@dataclass
class Crowding:
    """One recall's measure of crowding (see :attr:`SearchConfig.crowding`): what
    a standard deviation of crowding, among the dense candidates, costs in
    similarity, and the crowding of each memory measured so far (NaN: none)."""

    store: GraphStore
    collection: str
    model: str
    floor: float
    cost: float
    mean: float
    std: float
    values: dict[str, float]

    @classmethod
    def measure(
        cls,
        store: GraphStore,
        collection: str,
        model: str,
        dense: Mapping[str, float],
        config: SearchConfig,
        measuring: Callable[[], dict[str, float]],
    ) -> Crowding | None:
        """The measure for a recall whose dense candidates are ``dense``; ``None``
        when the recipe does not weigh crowding, or the candidates or the
        collection are too few to tell crowded from not. ``measuring`` reads the
        crowding of every candidate (of more ids, at most), when it is needed."""
        d_spread = spread(dense, config.spread_top) if config.crowding > 0.0 else None
        if d_spread is None or d_spread.std <= 0.0:
            return None
        values: dict[str, float] = dict.fromkeys(dense, math.nan)
        values.update({m: v for m, v in measuring().items() if m in values})
        known = np.asarray([v for v in values.values() if not math.isnan(v)], dtype=np.float64)
        if known.size < 3 or known.std() <= 0.0:
            return None
        return cls(
            store=store,
            collection=collection,
            model=model,
            floor=min(dense.values()),
            cost=config.crowding * d_spread.std,
            mean=float(known.mean()),
            std=float(known.std()),
            values=values,
        )

    def less(self, similarities: Mapping[str, float]) -> dict[str, float]:
        """``similarities`` less each memory's crowding: ``cost`` for each standard
        deviation it stands above the candidates' mean (and gaining as much for
        each below). A memory without a vector keeps its score, and so does one
        less similar than every dense candidate (one the walk or its words found:
        it is not measured)."""
        unknown = [
            mid for mid, s in similarities.items() if s >= self.floor and mid not in self.values
        ]
        if unknown:
            measured = self.store.crowding(self.collection, unknown, model=self.model)
            # NaN: looked for and not measurable (no vector of the model).
            self.values.update({mid: measured.get(mid, math.nan) for mid in unknown})
        out = dict(similarities)
        for mid, s in similarities.items():
            value = self.values.get(mid, math.nan)
            if not math.isnan(value):
                out[mid] = s - self.cost * (value - self.mean) / self.std
        return out


def unchanged(similarities: Mapping[str, float]) -> dict[str, float]:
    return dict(similarities)
