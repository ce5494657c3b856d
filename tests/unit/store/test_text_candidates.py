"""A large collection's text search: tantivy's candidates, scored exactly by the
store's BM25, with every write seen at once."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.synth import memories, queries
from hippocampus.config import HippoSettings
from hippocampus.errors import ConfigError
from hippocampus.lexical import BM25Index
from hippocampus.model import Memory, RecallFilters, content_hash, utcnow
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded import text_candidates as tc
from hippocampus.store.embedded.text_index import TextIndex
from hippocampus.stores import open_store

pytest.importorskip("tantivy")

C = "team:text"


def until(done: Callable[[], bool], state: Callable[[], object]) -> None:
    """Wait up to 20 s for ``done``; fail showing ``state`` if it never comes."""
    deadline = time.monotonic() + 20
    while not done():
        assert time.monotonic() < deadline, state()
        time.sleep(0.01)


def wait_ready(index: TextIndex) -> None:
    until(lambda: index.candidates_state() == (True, 0), index.candidates_state)


def candidates_of(index: TextIndex) -> tc.TextCandidates:
    candidates = index._candidates
    assert candidates is not None
    return candidates


@pytest.fixture
def corpus() -> list[tuple[str, str]]:
    return [(m.id, m.content) for m in memories(600, seed=3)]


@pytest.fixture
def filled(corpus: list[tuple[str, str]]) -> Iterator[TextIndex]:
    """A text index over ``corpus`` whose searches take tantivy's candidates."""
    index = TextIndex.build(C, corpus, candidates_from=1)
    try:
        wait_ready(index)
        yield index
    finally:
        index.close()


def exact_of(rows: list[tuple[str, str]]) -> BM25Index:
    index = BM25Index()
    index.add_many(rows)
    return index


def test_candidates_answer_as_the_exact_index_to_the_bit(
    filled: TextIndex, corpus: list[tuple[str, str]]
) -> None:
    index = filled
    exact = exact_of(corpus)
    for q in queries(60):
        for k in (1, 5, 50):
            assert index.search(q, k=k) == exact.search(q, k), (q, k)
    # A filter that passes one memory in seven: candidates widen until enough
    # pass, or every match is scored.
    allowed = {doc for i, (doc, _) in enumerate(corpus) if i % 7 == 0}
    for q in queries(20):
        assert index.search(q, k=10, allowed=allowed.__contains__) == exact.search(
            q, 10, allowed.__contains__
        )


