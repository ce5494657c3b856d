"""One recall end to end on a hand-built graph with chosen similarities: seeds,
query anchors, what the graph adds to similarity, and explanations."""

from __future__ import annotations

import math
import threading
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hippocampus.extract import Extraction
from hippocampus.model import Edge, EdgeType, Memory, RecallFilters, RetrievalMeta
from hippocampus.model import content_hash as hash_of
from hippocampus.retrieve.config import ASSOCIATIVE, DENSE, SearchConfig
from hippocampus.retrieve.pipeline import Retrieval, read_query, retrieve
from hippocampus.service import Hippocampus
from hippocampus.store import MemoryRecord, Vector
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
MODEL = "test-3"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOTHING = Extraction()
QUERY_VECTOR = np.array([1.0, 0.0, 0.0], dtype=np.float32)

# Similarity to the query, and the concepts each memory is about. "ballet" names
# the ballet; its passage names the composer, whose own passage names the
# country: a two-hop chain that similarity alone ranks low.
MEMORIES: dict[str, tuple[float, tuple[str, ...]]] = {
    "ballet": (0.90, ("ballet", "johann strauss")),
    "composer": (0.35, ("johann strauss", "austria")),
    "near1": (0.42, ("opera", "vienna")),
    "near2": (0.40, ("opera", "season")),
    "far": (0.10, ("season",)),
}


class FixedExtractor:
    """Reads the query's concepts and triggers from a table."""

    name = "fixed"

    def __init__(self, table: dict[str, Extraction]) -> None:
        self.table = table

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        return [self.table.get(t, Extraction()) for t in texts]


class CountingExtractor(FixedExtractor):
    """Also notes the thread each query was read on."""

    def __init__(self, table: dict[str, Extraction]) -> None:
        super().__init__(table)
        self.threads: list[str] = []

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        self.threads.append(threading.current_thread().name)
        return super().extract_many(texts)


def unit(similarity: float) -> Vector:
    return np.array([similarity, math.sqrt(1.0 - similarity**2), 0.0], dtype=np.float32)


