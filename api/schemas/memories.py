"""Bodies of ``/memories``: remembering, reading, editing, a conversation's turns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from hippocampus.api.schemas.common import (
    LIMITS,
    Category,
    Content,
    Importance,
    MemoryId,
    Names,
    OccurredAt,
    RequestModel,
    Source,
    Speaker,
)
from hippocampus.model import HUB_OF_EDGE, Edge, HubKind, Memory, MemoryPatch, NewMemory, Tier
from hippocampus.service import NOT_EMBEDDED_REASON, EditOutcome, RememberOutcome, TurnWindow


class MemoryIn(RequestModel):
    """One memory to remember. Domains, triggers and concepts given here replace
    the extracted ones."""

    content: Content
    id: MemoryId | None = Field(
        default=None, description="An external id; a UUID is generated when absent."
    )
    category: Category = "insight"
    importance: Importance = 0.5
    source: Source | None = None
    tags: Names = Field(default_factory=list)
    domains: Names | None = None
    triggers: Names | None = None
    concepts: Names | None = None
    conversation_id: MemoryId | None = Field(
        default=None,
        description="The conversation it was said in: its turns are linked in the order "
        "they happened (occurred_at).",
    )
    occurred_at: OccurredAt | None = None
    speaker: Speaker | None = Field(default=None, description="Who said it.")
    synthesized_from: Annotated[list[MemoryId], Field(max_length=LIMITS.max_tags)] = Field(
        default_factory=list,
        description="Stored memories this one was synthesized from (SYNTHESIZED_FROM edges).",
    )

    def to_engine(self) -> NewMemory:
        return NewMemory.model_validate(self.model_dump())


class MemoryBatchIn(RequestModel):
    """Several memories, stored all or nothing."""

    memories: Annotated[list[MemoryIn], Field(max_length=LIMITS.max_batch)]

    def to_engine(self) -> list[NewMemory]:
        return [m.to_engine() for m in self.memories]


def _one_or_batch(value: Any) -> str:
    if isinstance(value, dict):
        return "batch" if "memories" in value else "one"
    return "batch" if isinstance(value, MemoryBatchIn) else "one"


def _untagged(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Drop the union tag pydantic puts first in each error location, so errors
    name the field as the client wrote it (``memories.3.content``, not
    ``batch.memories.3.content``)."""
    if isinstance(value, dict) and "memories" in value and "content" in value:
        # Otherwise the batch shape wins and `content` reads as merely unexpected.
        raise ValidationError.from_exception_data(
            "RememberIn",
            [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "one_or_batch",
                        "give either `content` (one memory) or `memories` (a batch), not both",
                    ),
                    loc=("content",),
                    input=value["content"],
                )
            ],
        )
    try:
        return handler(value)
    except ValidationError as e:
        try:
            details = [
                InitErrorDetails(
                    type=err["type"],
                    loc=err["loc"][1:]
                    if err["loc"] and err["loc"][0] in ("one", "batch")
                    else err["loc"],
                    input=err["input"],
                    ctx=err.get("ctx", {}),
                )
                for err in e.errors()
            ]
            rebuilt = ValidationError.from_exception_data(e.title, details)
        except (KeyError, TypeError, ValueError):
            raise e from None
        raise rebuilt from None


RememberIn = Annotated[
    Annotated[MemoryIn, Tag("one")] | Annotated[MemoryBatchIn, Tag("batch")],
    Discriminator(_one_or_batch),
    WrapValidator(_untagged),
]
"""The body of ``POST /memories``: one memory, or ``{"memories": [...]}``."""


class MemoryPatchIn(RequestModel):
    """A partial edit; absent or null fields stay as they are."""

    content: Content | None = None
    category: Category | None = None
    importance: Importance | None = None
    tier: Tier | None = None
    source: Source | None = None
    tags: Names | None = None
    domains: Names | None = None
    triggers: Names | None = None
    concepts: Names | None = None
    occurred_at: OccurredAt | None = None
    speaker: Speaker | None = None

    def to_engine(self) -> MemoryPatch:
        return MemoryPatch.model_validate(self.model_dump())


