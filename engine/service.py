"""Hippocampus: the facade that composes store, embedder and extractor.

Entry points (the API, the CLI, agents using the library) talk to this class
only. It validates input, embeds and extracts outside the store's write lock,
and hands the store complete records, so every write is all-or-nothing.

The work itself is split by job, one mixin each under :mod:`hippocampus.services`:
remembering, records, recall, conversations (surfacing), feedback, maintenance
and transfer, over the state and helpers of :mod:`hippocampus.services.core`. This
module builds the engine and keeps the names callers import from it.
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from hippocampus.config import HippoSettings, Limits
from hippocampus.embed import Embedder, make_embedder, model_name
from hippocampus.embed.lazy import LazyEmbedder
from hippocampus.extract import ConceptExtractor, make_extractor
from hippocampus.extract.dedup import DedupConfig
from hippocampus.extract.lazy import LazyExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.learn import LearningConfig
from hippocampus.learn.tiers import TierPolicy
from hippocampus.locks import StripedLock
from hippocampus.model import EventRetention
from hippocampus.schedule import FsrsScheduler, Scheduler, SeedScheduler
from hippocampus.services.conversations import ConversationJobs
from hippocampus.services.core import CONCEPT_WEIGHT as CONCEPT_WEIGHT
from hippocampus.services.core import FEEDBACK_COUNT_KEY as FEEDBACK_COUNT_KEY
from hippocampus.services.core import MEMBERSHIP_WEIGHT as MEMBERSHIP_WEIGHT
from hippocampus.services.core import NAME_WEIGHT as NAME_WEIGHT
from hippocampus.services.core import NOT_EMBEDDED_REASON as NOT_EMBEDDED_REASON
from hippocampus.services.core import QUALITY_MODEL_KEY as QUALITY_MODEL_KEY
from hippocampus.services.core import TIER_PASS_KEY as TIER_PASS_KEY
from hippocampus.services.core import Embedded as Embedded
from hippocampus.services.feedback import FeedbackJobs
from hippocampus.services.maintenance import (
    CollectionStats,
    MaintenanceJobs,
    QualityStats,
    TierReport,
)
from hippocampus.services.recall import ASSOCIATE_SORTS as ASSOCIATE_SORTS
from hippocampus.services.recall import Association, Associations, GraphNode, RecallJobs, Subgraph
from hippocampus.services.recall import Corroboration as Corroboration
from hippocampus.services.recall import Latency as Latency
from hippocampus.services.records import MAX_TURN_WINDOW as MAX_TURN_WINDOW
from hippocampus.services.records import RecordsJobs, ResourceOutcome
from hippocampus.services.records import TurnWindow as TurnWindow
from hippocampus.services.remembering import EditOutcome, RememberingJobs, RememberOutcome
from hippocampus.services.transfer import EXPORT_FORMAT, ImportReport, TransferJobs
from hippocampus.services.transfer import LEARNED_SECTION as LEARNED_SECTION
from hippocampus.services.transfer import LEARNED_VERSION as LEARNED_VERSION
from hippocampus.services.transfer import PORTABLE_STATE as PORTABLE_STATE
from hippocampus.services.transfer import PORTABLE_STATE_PREFIXES as PORTABLE_STATE_PREFIXES
from hippocampus.store import GraphStore
from hippocampus.stores import open_store
from hippocampus.surface import SurfaceConfig
from hippocampus.surface.surfacer import Surfacer


class Hippocampus(
    FeedbackJobs,
    RecordsJobs,
    RememberingJobs,
    RecallJobs,
    ConversationJobs,
    MaintenanceJobs,
    TransferJobs,
):
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
        events: how much of each collection's event log maintenance keeps.
        graph_health_max_age_s: how old the graph health of ``/stats`` may be
            before maintenance computes it again.
        records_min_score: the least similarity a record needs to be found by
            :meth:`search_records`.
        summary_min_score: the least similarity a result needs to be in a
            :meth:`context_summary` (the seed's 0.7).
        surfacing: gates, thresholds and learning of proactive surfacing.
        scheduler: spaced repetition (FSRS-style by default).
        random_seed: makes surfacing's exploration reproducible (``seed``, its
            former name, is still accepted, with a deprecation warning).
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
        self.store = store
        self.embedder = embedder  # guarded: see the property
        self.extractor = extractor
        self.limits = limits or Limits()
        self.embed_batch_size = embed_batch_size
        self.learning = learning or LearningConfig()
        self.quality_config = quality or QualityConfig()
        self.dedup = dedup or DedupConfig()
        self.tiers = tiers or TierPolicy()
        self.event_retention = events or EventRetention()
        self.graph_health_max_age_s = graph_health_max_age_s
        self._graph_health_lock = threading.Lock()
        self.records_min_score = records_min_score
        self.summary_min_score = summary_min_score
        self._pending = {}
        self._pending_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._flush_due = False
        self._learning_writer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hippo-learning"
        )
        self._latencies = {}
        self._corroborations = {}
        self._feedback_lock = threading.Lock()
        self._feedback_grown = {}
        # Held by an edit from reading a memory to writing it back, so that two
        # edits of one memory in this process apply one after another. Learning
        # (engagement, feedback, tier moves) is atomic in the store, and an edit
        # keeps what it recorded meanwhile (MemoryRecord.keep_learned).
        self._memory_lock = StripedLock()
        self.scheduler = scheduler or FsrsScheduler()
        self.surfacer = Surfacer(
            store,
            extractor,
            self._embed_query,
            model=lambda: self.embedder.name,
            scheduler=self.scheduler,
            config=surfacing,
            random_seed=random_seed,
            on_engaged=self._count_feedback,
        )

    @classmethod
    def from_settings(cls, settings: HippoSettings, *, lazy_model: bool = False) -> Hippocampus:
        """Build the engine the settings describe (store, embedder, extractor).

        With ``lazy_model`` (the embedded store only) the embedding model loads
        when first used, and so does spaCy's pipeline: work that never embeds
        never waits for the one, work that reads no text for its concepts never
        waits for the other.

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
            extractor = LazyExtractor(make_extractor) if lazy_model else make_extractor()
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
            self._learning_writer.shutdown(wait=True)
            self.flush_learning()
        finally:
            self.store.close()


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
