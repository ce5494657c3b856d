"""Bodies of proactive surfacing: messages, offered insights, engagement,
feedback, memories used together and those due again."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, Field

from hippocampus.api.schemas.common import LIMITS, Content, MemoryId, Names, RequestModel
from hippocampus.api.schemas.graph import EdgeOut
from hippocampus.api.schemas.memories import MemoryOut
from hippocampus.surface.outcomes import EngagementOutcome, Insight, MessageOutcome

ConversationType = Literal["debugging", "help-seeking", "exploration", "casual", "general"]


class MessageIn(RequestModel):
    text: Content
    role: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:@\- ]+$")] = (
        "user"
    )
    at: AwareDatetime | None = Field(default=None, description="When it was said; default now.")
    conversation_type: ConversationType | None = Field(
        default=None, description="Inferred from the text when not given."
    )


class GateOut(BaseModel):
    name: str
    value: float
    limit: float


class InsightOut(BaseModel):
    surfacing_id: str = Field(description="Send engagement to /surfacings/{surfacing_id}.")
    confidence: float = Field(description="Estimated chance that it gets used.")
    reason: str = Field(
        description="Why it is offered, in words: the words of the conversation it matched, "
        "the said topic that led to each topic it matched ahead of the conversation, and "
        "whether it was due for review."
    )
    foreseen: bool = Field(
        description="Offered mostly for what the conversation will come to need rather "
        "than for what it says (it met the bar for foreseen offers)."
    )
    matched_topics: list[str] = Field(description="The memory's topics the conversation has said.")
    foreseen_topics: list[str] = Field(
        description="The memory's topics it matched that nobody has said yet."
    )
    gates: list[GateOut]
    memory: MemoryOut

    @classmethod
    def from_engine(cls, insight: Insight) -> InsightOut:
        return cls(
            surfacing_id=insight.surfacing_id,
            confidence=insight.confidence,
            reason=insight.reason,
            foreseen=insight.foreseen,
            matched_topics=list(insight.matched_topics),
            foreseen_topics=list(insight.foreseen_topics),
            gates=[GateOut.model_validate(g.model_dump()) for g in insight.gates],
            memory=MemoryOut.from_engine(insight.memory),
        )


class ConversationOut(BaseModel):
    id: str
    messages: int
    type: str
    type_given: bool
    domain: str | None
    momentum: float = Field(description="Messages per minute over the last few.")
    recent_topics: list[str]
    predicted_topics: list[str]
    participants: list[str]


class MessageOut(BaseModel):
    insights: list[InsightOut]
    conversation: ConversationOut
    held_back: str | None = Field(description="Why nothing could be offered, when a gate said so.")
    warnings: list[str] = Field(
        description="What was degraded (an embedder that failed: text and graph only), or "
        "that the collection holds no memories at all."
    )

    @classmethod
    def from_engine(cls, outcome: MessageOutcome) -> MessageOut:
        return cls(
            insights=[InsightOut.from_engine(i) for i in outcome.insights],
            conversation=ConversationOut.model_validate(outcome.conversation.model_dump()),
            held_back=outcome.held_back,
            warnings=list(outcome.warnings),
        )


class EngagementIn(RequestModel):
    engagement: Literal["used", "helpful", "ignored", "dismissed"]


class EngagementOut(BaseModel):
    surfacing_id: str
    engagement: str
    threshold: float = Field(description="The conversation type's confidence bar now.")
    memory: MemoryOut

    @classmethod
    def from_engine(cls, outcome: EngagementOutcome) -> EngagementOut:
        return cls(
            surfacing_id=outcome.surfacing_id,
            engagement=outcome.engagement,
            threshold=outcome.threshold,
            memory=MemoryOut.from_engine(outcome.memory),
        )


class FeedbackIn(RequestModel):
    helpful: bool
    context: Names = Field(
        default_factory=list, description="Concepts of the context the memory was used in."
    )


class UsedTogetherIn(RequestModel):
    ids: Annotated[list[MemoryId], Field(min_length=2, max_length=LIMITS.max_recall_limit)] = Field(
        description="Memories used together (two or more)."
    )
    context: Names = Field(
        default_factory=list, description="Concepts of the context they were used in."
    )


class UsedTogetherOut(BaseModel):
    edges: list[EdgeOut] = Field(description="The ASSOCIATED edges among them, as they now are.")


class DueOut(BaseModel):
    urgency: float = Field(description="How overdue: due at 1.0.")
    memory: MemoryOut


class ResurfaceOut(BaseModel):
    scheduler: str
    results: list[DueOut]
    warnings: list[str] = Field(
        default_factory=list, description="e.g. the collection holds no memories at all."
    )
