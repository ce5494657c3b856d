"""What every job of the service shares: its state, validation, embedding, and
the learning queue that retrievals fill."""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import NamedTuple

import numpy as np
from pydantic import ValidationError

from hippocampus.config import COLLECTION_PATTERN, Limits
from hippocampus.embed import Embedder, EmbedderHealth, GuardedEmbedder
from hippocampus.embed.passages import passages
from hippocampus.embed.scope import scope, toward_scope
from hippocampus.errors import EmbeddingError, InvalidInputError, LimitExceededError
from hippocampus.extract import ConceptExtractor, Extraction
from hippocampus.extract.dedup import DedupConfig
from hippocampus.extract.quality import QualityConfig, QualityModel
from hippocampus.extract.sanitize import has_control_characters
from hippocampus.extract.turns import said
from hippocampus.learn import LearningConfig
from hippocampus.learn.tiers import TierPolicy
from hippocampus.locks import StripedLock
from hippocampus.model import HUB_EDGE, Edge, EdgeUpdate, Event, EventRetention, HubKind, NewMemory
from hippocampus.model.memory import MAX_SPEAKER_CHARS, RetrievalMeta
from hippocampus.schedule import Scheduler
from hippocampus.store import GraphStore, Vector
from hippocampus.surface.surfacer import Surfacer

# The service's one logger name, as before the split: log configuration keyed on
# "hippocampus.service" keeps covering every job.
logger = logging.getLogger("hippocampus.service")


MEMBERSHIP_WEIGHT = 0.5
"""Starting weight of a memory's edges to its domains and triggers. Below the
associative gate's 0.5 once damped, so one shared hub alone never surfaces a
memory; use and co-retrieval raise it."""
CONCEPT_WEIGHT = 0.4
"""Starting weight of a memory's edge to a concept that is a common phrase
("connection pool", "verse tragedy")."""
NAME_WEIGHT = 0.8
"""Starting weight of a memory's edge to a concept that is a proper name (a
person, a place, a product, a work): twice a common phrase's. A name says what
a memory is about more surely than a phrase, and two memories that name the
same rare thing are the bridge a multi-hop question crosses; so a walk through
a shared name is four times as strong as one through a shared phrase. Still, a
path through one shared name (0.8 × 0.8, at least halved by the hub's degree)
stays under the associative gate's 0.5."""

# \Z, not $: $ also matches before a final newline.
_ID_PATTERN = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}\Z")
_CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9_\-]{0,39}\Z")


QUALITY_MODEL_KEY = "quality_model"
TIER_PASS_KEY = "tier_pass"
FEEDBACK_COUNT_KEY = "quality_feedback"
"""State document ``{"memories": n}``: how many memories of the collection have
feedback, kept up as engagement gives memories their first feedback, and set
exactly by the tier pass and by each retraining."""

QUEUE_KEPT = 4
"""While the queue's writes fail, it keeps at most this many ``flush_at`` of
updates; what fails beyond that is dropped (see ``_requeue``)."""


NOT_EMBEDDED_REASON = (
    "stored without a vector: the embedder is unavailable; flagged for re-embedding "
    "once it recovers"
)
"""The reason given for a memory stored without a vector. The embedder's own error
stays in the log: it may name hosts or files."""


class Embedded(NamedTuple):
    """Texts embedded by passages: ``heads`` holds each text's first passage (its
    vector as a memory; for a standing instruction, leaning toward its scope),
    one row per text; ``passages`` the rows of its further passages, in order,
    or ``None`` for a text of one passage."""

    heads: Vector
    passages: list[Vector | None]


