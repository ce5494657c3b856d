"""The stream's way of remembering: each batch admitted, extracted and embedded
ahead of its turn (see :meth:`RememberingService.remember_batches
<hippocampus.services.remembering.RememberingService.remember_batches>`), and a
single call's way, which embeds and extracts when the write asks."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from hippocampus.errors import EmbeddingError
from hippocampus.extract import Extraction, merge_given
from hippocampus.extract.quality import QualityConfig, QualityModel, assess
from hippocampus.services.checks import Prepared
from hippocampus.services.context import Context
from hippocampus.services.features import Embedded, TextFeatures
from hippocampus.store import Vector

# The engine's one logger name: log configuration keyed on "hippocampus.service"
# covers every service.
logger = logging.getLogger("hippocampus.service")


class BatchFeatures(Protocol):
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
class Inline:
    """Embeds and extracts when asked: a single call's way."""

    context: Context
    features: TextFeatures

    def embed(self, texts: Sequence[str]) -> Embedded | None:
        return self.features.embed(texts)

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return self.features.extract(texts)

    def encode_hubs(self, names: Sequence[str]) -> Vector:
        return self.context.embedder.encode(names)


@dataclass
class Ahead:
    """A batch of a stream, admitted, extracted and embedded before its turn.

    The first stage admits it (as a single call would, errors and all) and
    extracts the contents its new memories will need as far as can be told
    without the store: each distinct content the gate accepts. The second embeds
    those contents and the hub names their extractions bring. At the batch's
    turn the write takes what it needs from here; a content the store's state by
    then makes new after all (another writer removed what it repeated) is
    embedded or extracted then, so what is written is what a single call writes.
    """

    context: Context
    features: TextFeatures
    prepared: list[Prepared]
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
            more = self.features.embed(missing)
            if more is None:
                return None
            self.vectors.update(
                zip(missing, zip(more.heads, more.passages, strict=True), strict=True)
            )
        if not texts:
            return Embedded(np.zeros((0, self.context.embedder.dim), dtype=np.float32), [])
        rows = [self.vectors[t] for t in texts]
        return Embedded(np.stack([head for head, _ in rows]), [rest for _, rest in rows])

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.extractions]
        if missing:
            found = self.features.extract(missing)
            self.extractions.update(zip(missing, found, strict=True))
        return [self.extractions[t] for t in texts]

    def encode_hubs(self, names: Sequence[str]) -> Vector:
        missing = [n for n in dict.fromkeys(names) if n not in self.hub_vectors]
        if missing:
            found = self.context.embedder.encode(missing)
            self.hub_vectors.update(zip(missing, found, strict=True))
        return np.stack([self.hub_vectors[n] for n in names])


def admit_ahead(
    prepared: list[Prepared],
    model: QualityModel,
    quality_config: QualityConfig,
    context: Context,
    features: TextFeatures,
) -> Ahead:
    """A stream's first stage, once the batch is admitted (``prepared``): extract
    what it will likely create (the gate's model as the stream began: a model
    retrained since only changes what is extracted ahead, not what is written)."""
    accepted: dict[str, Prepared] = {}
    for p in prepared:
        if p.digest in accepted:
            continue
        if assess(p.item.content, p.item.source, model, quality_config).accepted:
            accepted[p.digest] = p
    texts = [p.item.content for p in accepted.values()]
    extractions = features.extract(texts) if texts else []
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
    return Ahead(context, features, prepared, texts, by_text, list(names))


def embed_ahead(run: list[Ahead], embedded_names: set[str], features: TextFeatures) -> None:
    """A stream's second stage: embed the contents of a run of batches and the
    hub names they bring, together, sorted by length. A name is embedded once
    per stream (``embedded_names``); a failing embedder leaves the run's
    batches to be stored without vectors, as a single call would."""
    texts = list(dict.fromkeys(t for ahead in run for t in ahead.texts))
    names = [
        n for n in dict.fromkeys(n for ahead in run for n in ahead.names) if n not in embedded_names
    ]
    try:
        embedded = features.encode([*texts, *names])
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
