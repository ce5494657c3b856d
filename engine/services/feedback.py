"""Feedback and engagement: use, helpful or not, and what the quality gate learns
from them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hippocampus.errors import HippoError, InvalidInputError, NotFoundError
from hippocampus.extract import unique_names
from hippocampus.extract.quality import feedback_label
from hippocampus.learn import REAL_USE, co_use_updates
from hippocampus.model import HUB_EDGE, Edge, EdgeType, Event, HubKind, Memory, utcnow
from hippocampus.services.core import FEEDBACK_COUNT_KEY
from hippocampus.services.maintenance import MaintenanceJobs
from hippocampus.services.records import RecordsJobs
from hippocampus.store import Learned
from hippocampus.surface.outcomes import EngagementOutcome

# The service's one logger name, as before the split: log configuration keyed on
# "hippocampus.service" keeps covering every job.
logger = logging.getLogger("hippocampus.service")


class FeedbackJobs(RecordsJobs, MaintenanceJobs):
    """Recording use, engagement and feedback, and counting feedback for
    the quality model."""

    # -- use, engagement and feedback -------------------------------------------

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
        use = Learned(
            reinforce=co_use_updates(ids, at, REAL_USE, anchors=anchors),
            events=[Event(type="use", at=at, memory_ids=ids, payload={"context": names})],
        )
        self.store.learn(collection, change=lambda _memories, _states: use)
        among = set(ids)
        edges: dict[tuple[str, str], Edge] = {}
        for mid in ids:
            for edge in self.store.edges_of(collection, mid):
                if edge.type == EdgeType.ASSOCIATED and {edge.source, edge.target} <= among:
                    pair = (min(edge.source, edge.target), max(edge.source, edge.target))
                    edges.setdefault(pair, edge)
        return sorted(edges.values(), key=lambda e: (e.source, e.target))

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
        helpful as "dismissed" (an explicit rejection; the memory is marked
        irrelevant for the ``context`` concepts that are not its own).

        Raises:
            NotFoundError: no such memory.
        """
        self.check_collection(collection)
        self.check_id(memory_id, "memory_id")
        names = list(unique_names(context, 50))
        at = now or utcnow()
        engagement = "helpful" if helpful else "dismissed"
        seen: dict[str, Memory] = {}

        def change(memories: Mapping[str, Memory], _states: Mapping[str, Any]) -> Learned:
            memory = memories.get(memory_id)
            if memory is None:
                raise NotFoundError(f"no memory {memory_id!r} in this collection")
            # The context's concepts are what the feedback was about: not helpful
            # marks the memory irrelevant for them (apart from its own).
            updated, reinforce, event = self.surfacer.engaged(memory, engagement, names, names, at)
            seen.update(before=memory, after=updated)
            return Learned(memories=[updated], reinforce=reinforce, events=[event])

        self.flush_learning()
        # One learning update, atomic in the store: concurrent feedback and
        # engagement on one memory, in any process, each apply to what the one
        # before left.
        self.store.learn(collection, memory_ids=[memory_id], change=change)
        self._count_feedback(collection, seen["before"], seen["after"])
        self._retrain_after_feedback(collection, at)
        return seen["after"]

    # -- feedback counted for the quality model ---------------------------------

    def feedback_count(self, collection: str) -> int:
        """How many memories of the collection have feedback (see
        :func:`~hippocampus.extract.quality.feedback_label`), as counted so far: kept
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

        def counted(_memories: Mapping[str, Memory], held: Mapping[str, Any]) -> Learned:
            if FEEDBACK_COUNT_KEY in held:
                count = _feedback_memories(held[FEEDBACK_COUNT_KEY]) + 1
            else:
                # No count yet (feedback older than the count): one scan, which
                # already sees this memory's feedback.
                count = self._scan_feedback(collection)
            return Learned(states={FEEDBACK_COUNT_KEY: {"memories": count}})

        learned = self.store.learn(collection, state_keys=[FEEDBACK_COUNT_KEY], change=counted)
        with self._feedback_lock:
            self._feedback_grown[collection] = _feedback_memories(
                dict(learned.states[FEEDBACK_COUNT_KEY])
            )

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


def _feedback_memories(held: dict[str, Any]) -> int:
    count = held.get("memories")
    return count if isinstance(count, int) and count >= 0 else 0
