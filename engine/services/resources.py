"""The records (resources) an application indexes under its own ids."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from hippocampus.errors import ConflictError, NotFoundError
from hippocampus.extract.quality import assess
from hippocampus.extract.records import RecordLimits, build_document, indexed_text
from hippocampus.model import Memory, MemoryPatch, NewMemory, content_hash, utcnow
from hippocampus.model.resource import RESOURCE_CATEGORY, RESOURCE_SOURCE, Resource
from hippocampus.services.batch import new_memory
from hippocampus.services.checks import Checks
from hippocampus.services.context import Context
from hippocampus.services.features import NOT_EMBEDDED_REASON, TextFeatures
from hippocampus.services.hubs import hub_edges
from hippocampus.services.memories import MemoryService
from hippocampus.services.quality import QualityGate
from hippocampus.store import MemoryRecord

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


@dataclass(frozen=True)
class ResourceOutcome:
    """What :meth:`Hippocampus.put_resource` did.

    Attributes:
        action: ``created``, ``updated`` (re-indexed), ``unchanged`` (nothing to
            re-index: at most the status, priority or fields the document leaves
            out changed), ``deleted`` (archived) or ``absent`` (archived, and not
            indexed anyway).
        memory: the memory indexing the record (``None`` once deleted).
        reasons: what sanitizing changed, or why nothing was re-indexed.
    """

    resource_id: str
    action: str
    memory: Memory | None
    reasons: list[str] = field(default_factory=list)

    @property
    def reindexed(self) -> bool:
        return self.action in ("created", "updated")

    @property
    def embedded(self) -> bool | None:
        """Whether the record's document has a vector (``False``: it waits for
        re-embedding); ``None`` once deleted."""
        return None if self.memory is None else not self.memory.needs_embedding


class ResourceService:
    """Putting and deleting an application's records.

    Args:
        context: the shared parts.
        checks: validation of what callers give.
        features: embedding and extraction of a record's document.
        quality: the quality gate's model, to score a record's document.
        memories: edits the memory of a record indexed before.
    """

    def __init__(
        self,
        context: Context,
        checks: Checks,
        features: TextFeatures,
        quality: QualityGate,
        memories: MemoryService,
    ) -> None:
        self._context = context
        self._checks = checks
        self._features = features
        self._quality = quality
        self._memories = memories

    def put_resource(
        self,
        collection: str,
        resource_id: str,
        resource: Resource,
        *,
        now: datetime | None = None,
    ) -> ResourceOutcome:
        """Index an application's record under its own id, as the deterministic
        document :func:`~hippocampus.extract.records.build_document` builds.

        Indexed again only when what the document indexes changed (title,
        description, category, a meaningful custom field); a change of status,
        priority, or of fields the document leaves out (numbers, ids, dates,
        assignees) re-embeds nothing. A record whose status is ``ARCHIVED`` is
        removed. Records skip the quality gate and duplicate merging: the
        application's records are its truth, and two alike records are two.

        Raises:
            InvalidInputError: a bad id, an empty title or status, an oversized
                field (``field`` names it); nothing is written.
            ConflictError: the id belongs to a memory that is not a record.
        """
        self._checks.check_collection(collection)
        self._checks.check_id(resource_id, "resource_id")
        at = now or utcnow()
        existing = self._context.store.get_memories(collection, [resource_id]).get(resource_id)
        if existing is not None and existing.source != RESOURCE_SOURCE:
            raise ConflictError(
                f"{resource_id!r} is the id of a memory that is not a record",
                field="resource_id",
            )
        if resource.archived:
            return self._archive(collection, resource_id, existing)
        document = build_document(
            resource,
            RecordLimits(
                max_title_chars=self._context.limits.max_title_chars,
                max_document_chars=self._context.limits.max_content_chars,
                max_custom_fields=self._context.limits.max_custom_fields,
                max_field_name_chars=self._context.limits.max_tag_chars,
                max_field_value_chars=self._context.limits.max_custom_field_chars,
            ),
        )
        reasons = list(document.changes)
        if existing is not None:
            return self._reindex(collection, resource_id, existing, document.text, reasons, at)
        return self._create(collection, resource_id, document.text, reasons, at)

    def _archive(
        self, collection: str, resource_id: str, existing: Memory | None
    ) -> ResourceOutcome:
        """An archived record: removed, if it was indexed."""
        if existing is None:
            return ResourceOutcome(resource_id, "absent", None)
        self._context.store.delete_memory(collection, resource_id)
        logger.info("deleted resource %s from %s (archived)", resource_id, collection)
        return ResourceOutcome(resource_id, "deleted", None)

    def _reindex(
        self,
        collection: str,
        resource_id: str,
        existing: Memory,
        text: str,
        reasons: list[str],
        at: datetime,
    ) -> ResourceOutcome:
        """A record indexed before, edited when what its document indexes changed."""
        if existing.content == text:
            reasons.append("the document is unchanged: not re-indexed")
            return ResourceOutcome(resource_id, "unchanged", existing, reasons)
        if indexed_text(existing.content) == indexed_text(text):
            reasons.append(
                "only the status, priority or fields the document leaves out changed: "
                "not re-indexed"
            )
            return ResourceOutcome(resource_id, "unchanged", existing, reasons)
        memory = self._memories.update(
            collection,
            resource_id,
            MemoryPatch(content=text, category=RESOURCE_CATEGORY, source=RESOURCE_SOURCE),
            now=at,
        )
        if memory.needs_embedding:
            reasons.append(NOT_EMBEDDED_REASON)
        logger.info("updated resource %s in %s", resource_id, collection)
        return ResourceOutcome(resource_id, "updated", memory, reasons)

    def _create(
        self, collection: str, resource_id: str, text: str, reasons: list[str], at: datetime
    ) -> ResourceOutcome:
        """A record not indexed before, stored as a new memory (no quality gate, no
        merging)."""
        first = self._context.store.stats(collection).memories == 0
        item = NewMemory(
            content=text,
            id=resource_id,
            category=RESOURCE_CATEGORY,
            source=RESOURCE_SOURCE,
        )
        embedded = self._features.embed([item.content])
        extraction = self._features.extract([item.content])[0]
        score = assess(
            item.content,
            item.source,
            self._quality.quality_model(collection),
            self._context.quality_config,
        ).score
        memory = new_memory(
            collection,
            item,
            content_hash(item.content),
            extraction,
            score,
            at,
            model=self._context.embedder.name if embedded is not None else None,
        )
        self._context.store.add_memories(
            collection,
            [
                MemoryRecord(
                    memory=memory,
                    vector=embedded.heads[0] if embedded is not None else None,
                    edges=hub_edges(memory.id, extraction, at),
                    passages=embedded.passages[0] if embedded is not None else None,
                )
            ],
        )
        if embedded is not None:
            self._features.embed_hubs(collection)
        else:
            reasons.append(NOT_EMBEDDED_REASON)
        if first:
            logger.info("created collection %s", collection)
        logger.info("added resource %s to %s", resource_id, collection)
        return ResourceOutcome(resource_id, "created", memory, reasons)

    def delete_resource(self, collection: str, resource_id: str) -> None:
        """Remove a record from the index.

        Raises:
            NotFoundError: no such record in the collection.
        """
        self._checks.check_collection(collection)
        found = self._context.store.get_memories(collection, [resource_id]).get(resource_id)
        if found is None or found.source != RESOURCE_SOURCE:
            raise NotFoundError(f"no resource {resource_id!r} in this collection")
        self._context.store.delete_memory(collection, resource_id)
        logger.info("deleted resource %s from %s", resource_id, collection)
