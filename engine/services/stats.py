"""Statistics of a collection: its counts, its most valuable memories, and the
health of its graph, computed now or as last kept."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from hippocampus.errors import StoreUnavailableError
from hippocampus.extract.quality import TrainingRun
from hippocampus.metrics import CachedGraphHealth, GraphHealth, graph_health
from hippocampus.model import HubKind, Memory, utcnow
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.learning import LearningQueue
from hippocampus.services.quality import QualityGate

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")

GRAPH_HEALTH_KEY = "graph_health"
"""State document holding a collection's graph health as last computed: the
figures, when, and how long it took (:meth:`StatisticsService.refresh_graph_health`)."""

INLINE_GRAPH_HEALTH_EDGES = 200_000
"""The most edges a collection may have for ``/stats`` to compute its graph health
in the request when none is kept (about a second here: the computation reads
every edge, some 4 µs each). A larger collection has it computed on a thread of
its own, and ``/stats`` answers without it meanwhile."""

_ALL_DUE = datetime(9999, 12, 31, tzinfo=UTC)
"""A moment by which every active memory is due by FSRS: a due date lies at most
100 years (its longest interval) after a memory's last review, use or creation."""


class QualityStats(BaseModel):
    """The quality gate of a collection: its threshold and its model."""

    min_score: float
    model_version: int = Field(description="0: the prior; +1 per retrained model kept.")
    trained_at: datetime | None
    feedback_seen: int
    last_training: TrainingRun | None


class CollectionStats(BaseModel):
    collection: str
    memories: int
    by_category: dict[str, int]
    by_tier: dict[str, int]
    pending_embeddings: int
    hubs: dict[str, int]
    edges: dict[str, int]
    events: int = Field(description="Events ever logged, those compacted away included.")
    events_retained: int = Field(
        default=0, description="Events the log still holds (the retention drops the others)."
    )
    embedder: str
    extractor: str
    quality: QualityStats
    average_quality: float | None = Field(
        description="Mean quality score of the memories that have one (a running total)."
    )
    retrieval_count: int = Field(description="Recalls made of the collection (retrieval events).")


