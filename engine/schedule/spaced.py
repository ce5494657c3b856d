"""Two schedulers for resurfacing memories.

The seed's rule: ``decay_score = days since last use / (usage_count + 1)``, due
at 0.7 or more. It needs no state beyond the memory's usage, but it treats every
use alike and never learns that a memory is easy or hard to keep.

The FSRS scheduler is FSRS-6 as the ``fsrs`` package (py-fsrs, the field's
maintained reference) computes it, with its published default parameters. It
keeps a small review state per memory: a stability (days until the chance of
still knowing it falls to 90%), a difficulty (1-10), and the time of the last
review. Each engagement is a rating: dismissed = again, ignored = hard, used =
good, helpful = easy. The library updates stability and difficulty; a memory
is due once FSRS-6's forgetting curve falls below the desired retention (0.9
by default: one stability after the review). Unlike flashcards, a reminder has
no minutes-long learning steps and no random fuzz: the first rating schedules
by stability at once, and the same engagement always gives the same due date.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple, Protocol

import fsrs
from fsrs.scheduler import DEFAULT_PARAMETERS

from hippocampus.model import Memory, Review

Engagement = Literal["used", "helpful", "ignored", "dismissed"]
ENGAGEMENTS: tuple[Engagement, ...] = ("used", "helpful", "ignored", "dismissed")

_RATING: dict[Engagement, fsrs.Rating] = {
    "dismissed": fsrs.Rating.Again,
    "ignored": fsrs.Rating.Hard,
    "used": fsrs.Rating.Good,
    "helpful": fsrs.Rating.Easy,
}
"""What each engagement tells FSRS about the memory."""

_MAX_STABILITY = 36500.0  # days: the longest interval FSRS schedules

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
    """FSRS-6 scheduling (the ``fsrs`` package) with engagement as the rating.

    Args:
        retention: the recall probability at which a memory falls due (0-1).
        first_interval_days: when a memory never engaged with first falls due,
            counted from its last use or creation: before any rating there is
            no stability to schedule by.
        parameters: FSRS-6's 21 weights; the package's published defaults
            unless given (e.g. fitted to a user's own history by its optimizer).
        initial_stability: deprecated; its third entry (a first "good"
            review's stability) was the first interval, now
            ``first_interval_days``.
    """

    name = "fsrs"

    def __init__(
        self,
        retention: float = 0.9,
        first_interval_days: float = 4.0,
        parameters: Sequence[float] = DEFAULT_PARAMETERS,
        *,
        initial_stability: tuple[float, float, float, float] | None = None,
    ) -> None:
        if not 0.0 < retention < 1.0:
            raise ValueError("retention must be between 0 and 1")
        if initial_stability is not None:
            warnings.warn(
                "FsrsScheduler(initial_stability=) is deprecated: FSRS-6's parameters give"
                " the first stabilities; pass first_interval_days for the first interval",
                DeprecationWarning,
                stacklevel=2,
            )
            first_interval_days = initial_stability[2]
        if not first_interval_days > 0.0:
            raise ValueError("first_interval_days must be positive")
        self.retention = retention
        self.first_interval_days = first_interval_days
        self._fsrs = fsrs.Scheduler(
            parameters=parameters,
            desired_retention=retention,
            learning_steps=(),
            relearning_steps=(),
            maximum_interval=int(_MAX_STABILITY),
            enable_fuzzing=False,
        )
        self.parameters = self._fsrs.parameters
        # FSRS-6's forgetting curve R(t) = (1 + factor * t / S) ** -decay, which
        # passes 0.9 at t = S; decay is its last weight.
        self._decay = float(self.parameters[20])
        self._factor = float(0.9 ** (-1.0 / self._decay)) - 1.0

    def interval_days(self, stability: float) -> float:
        """Days after a review until recall probability reaches ``retention``
        (``stability`` itself at 0.9), on a continuous clock."""
        stretch = float(self.retention ** (-1.0 / self._decay)) - 1.0
        return stability / self._factor * stretch

    def retrievability(self, review: Review, now: datetime) -> float:
        elapsed = max(0.0, (now - review.last_review).total_seconds() / _DAY)
        return float((1.0 + self._factor * elapsed / review.stability) ** -self._decay)

    def due_at(self, review: Review) -> datetime:
        return review.last_review + timedelta(days=self.interval_days(review.stability))

    def window(self, memory: Memory) -> tuple[datetime, float]:
        """When the memory's interval runs from and how many days it lasts, as
        :meth:`urgency` counts them (its last review and the interval its
        stability gives; never reviewed, its last use or creation and
        ``first_interval_days``)."""
        review = memory.retrieval.review
        if review is None:
            start = memory.retrieval.last_used or memory.created_at
            return start, self.first_interval_days
        return review.last_review, max(self.interval_days(review.stability), 1e-9)

    def urgency(self, memory: Memory, now: datetime) -> float:
        start, days = self.window(memory)
        return max(0.0, (now - start).total_seconds() / _DAY) / days

    def reviewed(self, memory: Memory, engagement: Engagement, now: datetime) -> Review:
        rating = _RATING[engagement]
        review = memory.retrieval.review
        at = _as_utc(now)
        # A card id of its own would cost a 1 ms sleep per card (the package
        # spaces ids by the clock); a memory is known by its own id.
        if review is None:
            card = fsrs.Card(card_id=0, due=at)
        else:
            card = fsrs.Card(
                card_id=0,
                state=fsrs.State.Review,
                step=None,
                stability=review.stability,
                difficulty=review.difficulty,
                due=at,
                last_review=_as_utc(review.last_review),
            )
        card, _ = self._fsrs.review_card(card, rating, at)
        assert card.stability is not None and card.difficulty is not None
        lapse = 1 if rating == fsrs.Rating.Again else 0
        return Review(
            stability=min(card.stability, _MAX_STABILITY),
            difficulty=card.difficulty,
            last_review=now,
            reviews=1 if review is None else review.reviews + 1,
            lapses=lapse if review is None else review.lapses + lapse,
        )


def _as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC, as the ``fsrs`` package requires (naive is taken as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


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
        and scheduler.first_interval_days == _STANDARD_FSRS.first_interval_days
        and scheduler.parameters == _STANDARD_FSRS.parameters
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
