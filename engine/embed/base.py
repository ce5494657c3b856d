"""The embedder contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors.

    Attributes:
        name: identifies the model; stored per memory, so a change of model is
            noticed and triggers re-embedding.
        dim: the vector dimension.
    """

    name: str

    @property
    def dim(self) -> int:
        """The vector dimension (read-only: an embedder may learn it when it loads)."""
        ...

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed a batch.

        Returns:
            An array of shape ``(len(texts), dim)``, each row of unit length
            (all zeros only for a text with nothing to embed).

        Raises:
            EmbeddingError: the model failed.
        """
        ...


def normalize_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Scale each row to unit length; zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32, copy=False)
    return out
