"""Hippocampus: the facade that composes store, embedder and extractor.

Entry points (the API, the CLI, agents using the library) talk to this class
only. It validates input, embeds and extracts outside the store's write lock,
and hands the store complete records, so every write is all-or-nothing.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from engine.config import COLLECTION_PATTERN, HippoSettings, Limits
from engine.embed import Embedder, EmbedderHealth, GuardedEmbedder, make_embedder, model_name
from engine.embed.lazy import LazyEmbedder
from engine.embed.passages import passages
from engine.errors import (
    ConflictError,
    EmbeddingError,
    HippoError,
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
from engine.extract.dedup import DedupConfig, Verdict, compare, merge_duplicate
from engine.extract.quality import (
    QualityAssessment,
    QualityConfig,
    QualityModel,
    TrainingRun,
    assess,
    feedback_label,
    quality_features,
    retrain,
)
from engine.extract.records import RecordLimits, build_document, indexed_text
from engine.extract.sanitize import has_control_characters, sanitize_text
from engine.learn import (
    BARE_RETRIEVAL,
    REAL_USE,
    LearningConfig,
    co_use_updates,
    decay_period,
)
from engine.learn.tiers import TierChange, TierPolicy, tier_change
from engine.locks import StripedLock
from engine.metrics import GraphHealth, graph_health
from engine.model import (
    HUB_EDGE,
    MEMORY_NODE,
    Anchor,
    Edge,
    EdgeType,
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
from engine.model.memory import MAX_SPEAKER_CHARS
from engine.model.resource import RESOURCE_CATEGORY, RESOURCE_SOURCE, Resource
from engine.retrieve.config import (
    DEFAULT_RECIPE,
    EMBEDDER_DOWN_WARNING,
    RECIPES,
    SearchConfig,
    without_dense,
)
from engine.retrieve.context import TAG_STRENGTH, Reach, context_forms, through_context
from engine.retrieve.pipeline import Candidate, hub_anchor_edges, retrieve
from engine.retrieve.summary import context_summary
from engine.schedule import FsrsScheduler, Scheduler, SeedScheduler
from engine.store import GraphStore, MemoryRecord, Vector
from engine.store.base import passage_score
from engine.store.factory import open_store
from engine.surface import SurfaceConfig, SurfaceMetrics
from engine.surface.conversation import ConversationState
from engine.surface.metrics import SurfaceCounters
from engine.surface.predict import SurfaceModel
from engine.surfacing import (
    CONVERSATION_PREFIX,
    SURFACE_COUNTERS_KEY,
    SURFACE_MODEL_KEY,
    SURFACING_PREFIX,
    ConversationView,
    EngagementOutcome,
    MessageOutcome,
    Surfacer,
    Surfacing,
)

logger = logging.getLogger(__name__)

MEMBERSHIP_WEIGHT = 0.5
"""Starting weight of a memory's edges to its domains, triggers and concepts.
Below the associative gate's 0.5 once damped, so one shared concept alone never
surfaces a memory; use and co-retrieval raise it."""

# \Z, not $: $ also matches before a final newline.
_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}\Z")
_CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_\-]{0,39}\Z")
EXPORT_FORMAT = "hippocampus-jsonl/3"
_READABLE_FORMATS = frozenset({"hippocampus-jsonl/1", "hippocampus-jsonl/2", EXPORT_FORMAT})
LEARNED_SECTION = "learned"
LEARNED_VERSION = 1
"""Version of the export's learned section (the state documents after the
``{"type": "section", "name": "learned", "version": 1}`` record): bumped when
the documents it holds change shape."""
QUALITY_MODEL_KEY = "quality_model"
TIER_PASS_KEY = "tier_pass"
FEEDBACK_COUNT_KEY = "quality_feedback"
"""State document ``{"memories": n}``: how many memories of the collection have
feedback, kept up as engagement gives memories their first feedback, and set
exactly by the tier pass and by each retraining."""
PORTABLE_STATE = (
    QUALITY_MODEL_KEY,
    FEEDBACK_COUNT_KEY,
    SURFACE_MODEL_KEY,
    SURFACE_COUNTERS_KEY,
)
"""State documents that export and ``hippo migrate`` carry with a collection: what
was learned from it and cannot be rebuilt from its memories (the quality model;
surfacing's topic, need, bandit, threshold and confidence models and its
counters)."""
PORTABLE_STATE_PREFIXES = (CONVERSATION_PREFIX, SURFACING_PREFIX)
"""Families of state documents carried too: every conversation's state and every
surfacing record, so engagement of an offer made before the move still teaches."""
_LATENCIES_KEPT = 1000
ASSOCIATE_SORTS = ("strength", "confidence")
"""Orders :meth:`Hippocampus.associate` offers: path strength (default) or the
memory's confidence (the seed's)."""
NOT_EMBEDDED_REASON = (
    "stored without a vector: the embedder is unavailable; flagged for re-embedding "
    "once it recovers"
)
"""The reason given for a memory stored without a vector. The embedder's own error
stays in the log: it may name hosts or files."""


@dataclass(frozen=True)
class RememberOutcome:
    """What happened to one memory given to :meth:`Hippocampus.remember`.

    Attributes:
        memory: the stored memory (the one it was merged into, for a duplicate);
            ``None`` when it was rejected.
        created: whether a new memory was stored.
        duplicate_of: id of the memory this one repeats and was merged into.
        embedded: whether a vector was stored; ``False`` means the memory waits
            for re-embedding (``hippo reindex``) but is stored all the same.
        reasons: what was done to it and why, in words (sanitizing, rejection,
            merging, conflicts, a failed embedding).
        rejected: the quality gate refused it; nothing was stored.
        quality: its quality score (the merged memory's for a duplicate).
        conflicts_with: stored memories it contradicts (linked by CONFLICTS_WITH).
        sanitized: its content was changed before storing (see ``reasons``).
    """

    memory: Memory | None
    created: bool
    duplicate_of: str | None = None
    embedded: bool = True
    reasons: list[str] = field(default_factory=list)
    rejected: bool = False
    quality: float | None = None
    conflicts_with: list[str] = field(default_factory=list)
    sanitized: bool = False


@dataclass(frozen=True)
class ResourceOutcome:
    """What :meth:`Hippocampus.put_resource` did.

    Attributes:
        action: ``created``, ``updated`` (re-indexed), ``unchanged`` (nothing to
            re-index: at most the status, priority or fields the document leaves
            out changed), ``deleted`` (archived) or ``absent`` (archived, and not
            indexed anyway).
        memory: the memory indexing the record (``None`` once deleted).
        reasons: what sanitizing changed, or why nothing was re-indexed.
    """

    resource_id: str
    action: str
    memory: Memory | None
    reasons: list[str] = field(default_factory=list)

    @property
    def reindexed(self) -> bool:
        return self.action in ("created", "updated")

    @property
    def embedded(self) -> bool | None:
        """Whether the record's document has a vector (``False``: it waits for
        re-embedding); ``None`` once deleted."""
        return None if self.memory is None else not self.memory.needs_embedding


@dataclass(frozen=True)
class TurnWindow:
    """A memory with the conversation turns around it, each list in the order they
    happened (both empty for a memory outside any conversation)."""

    memory: Memory
    before: list[Memory]
    after: list[Memory]


MAX_TURN_WINDOW = 50
"""The most turns :meth:`Hippocampus.turns` reads on either side."""


@dataclass(frozen=True)
class _Prepared:
    """A validated, sanitized item and what sanitizing changed."""

    item: NewMemory
    changes: list[str]
    digest: str


@dataclass(frozen=True)
class _NearMatch:
    duplicate: str | None = None
    conflicts: tuple[str, ...] = ()


class QualityStats(BaseModel):
    """The quality gate of a collection: its threshold and its model."""

    min_score: float
    model_version: int = Field(description="0: the prior; +1 per retrained model kept.")
    trained_at: datetime | None
    feedback_seen: int
    last_training: TrainingRun | None


class TierReport(BaseModel):
    """One pass of the tier policy."""

    collection: str
    examined: int
    archived: int
    quarantined: int
    restored: int
    promoted: int = 0
    demoted: int = 0
    changes: list[dict[str, str]] = Field(
        description="id, from, to and reason of each memory that moved (first 100)."
    )
    feedback: int = Field(description="Memories with feedback (feeds quality retraining).")
    retrained: TrainingRun | None = None


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
    quality: QualityStats
    average_quality: float | None = Field(
        description="Mean quality score of the memories that have one (a running total)."
    )
    retrieval_count: int = Field(description="Recalls made of the collection (retrieval events).")


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


class Embedded(NamedTuple):
    """Texts embedded by passages: ``heads`` holds each text's first passage (its
    vector as a memory), one row per text; ``passages`` the rows of its further
    passages, in order, or ``None`` for a text of one passage."""

    heads: Vector
    passages: list[Vector | None]


class _ExportedMemory(BaseModel):
    type: str = Field(pattern="^memory$")
    memory: Memory
    vector: str | None = None
    # The vectors of a long memory's passages after its first (older exports have none).
    passages: list[str] = Field(default_factory=list)


class _ExportedEdge(BaseModel):
    type: str = Field(pattern="^edge$")
    edge: Edge


class _ExportedState(BaseModel):
    type: str = Field(pattern="^state$")
    key: str = Field(min_length=1, max_length=200)
    value: dict[str, Any]


class Hippocampus:
    """The memory engine.

    Args:
        store: where memories live.
        embedder: turns text into vectors.
        extractor: finds domains, triggers and concepts.
        limits: input size limits.
        embed_batch_size: texts per embedding call when remembering many.
        learning: how retrieval and use reinforce edges, and how they decay.
        quality: the quality gate (threshold, source trust, retraining).
        dedup: when a new memory duplicates or contradicts a stored one.
        tiers: when memories are archived or quarantined.
        records_min_score: the least similarity a record needs to be found by
            :meth:`search_records`.
        summary_min_score: the least similarity a result needs to be in a
            :meth:`context_summary` (the seed's 0.7).
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
        quality: QualityConfig | None = None,
        dedup: DedupConfig | None = None,
        tiers: TierPolicy | None = None,
        records_min_score: float = 0.3,
        summary_min_score: float = 0.7,
        surfacing: SurfaceConfig | None = None,
        scheduler: Scheduler | None = None,
        seed: int = 0,
    ) -> None:
        self.store = store
        self.embedder = embedder  # guarded: see the property
        self.extractor = extractor
        self.limits = limits or Limits()
        self.embed_batch_size = embed_batch_size
        self.learning = learning or LearningConfig()
        self.quality_config = quality or QualityConfig()
        self.dedup = dedup or DedupConfig()
        self.tiers = tiers or TierPolicy()
        self.records_min_score = records_min_score
        self.summary_min_score = summary_min_score
        self._pending: dict[str, tuple[list[EdgeUpdate], list[Event]]] = {}
        self._pending_lock = threading.Lock()
        self._latencies: dict[str, deque[float]] = {}
        self._feedback_lock = threading.Lock()
        self._feedback_grown: dict[str, int] = {}
        # Held from reading a memory to writing it back (feedback, engagement, edits,
        # tier moves): concurrent requests must not undo each other's changes.
        self._memory_lock = StripedLock()
        self.scheduler: Scheduler = scheduler or FsrsScheduler()
        self.surfacer = Surfacer(
            store,
            extractor,
            self._embed_query,
            model=lambda: self.embedder.name,
            scheduler=self.scheduler,
            config=surfacing,
            seed=seed,
            on_engaged=self._count_feedback,
            memory_lock=self._memory_lock,
        )

    @property
    def embedder(self) -> GuardedEmbedder:
        """The embedder, guarded: whatever goes wrong in it is an EmbeddingError,
        which costs vectors (memories wait for re-embedding, recall falls back to
        text and graph), never a write or a recall."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = (
            embedder if isinstance(embedder, GuardedEmbedder) else GuardedEmbedder(embedder)
        )

    def embedder_health(self) -> EmbedderHealth:
        """How the embedder fared on its latest call (or load)."""
        return self._embedder.health()

    def recover_embedder(self) -> EmbedderHealth:
        """Try to bring a failing embedder back (load a model that was missing, or
        embed a probe text); the memories waiting for vectors are then embedded by
        :meth:`reindex` (the server's maintenance runs it)."""
        return self._embedder.recover()

    @classmethod
    def from_settings(cls, settings: HippoSettings, *, lazy_model: bool = False) -> Hippocampus:
        """Build the engine the settings describe (store, embedder, extractor).

        With ``lazy_model`` (the embedded store only) the embedding model loads
        when first used, so work that never embeds never waits for it.

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
                embedder = (
                    LazyEmbedder(model_name(settings.embedder, settings.model_path), build_embedder)
                    if lazy_model
                    else build_embedder()
                )
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
            quality=settings.quality,
            dedup=settings.dedup,
            tiers=settings.tiers,
            records_min_score=settings.records_min_score,
            summary_min_score=settings.summary_min_score,
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

    def check_id(self, value: str, where: str = "id") -> str:
        """An id as given by a caller (memory, resource, conversation).

        Raises:
            InvalidInputError: empty, too long, or holding control characters
                (including zero-width and bidirectional ones) or slashes.
        """
        if (
            not _ID_PATTERN.match(value)
            or len(value) > self.limits.max_id_chars
            or has_control_characters(value)
        ):
            raise InvalidInputError(
                f"ids are 1-{self.limits.max_id_chars} characters with no control "
                "characters or slashes",
                field=where,
            )
        return value

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
        if item.id is not None:
            self.check_id(item.id, f"{where}id")
        if item.conversation_id is not None:
            self.check_id(item.conversation_id, f"{where}conversation_id")
        if len(item.synthesized_from) > self.limits.max_tags:
            raise LimitExceededError(
                f"at most {self.limits.max_tags} memories in synthesized_from",
                field=f"{where}synthesized_from",
            )
        for source_id in item.synthesized_from:
            self.check_id(source_id, f"{where}synthesized_from")
        source = self._check_source(item.source, f"{where}source")
        speaker = self._check_speaker(item.speaker, f"{where}speaker")
        category = item.category.strip().lower()
        if not _CATEGORY_PATTERN.match(category):
            raise InvalidInputError(
                "category is 1-40 characters: lower-case letters, digits, _ and -",
                field=f"{where}category",
            )
        tags = self._check_names(item.tags, f"{where}tags")
        for name in ("domains", "triggers", "concepts"):
            given = getattr(item, name)
            if given is not None:
                self._check_names(given, f"{where}{name}")
        return item.model_copy(
            update={
                "content": content,
                "category": category,
                "tags": tags,
                "source": source,
                "speaker": speaker,
            }
        )

    def _check_speaker(self, speaker: str | None, where: str) -> str | None:
        """A speaker label as given: trimmed, 1-100 characters, no control characters."""
        if speaker is None:
            return None
        name = speaker.strip()
        if not name or len(name) > MAX_SPEAKER_CHARS or has_control_characters(name):
            raise InvalidInputError(
                f"speaker is 1-{MAX_SPEAKER_CHARS} characters with no control characters",
                field=where,
            )
        return name

    def _check_source(self, source: str | None, where: str) -> str | None:
        if source is None:
            return None
        name = source.strip()
        if not name or len(name) > self.limits.max_source_chars or has_control_characters(name):
            raise InvalidInputError(
                f"source is 1-{self.limits.max_source_chars} characters with no control characters",
                field=where,
            )
        return name

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
            if has_control_characters(name):
                raise InvalidInputError(
                    "values may not hold control characters (zero-width and bidirectional "
                    "ones included)",
                    field=where,
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
        """Validate, sanitize, judge, embed, extract and store memories.

        Each memory, in order:

        - its content is sanitized: hidden characters go, role markers and
          instructions aimed at a reading model are neutralized (``reasons`` says so);
        - the same content already stored (or earlier in the batch) is merged into
          that memory (provenance appended, its ``duplicates`` count raised) and
          named in ``duplicate_of``;
        - the quality gate scores it; below the threshold it is rejected
          (``rejected``, with the reasons) unless its source is exempt;
        - a stored memory it nearly repeats (cosine > 0.95, or most of the words
          of a short text) gets the same merge, unless the item has its own id
          (an id the caller will look up is never merged away); one it
          contradicts ("use X" against "don't use X") is linked to it by
          ``CONFLICTS_WITH`` and named in ``conflicts_with``.

        If the embedder fails, the memories are stored without vectors and flagged
        for re-embedding; they are never dropped.

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
        prepared = [
            self._prepare(item, f"memories[{i}]." if batch else "") for i, item in enumerate(items)
        ]
        self._check_provenance(collection, prepared, batch)
        model = self.quality_model(collection)
        outcomes: list[RememberOutcome | None] = [None] * len(prepared)
        merged: dict[str, Memory] = {}  # stored memories this call merges into, by id
        events: list[Event] = []
        first_in_batch: dict[str, int] = {}
        fresh: list[tuple[int, float]] = []  # (index, quality score)

        # Exact repeats of stored content, then the gate.
        for i, p in enumerate(prepared):
            stored = self._stored_with_hash(collection, p.digest, merged)
            if stored is not None:
                merged[stored.id] = merge_duplicate(
                    stored, p.item, at, max_tags=self.limits.max_tags
                )
                outcomes[i] = RememberOutcome(
                    memory=merged[stored.id],
                    created=False,
                    duplicate_of=stored.id,
                    embedded=not stored.needs_embedding,
                    reasons=[*p.changes, "the same content is already stored"],
                    quality=stored.retrieval.quality_score,
                    sanitized=bool(p.changes),
                )
                continue
            if p.digest in first_in_batch:
                continue
            verdict = assess(p.item.content, p.item.source, model, self.quality_config)
            if not verdict.accepted:
                outcomes[i] = self._rejected(collection, p, verdict, events, at)
                continue
            first_in_batch[p.digest] = i
            fresh.append((i, verdict.score))

        seen_ids: set[str] = set()
        for i, _ in fresh:
            item_id = prepared[i].item.id
            if item_id is not None:
                if item_id in seen_ids:
                    raise ConflictError(
                        f"id {item_id!r} appears twice in the batch",
                        field=f"memories[{i}].id" if batch else "id",
                    )
                seen_ids.add(item_id)

        texts = [prepared[i].item.content for i, _ in fresh]
        embedded = self._embed(texts)
        vectors = embedded.heads if embedded is not None else None
        extractions = self.extractor.extract_many(texts) if texts else []

        created: dict[int, Memory] = {}  # batch index -> memory to create
        created_vectors: dict[int, Vector | None] = {}
        created_passages: dict[int, Vector | None] = {}
        created_edges: dict[int, list[Edge]] = {}
        # The stored neighbors of every new memory, in one pass over the index. By
        # whole memories (their first passage): a note that repeats one passage of
        # a long memory does not repeat the memory.
        neighbors: list[list[tuple[str, float]]] = [[] for _ in fresh]
        if vectors is not None and fresh:
            neighbors = self.store.search_vectors_many(
                collection,
                vectors,
                model=self.embedder.name,
                k=self.dedup.candidates,
                filters=RecallFilters(tiers=list(Tier)),
                passages=False,
            )
        for n, (i, score) in enumerate(fresh):
            p = prepared[i]
            vector = vectors[n] if vectors is not None else None
            found = self._near_duplicates(
                collection, p.item.content, vector, neighbors[n], created, created_vectors, merged
            )
            # A caller-given id names a record the caller will look up: merging it
            # away would leave that id dangling, so it is stored and the likeness noted.
            kept_apart = found.duplicate if p.item.id is not None else None
            if found.duplicate is not None and kept_apart is None:
                target = found.duplicate
                if target not in merged and target not in {m.id for m in created.values()}:
                    stored_memory = self.store.get_memories(collection, [target])[target]
                    merged[target] = merge_duplicate(
                        stored_memory, p.item, at, max_tags=self.limits.max_tags
                    )
                    base = merged[target]
                else:
                    base = self._merge_target(target, p.item, at, created, merged)
                outcomes[i] = RememberOutcome(
                    memory=base,
                    created=False,
                    duplicate_of=target,
                    embedded=not base.needs_embedding,
                    reasons=[*p.changes, f"nearly the same as memory {target!r}: merged into it"],
                    quality=base.retrieval.quality_score,
                    sanitized=bool(p.changes),
                )
                events.append(
                    Event(type="duplicate_merged", at=at, memory_ids=[target], payload={})
                )
                continue
            extraction = merge_given(
                extractions[n],
                domains=p.item.domains,
                triggers=p.item.triggers,
                concepts=p.item.concepts,
            )
            memory = self._new_memory(
                collection, p.item, p.digest, extraction, score, at, embedded=vector is not None
            )
            created[i] = memory
            created_vectors[i] = vector
            created_passages[i] = embedded.passages[n] if embedded is not None else None
            edges = _hub_edges(memory.id, extraction, at)
            edges.extend(
                Edge(
                    source=memory.id,
                    type=EdgeType.CONFLICTS_WITH,
                    target=other,
                    weight=1.0,
                    created_at=at,
                )
                for other in found.conflicts
            )
            edges.extend(
                Edge(
                    source=memory.id,
                    type=EdgeType.SYNTHESIZED_FROM,
                    target=origin,
                    weight=1.0,
                    created_at=at,
                )
                for origin in memory.retrieval.synthesized_from
            )
            created_edges[i] = edges
            reasons = list(p.changes)
            if kept_apart is not None:
                reasons.append(
                    f"nearly the same as memory {kept_apart!r}; stored apart: it has its own id"
                )
            if found.conflicts:
                reasons.append(
                    "contradicts "
                    + ", ".join(f"memory {c!r}" for c in found.conflicts)
                    + ": both kept, linked by CONFLICTS_WITH"
                )
                events.append(
                    Event(
                        type="conflict",
                        at=at,
                        memory_ids=[memory.id, *found.conflicts],
                        payload={},
                    )
                )
            if vector is None:
                reasons.append(NOT_EMBEDDED_REASON)
            outcomes[i] = RememberOutcome(
                memory=memory,
                created=True,
                embedded=vector is not None,
                reasons=reasons,
                quality=score,
                conflicts_with=list(found.conflicts),
                sanitized=bool(p.changes),
            )

        # Repeats of content earlier in the batch: one more duplicate of what the
        # first occurrence became.
        for i, p in enumerate(prepared):
            if outcomes[i] is not None:
                continue
            first = outcomes[first_in_batch[p.digest]]
            assert first is not None and first.memory is not None
            target = first.duplicate_of or first.memory.id
            base = self._merge_target(target, p.item, at, created, merged)
            outcomes[i] = RememberOutcome(
                memory=base,
                created=False,
                duplicate_of=target,
                embedded=first.embedded,
                reasons=[*p.changes, "the same content appears earlier in the batch"],
                quality=base.retrieval.quality_score,
                sanitized=bool(p.changes),
            )

        records = [
            MemoryRecord(
                memory=created[i],
                vector=created_vectors[i],
                edges=created_edges[i],
                passages=created_passages[i],
            )
            for i in sorted(created)
        ]
        if records:
            self.store.add_memories(collection, records)
        # Merges after the insert: a refused insert (an id that exists) writes nothing.
        for memory in merged.values():
            self.store.replace_memory(collection, MemoryRecord(memory=memory), replace_edges=False)
        if records and vectors is not None:
            self.embed_hubs(collection)
        if events:
            self.store.append_events(collection, events)

        # Every outcome shows its memory as written (later items may have merged into it).
        written = {m.id: m for m in created.values()} | merged
        final: list[RememberOutcome] = []
        for outcome in outcomes:
            assert outcome is not None
            if outcome.memory is not None and outcome.memory.id in written:
                outcome = dataclasses.replace(outcome, memory=written[outcome.memory.id])
            final.append(outcome)
        return final

    def _merge_target(
        self,
        target: str,
        item: NewMemory,
        at: datetime,
        created: dict[int, Memory],
        merged: dict[str, Memory],
    ) -> Memory:
        """Merge ``item`` into ``target``: a stored memory this call already merges
        into, or one it creates. Returns the merged memory."""
        if target in merged:
            merged[target] = merge_duplicate(
                merged[target], item, at, max_tags=self.limits.max_tags
            )
            return merged[target]
        j = next(j for j, m in created.items() if m.id == target)
        created[j] = merge_duplicate(created[j], item, at, max_tags=self.limits.max_tags)
        return created[j]

    def _check_provenance(
        self, collection: str, prepared: Sequence[_Prepared], batch: bool
    ) -> None:
        """Every memory named in ``synthesized_from`` is stored in the collection.

        Raises:
            InvalidInputError: one is not (``field`` names the item).
        """
        wanted = {mid for p in prepared for mid in p.item.synthesized_from}
        if not wanted:
            return
        found = self.store.get_memories(collection, sorted(wanted))
        for i, p in enumerate(prepared):
            missing = [mid for mid in p.item.synthesized_from if mid not in found]
            if missing:
                raise InvalidInputError(
                    f"synthesized_from names no stored memory {missing[0]!r}",
                    field=f"memories[{i}].synthesized_from" if batch else "synthesized_from",
                )

    def _prepare(self, item: NewMemory, where: str) -> _Prepared:
        """Validate and sanitize one item."""
        checked = self._check_new(item, where)
        cleaned = sanitize_text(checked.content)
        if not cleaned.text.strip():
            raise InvalidInputError(
                "content is empty once hidden characters and instructions are removed",
                field=f"{where}content",
            )
        checked = checked.model_copy(update={"content": cleaned.text})
        return _Prepared(item=checked, changes=cleaned.changes, digest=content_hash(cleaned.text))

    def _stored_with_hash(
        self, collection: str, digest: str, merged: dict[str, Memory]
    ) -> Memory | None:
        """The stored memory with this content (as this call has merged it so far)."""
        existing = self.store.find_by_hash(collection, digest)
        if not existing:
            return None
        if existing[0] in merged:
            return merged[existing[0]]
        return self.store.get_memories(collection, existing[:1]).get(existing[0])

    def _rejected(
        self,
        collection: str,
        p: _Prepared,
        verdict: QualityAssessment,
        events: list[Event],
        at: datetime,
    ) -> RememberOutcome:
        threshold = self.quality_config.min_score
        logger.info(
            "quality gate: rejected a memory for %s (score %.2f < %.2f; source %s): %s",
            collection,
            verdict.score,
            threshold,
            p.item.source,
            "; ".join(verdict.reasons) or "low score",
        )
        events.append(
            Event(
                type="quality_rejected",
                at=at,
                payload={
                    "score": round(verdict.score, 4),
                    "threshold": threshold,
                    "source": p.item.source,
                    "content_hash": p.digest,
                    "reasons": verdict.reasons,
                },
            )
        )
        return RememberOutcome(
            memory=None,
            created=False,
            embedded=False,
            rejected=True,
            quality=verdict.score,
            reasons=[
                *p.changes,
                f"rejected by the quality gate: score {verdict.score:.2f} is below {threshold:.2f}",
                *verdict.reasons,
            ],
            sanitized=bool(p.changes),
        )

    def _near_duplicates(
        self,
        collection: str,
        content: str,
        vector: Vector | None,
        neighbors: list[tuple[str, float]],
        created: dict[int, Memory],
        created_vectors: dict[int, Vector | None],
        merged: dict[str, Memory],
    ) -> _NearMatch:
        """The stored (or earlier in the batch) memory ``content`` nearly repeats, or
        the ones it contradicts. Compared: the nearest stored memories by vector
        (``neighbors``) and, for a short text, by words; and the memories this batch
        creates nearest by vector."""
        config = self.dedup
        every_tier = RecallFilters(tiers=list(Tier))
        similarity: dict[str, float | None] = dict(neighbors)
        if len(content.split()) <= config.short_tokens:
            for mid, _ in self.store.search_text(
                collection, content, k=config.candidates, filters=every_tier
            ):
                similarity.setdefault(mid, None)
        stored = self.store.get_memories(collection, [m for m in similarity if m not in merged])
        texts = {mid: m.content for mid, m in stored.items()}
        texts.update({mid: merged[mid].content for mid in similarity if mid in merged})
        # Memories this batch creates: the nearest by vector, like the stored ones.
        batch = [(j, m) for j, m in created.items()]
        if vector is not None and batch:
            sims = [
                (float(np.dot(vector, v)) if (v := created_vectors.get(j)) is not None else -2.0)
                for j, _ in batch
            ]
            nearest = sorted(range(len(batch)), key=lambda x: -sims[x])[: config.candidates]
            batch = [batch[x] for x in nearest]
        for j, memory in batch:
            texts[memory.id] = memory.content
            other = created_vectors.get(j)
            similarity[memory.id] = (
                float(np.dot(vector, other)) if vector is not None and other is not None else None
            )
        ranked = sorted(
            (mid for mid in similarity if mid in texts),
            key=lambda mid: (-(similarity[mid] or -2.0), mid),
        )
        conflicts: list[str] = []
        for mid in ranked:
            verdict = compare(content, texts[mid], similarity[mid], config).verdict
            if verdict == Verdict.DUPLICATE:
                return _NearMatch(duplicate=mid)
            if verdict == Verdict.CONFLICT:
                conflicts.append(mid)
        return _NearMatch(conflicts=tuple(conflicts))

    def _new_memory(
        self,
        collection: str,
        item: NewMemory,
        digest: str,
        extraction: Extraction,
        quality: float | None,
        at: datetime,
        *,
        embedded: bool,
    ) -> Memory:
        return Memory(
            id=item.id or str(uuid.uuid4()),
            collection=collection,
            content=item.content,
            category=item.category,
            importance=item.importance,
            source=item.source,
            tags=item.tags,
            created_at=at,
            updated_at=at,
            occurred_at=item.occurred_at or at,
            speaker=item.speaker,
            content_hash=digest,
            embedding_model=self.embedder.name if embedded else None,
            embedding_generated_at=at if embedded else None,
            retrieval=RetrievalMeta(
                domains=list(extraction.domains),
                triggers=list(extraction.triggers),
                concepts=list(extraction.concepts),
                conversation_ids=[item.conversation_id] if item.conversation_id else [],
                synthesized_from=list(dict.fromkeys(item.synthesized_from)),
                quality_score=quality,
            ),
        )

    def _embed(self, texts: Sequence[str]) -> Embedded | None:
        """Vectors for ``texts``, or ``None`` when the embedder fails."""
        try:
            return self._encode(texts)
        except EmbeddingError as e:
            logger.warning(
                "embedding failed (%s); storing %d memories for re-embedding", e.message, len(texts)
            )
            return None

    def _encode(self, texts: Sequence[str]) -> Embedded:
        """Embed each text by its passages (``limits.passage_chars``, overlapping by
        ``limits.passage_overlap``), the passages of all texts together in batches.

        Raises:
            EmbeddingError: the embedder failed.
        """
        size, overlap = self.limits.passage_chars, self.limits.passage_overlap
        pieces: list[str] = []
        counts: list[int] = []
        for text in texts:
            cuts = passages(text, size, overlap)
            pieces.extend(text[start:end] for start, end in cuts)
            counts.append(len(cuts))
        if not pieces:
            return Embedded(np.zeros((0, self.embedder.dim), dtype=np.float32), [])
        parts = [
            self.embedder.encode(pieces[i : i + self.embed_batch_size])
            for i in range(0, len(pieces), self.embed_batch_size)
        ]
        vectors = np.vstack(parts).astype(np.float32, copy=False)
        firsts = np.cumsum([0, *counts[:-1]])
        rest = [
            vectors[first + 1 : first + count].copy() if count > 1 else None
            for first, count in zip(firsts.tolist(), counts, strict=True)
        ]
        return Embedded(vectors[firsts], rest)

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
        """Edit a memory. Content is sanitized like new content; content that
        changes is re-embedded, re-extracted (its hub edges follow) and re-scored
        for quality; unchanged content is never re-embedded. If the embedder fails
        on the new content, the old vector is dropped and the memory is flagged for
        re-embedding (``embedding_model`` is ``None``), as :meth:`remember` does.

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: a field is invalid; nothing is written.
        """
        with self._memory_lock(collection, memory_id):
            return self._update(collection, memory_id, patch, now or utcnow())

    def _update(self, collection: str, memory_id: str, patch: MemoryPatch, at: datetime) -> Memory:
        current = self.get(collection, memory_id)
        update: dict[str, Any] = {"updated_at": at}
        retrieval = current.retrieval.model_copy()
        vector: Vector | None = None
        passage_vectors: Vector | None = None
        content_changed = False
        for name in ("tags", "domains", "triggers", "concepts"):
            given_names = getattr(patch, name)
            if given_names is not None:
                self._check_names(given_names, name)
        source = self._check_source(patch.source, "source") if patch.source is not None else None
        if patch.content is not None:
            checked = self._prepare(NewMemory(content=patch.content), "")
            if checked.changes:
                logger.info(
                    "memory %s in %s: content sanitized on edit (%s)",
                    memory_id,
                    collection,
                    "; ".join(checked.changes),
                )
            text = checked.item.content
            if checked.digest != current.content_hash:
                content_changed = True
                update["content"] = text
                update["content_hash"] = checked.digest
                embedded = self._embed([text])
                vector = embedded.heads[0] if embedded is not None else None
                passage_vectors = embedded.passages[0] if embedded is not None else None
                update["embedding_model"] = self.embedder.name if vector is not None else None
                update["embedding_generated_at"] = at if vector is not None else None
                extraction = self.extractor.extract_many([text])[0]
                retrieval.domains = list(extraction.domains)
                retrieval.triggers = list(extraction.triggers)
                retrieval.concepts = list(extraction.concepts)
                retrieval.quality_score = assess(
                    text,
                    source if source is not None else current.source,
                    self.quality_model(collection),
                    self.quality_config,
                ).score
        if patch.category is not None:
            update["category"] = self._check_new(
                NewMemory(content="x", category=patch.category), ""
            ).category
        if patch.importance is not None:
            update["importance"] = patch.importance
        if patch.tier is not None:
            update["tier"] = patch.tier
        if source is not None:
            update["source"] = source
        if patch.tags is not None:
            update["tags"] = self._check_names(patch.tags, "tags")
        if patch.occurred_at is not None:
            update["occurred_at"] = patch.occurred_at
        if patch.speaker is not None:
            update["speaker"] = self._check_speaker(patch.speaker, "speaker")
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
        # New content the embedder failed on: the old vector describes the old text,
        # so it is dropped (recall would match the new text by it) and the memory
        # waits for re-embedding like one remembered while the embedder is down.
        drop_vector = content_changed and vector is None
        if drop_vector:
            memory = memory.model_copy(
                update={"embedding_model": None, "embedding_generated_at": None}
            )
        self.store.replace_memory(
            collection,
            MemoryRecord(
                memory=memory,
                vector=vector,
                edges=_hub_edges(memory.id, given, at) if hubs_changed else (),
                drop_vector=drop_vector,
                passages=passage_vectors,
            ),
            replace_edges=hubs_changed,
        )
        if hubs_changed and memory.embedding_model is not None:
            self.embed_hubs(collection)
        return memory

    def turns(
        self, collection: str, memory_id: str, *, before: int = 2, after: int = 2
    ) -> TurnWindow:
        """The memory and up to ``before`` / ``after`` turns of its conversation just
        before and after it, in the order they happened (see
        :meth:`GraphStore.neighbour_turns`).

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: ``before`` or ``after`` outside 0-50.
        """
        for name, value in (("before", before), ("after", after)):
            if not 0 <= value <= MAX_TURN_WINDOW:
                raise InvalidInputError(f"{name} is 0-{MAX_TURN_WINDOW}", field=name)
        memory = self.get(collection, memory_id)
        earlier, later = self.store.neighbour_turns(
            collection, [memory_id], before=before, after=after
        ).get(memory_id, ([], []))
        found = self.store.get_memories(collection, [*earlier, *later])
        return TurnWindow(
            memory=memory,
            before=[found[i] for i in earlier if i in found],
            after=[found[i] for i in later if i in found],
        )

    def forget(self, collection: str, memory_id: str) -> None:
        """Delete a memory with its edges.

        Raises:
            NotFoundError: no such memory.
        """
        self.check_collection(collection)
        if not self.store.delete_memory(collection, memory_id):
            raise NotFoundError(f"no memory {memory_id!r} in this collection")

    # -- records ----------------------------------------------------------------

    def put_resource(
        self,
        collection: str,
        resource_id: str,
        resource: Resource,
        *,
        now: datetime | None = None,
    ) -> ResourceOutcome:
        """Index an application's record under its own id, as the deterministic
        document :func:`~engine.extract.records.build_document` builds.

        Indexed again only when what the document indexes changed (title,
        description, category, a meaningful custom field); a change of status,
        priority, or of fields the document leaves out (numbers, ids, dates,
        assignees) re-embeds nothing. A record whose status is ``ARCHIVED`` is
        removed. Records skip the quality gate and duplicate merging: the
        application's records are its truth, and two alike records are two.

        Raises:
            InvalidInputError: a bad id, an empty title or status, an oversized
                field (``field`` names it); nothing is written.
            ConflictError: the id belongs to a memory that is not a record.
        """
        self.check_collection(collection)
        self.check_id(resource_id, "resource_id")
        at = now or utcnow()
        existing = self.store.get_memories(collection, [resource_id]).get(resource_id)
        if existing is not None and existing.source != RESOURCE_SOURCE:
            raise ConflictError(
                f"{resource_id!r} is the id of a memory that is not a record",
                field="resource_id",
            )
        if resource.archived:
            if existing is None:
                return ResourceOutcome(resource_id, "absent", None)
            self.store.delete_memory(collection, resource_id)
            logger.info("deleted resource %s from %s (archived)", resource_id, collection)
            return ResourceOutcome(resource_id, "deleted", None)
        document = build_document(
            resource,
            RecordLimits(
                max_title_chars=self.limits.max_title_chars,
                max_document_chars=self.limits.max_content_chars,
                max_custom_fields=self.limits.max_custom_fields,
                max_field_name_chars=self.limits.max_tag_chars,
                max_field_value_chars=self.limits.max_custom_field_chars,
            ),
        )
        reasons = list(document.changes)
        if existing is not None:
            if existing.content == document.text:
                reasons.append("the document is unchanged: not re-indexed")
                return ResourceOutcome(resource_id, "unchanged", existing, reasons)
            if indexed_text(existing.content) == indexed_text(document.text):
                reasons.append(
                    "only the status, priority or fields the document leaves out changed: "
                    "not re-indexed"
                )
                return ResourceOutcome(resource_id, "unchanged", existing, reasons)
            memory = self.update(
                collection,
                resource_id,
                MemoryPatch(
                    content=document.text, category=RESOURCE_CATEGORY, source=RESOURCE_SOURCE
                ),
                now=at,
            )
            if memory.needs_embedding:
                reasons.append(NOT_EMBEDDED_REASON)
            logger.info("updated resource %s in %s", resource_id, collection)
            return ResourceOutcome(resource_id, "updated", memory, reasons)

        first = self.store.stats(collection).memories == 0
        item = NewMemory(
            content=document.text,
            id=resource_id,
            category=RESOURCE_CATEGORY,
            source=RESOURCE_SOURCE,
        )
        embedded = self._embed([item.content])
        extraction = self.extractor.extract_many([item.content])[0]
        score = assess(
            item.content, item.source, self.quality_model(collection), self.quality_config
        ).score
        memory = self._new_memory(
            collection,
            item,
            content_hash(item.content),
            extraction,
            score,
            at,
            embedded=embedded is not None,
        )
        self.store.add_memories(
            collection,
            [
                MemoryRecord(
                    memory=memory,
                    vector=embedded.heads[0] if embedded is not None else None,
                    edges=_hub_edges(memory.id, extraction, at),
                    passages=embedded.passages[0] if embedded is not None else None,
                )
            ],
        )
        if embedded is not None:
            self.embed_hubs(collection)
        else:
            reasons.append(NOT_EMBEDDED_REASON)
        if first:
            logger.info("created collection %s", collection)
        logger.info("added resource %s to %s", resource_id, collection)
        return ResourceOutcome(resource_id, "created", memory, reasons)

    def delete_resource(self, collection: str, resource_id: str) -> None:
        """Remove a record from the index.

        Raises:
            NotFoundError: no such record in the collection.
        """
        self.check_collection(collection)
        found = self.store.get_memories(collection, [resource_id]).get(resource_id)
        if found is None or found.source != RESOURCE_SOURCE:
            raise NotFoundError(f"no resource {resource_id!r} in this collection")
        self.store.delete_memory(collection, resource_id)
        logger.info("deleted resource %s from %s", resource_id, collection)

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
        was down) are kept, as ``min_score`` is then not applied to recall."""
        least = self.summary_min_score if min_score is None else min_score
        hits = [h for h in result.hits if h.similarity is None or h.similarity >= least]
        return context_summary(hits, self.store.stats(collection).memories)

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
    ) -> list[Association]:
        """Memories associated with a set of concepts (the seed's
        retrieveAssociatedInsights): expansion from the hubs the concepts name.
        Each result passes the multi-path gate: paths from at least two of the
        concepts, or one path of at least ``min_path_strength``.

        Args:
            sort: ``strength`` (default: the strongest connection to the context
                first) or ``confidence`` (the seed's order: the memory's own
                confidence first, path strength breaking ties). Either way the
                ``limit`` best are chosen from everything that passed the gate.

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
        # extractor's lemmas, to hubs of every kind; and to memories' tags.
        forms = context_forms(names, self.extractor.extract_many(list(names)))
        hubs = self.store.match_hubs(collection, list(forms))
        base = filters or RecallFilters()
        reached: dict[str, Reach] = {}
        if hubs:
            params = self.recipe(DEFAULT_RECIPE).expand.model_copy(update={"max_depth": max_depth})
            origin = {(h.kind, h.name): forms[h.name] for h in hubs}
            for e in self.store.expand(
                collection,
                [Anchor(kind=h.kind, name=h.name) for h in hubs],
                params=params,
                filters=base,
            ):
                if (kept := through_context(e, origin)) is not None:
                    reached[e.memory_id] = kept
        self._add_tagged(collection, names, base, reached, limit)
        found = sorted((r.expansion() for r in reached.values()), key=lambda e: -e.strength)
        passed = [e for e in found if e.anchors >= 2 or e.strength >= min_path_strength]
        if sort == "strength":
            passed = passed[:limit]
        memories = self.store.get_memories(collection, [e.memory_id for e in passed])
        if sort == "confidence":
            passed = sorted(
                (e for e in passed if e.memory_id in memories),
                key=lambda e: (
                    -memories[e.memory_id].retrieval.confidence,
                    -e.strength,
                    e.memory_id,
                ),
            )[:limit]
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

    def _add_tagged(
        self,
        collection: str,
        names: Sequence[str],
        filters: RecallFilters,
        reached: dict[str, Reach],
        limit: int,
    ) -> None:
        """Credit each context name to the memories tagged with it, at
        :data:`TAG_STRENGTH` (tags are not hubs: no path is drawn for them)."""
        vector = self._embed_query(" ".join(names))
        if vector is None:
            return
        for name in names:
            tagged = filters.model_copy(update={"tags": [name]})
            for memory_id, _ in self.store.search_vectors(
                collection, vector, model=self.embedder.name, k=limit, filters=tagged
            ):
                reached.setdefault(memory_id, Reach(memory_id)).add(name, TAG_STRENGTH)

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
    ) -> list[Edge]:
        """Memories used together (real use, not a bare retrieval): their
        ASSOCIATED edges, and their edges to the ``context`` concepts, are
        reinforced by the seed's rule (+0.1 up to 1.0, new edges at 0.3). Written
        before returning.

        Returns:
            The ASSOCIATED edges among the memories, as they now are.

        Raises:
            NotFoundError: one of the memories does not exist.
            InvalidInputError: more memories than a recall may return.
        """
        self.check_collection(collection)
        ids = list(dict.fromkeys(self.check_id(mid, "ids") for mid in memory_ids))
        if len(ids) > self.limits.max_recall_limit:
            raise InvalidInputError(
                f"at most {self.limits.max_recall_limit} memories are used together", field="ids"
            )
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
        among = set(ids)
        edges: dict[tuple[str, str], Edge] = {}
        for mid in ids:
            for edge in self.store.edges_of(collection, mid):
                if edge.type == EdgeType.ASSOCIATED and {edge.source, edge.target} <= among:
                    pair = (min(edge.source, edge.target), max(edge.source, edge.target))
                    edges.setdefault(pair, edge)
        return sorted(edges.values(), key=lambda e: (e.source, e.target))

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
        conversation's state (see :mod:`engine.surfacing`).

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

    def conversation(self, collection: str, conversation_id: str) -> ConversationView:
        """A conversation's state as surfacing sees it.

        Raises:
            NotFoundError: no such conversation in the collection.
        """
        self.check_collection(collection)
        return self.surfacer.conversation(collection, conversation_id)

    def engage(
        self, collection: str, surfacing_id: str, engagement: str, *, now: datetime | None = None
    ) -> EngagementOutcome:
        """Record how an offered insight was received (used, helpful, ignored,
        dismissed) and learn from it.

        Raises:
            NotFoundError: no such surfacing. ConflictError: already recorded.
        """
        self.check_collection(collection)
        at = now or utcnow()
        outcome = self.surfacer.engage(collection, surfacing_id, engagement, at=at)
        self._retrain_after_feedback(collection, at)
        return outcome

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
        names = list(unique_names(context, 50))
        at = now or utcnow()
        self.flush_learning()
        with self._memory_lock(collection, memory_id):
            memory = self.get(collection, memory_id)
            updated = self.surfacer.apply(
                collection,
                memory,
                "helpful" if helpful else "dismissed",
                "feedback:" + ",".join(names[:5]) if names else "feedback",
                names,
                at,
            )
        self._retrain_after_feedback(collection, at)
        return updated

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

    def _queued(self, collection: str, event_type: str = "retrieval") -> int:
        """Events of a type queued for the collection and not yet written."""
        with self._pending_lock:
            pending = self._pending.get(collection)
            return sum(1 for e in pending[1] if e.type == event_type) if pending else 0

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
            types=policy.edge_types,
        )

    # -- maintenance ------------------------------------------------------------

    def reindex(
        self,
        collection: str,
        *,
        batch_size: int = 256,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Embed the memories that have no vector from the current model (none yet,
        or another model's). Resumable: each batch is stored as soon as it is done,
        so after a crash or an embedder failure a new run takes up the rest.

        Args:
            batch_size: memories embedded and stored together.
            limit: embed at most this many (``None``: all of them).
            progress: called with the size of each batch stored.

        Returns:
            How many memories were embedded.

        Raises:
            EmbeddingError: the embedder failed (what was done so far is kept).
        """
        self.check_collection(collection)
        self._embedder.recover()  # a model missing at start may be there now
        done = 0
        while limit is None or done < limit:
            size = batch_size if limit is None else min(batch_size, limit - done)
            pending = self.store.pending_embeddings(collection, self.embedder.name, size)
            if not pending:
                break
            embedded = self._encode([m.content for m in pending])
            self.store.set_vectors(
                collection,
                [(m.id, embedded.heads[i], self.embedder.name) for i, m in enumerate(pending)],
                at=utcnow(),
                passages={
                    m.id: rows
                    for m, rows in zip(pending, embedded.passages, strict=True)
                    if rows is not None
                },
            )
            done += len(pending)
            if progress is not None:
                progress(len(pending))
        self.embed_hubs(collection)
        if done:
            logger.info(
                "re-embedded %d memories of %s with %s", done, collection, self.embedder.name
            )
        return done

    def pending_count(self, collection: str) -> int:
        """How many memories wait for a vector from the current model."""
        self.check_collection(collection)
        return self.store.count_pending_embeddings(collection, self.embedder.name)

    def apply_tiers(self, collection: str, *, now: datetime | None = None) -> TierReport:
        """One pass of the tier policy over the collection: old, little-used memories
        are archived, repeatedly dismissed or collapsed ones quarantined, archived
        ones used again restored (see :mod:`engine.learn.tiers`). Also counts the
        memories with feedback and retrains the quality model when enough more
        have it (:meth:`maybe_retrain_quality`).
        """
        self.check_collection(collection)
        at = now or utcnow()
        self.flush_learning()
        examined = 0
        feedback = 0
        changes: list[TierChange] = []
        for memory in self.store.iter_memories(collection):
            examined += 1
            if feedback_label(memory) is not None:
                feedback += 1
            change = tier_change(
                memory, at, self.tiers, quality_exempt=self.quality_config.exempt(memory.source)
            )
            if change is not None:
                changes.append(change)
        applied: list[TierChange] = []
        for change in changes:
            # Read again: the memory may have been edited since the scan.
            with self._memory_lock(collection, change.memory_id):
                found = self.store.get_memories(collection, [change.memory_id])
                current = found.get(change.memory_id)
                if current is None or current.tier != change.before:
                    continue
                promoted_at = current.retrieval.promoted_at
                if change.promote is not None or change.after != Tier.ACTIVE:
                    promoted_at = at if change.promote else None
                moved = current.model_copy(
                    update={
                        "tier": change.after,
                        "updated_at": at,
                        "retrieval": current.retrieval.model_copy(
                            update={"promoted_at": promoted_at}
                        ),
                    }
                )
                self.store.replace_memory(
                    collection, MemoryRecord(memory=moved), replace_edges=False
                )
            applied.append(change)
            logger.info(
                "memory %s in %s: %s -> %s (%s)",
                change.memory_id,
                collection,
                change.before.value,
                change.after.value,
                change.reason,
            )
        if applied:
            self.store.append_events(
                collection,
                [
                    Event(
                        type="tier_change",
                        at=at,
                        memory_ids=[c.memory_id],
                        payload={"from": c.stages[0], "to": c.stages[1], "reason": c.reason},
                    )
                    for c in applied
                ],
            )
        self.store.put_states(
            collection,
            {TIER_PASS_KEY: {"at": at.isoformat()}, FEEDBACK_COUNT_KEY: {"memories": feedback}},
        )
        retrained = self.maybe_retrain_quality(collection, feedback, now=at)
        return TierReport(
            collection=collection,
            examined=examined,
            archived=sum(1 for c in applied if c.after == Tier.ARCHIVED),
            quarantined=sum(1 for c in applied if c.after == Tier.QUARANTINED),
            restored=sum(1 for c in applied if c.after == Tier.ACTIVE and c.promote is None),
            promoted=sum(1 for c in applied if c.promote is True),
            demoted=sum(1 for c in applied if c.promote is False),
            changes=[
                {
                    "id": c.memory_id,
                    "from": c.stages[0],
                    "to": c.stages[1],
                    "reason": c.reason,
                }
                for c in applied[:100]
            ],
            feedback=feedback,
            retrained=retrained,
        )

    def tier_pass_due(self, collection: str, *, now: datetime | None = None) -> bool:
        """Whether the tier policy has not run on the collection this (UTC) day."""
        at = now or utcnow()
        state = self.store.get_states(collection, [TIER_PASS_KEY]).get(TIER_PASS_KEY)
        if state is None:
            return True
        try:
            last = datetime.fromisoformat(str(state.get("at")))
        except ValueError:
            return True
        return decay_period(last) != decay_period(at)

    # -- quality ----------------------------------------------------------------

    def quality_model(self, collection: str) -> QualityModel:
        """The collection's quality model: the last one trained and kept, else the
        prior. Read from the store on every call, so processes sharing a store
        share it."""
        state = self.store.get_states(collection, [QUALITY_MODEL_KEY]).get(QUALITY_MODEL_KEY)
        if state is None:
            return QualityModel()
        try:
            return QualityModel.model_validate(state)
        except ValidationError:
            logger.warning(
                "the stored quality model of %s is unreadable; using the prior", collection
            )
            return QualityModel()

    def assess_quality(
        self, collection: str, content: str, source: str | None = None
    ) -> QualityAssessment:
        """What the quality gate thinks of a text (nothing is stored)."""
        self.check_collection(collection)
        return assess(content, source, self.quality_model(collection), self.quality_config)

    def maybe_retrain_quality(
        self, collection: str, feedback_count: int, *, now: datetime | None = None
    ) -> TrainingRun | None:
        """Retrain the quality model when ``feedback_count`` (memories of the
        collection with feedback) has grown by ``retrain_every`` (500) since the
        last retraining. Called whenever feedback is recorded: by :meth:`engage` and
        :meth:`feedback` when a memory gets its first feedback (with the kept
        count, :meth:`feedback_count`), and by the tier pass (with an exact count).

        Returns:
            The retraining run, or ``None`` when none was due.
        """
        model = self.quality_model(collection)
        if feedback_count < model.feedback_seen + self.quality_config.retrain_every:
            return None
        return self.retrain_quality(collection, now=now)

    def feedback_count(self, collection: str) -> int:
        """How many memories of the collection have feedback (see
        :func:`~engine.extract.quality.feedback_label`), as counted so far: kept
        up by engagement, set exactly by the tier pass and each retraining.
        Counted by a scan only when the collection has no count yet."""
        self.check_collection(collection)
        held = self.store.get_states(collection, [FEEDBACK_COUNT_KEY]).get(FEEDBACK_COUNT_KEY)
        if held is not None:
            return _feedback_memories(held)
        return self._scan_feedback(collection)

    def _scan_feedback(self, collection: str) -> int:
        return sum(1 for m in self.store.iter_memories(collection) if feedback_label(m) is not None)

    def _count_feedback(self, collection: str, before: Memory, after: Memory) -> None:
        """After an engagement is written: count the memory if this was its first
        feedback, and note the count for :meth:`_retrain_after_feedback`."""
        if feedback_label(before) is not None or feedback_label(after) is None:
            return
        with self._feedback_lock:
            held = self.store.get_states(collection, [FEEDBACK_COUNT_KEY]).get(FEEDBACK_COUNT_KEY)
            if held is not None:
                count = _feedback_memories(held) + 1
            else:
                # No count yet (feedback older than the count): one scan, which
                # already sees this memory's feedback.
                count = self._scan_feedback(collection)
            self.store.put_states(collection, {FEEDBACK_COUNT_KEY: {"memories": count}})
            self._feedback_grown[collection] = count

    def _retrain_after_feedback(self, collection: str, at: datetime) -> None:
        """Retrain the quality model if the feedback just recorded brought enough
        more memories with feedback (:meth:`maybe_retrain_quality`); outside the
        surfacer's locks, and only when a memory got its first feedback. The
        feedback is recorded already: a retraining that fails is logged, and
        tried again with the next memory to get feedback or the tier pass."""
        with self._feedback_lock:
            count = self._feedback_grown.pop(collection, None)
        if count is None:
            return
        try:
            self.maybe_retrain_quality(collection, count, now=at)
        except HippoError as e:
            logger.warning("retraining the quality model of %s failed: %s", collection, e)

    def retrain_quality(self, collection: str, *, now: datetime | None = None) -> TrainingRun:
        """Retrain the collection's quality model from the memories with feedback
        (see :func:`~engine.extract.quality.feedback_label`). The new model is kept
        only if it predicts held-out feedback at least as well as the current one;
        the run (time, metrics of both, the decision) is stored either way and
        shown by :meth:`stats`.
        """
        self.check_collection(collection)
        at = now or utcnow()
        examples = []
        for memory in self.store.iter_memories(collection):
            label = feedback_label(memory)
            if label is None:
                continue
            trust = self.quality_config.trust_of(memory.source)
            examples.append((memory.id, quality_features(memory.content, trust), label))
        model = retrain(
            self.quality_model(collection),
            examples,
            feedback=len(examples),
            now=at,
            config=self.quality_config,
        )
        self.store.put_states(
            collection,
            {
                QUALITY_MODEL_KEY: model.model_dump(mode="json"),
                FEEDBACK_COUNT_KEY: {"memories": len(examples)},
            },
        )
        run = model.last_training
        assert run is not None
        logger.info(
            "quality model of %s retrained on %d memories with feedback: %s (held-out log "
            "loss %s against %s)",
            collection,
            len(examples),
            "kept" if run.accepted else "discarded",
            f"{run.candidate.log_loss:.4f}" if run.candidate else "n/a",
            f"{run.previous.log_loss:.4f}" if run.previous else "n/a",
        )
        return run

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
        """Counts by category and tier, memories waiting for a vector from the
        current model, hubs, edges, events, and the quality gate's model."""
        self.check_collection(collection)
        s = self.store.stats(collection)
        model = self.quality_model(collection)
        return CollectionStats(
            collection=collection,
            memories=s.memories,
            by_category=s.by_category,
            by_tier=s.by_tier,
            pending_embeddings=self.store.count_pending_embeddings(collection, self.embedder.name),
            hubs=s.hubs,
            edges=s.edges,
            events=s.events,
            # Rounded: a running sum drifts in the last bits with the order of writes.
            average_quality=round(s.quality_sum / s.quality_scored, 6)
            if s.quality_scored
            else None,
            retrieval_count=s.events_by_type.get("retrieval", 0) + self._queued(collection),
            embedder=self.embedder.name,
            extractor=self.extractor.name,
            quality=QualityStats(
                min_score=self.quality_config.min_score,
                model_version=model.version,
                trained_at=model.trained_at,
                feedback_seen=model.feedback_seen,
                last_training=model.last_training,
            ),
        )

    def collections(self) -> list[str]:
        return self.store.list_collections()

    # -- backup -----------------------------------------------------------------

    def export(self, collection: str) -> Iterator[dict[str, Any]]:
        """The collection as JSON-ready records: a header, then every memory with its
        vector (tier, provenance and counts included), then every edge (conflicts
        included), then the learned quality model. :meth:`import_records` restores
        it exactly."""
        self.check_collection(collection)
        yield {"type": "header", "format": EXPORT_FORMAT, "collection": collection}
        edge_ids: list[str] = []
        batch: list[Memory] = []

        def flush() -> Iterator[dict[str, Any]]:
            ids = [m.id for m in batch]
            vectors = self.store.get_vectors(collection, ids)
            passage_vectors = self.store.get_passages(collection, ids)
            for m in batch:
                vec = vectors.get(m.id)
                record: dict[str, Any] = {
                    "type": "memory",
                    "memory": m.model_dump(mode="json"),
                    "vector": _encode_vector(vec) if vec is not None else None,
                }
                rows = passage_vectors.get(m.id)
                if rows is not None and vec is not None:
                    record["passages"] = [_encode_vector(row) for row in rows]
                yield record
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
        # The learned section: its header comes before its first document, and
        # not at all for a collection that has learned nothing.
        section = {"type": "section", "name": LEARNED_SECTION, "version": LEARNED_VERSION}
        keys = self.portable_state_keys(collection)
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            stored = self.store.get_states(collection, chunk)
            for state_key in chunk:
                if state_key in stored:
                    if section:
                        yield section
                        section = {}
                    yield {"type": "state", "key": state_key, "value": stored[state_key]}

    def portable_state_keys(self, collection: str) -> list[str]:
        """Keys of the state documents that travel with the collection (export,
        ``hippo migrate``): :data:`PORTABLE_STATE` and every document of the
        :data:`PORTABLE_STATE_PREFIXES` families it holds."""
        keys = list(PORTABLE_STATE)
        for prefix in PORTABLE_STATE_PREFIXES:
            keys.extend(self.store.list_state_keys(collection, prefix))
        return keys

    def import_records(
        self,
        collection: str,
        records: Iterable[dict[str, Any]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Load records written by :meth:`export` into ``collection`` (which may
        differ from the exported one). Memories whose id already exists are
        skipped; their edges are restored with the weights they had. A learned
        model is restored unless the collection already has one.

        Raises:
            InvalidInputError: a record is malformed (``field`` names its line).
        """
        self.check_collection(collection)
        report = ImportReport()
        pending: list[MemoryRecord] = []
        edges: list[Edge] = []
        states: list[_ExportedState] = []

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
                    if record.get("format") not in _READABLE_FORMATS:
                        raise InvalidInputError(
                            f"unknown export format {record.get('format')!r}", field=f"line {line}"
                        )
                elif kind == "memory":
                    item = _ExportedMemory.model_validate(record)
                    mem = item.memory.model_copy(update={"collection": collection})
                    vec = _decode_vector(item.vector) if item.vector is not None else None
                    rows = None
                    if vec is None:
                        mem = mem.model_copy(
                            update={"embedding_model": None, "embedding_generated_at": None}
                        )
                    elif item.passages:
                        rows = np.vstack([_decode_vector(p) for p in item.passages])
                    pending.append(
                        MemoryRecord(
                            memory=mem, vector=vec, edges=_hub_edges_of(mem), passages=rows
                        )
                    )
                    if len(pending) >= 500:
                        flush()
                elif kind == "edge":
                    edges.append(_ExportedEdge.model_validate(record).edge)
                elif kind == "section":
                    if (
                        record.get("name") != LEARNED_SECTION
                        or record.get("version") != LEARNED_VERSION
                    ):
                        raise InvalidInputError(
                            f"unknown section {record.get('name')!r} version "
                            f"{record.get('version')!r}",
                            field=f"line {line}",
                        )
                elif kind == "state":
                    state = _ExportedState.model_validate(record)
                    _check_portable_state(state.key, state.value, f"line {line}")
                    states.append(state)
                else:
                    raise InvalidInputError(f"unknown record type {kind!r}", field=f"line {line}")
            except (ValidationError, ValueError) as e:
                raise InvalidInputError(f"line {line}: {e}", field=f"line {line}") from e
        flush()
        for i in range(0, len(edges), 1000):
            self.store.upsert_edges(collection, edges[i : i + 1000])
        report.edges = len(edges)
        for i in range(0, len(states), 500):
            chunk = states[i : i + 500]
            held = self.store.get_states(collection, [s.key for s in chunk])
            self.store.put_states(collection, {s.key: s.value for s in chunk if s.key not in held})
        return report


_PORTABLE_SHAPES: dict[str, type[BaseModel]] = {
    QUALITY_MODEL_KEY: QualityModel,
    SURFACE_MODEL_KEY: SurfaceModel,
    SURFACE_COUNTERS_KEY: SurfaceCounters,
    CONVERSATION_PREFIX: ConversationState,
    SURFACING_PREFIX: Surfacing,
}


def _check_portable_state(key: str, value: dict[str, Any], where: str) -> None:
    """An imported state document: a portable key, and the shape its reader expects.

    Raises:
        InvalidInputError: another key. ValidationError: a document of the wrong shape.
    """
    family = next((p for p in PORTABLE_STATE_PREFIXES if key.startswith(p)), key)
    if key not in PORTABLE_STATE and family == key:
        raise InvalidInputError(f"unknown state {key!r}", field=where)
    shape = _PORTABLE_SHAPES.get(family)
    if shape is not None:
        shape.model_validate(value)


def _feedback_memories(held: dict[str, Any]) -> int:
    count = held.get("memories")
    return count if isinstance(count, int) and count >= 0 else 0


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
    "QualityStats",
    "RememberOutcome",
    "ResourceOutcome",
    "Subgraph",
    "TierReport",
]
