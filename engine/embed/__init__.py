"""Embedders: the protocol, a sentence-transformers model, a deterministic hashing
one, and the guard that makes their failures soft."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from hippocampus.embed.base import Embedder, normalize_rows
from hippocampus.embed.guard import EmbedderHealth, GuardedEmbedder, UnavailableEmbedder
from hippocampus.embed.hashing import HashingEmbedder
from hippocampus.embed.sentence_transformer import (
    DEFAULT_MODEL_NAME,
    Precision,
    SentenceTransformerEmbedder,
)
from hippocampus.errors import ConfigError

logger = logging.getLogger(__name__)

_DEFAULT_DIM = 384
"""all-MiniLM-L6-v2's: what a model that cannot be loaded is taken to have."""


def model_name(kind: Literal["minilm", "hashing"], model_path: Path | None = None) -> str:
    """The name :func:`make_embedder` gives its embedder, known without loading a model."""
    if kind == "hashing":
        return HashingEmbedder().name
    return DEFAULT_MODEL_NAME if model_path is None else model_path.name


def make_embedder(
    kind: Literal["minilm", "hashing"],
    *,
    model_path: Path | None = None,
    batch_size: int = 64,
    precision: Precision = "auto",
    fallback: bool = True,
) -> Embedder:
    """Build the configured embedder.

    With ``fallback`` a model that cannot be loaded gives, with a warning, an
    :class:`UnavailableEmbedder` under the model's own name: the engine starts,
    stores memories flagged for re-embedding and recalls by text and graph,
    and :meth:`GuardedEmbedder.recover` loads the model once it is there. (Not
    the hashing embedder: its vectors would stand in for the model's, and
    maintenance would re-embed every stored memory with it.)
    """
    if kind == "hashing":
        return HashingEmbedder()

    def load() -> Embedder:
        return SentenceTransformerEmbedder(model_path, batch_size=batch_size, precision=precision)

    try:
        return load()
    except Exception as e:  # missing (ConfigError), or a model folder that will not load
        if not fallback:
            raise
        reason = e.message if isinstance(e, ConfigError) else f"{type(e).__name__}: {e}"
        name = DEFAULT_MODEL_NAME if model_path is None else model_path.name
        logger.warning(
            "embedding model %s unavailable (%s): memories are stored without vectors and "
            "recall uses text and graph until it loads",
            name,
            reason,
        )
        return UnavailableEmbedder(name, _DEFAULT_DIM, reason, load=load)


__all__ = [
    "Embedder",
    "EmbedderHealth",
    "GuardedEmbedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "UnavailableEmbedder",
    "make_embedder",
    "model_name",
    "normalize_rows",
]
