"""Embedding that fails softly: a model that cannot load, or one that breaks at
call time, costs vectors, never a write or a recall.

:class:`GuardedEmbedder` wraps the engine's embedder. Whatever goes wrong in a
call (an exception of any kind, a result of the wrong shape, values that are not
finite) reaches the engine as :class:`~hippocampus.errors.EmbeddingError`, which the
engine already answers by storing memories flagged for re-embedding and by
recalling through text and graph. The outcome of the latest call is kept as the
embedder's health, for ``/readyz`` and ``/stats``.

:class:`UnavailableEmbedder` stands in for a model that could not be loaded at
start: it carries the configured model's name, so the vectors already stored
from that model stay current (and are never re-embedded by another model), and
:meth:`GuardedEmbedder.recover` loads the model again once it is there.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from hippocampus.embed.base import Embedder
from hippocampus.errors import EmbeddingError

logger = logging.getLogger(__name__)

_PROBE = "embedding health check"


class UnavailableEmbedder:
    """An embedder whose model could not be loaded: every call fails.

    Args:
        name: the configured model's name (what its vectors are stored under).
        dim: the dimension the model is expected to have.
        reason: why it could not be loaded, for the log.
        load: builds the real embedder; :meth:`GuardedEmbedder.recover` calls it.
    """

    def __init__(
        self,
        name: str,
        dim: int,
        reason: str,
        load: Callable[[], Embedder] | None = None,
    ) -> None:
        self.name = name
        self.dim = dim
        self.reason = reason
        self.load = load

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise EmbeddingError(f"the embedding model {self.name} is not loaded: {self.reason}")


@dataclass(frozen=True)
class EmbedderHealth:
    """How the embedder fared on its latest call.

    Attributes:
        healthy: the latest call (or load) succeeded.
        reason: why it is unhealthy, in words safe to show to clients.
        since: when it became unhealthy.
        failures: calls failed in a row.
    """

    healthy: bool
    reason: str | None = None
    since: datetime | None = None
    failures: int = 0


class GuardedEmbedder:
    """Wraps an embedder so that its failures are all :class:`EmbeddingError` and
    its health is known.

    Args:
        inner: the embedder that does the work (an :class:`UnavailableEmbedder`
            when the model could not be loaded).
    """

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._health = (
            EmbedderHealth(healthy=False, reason=_reason(inner), since=datetime.now(UTC))
            if isinstance(inner, UnavailableEmbedder)
            else EmbedderHealth(healthy=True)
        )

    @property
    def inner(self) -> Embedder:
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed like the wrapped embedder, or raise :class:`EmbeddingError`.

        Raises:
            EmbeddingError: the embedder raised (anything), or returned something
                other than ``len(texts)`` finite rows of its dimension.
        """
        inner = self._inner
        try:
            raw = inner.encode(texts)
            vectors = np.asarray(raw, dtype=np.float32)
        except EmbeddingError as e:
            self._failed(e.message)
            raise
        except Exception as e:  # a broken model may raise anything; callers need one
            self._failed(f"{type(e).__name__}: {e}")
            raise EmbeddingError(f"the embedder {inner.name} failed: {e}") from e
        expected = (len(texts), inner.dim)
        if vectors.shape != expected:
            self._failed(f"returned shape {vectors.shape}, expected {expected}")
            raise EmbeddingError(
                f"the embedder {inner.name} returned shape {vectors.shape}, expected {expected}"
            )
        if not np.all(np.isfinite(vectors)):
            self._failed("returned values that are not finite")
            raise EmbeddingError(f"the embedder {inner.name} returned values that are not finite")
        if texts:
            self._succeeded()
        return vectors

    def health(self) -> EmbedderHealth:
        return self._health

    def recover(self) -> EmbedderHealth:
        """Try to bring an unhealthy embedder back: load a model that could not be
        loaded, else embed a probe text. A healthy one is left alone.

        Returns:
            The health afterwards.
        """
        if self._health.healthy:
            return self._health
        inner = self._inner
        if isinstance(inner, UnavailableEmbedder):
            if inner.load is None:
                return self._health
            try:
                loaded = inner.load()
            except Exception as e:  # still missing, or broken in a new way
                logger.info("the embedding model %s is still unavailable: %s", inner.name, e)
                return self._health
            if isinstance(loaded, UnavailableEmbedder):
                return self._health
            logger.warning(
                "the embedding model %s is loaded: memories waiting for vectors are "
                "embedded by maintenance or hippo reindex",
                loaded.name,
            )
            self._inner = loaded
        with contextlib.suppress(EmbeddingError):  # the failure is recorded as health
            self.encode([_PROBE])
        return self._health

    def _failed(self, detail: str) -> None:
        with self._lock:
            was = self._health
            self._health = EmbedderHealth(
                healthy=False,
                reason=_reason(self._inner),
                since=was.since if not was.healthy else datetime.now(UTC),
                failures=was.failures + 1,
            )
        if was.healthy:
            logger.warning("the embedder %s is failing: %s", self.name, detail)

    def _succeeded(self) -> None:
        with self._lock:
            was = self._health
            self._health = EmbedderHealth(healthy=True)
        if not was.healthy:
            logger.warning("the embedder %s works again", self.name)


def _reason(inner: Embedder) -> str:
    if isinstance(inner, UnavailableEmbedder):
        return f"the embedding model {inner.name} is not loaded"
    return f"the embedder {inner.name} is failing"
