"""Two schedulers for resurfacing memories.

The seed's rule: ``decay_score = days since last use / (usage_count + 1)``, due
at 0.7 or more. It needs no state beyond the memory's usage, but it treats every
use alike and never learns that a memory is easy or hard to keep.

The FSRS-style scheduler keeps a small review state per memory: a stability
(days until the chance of still knowing it falls to 90%), a difficulty (1-10),
and the time of the last review. Each engagement is a rating: dismissed =
again, ignored = hard, used = good, helpful = easy. The forgetting curve is
``R(t) = (1 + t / (9 S)) ** -1``; a memory is due once R falls below the desired
retention (0.9 by default), i.e. ``t >= S`` at 0.9. A successful review grows
S, more when it came late (low R), for an easy memory, and while S is small; a
lapse cuts S to a fraction of what it was. The constants are round numbers in
the spirit of FSRS's published defaults, not a fitted model.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple, Protocol

from hippocampus.model import Memory, Review

Engagement = Literal["used", "helpful", "ignored", "dismissed"]
ENGAGEMENTS: tuple[Engagement, ...] = ("used", "helpful", "ignored", "dismissed")

_RATING: dict[Engagement, int] = {"dismissed": 1, "ignored": 2, "used": 3, "helpful": 4}
"""FSRS ratings: 1 again, 2 hard, 3 good, 4 easy."""

_DAY = 86400.0


def seed_decay_score(memory: Memory, now: datetime) -> float:
    """The seed's score: days since last use (or since creation) / (uses + 1)."""
    since = memory.retrieval.last_used or memory.created_at
    days = max(0.0, (now - since).total_seconds() / _DAY)
    return days / (memory.retrieval.usage_count + 1)


class Scheduler(Protocol):
    """Decides when a memory is due again, and learns from engagement."""

    name: str

    def urgency(self, memory: Memory, now: datetime) -> float:
        """How overdue the memory is: due at 1.0 or more."""
        ...

    def reviewed(self, memory: Memory, engagement: Engagement, now: datetime) -> Review | None:
        """The memory's review state after an engagement (``None``: keeps none)."""
        ...


class SeedScheduler:
    """The seed's formula; due when ``decay_score >= threshold``."""

    name = "seed"

    def __init__(self, threshold: float = 0.7) -> None:
        if threshold <= 0.0:
            raise ValueError("threshold must be positive")
        self.threshold = threshold

    def urgency(self, memory: Memory, now: datetime) -> float:
        return seed_decay_score(memory, now) / self.threshold

    def window(self, memory: Memory) -> tuple[datetime, float]:
        """When the memory's interval runs from (its last use, else its creation)
        and how many days it lasts: :meth:`urgency` is the days since over these
        days, so the memory falls due when they have passed."""
        since = memory.retrieval.last_used or memory.created_at
        return since, self.threshold * (memory.retrieval.usage_count + 1)

    def reviewed(self, memory: Memory, engagement: Engagement, now: datetime) -> Review | None:
        return memory.retrieval.review


