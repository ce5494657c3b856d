"""Hippocampus: the facade that composes store, embedder and extractor.

Entry points (the API, the CLI, agents using the library) talk to this class
only. It validates input, embeds and extracts outside the store's write lock,
and hands the store complete records, so every write is all-or-nothing.
"""

from __future__ import annotations

import base64
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from engine.config import COLLECTION_PATTERN, HippoSettings, Limits
from engine.embed import Embedder, make_embedder
from engine.errors import (
    ConfigError,
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
)
from engine.extract import ConceptExtractor, Extraction, make_extractor, merge_given
from engine.model import (
    HUB_EDGE,
    Edge,
    HubKind,
    Memory,
    MemoryPatch,
    NewMemory,
    RecallFilters,
    RecallHit,
    RecallResult,
    RetrievalMeta,
    content_hash,
    utcnow,
)
from engine.store import GraphStore, MemoryRecord, Vector

logger = logging.getLogger(__name__)

MEMBERSHIP_WEIGHT = 0.5
"""Starting weight of a memory's edges to its domains, triggers and concepts.
Below the associative gate's 0.5 once damped, so one shared concept alone never
surfaces a memory; use and co-retrieval raise it."""

_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}$")
_CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_\-]{0,39}$")
EXPORT_FORMAT = "hippocampus-jsonl/1"


@dataclass(frozen=True)
class RememberOutcome:
    """What happened to one memory given to :meth:`Hippocampus.remember`.

    Attributes:
        memory: the stored memory (the existing one for a duplicate).
        created: ``False`` when the content was already stored.
        duplicate_of: id of the memory this one duplicates, if any.
        embedded: whether a vector was stored; ``False`` means the memory waits
            for re-embedding (``hippo reindex``) but is stored all the same.
    """

    memory: Memory
    created: bool
    duplicate_of: str | None = None
    embedded: bool = True
    reasons: list[str] = field(default_factory=list)


class CollectionStats(BaseModel):
    collection: str
    memories: int
    by_category: dict[str, int]
    by_tier: dict[str, int]
    pending_embeddings: int
    hubs: dict[str, int]
    edges: dict[str, int]
    events: int
    embedder: str
    extractor: str


class ImportReport(BaseModel):
    memories: int = 0
    edges: int = 0
    skipped_existing: int = 0


class _ExportedMemory(BaseModel):
    type: str = Field(pattern="^memory$")
    memory: Memory
    vector: str | None = None


class _ExportedEdge(BaseModel):
    type: str = Field(pattern="^edge$")
    edge: Edge


