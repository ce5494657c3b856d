"""An embedder that fails on demand, for the tests of what happens without one,
and a service to run it in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hippocampus.embed import Embedder, HashingEmbedder
from hippocampus.errors import EmbeddingError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

OPERATOR = "operator"
"""The source :func:`operator_service` trusts to store texts however short."""


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, failing while ``down``."""

    down = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.down:
            raise EmbeddingError("model crashed")
        return super().encode(texts)


@contextmanager
def operator_service(
    path: Path, embedder: Embedder, extractor: SpacyConceptExtractor, **options: Any
) -> Iterator[Hippocampus]:
    """A service on an embedded store at ``path`` that trusts :data:`OPERATOR`
    (``options`` go to the service as they are), closed on leaving."""
    svc = Hippocampus(
        EmbeddedStore(path),
        embedder,
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
        **options,
    )
    try:
        yield svc
    finally:
        svc.close()
