"""A batch of new memories as remembering decides it: its state phase by phase,
the outcomes it gives, and the memories and merges it writes."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from hippocampus.errors import ConflictError
from hippocampus.extract import Extraction
from hippocampus.extract.dedup import merge_duplicate
from hippocampus.extract.quality import QualityAssessment
from hippocampus.model import Edge, Event, Memory, NewMemory, RetrievalMeta
from hippocampus.services.checks import Prepared
from hippocampus.services.judging import Superseding, superseded
from hippocampus.store import Learned, Vector

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


@dataclass(frozen=True)
class RememberOutcome:
    """What happened to one memory given to :meth:`Hippocampus.remember`.

    Attributes:
        memory: the stored memory (the one it was merged into, for a duplicate);
            ``None`` when it was rejected.
        created: whether a new memory was stored.
        duplicate_of: id of the memory this one repeats and was merged into.
        embedded: whether a vector was stored; ``False`` means the memory waits
            for re-embedding (``hippo reindex``) but is stored all the same.
        reasons: what was done to it and why, in words (sanitizing, rejection,
            merging, conflicts, a failed embedding).
        rejected: the quality gate refused it; nothing was stored.
        quality: its quality score (the merged memory's for a duplicate).
        conflicts_with: stored memories it contradicts (linked by CONFLICTS_WITH).
        supersedes: those of them that happened before it (``occurred_at``; the
            earlier remembered, at a tie): it links to each by SUPERSEDES, and
            each names it in ``retrieval.superseded_by``. One that happened
            after it supersedes it the same way.
        sanitized: its content was changed before storing (see ``reasons``).
    """

    memory: Memory | None
    created: bool
    duplicate_of: str | None = None
    embedded: bool = True
    reasons: list[str] = field(default_factory=list)
    rejected: bool = False
    quality: float | None = None
    conflicts_with: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    sanitized: bool = False


@dataclass
class Batch:
    """What remembering a batch has decided so far, phase by phase."""

    collection: str
    prepared: Sequence[Prepared]
    at: datetime
    outcomes: list[RememberOutcome | None] = field(default_factory=list)
    merged: dict[str, Memory] = field(default_factory=dict)
    """Stored memories this batch merges into, by id."""
    repeats: dict[str, list[NewMemory]] = field(default_factory=dict)
    """The items merged into each of them."""
    events: list[Event] = field(default_factory=list)
    repeat_of: dict[int, int] = field(default_factory=dict)
    """Where an item repeats one earlier in the batch."""
    fresh: list[tuple[int, float]] = field(default_factory=list)
    """The items that passed the gate: (index, quality score)."""
    created: dict[int, Memory] = field(default_factory=dict)
    created_vectors: dict[int, Vector | None] = field(default_factory=dict)
    created_passages: dict[int, Vector | None] = field(default_factory=dict)
    created_edges: dict[int, list[Edge]] = field(default_factory=dict)
    superseding: Superseding = field(default_factory=lambda: Superseding())

    def __post_init__(self) -> None:
        self.outcomes = [None] * len(self.prepared)


def merged_into(
    p: Prepared,
    memory: Memory,
    target: str,
    reason: str,
    *,
    embedded: bool,
    quality: float | None,
) -> RememberOutcome:
    """The outcome of an item merged into ``target`` (``memory``, as merged), and why."""
    return RememberOutcome(
        memory=memory,
        created=False,
        duplicate_of=target,
        embedded=embedded,
        reasons=[*p.changes, reason],
        quality=quality,
        sanitized=bool(p.changes),
    )


def check_batch_ids(state: Batch, batch: bool) -> None:
    """A caller-given id may appear once among the items that will be stored."""
    seen_ids: set[str] = set()
    for i, _ in state.fresh:
        item_id = state.prepared[i].item.id
        if item_id is not None:
            if item_id in seen_ids:
                raise ConflictError(
                    f"id {item_id!r} appears twice in the batch",
                    field=f"memories[{i}].id" if batch else "id",
                )
            seen_ids.add(item_id)


def rejected(
    collection: str,
    p: Prepared,
    verdict: QualityAssessment,
    events: list[Event],
    at: datetime,
    *,
    threshold: float,
) -> RememberOutcome:
    """The outcome of an item the quality gate refused, logged, with its event."""
    logger.info(
        "quality gate: rejected a memory for %s (score %.2f < %.2f; source %s): %s",
        collection,
        verdict.score,
        threshold,
        p.item.source,
        "; ".join(verdict.reasons) or "low score",
    )
    events.append(
        Event(
            type="quality_rejected",
            at=at,
            payload={
                "score": round(verdict.score, 4),
                "threshold": threshold,
                "source": p.item.source,
                "content_hash": p.digest,
                "reasons": verdict.reasons,
            },
        )
    )
    return RememberOutcome(
        memory=None,
        created=False,
        embedded=False,
        rejected=True,
        quality=verdict.score,
        reasons=[
            *p.changes,
            f"rejected by the quality gate: score {verdict.score:.2f} is below {threshold:.2f}",
            *verdict.reasons,
        ],
        sanitized=bool(p.changes),
    )


def merge_update(
    stored: Mapping[str, Memory],
    repeats: Mapping[str, list[NewMemory]],
    superseded_by: Mapping[str, list[str]],
    events: list[Event],
    at: datetime,
    *,
    max_tags: int,
) -> Learned:
    """The learning update that merges repeats into the stored memories as they
    are now (another request may have merged into one, or engaged with it,
    since this one read it), and names the new memories that supersede them,
    with this call's events. A memory forgotten meanwhile takes neither."""
    written = []
    for target in dict.fromkeys([*repeats, *superseded_by]):
        memory = stored.get(target)
        if memory is None:
            continue
        for item in repeats.get(target, ()):
            memory = merge_duplicate(memory, item, at, max_tags=max_tags)
        written.append(superseded(memory, superseded_by.get(target, ())))
    return Learned(memories=written, events=events)


def merge_target(
    target: str,
    item: NewMemory,
    at: datetime,
    created: dict[int, Memory],
    merged: dict[str, Memory],
    repeats: dict[str, list[NewMemory]],
    *,
    max_tags: int,
) -> Memory:
    """Merge ``item`` into ``target``: a stored memory this call already merges
    into, or one it creates. Returns the merged memory."""
    if target in merged:
        merged[target] = merge_duplicate(merged[target], item, at, max_tags=max_tags)
        repeats[target].append(item)
        return merged[target]
    j = next(j for j, m in created.items() if m.id == target)
    created[j] = merge_duplicate(created[j], item, at, max_tags=max_tags)
    return created[j]


def new_memory(
    collection: str,
    item: NewMemory,
    digest: str,
    extraction: Extraction,
    quality: float | None,
    at: datetime,
    *,
    model: str | None,
) -> Memory:
    """A new memory of ``item`` (its vector from ``model``; ``None``: it has none yet)."""
    return Memory(
        id=item.id or str(uuid.uuid4()),
        collection=collection,
        content=item.content,
        category=item.category,
        importance=item.importance,
        source=item.source,
        tags=item.tags,
        created_at=at,
        updated_at=at,
        occurred_at=item.occurred_at or at,
        speaker=item.speaker,
        content_hash=digest,
        embedding_model=model,
        embedding_generated_at=at if model is not None else None,
        retrieval=RetrievalMeta(
            domains=list(extraction.domains),
            triggers=list(extraction.triggers),
            concepts=list(extraction.concepts),
            names=list(extraction.names),
            conversation_ids=[item.conversation_id] if item.conversation_id else [],
            synthesized_from=list(dict.fromkeys(item.synthesized_from)),
            quality_score=quality,
        ),
    )
