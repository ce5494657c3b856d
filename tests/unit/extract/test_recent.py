"""Recent texts' extractions: kept, merged, and the same as reading afresh."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hippocampus.extract import Extraction, KeywordConceptExtractor
from hippocampus.extract.recent import RecentExtractions, pieces


class Counting:
    """An extractor that counts the texts it reads."""

    name = "counting"

    def __init__(self, max_concepts: int = 16, max_triggers: int = 10) -> None:
        self.inner = KeywordConceptExtractor(max_concepts=max_concepts, max_triggers=max_triggers)
        self.max_concepts = max_concepts
        self.max_triggers = max_triggers
        self.read: list[str] = []

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        self.read.extend(texts)
        return self.inner.extract_many(texts)


def test_a_kept_text_is_not_read_again_and_gives_the_same_extraction() -> None:
    extractor = Counting()
    recent = RecentExtractions(extractor, size=8)
    first = recent.extract_many(["redis pool exhausted", "postgres vacuum stalls"])
    again = recent.extract_many(["postgres vacuum stalls", "redis pool exhausted", "new text"])
    assert extractor.read == ["redis pool exhausted", "postgres vacuum stalls", "new text"]
    assert again[:2] == [first[1], first[0]]
    assert again == extractor.inner.extract_many(
        ["postgres vacuum stalls", "redis pool exhausted", "new text"]
    )


def test_the_least_recently_used_text_goes_first() -> None:
    extractor = Counting()
    recent = RecentExtractions(extractor, size=2)
    recent.extract_many(["alpha beta", "gamma delta"])
    recent.extract_many(["alpha beta"])  # used again: gamma delta is now the oldest
    recent.extract_many(["epsilon zeta"])
    extractor.read.clear()
    recent.extract_many(["alpha beta", "gamma delta"])
    assert extractor.read == ["gamma delta"]


def test_a_repeated_text_in_one_call_is_read_once() -> None:
    extractor = Counting()
    recent = RecentExtractions(extractor)
    out = recent.extract_many(["cache warmup", "cache warmup"])
    assert extractor.read == ["cache warmup"]
    assert out[0] == out[1]


def test_together_merges_in_first_mention_order_within_the_extractors_caps() -> None:
    extractor = Counting(max_concepts=3, max_triggers=2)
    recent = RecentExtractions(extractor)
    a, b = extractor.inner.extract_many(["kafka consumer lag", "consumer rebalance storm"])
    merged = recent.together(["kafka consumer lag", "consumer rebalance storm"])
    concepts = list(dict.fromkeys([*a.concepts, *b.concepts]))[:3]
    triggers = list(dict.fromkeys([*a.triggers, *b.triggers]))[:2]
    assert list(merged.concepts) == concepts
    assert list(merged.triggers) == triggers
    assert len(set(merged.concepts)) == len(merged.concepts)


def test_a_long_text_is_read_but_not_kept() -> None:
    extractor = Counting()
    recent = RecentExtractions(extractor, max_chars=12)
    recent.extract_many(["short text", "a much longer text"])
    recent.extract_many(["short text", "a much longer text"])
    assert extractor.read == ["short text", "a much longer text", "a much longer text"]


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="size"):
        RecentExtractions(Counting(), size=0)


@pytest.mark.parametrize("limit", [0, 1, 5, 6, 7, 11, 12, 13, 40])
def test_pieces_are_what_the_joined_text_keeps(limit: int) -> None:
    texts = ["hello", "big", "world"]
    kept = pieces(texts, limit)
    joined = " ".join(texts)[:limit]
    assert " ".join(kept) == joined.rstrip(" ") or " ".join(kept) == joined
    assert all(p for p in kept)


def test_together_keeps_the_names_among_the_concepts_it_keeps() -> None:
    recent = RecentExtractions(Counting(max_concepts=3), size=8)
    merged = recent.together(["we asked Caroline", "then Melanie said Kafka lags"])
    assert set(merged.names) <= set(merged.concepts)
    assert "caroline" in merged.names
    # Melanie and Kafka come past the cap of three concepts: kept nowhere.
    assert "kafka" not in merged.names
