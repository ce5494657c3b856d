"""Remembering: validating, gating, deduplicating, embedding and storing new memories."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from hippocampus.errors import InvalidInputError, LimitExceededError
from hippocampus.extract import Extraction, merge_given
from hippocampus.extract.dedup import merge_duplicate
from hippocampus.extract.quality import assess
from hippocampus.model import Edge, EdgeType, Event, Memory, NewMemory, RecallFilters, Tier, utcnow
from hippocampus.services.batch import (
    Batch,
    RememberOutcome,
    check_batch_ids,
    merge_target,
    merge_update,
    merged_into,
    new_memory,
    rejected,
)
from hippocampus.services.checks import Checks, Prepared
from hippocampus.services.context import Context
from hippocampus.services.features import NOT_EMBEDDED_REASON, Embedded, TextFeatures
from hippocampus.services.hubs import hub_edges
from hippocampus.services.ingest import BatchFeatures, Inline, admit_ahead, embed_ahead
from hippocampus.services.judging import (
    Judge,
    NearMatch,
    by_time,
    conflict_event,
    conflict_reasons,
    link_superseded,
    same_side,
    superseded,
)
from hippocampus.services.quality import QualityGate
from hippocampus.services.stages import staged
from hippocampus.store import MemoryRecord, Vector

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


STREAM_AHEAD = 2048
"""The most memories :meth:`RememberingService.remember_batches` reads ahead of the
batch being written: enough for the embedding stage to take several batches at
once while the extraction stage fills the next run."""

EMBED_RUN = 512
"""The most memories the stream embeds in one run (sorted by length together):
past a few hundred, sorting saves little padding more, and a longer run only
keeps the writer waiting longer for its first batch."""


class RememberingService:
    """Remembering memories, one at a time or many.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        features: embedding and extraction.
        quality: the quality gate's model.
        judge: what a new memory repeats or contradicts.
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        features: TextFeatures,
        quality: QualityGate,
        judge: Judge,
    ) -> None:
        self._context = context
        self._checks = checks
        self._features = features
        self._quality = quality
        self._judge = judge

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
        self._checks.check_collection(collection)
        return self._stream(collection, batches, now)

    def _remember(
        self,
        collection: str,
        items: Sequence[NewMemory],
        *,
        now: datetime | None,
        batch: bool,
    ) -> list[RememberOutcome]:
        self._checks.check_collection(collection)
        prepared = self._admit(items, batch=batch)
        if not prepared:
            return []
        return self._store_batch(
            collection,
            prepared,
            at=now or utcnow(),
            batch=batch,
            features=Inline(self._context, self._features),
        )

    def _admit(self, items: Sequence[NewMemory], *, batch: bool) -> list[Prepared]:
        """Validate and sanitize a batch: no store, no model.

        Raises:
            LimitExceededError: too many items, or an item over a limit.
            InvalidInputError: an item is invalid (``field`` says which).
        """
        limits = self._context.limits
        if len(items) > limits.max_batch:
            raise LimitExceededError(
                f"{len(items)} memories in one batch; the limit is {limits.max_batch}",
                field="memories",
            )
        return [
            self._checks.prepare(item, f"memories[{i}]." if batch else "")
            for i, item in enumerate(items)
        ]

    def _store_batch(
        self,
        collection: str,
        prepared: Sequence[Prepared],
        *,
        at: datetime,
        batch: bool,
        features: BatchFeatures,
    ) -> list[RememberOutcome]:
        """Judge a validated batch against what is stored and write it, all or
        nothing: the part of remembering that reads and writes the store.
        ``features`` embeds and extracts the memories it creates (now, or from
        what was computed ahead)."""
        self._check_provenance(collection, prepared, batch)
        state = Batch(collection, prepared, at)
        self._screen(state)
        check_batch_ids(state, batch)
        texts = [prepared[i].item.content for i, _ in state.fresh]
        embedded = features.embed(texts)
        extractions = features.extract(texts) if texts else []
        self._judge_fresh(state, embedded, extractions)
        self._repeat_earlier(state)
        records = self._write_batch(state)
        if records and embedded is not None:
            self._features.embed_hubs(collection, encode=features.encode_hubs)
        # Every outcome shows its memory as written (later items may have merged into it).
        written = {m.id: m for m in state.created.values()} | state.merged
        final: list[RememberOutcome] = []
        for outcome in state.outcomes:
            assert outcome is not None
            if outcome.memory is not None and outcome.memory.id in written:
                outcome = dataclasses.replace(outcome, memory=written[outcome.memory.id])
            final.append(outcome)
        return final

    def _screen(self, state: Batch) -> None:
        """Exact repeats of stored content (merged), repeats of content earlier in
        the batch (set aside for :meth:`_repeat_earlier`), then the quality gate:
        what passes is ``state.fresh``."""
        model = self._quality.quality_model(state.collection)
        # The first item of each content (per speaker) in the batch.
        first_in_batch: dict[str, list[int]] = {}
        for i, p in enumerate(state.prepared):
            stored = self._stored_with_hash(
                state.collection, p.digest, p.item.speaker, state.merged
            )
            if stored is not None:
                state.merged[stored.id] = merge_duplicate(
                    stored, p.item, state.at, max_tags=self._context.limits.max_tags
                )
                state.repeats.setdefault(stored.id, []).append(p.item)
                state.outcomes[i] = merged_into(
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
            earlier = [j for j in firsts if same_side(prepared[j].item.speaker, p.item.speaker)]
            if earlier:
                state.repeat_of[i] = earlier[0]
                continue
            verdict = assess(p.item.content, p.item.source, model, self._context.quality_config)
            if not verdict.accepted:
                state.outcomes[i] = rejected(
                    state.collection,
                    p,
                    verdict,
                    state.events,
                    state.at,
                    threshold=self._context.quality_config.min_score,
                )
                continue
            firsts.append(i)
            state.fresh.append((i, verdict.score))

    def _judge_fresh(
        self, state: Batch, embedded: Embedded | None, extractions: Sequence[Extraction]
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
            neighbors = self._context.store.search_vectors_many(
                state.collection,
                vectors,
                model=self._context.embedder.name,
                k=self._judge.dedup.candidates,
                filters=RecallFilters(tiers=list(Tier)),
                passages=False,
            )
        for n, (i, score) in enumerate(state.fresh):
            p = state.prepared[i]
            vector = vectors[n] if vectors is not None else None
            found = self._judge.near_duplicates(
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

    def _merge_near(self, state: Batch, i: int, target: str) -> None:
        """Item ``i`` merged into ``target``, the near duplicate found for it."""
        p = state.prepared[i]
        if target not in state.merged and target not in {m.id for m in state.created.values()}:
            stored_memory = self._context.store.get_memories(state.collection, [target])[target]
            state.merged[target] = merge_duplicate(
                stored_memory, p.item, state.at, max_tags=self._context.limits.max_tags
            )
            state.repeats[target] = [p.item]
            base = state.merged[target]
        else:
            base = merge_target(
                target,
                p.item,
                state.at,
                state.created,
                state.merged,
                state.repeats,
                max_tags=self._context.limits.max_tags,
            )
        state.outcomes[i] = merged_into(
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
        state: Batch,
        i: int,
        score: float,
        extracted: Extraction,
        vector: Vector | None,
        passages: Vector | None,
        found: NearMatch,
        kept_apart: str | None,
    ) -> None:
        """Item ``i`` as a new memory: its hub edges, the memories it conflicts
        with, supersedes or was synthesized from, and its outcome."""
        p, at = state.prepared[i], state.at
        extraction = merge_given(
            extracted, domains=p.item.domains, triggers=p.item.triggers, concepts=p.item.concepts
        )
        model = self._context.embedder.name if vector is not None else None
        memory = new_memory(state.collection, p.item, p.digest, extraction, score, at, model=model)
        older, newer = by_time(memory, found)
        memory = superseded(memory, newer)
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
        link_superseded(
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
            reasons.extend(conflict_reasons(found.conflicts, older, newer))
            state.events.append(conflict_event(memory.id, found.conflicts, older, newer, at))
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

    def _repeat_earlier(self, state: Batch) -> None:
        """Repeats of content earlier in the batch: one more duplicate of what the
        first occurrence became."""
        for i, p in enumerate(state.prepared):
            if state.outcomes[i] is not None:
                continue
            first = state.outcomes[state.repeat_of[i]]
            assert first is not None and first.memory is not None
            target = first.duplicate_of or first.memory.id
            base = merge_target(
                target,
                p.item,
                state.at,
                state.created,
                state.merged,
                state.repeats,
                max_tags=self._context.limits.max_tags,
            )
            state.outcomes[i] = merged_into(
                p,
                base,
                target,
                "the same content appears earlier in the batch",
                embedded=first.embedded,
                quality=base.retrieval.quality_score,
            )

    def _write_batch(self, state: Batch) -> list[MemoryRecord]:
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
            self._context.store.add_memories(state.collection, records)
        superseding = state.superseding
        if superseding.later_edges:
            self._context.store.upsert_edges(state.collection, superseding.later_edges)
        # Merges after the insert: a refused insert (an id that exists) writes nothing.
        if state.repeats or state.events or superseding.stored:
            repeats, events, at = state.repeats, state.events, state.at
            max_tags = self._context.limits.max_tags
            learned = self._context.store.learn(
                state.collection,
                memory_ids=sorted({*repeats, *superseding.stored}),
                change=lambda stored, _states: merge_update(
                    stored, repeats, superseding.stored, events, at, max_tags=max_tags
                ),
            )
            state.merged = {m.id: m for m in learned.memories}
        return records

    def _stream(
        self,
        collection: str,
        batches: Iterable[Sequence[NewMemory]],
        now: datetime | None,
    ) -> Iterator[list[RememberOutcome]]:
        model = self._quality.quality_model(collection)
        embedded_names: set[str] = set()
        run = staged(
            batches,
            lambda items: admit_ahead(
                self._admit(items, batch=True),
                model,
                self._context.quality_config,
                self._context,
                self._features,
            ),
            lambda ahead: embed_ahead(ahead, embedded_names, self._features),
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

    def _check_provenance(self, collection: str, prepared: Sequence[Prepared], batch: bool) -> None:
        """Every memory named in ``synthesized_from`` is stored in the collection.

        Raises:
            InvalidInputError: one is not (``field`` names the item).
        """
        wanted = {mid for p in prepared for mid in p.item.synthesized_from}
        if not wanted:
            return
        found = self._context.store.get_memories(collection, sorted(wanted))
        for i, p in enumerate(prepared):
            missing = [mid for mid in p.item.synthesized_from if mid not in found]
            if missing:
                raise InvalidInputError(
                    f"synthesized_from names no stored memory {missing[0]!r}",
                    field=f"memories[{i}].synthesized_from" if batch else "synthesized_from",
                )

    def _stored_with_hash(
        self, collection: str, digest: str, speaker: str | None, merged: dict[str, Memory]
    ) -> Memory | None:
        """The stored memory with this content (as this call has merged it so far),
        said by ``speaker`` or by no one named."""
        existing = self._context.store.find_by_hash(collection, digest)
        if not existing:
            return None
        read = self._context.store.get_memories(
            collection, [m for m in existing if m not in merged]
        )
        read.update({m: merged[m] for m in existing if m in merged})
        return next(
            (read[m] for m in existing if m in read and same_side(read[m].speaker, speaker)),
            None,
        )
