"""One recall: dense and lexical candidates, associative expansion, fusion.

The steps (docs/recall.md, "The default, step by step"): vector matches, the query's anchors
(its concepts and triggers matched to hub nodes by name, and hubs whose name
embedding is close to the query), expansion from anchors and starting memories through
weighted edges, the multi-path gate for associative-only results, fusion by
the chosen recipe, optional MMR.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from hippocampus.extract import ConceptExtractor, Extraction
from hippocampus.model import HUB_EDGE, EdgeType, HubKind, Memory, RecallFilters, TimeWindow
from hippocampus.model.association import MEMORY_NODE, Anchor, Expansion, GraphPath, HubMatch
from hippocampus.retrieve.beside import Beside
from hippocampus.retrieve.config import SearchConfig
from hippocampus.retrieve.crowding import Crowding, unchanged
from hippocampus.retrieve.fusion import (
    calibrated,
    corroboration,
    mmr,
    rrf,
    seed_composite,
    top,
    weighted,
)
from hippocampus.retrieve.leans import in_context, lean_to_speakers, lean_to_time, lexical_weight
from hippocampus.retrieve.walk import credit_starts, fused_starts, starts, unit, with_graph
from hippocampus.store import GraphStore, Vector


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
    dense search, the results' memories beside their vectors. Without one, or
    when no worker picks a read up in time, the recall does each itself, one
    after the other; the results are the same. Crowding is read after the
    similarities of the same memories, never beside them: a store over the
    network hands it the vectors it has just read for them (see
    :meth:`~hippocampus.store.GraphStore.crowding`). ``typical_corroboration``:
    the median corroboration of the collection's recent recalls, which the
    caller keeps from what each :class:`Retrieval` reports (see
    :attr:`SearchConfig.collection_uncorroborated`); ``None``: not known yet."""
    r = _Recall(store, collection, query, query_vector, model, config, filters, pool, explain)
    named = _search(r, extractor, extraction)
    if config.fusion == "calibrated":
        _calibrate(r, typical_corroboration)
    hubs = _walk(r, named) if named is not None else []
    if r.dense and query_vector is not None:
        # Memories the graph found beyond the dense candidates still have a
        # similarity to the query: fusion should see it, not a zero.
        missing = [mid for mid in r.graph if mid not in r.dense]
        if missing:
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
    crowded: Crowding | None = None
    corroborated: float | None = None
    lexical_weight: float = 0.0
    graph: dict[str, float] = field(default_factory=dict)
    expansions: dict[str, Expansion] = field(default_factory=dict)
    starts: list[tuple[str, float]] = field(default_factory=list)


def _search(
    r: _Recall, extractor: ConceptExtractor, extraction: Extraction | Future[Extraction] | None
) -> Beside[list[HubMatch]] | None:
    """Dense and lexical search, with the query's hubs read beside them; returns
    the hubs' reading for the walk."""
    config, store, collection = r.config, r.store, r.collection
    searching = config.dense and r.query_vector is not None
    texts: Beside[list[tuple[str, float]]] | None = None
    if config.lexical:
        texts = Beside(
            r.pool if searching else None,
            partial(store.search_text, collection, r.query, k=config.candidates, filters=r.filters),
        )
    named: Beside[list[HubMatch]] | None = None
    if config.graph:
        named = Beside(
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
    ids = [*dense, *missing]
    if missing:
        assert r.query_vector is not None
        dense.update(store.similarities(collection, missing, r.query_vector, model=r.model))
    # Crowding after the similarities, not beside them (see retrieve()).
    if config.crowding > 0.0 and dense:
        measuring = partial(store.crowding, collection, ids, model=r.model)
        r.crowded = Crowding.measure(store, collection, r.model, dense, config, measuring)
    near = r.crowded.less if r.crowded is not None else unchanged
    if config.uncorroborated > 0.0 or config.collection_uncorroborated > 0.0:
        r.corroborated = corroboration(dense, lexical, top=config.spread_top)
    r.lexical_weight = lexical_weight(
        r.query, dense, lexical, config, r.corroborated, typical_corroboration
    )
    r.direct = calibrated(
        near(dense), lexical, lexical_weight=r.lexical_weight, top=config.spread_top
    )
    if config.turn_context > 0.0 and r.direct:
        in_context(
            store, collection, r.model, r.direct, dense, r.query_vector, r.filters, config, near
        )
    if config.speaker_lean > 0.0 and r.direct:
        r.memories = lean_to_speakers(store, collection, r.query, r.direct, near(dense), config)


def _walk(r: _Recall, named: Beside[list[HubMatch]]) -> list[HubMatch]:
    """The walk from the query's hubs and the starting memories; what it reaches
    enters ``r.graph`` past the guard. Returns the hubs it walked from."""
    config = r.config
    hubs = named.result()
    anchors = [Anchor(kind=h.kind, name=h.name, strength=unit(h.similarity)) for h in hubs]
    r.starts = starts(r.direct, config) if r.direct else fused_starts(r.dense, r.lexical, config)
    for mid, strength in r.starts:
        anchors.append(Anchor(kind=MEMORY_NODE, name=mid, strength=unit(strength)))
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


def _fuse(r: _Recall, now: datetime) -> tuple[dict[str, float], list[TimeWindow], dict[str, float]]:
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
        near = r.crowded.less if r.crowded is not None else unchanged
        fused = with_graph(r.direct, near(dense), graph, r.expansions, config)
        credit_starts(fused, r.starts, config)
        if config.time_lean > 0.0 and fused:
            times, lifts = lean_to_time(
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
    ordered = [mid for mid, _ in top(fused, max(limit, 1) * (3 if config.mmr_lambda else 1))]
    if config.mmr_lambda is not None and ordered:
        # Whichever of them variety picks, its memory is read meanwhile.
        unread = [mid for mid in ordered if mid not in r.memories]
        reading = None
        if unread and r.pool is not None:
            reading = Beside(r.pool, partial(r.store.get_memories, r.collection, unread))
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


def _subphrases(phrases: tuple[str, ...]) -> list[str]:
    """Each phrase and its contiguous word runs, longest first: a query about the
    "redis connection pool" is also about "connection pool" and "redis"."""
    out: list[str] = []
    for phrase in phrases:
        words = phrase.split()
        for size in range(len(words), 0, -1):
            out.extend(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
    return out
