"""Judging a memory against the stored ones: what it nearly repeats, what it
contradicts, and who supersedes whom among those by when each happened."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from hippocampus.embed.scope import scope
from hippocampus.extract.dedup import DedupConfig, Verdict, compare
from hippocampus.model import Edge, EdgeType, Event, Memory, RecallFilters, Tier
from hippocampus.services.context import Context
from hippocampus.store import Learned, Vector


@dataclass(frozen=True)
class EditOutcome:
    """What :meth:`Hippocampus.edit` did (see :meth:`Judge.judge_edit`).

    Attributes:
        memory: the memory as written.
        conflicts_with: other memories its new content contradicts, linked to it
            by ``CONFLICTS_WITH`` (empty when the content did not change).
        supersedes: those of them that happened before it: it links to each by
            ``SUPERSEDES``, and each names it in ``superseded_by``. One that
            happened after it supersedes it instead.
        reasons: what was found and done, in words.
    """

    memory: Memory
    conflicts_with: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NearMatch:
    """What a new memory repeats, or contradicts, with when each of those happened."""

    duplicate: str | None = None
    conflicts: tuple[str, ...] = ()
    occurred: Mapping[str, datetime] = field(default_factory=dict)


@dataclass
class Superseding:
    """Who supersedes whom among a batch's conflicts, as they are found.

    Attributes:
        stored: per stored memory superseded, the new memories that supersede it
            (written to its ``superseded_by`` with the batch's learning update).
        later_edges: SUPERSEDES edges from stored memories to new ones they
            supersede (a new memory that happened before a stored one), written
            once the new ones are.
    """

    stored: dict[str, list[str]] = field(default_factory=dict)
    later_edges: list[Edge] = field(default_factory=list)


class Judge:
    """Finds what a memory repeats or contradicts among the stored ones (and those
    a batch creates), and links an edited memory to what it contradicts.

    Args:
        context: the shared parts.
        dedup: when a new memory duplicates or contradicts a stored one.
    """

    def __init__(self, context: Context, dedup: DedupConfig) -> None:
        self._context = context
        self.dedup = dedup

    def near_duplicates(
        self,
        collection: str,
        content: str,
        speaker: str | None,
        vector: Vector | None,
        neighbors: list[tuple[str, float]],
        created: dict[int, Memory],
        created_vectors: dict[int, Vector | None],
        merged: dict[str, Memory],
        *,
        skip: str | None = None,
    ) -> NearMatch:
        """The stored (or earlier in the batch) memory ``content`` nearly repeats, or
        the ones it contradicts. Compared: the nearest stored memories by vector
        (``neighbors``) and, for a short text, by words; and the memories this batch
        creates nearest by vector. A standing instruction is compared with any
        other memory by words alone (see :mod:`hippocampus.embed.scope`). A turn said
        by one speaker is not compared with one said by another: the user's words
        and the assistant's echo of them are two turns, whose vectors leave the
        speaker out (:mod:`hippocampus.extract.turns`). ``skip``: a stored memory left
        out (an edited memory is not compared with its own old text)."""
        config = self.dedup
        similarity: dict[str, float | None] = dict(neighbors)
        if len(content.split()) <= config.short_tokens:
            for mid in self._context.store.text_neighbours(
                collection, content, k=config.candidates
            ):
                similarity.setdefault(mid, None)
        if skip is not None:
            similarity.pop(skip, None)
        stored = self._context.store.get_memories(
            collection, [m for m in similarity if m not in merged]
        )
        stored.update({mid: merged[mid] for mid in similarity if mid in merged})
        texts = {mid: m.content for mid, m in stored.items() if same_side(m.speaker, speaker)}
        occurred = {mid: m.occurred_at for mid, m in stored.items()}
        # Memories this batch creates: the nearest by vector, like the stored ones.
        batch = [(j, m) for j, m in created.items() if same_side(m.speaker, speaker)]
        if vector is not None and batch:
            sims = [
                (float(np.dot(vector, v)) if (v := created_vectors.get(j)) is not None else -2.0)
                for j, _ in batch
            ]
            nearest = sorted(range(len(batch)), key=lambda x: -sims[x])[: config.candidates]
            batch = [batch[x] for x in nearest]
        for j, memory in batch:
            texts[memory.id] = memory.content
            occurred[memory.id] = memory.occurred_at
            other = created_vectors.get(j)
            similarity[memory.id] = (
                float(np.dot(vector, other)) if vector is not None and other is not None else None
            )
        ranked = sorted(
            (mid for mid in similarity if mid in texts),
            key=lambda mid: (-(similarity[mid] or -2.0), mid),
        )
        conflicts: list[str] = []
        leaned = scope(content) is not None
        for mid in ranked:
            likeness = similarity[mid]
            if leaned or scope(texts[mid]) is not None:
                # A standing instruction's vector leans toward its scope, so two
                # rules of one scope look alike whatever they ask: judged by words.
                likeness = None
            verdict = compare(content, texts[mid], likeness, config).verdict
            if verdict == Verdict.DUPLICATE:
                return NearMatch(duplicate=mid)
            if verdict == Verdict.CONFLICT:
                conflicts.append(mid)
        return NearMatch(
            conflicts=tuple(conflicts), occurred={mid: occurred[mid] for mid in conflicts}
        )

    def judge_edit(
        self, collection: str, memory: Memory, vector: Vector | None, at: datetime
    ) -> EditOutcome:
        """Judge an edited memory's new content against the other stored memories
        as a new memory's is (see :meth:`near_duplicates`; its own old text left
        out), then link it to those it contradicts."""
        neighbors: list[tuple[str, float]] = []
        if vector is not None:
            neighbors = self._context.store.search_vectors(
                collection,
                vector,
                model=self._context.embedder.name,
                k=self.dedup.candidates + 1,
                filters=RecallFilters(tiers=list(Tier)),
                passages=False,
            )
        found = self.near_duplicates(
            collection,
            memory.content,
            memory.speaker,
            vector,
            neighbors,
            {},
            {},
            {},
            skip=memory.id,
        )
        return self._link_contradicted(collection, memory, found, at)

    def _link_contradicted(
        self, collection: str, memory: Memory, found: NearMatch, at: datetime
    ) -> EditOutcome:
        """Link an edited memory to the memories its new content contradicts (a
        link either way already there is kept as it is), and write who supersedes
        whom."""
        reasons = []
        if found.duplicate is not None:
            reasons.append(
                f"nearly the same as memory {found.duplicate!r}; kept apart: an edit never merges"
            )
        if not found.conflicts:
            return EditOutcome(memory=memory, reasons=reasons)
        older, newer = by_time(memory, found)
        linked = {
            e.target
            for e in self._context.store.edges_of(collection, memory.id)
            if e.type == EdgeType.CONFLICTS_WITH
        }
        linked.update(
            other
            for other in found.conflicts
            if any(
                e.type == EdgeType.CONFLICTS_WITH and e.target == memory.id
                for e in self._context.store.edges_of(collection, other)
            )
        )
        links = [
            *((memory.id, EdgeType.CONFLICTS_WITH, o) for o in found.conflicts if o not in linked),
            *((memory.id, EdgeType.SUPERSEDES, o) for o in older),
            *((o, EdgeType.SUPERSEDES, memory.id) for o in newer),
        ]
        self._context.store.upsert_edges(
            collection,
            [
                Edge(source=a, type=kind, target=b, weight=1.0, created_at=at)
                for a, kind, b in links
            ],
        )
        event = conflict_event(memory.id, found.conflicts, older, newer, at)
        learned = self._context.store.learn(
            collection,
            memory_ids=[*older, *([memory.id] if newer else [])],
            change=lambda stored, _states: Learned(
                memories=[
                    superseded(m, newer if m.id == memory.id else [memory.id])
                    for m in stored.values()
                ],
                events=[event],
            ),
        )
        memory = next((m for m in learned.memories if m.id == memory.id), memory)
        reasons.extend(conflict_reasons(found.conflicts, older, newer))
        return EditOutcome(
            memory=memory,
            conflicts_with=list(found.conflicts),
            supersedes=list(older),
            reasons=reasons,
        )


def same_side(one: str | None, other: str | None) -> bool:
    """Whether two memories may repeat each other by who said them: unless both
    name a speaker and the speakers differ."""
    return one is None or other is None or one.casefold() == other.casefold()


def by_time(memory: Memory, found: NearMatch) -> tuple[list[str], list[str]]:
    """The memories ``memory`` contradicts, split into those it supersedes (they
    happened before it, or at the same time: it was remembered after them) and
    those that supersede it (they happened after it)."""
    older = [c for c in found.conflicts if found.occurred[c] <= memory.occurred_at]
    newer = [c for c in found.conflicts if found.occurred[c] > memory.occurred_at]
    return older, newer


def conflict_reasons(
    conflicts: Sequence[str], older: Sequence[str], newer: Sequence[str]
) -> list[str]:
    """In words: what a memory contradicts, and who supersedes whom."""
    return [
        "contradicts "
        + ", ".join(f"memory {c!r}" for c in conflicts)
        + ": both kept, linked by CONFLICTS_WITH",
        *(f"supersedes memory {c!r}, which happened before it" for c in older),
        *(f"superseded by memory {c!r}, which happened after it" for c in newer),
    ]


def conflict_event(
    memory_id: str,
    conflicts: Sequence[str],
    older: Sequence[str],
    newer: Sequence[str],
    at: datetime,
) -> Event:
    """The log's record of a memory found contradicting others."""
    return Event(
        type="conflict",
        at=at,
        memory_ids=[memory_id, *conflicts],
        payload={"supersedes": list(older), "superseded_by": list(newer)},
    )


