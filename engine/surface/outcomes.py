"""What surfacing answers and keeps: the insights a message brings, the state of
a conversation as callers see it, an engagement's outcome, and the record of
each offer; and the keys of the state it stores per collection."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model import Memory
from hippocampus.surface.conversation import ConversationState

SURFACE_MODEL_KEY = "surface:model"
SURFACE_COUNTERS_KEY = "surface:counters"
CONVERSATION_PREFIX = "conversation:"
SURFACING_PREFIX = "surfacing:"


def conversation_key(conversation_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{conversation_id}"


def surfacing_key(surfacing_id: str) -> str:
    return f"{SURFACING_PREFIX}{surfacing_id}"


class Gate(BaseModel):
    """One gate an insight passed: its measured value and the limit."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float
    limit: float


class Insight(BaseModel):
    """A memory offered to a conversation, and why.

    Attributes:
        matched_topics: the memory's triggers and concepts that the
            conversation has said (in the messages it keeps).
        foreseen_topics: those it matched that nobody has said yet: predicted
            to come next, or foreseen from what such conversations came to need.
        foreseen: offered mostly for what the conversation will come to need
            rather than for what it says (it met its type's bar for foreseen
            offers).
        reason: why, in words: which words of the conversation matched, which
            said topic led to each foreseen one, and whether the memory was due
            for review.
    """

    model_config = ConfigDict(extra="forbid")

    surfacing_id: str
    memory: Memory
    confidence: float
    matched_topics: list[str]
    foreseen_topics: list[str] = Field(default_factory=list)
    foreseen: bool = False
    reason: str = ""
    gates: list[Gate]


class ConversationView(BaseModel):
    """The state of a conversation as callers see it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    messages: int
    type: str
    type_given: bool
    domain: str | None
    momentum: float
    recent_topics: list[str]
    predicted_topics: list[str]
    participants: list[str]


def conversation_view(state: ConversationState, predicted: list[str]) -> ConversationView:
    """The view of ``state`` callers get, with the topics ``predicted`` for it."""
    recent = [t for topics in reversed(state.topics[-3:]) for t in topics]
    return ConversationView(
        id=state.id,
        messages=state.messages,
        type=state.type,
        type_given=state.given_type is not None,
        domain=state.domain,
        momentum=round(state.momentum, 3),
        recent_topics=list(dict.fromkeys(recent))[:20],
        predicted_topics=predicted,
        participants=state.participants,
    )


class MessageOutcome(BaseModel):
    """What one message brought: the insights (0-3) and the conversation state;
    ``held_back`` says why nothing was offered when a conversation-wide gate
    stopped it (momentum); ``warnings`` what was degraded (an embedder that
    failed: candidates came from text and graph only); ``candidates`` how many
    memories the message's retrieval weighed (``None`` when it was held back
    before retrieval): none at all says the collection may hold no memories."""

    model_config = ConfigDict(extra="forbid")

    insights: list[Insight]
    conversation: ConversationView
    held_back: str | None = None
    warnings: list[str] = Field(default_factory=list)
    candidates: int | None = None


class Surfacing(BaseModel):
    """A stored offer: enough to learn from its engagement later."""

    model_config = ConfigDict(extra="forbid")

    id: str
    conversation_id: str
    memory_id: str
    message: int
    at: datetime
    conversation_type: str
    kind: str
    context: str = ""
    """Kept by records from before ``about``: not read."""
    about: list[str] = Field(default_factory=list)
    """What the conversation was about when the offer was made (its recent
    topics, latest first)."""
    concepts: list[str]
    """The concepts said then beside the memory's own topics: a use links it to
    them."""
    features: list[float]
    confidence: float
    threshold: float
    foreseen: bool = False
    engagement: str | None = None
    engaged_at: datetime | None = None


class EngagementOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    surfacing_id: str
    engagement: str
    memory: Memory
    threshold: float = Field(description="the conversation type's threshold after learning")
