"""bench/quality.py's stress for a weak similarity signal, and its check of the
default against the single signals."""

from __future__ import annotations

import numpy as np

from bench.quality import Dataset, _against_single_signals, noisy
from hippocampus.retrieve.config import DEFAULT_RECIPE


def vectors() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((50, 384)).astype(np.float32)


def test_no_noise_leaves_the_vectors_as_they_are() -> None:
    v = vectors()
    assert noisy(v, 0.0, np.random.default_rng(1)) is v


def test_noise_keeps_unit_length_and_strays_as_far_as_asked() -> None:
    v = vectors()
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    shaken = noisy(v, 3.0, np.random.default_rng(1))
    assert np.allclose(np.linalg.norm(shaken, axis=1), 1.0, atol=1e-5)
    # Noise of norm 3 leaves a cosine of about 1/sqrt(1 + 9) to the vector.
    cosines = np.sum(unit * shaken, axis=1)
    assert 0.25 < float(cosines.mean()) < 0.38
    # The same draw for the same generator seed: every recipe sees the same vectors.
    assert np.array_equal(shaken, noisy(v, 3.0, np.random.default_rng(1)))


def test_a_default_behind_a_single_signal_is_called_so() -> None:
    data = Dataset(name="chat", corpora=[], ks=(5, 10))
    by_method = {
        DEFAULT_RECIPE: {"all": {"r10": 0.60}},
        "BM25": {"all": {"r10": 0.62}},
        "DENSE": {"all": {"r10": 0.42}},
    }
    line = _against_single_signals(data, by_method, [DEFAULT_RECIPE, "BM25", "DENSE"])
    assert line == "chat R@10: default 0.600, ahead of DENSE by 0.180, BEHIND BM25 by 0.020"