def memory(memory_id: str, concepts: Sequence[str]) -> Memory:
    # A content that shares no word with the queries: these worlds weigh
    # similarity and the graph, not words.
    text = f"record {zlib.crc32(memory_id.encode())}"
    return Memory(
        id=memory_id,
        collection=C,
        content=text,
        category="insight",
        created_at=T0,
        updated_at=T0,
        content_hash=hash_of(text),
        embedding_model=MODEL,
        retrieval=RetrievalMeta(concepts=list(concepts)),
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore(tmp_path / "data")
    s.add_memories(
        C,
        [
            MemoryRecord(
                memory=memory(mid, concepts),
                vector=unit(sim),
                edges=tuple(
                    Edge(source=mid, type=EdgeType.ABOUT, target=c, weight=0.5) for c in concepts
                ),
            )
            for mid, (sim, concepts) in MEMORIES.items()
        ],
    )
    yield s
    s.close()


# The walk's arithmetic, without the crowding correction (which moves every
# similarity of these five-memory worlds; tests/unit/retrieve/test_crowding.py).
UNCROWDED = ASSOCIATIVE.model_copy(update={"crowding": 0.0})


def run(
    store: EmbeddedStore,
    config: SearchConfig,
    query: str = "who ruled the country of the ballet's composer",
    extraction: Extraction = NOTHING,
    *,
    explain: bool = False,
    limit: int = 3,
) -> Retrieval:
    return retrieve(
        store,
        FixedExtractor({query: extraction}),
        C,
        query,
        QUERY_VECTOR,
        model=MODEL,
        config=config,
        filters=RecallFilters(),
        limit=limit,
        now=T0,
        explain=explain,
    )


def ranked(found: Retrieval) -> list[str]:
    return [c.memory_id for c in found.candidates]


def test_dense_alone_ranks_the_second_hop_below_lookalikes(store: EmbeddedStore) -> None:
    assert ranked(run(store, DENSE)) == ["ballet", "near1", "near2"]


def test_a_rare_name_shared_with_the_best_hit_lifts_the_second_hop(store: EmbeddedStore) -> None:
    found = run(store, UNCROWDED, explain=True)
    assert ranked(found) == ["ballet", "composer", "near1"]
    composer = found.candidates[1]
    # The ballet seeds at strength 1; "johann strauss" has two memories, so the
    # path is 1 × 0.5 × 1/2 × 0.5; the score adds 1.2 × that to the similarity.
    assert composer.graph == pytest.approx(0.125)
    assert composer.similarity == pytest.approx(0.35, abs=1e-6)
    assert composer.score == pytest.approx(0.35 + 1.2 * 0.125, abs=1e-6)
    (path,) = composer.paths
    assert path.anchor.name == "ballet"
    assert [(s.type, s.kind, s.name) for s in path.steps] == [
        (EdgeType.ABOUT, "Concept", "johann strauss"),
        (EdgeType.ABOUT, "Memory", "composer"),
    ]


def test_seed_strength_falls_off_with_the_gap_to_the_best_hit(store: EmbeddedStore) -> None:
    found = run(store, UNCROWDED, limit=5)
    far = next(c for c in found.candidates if c.memory_id == "far")
    # "far" is reached through "season" (two memories) from near2, a seed whose
    # strength is exp((0.40 - 0.90) / 0.03): next to nothing.
    seed = math.exp((0.40 - 0.90) / 0.03)
    assert far.graph == pytest.approx(seed * 0.5 * 0.5 * 0.5, rel=1e-4)


def test_graph_only_hits_pass_the_gate_with_two_anchors_and_keep_their_similarity(
    store: EmbeddedStore,
) -> None:
    # With one dense candidate, "composer" is found by the graph alone.
    narrow = ASSOCIATIVE.model_copy(update={"candidates": 1})
    # One weak path (0.125 < 0.5) from the ballet alone: rejected.
    assert "composer" not in ranked(run(store, narrow, limit=5))
    # The query naming "austria" is a second, independent anchor: accepted, and
    # ranked by its real similarity, not a zero.
    found = run(store, narrow, extraction=Extraction(concepts=("austria",)), limit=5)
    composer = next(c for c in found.candidates if c.memory_id == "composer")
    assert composer.similarity == pytest.approx(0.35, abs=1e-6)
    assert composer.graph == pytest.approx(0.125 + 1.0 * 0.5)


def test_query_concepts_anchor_their_hubs_but_trigger_names_do_not(
    store: EmbeddedStore,
) -> None:
    by_concept = run(store, ASSOCIATIVE, extraction=Extraction(concepts=("austria",)))
    assert [h.name for h in by_concept.hubs] == ["austria"]
    assert "composer" in ranked(by_concept)
    # "austria" as a trigger (a head noun or verb) is not the concept hub.
    by_trigger = run(store, ASSOCIATIVE, extraction=Extraction(triggers=("austria",)))
    assert by_trigger.hubs == []


def test_a_phrases_head_is_no_second_anchor_where_the_phrase_has_a_hub(
    tmp_path: Path,
) -> None:
    s = EmbeddedStore(tmp_path / "heads")
    hubs = {"flaky": ("database schema", "schema"), "graphql": ("graphql", "schema")}
    s.add_memories(
        C,
        [
            MemoryRecord(
                memory=memory(mid, (concept,)),
                vector=unit(0.2),
                edges=(
                    Edge(source=mid, type=EdgeType.ABOUT, target=concept, weight=0.4),
                    Edge(source=mid, type=EdgeType.HAS_TRIGGER, target=trigger, weight=0.5),
                ),
            )
            for mid, (concept, trigger) in hubs.items()
        ],
    )
    phrase = Extraction(concepts=("database schema",), triggers=("schema", "downtime"))
    found = run(s, ASSOCIATIVE, "change the database schema", phrase)
    assert [(h.kind, h.name) for h in found.hubs] == [("Concept", "database schema")]
    # The head alone, or a phrase with no hub, anchors the trigger.
    alone = Extraction(concepts=("schema change",), triggers=("schema",))
    found = run(s, ASSOCIATIVE, "a schema change", alone)
    assert [(h.kind, h.name) for h in found.hubs] == [("Trigger", "schema")]
    s.close()


def test_without_explain_no_paths_are_built(store: EmbeddedStore) -> None:
    found = run(store, ASSOCIATIVE)
    assert found.candidates[1].graph is not None
    assert all(c.paths == [] for c in found.candidates)


def test_a_seed_no_other_anchor_reaches_keeps_its_place(tmp_path: Path) -> None:
    # "lone" matches nearly as well as the best hit but shares no hub with
    # anything; "shared" matches far worse, and both "best" and "other" reach it.
    table = {
        "best": (0.90, ("k1",)),
        "lone": (0.89, ()),
        "other": (0.88, ("k2",)),
        "shared": (0.70, ("k1", "k2")),
        "far": (0.10, ("k3",)),
    }
    s = EmbeddedStore(tmp_path / "seeds")
    try:
        s.add_memories(
            C,
            [
                MemoryRecord(
                    memory=memory(mid, concepts),
                    vector=unit(sim),
                    edges=tuple(
                        Edge(source=mid, type=EdgeType.ABOUT, target=c, weight=0.5)
                        for c in concepts
                    ),
                )
                for mid, (sim, concepts) in table.items()
            ],
        )
        uncredited = UNCROWDED.model_copy(update={"start_credit": 0.0})
        before = run(s, uncredited, query="q", limit=5)
        after = run(s, UNCROWDED, query="q", limit=5)
    finally:
        s.close()
    # Two seeds' paths carry "shared" past every seed when seeds get no credit.
    assert ranked(before)[0] == "shared"
    assert ranked(after) == ["best", "lone", "other", "shared", "far"]
    weight = ASSOCIATIVE.weights["graph"] * ASSOCIATIVE.start_credit
    score = {c.memory_id: c.score for c in after.candidates}
    temperature = ASSOCIATIVE.start_temperature
    assert temperature is not None
    strength = math.exp((0.89 - 0.90) / temperature)
    assert score["lone"] == pytest.approx(0.89 + weight * strength, abs=1e-6)
    # Its credit is all that changed for a seed the walk does not reach.
    lone_before = next(c for c in before.candidates if c.memory_id == "lone")
    assert lone_before.score == pytest.approx(0.89, abs=1e-6)


def test_the_lexical_weight_leans_further_when_dense_and_lexical_disagree() -> None:
    from hippocampus.retrieve.leans import lexical_weight

    dense = {f"m{i}": 0.9 - i / 100 for i in range(20)}
    agreeing = {f"m{i}": 20.0 - i for i in range(20)}
    apart = {f"t{i}": 20.0 - i for i in range(20)}
    query = "how do we roll out schema changes"
    base = ASSOCIATIVE.weights["lexical"]
    assert lexical_weight(query, dense, agreeing, ASSOCIATIVE, None, None) == pytest.approx(base)
    leaning = 1.0 + ASSOCIATIVE.lexical_disagreement
    weight = lexical_weight(query, dense, apart, ASSOCIATIVE, None, None)
    assert weight == pytest.approx(base * leaning)
    # A recipe without the lean keeps its weight whatever the signals say.
    fixed = ASSOCIATIVE.model_copy(update={"lexical_disagreement": 0.0})
    assert lexical_weight(query, dense, apart, fixed, None, None) == pytest.approx(base)
    # Names and dates lean first; disagreement scales the whole.
    named = "what did Caroline say on 7 May"
    with_names = base + 2 * ASSOCIATIVE.lexical_lean
    weight = lexical_weight(named, dense, apart, ASSOCIATIVE, None, None)
    assert weight == pytest.approx(with_names * leaning)


def test_the_lexical_weight_leans_further_when_similarity_does_not_corroborate_the_words() -> None:
    from hippocampus.retrieve.config import MAX_UNCORROBORATED
    from hippocampus.retrieve.fusion import corroboration
    from hippocampus.retrieve.leans import lexical_weight

    best = {f"m{i}": 0.9 - i / 100 for i in range(20)}
    lexical = {"t0": 9.0, "t1": 8.0, "t2": 7.0, "m0": 1.0}
    query = "how do we roll out schema changes"
    off = ASSOCIATIVE.model_copy(update={"uncorroborated": 0.0})

    def lean(similarity: float) -> tuple[float, float]:
        dense = {**best, "t0": similarity, "t1": similarity, "t2": similarity}
        found = corroboration(dense, lexical, top=ASSOCIATIVE.spread_top)
        assert found is not None
        leaning = lexical_weight(query, dense, lexical, ASSOCIATIVE, found, None)
        return found, leaning / lexical_weight(query, dense, lexical, off, found, None)

    # Within three deviations below the best similarities' mean: as before.
    found, ratio = lean(0.75)
    assert -3.0 < found < 0.0
    assert ratio == pytest.approx(1.0)
    # Five deviations below: the weight times 5/3.
    found, ratio = lean(0.805 - 5 * 0.0577)
    assert found == pytest.approx(-5.0, abs=0.01)
    assert ratio == pytest.approx(-found / ASSOCIATIVE.uncorroborated)
    # Far below: no more than the cap.
    found, ratio = lean(-0.5)
    assert found < -4 * ASSOCIATIVE.uncorroborated
    assert ratio == pytest.approx(MAX_UNCORROBORATED)


def test_a_collection_whose_similarity_seldom_corroborates_leans_to_words_again() -> None:
    from hippocampus.retrieve.config import MAX_UNCORROBORATED
    from hippocampus.retrieve.leans import lexical_weight

    dense = {f"m{i}": 0.9 - i / 100 for i in range(20)}
    lexical = {f"m{i}": 20.0 - i for i in range(20)}
    query = "how do we roll out schema changes"
    threshold = ASSOCIATIVE.collection_uncorroborated
    alone = lexical_weight(query, dense, lexical, ASSOCIATIVE, -1.0, None)

    def ratio(typical: float | None) -> float:
        return lexical_weight(query, dense, lexical, ASSOCIATIVE, -1.0, typical) / alone

    # Typical corroboration within the threshold, or not known yet: as before.
    assert ratio(None) == pytest.approx(1.0)
    assert ratio(0.4) == pytest.approx(1.0)
    assert ratio(-threshold) == pytest.approx(1.0)
    # Twice the threshold below 0: twice the weight; far below, the cap.
    assert ratio(-2 * threshold) == pytest.approx(2.0)
    assert ratio(-10 * threshold) == pytest.approx(MAX_UNCORROBORATED)
    # The query's own measure and the collection's each lean, one on the other.
    both = lexical_weight(query, dense, lexical, ASSOCIATIVE, -6.0, -2 * threshold)
    assert both / alone == pytest.approx(2.0 * 6.0 / ASSOCIATIVE.uncorroborated)
    off = ASSOCIATIVE.model_copy(update={"collection_uncorroborated": 0.0})
    assert lexical_weight(query, dense, lexical, off, -1.0, -10.0) == pytest.approx(alone)


QUERY = "who ruled the austrian composer's country"


def recall_with(
    store: EmbeddedStore,
    extractor: FixedExtractor,
    reading: Future[Extraction] | None = None,
    pool: ThreadPoolExecutor | None = None,
) -> Retrieval:
    return retrieve(
        store,
        extractor,
        C,
        QUERY,
        QUERY_VECTOR,
        model=MODEL,
        config=ASSOCIATIVE,
        filters=RecallFilters(),
        limit=3,
        now=T0,
        extraction=reading,
        pool=pool,
    )


def test_a_query_read_on_another_thread_anchors_the_walk(store: EmbeddedStore) -> None:
    extractor = CountingExtractor({QUERY: Extraction(concepts=("austria",))})
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="reader") as pool:
        reading = read_query(pool, extractor, QUERY)
        reading.result()
        found = recall_with(store, extractor, reading)
    assert [h.name for h in found.hubs] == ["austria"]
    # Read once, by the pool: the recall used what it found.
    assert len(extractor.threads) == 1
    assert extractor.threads[0].startswith("reader")


