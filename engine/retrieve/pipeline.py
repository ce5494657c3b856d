"""One recall: dense and lexical candidates, associative expansion, fusion.

The steps follow DESIGN.md "Retrieval": vector matches, the query's anchors
(its concepts and triggers matched to hub nodes by name, and hubs whose name
embedding is close to the query), expansion from anchors and starting memories through
weighted edges, the multi-path gate for associative-only results, fusion by
the chosen recipe, optional MMR.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Generic, TypeVar

import numpy as np

from hippocampus.extract import ConceptExtractor, Extraction
from hippocampus.model import HUB_EDGE, EdgeType, HubKind, Memory, RecallFilters, TimeWindow
from hippocampus.model.association import MEMORY_NODE, Anchor, Expansion, GraphPath, HubMatch
from hippocampus.retrieve.config import SearchConfig
from hippocampus.retrieve.fusion import (
    calibrated,
    corroboration,
    could_name_speaker,
    lifted,
    max_normalized,
    mmr,
    rrf,
    seed_composite,
    speakers_named,
    specific_terms,
    spread,
    top_overlap,
    uncorroborated_lean,
    weighted,
)
from hippocampus.retrieve.when import place, read_times, time_lifts
from hippocampus.store import GraphStore, Vector

T = TypeVar("T")


@dataclass
class Candidate:
    """A memory the recall considered, with every signal it got."""

    memory_id: str
    score: float = 0.0
    similarity: float | None = None
    lexical: float | None = None
    graph: float | None = None
    time: float | None = None
    paths: list[GraphPath] = field(default_factory=list)


@dataclass
class Retrieval:
    """What one recall found, the anchors it walked from (for learning), and the
    times its query names."""

    candidates: list[Candidate]
    hubs: list[HubMatch]
    memories: dict[str, Memory]
    times: list[TimeWindow] = field(default_factory=list)
    # How well similarity corroborated the query's best lexical matches
    # (hippocampus.retrieve.fusion.corroboration); None when not measured.
    corroboration: float | None = None


def query_hubs(
    store: GraphStore,
    extractor: ConceptExtractor,
    collection: str,
    query: str,
    query_vector: Vector | None,
    *,
    model: str,
    config: SearchConfig,
    extraction: Extraction | Future[Extraction] | None = None,
) -> list[HubMatch]:
    """Hub nodes the query is about: the concepts (and, if the config says so, the
    triggers) it names, then those whose name embedding is close to the query's.
    ``extraction``: what the query names, when the caller already knows it or is
    reading it on another thread (:func:`read_query`); else the extractor reads
    the query."""
    extraction = _settled(extraction)
    if extraction is None:
        extraction = extractor.extract_many([query])[0]
    concepts = _subphrases(extraction.concepts) if config.query_subphrases else extraction.concepts
    triggers = extraction.triggers if config.query_triggers else ()
    # A name anchors the hub of its own kind: the trigger "love" (from "loved")
    # says nothing about the concept "love".
    wanted = {(HubKind.CONCEPT.value, n) for n in concepts}
    wanted.update((HubKind.TRIGGER.value, n) for n in triggers)
    names = list(dict.fromkeys([*concepts, *triggers]))
    found = {
        (h.kind, h.name): h
        for h in (store.match_hubs(collection, names) if names else [])
        if (h.kind, h.name) in wanted
    }
    # A phrase's head is the same mention as the phrase: where the phrase's own
    # hub is found, its head's trigger is not a second anchor.
    heads = {
        c.rsplit(" ", 1)[1] for (kind, c) in found if kind == HubKind.CONCEPT.value and " " in c
    }
    found = {
        k: h for k, h in found.items() if not (k[0] == HubKind.TRIGGER.value and k[1] in heads)
    }
    if query_vector is not None and config.hub_matches > 0:
        for hub in store.search_hubs(
            collection,
            query_vector,
            model=model,
            k=config.hub_matches,
            min_similarity=config.hub_min_similarity,
        ):
            found.setdefault((hub.kind, hub.name), hub)
    # Domains are too broad to anchor a walk; they filter instead.
    return [h for h in found.values() if h.kind != HubKind.DOMAIN]


def retrieve(
    store: GraphStore,
    extractor: ConceptExtractor,
    collection: str,
    query: str,
    query_vector: Vector | None,
    *,
    model: str,
    config: SearchConfig,
    filters: RecallFilters,
    limit: int,
    now: datetime,
    explain: bool = False,
    extraction: Extraction | Future[Extraction] | None = None,
    pool: Executor | None = None,
    typical_corroboration: float | None = None,
) -> Retrieval:
    """Run one recall and return the ranked candidates (at most ``limit``); with
    ``explain``, each carries the graph paths that reached it. ``extraction``:
    what the query names, when the caller already knows it, or is reading it on
    another thread (see :func:`read_query`). ``pool``: where reads that do not
    wait on each other run beside the recall's own (a store over the network
    answers several at once): the text search and the query's hubs beside the
    dense search, crowding beside the similarities it is measured with, the
    results' memories beside their vectors. Without one, or when no worker
    picks a read up in time, the recall does each itself, one after the other;
    the results are the same. ``typical_corroboration``: the median
    corroboration of the collection's recent recalls, which the caller keeps
    from what each :class:`Retrieval` reports (see
    :attr:`SearchConfig.collection_uncorroborated`); ``None``: not known yet."""
    r = _Recall(
        store, collection, query, query_vector, model, config, filters, pool, explain
    )
    named = _search(r, extractor, extraction)
    if config.fusion == "calibrated":
        _calibrate(r, typical_corroboration)
    hubs = _walk(r, named) if named is not None else []
    if r.dense and query_vector is not None:
        # Memories the graph found beyond the dense candidates still have a
        # similarity to the query: fusion should see it, not a zero.
        missing = [mid for mid in r.graph if mid not in r.dense]
        if missing:
            if r.crowded is not None and pool is not None:
                r.crowded.measure_ahead(pool, missing)
            r.dense.update(store.similarities(collection, missing, query_vector, model=model))
    fused, times, lifts = _fuse(r, now)
    ordered = _order(r, fused, limit)
    candidates = [
        Candidate(
            memory_id=mid,
            score=fused[mid],
            similarity=r.dense.get(mid),
            lexical=r.lexical.get(mid),
            graph=r.graph.get(mid),
            time=lifts.get(mid),
            paths=r.expansions[mid].paths if mid in r.expansions else [],
        )
        for mid in ordered
    ]
    return Retrieval(
        candidates=candidates,
        hubs=hubs,
        memories=r.memories,
        times=times,
        corroboration=r.corroborated,
    )


@dataclass
class _Recall:
    """One recall as it goes: what it asks, and what each step found."""

    store: GraphStore
    collection: str
    query: str
    query_vector: Vector | None
    model: str
    config: SearchConfig
    filters: RecallFilters
    pool: Executor | None
    explain: bool
    dense: dict[str, float] = field(default_factory=dict)
    lexical: dict[str, float] = field(default_factory=dict)
    direct: dict[str, float] = field(default_factory=dict)
    # Memories read on the way (their speakers), handed on so none is read twice.
    memories: dict[str, Memory] = field(default_factory=dict)
    crowded: _Crowding | None = None
    corroborated: float | None = None
    lexical_weight: float = 0.0
    graph: dict[str, float] = field(default_factory=dict)
    expansions: dict[str, Expansion] = field(default_factory=dict)
    starts: list[tuple[str, float]] = field(default_factory=list)


def _search(
    r: _Recall, extractor: ConceptExtractor, extraction: Extraction | Future[Extraction] | None
) -> _Beside[list[HubMatch]] | None:
    """Dense and lexical search, with the query's hubs read beside them; returns
    the hubs' reading for the walk."""
    config, store, collection = r.config, r.store, r.collection
    searching = config.dense and r.query_vector is not None
    texts: _Beside[list[tuple[str, float]]] | None = None
    if config.lexical:
        texts = _Beside(
            r.pool if searching else None,
            partial(store.search_text, collection, r.query, k=config.candidates, filters=r.filters),
        )
    named: _Beside[list[HubMatch]] | None = None
    if config.graph:
        named = _Beside(
            r.pool,
            partial(
                query_hubs,
                store,
                extractor,
                collection,
                r.query,
                r.query_vector,
                model=r.model,
                config=config,
                extraction=extraction,
            ),
        )
    if searching:
        assert r.query_vector is not None
        r.dense = dict(
            store.search_vectors(
                collection, r.query_vector, model=r.model, k=config.candidates, filters=r.filters
            )
        )
    r.lexical = dict(texts.result()) if texts is not None else {}
    return named


