"""Learning rules: pure functions over edges and memories; the clock is an argument."""

from hippocampus.learn.rules import (
    BARE_RETRIEVAL,
    REAL_USE,
    DecayPolicy,
    LearningConfig,
    Reinforcement,
    co_use_updates,
    decay_period,
    decayed_weight,
    reinforced_weight,
)

__all__ = [
    "BARE_RETRIEVAL",
    "REAL_USE",
    "DecayPolicy",
    "LearningConfig",
    "Reinforcement",
    "co_use_updates",
    "decay_period",
    "decayed_weight",
    "reinforced_weight",
]
