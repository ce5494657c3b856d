"""The quality gate's model: kept per collection, retrained from feedback, and
the count of memories with feedback that says when."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hippocampus.errors import HippoError
from hippocampus.extract.quality import (
    QualityAssessment,
    QualityModel,
    TrainingRun,
    assess,
    feedback_label,
    quality_features,
    retrain,
)
from hippocampus.model import Memory, utcnow
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.store import Learned

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")

QUALITY_MODEL_KEY = "quality_model"
FEEDBACK_COUNT_KEY = "quality_feedback"
"""State document ``{"memories": n}``: how many memories of the collection have
feedback, kept up as engagement gives memories their first feedback, and set
exactly by the tier pass and by each retraining."""


class QualityGate:
    """The quality model of each collection: read, used to assess a text,
    retrained when enough more memories have feedback."""

    def __init__(self, context: Context, checks: Checks) -> None:
        self._context = context
        self._checks = checks
        self._feedback_lock = threading.Lock()
        self._feedback_grown: dict[str, int] = {}

    def quality_model(self, collection: str) -> QualityModel:
        """The collection's quality model: the last one trained and kept, else the
        prior. Read from the store on every call, so processes sharing a store
        share it."""
        state = self._context.store.get_states(collection, [QUALITY_MODEL_KEY]).get(
            QUALITY_MODEL_KEY
        )
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
        self._checks.check_collection(collection)
        return assess(content, source, self.quality_model(collection), self._context.quality_config)

    def maybe_retrain_quality(
        self, collection: str, feedback_count: int, *, now: datetime | None = None
    ) -> TrainingRun | None:
        """Retrain the quality model when ``feedback_count`` (memories of the
        collection with feedback) has grown by ``retrain_every`` (500) since the
        last retraining. Called whenever feedback is recorded: by engagement and
        feedback (:class:`~hippocampus.services.engagement.EngagementService`) when
        a memory gets its first feedback (with the kept count,
        :meth:`feedback_count`), and by the tier pass (with an exact count).

        Returns:
            The retraining run, or ``None`` when none was due.
        """
        model = self.quality_model(collection)
        if feedback_count < model.feedback_seen + self._context.quality_config.retrain_every:
            return None
        return self.retrain_quality(collection, now=now)

    def retrain_quality(self, collection: str, *, now: datetime | None = None) -> TrainingRun:
        """Retrain the collection's quality model from the memories with feedback
        (see :func:`~hippocampus.extract.quality.feedback_label`). The new model is kept
        only if it predicts held-out feedback at least as well as the current one;
        the run (time, metrics of both, the decision) is stored either way and
        shown by :meth:`~hippocampus.services.stats.StatisticsService.stats`.
        """
        self._checks.check_collection(collection)
        at = now or utcnow()
        examples = []
        for memory in self._context.store.iter_memories(collection):
            label = feedback_label(memory)
            if label is None:
                continue
            trust = self._context.quality_config.trust_of(memory.source)
            examples.append((memory.id, quality_features(memory.content, trust), label))
        model = retrain(
            self.quality_model(collection),
            examples,
            feedback=len(examples),
            now=at,
            config=self._context.quality_config,
        )
        self._context.store.put_states(
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

    # -- feedback counted for the quality model ---------------------------------

    def feedback_count(self, collection: str) -> int:
        """How many memories of the collection have feedback (see
        :func:`~hippocampus.extract.quality.feedback_label`), as counted so far: kept
        up by engagement, set exactly by the tier pass and each retraining.
        Counted by a scan only when the collection has no count yet."""
        self._checks.check_collection(collection)
        held = self._context.store.get_states(collection, [FEEDBACK_COUNT_KEY]).get(
            FEEDBACK_COUNT_KEY
        )
        if held is not None:
            return _feedback_memories(held)
        return self._scan_feedback(collection)

    def _scan_feedback(self, collection: str) -> int:
        return sum(
            1
            for m in self._context.store.iter_memories(collection)
            if feedback_label(m) is not None
        )

    def count_feedback(self, collection: str, before: Memory, after: Memory) -> None:
        """After an engagement is written: count the memory if this was its first
        feedback, and note the count for :meth:`retrain_after_feedback`."""
        if feedback_label(before) is not None or feedback_label(after) is None:
            return

        def counted(_memories: Mapping[str, Memory], held: Mapping[str, Any]) -> Learned:
            if FEEDBACK_COUNT_KEY in held:
                count = _feedback_memories(held[FEEDBACK_COUNT_KEY]) + 1
            else:
                # No count yet (feedback older than the count): one scan, which
                # already sees this memory's feedback.
                count = self._scan_feedback(collection)
            return Learned(states={FEEDBACK_COUNT_KEY: {"memories": count}})

        learned = self._context.store.learn(
            collection, state_keys=[FEEDBACK_COUNT_KEY], change=counted
        )
        with self._feedback_lock:
            self._feedback_grown[collection] = _feedback_memories(
                dict(learned.states[FEEDBACK_COUNT_KEY])
            )

    def retrain_after_feedback(self, collection: str, at: datetime) -> None:
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


def _feedback_memories(held: dict[str, Any]) -> int:
    count = held.get("memories")
    return count if isinstance(count, int) and count >= 0 else 0