def _calibrate(r: _Recall, typical_corroboration: float | None) -> None:
    """The calibrated direct scores: similarity (less crowding) and the lexical
    lead, weighted by how well similarity corroborates the words, then a turn's
    context and the speakers the query names."""
    config, store, collection, dense, lexical = r.config, r.store, r.collection, r.dense, r.lexical
    # Text matches outside the dense candidates have a similarity too.
    missing = [mid for mid in lexical if mid not in dense] if dense else []
    # Crowding needs only the ids: it is read while their similarities are.
    measuring = None
    if config.crowding > 0.0 and dense:
        ids = [*dense, *missing]
        measuring = _Beside(r.pool, partial(store.crowding, collection, ids, model=r.model))
    if missing:
        assert r.query_vector is not None
        dense.update(store.similarities(collection, missing, r.query_vector, model=r.model))
    if measuring is not None:
        r.crowded = _Crowding.measure(store, collection, r.model, dense, config, measuring)
    near = r.crowded.less if r.crowded is not None else _unchanged
    if config.uncorroborated > 0.0 or config.collection_uncorroborated > 0.0:
        r.corroborated = corroboration(dense, lexical, top=config.spread_top)
    r.lexical_weight = _lexical_weight(
        r.query, dense, lexical, config, r.corroborated, typical_corroboration
    )
    r.direct = calibrated(
        near(dense), lexical, lexical_weight=r.lexical_weight, top=config.spread_top
    )
    if config.turn_context > 0.0 and r.direct:
        _in_context(
            store, collection, r.model, r.direct, dense, r.query_vector, r.filters, config, near
        )
    if config.speaker_lean > 0.0 and r.direct:
        r.memories = _lean_to_speakers(store, collection, r.query, r.direct, near(dense), config)


