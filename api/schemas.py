"""Request and response bodies, separate from the engine's models.

Requests forbid unknown fields and non-finite numbers; their size limits are
the defaults of :class:`hippocampus.config.Limits`, so oversized input is refused
before it reaches the engine (which checks the configured limits again).
Responses copy named fields out of engine objects, so nothing the engine adds
later (a vector, say) can reach a client unnoticed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from hippocampus.config import Limits
from hippocampus.extract.quality import TrainingRun
from hippocampus.metrics import CachedGraphHealth
from hippocampus.model import (
    HUB_OF_EDGE,
    MEMORY_NODE,
    Edge,
    GraphPath,
    HubKind,
    Memory,
    MemoryPatch,
    NewMemory,
    RecallFilters,
    RecallHit,
    RecallResult,
    Tier,
    target_kind,
)
from hippocampus.model.memory import MAX_SPEAKER_CHARS
from hippocampus.model.resource import Resource
from hippocampus.service import (
    NOT_EMBEDDED_REASON,
    Association,
    CollectionStats,
    Corroboration,
    EditOutcome,
    Latency,
    RememberOutcome,
    ResourceOutcome,
    Subgraph,
    TierReport,
    TurnWindow,
)
from hippocampus.surface import SurfaceMetrics
from hippocampus.surface.outcomes import EngagementOutcome, Insight, MessageOutcome

_LIMITS = Limits()

Content = Annotated[str, Field(min_length=1, max_length=_LIMITS.max_content_chars)]
Name = Annotated[str, Field(min_length=1, max_length=_LIMITS.max_tag_chars)]
Names = Annotated[list[Name], Field(max_length=_LIMITS.max_tags)]
MemoryId = Annotated[str, Field(min_length=1, max_length=200)]
Category = Annotated[str, Field(min_length=1, max_length=40, examples=["bug_fix"])]
Importance = Annotated[float, Field(ge=0.0, le=1.0)]
Source = Annotated[str, Field(max_length=_LIMITS.max_source_chars)]
Speaker = Annotated[str, Field(min_length=1, max_length=MAX_SPEAKER_CHARS, examples=["user"])]
OccurredAt = Annotated[
    AwareDatetime,
    Field(
        description="When the remembered thing happened (ISO 8601 with a UTC offset, "
        "e.g. 2024-05-01T14:03:00Z); default: when it is remembered.",
        examples=["2024-05-01T14:03:00Z"],
    ),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# -- errors --------------------------------------------------------------------


class ErrorDetail(BaseModel):
    code: str = Field(examples=["invalid_input"])
    message: str
    field: str | None = Field(default=None, examples=["memories.3.content"])


class ErrorOut(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No valid API key"},
    403: {"model": ErrorOut, "description": "No keys configured and the client is not local"},
    404: {"model": ErrorOut, "description": "Not found, or not visible to this key"},
    422: {"model": ErrorOut, "description": "Invalid input; `field` names it"},
    503: {
        "model": ErrorOut,
        "description": "The store (or, for writes that need it, the embedder) is unavailable "
        "right now, or full, or read-only; nothing was written. Try again shortly.",
    },
}


# -- memories ------------------------------------------------------------------


class MemoryIn(_Request):
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
    synthesized_from: Annotated[list[MemoryId], Field(max_length=_LIMITS.max_tags)] = Field(
        default_factory=list,
        description="Stored memories this one was synthesized from (SYNTHESIZED_FROM edges).",
    )

    def to_engine(self) -> NewMemory:
        return NewMemory.model_validate(self.model_dump())


class MemoryBatchIn(_Request):
    """Several memories, stored all or nothing."""

    memories: Annotated[list[MemoryIn], Field(max_length=_LIMITS.max_batch)]

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


class MemoryPatchIn(_Request):
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


# -- recall --------------------------------------------------------------------


class RecallFiltersIn(_Request):
    """Restrictions applied before ranking; empty lists restrict nothing."""

    domains: Names = Field(default_factory=list)
    categories: Annotated[list[Category], Field(max_length=_LIMITS.max_tags)] = Field(
        default_factory=list
    )
    tags: Names = Field(default_factory=list)
    include_archived: bool = Field(
        default=False, description="Search archived memories as well as active ones."
    )
    occurred_after: AwareDatetime | None = Field(
        default=None, description="Only memories that happened at or after this time."
    )
    occurred_before: AwareDatetime | None = Field(
        default=None, description="Only memories that happened before this time (exclusive)."
    )
    speakers: Annotated[list[Speaker], Field(max_length=_LIMITS.max_tags)] = Field(
        default_factory=list, description="Only memories said by one of these."
    )


class RecallIn(_Request):
    query: Annotated[str, Field(min_length=1, max_length=_LIMITS.max_query_chars)]
    limit: Annotated[int, Field(ge=1, le=_LIMITS.max_recall_limit)] = 10
    filters: RecallFiltersIn = Field(default_factory=RecallFiltersIn)
    min_score: float | None = Field(
        default=None, description="Drop results scoring below this; none dropped when unset."
    )
    exclude_conversation_id: MemoryId | None = Field(
        default=None, description="Leave out memories from this conversation."
    )
    recipe: Annotated[str, Field(min_length=1, max_length=40)] | None = Field(
        default=None,
        description=(
            "How to search and fuse: ASSOCIATIVE (default), DENSE, BM25, HYBRID, "
            "HYBRID_GRAPH, WEIGHTED or SEED_COMPOSITE."
        ),
    )
    explain: bool = Field(
        default=False, description="Attach the strongest graph paths behind each result."
    )
    format: Literal["results", "summary"] = Field(
        default="results",
        description=(
            "summary: also return the results as a 'Related knowledge already captured' "
            "text block (category, title, score, the collection's size), ready for a prompt."
        ),
    )
    summary_min_score: Annotated[float, Field(ge=-1.0, le=1.0)] | None = Field(
        default=None,
        description=(
            "The least similarity a result needs to be in the summary block "
            "(default HIPPO_SUMMARY_MIN_SCORE, 0.7); the results list is not filtered by it."
        ),
    )
    conversation_id: MemoryId | None = Field(
        default=None,
        description=(
            "The conversation this explicit recall is made in: results already offered "
            "there are reported in surfaced_before (recall-before-search, lead time)."
        ),
    )
    as_of: AwareDatetime | None = Field(
        default=None,
        description=(
            "The moment the question is asked from (default now): the times it names "
            "('last week', 'in March', 'yesterday') are placed from it, and recency counts "
            "to it. Learning and the log still happen now."
        ),
    )
    detail: Literal["compact", "full"] = Field(
        default="compact",
        description=(
            "compact: each result's id, score and signals (rounded to 4 places), "
            "paths with explain, and the memory's own fields (content, category, tags, …). "
            "full: the whole stored memory as GET /memories/{id} gives it, its retrieval "
            "block (confidence, usage, domains, triggers, concepts, …) included."
        ),
    )

    def to_filters(self) -> RecallFilters:
        tiers = [Tier.ACTIVE, Tier.ARCHIVED] if self.filters.include_archived else [Tier.ACTIVE]
        return RecallFilters(
            domains=list(self.filters.domains),
            categories=list(self.filters.categories),
            tags=list(self.filters.tags),
            tiers=tiers,
            exclude_conversation_id=self.exclude_conversation_id,
            occurred_after=self.filters.occurred_after,
            occurred_before=self.filters.occurred_before,
            speakers=list(self.filters.speakers),
        )


class AnchorOut(BaseModel):
    kind: str = Field(examples=["Concept"])
    name: str
    strength: float


class PathStepOut(BaseModel):
    type: str = Field(examples=["ABOUT"])
    weight: float
    kind: str
    name: str


class PathOut(BaseModel):
    """anchor → steps… → the memory; strength = product of weights × damping."""

    anchor: AnchorOut
    steps: list[PathStepOut]
    strength: float

    @classmethod
    def from_engine(cls, path: GraphPath) -> PathOut:
        return cls(
            anchor=AnchorOut(
                kind=path.anchor.kind, name=path.anchor.name, strength=path.anchor.strength
            ),
            steps=[
                PathStepOut(type=s.type.value, weight=s.weight, kind=s.kind, name=s.name)
                for s in path.steps
            ],
            strength=path.strength,
        )


class RecallHitOut(BaseModel):
    id: str
    score: float = Field(
        description=(
            "What results are ranked by, on the recipe's scale: ASSOCIATIVE, cosine units "
            "(similarity + lexical lead + graph lift); DENSE, cosine similarity; BM25, the "
            "BM25 score over the best result's (1.0 at the top); HYBRID and HYBRID_GRAPH, "
            "a sum of 1/(60 + rank); WEIGHTED, a weighted sum of 0-1 signals; "
            "SEED_COMPOSITE, 0.4 similarity + 0.3 quality + 0.3 usefulness."
        )
    )
    similarity: float | None = Field(description="Cosine similarity to the query.")
    lexical: float | None = Field(default=None, description="Raw BM25 score.")
    graph: float | None = Field(default=None, description="Associative path strength.")
    time: float | None = Field(
        default=None,
        description=(
            "What the query's time gave this result: it happened within a time the query "
            "names (see times) when others among the best did not. Absent when time did "
            "not move it."
        ),
    )
    paths: list[PathOut] | None = Field(default=None, description="With explain: why.")
    memory: MemoryOut

    @classmethod
    def from_engine(cls, hit: RecallHit) -> RecallHitOut:
        return cls(
            id=hit.memory.id,
            score=hit.score,
            similarity=hit.similarity,
            lexical=hit.lexical,
            graph=hit.graph,
            time=hit.time,
            paths=[PathOut.from_engine(p) for p in hit.paths] if hit.paths is not None else None,
            memory=MemoryOut.from_engine(hit.memory),
        )


_FULL_ONLY_MEMORY_FIELDS = frozenset(
    {"id", "collection", "content_hash", "embedding_model", "retrieval", "updated_at"}
)
"""What a compact recall result leaves out of its memory: the id (the result has it),
the collection (the request names it) and the bookkeeping a reader rarely needs.
Everything else of :class:`MemoryOut` is kept, fields added later included."""


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


class CompactMemoryOut(BaseModel):
    """A recalled memory's own fields: those of :class:`MemoryOut` but the ones
    only ``detail: "full"`` gives (its id, collection, content hash, embedding model,
    update time and retrieval block)."""

    model_config = ConfigDict(extra="allow")

    content: str
    category: str
    tags: list[str]


class CompactRecallHitOut(BaseModel):
    """One result of a compact recall: the full result less the memory's bookkeeping,
    with scores rounded to 4 places."""

    model_config = ConfigDict(extra="allow")

    id: str
    score: float
    memory: CompactMemoryOut

    @classmethod
    def from_full(cls, hit: RecallHitOut) -> CompactRecallHitOut:
        # Built by leaving fields out, not by listing those kept: a field added to
        # the full result (or to MemoryOut) shows in the compact one too.
        data = hit.model_dump(mode="json", exclude={"memory": set(_FULL_ONLY_MEMORY_FIELDS)})
        return cls.model_validate(_rounded(data))


class SurfacedBeforeOut(BaseModel):
    memory_id: str
    lead: int = Field(description="Messages between the offer and this recall.")


class TimeWindowOut(BaseModel):
    phrase: str = Field(examples=["in March"])
    start: datetime | None = Field(description="From this moment on (UTC); none: open.")
    end: datetime | None = Field(description="Before this moment (UTC, exclusive); none: open.")


class RecallOut(BaseModel):
    query: str
    recipe: str
    results: list[CompactRecallHitOut] | list[RecallHitOut] = Field(
        description='Best first; compact unless the request asked for detail "full".'
    )
    embedder: str
    warnings: list[str]
    summary: str | None = Field(
        default=None, description='With format "summary": the results as a text block.'
    )
    surfaced_before: list[SurfacedBeforeOut] = Field(
        description="With conversation_id: top results already offered in that conversation."
    )
    times: list[TimeWindowOut] = Field(
        default_factory=list,
        description=(
            "The times the query names, as read: results that happened within one are "
            "preferred (by the default recipe). A month or weekday without a year is placed "
            "among the collection's own dates; 'yesterday' or 'last week' from now."
        ),
    )

    @classmethod
    def from_engine(
        cls,
        result: RecallResult,
        summary: str | None = None,
        detail: Literal["compact", "full"] = "full",
    ) -> RecallOut:
        full = [RecallHitOut.from_engine(h) for h in result.hits]
        results: list[CompactRecallHitOut] | list[RecallHitOut] = (
            full if detail == "full" else [CompactRecallHitOut.from_full(h) for h in full]
        )
        return cls(
            query=result.query,
            recipe=result.recipe,
            results=results,
            embedder=result.embedder,
            warnings=list(result.warnings),
            summary=summary,
            surfaced_before=[
                SurfacedBeforeOut(memory_id=b.memory_id, lead=b.lead)
                for b in result.surfaced_before
            ],
            times=[TimeWindowOut(phrase=t.phrase, start=t.start, end=t.end) for t in result.times],
        )


class AssociateIn(_Request):
    context: Annotated[list[Name], Field(min_length=1, max_length=_LIMITS.max_tags)] = Field(
        description="Concepts to start from.", examples=[["connection pool", "timeout"]]
    )
    min_path_strength: Annotated[float, Field(ge=0.0, le=10.0)] = 0.5
    max_depth: Annotated[int, Field(ge=1, le=3)] = 3
    limit: Annotated[int, Field(ge=1, le=_LIMITS.max_recall_limit)] = 10
    sort: Literal["strength", "confidence"] = Field(
        default="strength",
        description=(
            "strength: the strongest connection to the context first; confidence: the "
            "memory's own confidence first (the seed's order), strength breaking ties."
        ),
    )


class AssociationOut(BaseModel):
    id: str
    strength: float
    anchors: int = Field(description="How many of the concepts reach it.")
    paths: list[PathOut]
    memory: MemoryOut

    @classmethod
    def from_engine(cls, a: Association) -> AssociationOut:
        return cls(
            id=a.memory.id,
            strength=a.strength,
            anchors=a.anchors,
            paths=[PathOut.from_engine(p) for p in a.paths],
            memory=MemoryOut.from_engine(a.memory),
        )


class AssociateOut(BaseModel):
    results: list[AssociationOut]
    warnings: list[str] = Field(
        default_factory=list, description="e.g. the collection holds no memories at all."
    )


class EdgeOut(BaseModel):
    source: str
    type: str
    target: str
    weight: float
    co_occurrences: int
    last_co_occurred: datetime | None
    kind: str | None

    @classmethod
    def from_engine(cls, e: Edge) -> EdgeOut:
        return cls(
            source=e.source,
            type=e.type.value,
            target=e.target,
            weight=e.weight,
            co_occurrences=e.co_occurrences,
            last_co_occurred=e.last_co_occurred,
            kind=e.kind,
        )


class GraphEdgeOut(EdgeOut):
    """An edge of a drawn subgraph: both ends in the nodes' ``Kind:name`` form."""

    source: str = Field(examples=["Memory:88c2d1e0"])
    target: str = Field(examples=["Concept:postgres"])

    @classmethod
    def from_engine(cls, e: Edge) -> GraphEdgeOut:
        # The engine's edges carry bare ends; a bare name is ambiguous (a Concept
        # and a Trigger may share it), so the drawing gets the node ids.
        return cls(
            **{
                **dict(EdgeOut.from_engine(e)),
                "source": f"{MEMORY_NODE}:{e.source}",
                "target": f"{target_kind(e.type)}:{e.target}",
            }
        )


