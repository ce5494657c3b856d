"""Bodies of ``/recall`` and ``/associate``: the query, its filters, the ranked
results and the graph paths behind them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from hippocampus.api.schemas.common import (
    LIMITS,
    Category,
    MemoryId,
    Name,
    Names,
    RequestModel,
    Speaker,
)
from hippocampus.api.schemas.memories import MemoryOut
from hippocampus.model import GraphPath, RecallFilters, RecallHit, RecallResult, Tier
from hippocampus.service import Association


class RecallFiltersIn(RequestModel):
    """Restrictions applied before ranking; empty lists restrict nothing."""

    domains: Names = Field(default_factory=list)
    categories: Annotated[list[Category], Field(max_length=LIMITS.max_tags)] = Field(
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
    speakers: Annotated[list[Speaker], Field(max_length=LIMITS.max_tags)] = Field(
        default_factory=list, description="Only memories said by one of these."
    )


class RecallIn(RequestModel):
    query: Annotated[str, Field(min_length=1, max_length=LIMITS.max_query_chars)]
    limit: Annotated[int, Field(ge=1, le=LIMITS.max_recall_limit)] = 10
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


class AssociateIn(RequestModel):
    context: Annotated[list[Name], Field(min_length=1, max_length=LIMITS.max_tags)] = Field(
        description="Concepts to start from.", examples=[["connection pool", "timeout"]]
    )
    min_path_strength: Annotated[float, Field(ge=0.0, le=10.0)] = 0.5
    max_depth: Annotated[int, Field(ge=1, le=3)] = 3
    limit: Annotated[int, Field(ge=1, le=LIMITS.max_recall_limit)] = 10
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