def _walk(r: _Recall, named: _Beside[list[HubMatch]]) -> list[HubMatch]:
    """The walk from the query's hubs and the starting memories; what it reaches
    enters ``r.graph`` past the guard. Returns the hubs it walked from."""
    config = r.config
    hubs = named.result()
    anchors = [Anchor(kind=h.kind, name=h.name, strength=_unit(h.similarity)) for h in hubs]
    r.starts = _starts(r.direct, config) if r.direct else _fused_starts(r.dense, r.lexical, config)
    for mid, strength in r.starts:
        anchors.append(Anchor(kind=MEMORY_NODE, name=mid, strength=_unit(strength)))
    if not anchors:
        return hubs
    found = r.store.expand(
        r.collection, anchors, params=config.expand, filters=r.filters, paths=r.explain
    )
    for e in found:
        is_direct = e.memory_id in r.dense or e.memory_id in r.lexical
        # The seed's false-positive guard: one weak path alone surfaces nothing.
        if (
            is_direct
            or e.anchors >= config.min_anchor_paths
            or e.strength >= config.min_path_strength
        ):
            r.graph[e.memory_id] = e.strength
            r.expansions[e.memory_id] = e
    return hubs


def _fuse(
    r: _Recall, now: datetime
) -> tuple[dict[str, float], list[TimeWindow], dict[str, float]]:
    """Each candidate's score by the recipe's fusion; with the time lean, the
    windows the query names and what each memory gained by them."""
    config, dense, lexical, graph = r.config, r.dense, r.lexical, r.graph
    signals: dict[str, dict[str, float]] = {"dense": dense, "lexical": lexical, "graph": graph}
    if config.needs_metadata:
        found_ids = set(dense) | set(lexical) | set(graph)
        unread = sorted(mid for mid in found_ids if mid not in r.memories)
        r.memories = {**r.memories, **r.store.get_memories(r.collection, unread)}
        signals.update(_metadata_signals(r.memories, now, config))
    times: list[TimeWindow] = []
    lifts: dict[str, float] = {}
    if config.fusion == "calibrated":
        near = r.crowded.less if r.crowded is not None else _unchanged
        fused = _with_graph(r.direct, near(dense), graph, r.expansions, config)
        _credit_starts(fused, r.starts, config)
        if config.time_lean > 0.0 and fused:
            times, lifts = _lean_to_time(
                r.store, r.collection, r.query, fused, near(dense), r.memories, now, config,
                r.lexical_weight,
            )  # fmt: skip
    elif config.fusion == "rrf":
        fused = rrf(signals, config.weights, k=config.rrf_k)
    elif config.fusion == "weighted":
        fused = weighted(signals, config.weights, normalize=config.normalize)
    else:
        memories = r.memories
        fused = {
            mid: seed_composite(sim, _quality(memories[mid]), memories[mid].retrieval.usefulness)
            for mid, sim in dense.items()
            if mid in memories
        }
    return fused, times, lifts


