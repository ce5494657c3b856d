"""An embedder that loads its model on first use.

A command that never embeds (stats, export, decay) then never pays for loading
a model; one that does pays once, when it first encodes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from hippocampus.embed.base import Embedder


class LazyEmbedder:
    """Builds the real embedder the first time its dimension or vectors are needed.

    Args:
        name: the model's name, known before loading (stored per memory, so it
            must be the name the built embedder will report).
        build: makes the real embedder.
    """

    def __init__(self, name: str, build: Callable[[], Embedder]) -> None:
        self.name = name
        self._build = build
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the real embedder has been built."""
        return self._inner is not None

    def _get(self) -> Embedder:
        with self._lock:
            if self._inner is None:
                self._inner = self._build()
            return self._inner

    @property
    def dim(self) -> int:
        return self._get().dim

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._get().encode(texts)