class FsrsScheduler:
    """Stability-based scheduling with engagement as the rating.

    Args:
        retention: the recall probability at which a memory falls due (0-1).
        initial_stability: days, by first rating (again, hard, good, easy).
    """

    name = "fsrs"

    def __init__(
        self,
        retention: float = 0.9,
        initial_stability: tuple[float, float, float, float] = (0.5, 1.5, 4.0, 10.0),
    ) -> None:
        if not 0.0 < retention < 1.0:
            raise ValueError("retention must be between 0 and 1")
        self.retention = retention
        self.initial_stability = initial_stability

    def interval_days(self, stability: float) -> float:
        """Days after a review until recall probability reaches ``retention``."""
        return 9.0 * stability * (1.0 / self.retention - 1.0)

    @staticmethod
    def retrievability(review: Review, now: datetime) -> float:
        elapsed = max(0.0, (now - review.last_review).total_seconds() / _DAY)
        return 1.0 / (1.0 + elapsed / (9.0 * review.stability))

    def due_at(self, review: Review) -> datetime:
        return review.last_review + timedelta(days=self.interval_days(review.stability))

    def window(self, memory: Memory) -> tuple[datetime, float]:
        """When the memory's interval runs from and how many days it lasts, as
        :meth:`urgency` counts them (its last review and the interval its
        stability gives; never reviewed, its last use or creation and a "good"
        first interval)."""
        review = memory.retrieval.review
        if review is None:
            start = memory.retrieval.last_used or memory.created_at
            return start, max(self.interval_days(self.initial_stability[2]), 1e-9)
        return review.last_review, max(self.interval_days(review.stability), 1e-9)

    def urgency(self, memory: Memory, now: datetime) -> float:
        review = memory.retrieval.review
        if review is None:
            # Never reviewed: the first interval of a "good" memory, from creation.
            start = memory.retrieval.last_used or memory.created_at
            review = Review(stability=self.initial_stability[2], difficulty=5.0, last_review=start)
        elapsed = max(0.0, (now - review.last_review).total_seconds() / _DAY)
        return elapsed / max(self.interval_days(review.stability), 1e-9)

    def reviewed(self, memory: Memory, engagement: Engagement, now: datetime) -> Review:
        rating = _RATING[engagement]
        review = memory.retrieval.review
        if review is None:
            return Review(
                stability=self.initial_stability[rating - 1],
                difficulty=_clamp(7.0 - 1.5 * (rating - 1), 1.0, 10.0),
                last_review=now,
                lapses=1 if rating == 1 else 0,
            )
        r = self.retrievability(review, now)
        # Difficulty drifts toward the rating: again/hard raise it, easy lowers it.
        difficulty = _clamp(review.difficulty - 0.8 * (rating - 3), 1.0, 10.0)
        if rating == 1:
            stability = max(0.1, review.stability * 0.3 * (1.0 - 0.5 * r))
            lapses = review.lapses + 1
        else:
            bonus = {2: 0.3, 3: 1.0, 4: 2.5}[rating]
            growth = (
                math.exp(1.5)
                * (11.0 - difficulty)
                * review.stability ** (-0.15)
                * (math.exp(1.0 - r) - 1.0)
                * bonus
            )
            stability = review.stability * (1.0 + max(growth, 0.05 * bonus))
            lapses = review.lapses
        return Review(
            stability=min(stability, 36500.0),
            difficulty=difficulty,
            last_review=now,
            reviews=review.reviews + 1,
            lapses=lapses,
        )


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


# -- the stored due dates ---------------------------------------------------------------

IndexedSchedule = Literal["seed", "fsrs"]

_STANDARD_SEED = SeedScheduler()
_STANDARD_FSRS = FsrsScheduler()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_US = 86_400_000_000
_LATEST_US = 1 << 62  # due dates past this (thousands of years) are kept at it


class DueKeys(NamedTuple):
    """What a store keeps beside a memory so that ``/resurface`` is answered from
    an index instead of a scan of the collection: the memory's value and, under
    each built-in scheduler with its standard parameters, when it falls due and
    how long its interval is. Times and spans in microseconds since the epoch.

    A store orders the due memories by value, then by urgency at ``now``, which
    is ``1 + (now - due) / span`` (:meth:`Scheduler.urgency`'s elapsed time over
    the interval); the engine checks each candidate exactly with its scheduler.
    """

    value: float
    """confidence × importance: what resurfacing ranks by."""
    seed_due: int
    seed_span: int
    fsrs_due: int
    fsrs_span: int


def due_keys(memory: Memory) -> DueKeys:
    """The :class:`DueKeys` of a memory as it is now.

    Every write of a memory's fields stores them (whichever path writes:
    remember, edit, feedback, engagement, tier moves, import), so this is the
    one place they are computed; they change only with the memory.
    """
    seed_due, seed_span = _due_and_span(_STANDARD_SEED.window(memory))
    fsrs_due, fsrs_span = _due_and_span(_STANDARD_FSRS.window(memory))
    return DueKeys(
        value=memory.retrieval.confidence * memory.importance,
        seed_due=seed_due,
        seed_span=seed_span,
        fsrs_due=fsrs_due,
        fsrs_span=fsrs_span,
    )


def indexed_as(scheduler: Scheduler) -> IndexedSchedule | None:
    """Which stored due dates (:class:`DueKeys`) answer for ``scheduler``:
    ``"seed"`` or ``"fsrs"`` for a built-in scheduler with the standard
    parameters, ``None`` for any other (its due memories are found by a scan)."""
    if type(scheduler) is SeedScheduler and scheduler.threshold == _STANDARD_SEED.threshold:
        return "seed"
    if (
        type(scheduler) is FsrsScheduler
        and scheduler.retention == _STANDARD_FSRS.retention
        and scheduler.initial_stability[2] == _STANDARD_FSRS.initial_stability[2]
    ):
        return "fsrs"
    return None


def _due_and_span(window: tuple[datetime, float]) -> tuple[int, int]:
    start, days = window
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    span = max(1, min(_LATEST_US, round(days * _DAY_US)))
    begin = (start - _EPOCH) // timedelta(microseconds=1)
    return min(_LATEST_US, begin + span), span