def test_a_reading_no_worker_started_is_done_by_the_recall(store: EmbeddedStore) -> None:
    extractor = CountingExtractor({QUERY: Extraction(concepts=("austria",))})
    release = threading.Event()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="reader") as pool:
        busy = pool.submit(release.wait, 10)
        reading = read_query(pool, extractor, QUERY)
        try:
            found = recall_with(store, extractor, reading)
        finally:
            release.set()
        assert busy.result()
    # The recall did not wait behind the busy worker: it read the query itself
    # and withdrew the reading.
    assert reading.cancelled()
    assert extractor.threads == [threading.current_thread().name]
    assert [h.name for h in found.hubs] == ["austria"]


class ThreadNoting(EmbeddedStore):
    """The embedded store, noting the thread each text search ran on. With
    ``await_text`` a vector search waits (a while at most) for a text search to
    have started: a worker's start is not left to chance."""

    text_threads: list[str]
    await_text: bool
    text_started: threading.Event
    side_by_side: bool = False

    def reads_side_by_side(self, collection: str) -> bool:
        return self.side_by_side

    def search_text(  # type: ignore[override]
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        self.text_threads.append(threading.current_thread().name)
        self.text_started.set()
        return super().search_text(collection, query, k=k, filters=filters)

    def search_vectors(  # type: ignore[override]
        self, collection: str, vector: Vector, **kwargs: Any
    ) -> list[tuple[str, float]]:
        if self.await_text:
            self.text_started.wait(10)
        return super().search_vectors(collection, vector, **kwargs)


# Memories some of whose words the query says, at several similarities.
WORDED = {
    "emperor": ("The emperor ruled the country from Vienna", 0.30),
    "composer": ("The austrian composer wrote waltzes", 0.80),
    "season": ("The opera season opened in May", 0.50),
}


def searching(tmp_path: Path, parallel: bool = False) -> ThreadNoting:
    s = ThreadNoting(tmp_path / "noted")
    s.text_threads = []
    s.await_text = False
    s.text_started = threading.Event()
    s.side_by_side = parallel
    s.add_memories(
        C,
        [
            MemoryRecord(
                memory=memory(mid, ()).model_copy(
                    update={"content": text, "content_hash": hash_of(text)}
                ),
                vector=unit(sim),
            )
            for mid, (text, sim) in WORDED.items()
        ],
    )
    return s


def searched(store: ThreadNoting, pool: ThreadPoolExecutor | None) -> Retrieval:
    return recall_with(store, FixedExtractor({QUERY: NOTHING}), pool=pool)


def test_text_is_searched_on_the_pool_while_vectors_are_searched(tmp_path: Path) -> None:
    store = searching(tmp_path)
    try:
        alone = searched(store, None)
        store.await_text = True
        store.text_started.clear()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="texts") as pool:
            beside = searched(store, pool)
    finally:
        store.close()
    assert store.text_threads[0] == threading.current_thread().name
    assert store.text_threads[1].startswith("texts")
    found = [(c.memory_id, c.score, c.lexical) for c in beside.candidates]
    assert found == [(c.memory_id, c.score, c.lexical) for c in alone.candidates]
    assert {mid for mid, _, lexical in found if lexical} == {"emperor", "composer"}