class GraphNodeOut(BaseModel):
    id: str = Field(examples=["Concept:connection pool"])
    kind: str
    label: str
    confidence: float | None


class GraphOut(BaseModel):
    center: str
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut] = Field(
        description="Each end is the id of a node in `nodes` (`Kind:name`)."
    )

    @classmethod
    def from_engine(cls, g: Subgraph) -> GraphOut:
        return cls(
            center=g.center,
            nodes=[GraphNodeOut.model_validate(n.model_dump()) for n in g.nodes],
            edges=[GraphEdgeOut.from_engine(e) for e in g.edges],
        )


class DecayOut(BaseModel):
    collection: str
    decayed: int = Field(description="Edges that lost weight in this pass.")


Lifecycle = Literal["active", "promoted", "archived", "quarantined"]
"""A memory's tier, or ``promoted`` within the active tier."""


class TierChangeOut(BaseModel):
    id: str
    before: Lifecycle = Field(alias="from")
    after: Lifecycle = Field(alias="to")
    reason: str

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


class TrainingMetricsOut(BaseModel):
    examples: int = Field(description="Held-out memories with feedback it was scored on.")
    log_loss: float
    accuracy: float
    auc: float | None


class TrainingRunOut(BaseModel):
    at: datetime
    feedback: int = Field(description="Memories with feedback in the collection.")
    train_examples: int
    accepted: bool = Field(description="Whether the retrained model replaced the old one.")
    reason: str
    candidate: TrainingMetricsOut | None = Field(description="The retrained model, held out.")
    previous: TrainingMetricsOut | None = Field(description="The model it would replace.")

    @classmethod
    def from_engine(cls, run: TrainingRun) -> TrainingRunOut:
        return cls.model_validate(run.model_dump())


