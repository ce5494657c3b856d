"""Maintenance: decay, re-embedding, tiers, the event log's retention, and the
store's readiness."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from hippocampus.extract.quality import TrainingRun, feedback_label
from hippocampus.learn import decay_period
from hippocampus.learn.tiers import TierChange, TierPolicy, tier_change
from hippocampus.model import Event, EventRetention, Memory, Tier, utcnow
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.features import TextFeatures
from hippocampus.services.learning import LearningQueue
from hippocampus.services.quality import FEEDBACK_COUNT_KEY, QualityGate
from hippocampus.store import LearnChange, Learned

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")

MAINTENANCE_LEASE = "maintenance"
"""The lease of the maintenance round (:meth:`MaintenanceService.take_maintenance_turn`)."""
TIER_PASS_KEY = "tier_pass"


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


class MaintenanceService:
    """Decay, reindexing, tier passes and the event log's retention.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        features: embeds the memories waiting for vectors.
        learning: flushed before decay and the tier pass.
        quality: retrained when a tier pass counts enough more feedback.
        tiers: when memories are archived or quarantined.
        event_retention: how much of each collection's event log is kept.
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        features: TextFeatures,
        learning: LearningQueue,
        quality: QualityGate,
        *,
        tiers: TierPolicy,
        event_retention: EventRetention,
    ) -> None:
        self._context = context
        self._checks = checks
        self._features = features
        self._learning = learning
        self._quality = quality
        self.tiers = tiers
        self.event_retention = event_retention

    def take_maintenance_turn(self, holder: str, term_s: float) -> bool:
        """Whether ``holder`` (one API process) runs the maintenance round now: the
        store's maintenance lease goes to one holder at a time, for ``term_s``
        seconds, renewed each time that holder asks again; the other processes
        sharing the store skip their rounds meanwhile."""
        return self._context.store.take_lease(MAINTENANCE_LEASE, holder, term_s)

    def decay(self, collection: str, *, now: datetime | None = None) -> int:
        """One temporal decay pass over the collection's edges (idempotent per
        day: a second pass the same day changes nothing).

        Returns:
            How many edges lost weight.
        """
        self._checks.check_collection(collection)
        at = now or utcnow()
        self._learning.flush()
        policy = self._context.learning.decay
        return self._context.store.decay_edges(
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
        ``max_events``. The log's totals in
        :meth:`~hippocampus.services.stats.StatisticsService.stats` do not change.

        Returns:
            How many events were dropped.
        """
        self._checks.check_collection(collection)
        retention = self.event_retention
        at = now or utcnow()
        before = at - timedelta(days=retention.max_age_days) if retention.max_age_days else None
        keep = retention.max_events or None
        if before is None and keep is None:
            return 0
        dropped = self._context.store.compact_events(collection, before=before, keep=keep)
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
        self._checks.check_collection(collection)
        self._features.recover()  # a model missing at start may be there now
        done = 0
        while limit is None or done < limit:
            size = batch_size if limit is None else min(batch_size, limit - done)
            pending = self._context.store.pending_embeddings(
                collection, self._context.embedder.name, size
            )
            if not pending:
                break
            embedded = self._features.encode([m.content for m in pending])
            self._context.store.set_vectors(
                collection,
                [
                    (m.id, embedded.heads[i], self._context.embedder.name)
                    for i, m in enumerate(pending)
                ],
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
        self._features.embed_hubs(collection)
        if done:
            logger.info(
                "re-embedded %d memories of %s with %s",
                done,
                collection,
                self._context.embedder.name,
            )
        return done

    def pending_count(self, collection: str) -> int:
        """How many memories wait for a vector from the current model."""
        self._checks.check_collection(collection)
        return self._context.store.count_pending_embeddings(collection, self._context.embedder.name)

    def apply_tiers(self, collection: str, *, now: datetime | None = None) -> TierReport:
        """One pass of the tier policy over the collection: old, little-used memories
        are archived, repeatedly dismissed or collapsed ones quarantined, archived
        ones used again restored (see :mod:`hippocampus.learn.tiers`). Also counts the
        memories with feedback and retrains the quality model when enough more
        have it (:meth:`~hippocampus.services.quality.QualityGate.maybe_retrain_quality`).
        """
        self._checks.check_collection(collection)
        at = now or utcnow()
        self._learning.flush()
        examined, feedback, changes = self._tier_changes(collection, at)
        applied: list[TierChange] = []
        for change in changes:
            # Moved in one learning update, which reads the memory again: it may
            # have been edited or moved since the scan.
            learned = self._context.store.learn(
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
            self._context.store.append_events(
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
        self._context.store.put_states(
            collection,
            {TIER_PASS_KEY: {"at": at.isoformat()}, FEEDBACK_COUNT_KEY: {"memories": feedback}},
        )
        retrained = self._quality.maybe_retrain_quality(collection, feedback, now=at)
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

    def _tier_changes(self, collection: str, at: datetime) -> tuple[int, int, list[TierChange]]:
        """One scan of the collection: how many memories it holds, how many have
        feedback, and the tier moves the policy makes."""
        examined = 0
        feedback = 0
        changes: list[TierChange] = []
        for memory in self._context.store.iter_memories(collection):
            examined += 1
            if feedback_label(memory) is not None:
                feedback += 1
            change = tier_change(
                memory,
                at,
                self.tiers,
                quality_exempt=self._context.quality_config.exempt(memory.source),
            )
            if change is not None:
                changes.append(change)
        return examined, feedback, changes

    def tier_pass_due(self, collection: str, *, now: datetime | None = None) -> bool:
        """Whether the tier policy has not run on the collection this (UTC) day."""
        at = now or utcnow()
        state = self._context.store.get_states(collection, [TIER_PASS_KEY]).get(TIER_PASS_KEY)
        if state is None:
            return True
        try:
            last = datetime.fromisoformat(str(state.get("at")))
        except ValueError:
            return True
        return decay_period(last) != decay_period(at)

    # -- the store -------------------------------------------------------------

    @property
    def store_kind(self) -> str:
        """The store this engine runs on, by its class (``EmbeddedStore``, ``Neo4jStore``)."""
        return type(self._context.store).__name__

    def check_store(self) -> None:
        """Raise when the store cannot serve requests now, or refuses writes."""
        self._context.store.check()

    def warm(self) -> int:
        """Build each collection's indexes before its first request needs them;
        returns how many were built."""
        return self._context.store.warm()


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
