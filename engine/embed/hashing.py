"""A deterministic embedder from token hashing: real vectors, no model.

Serves tests and machines without the model. Texts sharing words (and, via
character trigrams, word stems) get similar vectors; it knows no synonyms.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hippocampus.embed.base import normalize_rows

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


class HashingEmbedder:
    """Signed feature hashing of words and word trigrams into ``dim`` buckets.

    Args:
        dim: vector dimension; 384 matches the default model so both can share
            an index shape.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.name = f"hashing-v1-{dim}"

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self.dim] += sign * weight
        return normalize_rows(out)


def _features(text: str) -> list[tuple[str, float]]:
    words = [w.casefold() for w in _TOKEN.findall(text)]
    feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
    for w in words:
        padded = f"<{w}>"
        feats.extend(("c:" + padded[i : i + 3], 0.25) for i in range(len(padded) - 2))
    return feats