def test_a_text_search_no_worker_started_is_done_by_the_recall(tmp_path: Path) -> None:
    store = searching(tmp_path)
    release = threading.Event()
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="texts") as pool:
            busy = pool.submit(release.wait, 10)
            try:
                found = searched(store, pool)
            finally:
                release.set()
            assert busy.result()
    finally:
        store.close()
    # Searched here, once: the queued search was withdrawn, not waited for.
    assert store.text_threads == [threading.current_thread().name]
    assert found.candidates[0].memory_id == "composer"


class QueryLike:
    """An embedder of the worlds' three dimensions: every text as the query."""

    name = MODEL
    dim = 3

    def encode(self, texts: Sequence[str]) -> Vector:
        return np.tile(QUERY_VECTOR, (len(texts), 1))


@pytest.mark.parametrize("parallel", [True, False])
def test_a_recall_searches_text_beside_only_where_the_store_reads_in_parallel(
    tmp_path: Path, parallel: bool
) -> None:
    store = searching(tmp_path, parallel)
    store.await_text = parallel
    service = Hippocampus(store, QueryLike(), FixedExtractor({}))
    try:
        service.recall(C, QUERY, query_vector=QUERY_VECTOR, learn=False)
    finally:
        service.close()
    (thread,) = store.text_threads
    assert thread.startswith("hippo-query") is parallel


