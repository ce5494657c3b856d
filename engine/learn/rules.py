"""How edges learn: reinforcement when memories are used together, decay when not.

The numbers are the seed's: a co-used edge gains 0.1 up to 1.0 and starts at
0.3; an association unused for more than six months (180 days) loses 0.05 per
pass, never below 0.1.

Feedback amplification guard: a bare retrieval (results shown, nobody said they
helped) is weak evidence. It counts on the edges its results already share
(``co_occurrences``, ``last_co_occurred``, so an association in use does not
decay) but moves no weight and creates no edge: a query repeated a thousand
times cannot weld its results together or reorder itself. Weight comes from
use (engagement, feedback, co-use), bounded at 1.0, and decay pulls unused
edges down.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model import EdgeType
from hippocampus.model.association import EdgeUpdate


@dataclass(frozen=True)
class Reinforcement:
    """How much one kind of evidence strengthens an edge.

    Attributes:
        delta: added to an existing edge's weight.
        cap: the weight this evidence can raise an edge to, at most.
        initial: the weight of an edge this evidence creates.
        create: whether this evidence may create edges that do not exist.
    """

    delta: float
    cap: float
    initial: float
    create: bool = True


REAL_USE = Reinforcement(delta=0.1, cap=1.0, initial=0.3)
"""Memories used or found helpful together (the seed's co-retrieval rule)."""

BARE_RETRIEVAL = Reinforcement(delta=0.0, cap=0.0, initial=0.0, create=False)
"""Memories merely returned together by one recall: counted on their existing
edges, no weight gained (a recall that fed its own ranking would drift)."""


class DecayPolicy(BaseModel):
    """Temporal decay of unused edges (seed: six months, -0.05, floor 0.1).

    Attributes:
        unused_for: an edge idle for longer than this decays. The seed counts
            months of 30 days and decays past 6 of them: idle more than 180 days.
        step / floor: what one pass takes off, and the least weight left.
        edge_types: the edge types that decay. Only ASSOCIATED edges, the
            associations learned between memories: a memory's edges to its
            domains, triggers and concepts say what it is about, which disuse
            does not change, so a long-idle memory stays reachable by them;
            CONFLICTS_WITH, SUPERSEDES and SYNTHESIZED_FROM record facts and
            carry no learned weight.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    unused_for: timedelta = timedelta(days=180)
    step: float = Field(default=0.05, ge=0.0, le=1.0)
    floor: float = Field(default=0.1, ge=0.0, le=1.0)
    edge_types: tuple[EdgeType, ...] = (EdgeType.ASSOCIATED,)


class LearningConfig(BaseModel):
    """How the engine learns from its own use.

    Attributes:
        co_retrieved: how many of a recall's top results reinforce each other.
        flush_at: queued retrieval reinforcements written once this many wait.
        decay: the temporal decay policy.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    co_retrieved: int = Field(default=3, ge=0)
    flush_at: int = Field(default=512, ge=1)
    decay: DecayPolicy = DecayPolicy()


class ReinforcementRule(Protocol):
    """What :func:`reinforced_weight` reads of a rule: a :class:`Reinforcement`, or
    a store's own record of one update (the embedded store's, for one)."""

    @property
    def delta(self) -> float: ...
    @property
    def cap(self) -> float: ...
    @property
    def initial(self) -> float: ...
    @property
    def create(self) -> bool: ...


def reinforced_weight(weight: float | None, rule: ReinforcementRule) -> float | None:
    """The weight after one reinforcement; ``None`` when the edge does not exist and
    the rule may not create it. An edge already above the rule's cap keeps its
    weight: weaker evidence never lowers what stronger evidence built."""
    if weight is None:
        return rule.initial if rule.create else None
    if weight >= rule.cap:
        return weight
    return min(rule.cap, weight + rule.delta)


def decayed_weight(weight: float, last_used: datetime, now: datetime, policy: DecayPolicy) -> float:
    """The weight after one decay pass at ``now`` for an edge last used at ``last_used``."""
    if now - last_used <= policy.unused_for or weight <= policy.floor:
        return weight
    return max(policy.floor, weight - policy.step)


def decay_period(now: datetime) -> str:
    """The period a decay pass at ``now`` belongs to: one pass per UTC day counts."""
    return now.date().isoformat()


def co_use_updates(
    memory_ids: Sequence[str],
    at: datetime,
    rule: Reinforcement,
    *,
    anchors: Sequence[tuple[EdgeType, str]] = (),
    kind: str = "co_retrieval",
) -> list[EdgeUpdate]:
    """Edge reinforcements for memories used together: every pair of memories
    strengthens its ASSOCIATED edge, and each memory its edges to the anchors
    (``(edge type, hub name)``, e.g. the query's concepts)."""
    ids = list(dict.fromkeys(memory_ids))
    updates = [
        EdgeUpdate(
            source=a,
            type=EdgeType.ASSOCIATED,
            target=b,
            delta=rule.delta,
            cap=rule.cap,
            initial=rule.initial,
            at=at,
            kind=kind,
            create=rule.create,
        )
        for a, b in itertools.combinations(sorted(ids), 2)
    ]
    updates.extend(
        EdgeUpdate(
            source=mid,
            type=edge_type,
            target=name,
            delta=rule.delta,
            cap=rule.cap,
            initial=rule.initial,
            at=at,
            create=rule.create,
        )
        for mid in ids
        for edge_type, name in anchors
    )
    return updates
