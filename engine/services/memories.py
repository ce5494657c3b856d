"""Reading, editing and forgetting memories."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hippocampus.errors import InvalidInputError, NotFoundError
from hippocampus.extract import merge_given
from hippocampus.extract.quality import assess
from hippocampus.locks import StripedLock
from hippocampus.model import (
    HUB_EDGE,
    Edge,
    EdgeType,
    Memory,
    MemoryPatch,
    NewMemory,
    RetrievalMeta,
    utcnow,
)
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.features import TextFeatures
from hippocampus.services.hubs import hub_edges, retrieval_extraction
from hippocampus.services.judging import EditOutcome, Judge
from hippocampus.services.quality import QualityGate
from hippocampus.store import Learned, MemoryRecord, Vector

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


@dataclass(frozen=True)
class TurnWindow:
    """A memory with the conversation turns around it, each list in the order they
    happened (both empty for a memory outside any conversation)."""

    memory: Memory
    before: list[Memory]
    after: list[Memory]


MAX_TURN_WINDOW = 50
"""The most turns :meth:`Hippocampus.turns` reads on either side."""


class MemoryService:
    """Reading, editing and forgetting memories.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        features: embedding and extraction of edited content.
        quality: the quality gate's model, to score edited content.
        judge: what edited content contradicts.
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
        # Held by an edit from reading a memory to writing it back, so that two
        # edits of one memory in this process apply one after another. Learning
        # (engagement, feedback, tier moves) is atomic in the store, and an edit
        # keeps what it recorded meanwhile (MemoryRecord.keep_learned).
        self._memory_lock = StripedLock()

    def get(self, collection: str, memory_id: str) -> Memory:
        """The memory, or NotFoundError (also for ids of other collections)."""
        self._checks.check_collection(collection)
        found = self._context.store.get_memories(collection, [memory_id])
        if memory_id not in found:
            raise NotFoundError(f"no memory {memory_id!r} in this collection")
        return found[memory_id]

    def hubs_of(self, collection: str, memory_id: str) -> list[Edge]:
        """The memory's edges to its domains, triggers and concepts, with their
        weights as learning left them: by kind (domains, triggers, concepts), then
        strongest first, then by name.

        Raises:
            NotFoundError: no such memory.
        """
        self.get(collection, memory_id)
        order = {t: i for i, t in enumerate(HUB_EDGE.values())}
        return sorted(
            (e for e in self._context.store.edges_of(collection, memory_id) if e.type in order),
            key=lambda e: (order[e.type], -e.weight, e.target),
        )

    def update(
        self,
        collection: str,
        memory_id: str,
        patch: MemoryPatch,
        *,
        now: datetime | None = None,
    ) -> Memory:
        """Edit a memory and return it as written: :meth:`edit` without what the
        new content was found to contradict."""
        return self.edit(collection, memory_id, patch, now=now).memory

    def edit(
        self,
        collection: str,
        memory_id: str,
        patch: MemoryPatch,
        *,
        now: datetime | None = None,
    ) -> EditOutcome:
        """Edit a memory. Content is sanitized like new content; content that
        changes is re-embedded, re-extracted (its hub edges follow) and re-scored
        for quality; unchanged content is never re-embedded. If the embedder fails
        on the new content, the old vector is dropped and the memory is flagged for
        re-embedding (``embedding_model`` is ``None``), as remembering does
        (:meth:`~hippocampus.services.remembering.RememberingService.remember`).

        New content is judged against the other memories as a new memory is
        (:meth:`~hippocampus.services.remembering.RememberingService.remember_many`):
        one it contradicts is linked by ``CONFLICTS_WITH`` and, by when each
        happened, one supersedes the other. Links its old content made stay. One
        it nearly repeats is named in the reasons, never merged: the edit names
        this memory.

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: a field is invalid; nothing is written.
        """
        at = now or utcnow()
        with self._memory_lock(collection, memory_id):
            memory, vector, content_changed = self._update(collection, memory_id, patch, at)
            if not content_changed:
                return EditOutcome(memory=memory)
            return self._judge.judge_edit(collection, memory, vector, at)

    def _update(
        self, collection: str, memory_id: str, patch: MemoryPatch, at: datetime
    ) -> tuple[Memory, Vector | None, bool]:
        """Write the edit; the memory as written, its new vector (if the content
        changed and was embedded) and whether the content changed."""
        current = self.get(collection, memory_id)
        update: dict[str, Any] = {"updated_at": at}
        retrieval = current.retrieval.model_copy()
        vector: Vector | None = None
        passage_vectors: Vector | None = None
        content_changed = False
        for name in ("tags", "domains", "triggers", "concepts"):
            given_names = getattr(patch, name)
            if given_names is not None:
                self._checks.check_names(given_names, name)
        source = (
            self._checks.check_source(patch.source, "source") if patch.source is not None else None
        )
        if patch.content is not None:
            vector, passage_vectors, content_changed = self._new_content(
                collection, memory_id, current, patch.content, source, update, retrieval, at
            )
        self._patch_fields(patch, source, update)
        given = merge_given(
            retrieval_extraction(retrieval),
            domains=patch.domains,
            triggers=patch.triggers,
            concepts=patch.concepts,
        )
        hubs_changed = content_changed or any(
            v is not None for v in (patch.domains, patch.triggers, patch.concepts)
        )
        retrieval.domains = list(given.domains)
        retrieval.triggers = list(given.triggers)
        retrieval.concepts = list(given.concepts)
        retrieval.names = list(given.names)
        update["retrieval"] = retrieval
        memory = _validated(current, update)
        # New content the embedder failed on: the old vector describes the old text,
        # so it is dropped (recall would match the new text by it) and the memory
        # waits for re-embedding like one remembered while the embedder is down.
        drop_vector = content_changed and vector is None
        if drop_vector:
            memory = memory.model_copy(
                update={"embedding_model": None, "embedding_generated_at": None}
            )
        self._context.store.replace_memory(
            collection,
            MemoryRecord(
                memory=memory,
                vector=vector,
                edges=hub_edges(memory.id, given, at) if hubs_changed else (),
                drop_vector=drop_vector,
                passages=passage_vectors,
                # What engagement, feedback or a tier move recorded while this
                # edit was made stays (an edit that names a tier sets it).
                keep_learned=True,
                keep_tier=patch.tier is None,
            ),
            replace_edges=hubs_changed,
        )
        if hubs_changed and memory.embedding_model is not None:
            self._features.embed_hubs(collection)
        return memory, vector, content_changed

    def _new_content(
        self,
        collection: str,
        memory_id: str,
        current: Memory,
        content: str,
        source: str | None,
        update: dict[str, Any],
        retrieval: RetrievalMeta,
        at: datetime,
    ) -> tuple[Vector | None, Vector | None, bool]:
        """An edit's content, sanitized; when it differs from the stored one, put in
        ``update`` and ``retrieval`` with its vector, extraction and quality score.
        Returns the new vector, its passages' and whether the content changed."""
        checked = self._checks.prepare(NewMemory(content=content), "")
        if checked.changes:
            logger.info(
                "memory %s in %s: content sanitized on edit (%s)",
                memory_id,
                collection,
                "; ".join(checked.changes),
            )
        text = checked.item.content
        if checked.digest == current.content_hash:
            return None, None, False
        update["content"] = text
        update["content_hash"] = checked.digest
        embedded = self._features.embed([text])
        vector = embedded.heads[0] if embedded is not None else None
        passage_vectors = embedded.passages[0] if embedded is not None else None
        update["embedding_model"] = self._context.embedder.name if vector is not None else None
        update["embedding_generated_at"] = at if vector is not None else None
        extraction = self._features.extract([text])[0]
        retrieval.domains = list(extraction.domains)
        retrieval.triggers = list(extraction.triggers)
        retrieval.concepts = list(extraction.concepts)
        retrieval.names = list(extraction.names)
        retrieval.quality_score = assess(
            text,
            source if source is not None else current.source,
            self._quality.quality_model(collection),
            self._context.quality_config,
        ).score
        return vector, passage_vectors, True

    def _patch_fields(self, patch: MemoryPatch, source: str | None, update: dict[str, Any]) -> None:
        """The fields other than content an edit sets, checked, put in ``update``."""
        if patch.category is not None:
            update["category"] = self._checks.check_new(
                NewMemory(content="x", category=patch.category), ""
            ).category
        if patch.importance is not None:
            update["importance"] = patch.importance
        if patch.tier is not None:
            update["tier"] = patch.tier
        if source is not None:
            update["source"] = source
        if patch.tags is not None:
            update["tags"] = self._checks.check_names(patch.tags, "tags")
        if patch.occurred_at is not None:
            update["occurred_at"] = patch.occurred_at
        if patch.speaker is not None:
            update["speaker"] = self._checks.check_speaker(patch.speaker, "speaker")

    def turns(
        self, collection: str, memory_id: str, *, before: int = 2, after: int = 2
    ) -> TurnWindow:
        """The memory and up to ``before`` / ``after`` turns of its conversation just
        before and after it, in the order they happened (see
        :meth:`GraphStore.neighbour_turns`).

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: ``before`` or ``after`` outside 0-50.
        """
        for name, value in (("before", before), ("after", after)):
            if not 0 <= value <= MAX_TURN_WINDOW:
                raise InvalidInputError(f"{name} is 0-{MAX_TURN_WINDOW}", field=name)
        memory = self.get(collection, memory_id)
        earlier, later = self._context.store.neighbour_turns(
            collection, [memory_id], before=before, after=after
        ).get(memory_id, ([], []))
        found = self._context.store.get_memories(collection, [*earlier, *later])
        return TurnWindow(
            memory=memory,
            before=[found[i] for i in earlier if i in found],
            after=[found[i] for i in later if i in found],
        )

    def forget(self, collection: str, memory_id: str) -> None:
        """Delete a memory with its edges. The memories it superseded no longer
        name it in ``superseded_by``.

        They are unmarked first, then the memory is deleted: a crash between the
        two writes leaves the memory (the forget was not acknowledged), and
        forgetting it again finishes the job. The other order would leave names
        of a deleted memory that no retry reaches.

        Raises:
            NotFoundError: no such memory.
        """
        self._checks.check_collection(collection)
        superseded = [
            e.target
            for e in self._context.store.edges_of(collection, memory_id)
            if e.type == EdgeType.SUPERSEDES
        ]
        if superseded:
            self._context.store.learn(
                collection,
                memory_ids=superseded,
                change=lambda stored, _states: Learned(
                    memories=[_unsuperseded(m, memory_id) for m in stored.values()]
                ),
            )
        if not self._context.store.delete_memory(collection, memory_id):
            raise NotFoundError(f"no memory {memory_id!r} in this collection")


def _unsuperseded(memory: Memory, by: str) -> Memory:
    """``memory`` no longer naming ``by`` among the memories that supersede it."""
    names = [n for n in memory.retrieval.superseded_by if n != by]
    return memory.model_copy(
        update={"retrieval": memory.retrieval.model_copy(update={"superseded_by": names})}
    )


def _validated(current: Memory, update: dict[str, Any]) -> Memory:
    """``current`` with ``update`` applied, validated as a memory.

    Raises:
        InvalidInputError: a field the edit sets is invalid (``field`` names it).
    """
    try:
        return Memory.model_validate({**current.model_dump(), **update})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidInputError(f"{where}: {first['msg']}", field=where) from e