class ServiceCore:
    """The state the jobs share (set up by :class:`hippocampus.service.Hippocampus`)
    and the helpers they all use."""

    store: GraphStore
    extractor: ConceptExtractor
    limits: Limits
    embed_batch_size: int
    learning: LearningConfig
    quality_config: QualityConfig
    dedup: DedupConfig
    tiers: TierPolicy
    event_retention: EventRetention
    graph_health_max_age_s: float
    _graph_health_lock: threading.Lock
    records_min_score: float
    summary_min_score: float
    scheduler: Scheduler
    surfacer: Surfacer
    _embedder: GuardedEmbedder
    _pending: dict[str, tuple[list[EdgeUpdate], list[Event]]]
    _pending_lock: threading.Lock
    _flush_lock: threading.Lock
    _flush_due: bool
    _learning_writer: ThreadPoolExecutor
    _latencies: dict[str, deque[float]]
    _corroborations: dict[str, deque[float]]
    _feedback_lock: threading.Lock
    _feedback_grown: dict[str, int]
    _memory_lock: StripedLock

    @property
    def embedder(self) -> GuardedEmbedder:
        """The embedder, guarded: whatever goes wrong in it is an EmbeddingError,
        which costs vectors (memories wait for re-embedding, recall falls back to
        text and graph), never a write or a recall."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = (
            embedder if isinstance(embedder, GuardedEmbedder) else GuardedEmbedder(embedder)
        )

    def embedder_health(self) -> EmbedderHealth:
        """How the embedder fared on its latest call (or load)."""
        return self._embedder.health()

    def recover_embedder(self) -> EmbedderHealth:
        """Try to bring a failing embedder back (load a model that was missing, or
        embed a probe text); the memories waiting for vectors are then embedded by
        :meth:`reindex` (the server's maintenance runs it)."""
        return self._embedder.recover()

    # -- validation -------------------------------------------------------------

    def check_collection(self, collection: str) -> str:
        if not COLLECTION_PATTERN.match(collection):
            raise InvalidInputError(
                "collection names are 1-128 characters: letters, digits and _ . : @ -, "
                "starting with a letter or digit",
                field="collection",
            )
        return collection

    def check_id(self, value: str, where: str = "id") -> str:
        """An id as given by a caller (memory, resource, conversation).

        Raises:
            InvalidInputError: empty, too long, or holding control characters
                (including zero-width and bidirectional ones) or slashes.
        """
        if (
            not _ID_PATTERN.match(value)
            or len(value) > self.limits.max_id_chars
            or has_control_characters(value)
        ):
            raise InvalidInputError(
                f"ids are 1-{self.limits.max_id_chars} characters with no control "
                "characters or slashes",
                field=where,
            )
        return value

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
        if item.id is not None:
            self.check_id(item.id, f"{where}id")
        if item.conversation_id is not None:
            self.check_id(item.conversation_id, f"{where}conversation_id")
        if len(item.synthesized_from) > self.limits.max_tags:
            raise LimitExceededError(
                f"at most {self.limits.max_tags} memories in synthesized_from",
                field=f"{where}synthesized_from",
            )
        for source_id in item.synthesized_from:
            self.check_id(source_id, f"{where}synthesized_from")
        source = self._check_source(item.source, f"{where}source")
        speaker = self._check_speaker(item.speaker, f"{where}speaker")
        category = item.category.strip().lower()
        if not _CATEGORY_PATTERN.match(category):
            raise InvalidInputError(
                "category is 1-40 characters: lower-case letters, digits, _ and -",
                field=f"{where}category",
            )
        tags = self._check_names(item.tags, f"{where}tags")
        for name in ("domains", "triggers", "concepts"):
            given = getattr(item, name)
            if given is not None:
                self._check_names(given, f"{where}{name}")
        return item.model_copy(
            update={
                "content": content,
                "category": category,
                "tags": tags,
                "source": source,
                "speaker": speaker,
            }
        )

    def _check_speaker(self, speaker: str | None, where: str) -> str | None:
        """A speaker label as given: trimmed, 1-100 characters, no control characters."""
        if speaker is None:
            return None
        name = speaker.strip()
        if not name or len(name) > MAX_SPEAKER_CHARS or has_control_characters(name):
            raise InvalidInputError(
                f"speaker is 1-{MAX_SPEAKER_CHARS} characters with no control characters",
                field=where,
            )
        return name

    def _check_source(self, source: str | None, where: str) -> str | None:
        if source is None:
            return None
        name = source.strip()
        if not name or len(name) > self.limits.max_source_chars or has_control_characters(name):
            raise InvalidInputError(
                f"source is 1-{self.limits.max_source_chars} characters with no control characters",
                field=where,
            )
        return name

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
            if has_control_characters(name):
                raise InvalidInputError(
                    "values may not hold control characters (zero-width and bidirectional "
                    "ones included)",
                    field=where,
                )
            if name not in out:
                out.append(name)
        return out

    # -- reading memories -------------------------------------------------------

    def _extract(self, texts: Sequence[str]) -> list[Extraction]:
        """What each memory text is about, a conversation turn read without its
        speaker label (:func:`hippocampus.extract.turns.said`): "User" and the role
        placeholder would otherwise be concepts every turn of one side shares."""
        return self.extractor.extract_many([said(text) for text in texts])

    # -- embedding --------------------------------------------------------------

    def _embed(self, texts: Sequence[str]) -> Embedded | None:
        """Vectors for ``texts``, or ``None`` when the embedder fails."""
        try:
            return self._encode(texts)
        except EmbeddingError as e:
            logger.warning(
                "embedding failed (%s); storing %d memories for re-embedding", e.message, len(texts)
            )
            return None

    def _encode(self, texts: Sequence[str]) -> Embedded:
        """Embed each text by its passages (``limits.passage_chars``, overlapping by
        ``limits.passage_overlap``), the passages of all texts together in batches;
        a conversation turn without its speaker label (:func:`hippocampus.extract.turns.said`).

        Raises:
            EmbeddingError: the embedder failed.
        """
        size, overlap = self.limits.passage_chars, self.limits.passage_overlap
        texts = [said(text) for text in texts]
        pieces: list[str] = []
        counts: list[int] = []
        scoped: list[tuple[int, int]] = []  # (text, its scope's piece)
        for text in texts:
            cuts = passages(text, size, overlap)
            pieces.extend(text[start:end] for start, end in cuts)
            counts.append(len(cuts))
        for i, text in enumerate(texts):
            clause = scope(text)
            if clause is not None:
                scoped.append((i, len(pieces)))
                pieces.append(clause)
        if not pieces:
            return Embedded(np.zeros((0, self.embedder.dim), dtype=np.float32), [])
        vectors = self._encode_pieces(pieces)
        firsts = np.cumsum([0, *counts[:-1]])
        rest = [
            vectors[first + 1 : first + count].copy() if count > 1 else None
            for first, count in zip(firsts.tolist(), counts, strict=True)
        ]
        heads = vectors[firsts]
        for i, piece in scoped:
            heads[i] = toward_scope(heads[i], vectors[piece])
        return Embedded(heads, rest)

    def _encode_pieces(self, pieces: Sequence[str]) -> Vector:
        """One vector per piece, in order, embedded ``embed_batch_size`` at a time,
        longest first.

        A forward pass pads every text to its longest, so a batch cut in arrival
        order pays for its longest text on every row: a long memory's passages
        (the model's full 256 word pieces) make the short notes beside them cost
        as much. Cut by length, the passages go together and so do the notes.
        (Pieces that fit one batch go as they are: one pass pads them all alike.)

        Raises:
            EmbeddingError: the embedder failed.
        """
        if len(pieces) <= self.embed_batch_size:
            return np.asarray(self.embedder.encode(pieces), dtype=np.float32)
        order = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
        ordered = [pieces[i] for i in order]
        parts = [
            self.embedder.encode(ordered[i : i + self.embed_batch_size])
            for i in range(0, len(ordered), self.embed_batch_size)
        ]
        vectors = np.empty((len(pieces), self.embedder.dim), dtype=np.float32)
        vectors[order] = np.vstack(parts)
        return vectors

    def _embed_query(self, text: str) -> Vector | None:
        try:
            vector: Vector = np.asarray(self.embedder.encode([text])[0], dtype=np.float32)
        except EmbeddingError:
            logger.warning("query embedding failed; surfacing by text and graph only")
            return None
        return vector

    # -- the learning queue -----------------------------------------------------

    def _learn(self, collection: str, updates: list[EdgeUpdate], event: Event) -> None:
        """Queue what a retrieval taught; written in batches (see flush_learning).
        A full queue is written by the learning writer, never on the recall's
        thread: a write can wait on other writers' locks (on Neo4j, deadlock
        retries of several seconds), which no recall should."""
        with self._pending_lock:
            pending = self._pending.setdefault(collection, ([], []))
            pending[0].extend(updates)
            pending[1].append(event)
            size = sum(len(u) for u, _ in self._pending.values())
            due = size >= self.learning.flush_at and not self._flush_due
            if due:
                self._flush_due = True
        if due:
            self._learning_writer.submit(self._flush_queued)

    def _flush_queued(self) -> None:
        """The learning writer's flush: its errors are logged (the updates stay
        queued for the next flush), since no caller waits for them."""
        with self._pending_lock:
            self._flush_due = False
        try:
            self.flush_learning()
        except Exception:
            logger.exception("writing queued retrieval learning failed; it stays queued")

    def _queued(self, collection: str, event_type: str = "retrieval") -> int:
        """Events of a type queued for the collection and not yet written."""
        with self._pending_lock:
            pending = self._pending.get(collection)
            return sum(1 for e in pending[1] if e.type == event_type) if pending else 0

    def flush_learning(self) -> int:
        """Write queued retrieval reinforcements and events. Bare retrievals are
        batched so a recall never waits on a disk sync; a crash loses at most the
        unflushed batch of this weak, derived signal, never a memory.

        Returns:
            How many edge updates were written.
        """
        with self._flush_lock:  # a flush returns once all queued before it is written
            with self._pending_lock:
                pending, self._pending = self._pending, {}
            written = 0
            for collection, (updates, events) in list(pending.items()):
                try:
                    self.store.reinforce_edges(collection, updates)
                except Exception:
                    self._requeue(pending, collection, updates_written=False)
                    raise
                try:
                    self.store.append_events(collection, events)
                except Exception:
                    self._requeue(pending, collection, updates_written=True)
                    raise
                written += len(updates)
                del pending[collection]
            return written

    def _requeue(
        self,
        unwritten: dict[str, tuple[list[EdgeUpdate], list[Event]]],
        failed: str,
        *,
        updates_written: bool,
    ) -> None:
        """Put what a failed flush did not write back in front of the queue: the
        collection that failed (without its updates when they were written, so none
        is applied twice) and the collections after it. While writes keep failing
        (a full disk) the queue holds at most :data:`QUEUE_KEPT` flushes' worth;
        beyond that the batch that failed is dropped, as a crash would drop it."""
        if updates_written:
            unwritten[failed] = ([], unwritten[failed][1])
        with self._pending_lock:
            kept = sum(len(u) for u, _ in (*unwritten.values(), *self._pending.values()))
            if kept > QUEUE_KEPT * self.learning.flush_at:
                dropped = sum(len(u) for u, _ in unwritten.values())
                logger.warning("dropped %d queued retrieval updates: writes keep failing", dropped)
                return
            for collection, (updates, events) in unwritten.items():
                queued = self._pending.get(collection, ([], []))
                self._pending[collection] = (updates + queued[0], events + queued[1])

    # -- used by several jobs ---------------------------------------------------

    def quality_model(self, collection: str) -> QualityModel:
        """The collection's quality model: the last one trained and kept, else the
        prior. Read from the store on every call, so processes sharing a store
        share it."""
        state = self.store.get_states(collection, [QUALITY_MODEL_KEY]).get(QUALITY_MODEL_KEY)
        if state is None:
            return QualityModel()
        try:
            return QualityModel.model_validate(state)
        except ValidationError:
            logger.warning(
                "the stored quality model of %s is unreadable; using the prior", collection
            )
            return QualityModel()

    def embed_hubs(
        self,
        collection: str,
        *,
        batch_size: int = 512,
        encode: Callable[[Sequence[str]], Vector] | None = None,
    ) -> int:
        """Embed the names of hub nodes that have no vector from the current model,
        so a query can anchor on concepts it paraphrases. Best effort: a failing
        embedder leaves them for the next write or reindex.

        Args:
            collection: whose hubs.
            batch_size: names per store read and embedding call.
            encode: the names' vectors (the embedder's ``encode`` unless given:
                ingest passes vectors it embedded ahead).

        Returns:
            How many hub names were embedded.
        """
        encode = encode or self.embedder.encode
        done = 0
        while True:
            hubs = self.store.hubs_without_vectors(collection, self.embedder.name, batch_size)
            if not hubs:
                return done
            try:
                vectors = encode([name for _, name in hubs])
            except EmbeddingError:
                logger.warning("embedding %d hub names failed; will retry later", len(hubs))
                return done
            self.store.set_hub_vectors(
                collection,
                [
                    (kind, name, vectors[i], self.embedder.name)
                    for i, (kind, name) in enumerate(hubs)
                ],
            )
            done += len(hubs)
            if len(hubs) < batch_size:
                return done


def hub_edges(memory_id: str, extraction: Extraction, at: datetime) -> list[Edge]:
    """A memory's edges to the domains, triggers and concepts ``extraction`` names,
    at their starting weights."""
    hubs = {
        HubKind.DOMAIN: extraction.domains,
        HubKind.TRIGGER: extraction.triggers,
        HubKind.CONCEPT: extraction.concepts,
    }
    proper = set(extraction.names)
    return [
        Edge(
            source=memory_id,
            type=HUB_EDGE[kind],
            target=name,
            weight=_membership_weight(kind, name in proper),
            created_at=at,
        )
        for kind, values in hubs.items()
        for name in values
    ]


def _membership_weight(kind: HubKind, proper: bool) -> float:
    if kind is not HubKind.CONCEPT:
        return MEMBERSHIP_WEIGHT
    return NAME_WEIGHT if proper else CONCEPT_WEIGHT


def retrieval_extraction(retrieval: RetrievalMeta) -> Extraction:
    """The hubs a memory's metadata names, as the extraction that made its edges
    (to make them again)."""
    return Extraction(
        domains=tuple(retrieval.domains),
        triggers=tuple(retrieval.triggers),
        concepts=tuple(retrieval.concepts),
        names=tuple(retrieval.names),
    )