def _order(r: _Recall, fused: dict[str, float], limit: int) -> list[str]:
    """The best ``limit`` by fused score; with variety (MMR), picked among three
    times as many, their memories read meanwhile."""
    config = r.config
    ordered = [mid for mid, _ in _top(fused, max(limit, 1) * (3 if config.mmr_lambda else 1))]
    if config.mmr_lambda is not None and ordered:
        # Whichever of them variety picks, its memory is read meanwhile.
        unread = [mid for mid in ordered if mid not in r.memories]
        reading = None
        if unread and r.pool is not None:
            reading = _Beside(r.pool, partial(r.store.get_memories, r.collection, unread))
        vectors = r.store.get_vectors(r.collection, ordered)
        ordered = mmr(ordered, fused, vectors, lambda_=config.mmr_lambda, k=limit)
        if reading is not None:
            r.memories = {**r.memories, **reading.result()}
    return ordered[:limit]


def read_query(pool: Executor, extractor: ConceptExtractor, query: str) -> Future[Extraction]:
    """Start reading what ``query`` names on ``pool``, for :func:`retrieve`. The
    reading (spaCy's tagger, a few milliseconds) then overlaps the query's
    embedding and dense search, which release the GIL; when no worker has
    picked it up by the time the walk needs it, the recall reads the query
    itself rather than wait in the queue."""
    return pool.submit(_read, extractor, query)


def _read(extractor: ConceptExtractor, query: str) -> Extraction:
    return extractor.extract_many([query])[0]


def _settled(extraction: Extraction | Future[Extraction] | None) -> Extraction | None:
    """What a reading started by :func:`read_query` found; ``None`` (read it here)
    when it never started."""
    if isinstance(extraction, Future):
        return None if extraction.cancel() else extraction.result()
    return extraction


class _Beside(Generic[T]):
    """A read started on a pool while the recall goes on with another, whose
    answer the recall takes when it needs it. One that no worker has started by
    then is withdrawn and done by the recall itself, rather than waited for in
    the queue; without a pool, it is done then. Read once: the answer is kept."""

    def __init__(self, pool: Executor | None, call: Callable[[], T]) -> None:
        self._call: Callable[[], T] | None = call
        self._future = pool.submit(call) if pool is not None else None
        self._answer: T

    def result(self) -> T:
        if self._call is not None:
            if self._future is not None and not self._future.cancel():
                self._answer = self._future.result()
            else:
                self._answer = self._call()
            self._call = None
        return self._answer


def hub_anchor_edges(hubs: list[HubMatch]) -> list[tuple[EdgeType, str]]:
    """The edge types and names linking a memory to the given hubs (for learning)."""
    return [(HUB_EDGE[HubKind(h.kind)], h.name) for h in hubs if h.kind in HUB_KINDS]


HUB_KINDS = frozenset(k.value for k in HubKind)


def _metadata_signals(
    memories: Mapping[str, Memory], now: datetime, config: SearchConfig
) -> dict[str, dict[str, float]]:
    half_life = config.recency_half_life_days * 86400.0
    recency = {
        mid: 0.5 ** (max(0.0, (now - m.updated_at).total_seconds()) / half_life)
        for mid, m in memories.items()
    }
    return {
        "confidence": {mid: m.retrieval.confidence for mid, m in memories.items()},
        "quality": {mid: _quality(m) for mid, m in memories.items()},
        "usefulness": {mid: m.retrieval.usefulness for mid, m in memories.items()},
        "recency": recency,
    }


def _quality(memory: Memory) -> float:
    q = memory.retrieval.quality_score
    return 0.5 if q is None else q


