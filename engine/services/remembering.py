"""Remembering: validating, gating, deduplicating, embedding and storing new memories."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np

from hippocampus.embed.scope import scope
from hippocampus.errors import ConflictError, EmbeddingError, InvalidInputError, LimitExceededError
from hippocampus.extract import Extraction, merge_given
from hippocampus.extract.dedup import Verdict, compare, merge_duplicate
from hippocampus.extract.quality import QualityAssessment, QualityModel, assess
from hippocampus.extract.sanitize import sanitize_text
from hippocampus.model import (
    Edge,
    EdgeType,
    Event,
    Memory,
    NewMemory,
    RecallFilters,
    RetrievalMeta,
    Tier,
    content_hash,
    utcnow,
)
from hippocampus.services.core import NOT_EMBEDDED_REASON, Embedded, ServiceCore, hub_edges
from hippocampus.services.stages import staged
from hippocampus.store import Learned, MemoryRecord, Vector

# The service's one logger name, as before the split: log configuration keyed on
# "hippocampus.service" keeps covering every job.
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


@dataclass(frozen=True)
class _Prepared:
    """A validated, sanitized item and what sanitizing changed."""

    item: NewMemory
    changes: list[str]
    digest: str


@dataclass(frozen=True)
class EditOutcome:
    """What :meth:`Hippocampus.edit` did (see :meth:`RememberingJobs._judge_edit`).

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
class _NearMatch:
    """What a new memory repeats, or contradicts, with when each of those happened."""

    duplicate: str | None = None
    conflicts: tuple[str, ...] = ()
    occurred: Mapping[str, datetime] = field(default_factory=dict)


@dataclass
class _Superseding:
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


STREAM_AHEAD = 2048
"""The most memories :meth:`RememberingJobs.remember_batches` reads ahead of the
batch being written: enough for the embedding stage to take several batches at
once while the extraction stage fills the next run."""

EMBED_RUN = 512
"""The most memories the stream embeds in one run (sorted by length together):
past a few hundred, sorting saves little padding more, and a longer run only
keeps the writer waiting longer for its first batch."""


class _Features(Protocol):
    """Where a batch being written gets its vectors and extractions."""

    def embed(self, texts: Sequence[str]) -> Embedded | None:
        """Vectors by passages, or ``None`` when the embedder failed."""
        ...

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One extraction per text."""
        ...

    def encode_hubs(self, names: Sequence[str]) -> Vector:
        """One vector per hub name.

        Raises:
            EmbeddingError: the embedder failed.
        """
        ...


@dataclass(frozen=True)
class _Inline:
    """Embeds and extracts when asked: a single call's way."""

    service: ServiceCore

    def embed(self, texts: Sequence[str]) -> Embedded | None:
        return self.service._embed(texts)

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return self.service._extract(texts)

    def encode_hubs(self, names: Sequence[str]) -> Vector:
        return self.service.embedder.encode(names)


@dataclass
class _Ahead:
    """A batch of a stream, admitted, extracted and embedded before its turn.

    The first stage admits it (as a single call would, errors and all) and
    extracts the contents its new memories will need as far as can be told
    without the store: each distinct content the gate accepts. The second embeds
    those contents and the hub names their extractions bring. At the batch's
    turn the write takes what it needs from here; a content the store's state by
    then makes new after all (another writer removed what it repeated) is
    embedded or extracted then, so what is written is what a single call writes.
    """

    service: ServiceCore
    prepared: list[_Prepared]
    texts: list[str]
    extractions: dict[str, Extraction]
    names: list[str]
    vectors: dict[str, tuple[Vector, Vector | None]] = field(default_factory=dict)
    hub_vectors: dict[str, Vector] = field(default_factory=dict)
    embedding_failed: bool = False

    def embed(self, texts: Sequence[str]) -> Embedded | None:
        if self.embedding_failed and texts:
            return None
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            more = self.service._embed(missing)
            if more is None:
                return None
            self.vectors.update(
                zip(missing, zip(more.heads, more.passages, strict=True), strict=True)
            )
        if not texts:
            return Embedded(np.zeros((0, self.service.embedder.dim), dtype=np.float32), [])
        rows = [self.vectors[t] for t in texts]
        return Embedded(np.stack([head for head, _ in rows]), [rest for _, rest in rows])

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.extractions]
        if missing:
            found = self.service._extract(missing)
            self.extractions.update(zip(missing, found, strict=True))
        return [self.extractions[t] for t in texts]

    def encode_hubs(self, names: Sequence[str]) -> Vector:
        missing = [n for n in dict.fromkeys(names) if n not in self.hub_vectors]
        if missing:
            found = self.service.embedder.encode(missing)
            self.hub_vectors.update(zip(missing, found, strict=True))
        return np.stack([self.hub_vectors[n] for n in names])


