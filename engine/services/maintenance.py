"""Maintenance: decay, re-embedding, tiers, the event log's retention, the quality
model, collection stats and graph health."""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from hippocampus.errors import StoreUnavailableError
from hippocampus.extract.quality import (
    QualityAssessment,
    TrainingRun,
    assess,
    feedback_label,
    quality_features,
    retrain,
)
from hippocampus.learn import decay_period
from hippocampus.learn.tiers import TierChange, tier_change
from hippocampus.metrics import CachedGraphHealth, GraphHealth, graph_health
from hippocampus.model import Event, HubKind, Memory, Tier, utcnow
from hippocampus.services.core import (
    FEEDBACK_COUNT_KEY,
    QUALITY_MODEL_KEY,
    TIER_PASS_KEY,
    ServiceCore,
)
from hippocampus.store import LearnChange, Learned

# The service's one logger name, as before the split: log configuration keyed on
# "hippocampus.service" keeps covering every job.
logger = logging.getLogger("hippocampus.service")

MAINTENANCE_LEASE = "maintenance"
"""The lease of the maintenance round (:meth:`MaintenanceJobs.take_maintenance_turn`)."""
GRAPH_HEALTH_KEY = "graph_health"
"""State document holding a collection's graph health as last computed: the
figures, when, and how long it took (:meth:`MaintenanceJobs.refresh_graph_health`)."""


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


class MaintenanceJobs(ServiceCore):
    """Decay, reindexing, tier passes, quality retraining and stats."""

    # -- maintenance ------------------------------------------------------------

    def take_maintenance_turn(self, holder: str, term_s: float) -> bool:
        """Whether ``holder`` (one API process) runs the maintenance round now: the
        store's maintenance lease goes to one holder at a time, for ``term_s``
        seconds, renewed each time that holder asks again; the other processes
        sharing the store skip their rounds meanwhile."""
        return self.store.take_lease(MAINTENANCE_LEASE, holder, term_s)

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

    def compact_events(self, collection: str, *, now: datetime | None = None) -> int:
        """Drop the events the retention (:class:`~hippocampus.model.EventRetention`) no
        longer keeps: older than ``max_age_days``, or beyond the newest
        ``max_events``. The log's totals in :meth:`stats` do not change.

        Returns:
            How many events were dropped.
        """
        self.check_collection(collection)
        retention = self.event_retention
        at = now or utcnow()
        before = at - timedelta(days=retention.max_age_days) if retention.max_age_days else None
        keep = retention.max_events or None
        if before is None and keep is None:
            return 0
        dropped = self.store.compact_events(collection, before=before, keep=keep)
        if dropped:
            logger.info("event log of %s: %d events compacted away", collection, dropped)
        return dropped

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
        ones used again restored (see :mod:`hippocampus.learn.tiers`). Also counts the
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
            # Moved in one learning update, which reads the memory again: it may
            # have been edited or moved since the scan.
            learned = self.store.learn(
                collection, memory_ids=[change.memory_id], change=_tier_move(change, at)
            )
            if not learned.memories:
                continue
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

    def retrain_quality(self, collection: str, *, now: datetime | None = None) -> TrainingRun:
        """Retrain the collection's quality model from the memories with feedback
        (see :func:`~hippocampus.extract.quality.feedback_label`). The new model is kept
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

    # -- stats ------------------------------------------------------------------

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
            events_retained=s.events_retained,
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

    def most_valuable(self, collection: str, limit: int = 5) -> list[Memory]:
        """The active memories of most value (confidence × importance), best first.
        One pass over the collection, holding only ``limit`` at a time."""
        self.check_collection(collection)
        active = (m for m in self.store.iter_memories(collection) if m.tier == Tier.ACTIVE)
        return heapq.nlargest(limit, active, key=lambda m: m.retrieval.confidence * m.importance)

    # -- the store ------------------------------------------------------------------

    @property
    def store_kind(self) -> str:
        """The store this engine runs on, by its class (``EmbeddedStore``, ``Neo4jStore``)."""
        return type(self.store).__name__

    def check_store(self) -> None:
        """Raise when the store cannot serve requests now, or refuses writes."""
        self.store.check()

    def warm(self) -> int:
        """Build each collection's indexes before its first request needs them;
        returns how many were built."""
        return self.store.warm()

    # -- graph health -------------------------------------------------------------

    def graph_health(self, collection: str) -> GraphHealth:
        """Nodes, edges by type, mean degree, clustering, components, weights,
        computed now from every edge (seconds at 100k memories: ``/stats`` shows
        them as last computed, :meth:`stats_graph_health`)."""
        self.check_collection(collection)
        memories = self.store.stats(collection).memories
        return graph_health(self.store.iter_edge_ends(collection), memories)

    def stats_graph_health(
        self,
        collection: str,
        *,
        counts: CollectionStats | None = None,
        max_age_s: float | None = None,
        now: datetime | None = None,
    ) -> CachedGraphHealth:
        """Graph health as ``/stats`` shows it, in well under a second however
        large the collection: nodes, edges and mean degree as they are now (from
        ``counts``, the collection's :meth:`stats`, when the caller has them), the
        structural figures (clustering, components, largest component, weight
        histogram) as last computed, with their age. They are kept in the store
        (every API process, and a restart, sees them) and computed again by the
        maintenance round once older than ``graph_health_max_age_s``; here only
        when there are none yet, or they are older than ``max_age_s``.
        """
        self.check_collection(collection)
        at = now or utcnow()
        counts = counts or self.stats(collection)
        if not counts.memories:
            # Nothing to measure, and nothing kept for a collection that may be a
            # misspelt name: a read writes nothing there.
            empty = graph_health([], 0)
            return CachedGraphHealth(**empty.model_dump(), computed_at=at, age_s=0.0, took_s=0.0)
        cached = self._stored_graph_health(collection, at)
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
        self.check_collection(collection)
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
                self.store.put_states(collection, {GRAPH_HEALTH_KEY: kept})
            except StoreUnavailableError as e:
                # Reads go on while writes are refused: the figures are served
                # all the same, and computed again next time.
                logger.warning("graph health of %s not kept: %s", collection, e.message)
        logger.info("graph health of %s computed in %.2f s", collection, took)
        return CachedGraphHealth(
            **health.model_dump(), computed_at=at, age_s=0.0, took_s=round(took, 3)
        )

    def _stored_graph_health(self, collection: str, now: datetime) -> CachedGraphHealth | None:
        held = self.store.get_states(collection, [GRAPH_HEALTH_KEY]).get(GRAPH_HEALTH_KEY)
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


def _tier_move(change: TierChange, at: datetime) -> LearnChange:
    """The learning update that makes ``change``: none when the memory is gone or
    no longer in the tier the change moves it from."""

    def move(memories: Mapping[str, Memory], _states: Mapping[str, Any]) -> Learned:
        current = memories.get(change.memory_id)
        if current is None or current.tier != change.before:
            return Learned()
        return Learned(memories=[_moved(current, change, at)])

    return move


def _moved(current: Memory, change: TierChange, at: datetime) -> Memory:
    promoted_at = current.retrieval.promoted_at
    if change.promote is not None or change.after != Tier.ACTIVE:
        promoted_at = at if change.promote else None
    return current.model_copy(
        update={
            "tier": change.after,
            "updated_at": at,
            "retrieval": current.retrieval.model_copy(update={"promoted_at": promoted_at}),
        }
    )