class Beside(EmbeddedStore):
    """The embedded store, noting the thread of each read a recall may do beside
    another. The read it would do meanwhile waits (a while at most) for the one
    beside to have started, so that no worker's start is left to chance."""

    threads: dict[str, list[str]]
    started: dict[str, threading.Event]
    waiting: bool
    order: list[tuple[str, frozenset[str]]]

    def _note(self, name: str) -> None:
        self.threads.setdefault(name, []).append(threading.current_thread().name)
        self.started.setdefault(name, threading.Event()).set()

    def _after(self, name: str) -> None:
        if self.waiting:
            self.started.setdefault(name, threading.Event()).wait(10)

    def match_hubs(self, collection: str, names: Sequence[str]) -> Any:
        self._note("hubs")
        return super().match_hubs(collection, names)

    def search_vectors(self, collection: str, vector: Vector, **kwargs: Any) -> Any:
        self._after("hubs")
        hits = super().search_vectors(collection, vector, **kwargs)
        self.order.append(("search", frozenset(mid for mid, _ in hits)))
        return hits

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> Any:
        self._note("crowding")
        self.order.append(("crowding", frozenset(ids)))
        return super().crowding(collection, ids, model=model)

    def similarities(self, collection: str, ids: Sequence[str], vector: Vector, **kw: Any) -> Any:
        self.order.append(("similarities", frozenset(ids)))
        return super().similarities(collection, ids, vector, **kw)

    def get_memories(self, collection: str, ids: Sequence[str]) -> Any:
        self._note("memories")
        return super().get_memories(collection, ids)

    def get_vectors(self, collection: str, ids: Sequence[str]) -> Any:
        self._after("memories")
        return super().get_vectors(collection, ids)