class TiersOut(BaseModel):
    collection: str
    examined: int
    archived: int
    quarantined: int
    restored: int
    promoted: int = Field(default=0, description="Active memories promoted (high, useful use).")
    demoted: int = Field(default=0, description="Promoted memories that lost the mark.")
    changes: list[TierChangeOut] = Field(description="The memories that moved (first 100).")
    feedback: int = Field(description="Memories with feedback; every 500 more retrain quality.")
    retrained: TrainingRunOut | None

    @classmethod
    def from_engine(cls, report: TierReport) -> TiersOut:
        return cls(
            collection=report.collection,
            examined=report.examined,
            archived=report.archived,
            quarantined=report.quarantined,
            restored=report.restored,
            promoted=report.promoted,
            demoted=report.demoted,
            changes=[TierChangeOut.model_validate(c) for c in report.changes],
            feedback=report.feedback,
            retrained=(
                TrainingRunOut.from_engine(report.retrained)
                if report.retrained is not None
                else None
            ),
        )


class ReindexOut(BaseModel):
    collection: str
    model: str = Field(description="The embedding model vectors now come from.")
    reindexed: int
    remaining: int = Field(description="Memories still waiting for a vector from this model.")


# -- records -------------------------------------------------------------------


def _custom_value(value: Any) -> Any:
    """A custom field's value: text, a number, yes/no, a list of those, an object, or
    null; text at most ``max_custom_field_chars`` long. One clear error, not one per
    union member."""
    limit = _LIMITS.max_custom_field_chars

    def scalar(v: Any) -> bool:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError("numbers must be finite")
        if isinstance(v, str) and len(v) > limit:
            raise ValueError(f"text is at most {limit} characters")
        return v is None or isinstance(v, str | int | float | bool)

    if isinstance(value, list):
        if len(value) > _LIMITS.max_tags:
            raise ValueError(f"a list holds at most {_LIMITS.max_tags} values")
        if not all(scalar(v) and v is not None for v in value):
            raise ValueError("a list holds text, numbers or yes/no values")
        return value
    if isinstance(value, dict) or scalar(value):
        return value
    raise ValueError("a custom field is text, a number, yes/no, a list, an object or null")


