"""Recall: searching memories and records, and how recalls have fared."""

from __future__ import annotations

import logging
import statistics
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

from pydantic import BaseModel

from hippocampus.dense import passage_score
from hippocampus.errors import EmbeddingError, InvalidInputError, LimitExceededError
from hippocampus.extract import Extraction
from hippocampus.learn import BARE_RETRIEVAL, co_use_updates
from hippocampus.model import (
    Event,
    Memory,
    RecallFilters,
    RecallHit,
    RecallResult,
    SurfacedBefore,
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
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.learning import LearningQueue
from hippocampus.store import Vector
from hippocampus.surface.surfacer import Surfacer

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
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


class RecallService:
    """Recalling memories and records, and measuring recalls.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        learning: where bare retrievals queue what they teach.
        surfacer: reports the results a conversation had been offered before.
        records_min_score: the least similarity a record needs to be found by
            :meth:`search_records`.
        summary_min_score: the least similarity a result needs to be in a
            :meth:`context_summary` (the seed's 0.7).
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        learning: LearningQueue,
        surfacer: Surfacer,
        *,
        records_min_score: float = 0.3,
        summary_min_score: float = 0.7,
    ) -> None:
        self._context = context
        self._checks = checks
        self._learning = learning
        self._surfacer = surfacer
        self.records_min_score = records_min_score
        self.summary_min_score = summary_min_score
        self._latencies: dict[str, deque[float]] = {}
        self._corroborations: dict[str, deque[float]] = {}

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
            self._context.store.stats(collection).memories,
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
        reading = (
            read_query(_QUERY_READERS, self._context.extractor, text) if config.graph else None
        )
        if query_vector is None and (config.dense or config.graph):
            query_vector, config, min_score = self._embed_query(text, config, min_score, warnings)
        found = self._retrieve(
            collection, text, query_vector, config, filters, limit, as_of or at, explain, reading
        )
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
            before = self._surfaced_before(collection, conversation_id, hits)
        return RecallResult(
            query=text,
            hits=hits,
            embedder=self._context.embedder.name,
            recipe=config.name,
            warnings=warnings,
            surfaced_before=before,
            times=found.times,
        )

    def _retrieve(
        self,
        collection: str,
        text: str,
        query_vector: Vector | None,
        config: SearchConfig,
        filters: RecallFilters | None,
        limit: int,
        now: datetime,
        explain: bool,
        reading: Future[Extraction] | None,
    ) -> Retrieval:
        """The retrieval pipeline's candidates for the query, its corroboration
        kept for the collection's typical one."""
        found = retrieve(
            self._context.store,
            self._context.extractor,
            collection,
            text,
            query_vector,
            model=self._context.embedder.name,
            config=config,
            filters=filters or RecallFilters(),
            limit=limit,
            now=now,
            explain=explain,
            extraction=reading,
            pool=_QUERY_READERS if self._context.store.reads_side_by_side(collection) else None,
            typical_corroboration=self._typical_corroboration(collection),
        )
        if found.corroboration is not None:
            kept = self._corroborations.setdefault(collection, deque(maxlen=_CORROBORATIONS_KEPT))
            kept.append(found.corroboration)
        return found

    def _embed_query(
        self, text: str, config: SearchConfig, min_score: float | None, warnings: list[str]
    ) -> tuple[Vector | None, SearchConfig, float | None]:
        """The query's vector, the config and the least similarity to recall by:
        without the dense search and ``min_score`` when the embedder fails (said
        in ``warnings``)."""
        try:
            return self._context.embedder.encode([text])[0], config, min_score
        except EmbeddingError:
            logger.warning("query embedding failed; recalling by text and graph only")
            warnings.append(EMBEDDER_DOWN_WARNING)
            if min_score is not None:
                warnings.append("min_score was not applied: the query has no vector")
            return None, without_dense(config), None

    def _surfaced_before(
        self, collection: str, conversation_id: str, hits: list[RecallHit]
    ) -> list[SurfacedBefore]:
        """The top results the conversation had been offered before, with how long
        before (counted for recall-before-search and lead time)."""
        shown = [h.memory for h in hits[: self._surfacer.config.max_insights]]
        return [
            SurfacedBefore(memory_id=mid, lead=lead)
            for mid, lead in self._surfacer.explicit_recall(collection, conversation_id, shown)
        ]

    def _checked_query(self, collection: str, query: str, limit: int) -> str:
        """The query, stripped, once the collection, the query and the limit pass."""
        self._checks.check_collection(collection)
        limits = self._context.limits
        text = query.strip()
        if not text:
            raise InvalidInputError("query is empty", field="query")
        if len(text) > limits.max_query_chars:
            raise LimitExceededError(
                f"query has {len(text)} characters; the limit is {limits.max_query_chars}",
                field="query",
            )
        if not 1 <= limit <= limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{limits.max_recall_limit}", field="limit")
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
        memories = {**found.memories, **self._context.store.get_memories(collection, missing)}
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
        top = [h.memory.id for h in hits[: self._context.learning.co_retrieved]]
        self._learning.learn(
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
        return search_config(recipe)

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
        vectors = self._context.store.get_vectors(collection, unscored) if unscored else {}
        passage_vectors = self._context.store.get_passages(collection, unscored) if unscored else {}
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
        self._checks.check_collection(collection)
        typical = self._typical_corroboration(collection)
        threshold = self.recipe(DEFAULT_RECIPE).collection_uncorroborated
        return Corroboration(
            recalls=len(self._corroborations.get(collection, ())),
            median=None if typical is None else round(typical, 3),
            lexical_lean=round(uncorroborated_lean(typical, threshold), 3),
        )

    def latency(self, collection: str) -> Latency:
        """p50 / p95 of this process's recent recalls of the collection."""
        self._checks.check_collection(collection)
        samples = sorted(self._latencies.get(collection, ()))
        if not samples:
            return Latency(recalls=0, p50_ms=None, p95_ms=None)

        def at(q: float) -> float:
            return round(samples[min(len(samples) - 1, int(q * len(samples)))], 3)

        return Latency(recalls=len(samples), p50_ms=at(0.5), p95_ms=at(0.95))


def search_config(recipe: str | SearchConfig) -> SearchConfig:
    """The search config a recipe name stands for (a config stands for itself).

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