def test_searches_take_candidates_only_from_tantivy_once_filled(
    filled: TextIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = filled
    scored: list[int] = []
    among = BM25Index.search_among

    def spy(self: BM25Index, terms, nums, k, allowed=None):  # type: ignore[no-untyped-def]
        scored.append(len(nums))
        return among(self, terms, nums, k, allowed)

    monkeypatch.setattr(BM25Index, "search_among", spy)
    monkeypatch.setattr(BM25Index, "search", lambda *a, **kw: pytest.fail("scored every match"))
    q = queries(1)[0]
    assert index.search(q, k=5)
    # The first ask: max(MIN_CANDIDATES, WIDEN * k) of tantivy's best.
    assert scored and scored[0] <= tc.MIN_CANDIDATES


def test_a_selective_filter_scores_every_match_after_one_ask(
    filled: TextIndex, corpus: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = filled
    candidates = candidates_of(index)
    asked: list[int] = []
    ask = candidates.candidates

    def noted(terms, count):  # type: ignore[no-untyped-def]
        asked.append(count)
        return ask(terms, count)

    monkeypatch.setattr(candidates, "candidates", noted)
    exact = exact_of(corpus)
    rare = {doc for i, (doc, _) in enumerate(corpus) if i % 150 == 0}  # 4 of 600
    broad = {doc for i, (doc, _) in enumerate(corpus) if i % 3 == 0}
    for q in queries(10):
        # None of the first ask passes: no wider ask, every match scored.
        asked.clear()
        assert index.search(q, k=10, allowed=lambda _: False) == []
        assert asked == [tc.MIN_CANDIDATES]
        # A few pass: one ask as wide as their share needs, at most.
        asked.clear()
        got = index.search(q, k=10, allowed=rare.__contains__)
        assert got == exact.search(q, 10, rare.__contains__)
        assert len(asked) <= 2
        asked.clear()
        assert index.search(q, k=10, allowed=broad.__contains__) == exact.search(
            q, 10, broad.__contains__
        )
        assert len(asked) <= 2


def test_a_small_collection_keeps_the_exact_search(corpus: list[tuple[str, str]]) -> None:
    index = TextIndex.build(C, corpus, candidates_from=len(corpus) + 1)
    assert index.candidates_state() is None
    index.add([("m-new", "the one that makes it large enough")])
    try:
        assert index.candidates_state() is not None
        wait_ready(index)
    finally:
        index.close()


def test_writes_are_seen_at_once_and_after_tantivy_takes_them(
    filled: TextIndex,
    corpus: list[tuple[str, str]],
) -> None:
    index = filled
    index.add([("m-zebra", "zebra crossings confuse the lidar pipeline")])
    # Searched at once, whether or not tantivy has it yet.
    assert index.search("zebra lidar", k=3)[0][0] == "m-zebra"
    wait_ready(index)
    assert index.search("zebra lidar", k=3)[0][0] == "m-zebra"
    index.replace("m-zebra", "giraffe sightings near the depot")
    assert index.search("zebra lidar", k=3) == []
    assert index.search("giraffe depot", k=3)[0][0] == "m-zebra"
    wait_ready(index)
    assert index.search("zebra lidar", k=3) == []
    assert index.search("giraffe depot", k=3)[0][0] == "m-zebra"
    index.remove("m-zebra")
    assert index.search("giraffe depot", k=3) == []
    wait_ready(index)
    assert index.search("giraffe depot", k=3) == []
    # A removed memory's number given to a new one: the old key's hits are not
    # taken for it.
    doc, _ = corpus[0]
    index.remove(doc)
    index.add([("m-reused", "walrus migration data")])
    wait_ready(index)
    exact = exact_of([*corpus[1:], ("m-reused", "walrus migration data")])
    for q in [*queries(20), "walrus", corpus[0][1]]:
        assert index.search(q, k=10) == exact.search(q, 10)
    # What was removed or replaced is deleted from tantivy too.
    candidates = candidates_of(index)
    until(
        lambda: candidates._searcher.num_docs == len(index),
        lambda: (candidates._searcher.num_docs, len(index)),
    )


def test_staged_documents_are_scored_beside_and_too_many_fall_back(
    filled: TextIndex, corpus: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = filled
    candidates = candidates_of(index)
    candidates.close()  # the worker stops: what is staged stays staged
    index.add([(f"m-{i}", f"quokka sighting number {i}") for i in range(5)])
    monkeypatch.setattr(tc, "STAGED_MAX", 10)
    assert index.candidates_state() == (True, 5)
    assert len(index.search("quokka", k=10)) == 5
    monkeypatch.setattr(tc, "STAGED_MAX", 3)
    assert index.candidates_state() == (False, 5)
    exact = exact_of([*corpus, *[(f"m-{i}", f"quokka sighting number {i}") for i in range(5)]])
    assert index.search("quokka", k=10) == exact.search("quokka", 10)


def _record(memory_id: str, content: str) -> MemoryRecord:
    now = utcnow()
    return MemoryRecord(
        Memory(
            id=memory_id,
            collection=C,
            content=content,
            created_at=now,
            updated_at=now,
            content_hash=content_hash(content),
        )
    )


def test_the_store_searches_through_candidates_and_stops_them_at_close(
    tmp_path: Path, corpus: list[tuple[str, str]]
) -> None:
    store = EmbeddedStore(tmp_path / "data", synchronous="OFF", text_candidates_from=100)
    store.add_memories(C, [_record(doc, text) for doc, text in corpus[:50]])
    # Small: searched in Python, a recall's reads take turns.
    assert store.wait_for_text_candidates(C, timeout_s=1)
    assert not store.reads_side_by_side(C)
    store.add_memories(C, [_record(doc, text) for doc, text in corpus[50:]])
    assert store.wait_for_text_candidates(C, timeout_s=20)
    wait_ready(store._texts[C])
    assert store.reads_side_by_side(C)
    exact = exact_of(corpus)
    for q in queries(10):
        found = store.search_text(C, q, k=10, filters=RecallFilters())
        assert found == exact.search(q, 10)
    store.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("hippo-text")]


def test_the_threshold_is_configured_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIPPO_TEXT_CANDIDATES_FROM", "4321")
    settings = HippoSettings(data_dir=tmp_path / "data")
    assert settings.text_candidates_from == 4321
    store = open_store(settings)
    try:
        assert store._text_candidates_from == 4321  # type: ignore[attr-defined]
    finally:
        store.close()
    with pytest.raises(ConfigError, match="text_candidates_from"):
        EmbeddedStore(tmp_path / "other", text_candidates_from=0)


def test_without_tantivy_searches_score_every_match(
    corpus: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tantivy", None)  # import tantivy raises
    index = TextIndex.build(C, corpus, candidates_from=1)
    assert index.candidates_state() is None
    exact = exact_of(corpus)
    q = queries(1)[0]
    assert index.search(q, k=10) == exact.search(q, 10)
