"""The real model, loaded from the installed package (never a hub)."""

import numpy as np
import pytest

from hippocampus.embed import Embedder, SentenceTransformerEmbedder

pytestmark = pytest.mark.model


def test_minilm_gives_384_dim_unit_vectors(minilm: SentenceTransformerEmbedder) -> None:
    v = minilm.encode(["The mobile app is slow", "Team lunch moved to Friday"])
    assert v.shape == (2, 384)
    assert minilm.name == "all-MiniLM-L6-v2"
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert isinstance(minilm, Embedder)


def test_minilm_knows_paraphrases(minilm: SentenceTransformerEmbedder) -> None:
    v = minilm.encode(
        [
            "app is slow on mobile",
            "Customer reported that the mobile app takes 5+ seconds to load the dashboard",
            "Team lunch moved to Friday",
        ]
    )
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_model_loads_once_per_process(minilm: SentenceTransformerEmbedder) -> None:
    assert SentenceTransformerEmbedder()._model is minilm._model


def test_empty_batch_gives_empty_matrix(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm.encode([]).shape == (0, 384)


def test_bfloat16_precision_gives_the_same_vectors_within_rounding(
    minilm: SentenceTransformerEmbedder,
) -> None:
    texts = ["Payment gateway timeouts during checkout", "Team lunch moved to Friday"]
    full = SentenceTransformerEmbedder(precision="fp32").encode(texts)
    half = SentenceTransformerEmbedder(precision="bf16").encode(texts)
    assert half.dtype == np.float32
    assert np.all(np.sum(full * half, axis=1) > 0.999)
