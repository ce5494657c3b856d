"""The calibrated recipe's leans: how much the query's words weigh, and what a
turn's context, the speakers and the times the query names add to the scores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from hippocampus.model import Memory, RecallFilters, TimeWindow
from hippocampus.retrieve.config import SearchConfig
from hippocampus.retrieve.fusion import (
    could_name_speaker,
    speakers_named,
    specific_terms,
    spread,
    top,
    top_overlap,
    uncorroborated_lean,
)
from hippocampus.retrieve.when import place, read_times, time_lifts
from hippocampus.store import GraphStore, Vector


def lexical_weight(
    query: str,
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    config: SearchConfig,
    corroborated: float | None,
    typical: float | None,
) -> float:
    """The lexical weight for this query: the recipe's, leaning further toward
    words for each word that names something exactly (up to two), further the
    less dense and lexical search agree on their best matches, further still
    when similarity does not corroborate the query's best lexical matches
    (``corroborated``, against ``config.uncorroborated``), and again when it
    typically does not in this collection (``typical``, against
    ``config.collection_uncorroborated``)."""
    weight = config.weights.get("lexical", 0.0)
    weight += config.lexical_lean * min(specific_terms(query), 2)
    if config.lexical_disagreement > 0.0:
        weight *= 1.0 + config.lexical_disagreement * (1.0 - top_overlap(dense, lexical))
    weight *= uncorroborated_lean(corroborated, config.uncorroborated)
    weight *= uncorroborated_lean(typical, config.collection_uncorroborated)
    return weight


def in_context(
    store: GraphStore,
    collection: str,
    model: str,
    direct: dict[str, float],
    dense: dict[str, float],
    query_vector: Vector | None,
    filters: RecallFilters,
    config: SearchConfig,
    near: Callable[[Mapping[str, float]], dict[str, float]],
) -> None:
    """Conversation turns matched with the turn that followed them: each of the
    best direct matches (as many as dense search returns candidates), and the
    turn just before each of the best ``spread_top`` (added to the candidates
    when it passes the filters), gains ``turn_context`` × its successor's lead
    over the weakest dense candidate. Memories outside any conversation are left
    as they are. Similarities count as ``near`` makes them (less crowding).
    Updates ``direct`` (and ``dense``, for the turns added) in place."""
    floor = min(near(dense).values(), default=min(direct.values()))
    ranked = [mid for mid, _ in top(direct, config.candidates)]
    around = store.neighbour_turns(collection, ranked, before=1, after=1)
    if not around:
        return
    leading = set(ranked[: config.spread_top])
    successor: dict[str, str] = {}
    for mid, (before, after) in around.items():
        if after:
            successor[mid] = after[0]
        if before and mid in leading and before[-1] not in direct:
            successor[before[-1]] = mid
    fresh = [mid for mid in successor if mid not in direct]
    if fresh:
        admitted = store.get_memories(collection, fresh)
        for mid in fresh:
            if mid not in admitted or not filters.admits(admitted[mid]):
                del successor[mid]
    involved = {*successor, *successor.values()}
    unknown = [n for n in involved if n not in direct and n not in dense]
    if unknown and query_vector is not None:
        dense.update(store.similarities(collection, unknown, query_vector, model=model))
    similar = near({mid: dense[mid] for mid in involved if mid in dense})
    scores = {mid: direct.get(mid, similar.get(mid, floor)) for mid in involved}
    for mid, nxt in successor.items():
        direct[mid] = scores[mid] + config.turn_context * max(0.0, scores[nxt] - floor)


def lean_to_speakers(
    store: GraphStore,
    collection: str,
    query: str,
    direct: dict[str, float],
    dense: Mapping[str, float],
    config: SearchConfig,
) -> dict[str, Memory]:
    """Turns said by a speaker the query names gain ``speaker_lean`` spreads of
    similarity. Only when the query has a word that could name one (a name, a
    role, or the first person), the candidates come from more than one speaker,
    and the query names some of those speakers but not all of them. Updates
    ``direct`` in place.

    Returns:
        The candidates it read to learn their speakers (none when the query
        names nobody), for the recall to use rather than read again.
    """
    if not could_name_speaker(query):
        return {}
    found = store.get_memories(collection, [mid for mid, _ in top(direct, config.candidates)])
    speakers = {m.speaker for m in found.values() if m.speaker}
    named = speakers_named(query, speakers) if len(speakers) > 1 else set()
    d_spread = spread(dense, config.spread_top) or spread(direct, config.spread_top)
    if named and named != speakers and d_spread is not None:
        lean = config.speaker_lean * d_spread.std
        for mid, memory in found.items():
            if memory.speaker in named:
                direct[mid] += lean
    return found


def lean_to_time(
    store: GraphStore,
    collection: str,
    query: str,
    fused: dict[str, float],
    dense: Mapping[str, float],
    memories: dict[str, Memory],
    now: datetime,
    config: SearchConfig,
    lexical_weight: float,
) -> tuple[list[TimeWindow], dict[str, float]]:
    """The best ``spread_top`` candidates that occurred within a time the query
    names gain its lead (:func:`hippocampus.retrieve.when.time_lifts`), weighed as the
    query's words are: a standard deviation of it is worth ``time_lean`` ×
    ``lexical_weight`` spreads of the query's best similarities. Those
    candidates' dates also place a month or weekday named without a year.
    They are read, and added to ``memories``. Updates ``fused`` in place.

    Returns:
        The times placed, and what each memory gained.
    """
    mentions = read_times(query)
    d_spread = spread(dense, config.spread_top) or spread(fused, config.spread_top)
    if not mentions or d_spread is None:
        return [], {}
    best = dict(top(fused, config.spread_top))
    unread = [mid for mid in best if mid not in memories]
    if unread:
        memories.update(store.get_memories(collection, unread))
    occurred = {mid: memories[mid].occurred_at for mid in best if mid in memories}
    times = place(mentions, now, list(occurred.values()))
    unit = config.time_lean * lexical_weight * d_spread.std
    lifts = time_lifts(times, best, occurred, unit)
    for mid, lift in lifts.items():
        fused[mid] += lift
    return times, lifts
