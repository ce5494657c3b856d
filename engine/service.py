"""Hippocampus: the facade that composes store, embedder and extractor.

Entry points (the API, the CLI, agents using the library) talk to this class
only. It validates input, embeds and extracts outside the store's write lock,
and hands the store complete records, so every write is all-or-nothing.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from engine.config import COLLECTION_PATTERN, HippoSettings, Limits
from engine.embed import Embedder, make_embedder
from engine.errors import (
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
)
from engine.extract import (
    ConceptExtractor,
    Extraction,
    make_extractor,
    merge_given,
    unique_names,
)
from engine.learn import (
    BARE_RETRIEVAL,
    REAL_USE,
    LearningConfig,
    co_use_updates,
    decay_period,
)
from engine.metrics import GraphHealth, graph_health
from engine.model import (
    HUB_EDGE,
    MEMORY_NODE,
    Anchor,
    Edge,
    EdgeUpdate,
    Event,
    ExpandParams,
    GraphPath,
    HubKind,
    Memory,
    MemoryPatch,
    NewMemory,
    RecallFilters,
    RecallHit,
    RecallResult,
    RetrievalMeta,
    SurfacedBefore,
    Tier,
    content_hash,
    target_kind,
    utcnow,
)
from engine.retrieve.config import DEFAULT_RECIPE, RECIPES, SearchConfig
from engine.retrieve.pipeline import Candidate, hub_anchor_edges, retrieve
from engine.schedule import FsrsScheduler, Scheduler, SeedScheduler
from engine.store import GraphStore, MemoryRecord, Vector
from engine.store.factory import open_store
from engine.surface import (
    EngagementOutcome,
    MessageOutcome,
    SurfaceConfig,
    SurfaceMetrics,
    Surfacer,
)

logger = logging.getLogger(__name__)

MEMBERSHIP_WEIGHT = 0.5
"""Starting weight of a memory's edges to its domains, triggers and concepts.
Below the associative gate's 0.5 once damped, so one shared concept alone never
surfaces a memory; use and co-retrieval raise it."""

_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}$")
_CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_\-]{0,39}$")
EXPORT_FORMAT = "hippocampus-jsonl/1"
_LATENCIES_KEPT = 1000


@dataclass(frozen=True)
class RememberOutcome:
    """What happened to one memory given to :meth:`Hippocampus.remember`.

    Attributes:
        memory: the stored memory (the existing one for a duplicate).
        created: ``False`` when the content was already stored.
        duplicate_of: id of the memory this one duplicates, if any.
        embedded: whether a vector was stored; ``False`` means the memory waits
            for re-embedding (``hippo reindex``) but is stored all the same.
    """

    memory: Memory
    created: bool
    duplicate_of: str | None = None
    embedded: bool = True
    reasons: list[str] = field(default_factory=list)


class CollectionStats(BaseModel):
    collection: str
    memories: int
    by_category: dict[str, int]
    by_tier: dict[str, int]
    pending_embeddings: int
    hubs: dict[str, int]
    edges: dict[str, int]
    events: int
    embedder: str
    extractor: str


class Association(BaseModel):
    """A memory found by :meth:`Hippocampus.associate`, and why."""

    memory: Memory
    strength: float
    anchors: int
    paths: list[GraphPath]


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


class ImportReport(BaseModel):
    memories: int = 0
    edges: int = 0
    skipped_existing: int = 0


class _ExportedMemory(BaseModel):
    type: str = Field(pattern="^memory$")
    memory: Memory
    vector: str | None = None


class _ExportedEdge(BaseModel):
    type: str = Field(pattern="^edge$")
    edge: Edge


class Hippocampus:
    """The memory engine.

    Args:
        store: where memories live.
        embedder: turns text into vectors.
        extractor: finds domains, triggers and concepts.
        limits: input size limits.
        embed_batch_size: texts per embedding call when remembering many.
        learning: how retrieval and use reinforce edges, and how they decay.
        surfacing: gates, thresholds and learning of proactive surfacing.
        scheduler: spaced repetition (FSRS-style by default).
        seed: makes surfacing's exploration reproducible.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        extractor: ConceptExtractor,
        *,
        limits: Limits | None = None,
        embed_batch_size: int = 64,
        learning: LearningConfig | None = None,
        surfacing: SurfaceConfig | None = None,
        scheduler: Scheduler | None = None,
        seed: int = 0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.limits = limits or Limits()
        self.embed_batch_size = embed_batch_size
        self.learning = learning or LearningConfig()
        self._pending: dict[str, tuple[list[EdgeUpdate], list[Event]]] = {}
        self._pending_lock = threading.Lock()
        self._latencies: dict[str, deque[float]] = {}
        self.scheduler: Scheduler = scheduler or FsrsScheduler()
        self.surfacer = Surfacer(
            store,
            extractor,
            self._embed_query,
            model=lambda: self.embedder.name,
            scheduler=self.scheduler,
            config=surfacing,
            seed=seed,
        )

    @classmethod
    def from_settings(cls, settings: HippoSettings) -> Hippocampus:
        """Build the engine the settings describe (store, embedder, extractor).

        The embedded store is opened first, so that a data directory in use is
        reported before a model loads; the Neo4j store is configured after the
        embedder, whose dimension its vector index takes. Configuring it contacts
        nothing: a Neo4j that is down makes the engine unready, not unbuildable.
        """

        def build_embedder() -> Embedder:
            return make_embedder(
                settings.embedder,
                model_path=settings.model_path,
                batch_size=settings.embed_batch_size,
                precision=settings.embed_precision,
            )

        store: GraphStore | None = None
        try:
            if settings.store == "embedded":
                store = open_store(settings)
                embedder = build_embedder()
            else:
                embedder = build_embedder()
                store = open_store(settings, dimensions=embedder.dim)
            extractor = make_extractor()
        except Exception:
            if store is not None:
                store.close()
            raise
        return cls(
            store,
            embedder,
            extractor,
            limits=settings.limits,
            embed_batch_size=settings.embed_batch_size,
            scheduler=FsrsScheduler() if settings.scheduler == "fsrs" else SeedScheduler(),
        )

    def close(self) -> None:
        """Write what retrievals taught, then release the store."""
        try:
            self.flush_learning()
        finally:
            self.store.close()

    # -- validation -------------------------------------------------------------

    def check_collection(self, collection: str) -> str:
        if not COLLECTION_PATTERN.match(collection):
            raise InvalidInputError(
                "collection names are 1-128 characters: letters, digits and _ . : @ -, "
                "starting with a letter or digit",
                field="collection",
            )
        return collection

    def _check_new(self, item: NewMemory, where: str) -> NewMemory:
        content = item.content.strip()
        if not content:
            raise InvalidInputError("content is empty", field=f"{where}content")
        if len(content) > self.limits.max_content_chars:
            raise LimitExceededError(
                f"content has {len(content)} characters; the limit is "
                f"{self.limits.max_content_chars}",
                field=f"{where}content",
            )
        if item.id is not None and not _ID_PATTERN.match(item.id):
            raise InvalidInputError(
                "ids are 1-200 characters with no control characters or slashes",
                field=f"{where}id",
            )
        category = item.category.strip().lower()
        if not _CATEGORY_PATTERN.match(category):
            raise InvalidInputError(
                "category is 1-40 characters: lower-case letters, digits, _ and -",
                field=f"{where}category",
            )
        tags = self._check_names(item.tags, f"{where}tags")
        return item.model_copy(update={"content": content, "category": category, "tags": tags})

    def _check_names(self, values: Sequence[str], where: str) -> list[str]:
        if len(values) > self.limits.max_tags:
            raise LimitExceededError(f"at most {self.limits.max_tags} values", field=where)
        out: list[str] = []
        for value in values:
            name = value.strip()
            if not name or len(name) > self.limits.max_tag_chars:
                raise InvalidInputError(
                    f"each value is 1-{self.limits.max_tag_chars} characters", field=where
                )
            if name not in out:
                out.append(name)
        return out

    # -- remembering ------------------------------------------------------------

    def remember(
        self, collection: str, item: NewMemory, *, now: datetime | None = None
    ) -> RememberOutcome:
        """Store one memory. See :meth:`remember_many`."""
        return self._remember(collection, [item], now=now, batch=False)[0]

    def remember_many(
        self, collection: str, items: Sequence[NewMemory], *, now: datetime | None = None
    ) -> list[RememberOutcome]:
        """Validate, embed, extract and store memories, all or nothing.

        Content already stored in the collection (same normalized text) is not
        stored twice: its outcome names the existing memory in ``duplicate_of``.
        If the embedder fails, the memories are stored without vectors and
        flagged for re-embedding; they are never dropped.

        Raises:
            InvalidInputError: an item is invalid (``field`` says which); nothing
                is written.
            ConflictError: a caller-given id already exists; nothing is written.
        """
        return self._remember(collection, items, now=now, batch=True)

    def _remember(
        self,
        collection: str,
        items: Sequence[NewMemory],
        *,
        now: datetime | None,
        batch: bool,
    ) -> list[RememberOutcome]:
        self.check_collection(collection)
        if not items:
            return []
        if len(items) > self.limits.max_batch:
            raise LimitExceededError(
                f"{len(items)} memories in one batch; the limit is {self.limits.max_batch}",
                field="memories",
            )
        at = now or utcnow()
        checked = [
            self._check_new(item, f"memories[{i}]." if batch else "")
            for i, item in enumerate(items)
        ]

        # Duplicates of stored content, and repeats inside the batch, are not stored again.
        outcomes: list[RememberOutcome | None] = [None] * len(checked)
        fresh: list[tuple[int, NewMemory, str]] = []
        first_in_batch: dict[str, int] = {}
        for i, item in enumerate(checked):
            digest = content_hash(item.content)
            existing = self.store.find_by_hash(collection, digest)
            if existing:
                found = self.store.get_memories(collection, existing[:1])
                if found:
                    mem = found[existing[0]]
                    outcomes[i] = RememberOutcome(
                        memory=mem,
                        created=False,
                        duplicate_of=mem.id,
                        embedded=not mem.needs_embedding,
                        reasons=["the same content is already stored"],
                    )
                    continue
            if digest in first_in_batch:
                continue
            first_in_batch[digest] = i
            fresh.append((i, item, digest))

        seen_ids: set[str] = set()
        for i, item, _ in fresh:
            if item.id is not None:
                if item.id in seen_ids:
                    raise ConflictError(
                        f"id {item.id!r} appears twice in the batch",
                        field=f"memories[{i}].id" if batch else "id",
                    )
                seen_ids.add(item.id)

        texts = [item.content for _, item, _ in fresh]
        vectors, embed_error = self._embed(texts)
        extractions = self.extractor.extract_many(texts) if texts else []

        records: list[MemoryRecord] = []
        for n, (i, item, digest) in enumerate(fresh):
            extraction = merge_given(
                extractions[n],
                domains=item.domains,
                triggers=item.triggers,
                concepts=item.concepts,
            )
            memory = Memory(
                id=item.id or str(uuid.uuid4()),
                collection=collection,
                content=item.content,
                category=item.category,
                importance=item.importance,
                source=item.source,
                tags=item.tags,
                created_at=at,
                updated_at=at,
                content_hash=digest,
                embedding_model=self.embedder.name if vectors is not None else None,
                retrieval=RetrievalMeta(
                    domains=list(extraction.domains),
                    triggers=list(extraction.triggers),
                    concepts=list(extraction.concepts),
                    conversation_ids=[item.conversation_id] if item.conversation_id else [],
                ),
            )
            vector = vectors[n] if vectors is not None else None
            records.append(
                MemoryRecord(
                    memory=memory, vector=vector, edges=_hub_edges(memory.id, extraction, at)
                )
            )
            reasons = [f"stored without a vector: {embed_error}"] if embed_error else []
            outcomes[i] = RememberOutcome(
                memory=memory, created=True, embedded=vector is not None, reasons=reasons
            )

        if records:
            self.store.add_memories(collection, records)
            if vectors is not None:
                self.embed_hubs(collection)
        # Repeats inside the batch point at the memory stored for their first occurrence.
        for i, item in enumerate(checked):
            if outcomes[i] is None:
                first = outcomes[first_in_batch[content_hash(item.content)]]
                assert first is not None
                outcomes[i] = RememberOutcome(
                    memory=first.memory,
                    created=False,
                    duplicate_of=first.memory.id,
                    embedded=first.embedded,
                    reasons=["the same content appears earlier in the batch"],
                )
        return [o for o in outcomes if o is not None]

    def _embed(self, texts: Sequence[str]) -> tuple[Vector | None, str | None]:
        """Vectors for ``texts``, or ``(None, reason)`` when the embedder fails."""
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32), None
        try:
            parts = [
                self.embedder.encode(texts[i : i + self.embed_batch_size])
                for i in range(0, len(texts), self.embed_batch_size)
            ]
        except EmbeddingError as e:
            logger.warning("embedding failed; storing %d memories for re-embedding", len(texts))
            return None, e.message
        return np.vstack(parts).astype(np.float32, copy=False), None

    # -- reading and editing ----------------------------------------------------

    def get(self, collection: str, memory_id: str) -> Memory:
        """The memory, or NotFoundError (also for ids of other collections)."""
        self.check_collection(collection)
        found = self.store.get_memories(collection, [memory_id])
        if memory_id not in found:
            raise NotFoundError(f"no memory {memory_id!r} in this collection")
        return found[memory_id]

    def update(
        self,
        collection: str,
        memory_id: str,
        patch: MemoryPatch,
        *,
        now: datetime | None = None,
    ) -> Memory:
        """Edit a memory. Content that changes is re-embedded and re-extracted
        (its hub edges follow); unchanged content is never re-embedded.

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: a field is invalid; nothing is written.
        """
        current = self.get(collection, memory_id)
        at = now or utcnow()
        update: dict[str, Any] = {"updated_at": at}
        retrieval = current.retrieval.model_copy()
        vector: Vector | None = None
        content_changed = False
        if patch.content is not None:
            checked = self._check_new(NewMemory(content=patch.content), "")
            digest = content_hash(checked.content)
            if digest != current.content_hash:
                content_changed = True
                update["content"] = checked.content
                update["content_hash"] = digest
                vectors, _ = self._embed([checked.content])
                vector = vectors[0] if vectors is not None else None
                update["embedding_model"] = self.embedder.name if vector is not None else None
                extraction = self.extractor.extract_many([checked.content])[0]
                retrieval.domains = list(extraction.domains)
                retrieval.triggers = list(extraction.triggers)
                retrieval.concepts = list(extraction.concepts)
        if patch.category is not None:
            update["category"] = self._check_new(
                NewMemory(content="x", category=patch.category), ""
            ).category
        if patch.importance is not None:
            update["importance"] = patch.importance
        if patch.tier is not None:
            update["tier"] = patch.tier
        if patch.source is not None:
            update["source"] = patch.source
        if patch.tags is not None:
            update["tags"] = self._check_names(patch.tags, "tags")
        given = merge_given(
            Extraction(
                domains=tuple(retrieval.domains),
                triggers=tuple(retrieval.triggers),
                concepts=tuple(retrieval.concepts),
            ),
            domains=patch.domains,
            triggers=patch.triggers,
            concepts=patch.concepts,
        )
        hubs_changed = content_changed or any(
            v is not None for v in (patch.domains, patch.triggers, patch.concepts)
        )
        retrieval.domains = list(given.domains)
        retrieval.triggers = list(given.triggers)
        retrieval.concepts = list(given.concepts)
        update["retrieval"] = retrieval
        try:
            memory = Memory.model_validate({**current.model_dump(), **update})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InvalidInputError(f"{where}: {first['msg']}", field=where) from e
        if content_changed and vector is None:
            # The old vector describes the old text: drop it so the memory is re-embedded.
            memory = memory.model_copy(update={"embedding_model": None})
        self.store.replace_memory(
            collection,
            MemoryRecord(
                memory=memory,
                vector=vector,
                edges=_hub_edges(memory.id, given, at) if hubs_changed else (),
            ),
            replace_edges=hubs_changed,
        )
        if hubs_changed and memory.embedding_model is not None:
            self.embed_hubs(collection)
        return memory

    def forget(self, collection: str, memory_id: str) -> None:
        """Delete a memory with its edges.

        Raises:
            NotFoundError: no such memory.
        """
        self.check_collection(collection)
        if not self.store.delete_memory(collection, memory_id):
            raise NotFoundError(f"no memory {memory_id!r} in this collection")

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

        Raises:
            InvalidInputError: an empty or oversized query, a bad limit or recipe.
        """
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
        config = self.recipe(recipe)
        at = now or utcnow()
        started = time.perf_counter()
        warnings: list[str] = []
        if query_vector is None and (config.dense or config.graph):
            try:
                query_vector = self.embedder.encode([text])[0]
            except EmbeddingError:
                logger.warning("query embedding failed; recalling by text and graph only")
                warnings.append("the embedder failed: results come from text and graph only")
                if not config.lexical:
                    config = config.model_copy(
                        update={
                            "lexical": True,
                            "graph": True,
                            "weights": {**config.weights, "lexical": 1.0, "graph": 1.0},
                        }
                    )
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
            now=at,
            explain=explain,
        )
        candidates = found.candidates
        if min_score is not None:
            candidates = self._above(collection, candidates, query_vector, min_score)
        missing = [c.memory_id for c in candidates if c.memory_id not in found.memories]
        memories = {**found.memories, **self.store.get_memories(collection, missing)}
        hits = [
            RecallHit(
                memory=memories[c.memory_id],
                score=c.score,
                similarity=c.similarity,
                lexical=c.lexical,
                graph=c.graph,
                paths=c.paths[:3] if explain else None,
            )
            for c in candidates
            if c.memory_id in memories
        ]
        if learn and hits:
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
        self._latencies.setdefault(collection, deque(maxlen=_LATENCIES_KEPT)).append(
            (time.perf_counter() - started) * 1000.0
        )
        before: list[SurfacedBefore] = []
        if conversation_id is not None:
            top = [h.memory.id for h in hits[: self.surfacer.config.max_insights]]
            before = [
                SurfacedBefore(memory_id=mid, lead=lead)
                for mid, lead in self.surfacer.explicit_recall(collection, conversation_id, top)
            ]
        return RecallResult(
            query=text,
            hits=hits,
            embedder=self.embedder.name,
            recipe=config.name,
            warnings=warnings,
            surfaced_before=before,
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
        (computed for those that dense search did not score)."""
        if query_vector is None:
            return []
        unscored = [c.memory_id for c in candidates if c.similarity is None]
        vectors = self.store.get_vectors(collection, unscored) if unscored else {}
        kept = []
        for c in candidates:
            sim = c.similarity
            if sim is None and c.memory_id in vectors:
                sim = float(vectors[c.memory_id] @ query_vector)
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
    ) -> list[Association]:
        """Memories associated with a set of concepts (the seed's
        retrieveAssociatedInsights): expansion from the hubs the concepts name.
        Each result passes the multi-path gate: paths from at least two of the
        concepts, or one path of at least ``min_path_strength``.

        Raises:
            InvalidInputError: no concept given, or a bad depth or limit.
        """
        self.check_collection(collection)
        names = unique_names(context, 50)
        if not names:
            raise InvalidInputError("give at least one concept", field="context")
        if not 1 <= max_depth <= 3:
            raise InvalidInputError("max_depth is 1-3", field="max_depth")
        if not 1 <= limit <= self.limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{self.limits.max_recall_limit}", field="limit")
        hubs = [h for h in self.store.match_hubs(collection, names) if h.kind != HubKind.DOMAIN]
        if not hubs:
            return []
        params = self.recipe(DEFAULT_RECIPE).expand.model_copy(update={"max_depth": max_depth})
        found = self.store.expand(
            collection,
            [Anchor(kind=h.kind, name=h.name) for h in hubs],
            params=params,
            filters=filters or RecallFilters(),
        )
        passed = [e for e in found if e.anchors >= 2 or e.strength >= min_path_strength][:limit]
        memories = self.store.get_memories(collection, [e.memory_id for e in passed])
        return [
            Association(
                memory=memories[e.memory_id],
                strength=e.strength,
                anchors=e.anchors,
                paths=e.paths[:3],
            )
            for e in passed
            if e.memory_id in memories
        ]

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
        fanout = ExpandParams(
            max_depth=1,
            hub_fanout=max_nodes,
            frontier=max_nodes,
            hub_degree_penalty=False,
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
        if not self.store.get_memories(collection, [center]):
            raise NotFoundError(f"no memory {center!r} in this collection")
        return (MEMORY_NODE, center)

    def graph_health(self, collection: str) -> GraphHealth:
        """Nodes, edges by type, mean degree, clustering, components, weights."""
        self.check_collection(collection)
        return graph_health(
            self.store.iter_edges(collection),
            (m.id for m in self.store.iter_memories(collection)),
        )

    # -- learning ---------------------------------------------------------------

    def record_use(
        self,
        collection: str,
        memory_ids: Sequence[str],
        *,
        context: Sequence[str] = (),
        now: datetime | None = None,
    ) -> None:
        """Memories used together (real use, not a bare retrieval): their
        ASSOCIATED edges, and their edges to the ``context`` concepts, are
        reinforced by the seed's rule (+0.1 up to 1.0, new edges at 0.3). Written
        before returning.

        Raises:
            NotFoundError: one of the memories does not exist.
        """
        self.check_collection(collection)
        ids = list(dict.fromkeys(memory_ids))
        found = self.store.get_memories(collection, ids)
        missing = [mid for mid in ids if mid not in found]
        if missing:
            raise NotFoundError(f"no memory {missing[0]!r} in this collection")
        names = unique_names(context, 50)
        at = now or utcnow()
        anchors = [(HUB_EDGE[HubKind.CONCEPT], name) for name in names]
        self.flush_learning()
        self.store.reinforce_edges(collection, co_use_updates(ids, at, REAL_USE, anchors=anchors))
        self.store.append_events(
            collection, [Event(type="use", at=at, memory_ids=ids, payload={"context": names})]
        )

    # -- proactive surfacing and spaced repetition ------------------------------------

    def message(
        self,
        collection: str,
        conversation_id: str,
        text: str,
        *,
        role: str = "user",
        at: datetime | None = None,
        conversation_type: str | None = None,
    ) -> MessageOutcome:
        """Take a conversation message in; returns 0-3 insights to offer now and the
        conversation's state (see :mod:`engine.surface`).

        Raises:
            InvalidInputError: bad id, text, role, type or time.
        """
        self.check_collection(collection)
        return self.surfacer.message(
            collection,
            conversation_id,
            text,
            role=role,
            at=at or utcnow(),
            conversation_type=conversation_type,
            max_chars=self.limits.max_content_chars,
        )

    def engage(
        self, collection: str, surfacing_id: str, engagement: str, *, now: datetime | None = None
    ) -> EngagementOutcome:
        """Record how an offered insight was received (used, helpful, ignored,
        dismissed) and learn from it.

        Raises:
            NotFoundError: no such surfacing. ConflictError: already recorded.
        """
        self.check_collection(collection)
        return self.surfacer.engage(collection, surfacing_id, engagement, at=now or utcnow())

    def feedback(
        self,
        collection: str,
        memory_id: str,
        *,
        helpful: bool,
        context: Sequence[str] = (),
        now: datetime | None = None,
    ) -> Memory:
        """Direct feedback on a memory: helpful counts as the seed's "helpful"
        engagement (and strengthens its edges to the ``context`` concepts), not
        helpful as "dismissed" (an explicit rejection; the context is marked
        irrelevant).

        Raises:
            NotFoundError: no such memory.
        """
        self.check_collection(collection)
        memory = self.get(collection, memory_id)
        names = list(unique_names(context, 50))
        self.flush_learning()
        return self.surfacer.apply(
            collection,
            memory,
            "helpful" if helpful else "dismissed",
            "feedback:" + ",".join(names[:5]) if names else "feedback",
            names,
            now or utcnow(),
        )

    def resurface(
        self, collection: str, *, limit: int = 10, now: datetime | None = None
    ) -> list[tuple[Memory, float]]:
        """Memories due for spaced repetition by the configured scheduler, the most
        valuable first (confidence × importance), with how overdue each is (due
        at 1.0). Active memories only.

        Raises:
            InvalidInputError: a bad limit.
        """
        self.check_collection(collection)
        if not 1 <= limit <= self.limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{self.limits.max_recall_limit}", field="limit")
        at = now or utcnow()
        due = []
        for memory in self.store.iter_memories(collection):
            if memory.tier != Tier.ACTIVE:
                continue
            urgency = self.scheduler.urgency(memory, at)
            if urgency >= 1.0:
                value = memory.retrieval.confidence * memory.importance
                due.append((value, urgency, memory))
        due.sort(key=lambda item: (-item[0], -item[1], item[2].id))
        return [(memory, urgency) for _, urgency, memory in due[:limit]]

    def latency(self, collection: str) -> Latency:
        """p50 / p95 of this process's recent recalls of the collection."""
        self.check_collection(collection)
        samples = sorted(self._latencies.get(collection, ()))
        if not samples:
            return Latency(recalls=0, p50_ms=None, p95_ms=None)

        def at(q: float) -> float:
            return round(samples[min(len(samples) - 1, int(q * len(samples)))], 3)

        return Latency(recalls=len(samples), p50_ms=at(0.5), p95_ms=at(0.95))

    def surfacing_metrics(self, collection: str) -> SurfaceMetrics:
        """Precision, dismissal rates, recall-before-search and lead time."""
        self.check_collection(collection)
        return self.surfacer.metrics(collection)

    def _embed_query(self, text: str) -> Vector | None:
        try:
            vector: Vector = np.asarray(self.embedder.encode([text])[0], dtype=np.float32)
        except EmbeddingError:
            logger.warning("query embedding failed; surfacing by text and graph only")
            return None
        return vector

    def _learn(self, collection: str, updates: list[EdgeUpdate], event: Event) -> None:
        """Queue what a retrieval taught; written in batches (see flush_learning)."""
        with self._pending_lock:
            pending = self._pending.setdefault(collection, ([], []))
            pending[0].extend(updates)
            pending[1].append(event)
            size = sum(len(u) for u, _ in self._pending.values())
        if size >= self.learning.flush_at:
            self.flush_learning()

    def flush_learning(self) -> int:
        """Write queued retrieval reinforcements and events. Bare retrievals are
        batched so a recall never waits on a disk sync; a crash loses at most the
        unflushed batch of this weak, derived signal, never a memory.

        Returns:
            How many edge updates were written.
        """
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        written = 0
        for collection, (updates, events) in pending.items():
            self.store.reinforce_edges(collection, updates)
            self.store.append_events(collection, events)
            written += len(updates)
        return written

    def decay(self, collection: str, *, now: datetime | None = None) -> int:
        """One temporal decay pass over the collection's edges (idempotent per
        day: a second pass the same day changes nothing).

        Returns:
            How many edges lost weight.
        """
        self.check_collection(collection)
        at = now or utcnow()
        self.flush_learning()
        policy = self.learning.decay
        return self.store.decay_edges(
            collection,
            period=decay_period(at),
            unused_before=at - policy.unused_for,
            step=policy.step,
            floor=policy.floor,
        )

    # -- maintenance ------------------------------------------------------------

    def reindex(
        self,
        collection: str,
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Embed every memory without a vector from the current model. Safe to
        stop and run again: each batch is stored as it is done.

        Returns:
            How many memories were embedded.

        Raises:
            EmbeddingError: the embedder failed (what was done so far is kept).
        """
        self.check_collection(collection)
        done = 0
        while True:
            pending = self.store.pending_embeddings(collection, self.embedder.name, batch_size)
            if not pending:
                self.embed_hubs(collection)
                return done
            vectors = self.embedder.encode([m.content for m in pending])
            self.store.set_vectors(
                collection,
                [(m.id, vectors[i], self.embedder.name) for i, m in enumerate(pending)],
            )
            done += len(pending)
            if progress is not None:
                progress(len(pending))

    def embed_hubs(self, collection: str, *, batch_size: int = 512) -> int:
        """Embed the names of hub nodes that have no vector from the current model,
        so a query can anchor on concepts it paraphrases. Best effort: a failing
        embedder leaves them for the next write or reindex.

        Returns:
            How many hub names were embedded.
        """
        done = 0
        while True:
            hubs = self.store.hubs_without_vectors(collection, self.embedder.name, batch_size)
            if not hubs:
                return done
            try:
                vectors = self.embedder.encode([name for _, name in hubs])
            except EmbeddingError:
                logger.warning("embedding %d hub names failed; will retry later", len(hubs))
                return done
            self.store.set_hub_vectors(
                collection,
                [
                    (kind, name, vectors[i], self.embedder.name)
                    for i, (kind, name) in enumerate(hubs)
                ],
            )
            done += len(hubs)
            if len(hubs) < batch_size:
                return done

    def stats(self, collection: str) -> CollectionStats:
        self.check_collection(collection)
        s = self.store.stats(collection)
        return CollectionStats(
            collection=collection,
            memories=s.memories,
            by_category=s.by_category,
            by_tier=s.by_tier,
            pending_embeddings=s.pending_embeddings,
            hubs=s.hubs,
            edges=s.edges,
            events=s.events,
            embedder=self.embedder.name,
            extractor=self.extractor.name,
        )

    def collections(self) -> list[str]:
        return self.store.list_collections()

    # -- backup -----------------------------------------------------------------

    def export(self, collection: str) -> Iterator[dict[str, Any]]:
        """The collection as JSON-ready records: a header, then every memory with its
        vector, then every edge. :meth:`import_records` restores it exactly."""
        self.check_collection(collection)
        yield {"type": "header", "format": EXPORT_FORMAT, "collection": collection}
        edge_ids: list[str] = []
        batch: list[Memory] = []

        def flush() -> Iterator[dict[str, Any]]:
            vectors = self.store.get_vectors(collection, [m.id for m in batch])
            for m in batch:
                vec = vectors.get(m.id)
                yield {
                    "type": "memory",
                    "memory": m.model_dump(mode="json"),
                    "vector": _encode_vector(vec) if vec is not None else None,
                }
            edge_ids.extend(m.id for m in batch)
            batch.clear()

        for memory in self.store.iter_memories(collection):
            batch.append(memory)
            if len(batch) >= 500:
                yield from flush()
        yield from flush()
        seen: set[tuple[str, str, str]] = set()
        for mid in edge_ids:
            for edge in self.store.edges_of(collection, mid):
                key = (edge.type.value, edge.source, edge.target)
                if key not in seen:
                    seen.add(key)
                    yield {"type": "edge", "edge": edge.model_dump(mode="json")}

    def import_records(
        self,
        collection: str,
        records: Iterable[dict[str, Any]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Load records written by :meth:`export` into ``collection`` (which may
        differ from the exported one). Memories whose id already exists are
        skipped; their edges are restored with the weights they had.

        Raises:
            InvalidInputError: a record is malformed (``field`` names its line).
        """
        self.check_collection(collection)
        report = ImportReport()
        pending: list[MemoryRecord] = []
        edges: list[Edge] = []

        def flush() -> None:
            if not pending:
                return
            ids = [r.memory.id for r in pending]
            existing = self.store.get_memories(collection, ids)
            fresh = [r for r in pending if r.memory.id not in existing]
            report.skipped_existing += len(pending) - len(fresh)
            if fresh:
                self.store.add_memories(collection, fresh)
            report.memories += len(fresh)
            if progress is not None:
                progress(len(pending))
            pending.clear()

        for line, record in enumerate(records, start=1):
            kind = record.get("type") if isinstance(record, dict) else None
            try:
                if kind == "header":
                    if record.get("format") != EXPORT_FORMAT:
                        raise InvalidInputError(
                            f"unknown export format {record.get('format')!r}", field=f"line {line}"
                        )
                elif kind == "memory":
                    item = _ExportedMemory.model_validate(record)
                    mem = item.memory.model_copy(update={"collection": collection})
                    vec = _decode_vector(item.vector) if item.vector is not None else None
                    if vec is None:
                        mem = mem.model_copy(update={"embedding_model": None})
                    pending.append(MemoryRecord(memory=mem, vector=vec, edges=_hub_edges_of(mem)))
                    if len(pending) >= 500:
                        flush()
                elif kind == "edge":
                    edges.append(_ExportedEdge.model_validate(record).edge)
                else:
                    raise InvalidInputError(f"unknown record type {kind!r}", field=f"line {line}")
            except (ValidationError, ValueError) as e:
                raise InvalidInputError(f"line {line}: {e}", field=f"line {line}") from e
        flush()
        for i in range(0, len(edges), 1000):
            self.store.upsert_edges(collection, edges[i : i + 1000])
        report.edges = len(edges)
        return report


def _hub_edges(memory_id: str, extraction: Extraction, at: datetime) -> list[Edge]:
    names = {
        HubKind.DOMAIN: extraction.domains,
        HubKind.TRIGGER: extraction.triggers,
        HubKind.CONCEPT: extraction.concepts,
    }
    return [
        Edge(
            source=memory_id,
            type=HUB_EDGE[kind],
            target=name,
            weight=MEMBERSHIP_WEIGHT,
            created_at=at,
        )
        for kind, values in names.items()
        for name in values
    ]


def _hub_edges_of(memory: Memory) -> list[Edge]:
    r = memory.retrieval
    return _hub_edges(
        memory.id,
        Extraction(
            domains=tuple(r.domains), triggers=tuple(r.triggers), concepts=tuple(r.concepts)
        ),
        memory.created_at,
    )


def _encode_vector(vector: Vector) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode_vector(text: str) -> Vector:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 4:
        raise ValueError("a vector's byte length is not a multiple of 4")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


__all__ = [
    "EXPORT_FORMAT",
    "MEMBERSHIP_WEIGHT",
    "Association",
    "CollectionStats",
    "GraphNode",
    "Hippocampus",
    "ImportReport",
    "RememberOutcome",
    "Subgraph",
]
