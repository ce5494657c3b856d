"""Memories, their retrieval metadata, and the input to remember one."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

KNOWN_CATEGORIES = (
    "pattern",
    "bug_fix",
    "decision",
    "outcome",
    "code_snippet",
    "insight",
    "documentation",
    "work_item",
)
"""Categories the engine knows by name; any other short label is accepted too."""

_WS = re.compile(r"\s+")

MAX_SPEAKER_CHARS = 100
"""The longest speaker label a memory may carry."""


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive datetime is taken as UTC (as the stores take it)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(as_utc)]
"""A datetime read from ISO 8601 and held in UTC: a naive one is taken as UTC, one
with an offset is converted."""


class Tier(StrEnum):
    """Where a memory lives: active memories are retrieved, archived only on request,
    quarantined never."""

    ACTIVE = "active"
    ARCHIVED = "archived"
    QUARANTINED = "quarantined"


class Review(BaseModel):
    """A memory's FSRS review state (see hippocampus.schedule).

    Attributes:
        stability: days until recall probability falls to 90%.
        difficulty: 1 (easy) to 10 (hard).
        last_review: when it was last reviewed (engaged with).
        reviews / lapses: counts.
    """

    model_config = ConfigDict(extra="forbid")

    stability: float = Field(gt=0.0)
    difficulty: float = Field(ge=1.0, le=10.0)
    last_review: datetime
    reviews: int = Field(default=1, ge=0)
    lapses: int = Field(default=0, ge=0)


class RetrievalMeta(BaseModel):
    """How a memory is found and how useful it has been.

    ``names`` are the concepts that are proper names (their edges start at
    ``NAME_WEIGHT``, see :mod:`hippocampus.services.hubs`).

    ``duplicates`` counts the times the same (or nearly the same) content was
    remembered again and merged into this memory; ``conversation_ids`` then
    gains the repeat's conversation (provenance).

    ``usefulness`` is the helpful share of the memory's feedback with a prior
    (see :func:`hippocampus.surface.rules.usefulness`): ``helpful_votes`` counts
    used / helpful engagements, ``unhelpful_votes`` dismissals (1 each) and
    ignored offers (0.5 each).

    ``promoted_at`` is set while the memory is PROMOTED (the seed's lifecycle
    stage after ACTIVE for memories in high, useful use; see
    :mod:`hippocampus.learn.tiers`): still in the active tier, never archived for
    idleness.

    ``recent_dismissals`` is the count as of ``dismissed_at``; it fades with a
    half-life (see :func:`faded_dismissals`), so a memory dismissed
    last quarter can be offered again.

    ``superseded_by`` names the newer memories that reverse or replace this one
    (each links here by a ``SUPERSEDES`` edge): a question about the present
    ranks them above it.
    """

    model_config = ConfigDict(extra="forbid")

    domains: list[str] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    concepts: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    usage_count: int = Field(default=0, ge=0)
    last_used: datetime | None = None
    recent_dismissals: float = Field(default=0.0, ge=0.0)
    dismissed_at: datetime | None = None
    review: Review | None = None
    irrelevant_contexts: list[str] = Field(default_factory=list)
    quality_score: float | None = Field(default=None, ge=0.0, le=1.0)
    usefulness: float = Field(default=0.5, ge=0.0, le=1.0)
    helpful_votes: float = Field(default=0.0, ge=0.0)
    unhelpful_votes: float = Field(default=0.0, ge=0.0)
    promoted_at: datetime | None = None
    duplicates: int = Field(default=0, ge=0)
    conversation_ids: list[str] = Field(default_factory=list)
    synthesized_from: list[str] = Field(default_factory=list)
    superseded_by: list[str] = Field(default_factory=list)


class Memory(BaseModel):
    """One stored memory. Carries no embedding: vectors stay inside the store.

    ``embedding_model`` names the model whose vector the store holds for this
    memory; ``None`` means the memory has no vector yet and is waiting to be
    embedded (it is still stored, searchable by its graph and text).

    ``occurred_at`` is when the remembered thing happened (a conversation turn is
    often remembered long after it was said), in UTC; a memory stored without
    one, or read from an older export, takes ``created_at``. ``speaker`` says who
    said it, when that is known. A memory with conversation ids is a turn of its
    first conversation (:attr:`turn_of`): the stores link the turns of one
    conversation in ``occurred_at`` order by ``NEXT`` edges.

    ``embedding_generated_at`` says when that vector was made (``None`` for a
    memory stored before it was recorded, or without a vector).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    collection: str
    content: str
    category: str = "insight"
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    tier: Tier = Tier.ACTIVE
    source: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime
    occurred_at: UtcDatetime
    speaker: str | None = None
    content_hash: str
    embedding_model: str | None = None
    embedding_generated_at: datetime | None = None
    retrieval: RetrievalMeta = Field(default_factory=RetrievalMeta)

    @model_validator(mode="before")
    @classmethod
    def _occurred_when_created(cls, data: Any) -> Any:
        # Memories stored (or exported) before occurred_at existed happened when
        # they were remembered.
        if isinstance(data, dict) and data.get("occurred_at") is None and "created_at" in data:
            return {**data, "occurred_at": data["created_at"]}
        return data

    @property
    def needs_embedding(self) -> bool:
        return self.embedding_model is None

    @property
    def turn_of(self) -> str | None:
        """The conversation this memory is a turn of: the first it was remembered
        in (later ones are provenance of merged repeats); ``None`` outside any."""
        ids = self.retrieval.conversation_ids
        return ids[0] if ids else None