@dataclass
class _Batch:
    """What remembering a batch has decided so far, phase by phase."""

    collection: str
    prepared: Sequence[_Prepared]
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
    superseding: _Superseding = field(default_factory=lambda: _Superseding())

    def __post_init__(self) -> None:
        self.outcomes = [None] * len(self.prepared)


def _merged_into(
    p: _Prepared,
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


def _check_batch_ids(state: _Batch, batch: bool) -> None:
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


class RememberingJobs(ServiceCore):
    """Remembering memories, one at a time or many."""

    # -- remembering ------------------------------------------------------------

    def remember(
        self, collection: str, item: NewMemory, *, now: datetime | None = None
    ) -> RememberOutcome:
        """Store one memory. See :meth:`remember_many`."""
        return self._remember(collection, [item], now=now, batch=False)[0]

    def remember_many(
        self, collection: str, items: Sequence[NewMemory], *, now: datetime | None = None
    ) -> list[RememberOutcome]:
        """Validate, sanitize, judge, embed, extract and store memories.

        Each memory, in order:

        - its content is sanitized: hidden characters go, role markers and
          instructions aimed at a reading model are neutralized (``reasons`` says so);
        - the same content already stored (or earlier in the batch) is merged into
          that memory (provenance appended, its ``duplicates`` count raised) and
          named in ``duplicate_of``;
        - the quality gate scores it; below the threshold it is rejected
          (``rejected``, with the reasons) unless its source is exempt;
        - a stored memory it nearly repeats (cosine > 0.95, or most of the words
          of a short text) gets the same merge, unless the item has its own id
          (an id the caller will look up is never merged away); one it
          contradicts ("use X" against "don't use X") is linked to it by
          ``CONFLICTS_WITH`` and named in ``conflicts_with``.

        If the embedder fails, the memories are stored without vectors and flagged
        for re-embedding; they are never dropped.

        Raises:
            InvalidInputError: an item is invalid (``field`` says which); nothing
                is written.
            ConflictError: a caller-given id already exists; nothing is written.
        """
        return self._remember(collection, items, now=now, batch=True)

    def remember_batches(
        self,
        collection: str,
        batches: Iterable[Sequence[NewMemory]],
        *,
        now: datetime | None = None,
    ) -> Iterator[list[RememberOutcome]]:
        """Remember batch after batch, each as :meth:`remember_many` would, with
        extraction, embedding and writing at once: an import's way.

        Each batch is judged against all that is stored when its turn comes (the
        batches before it included), written all or nothing, and its outcomes
        yielded once it is written. Meanwhile, on two threads of the stream's own,
        the batches after it are embedded (several at once, sorted by length)
        and the ones after those extracted, up to :data:`STREAM_AHEAD` memories
        ahead. ``batches`` is read on one of those threads.

        A batch :meth:`remember_many` would refuse raises the same error at its
        turn: the batches before it are written, it and those after it are not.
        Letting go of the iterator stops the stream the same way.

        Raises:
            InvalidInputError: ``collection`` is invalid (at once), or an item of
                a batch is (at the batch's turn; ``field`` says which).
            LimitExceededError: a batch, or one of its items, is over a limit.
            ConflictError: a batch names a caller-given id that exists, or one
                id twice.
        """
        self.check_collection(collection)
        return self._stream(collection, batches, now)

    def _remember(
        self,
        collection: str,
        items: Sequence[NewMemory],
        *,
        now: datetime | None,
        batch: bool,
    ) -> list[RememberOutcome]:
        self.check_collection(collection)
        prepared = self._admit(items, batch=batch)
        if not prepared:
            return []
        return self._store_batch(
            collection, prepared, at=now or utcnow(), batch=batch, features=_Inline(self)
        )

    def _admit(self, items: Sequence[NewMemory], *, batch: bool) -> list[_Prepared]:
        """Validate and sanitize a batch: no store, no model.

        Raises:
            LimitExceededError: too many items, or an item over a limit.
            InvalidInputError: an item is invalid (``field`` says which).
        """
        if len(items) > self.limits.max_batch:
            raise LimitExceededError(
                f"{len(items)} memories in one batch; the limit is {self.limits.max_batch}",
                field="memories",
            )
        return [
            self._prepare(item, f"memories[{i}]." if batch else "") for i, item in enumerate(items)
        ]

    def _store_batch(
        self,
        collection: str,
        prepared: Sequence[_Prepared],
        *,
        at: datetime,
        batch: bool,
        features: _Features,
    ) -> list[RememberOutcome]:
        """Judge a validated batch against what is stored and write it, all or
        nothing: the part of remembering that reads and writes the store.
        ``features`` embeds and extracts the memories it creates (now, or from
        what was computed ahead)."""
        self._check_provenance(collection, prepared, batch)
        state = _Batch(collection, prepared, at)
        self._screen(state)
        _check_batch_ids(state, batch)
        texts = [prepared[i].item.content for i, _ in state.fresh]
        embedded = features.embed(texts)
        extractions = features.extract(texts) if texts else []
        self._judge_fresh(state, embedded, extractions)
        self._repeat_earlier(state)
        records = self._write_batch(state)
        if records and embedded is not None:
            self.embed_hubs(collection, encode=features.encode_hubs)
        # Every outcome shows its memory as written (later items may have merged into it).
        written = {m.id: m for m in state.created.values()} | state.merged
        final: list[RememberOutcome] = []
        for outcome in state.outcomes:
            assert outcome is not None
            if outcome.memory is not None and outcome.memory.id in written:
                outcome = dataclasses.replace(outcome, memory=written[outcome.memory.id])
            final.append(outcome)
        return final

    def _screen(self, state: _Batch) -> None:
        """Exact repeats of stored content (merged), repeats of content earlier in
        the batch (set aside for :meth:`_repeat_earlier`), then the quality gate:
        what passes is ``state.fresh``."""
        model = self.quality_model(state.collection)
        # The first item of each content (per speaker) in the batch.
        first_in_batch: dict[str, list[int]] = {}
        for i, p in enumerate(state.prepared):
            stored = self._stored_with_hash(
                state.collection, p.digest, p.item.speaker, state.merged
            )
            if stored is not None:
                state.merged[stored.id] = merge_duplicate(
                    stored, p.item, state.at, max_tags=self.limits.max_tags
                )
                state.repeats.setdefault(stored.id, []).append(p.item)
                state.outcomes[i] = _merged_into(
                    p,
                    state.merged[stored.id],
                    stored.id,
                    "the same content is already stored",
                    embedded=not stored.needs_embedding,
                    quality=stored.retrieval.quality_score,
                )
                continue
            firsts = first_in_batch.setdefault(p.digest, [])
            prepared = state.prepared
            earlier = [j for j in firsts if _same_side(prepared[j].item.speaker, p.item.speaker)]
            if earlier:
                state.repeat_of[i] = earlier[0]
                continue
            verdict = assess(p.item.content, p.item.source, model, self.quality_config)
            if not verdict.accepted:
                state.outcomes[i] = self._rejected(
                    state.collection, p, verdict, state.events, state.at
                )
                continue
            firsts.append(i)
            state.fresh.append((i, verdict.score))

    def _judge_fresh(
        self, state: _Batch, embedded: Embedded | None, extractions: Sequence[Extraction]
    ) -> None:
        """Each item that passed the gate: merged into a near duplicate (stored or
        earlier in the batch), or a new memory with its edges, conflicts and what
        it supersedes."""
        vectors = embedded.heads if embedded is not None else None
        # The stored neighbors of every new memory, in one pass over the index. By
        # whole memories (their first passage): a note that repeats one passage of
        # a long memory does not repeat the memory.
        neighbors: list[list[tuple[str, float]]] = [[] for _ in state.fresh]
        if vectors is not None and state.fresh:
            neighbors = self.store.search_vectors_many(
                state.collection,
                vectors,
                model=self.embedder.name,
                k=self.dedup.candidates,
                filters=RecallFilters(tiers=list(Tier)),
                passages=False,
            )
        for n, (i, score) in enumerate(state.fresh):
            p = state.prepared[i]
            vector = vectors[n] if vectors is not None else None
            found = self._near_duplicates(
                state.collection,
                p.item.content,
                p.item.speaker,
                vector,
                neighbors[n],
                state.created,
                state.created_vectors,
                state.merged,
            )
            # A caller-given id names a record the caller will look up: merging it
            # away would leave that id dangling, so it is stored and the likeness noted.
            kept_apart = found.duplicate if p.item.id is not None else None
            if found.duplicate is not None and kept_apart is None:
                self._merge_near(state, i, found.duplicate)
                continue
            passages = embedded.passages[n] if embedded is not None else None
            self._create(state, i, score, extractions[n], vector, passages, found, kept_apart)

    def _merge_near(self, state: _Batch, i: int, target: str) -> None:
        """Item ``i`` merged into ``target``, the near duplicate found for it."""
        p = state.prepared[i]
        if target not in state.merged and target not in {m.id for m in state.created.values()}:
            stored_memory = self.store.get_memories(state.collection, [target])[target]
            state.merged[target] = merge_duplicate(
                stored_memory, p.item, state.at, max_tags=self.limits.max_tags
            )
            state.repeats[target] = [p.item]
            base = state.merged[target]
        else:
            base = self._merge_target(
                target, p.item, state.at, state.created, state.merged, state.repeats
            )
        state.outcomes[i] = _merged_into(
            p,
            base,
            target,
            f"nearly the same as memory {target!r}: merged into it",
            embedded=not base.needs_embedding,
            quality=base.retrieval.quality_score,
        )
        state.events.append(
            Event(type="duplicate_merged", at=state.at, memory_ids=[target], payload={})
        )

    def _create(
        self,
        state: _Batch,
        i: int,
        score: float,
        extracted: Extraction,
        vector: Vector | None,
        passages: Vector | None,
        found: _NearMatch,
        kept_apart: str | None,
    ) -> None:
        """Item ``i`` as a new memory: its hub edges, the memories it conflicts
        with, supersedes or was synthesized from, and its outcome."""
        p, at = state.prepared[i], state.at
        extraction = merge_given(
            extracted, domains=p.item.domains, triggers=p.item.triggers, concepts=p.item.concepts
        )
        memory = self._new_memory(
            state.collection, p.item, p.digest, extraction, score, at, embedded=vector is not None
        )
        older, newer = _by_time(memory, found)
        memory = _superseded(memory, newer)
        state.created[i] = memory
        state.created_vectors[i] = vector
        state.created_passages[i] = passages
        edges = hub_edges(memory.id, extraction, at)
        edges.extend(
            Edge(source=memory.id, type=edge_type, target=other, weight=1.0, created_at=at)
            for edge_type, others in (
                (EdgeType.CONFLICTS_WITH, found.conflicts),
                (EdgeType.SUPERSEDES, older),
            )
            for other in others
        )
        _link_superseded(
            memory.id, older, newer, state.created, state.created_edges, state.superseding, at
        )
        edges.extend(
            Edge(source=memory.id, type=EdgeType.SYNTHESIZED_FROM, target=origin, weight=1.0,
                 created_at=at)
            for origin in memory.retrieval.synthesized_from
        )  # fmt: skip
        state.created_edges[i] = edges
        reasons = list(p.changes)
        if kept_apart is not None:
            reasons.append(
                f"nearly the same as memory {kept_apart!r}; stored apart: it has its own id"
            )
        if found.conflicts:
            reasons.extend(_conflict_reasons(found.conflicts, older, newer))
            state.events.append(_conflict_event(memory.id, found.conflicts, older, newer, at))
        if vector is None:
            reasons.append(NOT_EMBEDDED_REASON)
        state.outcomes[i] = RememberOutcome(
            memory=memory,
            created=True,
            embedded=vector is not None,
            reasons=reasons,
            quality=score,
            conflicts_with=list(found.conflicts),
            supersedes=list(older),
            sanitized=bool(p.changes),
        )

    def _repeat_earlier(self, state: _Batch) -> None:
        """Repeats of content earlier in the batch: one more duplicate of what the
        first occurrence became."""
        for i, p in enumerate(state.prepared):
            if state.outcomes[i] is not None:
                continue
            first = state.outcomes[state.repeat_of[i]]
            assert first is not None and first.memory is not None
            target = first.duplicate_of or first.memory.id
            base = self._merge_target(
                target, p.item, state.at, state.created, state.merged, state.repeats
            )
            state.outcomes[i] = _merged_into(
                p,
                base,
                target,
                "the same content appears earlier in the batch",
                embedded=first.embedded,
                quality=base.retrieval.quality_score,
            )

    def _write_batch(self, state: _Batch) -> list[MemoryRecord]:
        """Write what the batch created, then the merges into what was stored;
        returns the records created."""
        records = [
            MemoryRecord(
                memory=state.created[i],
                vector=state.created_vectors[i],
                edges=state.created_edges[i],
                passages=state.created_passages[i],
            )
            for i in sorted(state.created)
        ]
        if records:
            self.store.add_memories(state.collection, records)
        superseding = state.superseding
        if superseding.later_edges:
            self.store.upsert_edges(state.collection, superseding.later_edges)
        # Merges after the insert: a refused insert (an id that exists) writes nothing.
        if state.repeats or state.events or superseding.stored:
            repeats, events, at = state.repeats, state.events, state.at
            learned = self.store.learn(
                state.collection,
                memory_ids=sorted({*repeats, *superseding.stored}),
                change=lambda stored, _states: self._merged(
                    stored, repeats, superseding.stored, events, at
                ),
            )
            state.merged = {m.id: m for m in learned.memories}
        return records

    def _merged(
        self,
        stored: Mapping[str, Memory],
        repeats: Mapping[str, list[NewMemory]],
        superseded: Mapping[str, list[str]],
        events: list[Event],
        at: datetime,
    ) -> Learned:
        """The learning update that merges repeats into the stored memories as they
        are now (another request may have merged into one, or engaged with it,
        since this one read it), and names the new memories that supersede them,
        with this call's events. A memory forgotten meanwhile takes neither."""
        written = []
        for target in dict.fromkeys([*repeats, *superseded]):
            memory = stored.get(target)
            if memory is None:
                continue
            for item in repeats.get(target, ()):
                memory = merge_duplicate(memory, item, at, max_tags=self.limits.max_tags)
            written.append(_superseded(memory, superseded.get(target, ())))
        return Learned(memories=written, events=events)

    def _stream(
        self,
        collection: str,
        batches: Iterable[Sequence[NewMemory]],
        now: datetime | None,
    ) -> Iterator[list[RememberOutcome]]:
        model = self.quality_model(collection)
        embedded_names: set[str] = set()
        run = staged(
            batches,
            lambda items: self._admit_ahead(items, model),
            lambda ahead: self._embed_ahead(ahead, embedded_names),
            size=len,
            ahead=STREAM_AHEAD,
            group=EMBED_RUN,
            name="hippo-ingest",
        )
        # Closed as soon as a write raises, not when the traceback lets go of it:
        # the stages stop reading ahead at once.
        with contextlib.closing(run):
            for ahead in run:
                if not ahead.prepared:
                    yield []
                    continue
                yield self._store_batch(
                    collection, ahead.prepared, at=now or utcnow(), batch=True, features=ahead
                )

    def _admit_ahead(self, items: Sequence[NewMemory], model: QualityModel) -> _Ahead:
        """A stream's first stage: admit a batch and extract what it will likely
        create (the gate's model as the stream began: a model retrained since
        only changes what is extracted ahead, not what is written)."""
        prepared = self._admit(items, batch=True)
        accepted: dict[str, _Prepared] = {}
        for p in prepared:
            if p.digest in accepted:
                continue
            if assess(p.item.content, p.item.source, model, self.quality_config).accepted:
                accepted[p.digest] = p
        texts = [p.item.content for p in accepted.values()]
        extractions = self._extract(texts) if texts else []
        names: dict[str, None] = {}
        for p, extraction in zip(accepted.values(), extractions, strict=True):
            given = merge_given(
                extraction,
                domains=p.item.domains,
                triggers=p.item.triggers,
                concepts=p.item.concepts,
            )
            names.update(dict.fromkeys((*given.domains, *given.triggers, *given.concepts)))
        by_text = dict(zip(texts, extractions, strict=True))
        return _Ahead(self, prepared, texts, by_text, list(names))

    def _embed_ahead(self, run: list[_Ahead], embedded_names: set[str]) -> None:
        """A stream's second stage: embed the contents of a run of batches and the
        hub names they bring, together, sorted by length. A name is embedded once
        per stream (``embedded_names``); a failing embedder leaves the run's
        batches to be stored without vectors, as a single call would."""
        texts = list(dict.fromkeys(t for ahead in run for t in ahead.texts))
        names = [
            n
            for n in dict.fromkeys(n for ahead in run for n in ahead.names)
            if n not in embedded_names
        ]
        try:
            embedded = self._encode([*texts, *names])
        except EmbeddingError as e:
            logger.warning(
                "embedding failed (%s); storing %d memories for re-embedding", e.message, len(texts)
            )
            for ahead in run:
                ahead.embedding_failed = True
            return
        n = len(texts)
        rows = zip(embedded.heads[:n], embedded.passages[:n], strict=True)
        vectors = dict(zip(texts, rows, strict=True))
        hub_vectors = dict(zip(names, embedded.heads[n:], strict=True))
        for ahead in run:
            ahead.vectors = vectors
            ahead.hub_vectors = hub_vectors
        embedded_names.update(names)

    def _merge_target(
        self,
        target: str,
        item: NewMemory,
        at: datetime,
        created: dict[int, Memory],
        merged: dict[str, Memory],
        repeats: dict[str, list[NewMemory]],
    ) -> Memory:
        """Merge ``item`` into ``target``: a stored memory this call already merges
        into, or one it creates. Returns the merged memory."""
        if target in merged:
            merged[target] = merge_duplicate(
                merged[target], item, at, max_tags=self.limits.max_tags
            )
            repeats[target].append(item)
            return merged[target]
        j = next(j for j, m in created.items() if m.id == target)
        created[j] = merge_duplicate(created[j], item, at, max_tags=self.limits.max_tags)
        return created[j]

    def _check_provenance(
        self, collection: str, prepared: Sequence[_Prepared], batch: bool
    ) -> None:
        """Every memory named in ``synthesized_from`` is stored in the collection.

        Raises:
            InvalidInputError: one is not (``field`` names the item).
        """
        wanted = {mid for p in prepared for mid in p.item.synthesized_from}
        if not wanted:
            return
        found = self.store.get_memories(collection, sorted(wanted))
        for i, p in enumerate(prepared):
            missing = [mid for mid in p.item.synthesized_from if mid not in found]
            if missing:
                raise InvalidInputError(
                    f"synthesized_from names no stored memory {missing[0]!r}",
                    field=f"memories[{i}].synthesized_from" if batch else "synthesized_from",
                )

    def _prepare(self, item: NewMemory, where: str) -> _Prepared:
        """Validate and sanitize one item."""
        checked = self._check_new(item, where)
        cleaned = sanitize_text(checked.content)
        if not cleaned.text.strip():
            raise InvalidInputError(
                "content is empty once hidden characters and instructions are removed",
                field=f"{where}content",
            )
        checked = checked.model_copy(update={"content": cleaned.text})
        return _Prepared(item=checked, changes=cleaned.changes, digest=content_hash(cleaned.text))

    def _stored_with_hash(
        self, collection: str, digest: str, speaker: str | None, merged: dict[str, Memory]
    ) -> Memory | None:
        """The stored memory with this content (as this call has merged it so far),
        said by ``speaker`` or by no one named."""
        existing = self.store.find_by_hash(collection, digest)
        if not existing:
            return None
        read = self.store.get_memories(collection, [m for m in existing if m not in merged])
        read.update({m: merged[m] for m in existing if m in merged})
        return next(
            (read[m] for m in existing if m in read and _same_side(read[m].speaker, speaker)),
            None,
        )

    def _rejected(
        self,
        collection: str,
        p: _Prepared,
        verdict: QualityAssessment,
        events: list[Event],
        at: datetime,
    ) -> RememberOutcome:
        threshold = self.quality_config.min_score
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

    def _near_duplicates(
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
    ) -> _NearMatch:
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
            for mid in self.store.text_neighbours(collection, content, k=config.candidates):
                similarity.setdefault(mid, None)
        if skip is not None:
            similarity.pop(skip, None)
        stored = self.store.get_memories(collection, [m for m in similarity if m not in merged])
        stored.update({mid: merged[mid] for mid in similarity if mid in merged})
        texts = {mid: m.content for mid, m in stored.items() if _same_side(m.speaker, speaker)}
        occurred = {mid: m.occurred_at for mid, m in stored.items()}
        # Memories this batch creates: the nearest by vector, like the stored ones.
        batch = [(j, m) for j, m in created.items() if _same_side(m.speaker, speaker)]
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
                return _NearMatch(duplicate=mid)
            if verdict == Verdict.CONFLICT:
                conflicts.append(mid)
        return _NearMatch(
            conflicts=tuple(conflicts), occurred={mid: occurred[mid] for mid in conflicts}
        )

    def _judge_edit(
        self, collection: str, memory: Memory, vector: Vector | None, at: datetime
    ) -> EditOutcome:
        """Judge an edited memory's new content against the other stored memories
        as a new memory's is (see :meth:`_near_duplicates`; its own old text left
        out), then link it to those it contradicts."""
        neighbors: list[tuple[str, float]] = []
        if vector is not None:
            neighbors = self.store.search_vectors(
                collection,
                vector,
                model=self.embedder.name,
                k=self.dedup.candidates + 1,
                filters=RecallFilters(tiers=list(Tier)),
                passages=False,
            )
        found = self._near_duplicates(
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
        self, collection: str, memory: Memory, found: _NearMatch, at: datetime
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
        older, newer = _by_time(memory, found)
        linked = {
            e.target
            for e in self.store.edges_of(collection, memory.id)
            if e.type == EdgeType.CONFLICTS_WITH
        }
        linked.update(
            other
            for other in found.conflicts
            if any(
                e.type == EdgeType.CONFLICTS_WITH and e.target == memory.id
                for e in self.store.edges_of(collection, other)
            )
        )
        links = [
            *((memory.id, EdgeType.CONFLICTS_WITH, o) for o in found.conflicts if o not in linked),
            *((memory.id, EdgeType.SUPERSEDES, o) for o in older),
            *((o, EdgeType.SUPERSEDES, memory.id) for o in newer),
        ]
        self.store.upsert_edges(
            collection,
            [
                Edge(source=a, type=kind, target=b, weight=1.0, created_at=at)
                for a, kind, b in links
            ],
        )
        event = _conflict_event(memory.id, found.conflicts, older, newer, at)
        learned = self.store.learn(
            collection,
            memory_ids=[*older, *([memory.id] if newer else [])],
            change=lambda stored, _states: Learned(
                memories=[
                    _superseded(m, newer if m.id == memory.id else [memory.id])
                    for m in stored.values()
                ],
                events=[event],
            ),
        )
        memory = next((m for m in learned.memories if m.id == memory.id), memory)
        reasons.extend(_conflict_reasons(found.conflicts, older, newer))
        return EditOutcome(
            memory=memory,
            conflicts_with=list(found.conflicts),
            supersedes=list(older),
            reasons=reasons,
        )

    def _new_memory(
        self,
        collection: str,
        item: NewMemory,
        digest: str,
        extraction: Extraction,
        quality: float | None,
        at: datetime,
        *,
        embedded: bool,
    ) -> Memory:
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
            embedding_model=self.embedder.name if embedded else None,
            embedding_generated_at=at if embedded else None,
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


def _same_side(one: str | None, other: str | None) -> bool:
    """Whether two memories may repeat each other by who said them: unless both
    name a speaker and the speakers differ."""
    return one is None or other is None or one.casefold() == other.casefold()


def _by_time(memory: Memory, found: _NearMatch) -> tuple[list[str], list[str]]:
    """The memories ``memory`` contradicts, split into those it supersedes (they
    happened before it, or at the same time: it was remembered after them) and
    those that supersede it (they happened after it)."""
    older = [c for c in found.conflicts if found.occurred[c] <= memory.occurred_at]
    newer = [c for c in found.conflicts if found.occurred[c] > memory.occurred_at]
    return older, newer


def _conflict_reasons(
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


def _conflict_event(
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


def _superseded(memory: Memory, by: Iterable[str]) -> Memory:
    """``memory`` naming the memories ``by`` among those that supersede it."""
    names = list(dict.fromkeys([*memory.retrieval.superseded_by, *by]))
    if names == memory.retrieval.superseded_by:
        return memory
    return memory.model_copy(
        update={"retrieval": memory.retrieval.model_copy(update={"superseded_by": names})}
    )


def _link_superseded(
    memory_id: str,
    older: Sequence[str],
    newer: Sequence[str],
    created: dict[int, Memory],
    created_edges: dict[int, list[Edge]],
    superseding: _Superseding,
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
            created[j] = _superseded(created[j], [memory_id])
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
