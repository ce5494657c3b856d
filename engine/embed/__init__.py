"""Embedders: the protocol, a sentence-transformers model, a deterministic hashing one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from engine.embed.base import Embedder, normalize_rows
from engine.embed.hashing import HashingEmbedder
from engine.embed.sentence_transformer import Precision, SentenceTransformerEmbedder
from engine.errors import ConfigError

logger = logging.getLogger(__name__)


def make_embedder(
    kind: Literal["minilm", "hashing"],
    *,
    model_path: Path | None = None,
    batch_size: int = 64,
    precision: Precision = "auto",
    fallback: bool = True,
) -> Embedder:
    """Build the configured embedder.

    With ``fallback`` a missing model degrades to :class:`HashingEmbedder` with a
    warning instead of failing; callers report which one they got (``.name``).
    """
    if kind == "hashing":
        return HashingEmbedder()
    try:
        return SentenceTransformerEmbedder(model_path, batch_size=batch_size, precision=precision)
    except ConfigError as e:
        if not fallback:
            raise
        logger.warning("embedding model unavailable (%s); using the hashing embedder", e)
        return HashingEmbedder()


__all__ = [
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "make_embedder",
    "normalize_rows",
]
