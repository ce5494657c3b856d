"""Recall requests and results."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model.association import GraphPath
from hippocampus.model.memory import Memory, Tier, UtcDatetime


def speaker_key(speaker: str) -> str:
    """A speaker label as speaker filters compare it: lower case, as Cypher's
    ``toLower`` makes it (both stores compare alike)."""
    return speaker.lower()


class RecallFilters(BaseModel):
    """Restrictions applied before ranking. Empty lists mean "no restriction",
    except ``tiers``, which names the tiers searched and may not be empty.

    ``occurred_after`` and ``occurred_before`` bound ``Memory.occurred_at`` as a
    half-open range: ``occurred_after <= occurred_at < occurred_before`` (either
    may be left out; a naive datetime is taken as UTC). ``speakers`` keeps the
    memories said by one of them, whatever the case (``maria`` keeps what
    ``Maria`` said; see :func:`speaker_key`); a memory with no speaker fails it.
    """

    model_config = ConfigDict(extra="forbid")

    domains: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    tiers: list[Tier] = Field(default_factory=lambda: [Tier.ACTIVE], min_length=1)
    exclude_conversation_id: str | None = None
    occurred_after: UtcDatetime | None = None
    occurred_before: UtcDatetime | None = None
    speakers: list[str] = Field(default_factory=list)

    def admits(self, memory: Memory) -> bool:
        """Whether ``memory`` passes every restriction (what the stores' searches
        apply, for memories a recall reaches some other way)."""
        retrieval = memory.retrieval
        return (
            memory.tier in self.tiers
            and (not self.categories or memory.category in self.categories)
            and (not self.tags or any(t in self.tags for t in memory.tags))
            and (not self.domains or any(d in self.domains for d in retrieval.domains))
            and (
                self.exclude_conversation_id is None
                or self.exclude_conversation_id not in retrieval.conversation_ids
            )
            and (self.occurred_after is None or memory.occurred_at >= self.occurred_after)
            and (self.occurred_before is None or memory.occurred_at < self.occurred_before)
            and (
                not self.speakers
                or (
                    memory.speaker is not None
                    and speaker_key(memory.speaker) in {speaker_key(s) for s in self.speakers}
                )
            )
        )


class TimeWindow(BaseModel):
    """A time the query names ("in March", "last week"), as recall read it: the
    memories that occurred in ``[start, end)`` are preferred (an end that is
    ``None`` is open)."""

    phrase: str
    start: UtcDatetime | None = None
    end: UtcDatetime | None = None

    def holds(self, at: datetime) -> bool:
        """Whether ``at`` lies within the window."""
        return (self.start is None or at >= self.start) and (self.end is None or at < self.end)


class RecallHit(BaseModel):
    """One ranked result and the signals behind its rank.

    Attributes:
        score: the fused score the results are ranked by.
        similarity: cosine similarity to the query (when dense search found it).
        lexical: BM25 score (when lexical search found it).
        graph: associative path strength (when expansion reached it).
        time: what the query's time gave it (it occurred within a time the
            query names, and other candidates did not); ``None`` when time did
            not move it.
        paths: with ``explain``, the strongest paths that reached it.
    """

    memory: Memory
    score: float
    similarity: float | None = None
    lexical: float | None = None
    graph: float | None = None
    time: float | None = None
    paths: list[GraphPath] | None = None


class SurfacedBefore(BaseModel):
    """A top result of a recall made in a conversation that had already been
    offered there, ``lead`` messages earlier."""

    memory_id: str
    lead: int


class RecallResult(BaseModel):
    query: str
    hits: list[RecallHit]
    embedder: str
    recipe: str = "ASSOCIATIVE"
    warnings: list[str] = Field(default_factory=list)
    surfaced_before: list[SurfacedBefore] = Field(default_factory=list)
    times: list[TimeWindow] = Field(default_factory=list)
    """The times the query names, as the recipe read them (none for a recipe
    that does not weigh time)."""
