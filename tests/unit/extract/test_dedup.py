"""Near-duplicates and negation-aware conflicts between two texts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hippocampus.extract.dedup import DedupConfig, Verdict, compare, merge_duplicate, tokens
from hippocampus.model import Memory, NewMemory, RetrievalMeta, Tier

CONFIG = DedupConfig()
T0 = datetime(2026, 1, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("a", "b", "similarity", "verdict"),
    [
        # Most words shared by two short texts.
        (
            "Raise the Postgres pool size for the nightly report worker",
            "Raise the Postgres pool size for the nightly report worker now",
            None,
            Verdict.DUPLICATE,
        ),
        # Embeddings nearly the same, whatever the words.
        ("Checkout is slow", "The checkout page loads slowly", 0.97, Verdict.DUPLICATE),
        ("Checkout is slow", "The checkout page loads slowly", 0.90, Verdict.UNIQUE),
        # "use X" against "don't use X": a conflict, not a duplicate.
        (
            "Use connection pooling for the billing database",
            "Don't use connection pooling for the billing database",
            0.89,
            Verdict.CONFLICT,
        ),
        ("Deploy on Fridays", "Never deploy on Fridays", None, Verdict.CONFLICT),
        ("Deploy on Fridays", "Do not deploy on Fridays", 0.97, Verdict.CONFLICT),
        # The same negation written two ways is the same statement.
        ("Redis is not thread-safe here", "Redis isn't thread-safe here", None, Verdict.DUPLICATE),
        # Different numbers are different facts.
        ("Pin the driver to 5.1", "Pin the driver to version 5.2", None, Verdict.UNIQUE),
        (
            "deploy note number 0 about the deploy pipeline",
            "deploy note number 1 about the deploy pipeline",
            0.96,
            Verdict.UNIQUE,
        ),
        ("Slow checkout page fixed", "Slow checkout again", 0.62, Verdict.UNIQUE),
    ],
)
def test_compare_tells_duplicates_conflicts_and_unique_texts_apart(
    a: str, b: str, similarity: float | None, verdict: Verdict
) -> None:
    assert compare(a, b, similarity, CONFIG).verdict == verdict


def test_jaccard_applies_to_short_texts_only() -> None:
    long_a = " ".join(f"word{i}" for i in range(80))
    long_b = long_a + " extra"
    assert compare(long_a, long_b, None, CONFIG).verdict == Verdict.UNIQUE
    assert compare(long_a, long_b, 0.99, CONFIG).verdict == Verdict.DUPLICATE


def test_tokens_open_contractions_and_drop_the_negated_auxiliary() -> None:
    assert tokens("Don't use it") == ["not", "use", "it"]
    assert tokens("do not use it") == ["not", "use", "it"]
    assert tokens("It can't fail") == ["it", "can", "not", "fail"]


def test_merging_a_duplicate_appends_provenance_and_raises_counts() -> None:
    memory = Memory(
        id="m1",
        collection="c",
        content="Raise the Postgres pool size",
        importance=0.4,
        tier=Tier.ARCHIVED,
        tags=["db"],
        created_at=T0,
        updated_at=T0,
        content_hash="h",
        retrieval=RetrievalMeta(conversation_ids=["conv-1"]),
    )
    later = datetime(2026, 2, 1, tzinfo=UTC)
    item = NewMemory(
        content="Raise the Postgres pool size!",
        importance=0.9,
        tags=["db", "postgres"],
        conversation_id="conv-2",
    )
    merged = merge_duplicate(memory, item, later, max_tags=50)
    assert merged.retrieval.duplicates == 1
    assert merged.retrieval.conversation_ids == ["conv-1", "conv-2"]
    assert merged.tags == ["db", "postgres"]
    assert merged.importance == 0.9
    assert merged.tier == Tier.ACTIVE  # relevant again
    assert merged.updated_at == later
    assert merged.content == memory.content
    again = merge_duplicate(merged, item, later, max_tags=50)
    assert again.retrieval.duplicates == 2
    assert again.retrieval.conversation_ids == ["conv-1", "conv-2"]


def test_a_quarantined_memory_stays_quarantined_when_repeated() -> None:
    memory = Memory(
        id="m1",
        collection="c",
        content="x",
        tier=Tier.QUARANTINED,
        created_at=T0,
        updated_at=T0,
        content_hash="h",
    )
    assert merge_duplicate(memory, NewMemory(content="x"), T0, max_tags=5).tier == Tier.QUARANTINED
