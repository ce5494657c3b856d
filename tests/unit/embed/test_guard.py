"""The guard around the embedder: every failure is an EmbeddingError, health is
tracked, and a model missing at start is loaded once it is there."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hippocampus.embed import (
    Embedder,
    GuardedEmbedder,
    HashingEmbedder,
    UnavailableEmbedder,
    make_embedder,
)
from hippocampus.errors import ConfigError, EmbeddingError


class _Broken(HashingEmbedder):
    """The hashing embedder, made to misbehave one way or another."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        good = super().encode(texts)
        if self.mode == "raise":
            raise RuntimeError("CUDA out of memory at 0x7f00")
        if self.mode == "shape":
            return good[:, :10]
        if self.mode == "rows":
            return good[:-1]
        if self.mode == "nan":
            good[0, 0] = np.nan
        return good


@pytest.mark.parametrize("mode", ["raise", "shape", "rows", "nan"])
def test_any_misbehaviour_becomes_an_embedding_error_and_marks_it_unhealthy(mode: str) -> None:
    inner = _Broken()
    guard = GuardedEmbedder(inner)
    assert guard.encode(["fine", "also fine"]).shape == (2, 384)
    assert guard.health().healthy
    inner.mode = mode
    with pytest.raises(EmbeddingError):
        guard.encode(["pool exhausted", "retry storm"])
    health = guard.health()
    assert not health.healthy and health.failures == 1 and health.since is not None
    assert health.reason == "the embedder hashing-v1-384 is failing"
    assert "0x7f00" not in (health.reason or "")
    inner.mode = "ok"
    assert guard.encode(["back"]).shape == (1, 384)
    assert guard.health().healthy and guard.health().failures == 0


def test_recover_probes_a_failing_embedder_and_leaves_a_healthy_one_alone() -> None:
    inner = _Broken()
    guard = GuardedEmbedder(inner)
    inner.mode = "raise"
    with pytest.raises(EmbeddingError):
        guard.encode(["x"])
    assert not guard.recover().healthy
    assert guard.health().failures == 2  # the probe failed too
    inner.mode = "ok"
    assert guard.recover().healthy


def test_a_model_missing_at_start_is_loaded_by_recover() -> None:
    attempts: list[int] = []
    there = False

    def load() -> Embedder:
        attempts.append(1)
        if not there:
            raise ConfigError("no sentence-transformers model at /models/x")
        return HashingEmbedder()

    guard = GuardedEmbedder(UnavailableEmbedder("hashing-v1-384", 384, "missing", load=load))
    health = guard.health()
    assert not health.healthy
    assert health.reason == "the embedding model hashing-v1-384 is not loaded"
    with pytest.raises(EmbeddingError):
        guard.encode(["x"])
    assert not guard.recover().healthy and len(attempts) == 1
    there = True
    assert guard.recover().healthy
    assert isinstance(guard.inner, HashingEmbedder)
    assert guard.encode(["x"]).shape == (1, 384)
    assert guard.recover().healthy and len(attempts) == 2  # loaded once


def test_a_missing_model_folder_starts_without_vectors_only_when_allowed(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-model-here"
    with pytest.raises(ConfigError, match="no sentence-transformers model"):
        make_embedder("minilm", model_path=missing, fallback=False)
    embedder = make_embedder("minilm", model_path=missing)
    assert isinstance(embedder, UnavailableEmbedder)
    # The model's own name: vectors stored from it stay current while it is away.
    assert embedder.name == "no-model-here" and embedder.dim == 384
    with pytest.raises(EmbeddingError):
        embedder.encode(["x"])
    assert not GuardedEmbedder(embedder).recover().healthy  # still missing