CustomFieldValue = Annotated[Any, BeforeValidator(_custom_value)]


class ResourceIn(_Request):
    """A record to index. Title and status always; the rest when the record has it."""

    title: Annotated[str, Field(min_length=1, max_length=_LIMITS.max_title_chars)]
    status: Annotated[str, Field(min_length=1, max_length=_LIMITS.max_title_chars)] = Field(
        examples=["IN_PROGRESS"], description="ARCHIVED removes the record from the index."
    )
    description: Annotated[str, Field(max_length=_LIMITS.max_content_chars)] | None = None
    category: Annotated[str, Field(max_length=_LIMITS.max_title_chars)] | None = Field(
        default=None, examples=["Bug Reports"]
    )
    priority: Annotated[str, Field(max_length=_LIMITS.max_title_chars)] | None = Field(
        default=None, examples=["HIGH"]
    )
    custom_fields: Annotated[
        dict[
            Annotated[str, Field(min_length=1, max_length=_LIMITS.max_tag_chars)], CustomFieldValue
        ],
        Field(max_length=_LIMITS.max_custom_fields),
    ] = Field(
        default_factory=dict,
        description=(
            "Indexed when text or enum-like (a Yes/No, a list of labels); numbers, ids, "
            "dates, assignees, logs and JSON blobs are left out of the document."
        ),
        examples=[{"Severity": "Critical", "Platform": "iOS", "Story points": 5}],
    )

    def to_engine(self) -> Resource:
        return Resource.model_validate(self.model_dump())