WORDS = ("waltz", "opera", "vienna", "season", "emperor", "river", "palace", "court")
HUBS = ("austria", "music", "empire", "danube")


def test_reads_done_beside_each_other_rank_as_reads_done_in_turn(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    s = Beside(tmp_path / "beside")
    s.threads, s.started, s.waiting, s.order = {}, {}, False, []
    records = []
    for i in range(40):
        text = " ".join(rng.choice(WORDS, size=3)) + f" note {i}"
        concepts = tuple(str(c) for c in rng.choice(HUBS, size=2, replace=False))
        mid = f"m{i:02d}"
        records.append(
            MemoryRecord(
                memory=memory(mid, concepts).model_copy(
                    update={"content": text, "content_hash": hash_of(text)}
                ),
                vector=(v := rng.normal(size=3).astype(np.float32)) / np.linalg.norm(v),
                edges=tuple(
                    Edge(source=mid, type=EdgeType.ABOUT, target=c, weight=0.5) for c in concepts
                ),
            )
        )
    s.add_memories(C, records)
    # Few dense candidates: words and the walk find memories beyond them, whose
    # similarity and crowding are read after.
    config = ASSOCIATIVE.model_copy(update={"candidates": 6})
    extractor = FixedExtractor({"the waltz at the palace": Extraction(concepts=("austria",))})

    def recall(pool: ThreadPoolExecutor | None) -> Retrieval:
        return retrieve(
            s,
            extractor,
            C,
            "the waltz at the palace",
            QUERY_VECTOR,
            model=MODEL,
            config=config,
            filters=RecallFilters(),
            limit=len(records),  # every score compared, the least similar's too
            now=T0,
            pool=pool,
        )

    try:
        alone = recall(None)
        s.threads.clear()
        s.order.clear()
        s.started.clear()  # the reads done in turn started them all
        s.waiting = True
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="beside") as pool:
            beside = recall(pool)
    finally:
        s.close()
    # Each read the recall could do beside another ran on the pool, at least once.
    for name in ("hubs", "memories"):
        assert any(t.startswith("beside") for t in s.threads[name]), name
    # Crowding is read in the recall's own thread, each time after the
    # similarities of the memories it measures (a store may hand it their
    # vectors): the candidates', then the walk's finds'.
    assert not any(t.startswith("beside") for t in s.threads["crowding"])
    assert len(s.threads["crowding"]) == 2
    for i, (name, ids) in enumerate(s.order):
        if name == "crowding":
            read_before = set().union(*(read for _, read in s.order[:i]))
            assert ids <= read_before, ids - read_before

    def seen(r: Retrieval) -> list[tuple[Any, ...]]:
        return [(c.memory_id, c.score, c.similarity, c.lexical, c.graph) for c in r.candidates]

    assert seen(beside) == seen(alone)
    assert len(alone.candidates) > 20
    assert {c.graph for c in alone.candidates} != {None}
    # The results' memories were read meanwhile: the recall need not read them.
    assert {c.memory_id for c in beside.candidates} <= set(beside.memories)


def test_the_walks_starting_memories_are_configured_also_by_their_former_names() -> None:
    from hippocampus.retrieve import SearchConfig

    now = SearchConfig(name="X", starts=3, start_temperature=0.05, start_credit=0.2)
    former = SearchConfig(name="X", seeds=3, seed_temperature=0.05, seed_credit=0.2)
    assert former == now
    assert (now.starts, now.start_temperature, now.start_credit) == (3, 0.05, 0.2)
