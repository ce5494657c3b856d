"""Recall requests and results."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from engine.model.memory import Memory, Tier


class RecallFilters(BaseModel):
    """Restrictions applied before ranking. Empty lists mean "no restriction",
    except ``tiers``, which names the tiers searched and may not be empty."""

    model_config = ConfigDict(extra="forbid")

    domains: list[str] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    tiers: list[Tier] = Field(default_factory=lambda: [Tier.ACTIVE], min_length=1)
    exclude_conversation_id: str | None = None


class RecallHit(BaseModel):
    """One ranked result."""

    memory: Memory
    score: float
    similarity: float | None = None


class RecallResult(BaseModel):
    query: str
    hits: list[RecallHit]
    embedder: str
    warnings: list[str] = Field(default_factory=list)
