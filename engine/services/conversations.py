"""Conversations and proactive surfacing: the service side of
:class:`hippocampus.surface.surfacer.Surfacer`, which holds the surfacing itself."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory, Tier, utcnow
from hippocampus.schedule import Scheduler, indexed_as
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.surface import SurfaceMetrics
from hippocampus.surface.outcomes import ConversationView, MessageOutcome
from hippocampus.surface.surfacer import Surfacer

_EDGE = timedelta(milliseconds=1)
"""How far past ``now`` the store's due dates are read: they are rounded to the
microsecond, and the scheduler has the last word on each candidate."""
_SPARE = 8
"""Candidates asked for beyond the limit, for those the scheduler finds not due
after all (at most the memories within ``_EDGE`` of falling due)."""


class ConversationService:
    """Messages in, insights out; conversations, resurfacing and their metrics.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        surfacer: proactive surfacing itself.
        scheduler: spaced repetition, for :meth:`resurface`.
    """

    def __init__(
        self, context: Context, checks: Checks, surfacer: Surfacer, scheduler: Scheduler
    ) -> None:
        self._context = context
        self._checks = checks
        self._surfacer = surfacer
        self.scheduler = scheduler

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
        conversation's state (see :mod:`hippocampus.surface.surfacer`).

        Raises:
            InvalidInputError: bad id, text, role, type or time.
        """
        self._checks.check_collection(collection)
        return self._surfacer.message(
            collection,
            conversation_id,
            text,
            role=role,
            at=at or utcnow(),
            conversation_type=conversation_type,
            max_chars=self._context.limits.max_content_chars,
        )

    def conversation(self, collection: str, conversation_id: str) -> ConversationView:
        """A conversation's state as surfacing sees it.

        Raises:
            NotFoundError: no such conversation in the collection.
        """
        self._checks.check_collection(collection)
        return self._surfacer.conversation(collection, conversation_id)

    def resurface(
        self, collection: str, *, limit: int = 10, now: datetime | None = None
    ) -> list[tuple[Memory, float]]:
        """Memories due for spaced repetition by the configured scheduler, the most
        valuable first (confidence × importance), with how overdue each is (due
        at 1.0). Active memories only. A built-in scheduler with its standard
        parameters is answered from the store's index of due dates; any other
        scheduler by a scan of the collection.

        Raises:
            InvalidInputError: a bad limit.
        """
        self._checks.check_collection(collection)
        if not 1 <= limit <= self._context.limits.max_recall_limit:
            raise InvalidInputError(
                f"limit is 1-{self._context.limits.max_recall_limit}", field="limit"
            )
        at = now or utcnow()
        schedule = indexed_as(self.scheduler)
        candidates: Iterable[Memory]
        if schedule is not None:
            # The store's due dates pick the candidates; each is checked here with
            # the scheduler itself, so a memory at the edge (a microsecond's
            # rounding) is judged as a scan would judge it.
            candidates = self._context.store.due_memories(
                collection, schedule=schedule, now=at + _EDGE, limit=limit + _SPARE
            )
        else:
            candidates = self._context.store.iter_memories(collection)
        due = []
        for memory in candidates:
            if memory.tier != Tier.ACTIVE:
                continue
            urgency = self.scheduler.urgency(memory, at)
            if urgency >= 1.0:
                value = memory.retrieval.confidence * memory.importance
                due.append((value, urgency, memory))
        due.sort(key=lambda item: (-item[0], -item[1], item[2].id))
        return [(memory, urgency) for _, urgency, memory in due[:limit]]

    def surfacing_metrics(self, collection: str) -> SurfaceMetrics:
        """Precision, dismissal rates, recall-before-search and lead time."""
        self._checks.check_collection(collection)
        return self._surfacer.metrics(collection)
