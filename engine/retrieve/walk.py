"""Where the associative walk starts, and what the memories it reaches add to
the calibrated scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hippocampus.model.association import MEMORY_NODE, Expansion
from hippocampus.retrieve.config import SearchConfig
from hippocampus.retrieve.fusion import lifted, max_normalized, rrf, spread, top


def starts(direct: Mapping[str, float], config: SearchConfig) -> list[tuple[str, float]]:
    """The best direct matches, each anchoring with strength
    ``exp((score - best) / start_temperature)`` (1.0 without a temperature)."""
    ranked = top(direct, config.starts)
    if not ranked:
        return []
    best = ranked[0][1]
    temperature = config.start_temperature
    if temperature is None:
        return [(mid, 1.0) for mid, _ in ranked]
    return [(mid, math.exp((score - best) / temperature)) for mid, score in ranked]


def fused_starts(
    dense: Mapping[str, float], lexical: Mapping[str, float], config: SearchConfig
) -> list[tuple[str, float]]:
    """The memories expansion starts from, with their strengths."""
    if config.start_temperature is None or not dense:
        fused = rrf({"dense": dense, "lexical": lexical}, {"dense": 1.0, "lexical": 1.0})
        return top(max_normalized(fused), config.starts)
    return starts(dense, config)


def with_graph(
    direct: dict[str, float],
    dense: Mapping[str, float],
    graph: Mapping[str, float],
    expansions: Mapping[str, Expansion],
    config: SearchConfig,
) -> dict[str, float]:
    """Calibrated direct scores lifted by graph evidence, under the rule that a
    clearly better direct match (better by more than ``clear_margin`` spreads of
    similarity) is never passed on the strength of one anchor:

    - what the strongest single anchor gives is capped at that margin when the
      anchor is a hub the query names (the query's words are already counted
      by lexical search);
    - a memory reached from a direct match (a starting memory) stays below it
      unless it matches nearly as well itself;
    - every further anchor's path adds in full.

    A memory the graph alone found starts from its similarity (or the least
    direct score, without one)."""
    fused = dict(direct)
    if not graph:
        return fused
    # Without similarities (the query could not be embedded) the direct scores
    # are text scores, and their own spread sets the margin.
    d_spread = spread(dense, config.spread_top) or spread(direct, config.spread_top)
    margin = config.clear_margin * (d_spread.std if d_spread is not None else 0.0)
    floor = min(direct.values(), default=0.0)
    weight = config.weights.get("graph", 0.0)
    base = {mid: direct.get(mid, dense.get(mid, floor)) for mid in graph}
    from_start: dict[str, str] = {}
    for mid, strength in graph.items():
        e = expansions[mid]
        source = e.best_anchor
        if source is not None and source.kind == MEMORY_NODE:
            from_start[mid] = source.name
            cap = math.inf
        else:
            cap = margin
        fused[mid] = lifted(base[mid], strength, e.best, weight=weight, cap=cap)
    for mid, start in from_start.items():
        start_direct = direct.get(start)
        if start_direct is None or start_direct <= base[mid] + margin:
            continue
        e = expansions[mid]
        others = weight * max(0.0, e.strength - e.best)
        single = fused[mid] - others
        # Just below its start: a neighbour never passes the match that led to it.
        fused[mid] = min(single, math.nextafter(fused[start], -math.inf)) + others
    return fused


def credit_starts(
    fused: dict[str, float], starts: Sequence[tuple[str, float]], config: SearchConfig
) -> None:
    """Each of ``starts`` (the direct matches that anchored the walk, with their
    strengths) gains ``start_credit`` × the graph weight × its strength. The walk
    credits a memory for each anchor that reaches it, never an anchor for itself:
    without this a starting memory that no other anchor reaches falls behind any
    neighbour two of them share, however much better it matches. Updates ``fused`` in place."""
    credit = config.start_credit * config.weights.get("graph", 0.0)
    if credit <= 0.0:
        return
    for mid, strength in starts:
        if mid in fused:
            fused[mid] += credit * unit(strength)


def unit(value: float) -> float:
    """Clamp to (0, 1] as an anchor strength."""
    if math.isnan(value) or value <= 0.0:
        return 1e-6
    return min(1.0, value)