def superseded(memory: Memory, by: Iterable[str]) -> Memory:
    """``memory`` naming the memories ``by`` among those that supersede it."""
    names = list(dict.fromkeys([*memory.retrieval.superseded_by, *by]))
    if names == memory.retrieval.superseded_by:
        return memory
    return memory.model_copy(
        update={"retrieval": memory.retrieval.model_copy(update={"superseded_by": names})}
    )


def link_superseded(
    memory_id: str,
    older: Sequence[str],
    newer: Sequence[str],
    created: dict[int, Memory],
    created_edges: dict[int, list[Edge]],
    superseding: Superseding,
    at: datetime,
) -> None:
    """The other side of a new memory's superseding: each memory it supersedes
    names it (at once for one this batch creates, else with the batch's learning
    update), and each that supersedes it links to it by SUPERSEDES (with that
    memory's edges, or after the batch is written for a stored one). Updates
    ``created``, ``created_edges`` and ``superseding`` in place."""
    in_batch = {m.id: j for j, m in created.items()}
    for other in older:
        j = in_batch.get(other)
        if j is not None:
            created[j] = superseded(created[j], [memory_id])
        else:
            superseding.stored.setdefault(other, []).append(memory_id)
    for other in newer:
        edge = Edge(
            source=other, type=EdgeType.SUPERSEDES, target=memory_id, weight=1.0, created_at=at
        )
        j = in_batch.get(other)
        if j is not None:
            created_edges[j].append(edge)
        else:
            superseding.later_edges.append(edge)
