"""bench/conflicts.py: which pairs it compares, and what it counts as flagged."""

from __future__ import annotations

import numpy as np

from bench.conflicts import measure
from bench.quality import Corpus
from hippocampus.extract.dedup import DedupConfig
from hippocampus.model import NewMemory


def test_pairs_fall_in_their_bands_and_reversals_are_counted() -> None:
    texts = [
        "Use Redis for session storage because it is fast",
        "Do not use Redis for session storage: evictions log users out",
        "Redis is what we use for session storage, since it is fast",
        "The cafe near the office serves good coffee",
    ]
    corpus = Corpus("c", [NewMemory(content=t) for t in texts], [])
    # 0 and 2 near-duplicates (cosine 0.99), 0 and 1 close (0.9), 1 and 2 neither
    # (0.83), 3 far from all.
    vectors = np.asarray(
        [[1.0, 0.0, 0.0], [0.9, 0.43589, 0.0], [0.99, -0.14107, 0.0], [0.0, 0.0, 1.0]],
        dtype=np.float32,
    )
    found = measure(corpus, vectors, DedupConfig())
    near, close, compared = found["near-duplicates"], found["close"], found["compared"]
    assert (near.pairs, near.flagged) == (1, 0)
    assert (close.pairs, close.flagged) == (1, 1)
    assert close.examples[0][1:] == (texts[0], texts[1], ["redis", "session", "storag"])
    # Each memory against its earlier ones (1 + 2 + 3 pairs): 1 reverses 0, and 2
    # says plainly what 1 denies.
    assert (compared.pairs, compared.flagged) == (6, 2)


def test_turns_of_different_speakers_are_not_paired() -> None:
    corpus = Corpus(
        "c",
        [
            NewMemory(content="User: Do not use Redis for session storage", speaker="user"),
            NewMemory(content="Assistant: Use Redis for session storage", speaker="assistant"),
        ],
        [],
    )
    vectors = np.asarray([[1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    found = measure(corpus, vectors, DedupConfig())
    assert all(t.pairs == 0 for t in found.values())
