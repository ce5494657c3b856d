"""An embedder that fails on demand, for the tests of what happens without one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.embed import HashingEmbedder
from engine.errors import EmbeddingError


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, failing while ``down``."""

    down = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.down:
            raise EmbeddingError("model crashed")
        return super().encode(texts)