class Hippocampus:
    """The memory engine.

    Args:
        store: where memories live.
        embedder: turns text into vectors.
        extractor: finds domains, triggers and concepts.
        limits: input size limits.
        embed_batch_size: texts per embedding call when remembering many.
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        extractor: ConceptExtractor,
        *,
        limits: Limits | None = None,
        embed_batch_size: int = 64,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.limits = limits or Limits()
        self.embed_batch_size = embed_batch_size

    @classmethod
    def from_settings(cls, settings: HippoSettings) -> Hippocampus:
        """Build the engine the settings describe (store, embedder, extractor)."""
        store: GraphStore
        if settings.store == "embedded":
            from engine.store.embedded import EmbeddedStore

            store = EmbeddedStore(settings.data_dir, synchronous=settings.sqlite_synchronous)
        else:
            raise ConfigError("HIPPO_STORE=neo4j: the Neo4j store is not available in this build")
        try:
            embedder = make_embedder(
                settings.embedder,
                model_path=settings.model_path,
                batch_size=settings.embed_batch_size,
                precision=settings.embed_precision,
            )
            extractor = make_extractor()
        except Exception:
            store.close()
            raise
        return cls(
            store,
            embedder,
            extractor,
            limits=settings.limits,
            embed_batch_size=settings.embed_batch_size,
        )

    def close(self) -> None:
        self.store.close()

    # -- validation -------------------------------------------------------------

    def check_collection(self, collection: str) -> str:
        if not COLLECTION_PATTERN.match(collection):
            raise InvalidInputError(
                "collection names are 1-128 characters: letters, digits and _ . : @ -, "
                "starting with a letter or digit",
                field="collection",
            )
        return collection

    def _check_new(self, item: NewMemory, where: str) -> NewMemory:
        content = item.content.strip()
        if not content:
            raise InvalidInputError("content is empty", field=f"{where}content")
        if len(content) > self.limits.max_content_chars:
            raise LimitExceededError(
                f"content has {len(content)} characters; the limit is "
                f"{self.limits.max_content_chars}",
                field=f"{where}content",
            )
        if item.id is not None and not _ID_PATTERN.match(item.id):
            raise InvalidInputError(
                "ids are 1-200 characters with no control characters or slashes",
                field=f"{where}id",
            )
        category = item.category.strip().lower()
        if not _CATEGORY_PATTERN.match(category):
            raise InvalidInputError(
                "category is 1-40 characters: lower-case letters, digits, _ and -",
                field=f"{where}category",
            )
        tags = self._check_names(item.tags, f"{where}tags")
        return item.model_copy(update={"content": content, "category": category, "tags": tags})

    def _check_names(self, values: Sequence[str], where: str) -> list[str]:
        if len(values) > self.limits.max_tags:
            raise LimitExceededError(f"at most {self.limits.max_tags} values", field=where)
        out: list[str] = []
        for value in values:
            name = value.strip()
            if not name or len(name) > self.limits.max_tag_chars:
                raise InvalidInputError(
                    f"each value is 1-{self.limits.max_tag_chars} characters", field=where
                )
            if name not in out:
                out.append(name)
        return out

    # -- remembering ------------------------------------------------------------

    def remember(
        self, collection: str, item: NewMemory, *, now: datetime | None = None
    ) -> RememberOutcome:
        """Store one memory. See :meth:`remember_many`."""
        return self._remember(collection, [item], now=now, batch=False)[0]

    def remember_many(
        self, collection: str, items: Sequence[NewMemory], *, now: datetime | None = None
    ) -> list[RememberOutcome]:
        """Validate, embed, extract and store memories, all or nothing.

        Content already stored in the collection (same normalized text) is not
        stored twice: its outcome names the existing memory in ``duplicate_of``.
        If the embedder fails, the memories are stored without vectors and
        flagged for re-embedding; they are never dropped.

        Raises:
            InvalidInputError: an item is invalid (``field`` says which); nothing
                is written.
            ConflictError: a caller-given id already exists; nothing is written.
        """
        return self._remember(collection, items, now=now, batch=True)

    def _remember(
        self,
        collection: str,
        items: Sequence[NewMemory],
        *,
        now: datetime | None,
        batch: bool,
    ) -> list[RememberOutcome]:
        self.check_collection(collection)
        if not items:
            return []
        if len(items) > self.limits.max_batch:
            raise LimitExceededError(
                f"{len(items)} memories in one batch; the limit is {self.limits.max_batch}",
                field="memories",
            )
        at = now or utcnow()
        checked = [
            self._check_new(item, f"memories[{i}]." if batch else "")
            for i, item in enumerate(items)
        ]

        # Duplicates of stored content, and repeats inside the batch, are not stored again.
        outcomes: list[RememberOutcome | None] = [None] * len(checked)
        fresh: list[tuple[int, NewMemory, str]] = []
        first_in_batch: dict[str, int] = {}
        for i, item in enumerate(checked):
            digest = content_hash(item.content)
            existing = self.store.find_by_hash(collection, digest)
            if existing:
                found = self.store.get_memories(collection, existing[:1])
                if found:
                    mem = found[existing[0]]
                    outcomes[i] = RememberOutcome(
                        memory=mem,
                        created=False,
                        duplicate_of=mem.id,
                        embedded=not mem.needs_embedding,
                        reasons=["the same content is already stored"],
                    )
                    continue
            if digest in first_in_batch:
                continue
            first_in_batch[digest] = i
            fresh.append((i, item, digest))

        seen_ids: set[str] = set()
        for i, item, _ in fresh:
            if item.id is not None:
                if item.id in seen_ids:
                    raise ConflictError(
                        f"id {item.id!r} appears twice in the batch",
                        field=f"memories[{i}].id" if batch else "id",
                    )
                seen_ids.add(item.id)

        texts = [item.content for _, item, _ in fresh]
        vectors, embed_error = self._embed(texts)
        extractions = self.extractor.extract_many(texts) if texts else []

        records: list[MemoryRecord] = []
        for n, (i, item, digest) in enumerate(fresh):
            extraction = merge_given(
                extractions[n],
                domains=item.domains,
                triggers=item.triggers,
                concepts=item.concepts,
            )
            memory = Memory(
                id=item.id or str(uuid.uuid4()),
                collection=collection,
                content=item.content,
                category=item.category,
                importance=item.importance,
                source=item.source,
                tags=item.tags,
                created_at=at,
                updated_at=at,
                content_hash=digest,
                embedding_model=self.embedder.name if vectors is not None else None,
                retrieval=RetrievalMeta(
                    domains=list(extraction.domains),
                    triggers=list(extraction.triggers),
                    concepts=list(extraction.concepts),
                    conversation_ids=[item.conversation_id] if item.conversation_id else [],
                ),
            )
            vector = vectors[n] if vectors is not None else None
            records.append(
                MemoryRecord(memory=memory, vector=vector, edges=_hub_edges(memory.id, extraction))
            )
            reasons = [f"stored without a vector: {embed_error}"] if embed_error else []
            outcomes[i] = RememberOutcome(
                memory=memory, created=True, embedded=vector is not None, reasons=reasons
            )

        if records:
            self.store.add_memories(collection, records)
        # Repeats inside the batch point at the memory stored for their first occurrence.
        for i, item in enumerate(checked):
            if outcomes[i] is None:
                first = outcomes[first_in_batch[content_hash(item.content)]]
                assert first is not None
                outcomes[i] = RememberOutcome(
                    memory=first.memory,
                    created=False,
                    duplicate_of=first.memory.id,
                    embedded=first.embedded,
                    reasons=["the same content appears earlier in the batch"],
                )
        return [o for o in outcomes if o is not None]

    def _embed(self, texts: Sequence[str]) -> tuple[Vector | None, str | None]:
        """Vectors for ``texts``, or ``(None, reason)`` when the embedder fails."""
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32), None
        try:
            parts = [
                self.embedder.encode(texts[i : i + self.embed_batch_size])
                for i in range(0, len(texts), self.embed_batch_size)
            ]
        except EmbeddingError as e:
            logger.warning("embedding failed; storing %d memories for re-embedding", len(texts))
            return None, e.message
        return np.vstack(parts).astype(np.float32, copy=False), None

    # -- reading and editing ----------------------------------------------------

    def get(self, collection: str, memory_id: str) -> Memory:
        """The memory, or NotFoundError (also for ids of other collections)."""
        self.check_collection(collection)
        found = self.store.get_memories(collection, [memory_id])
        if memory_id not in found:
            raise NotFoundError(f"no memory {memory_id!r} in this collection")
        return found[memory_id]

    def update(
        self,
        collection: str,
        memory_id: str,
        patch: MemoryPatch,
        *,
        now: datetime | None = None,
    ) -> Memory:
        """Edit a memory. Content that changes is re-embedded and re-extracted
        (its hub edges follow); unchanged content is never re-embedded.

        Raises:
            NotFoundError: no such memory.
            InvalidInputError: a field is invalid; nothing is written.
        """
        current = self.get(collection, memory_id)
        at = now or utcnow()
        update: dict[str, Any] = {"updated_at": at}
        retrieval = current.retrieval.model_copy()
        vector: Vector | None = None
        content_changed = False
        if patch.content is not None:
            checked = self._check_new(NewMemory(content=patch.content), "")
            digest = content_hash(checked.content)
            if digest != current.content_hash:
                content_changed = True
                update["content"] = checked.content
                update["content_hash"] = digest
                vectors, _ = self._embed([checked.content])
                vector = vectors[0] if vectors is not None else None
                update["embedding_model"] = self.embedder.name if vector is not None else None
                extraction = self.extractor.extract_many([checked.content])[0]
                retrieval.domains = list(extraction.domains)
                retrieval.triggers = list(extraction.triggers)
                retrieval.concepts = list(extraction.concepts)
        if patch.category is not None:
            update["category"] = self._check_new(
                NewMemory(content="x", category=patch.category), ""
            ).category
        if patch.importance is not None:
            update["importance"] = patch.importance
        if patch.tier is not None:
            update["tier"] = patch.tier
        if patch.source is not None:
            update["source"] = patch.source
        if patch.tags is not None:
            update["tags"] = self._check_names(patch.tags, "tags")
        given = merge_given(
            Extraction(
                domains=tuple(retrieval.domains),
                triggers=tuple(retrieval.triggers),
                concepts=tuple(retrieval.concepts),
            ),
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
        update["retrieval"] = retrieval
        try:
            memory = Memory.model_validate({**current.model_dump(), **update})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise InvalidInputError(f"{where}: {first['msg']}", field=where) from e
        if content_changed and vector is None:
            # The old vector describes the old text: drop it so the memory is re-embedded.
            memory = memory.model_copy(update={"embedding_model": None})
        self.store.replace_memory(
            collection,
            MemoryRecord(
                memory=memory,
                vector=vector,
                edges=_hub_edges(memory.id, given) if hubs_changed else (),
            ),
            replace_edges=hubs_changed,
        )
        return memory

    def forget(self, collection: str, memory_id: str) -> None:
        """Delete a memory with its edges.

        Raises:
            NotFoundError: no such memory.
        """
        self.check_collection(collection)
        if not self.store.delete_memory(collection, memory_id):
            raise NotFoundError(f"no memory {memory_id!r} in this collection")

    # -- recall -----------------------------------------------------------------

    def recall(
        self,
        collection: str,
        query: str,
        *,
        limit: int = 10,
        filters: RecallFilters | None = None,
        min_score: float | None = None,
        query_vector: Vector | None = None,
    ) -> RecallResult:
        """Memories most similar to ``query``, best first.

        Args:
            limit: how many results at most.
            filters: domains, categories, tags, tiers (active only by default),
                a conversation to exclude.
            min_score: drop results scoring below this (none dropped by default).
            query_vector: a precomputed embedding of ``query`` (skips embedding).

        Raises:
            InvalidInputError: an empty or oversized query, or a bad limit.
            EmbeddingError: the query could not be embedded.
        """
        self.check_collection(collection)
        text = query.strip()
        if not text:
            raise InvalidInputError("query is empty", field="query")
        if len(text) > self.limits.max_query_chars:
            raise LimitExceededError(
                f"query has {len(text)} characters; the limit is {self.limits.max_query_chars}",
                field="query",
            )
        if not 1 <= limit <= self.limits.max_recall_limit:
            raise InvalidInputError(f"limit is 1-{self.limits.max_recall_limit}", field="limit")
        if query_vector is None:
            query_vector = self.embedder.encode([text])[0]
        found = self.store.search_vectors(
            collection,
            query_vector,
            model=self.embedder.name,
            k=limit,
            filters=filters or RecallFilters(),
        )
        if min_score is not None:
            found = [(mid, score) for mid, score in found if score >= min_score]
        memories = self.store.get_memories(collection, [mid for mid, _ in found])
        hits = [
            RecallHit(memory=memories[mid], score=score, similarity=score)
            for mid, score in found
            if mid in memories
        ]
        return RecallResult(query=text, hits=hits, embedder=self.embedder.name)

    # -- maintenance ------------------------------------------------------------

    def reindex(
        self,
        collection: str,
        *,
        batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Embed every memory without a vector from the current model. Safe to
        stop and run again: each batch is stored as it is done.

        Returns:
            How many memories were embedded.

        Raises:
            EmbeddingError: the embedder failed (what was done so far is kept).
        """
        self.check_collection(collection)
        done = 0
        while True:
            pending = self.store.pending_embeddings(collection, self.embedder.name, batch_size)
            if not pending:
                return done
            vectors = self.embedder.encode([m.content for m in pending])
            self.store.set_vectors(
                collection,
                [(m.id, vectors[i], self.embedder.name) for i, m in enumerate(pending)],
            )
            done += len(pending)
            if progress is not None:
                progress(len(pending))

    def stats(self, collection: str) -> CollectionStats:
        self.check_collection(collection)
        s = self.store.stats(collection)
        return CollectionStats(
            collection=collection,
            memories=s.memories,
            by_category=s.by_category,
            by_tier=s.by_tier,
            pending_embeddings=s.pending_embeddings,
            hubs=s.hubs,
            edges=s.edges,
            events=s.events,
            embedder=self.embedder.name,
            extractor=self.extractor.name,
        )

    def collections(self) -> list[str]:
        return self.store.list_collections()

    # -- backup -----------------------------------------------------------------

    def export(self, collection: str) -> Iterator[dict[str, Any]]:
        """The collection as JSON-ready records: a header, then every memory with its
        vector, then every edge. :meth:`import_records` restores it exactly."""
        self.check_collection(collection)
        yield {"type": "header", "format": EXPORT_FORMAT, "collection": collection}
        edge_ids: list[str] = []
        batch: list[Memory] = []

        def flush() -> Iterator[dict[str, Any]]:
            vectors = self.store.get_vectors(collection, [m.id for m in batch])
            for m in batch:
                vec = vectors.get(m.id)
                yield {
                    "type": "memory",
                    "memory": m.model_dump(mode="json"),
                    "vector": _encode_vector(vec) if vec is not None else None,
                }
            edge_ids.extend(m.id for m in batch)
            batch.clear()

        for memory in self.store.iter_memories(collection):
            batch.append(memory)
            if len(batch) >= 500:
                yield from flush()
        yield from flush()
        seen: set[tuple[str, str, str]] = set()
        for mid in edge_ids:
            for edge in self.store.edges_of(collection, mid):
                key = (edge.type.value, edge.source, edge.target)
                if key not in seen:
                    seen.add(key)
                    yield {"type": "edge", "edge": edge.model_dump(mode="json")}

    def import_records(
        self,
        collection: str,
        records: Iterable[dict[str, Any]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Load records written by :meth:`export` into ``collection`` (which may
        differ from the exported one). Memories whose id already exists are
        skipped; their edges are restored with the weights they had.

        Raises:
            InvalidInputError: a record is malformed (``field`` names its line).
        """
        self.check_collection(collection)
        report = ImportReport()
        pending: list[MemoryRecord] = []
        edges: list[Edge] = []

        def flush() -> None:
            if not pending:
                return
            ids = [r.memory.id for r in pending]
            existing = self.store.get_memories(collection, ids)
            fresh = [r for r in pending if r.memory.id not in existing]
            report.skipped_existing += len(pending) - len(fresh)
            if fresh:
                self.store.add_memories(collection, fresh)
            report.memories += len(fresh)
            if progress is not None:
                progress(len(pending))
            pending.clear()

        for line, record in enumerate(records, start=1):
            kind = record.get("type") if isinstance(record, dict) else None
            try:
                if kind == "header":
                    if record.get("format") != EXPORT_FORMAT:
                        raise InvalidInputError(
                            f"unknown export format {record.get('format')!r}", field=f"line {line}"
                        )
                elif kind == "memory":
                    item = _ExportedMemory.model_validate(record)
                    mem = item.memory.model_copy(update={"collection": collection})
                    vec = _decode_vector(item.vector) if item.vector is not None else None
                    if vec is None:
                        mem = mem.model_copy(update={"embedding_model": None})
                    pending.append(MemoryRecord(memory=mem, vector=vec, edges=_hub_edges_of(mem)))
                    if len(pending) >= 500:
                        flush()
                elif kind == "edge":
                    edges.append(_ExportedEdge.model_validate(record).edge)
                else:
                    raise InvalidInputError(f"unknown record type {kind!r}", field=f"line {line}")
            except (ValidationError, ValueError) as e:
                raise InvalidInputError(f"line {line}: {e}", field=f"line {line}") from e
        flush()
        for i in range(0, len(edges), 1000):
            self.store.upsert_edges(collection, edges[i : i + 1000])
        report.edges = len(edges)
        return report


def _hub_edges(memory_id: str, extraction: Extraction) -> list[Edge]:
    names = {
        HubKind.DOMAIN: extraction.domains,
        HubKind.TRIGGER: extraction.triggers,
        HubKind.CONCEPT: extraction.concepts,
    }
    return [
        Edge(source=memory_id, type=HUB_EDGE[kind], target=name, weight=MEMBERSHIP_WEIGHT)
        for kind, values in names.items()
        for name in values
    ]


def _hub_edges_of(memory: Memory) -> list[Edge]:
    r = memory.retrieval
    return _hub_edges(
        memory.id,
        Extraction(
            domains=tuple(r.domains), triggers=tuple(r.triggers), concepts=tuple(r.concepts)
        ),
    )


def _encode_vector(vector: Vector) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode_vector(text: str) -> Vector:
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 4:
        raise ValueError("a vector's byte length is not a multiple of 4")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


__all__ = [
    "EXPORT_FORMAT",
    "MEMBERSHIP_WEIGHT",
    "CollectionStats",
    "Hippocampus",
    "ImportReport",
    "RememberOutcome",
]