class NewMemory(BaseModel):
    """What a caller gives to remember something. Unset fields take defaults;
    domains, triggers and concepts given here win over extracted ones."""

    model_config = ConfigDict(extra="forbid")

    content: str
    id: str | None = None
    category: str = "insight"
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    source: str | None = None
    tags: list[str] = Field(default_factory=list)
    domains: list[str] | None = None
    triggers: list[str] | None = None
    concepts: list[str] | None = None
    conversation_id: str | None = None
    occurred_at: UtcDatetime | None = None
    speaker: str | None = None
    synthesized_from: list[str] = Field(default_factory=list)
    """Stored memories this one was synthesized from (provenance): recorded in
    ``retrieval.synthesized_from`` and linked by SYNTHESIZED_FROM edges."""


class MemoryPatch(BaseModel):
    """A partial edit; ``None`` leaves a field as it is."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    category: str | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    tier: Tier | None = None
    source: str | None = None
    tags: list[str] | None = None
    domains: list[str] | None = None
    triggers: list[str] | None = None
    concepts: list[str] | None = None
    occurred_at: UtcDatetime | None = None
    speaker: str | None = None


LEARNED_FIELDS = (
    "confidence",
    "usage_count",
    "last_used",
    "recent_dismissals",
    "dismissed_at",
    "review",
    "irrelevant_contexts",
    "usefulness",
    "helpful_votes",
    "unhelpful_votes",
    "duplicates",
    "conversation_ids",
    "superseded_by",
)
"""The parts of a memory's retrieval metadata that only learning and merging
change (engagement, feedback, a repeat merged in, a newer memory that
supersedes it), never an edit."""


def with_learning_of(memory: Memory, stored: Memory, *, tier: bool) -> Memory:
    """``memory``, an edit made from an earlier read, with what learning has
    recorded in ``stored`` (the memory as stored now): its :data:`LEARNED_FIELDS`,
    and with ``tier`` its tier and ``promoted_at`` (which the tier pass moves). A
    store applies this inside the edit's write, so an edit never undoes a learning
    update that committed while it was being made."""
    update: dict[str, object] = {name: getattr(stored.retrieval, name) for name in LEARNED_FIELDS}
    top: dict[str, object] = {}
    if tier:
        update["promoted_at"] = stored.retrieval.promoted_at
        top["tier"] = stored.tier
    return memory.model_copy(
        update={**top, "retrieval": memory.retrieval.model_copy(update=update)}
    )


def faded_dismissals(memory: Memory, now: datetime, half_life_days: float) -> float:
    """Recent dismissals as of ``now``: the stored count halved per half-life since
    it was last raised."""
    meta = memory.retrieval
    if meta.recent_dismissals <= 0.0 or meta.dismissed_at is None:
        return meta.recent_dismissals
    days = max(0.0, (now - meta.dismissed_at).total_seconds() / 86400.0)
    return float(meta.recent_dismissals * 0.5 ** (days / half_life_days))


def normalize_content(text: str) -> str:
    """The form content is compared in: Unicode NFKC, case-folded, whitespace collapsed."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def content_hash(text: str) -> str:
    """sha256 of the normalized content, hex."""
    return hashlib.sha256(normalize_content(text).encode("utf-8")).hexdigest()


def utcnow() -> datetime:
    """The current time, timezone-aware UTC. Only entry points call it: rules take ``now``."""
    return datetime.now(UTC)