class ResourceOut(BaseModel):
    id: str
    action: Literal["created", "updated", "unchanged", "deleted", "absent"] = Field(
        description=(
            "created / updated: (re-)indexed; unchanged: nothing to re-index (a status- or "
            "priority-only change included); deleted: archived and removed; absent: "
            "archived and not indexed anyway."
        )
    )
    reindexed: bool = Field(description="Whether the record was indexed by this request.")
    embedded: bool | None = Field(
        description="Whether the document has a vector (false: stored without one, to be "
        "re-embedded when the embedder is back); null once deleted."
    )
    document: str | None = Field(description="The indexed document; null once deleted.")
    reasons: list[str]

    @classmethod
    def from_engine(cls, outcome: ResourceOutcome) -> ResourceOut:
        action = outcome.action
        assert action in ("created", "updated", "unchanged", "deleted", "absent")
        return cls(
            id=outcome.resource_id,
            action=action,
            reindexed=outcome.reindexed,
            embedded=outcome.embedded,
            document=outcome.memory.content if outcome.memory is not None else None,
            reasons=list(outcome.reasons),
        )


class RagSearchIn(_Request):
    query: Annotated[str, Field(min_length=1, max_length=_LIMITS.max_query_chars)] = Field(
        examples=["Have we seen similar performance issues before?"]
    )
    limit: Annotated[int, Field(ge=1, le=_LIMITS.max_recall_limit)] = 5
    collection: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        default=None,
        description=(
            "The collection to search. Not needed with a key bound to exactly one "
            "collection; needed with no keys configured (a local server) or a key bound "
            "to several."
        ),
        examples=["org:acme"],
    )


