"""Spaced repetition: when a memory should come back before it is forgotten."""

from hippocampus.model import Review
from hippocampus.schedule.spaced import (
    ENGAGEMENTS,
    DueKeys,
    Engagement,
    FsrsScheduler,
    IndexedSchedule,
    Scheduler,
    SeedScheduler,
    due_keys,
    indexed_as,
    seed_decay_score,
)

__all__ = [
    "ENGAGEMENTS",
    "DueKeys",
    "Engagement",
    "FsrsScheduler",
    "IndexedSchedule",
    "Review",
    "Scheduler",
    "SeedScheduler",
    "due_keys",
    "indexed_as",
    "seed_decay_score",
]
