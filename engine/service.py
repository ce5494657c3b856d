"""Hippocampus: the facade that composes store, embedder and extractor.

Entry points (the API, the CLI, agents using the library) talk to this class
only. It validates input, embeds and extracts outside the store's write lock,
and hands the store complete records, so every write is all-or-nothing.

The work itself is done by the services of :mod:`hippocampus.services`, each
built here with the parts and the other services it uses, each an attribute of
the engine (``engine.remembering``, ``engine.retrieval``...). Each public method
of the engine is one of theirs; this module builds the engine and keeps the
names callers import from it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from hippocampus.config import HippoSettings, Limits
from hippocampus.embed import Embedder, EmbedderHealth, GuardedEmbedder
from hippocampus.extract import ConceptExtractor
from hippocampus.extract.dedup import DedupConfig
from hippocampus.extract.quality import QualityAssessment, QualityConfig, QualityModel, TrainingRun
from hippocampus.learn import LearningConfig
from hippocampus.learn.tiers import TierPolicy
from hippocampus.metrics import CachedGraphHealth, GraphHealth
from hippocampus.model import (
    Edge,
    EventRetention,
    Memory,
    MemoryPatch,
    NewMemory,
    RecallFilters,
    RecallResult,
    Resource,
)
from hippocampus.retrieve.config import DEFAULT_RECIPE, SearchConfig
from hippocampus.schedule import FsrsScheduler, Scheduler, SeedScheduler
from hippocampus.services.batch import RememberOutcome
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context, Kept, open_parts
from hippocampus.services.conversations import ConversationService
from hippocampus.services.engagement import EngagementService
from hippocampus.services.exploration import ASSOCIATE_SORTS as ASSOCIATE_SORTS
from hippocampus.services.exploration import (
    Association,
    Associations,
    ExplorationService,
    GraphNode,
    Subgraph,
)
from hippocampus.services.features import NOT_EMBEDDED_REASON as NOT_EMBEDDED_REASON
from hippocampus.services.features import Embedded as Embedded
from hippocampus.services.features import TextFeatures
from hippocampus.services.hubs import CONCEPT_WEIGHT, MEMBERSHIP_WEIGHT, NAME_WEIGHT
from hippocampus.services.judging import EditOutcome, Judge
from hippocampus.services.learning import LearningQueue
from hippocampus.services.maintenance import TIER_PASS_KEY as TIER_PASS_KEY
from hippocampus.services.maintenance import MaintenanceService, TierReport
from hippocampus.services.memories import MAX_TURN_WINDOW as MAX_TURN_WINDOW
from hippocampus.services.memories import MemoryService
from hippocampus.services.memories import TurnWindow as TurnWindow
from hippocampus.services.quality import FEEDBACK_COUNT_KEY as FEEDBACK_COUNT_KEY
from hippocampus.services.quality import QUALITY_MODEL_KEY as QUALITY_MODEL_KEY
from hippocampus.services.quality import QualityGate
from hippocampus.services.recall import Corroboration as Corroboration
from hippocampus.services.recall import Latency as Latency
from hippocampus.services.recall import RecallService
from hippocampus.services.remembering import RememberingService
from hippocampus.services.resources import ResourceOutcome, ResourceService
from hippocampus.services.stats import CollectionStats, QualityStats, StatisticsService
from hippocampus.services.transfer import EXPORT_FORMAT, ImportReport, TransferService
from hippocampus.services.transfer import LEARNED_SECTION as LEARNED_SECTION
from hippocampus.services.transfer import LEARNED_VERSION as LEARNED_VERSION
from hippocampus.services.transfer import PORTABLE_STATE as PORTABLE_STATE
from hippocampus.services.transfer import PORTABLE_STATE_PREFIXES as PORTABLE_STATE_PREFIXES
from hippocampus.store import GraphStore, Vector
from hippocampus.surface import SurfaceConfig, SurfaceMetrics
from hippocampus.surface.outcomes import ConversationView, EngagementOutcome, MessageOutcome
from hippocampus.surface.surfacer import Surfacer


class Hippocampus:
    """The memory engine.

    Its services are its attributes (``engine.retrieval``, ...), and so are
    its settings, each kept by the service that uses it: set on the engine,
    it is set there.

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
        events: how much of each collection's event log maintenance keeps.
        graph_health_max_age_s: how old the graph health of ``/stats`` may be
            before maintenance computes it again.
        records_min_score: the least similarity a record needs to be found by
            :meth:`search_records`.
        summary_min_score: the least similarity a result needs to be in a
            :meth:`context_summary` (the seed's 0.7).
        surfacing: gates, thresholds and learning of proactive surfacing.
        scheduler: spaced repetition (FSRS-6 by default).
        random_seed: makes surfacing's exploration reproducible (``seed``, its
            former name, is still accepted, with a deprecation warning).
    """

    store = Kept[GraphStore]("context")
    extractor = Kept[ConceptExtractor]("context")
    limits = Kept[Limits]("context")
    learning = Kept[LearningConfig]("context")
    quality_config = Kept[QualityConfig]("context")
    embed_batch_size = Kept[int]("features")
    dedup = Kept[DedupConfig]("judge")
    tiers = Kept[TierPolicy]("maintenance")
    event_retention = Kept[EventRetention]("maintenance")
    graph_health_max_age_s = Kept[float]("statistics")
    records_min_score = Kept[float]("retrieval")
    summary_min_score = Kept[float]("retrieval")
    scheduler = Kept[Scheduler]("conversations")

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
        events: EventRetention | None = None,
        graph_health_max_age_s: float = 600.0,
        records_min_score: float = 0.3,
        summary_min_score: float = 0.7,
        surfacing: SurfaceConfig | None = None,
        scheduler: Scheduler | None = None,
        random_seed: int = 0,
        seed: int | None = None,
    ) -> None:
        if seed is not None:
            warnings.warn(
                "Hippocampus(seed=...) is now random_seed=...", DeprecationWarning, stacklevel=2
            )
            random_seed = seed
        context = Context(
            store,
            embedder,
            extractor,
            limits=limits or Limits(),
            learning=learning or LearningConfig(),
            quality_config=quality or QualityConfig(),
        )
        self.context = context
        self.checks = checks = Checks(context)
        self.features = features = TextFeatures(context, embed_batch_size=embed_batch_size)
        self.learning_queue = queue = LearningQueue(context)
        self.quality_gate = quality_gate = QualityGate(context, checks)
        self.judge = judge = Judge(context, dedup or DedupConfig())
        scheduler = scheduler or FsrsScheduler()
        self.surfacer = Surfacer(
            store,
            extractor,
            features.embed_query,
            model=lambda: context.embedder.name,
            scheduler=scheduler,
            config=surfacing,
            random_seed=random_seed,
            on_engaged=quality_gate.count_feedback,
        )
        self.remembering = RememberingService(context, checks, features, quality_gate, judge)
        self.memories = MemoryService(context, checks, features, quality_gate, judge)
        self.resources = ResourceService(context, checks, features, quality_gate, self.memories)
        self.retrieval = RecallService(
            context,
            checks,
            queue,
            self.surfacer,
            records_min_score=records_min_score,
            summary_min_score=summary_min_score,
        )
        self.exploration = ExplorationService(context, checks, features)
        self.conversations = ConversationService(context, checks, self.surfacer, scheduler)
        self.engagement = EngagementService(context, checks, queue, self.surfacer, quality_gate)
        self.maintenance = MaintenanceService(
            context,
            checks,
            features,
            queue,
            quality_gate,
            tiers=tiers or TierPolicy(),
            event_retention=events or EventRetention(),
        )
        self.statistics = StatisticsService(
            context, checks, queue, quality_gate, graph_health_max_age_s=graph_health_max_age_s
        )
        self.transfer = TransferService(context, checks)

    @classmethod
    def from_settings(cls, settings: HippoSettings, *, lazy_model: bool = False) -> Hippocampus:
        """Build the engine the settings describe (store, embedder, extractor: see
        :func:`~hippocampus.services.context.open_parts`, and ``lazy_model`` there)."""
        store, embedder, extractor = open_parts(settings, lazy_model=lazy_model)
        return cls(
            store,
            embedder,
            extractor,
            limits=settings.limits,
            embed_batch_size=settings.embed_batch_size,
            quality=settings.quality,
            dedup=settings.dedup,
            tiers=settings.tiers,
            events=settings.events,
            graph_health_max_age_s=settings.graph_health_max_age_s,
            records_min_score=settings.records_min_score,
            summary_min_score=settings.summary_min_score,
            scheduler=FsrsScheduler() if settings.scheduler == "fsrs" else SeedScheduler(),
            learning=settings.learning,
            surfacing=settings.surfacing,
        )

    def close(self) -> None:
        """Write what retrievals taught, then release the store."""
        try:
            self.learning_queue.close()
        finally:
            self.store.close()

    # -- the shared parts -------------------------------------------------------
    @property
    def embedder(self) -> GuardedEmbedder:
        """The embedder, guarded (see :attr:`Context.embedder
        <hippocampus.services.context.Context.embedder>`); set here, every
        service uses the new one."""
        return self.context.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self.context.embedder = embedder

    def embedder_health(self) -> EmbedderHealth:
        return self.features.health()

    def recover_embedder(self) -> EmbedderHealth:
        return self.features.recover()

    def check_collection(self, collection: str) -> str:
        return self.checks.check_collection(collection)

    def check_id(self, value: str, where: str = "id") -> str:
        return self.checks.check_id(value, where)

    def flush_learning(self) -> int:
        return self.learning_queue.flush()

    def embed_hubs(
        self,
        collection: str,
        *,
        batch_size: int = 512,
        encode: Callable[[Sequence[str]], Vector] | None = None,
    ) -> int:
        return self.features.embed_hubs(collection, batch_size=batch_size, encode=encode)

    # -- remembering ------------------------------------------------------------
    def remember(
        self, collection: str, item: NewMemory, *, now: datetime | None = None
    ) -> RememberOutcome:
        return self.remembering.remember(collection, item, now=now)

    def remember_many(
        self, collection: str, items: Sequence[NewMemory], *, now: datetime | None = None
    ) -> list[RememberOutcome]:
        return self.remembering.remember_many(collection, items, now=now)

    def remember_batches(
        self,
        collection: str,
        batches: Iterable[Sequence[NewMemory]],
        *,
        now: datetime | None = None,
    ) -> Iterator[list[RememberOutcome]]:
        return self.remembering.remember_batches(collection, batches, now=now)

    # -- memories ---------------------------------------------------------------
    def get(self, collection: str, memory_id: str) -> Memory:
        return self.memories.get(collection, memory_id)

    def hubs_of(self, collection: str, memory_id: str) -> list[Edge]:
        return self.memories.hubs_of(collection, memory_id)

    def update(
        self, collection: str, memory_id: str, patch: MemoryPatch, *, now: datetime | None = None
    ) -> Memory:
        return self.memories.update(collection, memory_id, patch, now=now)

    def edit(
        self, collection: str, memory_id: str, patch: MemoryPatch, *, now: datetime | None = None
    ) -> EditOutcome:
        return self.memories.edit(collection, memory_id, patch, now=now)

    def turns(
        self, collection: str, memory_id: str, *, before: int = 2, after: int = 2
    ) -> TurnWindow:
        return self.memories.turns(collection, memory_id, before=before, after=after)

    def forget(self, collection: str, memory_id: str) -> None:
        self.memories.forget(collection, memory_id)

    # -- resources --------------------------------------------------------------
    def put_resource(
        self, collection: str, resource_id: str, resource: Resource, *, now: datetime | None = None
    ) -> ResourceOutcome:
        return self.resources.put_resource(collection, resource_id, resource, now=now)

    def delete_resource(self, collection: str, resource_id: str) -> None:
        self.resources.delete_resource(collection, resource_id)

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
        return self.retrieval.recall(
            collection,
            query,
            limit=limit,
            filters=filters,
            min_score=min_score,
            query_vector=query_vector,
            recipe=recipe,
            explain=explain,
            learn=learn,
            now=now,
            conversation_id=conversation_id,
            as_of=as_of,
        )

    def search_records(
        self, collection: str, query: str, *, limit: int = 5, min_score: float | None = None
    ) -> list[str]:
        return self.retrieval.search_records(collection, query, limit=limit, min_score=min_score)

    def context_summary(
        self, collection: str, result: RecallResult, *, min_score: float | None = None
    ) -> str:
        return self.retrieval.context_summary(collection, result, min_score=min_score)

    def recipe(self, recipe: str | SearchConfig) -> SearchConfig:
        return self.retrieval.recipe(recipe)

    def corroboration(self, collection: str) -> Corroboration:
        return self.retrieval.corroboration(collection)

    def latency(self, collection: str) -> Latency:
        return self.retrieval.latency(collection)

    # -- exploration ------------------------------------------------------------
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
        return self.exploration.associate(
            collection,
            context,
            min_path_strength=min_path_strength,
            max_depth=max_depth,
            limit=limit,
            filters=filters,
            sort=sort,
        )

    def subgraph(
        self, collection: str, center: str, *, depth: int = 1, max_nodes: int = 200
    ) -> Subgraph:
        return self.exploration.subgraph(collection, center, depth=depth, max_nodes=max_nodes)

    # -- conversations ----------------------------------------------------------
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
        return self.conversations.message(
            collection, conversation_id, text, role=role, at=at, conversation_type=conversation_type
        )

    def conversation(self, collection: str, conversation_id: str) -> ConversationView:
        return self.conversations.conversation(collection, conversation_id)

    def resurface(
        self, collection: str, *, limit: int = 10, now: datetime | None = None
    ) -> list[tuple[Memory, float]]:
        return self.conversations.resurface(collection, limit=limit, now=now)

    def surfacing_metrics(self, collection: str) -> SurfaceMetrics:
        return self.conversations.surfacing_metrics(collection)

    # -- engagement -------------------------------------------------------------
    def record_use(
        self,
        collection: str,
        memory_ids: Sequence[str],
        *,
        context: Sequence[str] = (),
        now: datetime | None = None,
    ) -> list[Edge]:
        return self.engagement.record_use(collection, memory_ids, context=context, now=now)

    def engage(
        self, collection: str, surfacing_id: str, engagement: str, *, now: datetime | None = None
    ) -> EngagementOutcome:
        return self.engagement.engage(collection, surfacing_id, engagement, now=now)

    def feedback(
        self,
        collection: str,
        memory_id: str,
        *,
        helpful: bool,
        context: Sequence[str] = (),
        now: datetime | None = None,
    ) -> Memory:
        return self.engagement.feedback(
            collection, memory_id, helpful=helpful, context=context, now=now
        )

    # -- the quality gate -------------------------------------------------------
    def quality_model(self, collection: str) -> QualityModel:
        return self.quality_gate.quality_model(collection)

    def assess_quality(
        self, collection: str, content: str, source: str | None = None
    ) -> QualityAssessment:
        return self.quality_gate.assess_quality(collection, content, source)

    def maybe_retrain_quality(
        self, collection: str, feedback_count: int, *, now: datetime | None = None
    ) -> TrainingRun | None:
        return self.quality_gate.maybe_retrain_quality(collection, feedback_count, now=now)

    def retrain_quality(self, collection: str, *, now: datetime | None = None) -> TrainingRun:
        return self.quality_gate.retrain_quality(collection, now=now)

    def feedback_count(self, collection: str) -> int:
        return self.quality_gate.feedback_count(collection)

    # -- maintenance ------------------------------------------------------------
    def take_maintenance_turn(self, holder: str, term_s: float) -> bool:
        return self.maintenance.take_maintenance_turn(holder, term_s)

    def decay(self, collection: str, *, now: datetime | None = None) -> int:
        return self.maintenance.decay(collection, now=now)

    def compact_events(self, collection: str, *, now: datetime | None = None) -> int:
        return self.maintenance.compact_events(collection, now=now)

    def reindex(
        self,
        collection: str,
        *,
        batch_size: int = 256,
        limit: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        return self.maintenance.reindex(
            collection, batch_size=batch_size, limit=limit, progress=progress
        )

    def pending_count(self, collection: str) -> int:
        return self.maintenance.pending_count(collection)

    def apply_tiers(self, collection: str, *, now: datetime | None = None) -> TierReport:
        return self.maintenance.apply_tiers(collection, now=now)

    def tier_pass_due(self, collection: str, *, now: datetime | None = None) -> bool:
        return self.maintenance.tier_pass_due(collection, now=now)

    @property
    def store_kind(self) -> str:
        """The store this engine runs on, by its class (``EmbeddedStore``, ``Neo4jStore``)."""
        return self.maintenance.store_kind

    def check_store(self) -> None:
        self.maintenance.check_store()

    def warm(self) -> int:
        return self.maintenance.warm()

    # -- statistics -------------------------------------------------------------
    def stats(self, collection: str) -> CollectionStats:
        return self.statistics.stats(collection)

    def collections(self) -> list[str]:
        return self.statistics.collections()

    def most_valuable(self, collection: str, limit: int = 5) -> list[Memory]:
        return self.statistics.most_valuable(collection, limit)

    def graph_health(self, collection: str) -> GraphHealth:
        return self.statistics.graph_health(collection)

    def stats_graph_health(
        self,
        collection: str,
        *,
        counts: CollectionStats | None = None,
        max_age_s: float | None = None,
        now: datetime | None = None,
    ) -> CachedGraphHealth | None:
        return self.statistics.stats_graph_health(
            collection, counts=counts, max_age_s=max_age_s, now=now
        )

    def graph_health_due(self, collection: str, *, now: datetime | None = None) -> bool:
        return self.statistics.graph_health_due(collection, now=now)

    def refresh_graph_health(
        self,
        collection: str,
        *,
        now: datetime | None = None,
        unless_younger_than: float | None = None,
    ) -> CachedGraphHealth:
        return self.statistics.refresh_graph_health(
            collection, now=now, unless_younger_than=unless_younger_than
        )

    # -- transfer ---------------------------------------------------------------
    def export_lines(self, collection: str) -> Iterator[str]:
        return self.transfer.export_lines(collection)

    def export(self, collection: str) -> Iterator[dict[str, Any]]:
        return self.transfer.export(collection)

    def portable_state_keys(self, collection: str) -> list[str]:
        return self.transfer.portable_state_keys(collection)

    def import_records(
        self,
        collection: str,
        records: Iterable[dict[str, Any]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        return self.transfer.import_records(collection, records, progress=progress)


__all__ = [
    "CONCEPT_WEIGHT",
    "EXPORT_FORMAT",
    "MEMBERSHIP_WEIGHT",
    "NAME_WEIGHT",
    "Association",
    "Associations",
    "CollectionStats",
    "EditOutcome",
    "GraphNode",
    "Hippocampus",
    "ImportReport",
    "QualityStats",
    "RememberOutcome",
    "ResourceOutcome",
    "Subgraph",
    "TierReport",
]