class RememberOut(BaseModel):
    """What happened to one memory."""

    id: str | None = Field(description="The stored memory; null when it was rejected.")
    tier: Tier | None = Field(description="Its tier; null when it was rejected.")
    created: bool = Field(description="Whether a new memory was stored.")
    rejected: bool = Field(description="The quality gate refused it: nothing was stored.")
    duplicate_of: str | None = Field(
        description="The stored memory it repeats, and was merged into (provenance appended)."
    )
    conflicts_with: list[str] = Field(
        description="Stored memories it contradicts; both kept, linked by CONFLICTS_WITH."
    )
    supersedes: list[str] = Field(
        default_factory=list,
        description="Those of them that happened before it (occurred_at): it links to each "
        "by SUPERSEDES and ranks above it for questions about the present. One that "
        "happened after it supersedes it instead (its superseded_by).",
    )
    embedded: bool = Field(description="False: stored without a vector, to be re-embedded.")
    quality: float | None = Field(description="The quality gate's score, 0-1.")
    sanitized: bool = Field(
        description="Its content was changed before storing: hidden characters removed, "
        "role markers or instructions to a reading model neutralized."
    )
    reasons: list[str] = Field(description="What was done and why, in words.")
    occurred_at: datetime | None = Field(
        default=None, description="When it happened (UTC); null when it was rejected."
    )
    speaker: str | None = Field(default=None, description="Who said it.")

    @classmethod
    def from_engine(cls, outcome: RememberOutcome) -> RememberOut:
        memory = outcome.memory
        return cls(
            id=memory.id if memory is not None else None,
            tier=memory.tier if memory is not None else None,
            occurred_at=memory.occurred_at if memory is not None else None,
            speaker=memory.speaker if memory is not None else None,
            created=outcome.created,
            rejected=outcome.rejected,
            duplicate_of=outcome.duplicate_of,
            conflicts_with=list(outcome.conflicts_with),
            supersedes=list(outcome.supersedes),
            embedded=outcome.embedded,
            quality=outcome.quality,
            sanitized=outcome.sanitized,
            reasons=list(outcome.reasons),
        )


class RememberBatchOut(BaseModel):
    results: list[RememberOut]

    @classmethod
    def from_engine(cls, outcomes: list[RememberOutcome]) -> RememberBatchOut:
        return cls(results=[RememberOut.from_engine(o) for o in outcomes])


class ReviewOut(BaseModel):
    stability: float = Field(description="Days until recall probability falls to 90%.")
    difficulty: float
    last_review: datetime
    reviews: int
    lapses: int


class RetrievalOut(BaseModel):
    domains: list[str]
    triggers: list[str]
    concepts: list[str]
    names: list[str] = Field(
        description="The concepts that are proper names; their edges start stronger."
    )
    confidence: float
    usage_count: int
    last_used: datetime | None
    recent_dismissals: float = Field(
        description="As of dismissed_at; fades with a half-life (7 days by default)."
    )
    dismissed_at: datetime | None
    review: ReviewOut | None = Field(description="Spaced-repetition state (FSRS-style).")
    irrelevant_contexts: list[str]
    quality_score: float | None
    usefulness: float = Field(
        description="Helpful share of its feedback, with a prior of one vote each way."
    )
    helpful_votes: float = 0.0
    unhelpful_votes: float = 0.0
    promoted_at: datetime | None = Field(
        default=None, description="Set while it is promoted (high, useful use)."
    )
    duplicates: int = Field(description="Times it was remembered again and merged into.")
    conversation_ids: list[str]
    synthesized_from: list[str]


class MemoryOut(BaseModel):
    """A stored memory with its retrieval metadata. Never its vector."""

    id: str
    collection: str
    content: str
    category: str
    importance: float
    tier: Tier
    source: str | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime = Field(
        description="When the remembered thing happened (UTC); default: created_at."
    )
    speaker: str | None = Field(description="Who said it.")
    content_hash: str
    embedding_model: str | None = Field(
        description="The model whose vector the store holds; null: waiting to be embedded."
    )
    embedding_generated_at: datetime | None = Field(
        default=None, description="When that vector was made."
    )
    superseded_by: list[str] = Field(
        default_factory=list,
        description="Newer memories that reverse or replace it (SUPERSEDES edges): "
        "questions about the present rank them above it.",
    )
    retrieval: RetrievalOut

    @classmethod
    def from_engine(cls, memory: Memory) -> MemoryOut:
        r = memory.retrieval
        return cls(
            id=memory.id,
            collection=memory.collection,
            content=memory.content,
            category=memory.category,
            importance=memory.importance,
            tier=memory.tier,
            source=memory.source,
            tags=list(memory.tags),
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            occurred_at=memory.occurred_at,
            speaker=memory.speaker,
            content_hash=memory.content_hash,
            embedding_model=memory.embedding_model,
            embedding_generated_at=memory.embedding_generated_at,
            superseded_by=list(r.superseded_by),
            retrieval=RetrievalOut(
                domains=list(r.domains),
                triggers=list(r.triggers),
                concepts=list(r.concepts),
                names=list(r.names),
                confidence=r.confidence,
                usage_count=r.usage_count,
                last_used=r.last_used,
                recent_dismissals=r.recent_dismissals,
                dismissed_at=r.dismissed_at,
                review=ReviewOut.model_validate(r.review.model_dump()) if r.review else None,
                irrelevant_contexts=list(r.irrelevant_contexts),
                quality_score=r.quality_score,
                usefulness=r.usefulness,
                helpful_votes=r.helpful_votes,
                unhelpful_votes=r.unhelpful_votes,
                promoted_at=r.promoted_at,
                duplicates=r.duplicates,
                conversation_ids=list(r.conversation_ids),
                synthesized_from=list(r.synthesized_from),
            ),
        )


