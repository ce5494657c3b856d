"""Feedback and engagement: use, and whether what was offered helped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hippocampus.errors import InvalidInputError, NotFoundError
from hippocampus.extract import unique_names
from hippocampus.learn import REAL_USE, co_use_updates
from hippocampus.model import HUB_EDGE, Edge, EdgeType, Event, HubKind, Memory, utcnow
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.learning import LearningQueue
from hippocampus.services.quality import QualityGate
from hippocampus.store import Learned
from hippocampus.surface.outcomes import EngagementOutcome
from hippocampus.surface.surfacer import Surfacer


class EngagementService:
    """Recording use, engagement and feedback.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        learning: flushed before use and feedback are written.
        surfacer: what an engagement teaches surfacing, and the memory.
        quality: counts feedback and retrains the quality model on it.
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        learning: LearningQueue,
        surfacer: Surfacer,
        quality: QualityGate,
    ) -> None:
        self._context = context
        self._checks = checks
        self._learning = learning
        self._surfacer = surfacer
        self._quality = quality

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
        self._checks.check_collection(collection)
        ids = list(dict.fromkeys(self._checks.check_id(mid, "ids") for mid in memory_ids))
        if len(ids) > self._context.limits.max_recall_limit:
            raise InvalidInputError(
                f"at most {self._context.limits.max_recall_limit} memories are used together",
                field="ids",
            )
        found = self._context.store.get_memories(collection, ids)
        missing = [mid for mid in ids if mid not in found]
        if missing:
            raise NotFoundError(f"no memory {missing[0]!r} in this collection")
        names = unique_names(context, 50)
        at = now or utcnow()
        anchors = [(HUB_EDGE[HubKind.CONCEPT], name) for name in names]
        self._learning.flush()
        use = Learned(
            reinforce=co_use_updates(ids, at, REAL_USE, anchors=anchors),
            events=[Event(type="use", at=at, memory_ids=ids, payload={"context": names})],
        )
        self._context.store.learn(collection, change=lambda _memories, _states: use)
        among = set(ids)
        edges: dict[tuple[str, str], Edge] = {}
        for mid in ids:
            for edge in self._context.store.edges_of(collection, mid):
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
        self._checks.check_collection(collection)
        at = now or utcnow()
        outcome = self._surfacer.engage(collection, surfacing_id, engagement, at=at)
        self._quality.retrain_after_feedback(collection, at)
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
        self._checks.check_collection(collection)
        self._checks.check_id(memory_id, "memory_id")
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
            updated, reinforce, event = self._surfacer.engaged(memory, engagement, names, names, at)
            seen.update(before=memory, after=updated)
            return Learned(memories=[updated], reinforce=reinforce, events=[event])

        self._learning.flush()
        # One learning update, atomic in the store: concurrent feedback and
        # engagement on one memory, in any process, each apply to what the one
        # before left.
        self._context.store.learn(collection, memory_ids=[memory_id], change=change)
        self._quality.count_feedback(collection, seen["before"], seen["after"])
        self._quality.retrain_after_feedback(collection, at)
        return seen["after"]
