"""What the engine reads from a text: its vectors, by passages, and what it is
about (its extraction); and the vectors of hub names."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from hippocampus.embed import EmbedderHealth
from hippocampus.embed.passages import passages
from hippocampus.embed.scope import scope, toward_scope
from hippocampus.errors import EmbeddingError
from hippocampus.extract import Extraction
from hippocampus.extract.turns import said
from hippocampus.services.context import Context
from hippocampus.store import Vector

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


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


class TextFeatures:
    """Embeds and extracts for every service, with the shared embedder and
    extractor.

    Args:
        context: the shared parts.
        embed_batch_size: texts per embedding call when remembering many.
    """

    def __init__(self, context: Context, *, embed_batch_size: int = 64) -> None:
        self._context = context
        self.embed_batch_size = embed_batch_size

    def health(self) -> EmbedderHealth:
        """How the embedder fared on its latest call (or load)."""
        return self._context.embedder.health()

    def recover(self) -> EmbedderHealth:
        """Try to bring a failing embedder back (load a model that was missing, or
        embed a probe text); the memories waiting for vectors are then embedded by
        :meth:`~hippocampus.services.maintenance.MaintenanceService.reindex` (the
        server's maintenance runs it)."""
        return self._context.embedder.recover()

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """What each memory text is about, a conversation turn read without its
        speaker label (:func:`hippocampus.extract.turns.said`): "User" and the role
        placeholder would otherwise be concepts every turn of one side shares."""
        return self._context.extractor.extract_many([said(text) for text in texts])

    def embed(self, texts: Sequence[str]) -> Embedded | None:
        """Vectors for ``texts``, or ``None`` when the embedder fails."""
        try:
            return self.encode(texts)
        except EmbeddingError as e:
            logger.warning(
                "embedding failed (%s); storing %d memories for re-embedding", e.message, len(texts)
            )
            return None

    def encode(self, texts: Sequence[str]) -> Embedded:
        """Embed each text by its passages (``limits.passage_chars``, overlapping by
        ``limits.passage_overlap``), the passages of all texts together in batches;
        a conversation turn without its speaker label (:func:`hippocampus.extract.turns.said`).

        Raises:
            EmbeddingError: the embedder failed.
        """
        size, overlap = self._context.limits.passage_chars, self._context.limits.passage_overlap
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
            return Embedded(np.zeros((0, self._context.embedder.dim), dtype=np.float32), [])
        vectors = self.encode_pieces(pieces)
        firsts = np.cumsum([0, *counts[:-1]])
        rest = [
            vectors[first + 1 : first + count].copy() if count > 1 else None
            for first, count in zip(firsts.tolist(), counts, strict=True)
        ]
        heads = vectors[firsts]
        for i, piece in scoped:
            heads[i] = toward_scope(heads[i], vectors[piece])
        return Embedded(heads, rest)

    def encode_pieces(self, pieces: Sequence[str]) -> Vector:
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
            return np.asarray(self._context.embedder.encode(pieces), dtype=np.float32)
        order = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
        ordered = [pieces[i] for i in order]
        parts = [
            self._context.embedder.encode(ordered[i : i + self.embed_batch_size])
            for i in range(0, len(ordered), self.embed_batch_size)
        ]
        vectors = np.empty((len(pieces), self._context.embedder.dim), dtype=np.float32)
        vectors[order] = np.vstack(parts)
        return vectors

    def embed_query(self, text: str) -> Vector | None:
        try:
            vector: Vector = np.asarray(self._context.embedder.encode([text])[0], dtype=np.float32)
        except EmbeddingError:
            logger.warning("query embedding failed; surfacing by text and graph only")
            return None
        return vector

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
        encode = encode or self._context.embedder.encode
        done = 0
        while True:
            hubs = self._context.store.hubs_without_vectors(
                collection, self._context.embedder.name, batch_size
            )
            if not hubs:
                return done
            try:
                vectors = encode([name for _, name in hubs])
            except EmbeddingError:
                logger.warning("embedding %d hub names failed; will retry later", len(hubs))
                return done
            self._context.store.set_hub_vectors(
                collection,
                [
                    (kind, name, vectors[i], self._context.embedder.name)
                    for i, (kind, name) in enumerate(hubs)
                ],
            )
            done += len(hubs)
            if len(hubs) < batch_size:
                return done