class RagSearchOut(BaseModel):
    success: bool = True
    work_item_ids: list[int | str] = Field(
        description=(
            "Ids of the most similar records, best first: the number of a "
            "'workItem:<number>' resource id, other resource ids as they are."
        ),
        examples=[[123, 456, 789]],
    )

    @classmethod
    def from_ids(cls, resource_ids: list[str]) -> RagSearchOut:
        return cls(work_item_ids=[work_item_id(i) for i in resource_ids])


def work_item_id(resource_id: str) -> int | str:
    """``workItem:123`` → ``123``; other ids as they are."""
    prefix, sep, rest = resource_id.partition(":")
    if sep and prefix == "workItem" and rest.isascii() and rest.isdigit():
        return int(rest)
    return resource_id


# -- stats and health ----------------------------------------------------------


class GraphHealthOut(BaseModel):
    """Counts as they are now; the structural figures (clustering, components,
    largest_component, weight_histogram) as computed `age_s` seconds ago."""

    nodes: int
    nodes_by_kind: dict[str, int]
    edges: int
    edges_by_type: dict[str, int]
    mean_degree: float
    clustering: float = Field(description="Average clustering coefficient, as of computed_at.")
    clustering_sampled: bool = Field(description="Whether clustering is estimated by sampling.")
    components: int = Field(description="Connected components, as of computed_at.")
    largest_component: int = Field(description="Nodes in the largest one, as of computed_at.")
    weight_histogram: list[int] = Field(
        description="Edges per weight decile, 0.0-0.1 first, as of computed_at."
    )
    computed_at: datetime = Field(description="When the structural figures were computed.")
    age_s: float = Field(description="How old they are, in seconds.")
    took_s: float = Field(description="How long computing them took, in seconds.")


class QualityOut(BaseModel):
    min_score: float = Field(description="Memories scoring below this are rejected.")
    model_version: int = Field(description="0: the prior; +1 per retrained model kept.")
    trained_at: datetime | None = Field(description="When the model in use was trained.")
    feedback_seen: int = Field(description="Memories with feedback at the last retraining.")
    last_training: TrainingRunOut | None = Field(
        description="The last retraining (kept or not), with held-out metrics."
    )