def _in_context(
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
    ranked = [mid for mid, _ in _top(direct, config.candidates)]
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


def _lean_to_speakers(
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
    found = store.get_memories(collection, [mid for mid, _ in _top(direct, config.candidates)])
    speakers = {m.speaker for m in found.values() if m.speaker}
    named = speakers_named(query, speakers) if len(speakers) > 1 else set()
    d_spread = spread(dense, config.spread_top) or spread(direct, config.spread_top)
    if named and named != speakers and d_spread is not None:
        lean = config.speaker_lean * d_spread.std
        for mid, memory in found.items():
            if memory.speaker in named:
                direct[mid] += lean
    return found


def _lean_to_time(
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
    best = dict(_top(fused, config.spread_top))
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


@dataclass
class _Crowding:
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
    # Memories whose crowding is being read ahead of need (measure_ahead).
    ahead: tuple[frozenset[str], _Beside[dict[str, float]]] | None = None

    @classmethod
    def measure(
        cls,
        store: GraphStore,
        collection: str,
        model: str,
        dense: Mapping[str, float],
        config: SearchConfig,
        measuring: _Beside[dict[str, float]],
    ) -> _Crowding | None:
        """The measure for a recall whose dense candidates are ``dense``; ``None``
        when the recipe does not weigh crowding, or the candidates or the
        collection are too few to tell crowded from not. ``measuring``: the
        crowding of every candidate (of more ids, at most), read beside."""
        d_spread = spread(dense, config.spread_top) if config.crowding > 0.0 else None
        if d_spread is None or d_spread.std <= 0.0:
            return None
        values: dict[str, float] = dict.fromkeys(dense, math.nan)
        values.update({m: v for m, v in measuring.result().items() if m in values})
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

    def measure_ahead(self, pool: Executor, ids: Sequence[str]) -> None:
        """Start reading the crowding of ``ids`` on ``pool``, for :meth:`less` to
        take those it comes to measure (the others are never used)."""
        wanted = [mid for mid in ids if mid not in self.values]
        if wanted:
            call = partial(self.store.crowding, self.collection, wanted, model=self.model)
            self.ahead = (frozenset(wanted), _Beside(pool, call))

    def less(self, similarities: Mapping[str, float]) -> dict[str, float]:
        """``similarities`` less each memory's crowding: ``cost`` for each standard
        deviation it stands above the candidates' mean (and gaining as much for
        each below). A memory without a vector keeps its score, and so does one
        less similar than every dense candidate (one the walk or its words found:
        it is not measured)."""
        unknown = [
            mid for mid, s in similarities.items() if s >= self.floor and mid not in self.values
        ]
        if unknown and self.ahead is not None:
            ids, reading = self.ahead
            if ids.intersection(unknown):
                ahead = reading.result()
                self.values.update({m: ahead.get(m, math.nan) for m in unknown if m in ids})
                unknown = [mid for mid in unknown if mid not in ids]
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


def _unchanged(similarities: Mapping[str, float]) -> dict[str, float]:
    return dict(similarities)


def _lexical_weight(
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


def _with_graph(
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


def _credit_starts(
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
            fused[mid] += credit * _unit(strength)


def _starts(direct: Mapping[str, float], config: SearchConfig) -> list[tuple[str, float]]:
    """The best direct matches, each anchoring with strength
    ``exp((score - best) / start_temperature)`` (1.0 without a temperature)."""
    top = _top(direct, config.starts)
    if not top:
        return []
    best = top[0][1]
    temperature = config.start_temperature
    if temperature is None:
        return [(mid, 1.0) for mid, _ in top]
    return [(mid, math.exp((score - best) / temperature)) for mid, score in top]


def _fused_starts(
    dense: Mapping[str, float], lexical: Mapping[str, float], config: SearchConfig
) -> list[tuple[str, float]]:
    """The memories expansion starts from, with their strengths."""
    if config.start_temperature is None or not dense:
        fused = rrf({"dense": dense, "lexical": lexical}, {"dense": 1.0, "lexical": 1.0})
        return _top(max_normalized(fused), config.starts)
    return _starts(dense, config)


def _subphrases(phrases: tuple[str, ...]) -> list[str]:
    """Each phrase and its contiguous word runs, longest first: a query about the
    "redis connection pool" is also about "connection pool" and "redis"."""
    out: list[str] = []
    for phrase in phrases:
        words = phrase.split()
        for size in range(len(words), 0, -1):
            out.extend(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    return out


def _top(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]


def _unit(value: float) -> float:
    """Clamp to (0, 1] as an anchor strength."""
    if math.isnan(value) or value <= 0.0:
        return 1e-6
    return min(1.0, value)