class HubLinkOut(BaseModel):
    """A memory's edge to one hub node: the hub's name and the edge's weight."""

    name: str
    weight: float = Field(description="The edge's weight, as learning left it.")
    co_occurrences: int
    last_co_occurred: datetime | None


class HubsOut(BaseModel):
    """The hub nodes a memory links to, each kind strongest first."""

    domains: list[HubLinkOut]
    triggers: list[HubLinkOut]
    concepts: list[HubLinkOut]


class MemoryDetailOut(MemoryOut):
    """A stored memory as reading it by id gives it: with its hubs and their edge
    weights."""

    hubs: HubsOut

    @classmethod
    def from_engine_with_hubs(cls, memory: Memory, edges: Sequence[Edge]) -> MemoryDetailOut:
        by_kind: dict[HubKind, list[HubLinkOut]] = {kind: [] for kind in HubKind}
        for e in edges:
            kind = HUB_OF_EDGE.get(e.type)
            if kind is not None:
                by_kind[kind].append(
                    HubLinkOut(
                        name=e.target,
                        weight=e.weight,
                        co_occurrences=e.co_occurrences,
                        last_co_occurred=e.last_co_occurred,
                    )
                )
        return cls(
            **dict(MemoryOut.from_engine(memory)),
            hubs=HubsOut(
                domains=by_kind[HubKind.DOMAIN],
                triggers=by_kind[HubKind.TRIGGER],
                concepts=by_kind[HubKind.CONCEPT],
            ),
        )


class MemoryEditOut(MemoryOut):
    """An edited memory, and whether it has a vector: as remembering says it."""

    embedded: bool = Field(
        description="False: stored without a vector (the embedder failed on the new "
        "content, which is not matched by the old text's vector), to be re-embedded."
    )
    conflicts_with: list[str] = Field(
        default_factory=list,
        description="Other memories the new content contradicts; both kept, linked by "
        "CONFLICTS_WITH. Empty when the content did not change.",
    )
    supersedes: list[str] = Field(
        default_factory=list,
        description="Those of them that happened before it (occurred_at): it links to each "
        "by SUPERSEDES. One that happened after it supersedes it instead (its superseded_by).",
    )
    reasons: list[str] = Field(
        description="Why it waits for a vector, and what the new content contradicts, in words."
    )

    @classmethod
    def from_edit(cls, outcome: EditOutcome) -> MemoryEditOut:
        memory = outcome.memory
        pending = memory.needs_embedding
        return cls(
            **dict(MemoryOut.from_engine(memory)),
            embedded=not pending,
            conflicts_with=outcome.conflicts_with,
            supersedes=outcome.supersedes,
            reasons=[*outcome.reasons, *([NOT_EMBEDDED_REASON] if pending else [])],
        )


class TurnsOut(BaseModel):
    """A memory and the turns of its conversation around it, in the order they
    happened."""

    memory: MemoryOut
    before: list[MemoryOut] = Field(description="The turns just before it, oldest first.")
    after: list[MemoryOut] = Field(description="The turns just after it, oldest first.")

    @classmethod
    def from_engine(cls, window: TurnWindow) -> TurnsOut:
        return cls(
            memory=MemoryOut.from_engine(window.memory),
            before=[MemoryOut.from_engine(m) for m in window.before],
            after=[MemoryOut.from_engine(m) for m in window.after],
        )