class SurfacingMetricsOut(BaseModel):
    """Proactive surfacing in this collection."""

    surfaced: int
    engagements: dict[str, int]
    precision: float | None = Field(description="(used + helpful) / surfaced")
    dismissal_rate: float | None
    dismissal_rate_by_type: dict[str, float]
    explicit_recalls: int = Field(description="Recalls made with a conversation_id.")
    recall_before_search: float | None = Field(
        description="Explicit recalls whose top results had been offered earlier / explicit recalls"
    )
    median_lead_time: float | None = Field(description="Messages from offer to explicit recall.")
    mean_lead_time: float | None = Field(
        default=None, description="The same, averaged (the seed's average lead time)."
    )
    calibration_error: float | None = Field(
        default=None,
        description="Expected calibration error of offer confidence against use (0: calibrated).",
    )
    decay_effectiveness: float | None = Field(
        default=None,
        description="Offers of memories due for spaced repetition that were used / engaged ones.",
    )


class LatencyOut(BaseModel):
    """Recall latency in this process (the most recent recalls)."""

    recalls: int
    p50_ms: float | None
    p95_ms: float | None


class CorroborationOut(BaseModel):
    """How well similarity has corroborated the words in this process's recent
    recalls, and what that does to the default recipe."""

    recalls: int = Field(description="Recent recalls measured (at most 64).")
    median: float | None = Field(
        description=(
            "Median of where each recall's best word matches sat among its best "
            "similarities, in standard deviations (null until 8 recalls)."
        )
    )
    lexical_lean: float = Field(
        description="What that multiplies the lexical weight by (1.0: no lean on words)."
    )


class StatsOut(BaseModel):
    collection: str
    memories: int
    by_category: dict[str, int]
    by_tier: dict[str, int]
    pending_embeddings: int
    hubs: dict[str, int]
    edges: dict[str, int]
    events: int = Field(description="Events ever logged, those compacted away included.")
    events_retained: int = Field(
        default=0,
        description="Events the log still holds: the retention (HIPPO_EVENTS__*) drops the others.",
    )
    embedder: str
    extractor: str
    quality: QualityOut
    average_quality: float | None = Field(
        description="Mean quality score of the memories that have one."
    )
    retrieval_count: int = Field(description="Recalls made of the collection.")
    graph: GraphHealthOut | None = None
    surfacing: SurfacingMetricsOut | None = None
    latency: LatencyOut | None = None
    corroboration: CorroborationOut | None = None
    warnings: list[str] = Field(
        default_factory=list, description="e.g. the collection holds no memories at all."
    )

    @classmethod
    def from_engine(
        cls,
        stats: CollectionStats,
        health: CachedGraphHealth | None,
        surfacing: SurfaceMetrics | None = None,
        latency: Latency | None = None,
        corroboration: Corroboration | None = None,
    ) -> StatsOut:
        out = cls.model_validate(stats.model_dump())
        if health is not None:
            out.graph = GraphHealthOut.model_validate(health.model_dump())
        if surfacing is not None:
            out.surfacing = SurfacingMetricsOut.model_validate(surfacing.model_dump())
        if latency is not None:
            out.latency = LatencyOut.model_validate(latency.model_dump())
        if corroboration is not None:
            out.corroboration = CorroborationOut.model_validate(corroboration.model_dump())
        return out


# -- surfacing -------------------------------------------------------------------


ConversationType = Literal["debugging", "help-seeking", "exploration", "casual", "general"]


class MessageIn(_Request):
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


class EngagementIn(_Request):
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


class FeedbackIn(_Request):
    helpful: bool
    context: Names = Field(
        default_factory=list, description="Concepts of the context the memory was used in."
    )


class UsedTogetherIn(_Request):
    ids: Annotated[list[MemoryId], Field(min_length=2, max_length=_LIMITS.max_recall_limit)] = (
        Field(description="Memories used together (two or more).")
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


class HealthOut(BaseModel):
    status: str = "ok"
    pid: int = Field(
        description="The answering process: with several workers (``hippo serve "
        "--workers N``), which one a connection reached."
    )


class ReadyOut(BaseModel):
    ready: bool
    store: str
    embedder: str
    extractor: str
    degraded: list[str] = Field(
        default_factory=list,
        description="What works in a lesser way while the server still serves: an "
        "embedder that fails (memories are stored for re-embedding, recall uses text "
        "and graph).",
    )
