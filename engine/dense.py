"""Dense-vector scoring that the stores and retrieval share.

How a memory with passages scores against a query (:func:`passage_score`), and
how crowded a memory's neighbourhood is (:func:`crowding_of`). Ranking maths,
kept out of the store contract: the stores apply it where the vectors are, and
retrieval reads the same constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

PASSAGE_MARGIN = 0.15
"""How much better than its memory's own vector a later passage must match the
query to count: dense search scores a memory ``max(vector's similarity, best
passage's similarity - PASSAGE_MARGIN)``. A long memory has many passages, and
the best of many matches a query well by chance more often than one does: on
beam-100k's long assistant messages the plain maximum cost dense R@10 eight
points (short turns were crowded out), the margin nothing, and a passage that
answers the query clearly still lifts its memory."""


CROWDING_NEIGHBOURS = 50
"""How many nearest neighbours measure how crowded a memory's neighbourhood is
(:meth:`~hippocampus.store.GraphStore.crowding`)."""
CROWDING_SAMPLE = 512
"""How many of a collection's vectors, spread evenly over it, stand for the whole
collection when crowding is measured: a recall compares its candidates with
these, never with every memory."""


@dataclass(frozen=True)
class VectorSample:
    """Stored vectors of one model spread evenly over a collection (what
    :meth:`~hippocampus.store.GraphStore.crowding` measures against): the
    memories' ids, their vectors at unit length (one row each, in the order of
    ``ids``), and how many memories of the collection have a vector of that model
    (``total``; the sample is all of them when it is as long; a store that does
    not count them estimates it)."""

    ids: list[str]
    vectors: npt.NDArray[np.float32]
    total: int
    position: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", {mid: i for i, mid in enumerate(self.ids)})


def crowding_of(
    ids: Sequence[str], units: npt.NDArray[np.float32], sample: VectorSample, neighbours: int
) -> dict[str, float]:
    """The crowding of memories ``ids`` (their unit vectors the rows of ``units``):
    the mean similarity of each one's ``neighbours`` nearest other memories,
    estimated from ``sample``. When the sample holds s of the collection's n
    vectors, a memory's nearest ``round(neighbours × s / n)`` of the sample (at
    least one) stand for its nearest ``neighbours``. A memory is never its own
    neighbour; nothing is measured against a sample of fewer than two vectors."""
    size = len(sample.ids)
    if size < 2 or not ids or units.shape[1] != sample.vectors.shape[1]:
        return {}
    # Pair by pair in this thread, not by a BLAS matrix product: that hands the
    # work to BLAS's threads, which then spin on the cores the rest of the
    # recall needs (see engine.store.embedded.index.similarities).
    sims = np.vecdot(units[:, None, :], sample.vectors[None, :, :])
    for row, mid in enumerate(ids):
        column = sample.position.get(mid)
        if column is not None:
            sims[row, column] = -np.inf
    k = min(max(1, round(neighbours * size / max(sample.total, size))), size - 1)
    nearest = np.partition(sims, size - k, axis=1)[:, size - k :]
    return dict(zip(ids, nearest.mean(axis=1).tolist(), strict=True))


def passage_score(similarity: float, best_passage: float) -> float:
    """A memory's dense score from its vector's similarity and its best later
    passage's (see :data:`PASSAGE_MARGIN`)."""
    return max(similarity, best_passage - PASSAGE_MARGIN)
