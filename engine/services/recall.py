"""Recall: searching memories and records, association, subgraphs and latency."""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from pydantic import BaseModel

from hippocampus.dense import passage_score
from hippocampus.errors import EmbeddingError, InvalidInputError, LimitExceededError, NotFoundError
from hippocampus.extract import unique_names
from hippocampus.learn import BARE_RETRIEVAL, co_use_updates
from hippocampus.model import (
    MEMORY_NODE,
    Anchor,
    Edge,
    Event,
    ExpandParams,
    GraphPath,
    HubKind,
    Memory,
    RecallFilters,
    RecallHit,
    RecallResult,
    SurfacedBefore,
    Tier,
    target_kind,
    utcnow,
)
from hippocampus.model.resource import RESOURCE_CATEGORY, RESOURCE_SOURCE
from hippocampus.retrieve.config import (
    DEFAULT_RECIPE,
    EMBEDDER_DOWN_WARNING,
    RECIPES,
    SearchConfig,
    without_dense,
)
from hippocampus.retrieve.context import TAG_STRENGTH, Reach, context_forms, through_context
from hippocampus.retrieve.fusion import uncorroborated_lean
from hippocampus.retrieve.pipeline import (
    Candidate,
    Retrieval,
    hub_anchor_edges,
    read_query,
    retrieve,
)
from hippocampus.retrieve.present import asks_about_present, present_first
from hippocampus.retrieve.summary import context_summary
from hippocampus.services.core import ServiceCore
from hippocampus.store import Vector

# The service's one logger name, as before the split: log configuration keyed on
# "hippocampus.service" keeps covering every job.
logger = logging.getLogger("hippocampus.service")


_LATENCIES_KEPT = 1000
_CORROBORATIONS_KEPT = 64
"""How many of a collection's recent recalls its typical corroboration is the
median of (:attr:`SearchConfig.collection_uncorroborated`)."""
_CORROBORATIONS_NEEDED = 8
"""How many recalls that median needs before it is trusted."""
_QUERY_READERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hippo-query")
"""Where recalls read what their queries name while the query is embedded and
searched (:func:`~hippocampus.retrieve.pipeline.read_query`), and do the reads that
need not wait on each other beside one another (the text search and the
query's hubs beside the dense search, and more:
:func:`~hippocampus.retrieve.pipeline.retrieve`); shared by every service of the
process, whose recalls are on many threads anyway."""
_ASSOCIATE_REACH = 1000
"""How many of a context hub's members associate follows (strongest edges
first), and how many memories its walk returns: enough for every sort to choose
from, bounded as a hub visit must be."""
ASSOCIATE_SORTS = ("strength", "confidence")
"""Orders :meth:`Hippocampus.associate` offers: path strength (default) or the
memory's confidence (the seed's)."""


class Association(BaseModel):
    """A memory found by :meth:`Hippocampus.associate`, and why."""

    memory: Memory
    strength: float
    anchors: int
    paths: list[GraphPath]


class Associations(BaseModel):
    """What :meth:`Hippocampus.associate` found, best first, and what it could not
    follow (a concept naming nothing, a hub too common to walk)."""

    results: list[Association]
    warnings: list[str] = []


class GraphNode(BaseModel):
    id: str
    kind: str
    label: str
    confidence: float | None = None


class Subgraph(BaseModel):
    """Nodes and edges around a center, for drawing."""

    center: str
    nodes: list[GraphNode]
    edges: list[Edge]


class Latency(BaseModel):
    """Recall latency over this process's most recent recalls of a collection."""

    recalls: int
    p50_ms: float | None
    p95_ms: float | None


class Corroboration(BaseModel):
    """How well similarity has corroborated the words in this process's recent
    recalls of a collection (see :attr:`SearchConfig.collection_uncorroborated`).

    Attributes:
        recalls: how many recent recalls were measured (at most 64).
        median: their median, in standard deviations of each query's best
            similarities; ``None`` until 8 have been measured.
        lexical_lean: what the median multiplies the default recipe's lexical
            weight by (1.0: no lean).
    """

    recalls: int
    median: float | None
    lexical_lean: float


