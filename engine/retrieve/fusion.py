"""Fusion and diversity: pure functions over candidate lists, no store.

Each signal (dense similarity, lexical BM25, graph path strength) arrives as a
mapping from memory id to score; fusion turns them into one ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt


def ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1-based rank of each id by descending score (ties by id, for determinism)."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return {mid: i for i, (mid, _) in enumerate(ordered, start=1)}


def rrf(
    signals: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
) -> dict[str, float]:
    """Reciprocal rank fusion: ``sum over signals of weight / (k + rank)``.

    Scale-free, so signals with incomparable scores (cosine, BM25, path
    strength) combine without calibration. A signal missing from ``weights``
    counts with weight 0.
    """
    fused: dict[str, float] = {}
    for name, scores in signals.items():
        weight = weights.get(name, 0.0)
        if weight == 0.0:
            continue
        for mid, rank in ranks(scores).items():
            fused[mid] = fused.get(mid, 0.0) + weight / (k + rank)
    return fused


def max_normalized(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores divided by the largest (so the best is 1.0); non-positive scores become 0."""
    top = max(scores.values(), default=0.0)
    if top <= 0.0:
        return {mid: 0.0 for mid in scores}
    return {mid: max(0.0, s) / top for mid, s in scores.items()}


def weighted(
    signals: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
    *,
    normalize: Sequence[str] = (),
) -> dict[str, float]:
    """Weighted sum of signals; those named in ``normalize`` are first scaled by
    :func:`max_normalized` (for unbounded ones such as BM25). An id absent from a
    signal scores 0 there."""
    fused: dict[str, float] = {}
    for name, scores in signals.items():
        weight = weights.get(name, 0.0)
        if weight == 0.0:
            continue
        values = max_normalized(scores) if name in normalize else scores
        for mid, score in values.items():
            fused[mid] = fused.get(mid, 0.0) + weight * score
    return fused


def seed_composite(similarity: float, quality: float, usefulness: float) -> float:
    """The seed's composite score: ``0.4·similarity + 0.3·quality + 0.3·usefulness``."""
    return 0.4 * similarity + 0.3 * quality + 0.3 * usefulness


def mmr(
    candidates: Sequence[str],
    relevance: Mapping[str, float],
    vectors: Mapping[str, npt.NDArray[np.float32]],
    *,
    lambda_: float,
    k: int,
) -> list[str]:
    """Maximal marginal relevance: pick ``k`` ids, each maximizing
    ``lambda·relevance − (1−lambda)·max cosine to those already picked``.

    Relevance is max-normalized first so it is on the cosine's scale. Candidates
    without a vector are never penalized for redundancy.
    """
    rel = max_normalized({c: relevance.get(c, 0.0) for c in candidates})
    picked: list[str] = []
    remaining = list(candidates)
    while remaining and len(picked) < k:
        best, best_score = remaining[0], -np.inf
        for c in remaining:
            redundancy = 0.0
            vc = vectors.get(c)
            if vc is not None and picked:
                sims = [float(vc @ vectors[p]) for p in picked if p in vectors]
                redundancy = max(sims, default=0.0)
            score = lambda_ * rel[c] - (1.0 - lambda_) * redundancy
            if score > best_score:
                best, best_score = c, score
        picked.append(best)
        remaining.remove(best)
    return picked