class StatisticsService:
    """Counts, the most valuable memories, and graph health.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        learning: counts the retrievals queued and not yet written.
        quality: the quality gate's model, shown with the counts.
        graph_health_max_age_s: how old the graph health of ``/stats`` may be
            before maintenance computes it again.
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        learning: LearningQueue,
        quality: QualityGate,
        *,
        graph_health_max_age_s: float = 600.0,
    ) -> None:
        self._context = context
        self._checks = checks
        self._learning = learning
        self._quality = quality
        self.graph_health_max_age_s = graph_health_max_age_s
        self.inline_graph_health_edges = INLINE_GRAPH_HEALTH_EDGES
        self._graph_health_lock = threading.Lock()
        self._beside_lock = threading.Lock()
        self._computing: set[str] = set()

    def stats(self, collection: str) -> CollectionStats:
        """Counts by category and tier, memories waiting for a vector from the
        current model, hubs, edges, events, and the quality gate's model."""
        self._checks.check_collection(collection)
        s = self._context.store.stats(collection)
        model = self._quality.quality_model(collection)
        return CollectionStats(
            collection=collection,
            memories=s.memories,
            by_category=s.by_category,
            by_tier=s.by_tier,
            pending_embeddings=self._context.store.count_pending_embeddings(
                collection, self._context.embedder.name
            ),
            hubs=s.hubs,
            edges=s.edges,
            events=s.events,
            events_retained=s.events_retained,
            # Rounded: a running sum drifts in the last bits with the order of writes.
            average_quality=round(s.quality_sum / s.quality_scored, 6)
            if s.quality_scored
            else None,
            retrieval_count=s.events_by_type.get("retrieval", 0)
            + self._learning.queued(collection),
            embedder=self._context.embedder.name,
            extractor=self._context.extractor.name,
            quality=QualityStats(
                min_score=self._context.quality_config.min_score,
                model_version=model.version,
                trained_at=model.trained_at,
                feedback_seen=model.feedback_seen,
                last_training=model.last_training,
            ),
        )

    def collections(self) -> list[str]:
        return self._context.store.list_collections()

    def most_valuable(self, collection: str, limit: int = 5) -> list[Memory]:
        """The active memories of most value (confidence × importance), best first.

        Ranked by the store from the due dates it keeps with every memory
        (:func:`hippocampus.schedule.due_keys`), value first: every active memory
        is due by FSRS at :data:`_ALL_DUE` (its due date is at most the longest
        interval after its last review, use or creation), so the store's due
        index answers, and only ``limit`` memories are read."""
        self._checks.check_collection(collection)
        if limit <= 0:
            return []
        return self._context.store.due_memories(
            collection, schedule="fsrs", now=_ALL_DUE, limit=limit
        )

    # -- graph health -------------------------------------------------------------

    def graph_health(self, collection: str) -> GraphHealth:
        """Nodes, edges by type, mean degree, clustering, components, weights,
        computed now from every edge (seconds at 100k memories: ``/stats`` shows
        them as last computed, :meth:`stats_graph_health`)."""
        self._checks.check_collection(collection)
        memories = self._context.store.stats(collection).memories
        return graph_health(self._context.store.iter_edge_ends(collection), memories)

    def stats_graph_health(
        self,
        collection: str,
        *,
        counts: CollectionStats | None = None,
        max_age_s: float | None = None,
        now: datetime | None = None,
    ) -> CachedGraphHealth | None:
        """Graph health as ``/stats`` shows it, in well under a second however
        large the collection: nodes, edges and mean degree as they are now (from
        ``counts``, the collection's :meth:`stats`, when the caller has them), the
        structural figures (clustering, components, largest component, weight
        histogram) as last computed, with their age. They are kept in the store
        (every API process, and a restart, sees them) and computed again by the
        maintenance round once older than ``graph_health_max_age_s``; here only
        when they are older than ``max_age_s``, or when there are none yet.

        ``None`` when there are none yet and the collection has more edges than
        ``inline_graph_health_edges`` (unless ``max_age_s`` asks for them): they
        are then being computed on a thread of their own, and kept.
        """
        self._checks.check_collection(collection)
        at = now or utcnow()
        counts = counts or self.stats(collection)
        if not counts.memories:
            # Nothing to measure, and nothing kept for a collection that may be a
            # misspelt name: a read writes nothing there.
            empty = graph_health([], 0)
            return CachedGraphHealth(**empty.model_dump(), computed_at=at, age_s=0.0, took_s=0.0)
        cached = self._stored_graph_health(collection, at)
        if (
            cached is None
            and max_age_s is None
            and sum(counts.edges.values()) > self.inline_graph_health_edges
        ):
            self._refresh_beside(collection)
            return None
        if cached is None or (max_age_s is not None and cached.age_s > max_age_s):
            cached = self.refresh_graph_health(collection, now=at, unless_younger_than=max_age_s)
        nodes_by_kind = {"Memory": counts.memories} if counts.memories else {}
        nodes_by_kind.update(
            {k.value: counts.hubs[k.value] for k in HubKind if counts.hubs.get(k.value)}
        )
        nodes = sum(nodes_by_kind.values())
        edges = sum(counts.edges.values())
        return cached.model_copy(
            update={
                "nodes": nodes,
                "nodes_by_kind": nodes_by_kind,
                "edges": edges,
                "edges_by_type": dict(sorted((t, n) for t, n in counts.edges.items() if n)),
                "mean_degree": (2.0 * edges / nodes) if nodes else 0.0,
            }
        )

    def _refresh_beside(self, collection: str) -> None:
        """Compute the collection's graph health on a thread of its own, unless one
        is at it already."""
        with self._beside_lock:
            if collection in self._computing:
                return
            self._computing.add(collection)

        def refresh() -> None:
            try:
                self.refresh_graph_health(
                    collection, unless_younger_than=self.graph_health_max_age_s
                )
            except Exception:
                # The store closed or failed: /stats starts another next time.
                logger.warning("graph health of %s not computed", collection, exc_info=True)
            finally:
                with self._beside_lock:
                    self._computing.discard(collection)

        threading.Thread(target=refresh, name="hippo-graph-health", daemon=True).start()

    def graph_health_due(self, collection: str, *, now: datetime | None = None) -> bool:
        """Whether the collection's graph health was never computed, or is older
        than ``graph_health_max_age_s`` (the maintenance round then computes it)."""
        cached = self._stored_graph_health(collection, now or utcnow())
        return cached is None or cached.age_s >= self.graph_health_max_age_s

    def refresh_graph_health(
        self,
        collection: str,
        *,
        now: datetime | None = None,
        unless_younger_than: float | None = None,
    ) -> CachedGraphHealth:
        """Compute the collection's graph health now and keep it (one computation
        at a time: a caller that waited for another's takes its figures when they
        are younger than ``unless_younger_than`` seconds).
        """
        self._checks.check_collection(collection)
        with self._graph_health_lock:
            if unless_younger_than is not None:
                cached = self._stored_graph_health(collection, now or utcnow())
                if cached is not None and cached.age_s <= unless_younger_than:
                    return cached
            started = time.perf_counter()
            health = self.graph_health(collection)
            took = time.perf_counter() - started
            at = now or utcnow()
            kept = {
                "computed_at": at.isoformat(),
                "took_s": round(took, 3),
                "health": health.model_dump(mode="json"),
            }
            try:
                self._context.store.put_states(collection, {GRAPH_HEALTH_KEY: kept})
            except StoreUnavailableError as e:
                # Reads go on while writes are refused: the figures are served
                # all the same, and computed again next time.
                logger.warning("graph health of %s not kept: %s", collection, e.message)
        logger.info("graph health of %s computed in %.2f s", collection, took)
        return CachedGraphHealth(
            **health.model_dump(), computed_at=at, age_s=0.0, took_s=round(took, 3)
        )

    def _stored_graph_health(self, collection: str, now: datetime) -> CachedGraphHealth | None:
        held = self._context.store.get_states(collection, [GRAPH_HEALTH_KEY]).get(GRAPH_HEALTH_KEY)
        if held is None:
            return None
        try:
            computed_at = datetime.fromisoformat(str(held["computed_at"]))
            health = GraphHealth.model_validate(held["health"])
            took = float(held.get("took_s", 0.0))
        except (KeyError, TypeError, ValueError):
            # A document of another shape (another version wrote it): computed again.
            return None
        return CachedGraphHealth(
            **health.model_dump(),
            computed_at=computed_at,
            age_s=max(0.0, (now - computed_at).total_seconds()),
            took_s=max(0.0, took),
        )