class RecallJobs(ServiceCore):
    """Recalling memories, associating and exploring the graph."""

    # -- records and summaries --------------------------------------------------

    def search_records(
        self,
        collection: str,
        query: str,
        *,
        limit: int = 5,
        min_score: float | None = None,
    ) -> list[str]:
        """Ids of the records most relevant to ``query``, best first: ids only, the
        application reads the rest from its own store. Records less similar than
        ``min_score`` (default: ``records_min_score``) are not returned.

        Raises:
            InvalidInputError: an empty or oversized query, a bad limit.
        """
        result = self.recall(
            collection,
            query,
            limit=limit,
            filters=RecallFilters(categories=[RESOURCE_CATEGORY]),
            min_score=self.records_min_score if min_score is None else min_score,
        )
        return [h.memory.id for h in result.hits if h.memory.source == RESOURCE_SOURCE]

    def context_summary(
        self, collection: str, result: RecallResult, *, min_score: float | None = None
    ) -> str:
        """The "Related knowledge already captured" block for a recall result, with
        the number of memories in the collection (the seed's domain). Results less
        similar to the query than ``min_score`` (default: ``summary_min_score``,
        the seed's 0.7) are left out; results with no similarity (the embedder
        was down) are kept, as ``min_score`` is then not applied to recall. Those
        left out are counted in the block, so that it never says nothing was
        found beside results."""
        least = self.summary_min_score if min_score is None else min_score
        hits = [h for h in result.hits if h.similarity is None or h.similarity >= least]
        return context_summary(
            hits,
            self.store.stats(collection).memories,
            left_out=len(result.hits) - len(hits),
            min_score=least,
        )

    # -- recall -----------------------------------------------------------------

    def recall(
        self,
        collection: str,
        query: str,
        *,
        limit: int = 10,
        filters: RecallFilters | None = None,
        min_score: float | None = None,
        query_vector: Vector | None = None,
        recipe: str | SearchConfig = DEFAULT_RECIPE,
        explain: bool = False,
        learn: bool = True,
        now: datetime | None = None,
        conversation_id: str | None = None,
        as_of: datetime | None = None,
    ) -> RecallResult:
        """Memories relevant to ``query``, best first: dense and lexical search,
        associative expansion through the graph, fused by ``recipe``.

        Args:
            limit: how many results at most.
            filters: domains, categories, tags, tiers (active only by default),
                a conversation to exclude.
            min_score: the least cosine similarity to the query a result may have
                (none dropped by default).
            query_vector: a precomputed embedding of ``query`` (skips embedding).
            recipe: a name from :data:`RECIPES` or a :class:`SearchConfig`.
            explain: attach to each hit the strongest paths that reached it.
            learn: let this retrieval reinforce edges among its top results (a
                bare retrieval: far weaker than real use) and log it.
            conversation_id: the conversation this explicit recall was made in:
                its top results that had been surfaced there are reported (and
                counted for recall-before-search and lead time).
            as_of: the moment the question is asked from (default ``now``):
                times it names ("last week", "in March") are placed from it, and
                recency counts to it. Learning and the log still happen at ``now``.

        Raises:
            InvalidInputError: an empty or oversized query, a bad limit or recipe.
        """
        text = self._checked_query(collection, query, limit)
        config = self.recipe(recipe)
        at = now or utcnow()
        started = time.perf_counter()
        warnings: list[str] = []
        reading = read_query(_QUERY_READERS, self.extractor, text) if config.graph else None
        if query_vector is None and (config.dense or config.graph):
            try:
                query_vector = self.embedder.encode([text])[0]
            except EmbeddingError:
                logger.warning("query embedding failed; recalling by text and graph only")
                warnings.append(EMBEDDER_DOWN_WARNING)
                config = without_dense(config)
                if min_score is not None:
                    warnings.append("min_score was not applied: the query has no vector")
                    min_score = None
        found = retrieve(
            self.store,
            self.extractor,
            collection,
            text,
            query_vector,
            model=self.embedder.name,
            config=config,
            filters=filters or RecallFilters(),
            limit=limit,
            now=as_of or at,
            explain=explain,
            extraction=reading,
            pool=_QUERY_READERS if self.store.parallel_reads else None,
            typical_corroboration=self._typical_corroboration(collection),
        )
        if found.corroboration is not None:
            kept = self._corroborations.setdefault(collection, deque(maxlen=_CORROBORATIONS_KEPT))
            kept.append(found.corroboration)
        hits = self._hits(collection, text, found, config, query_vector, min_score, explain)
        if learn and hits:
            self._learn_from_recall(collection, text, hits, found, config, at)
        self._latencies.setdefault(collection, deque(maxlen=_LATENCIES_KEPT)).append(
            (time.perf_counter() - started) * 1000.0
        )
        if not hits and filters is not None and filters.speakers:
            warnings.append(
                f"nothing matched said by {', '.join(map(repr, filters.speakers))} "
                "(speakers are matched by their label, whatever the case)"
            )
        before: list[SurfacedBefore] = []
        if conversation_id is not None:
            shown = [h.memory for h in hits[: self.surfacer.config.max_insights]]
            before = [
                SurfacedBefore(memory_id=mid, lead=lead)
                for mid, lead in self.surfacer.explicit_recall(collection, conversation_id, shown)
            ]
        return RecallResult(
            query=text,
            hits=hits,
            embedder=self.embedder.name,
            recipe=config.name,
            warnings=warnings,
            surfaced_before=before,
            times=found.times,
        )

    def _checked_query(self, collection: str, query: str, limit: int) -> str:
        """The query, stripped, once the collection, the query and the limit pass."""
        self.check_collection(collection)
        text = query.strip()
        if not text:
            raise InvalidInputError("query is empty", field="query")
        if len(text) > self.limits.max_query_chars:
            raise LimitExceededError(
                f"query has {len(text)} characters; the limit is {self.limits.max_query_chars}",
                field="query",
            )
        if not 1 <= limit <= self.limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{self.limits.max_recall_limit}", field="limit")
        return text

    def _hits(
        self,
        collection: str,
        text: str,
        found: Retrieval,
        config: SearchConfig,
        query_vector: Vector | None,
        min_score: float | None,
        explain: bool,
    ) -> list[RecallHit]:
        """The retrieval's candidates as hits, with their memories: what asks about
        the present first when the recipe says so, none below ``min_score``."""
        candidates = found.candidates
        missing = [c.memory_id for c in candidates if c.memory_id not in found.memories]
        memories = {**found.memories, **self.store.get_memories(collection, missing)}
        if config.present_first and asks_about_present(text):
            candidates = _present_first(candidates, memories)
        if min_score is not None:
            candidates = self._above(collection, candidates, query_vector, min_score)
        return [
            RecallHit(
                memory=memories[c.memory_id],
                score=c.score,
                similarity=c.similarity,
                lexical=c.lexical,
                graph=c.graph,
                time=c.time,
                paths=c.paths[:3] if explain else None,
            )
            for c in candidates
            if c.memory_id in memories
        ]

    def _learn_from_recall(
        self,
        collection: str,
        text: str,
        hits: list[RecallHit],
        found: Retrieval,
        config: SearchConfig,
        at: datetime,
    ) -> None:
        """Queue what a bare retrieval teaches (counts on the edges its top
        results and their hubs share) and its event."""
        top = [h.memory.id for h in hits[: self.learning.co_retrieved]]
        self._learn(
            collection,
            co_use_updates(top, at, BARE_RETRIEVAL, anchors=hub_anchor_edges(found.hubs)),
            Event(
                type="retrieval",
                at=at,
                memory_ids=[h.memory.id for h in hits],
                payload={"query": text, "recipe": config.name},
            ),
        )

    def recipe(self, recipe: str | SearchConfig) -> SearchConfig:
        """The search config a recipe name stands for.

        Raises:
            InvalidInputError: no recipe by that name.
        """
        if isinstance(recipe, SearchConfig):
            return recipe
        config = RECIPES.get(recipe.upper())
        if config is None:
            raise InvalidInputError(
                f"unknown recipe {recipe!r}; known: {', '.join(sorted(RECIPES))}",
                field="recipe",
            )
        return config

    def _above(
        self,
        collection: str,
        candidates: list[Candidate],
        query_vector: Vector | None,
        min_score: float,
    ) -> list[Candidate]:
        """Candidates whose cosine similarity to the query reaches ``min_score``
        (computed for those that dense search did not score: as dense search
        does, a long memory by the best of its vector and its passages)."""
        if query_vector is None:
            return []
        unscored = [c.memory_id for c in candidates if c.similarity is None]
        vectors = self.store.get_vectors(collection, unscored) if unscored else {}
        passage_vectors = self.store.get_passages(collection, unscored) if unscored else {}
        kept = []
        for c in candidates:
            sim = c.similarity
            if sim is None and c.memory_id in vectors:
                sim = float(vectors[c.memory_id] @ query_vector)
                rows = passage_vectors.get(c.memory_id)
                if rows is not None:
                    sim = passage_score(sim, float((rows @ query_vector).max()))
            if sim is not None and sim >= min_score:
                kept.append(c)
        return kept

    def associate(
        self,
        collection: str,
        context: Sequence[str],
        *,
        min_path_strength: float = 0.5,
        max_depth: int = 3,
        limit: int = 10,
        filters: RecallFilters | None = None,
        sort: str = "strength",
    ) -> Associations:
        """Memories associated with a set of concepts (the seed's
        retrieveAssociatedInsights): the memories that hold a hub (or tag) the
        concepts name, and those reached from them through other memories that
        pass the multi-path gate: paths from at least two of the concepts, or one
        path whose edge weights multiply to ``min_path_strength``. Strength is
        measured as recall's walk measures it: a hub passes on 1/degree of what
        reaches it (see :mod:`hippocampus.retrieve.context`).

        Args:
            sort: ``strength`` (default: the strongest connection to the context
                first) or ``confidence`` (the seed's order: the memory's own
                confidence first, path strength breaking ties). Either way the
                ``limit`` best are chosen from everything that passed the gate.

        Returns:
            The associations, and warnings: a concept that names no hub and no
            tag, a hub too common to walk.

        Raises:
            InvalidInputError: no concept given, or a bad depth, limit or sort.
        """
        self.check_collection(collection)
        names = unique_names(context, 50)
        if not names:
            raise InvalidInputError("give at least one concept", field="context")
        if not 1 <= max_depth <= 3:
            raise InvalidInputError("max_depth is 1-3", field="max_depth")
        if not 1 <= limit <= self.limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{self.limits.max_recall_limit}", field="limit")
        if sort not in ASSOCIATE_SORTS:
            raise InvalidInputError(f"sort is one of {', '.join(ASSOCIATE_SORTS)}", field="sort")
        # The context is matched as memories are extracted: by name and by the
        # extractor's forms, to hubs of every kind; and to memories' tags.
        forms = context_forms(names, self.extractor.extract_many(list(names)))
        base = filters or RecallFilters()
        params = self.recipe(DEFAULT_RECIPE).expand.model_copy(
            # The caller named these hubs: each is walked however common, up to
            # the ceiling that bounds what one hub visit reads.
            update={
                "max_depth": max_depth,
                "hub_min_factor": 0.0,
                "hub_fanout": _ASSOCIATE_REACH,
                "max_results": _ASSOCIATE_REACH,
            }
        )
        warnings: list[str] = []
        hubs = []
        matched = self.store.match_hubs(collection, list(forms))
        for hub in matched:
            if params.max_hub_degree is not None and hub.degree > params.max_hub_degree:
                warnings.append(
                    f"{hub.kind}:{hub.name} links {hub.degree} memories, more than the "
                    f"{params.max_hub_degree} a walk follows: left out"
                )
            else:
                hubs.append(hub)
        reached: dict[str, Reach] = {}
        if hubs:
            origin = {(h.kind, h.name): forms[h.name] for h in hubs}
            for e in self.store.expand(
                collection,
                [Anchor(kind=h.kind, name=h.name) for h in hubs],
                params=params,
                filters=base,
            ):
                if (kept := through_context(e, origin, damping=params.damping)) is not None:
                    reached[e.memory_id] = kept
        tagged = self._add_tagged(collection, names, base, reached)
        named = {forms[h.name] for h in matched} | tagged
        generic: frozenset[str] = getattr(self.extractor, "generic", frozenset())
        warnings += [
            f"{name!r} names no hub and no tag in this collection"
            + (" (a word this common is no hub)" if name in generic else "")
            for name in names
            if name not in named
        ]
        passed = sorted(
            (r for r in reached.values() if r.passes(min_path_strength)),
            key=lambda r: (-r.expansion().strength, r.memory_id),
        )
        ranked = [r.expansion() for r in passed]
        if sort == "strength":
            ranked = ranked[:limit]
        memories = self.store.get_memories(collection, [e.memory_id for e in ranked])
        if sort == "confidence":
            ranked = sorted(
                (e for e in ranked if e.memory_id in memories),
                key=lambda e: (
                    -memories[e.memory_id].retrieval.confidence,
                    -e.strength,
                    e.memory_id,
                ),
            )[:limit]
        return Associations(
            results=[
                Association(
                    memory=memories[e.memory_id],
                    strength=e.strength,
                    anchors=e.anchors,
                    paths=e.paths[:3],
                )
                for e in ranked
                if e.memory_id in memories
            ],
            warnings=warnings,
        )

    def _add_tagged(
        self,
        collection: str,
        names: Sequence[str],
        filters: RecallFilters,
        reached: dict[str, Reach],
    ) -> set[str]:
        """Credit each context name to the memories tagged with it, as a hub's
        members are credited: :data:`TAG_STRENGTH` divided by how many carry the
        tag (tags are not hubs: no path is drawn for them). Returns the names
        some memory is tagged with."""
        vector = self._embed_query(" ".join(names))
        if vector is None:
            return set()
        found: set[str] = set()
        for name in names:
            tagged = filters.model_copy(update={"tags": [name]})
            hits = self.store.search_vectors(
                collection,
                vector,
                model=self.embedder.name,
                k=self.limits.max_recall_limit,
                filters=tagged,
            )
            for memory_id, _ in hits:
                reach = reached.setdefault(memory_id, Reach(memory_id))
                reach.add(name, TAG_STRENGTH / len(hits))
                reach.held = True
            if hits:
                found.add(name)
        return found

    def subgraph(
        self, collection: str, center: str, *, depth: int = 1, max_nodes: int = 200
    ) -> Subgraph:
        """The graph around a memory (its id) or a hub (``Kind:name``, e.g.
        ``Concept:connection pool``), breadth first, for drawing.

        Raises:
            NotFoundError: no such memory or hub.
            InvalidInputError: a bad depth or node cap.
        """
        self.check_collection(collection)
        if not 1 <= depth <= 3:
            raise InvalidInputError("depth is 1-3", field="depth")
        if not 1 <= max_nodes <= 2000:
            raise InvalidInputError("max_nodes is 1-2000", field="max_nodes")
        start = self._node_of(collection, center)
        nodes: dict[tuple[str, str], None] = {start: None}
        edges: dict[tuple[str, str, str], Edge] = {}
        frontier = [start]
        # A drawing shows a hub's strongest members however common the hub is:
        # no degree ceiling (each call walks one hub and keeps at most
        # max_nodes of its members).
        fanout = ExpandParams(
            max_depth=1,
            hub_fanout=max_nodes,
            frontier=max_nodes,
            hub_degree_penalty=False,
            max_hub_degree=None,
            damping=1.0,
            max_results=max_nodes,
        )
        all_tiers = RecallFilters(tiers=list(Tier))
        for _ in range(depth):
            reached: list[tuple[str, str]] = []
            for kind, name in frontier:
                if kind == MEMORY_NODE:
                    for edge in self.store.edges_of(collection, name):
                        other = (target_kind(edge.type), edge.target)
                        edges[(edge.type.value, edge.source, edge.target)] = edge
                        reached.append(other)
                else:
                    for e in self.store.expand(
                        collection, [Anchor(kind=kind, name=name)], params=fanout, filters=all_tiers
                    ):
                        step = e.paths[0].steps[0]
                        edge = Edge(
                            source=e.memory_id, type=step.type, target=name, weight=step.weight
                        )
                        edges[(edge.type.value, edge.source, edge.target)] = edge
                        reached.append((MEMORY_NODE, e.memory_id))
            frontier = []
            for node in reached:
                if node not in nodes and len(nodes) < max_nodes:
                    nodes[node] = None
                    frontier.append(node)
        memory_ids = [name for kind, name in nodes if kind == MEMORY_NODE]
        memories = self.store.get_memories(collection, memory_ids)
        kept = [
            e
            for e in edges.values()
            if (MEMORY_NODE, e.source) in nodes and (target_kind(e.type), e.target) in nodes
        ]
        return Subgraph(
            center=f"{start[0]}:{start[1]}",
            nodes=[
                GraphNode(
                    id=f"{kind}:{name}",
                    kind=kind,
                    label=(memories[name].content[:80] if name in memories else name)
                    if kind == MEMORY_NODE
                    else name,
                    confidence=memories[name].retrieval.confidence if name in memories else None,
                )
                for kind, name in nodes
            ],
            edges=kept,
        )

    def _node_of(self, collection: str, center: str) -> tuple[str, str]:
        kind, sep, name = center.partition(":")
        if sep and kind in {k.value for k in HubKind}:
            if any(h.kind == kind for h in self.store.match_hubs(collection, [name])):
                return (kind, name)
            raise NotFoundError(f"no {kind} {name!r} in this collection")
        if sep and kind == MEMORY_NODE and self.store.get_memories(collection, [name]):
            return (MEMORY_NODE, name)  # a node id as /graph gives it: Memory:<id>
        if not self.store.get_memories(collection, [center]):
            raise NotFoundError(f"no memory {center!r} in this collection")
        return (MEMORY_NODE, center)

    def _typical_corroboration(self, collection: str) -> float | None:
        """The median corroboration of this process's recent recalls of the
        collection (see :func:`~hippocampus.retrieve.fusion.corroboration`); ``None``
        until enough have been measured. Kept in memory: after a restart the
        collection's recalls measure it afresh."""
        kept = list(self._corroborations.get(collection, ()))
        if len(kept) < _CORROBORATIONS_NEEDED:
            return None
        return statistics.median(kept)

    def corroboration(self, collection: str) -> Corroboration:
        """How well similarity has corroborated the words in this process's recent
        recalls of the collection, and the lean on words that follows."""
        self.check_collection(collection)
        typical = self._typical_corroboration(collection)
        threshold = self.recipe(DEFAULT_RECIPE).collection_uncorroborated
        return Corroboration(
            recalls=len(self._corroborations.get(collection, ())),
            median=None if typical is None else round(typical, 3),
            lexical_lean=round(uncorroborated_lean(typical, threshold), 3),
        )

    def latency(self, collection: str) -> Latency:
        """p50 / p95 of this process's recent recalls of the collection."""
        self.check_collection(collection)
        samples = sorted(self._latencies.get(collection, ()))
        if not samples:
            return Latency(recalls=0, p50_ms=None, p95_ms=None)

        def at(q: float) -> float:
            return round(samples[min(len(samples) - 1, int(q * len(samples)))], 3)

        return Latency(recalls=len(samples), p50_ms=at(0.5), p95_ms=at(0.95))


def _present_first(candidates: list[Candidate], memories: dict[str, Memory]) -> list[Candidate]:
    """``candidates`` with each ranked above the memories it supersedes (see
    :mod:`hippocampus.retrieve.present`). Only the order changes: a superseding
    memory the search did not find stays out (the superseded one names it),
    and nothing is pushed out of the results for it."""
    superseded_by = {
        c.memory_id: memories[c.memory_id].retrieval.superseded_by
        for c in candidates
        if c.memory_id in memories and memories[c.memory_id].retrieval.superseded_by
    }
    if not superseded_by:
        return candidates
    scores = present_first({c.memory_id: c.score for c in candidates}, superseded_by)
    for c in candidates:
        c.score = scores[c.memory_id]
    return sorted(candidates, key=lambda c: (-c.score, c.memory_id))
