"""Spaced repetition: when a memory should come back before it is forgotten."""

from engine.model import Review
from engine.schedule.spaced import (
    ENGAGEMENTS,
    Engagement,
    FsrsScheduler,
    Scheduler,
    SeedScheduler,
    seed_decay_score,
)

__all__ = [
    "ENGAGEMENTS",
    "Engagement",
    "FsrsScheduler",
    "Review",
    "Scheduler",
    "SeedScheduler",
    "seed_decay_score",
]
