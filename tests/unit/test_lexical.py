"""The tokenizer and the incremental BM25 index, without a store."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest

from hippocampus.lexical import STOP_WORDS, BM25Index, bm25_score, stem, tokenize

# -- tokenize ---------------------------------------------------------------------------


def test_tokenize_folds_case_and_compatibility_forms() -> None:
    # Fullwidth letters (NFKC) and the German sharp s (casefold) meet their plain forms.
    assert tokenize("ＫＡＦＫＡ Kafka kafka") == ["kafka"] * 3
    assert tokenize("Straße") == tokenize("STRASSE") == ["strass"]


def test_tokenize_splits_on_anything_but_letters_and_digits() -> None:
    assert tokenize("person-centered") == ["person", "center"]
    assert tokenize("orders.customer_id") == ["order", "customer", "id"]
    assert tokenize("p99 latency: 1200ms, HTTP/2") == ["p99", "latency", "1200ms", "http", "2"]


def test_tokenize_drops_stop_words_before_stemming() -> None:
    assert tokenize("Why did the job fail, and what was it?") == ["job", "fail"]
    assert tokenize("don't") == ["don"]
    assert tokenize("the of and") == []
    assert tokenize("  ...  ") == []
    assert {"the", "and", "was", "s", "t"} <= STOP_WORDS


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("timeouts", "timeout"),
        ("queries", "query"),
        ("queried", "query"),
        ("querying", "query"),
        ("running", "run"),
        ("stopped", "stop"),
        ("installing", "install"),
        ("added", "add"),
        ("classes", "class"),
        ("boxes", "box"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("string", "string"),
        ("need", "need"),
        ("speed", "speed"),
        ("use", "use"),
        ("http2", "http2"),
        ("café", "café"),
    ],
)
def test_stem_strips_plural_ing_and_ed_endings(word: str, expected: str) -> None:
    assert stem(word) == expected


@pytest.mark.parametrize(
    "forms",
    [
        ("cache", "caches", "cached", "caching"),
        ("configure", "configures", "configured", "configuring"),
        ("retry", "retries", "retried", "retrying"),
        ("deploy", "deploys", "deployed", "deploying"),
    ],
)
def test_the_forms_of_a_word_share_one_stem(forms: tuple[str, ...]) -> None:
    assert len({stem(f) for f in forms}) == 1


# -- BM25 scores ------------------------------------------------------------------------

# N = 3, lengths 2, 3, 2: avgdl = 7/3.
CORPUS = {"d1": "kafka redis", "d2": "kafka kafka lag", "d3": "redis cluster"}


def corpus_index(k1: float = 1.2, b: float = 0.75) -> BM25Index:
    index = BM25Index(k1=k1, b=b)
    index.add_many(CORPUS.items())
    return index


def test_bm25_matches_scores_computed_by_hand() -> None:
    index = corpus_index()
    assert len(index) == 3
    assert index.avgdl == pytest.approx(7 / 3)
    assert index.df("kafka") == 2
    assert index.idf("kafka") == pytest.approx(math.log(1.6))  # ln(1 + 1.5 / 2.5)
    # d2: tf 2, |d| 3 -> ln 1.6 · 2 · 2.2 / (2 + 1.2 · (0.25 + 0.75 · 3 / (7/3)))
    # d1: tf 1, |d| 2 -> ln 1.6 · 2.2 / (1 + 1.2 · (0.25 + 0.75 · 2 / (7/3)))
    hits = index.search("kafka", k=10)
    assert [doc for doc, _ in hits] == ["d2", "d1"]
    assert [score for _, score in hits] == pytest.approx([0.5981864372218454, 0.4991762683023676])


def test_bm25_sums_the_distinct_query_terms() -> None:
    index = corpus_index()
    # d3: redis (df 2) + cluster (df 1, idf ln(1 + 2.5 / 1.5)), each tf 1 in a doc of 2.
    assert index.idf("cluster") == pytest.approx(0.9808292530117263)
    expected = [("d3", 1.5408845783975806), ("d1", 0.4991762683023676)]
    for query in ("redis cluster", "redis cluster redis cluster", "Clusters of REDIS"):
        hits = index.search(query, k=10)
        assert [doc for doc, _ in hits] == [doc for doc, _ in expected]
        assert [s for _, s in hits] == pytest.approx([s for _, s in expected])


def test_k1_and_b_are_configurable() -> None:
    # k1 = 0 scores presence only: tf and length stop mattering.
    presence = corpus_index(k1=0.0).search("kafka", k=10)
    assert [s for _, s in presence] == pytest.approx([math.log(1.6)] * 2)
    # b = 0 drops length normalization: d2 scores ln 1.6 · 2 · 2.2 / (2 + 1.2).
    flat = dict(corpus_index(b=0.0).search("kafka", k=10))
    assert flat["d2"] == pytest.approx(math.log(1.6) * 4.4 / 3.2)
    with pytest.raises(ValueError):
        BM25Index(b=1.5)
    with pytest.raises(ValueError):
        BM25Index(k1=-1.0)


def test_only_documents_sharing_a_term_are_returned() -> None:
    index = corpus_index()
    assert [doc for doc, _ in index.search("lag", k=10)] == ["d2"]
    assert index.search("postgres", k=10) == []
    assert index.search("the and of", k=10) == []
    assert index.search("kafka", k=0) == []
    assert BM25Index().search("kafka", k=10) == []


def test_a_document_of_stop_words_counts_in_n_and_avgdl() -> None:
    index = corpus_index()
    index.add("empty", "the and of")
    assert len(index) == 4
    assert index.avgdl == pytest.approx(7 / 4)
    assert index.idf("kafka") == pytest.approx(math.log1p(2.5 / 2.5))


# -- ties and filters ---------------------------------------------------------------------


def test_ties_are_broken_by_ascending_id() -> None:
    index = BM25Index()
    for doc_id in ("m", "c", "x", "a", "q"):
        index.add(doc_id, "kafka lag")
    index.add("best", "kafka kafka")
    assert [doc for doc, _ in index.search("kafka", k=4)] == ["best", "a", "c", "m"]


def test_a_tie_wider_than_k_is_still_cut_by_id() -> None:
    index = BM25Index()
    shuffled = [f"doc{i:03d}" for i in range(300)]
    random.Random(1).shuffle(shuffled)
    for doc_id in shuffled:
        index.add(doc_id, "kafka consumer lag")
    hits = index.search("kafka", k=10)
    assert [doc for doc, _ in hits] == [f"doc{i:03d}" for i in range(10)]
    assert len({score for _, score in hits}) == 1


def random_corpus(n: int, seed: int) -> dict[str, str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)] + ["kafka", "redis", "timeout", "retry"]
    return {
        f"doc{i:04d}": " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12)))
        for i in range(n)
    }


QUERIES = ("kafka timeout", "w1 w2 w3", "retry redis w7", "w0", "timeouts retries")


class _Many:
    """A filter that answers a band of ids at once, and refuses one at a time."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed

    def __call__(self, doc_id: str) -> bool:
        raise AssertionError("asked one id at a time")

    def many(self, doc_ids: Sequence[str]) -> np.ndarray:
        return np.array([d in self.allowed for d in doc_ids], dtype=bool)


def test_filters_keep_the_order_of_the_unfiltered_ranking() -> None:
    docs = random_corpus(400, seed=3)
    index = BM25Index()
    index.add_many(docs.items())
    for query in QUERIES:
        full = index.search(query, k=len(docs))
        for allowed in (
            {d for d in docs if d.endswith("7")},  # small: looked up whole
            {d for d in docs if not d.endswith("7")},  # large: tested in rank order
        ):
            expected = [hit for hit in full if hit[0] in allowed][:15]
            assert index.search(query, k=15, allowed=allowed) == expected
            assert index.search(query, k=15, allowed=allowed.__contains__) == expected
            assert index.search(query, k=15, allowed=_Many(allowed)) == expected
    assert index.search("kafka", k=5, allowed=set()) == []
    assert index.search("kafka", k=5, allowed=lambda _: False) == []


def test_a_search_among_given_documents_scores_them_to_the_last_bit() -> None:
    docs = random_corpus(400, seed=8)
    index = BM25Index()
    index.add_many(docs.items())
    index.remove("doc0003")  # a free number among those asked: skipped
    every = np.arange(-2, len(docs) + 5)  # out-of-range numbers too
    some = np.array(
        [n for d in docs if d.endswith(("1", "4")) and (n := index.number(d)) is not None]
    )
    chosen = {d for d in docs if d.endswith(("1", "4"))}
    for query in QUERIES:
        terms = index.query_terms(query)
        assert index.search_among(terms, every, 20) == index.search(query, k=20)
        # Repeated numbers count once; the ranking is the full one, cut to those.
        among = index.search_among(terms, np.concatenate([some, some]), 10)
        assert among == [hit for hit in index.search(query, k=len(docs)) if hit[0] in chosen][:10]
        allowed = {d for d in chosen if d.endswith("4")}
        assert (
            index.search_among(terms, some, 10, allowed)
            == [hit for hit in index.search(query, k=len(docs)) if hit[0] in allowed][:10]
        )
    assert index.query_terms("the and kafka nothingsuch") == ["kafka"]
    assert index.search_among([], every, 5) == []


# -- updates ----------------------------------------------------------------------------


def test_incremental_updates_score_exactly_like_a_rebuild() -> None:
    rng = random.Random(5)
    live = random_corpus(300, seed=4)
    index = BM25Index()
    index.add_many(live.items())
    extra = random_corpus(360, seed=6)
    for step, (doc_id, text) in enumerate(list(extra.items())[300:]):
        gone = rng.choice(sorted(live))
        assert index.remove(gone)
        del live[gone]
        changed = rng.choice(sorted(live))
        live[changed] = extra[f"doc{step:04d}"]
        index.replace(changed, live[changed])
        live[f"new{doc_id}"] = text
        index.add(f"new{doc_id}", text)

    rebuilt = BM25Index()
    rebuilt.add_many(sorted(live.items()))
    assert len(index) == len(rebuilt) == len(live)
    assert index.avgdl == rebuilt.avgdl
    for term in ("kafka", "w1", "w39", "retry"):
        assert index.df(term) == rebuilt.df(term)
    for query in QUERIES:
        assert index.search(query, k=50) == rebuilt.search(query, k=50)


def test_removing_every_document_empties_the_index() -> None:
    index = corpus_index()
    for doc_id in CORPUS:
        assert index.remove(doc_id)
    assert not index.remove("d1")
    assert len(index) == 0
    assert index.avgdl == 0.0
    assert index.df("kafka") == 0
    assert index.search("kafka", k=5) == []
    index.add("d4", "kafka")  # reuses a freed number
    [(doc, score)] = index.search("kafka", k=5)
    assert doc == "d4"
    assert score == pytest.approx(math.log1p(0.5 / 1.5))


def test_replace_reports_whether_the_terms_changed() -> None:
    index = corpus_index()
    assert not index.replace("d1", "Kafka, Redis!")  # same terms
    assert index.replace("d1", "redis only")
    assert [doc for doc, _ in index.search("kafka", k=5)] == ["d2"]
    assert index.replace("d9", "kafka")  # absent: added
    assert "d9" in index
    assert index.terms_of("d9") == ("kafka",)
    assert index.terms_of("nope") is None


def test_adding_an_indexed_id_is_refused() -> None:
    index = corpus_index()
    with pytest.raises(KeyError):
        index.add("d1", "anything")
    assert index.search("anything", k=5) == []


def test_a_score_from_kept_statistics_is_the_indexs_to_the_last_bit() -> None:
    # The Neo4j store scores its full-text candidates with bm25_score from counts
    # it keeps: the same number the embedded store's index gives, not a close one.
    rng = random.Random(3)
    words = ["cache", "deploy", "timeout", "redis", "pool", "query", "index", "lock"]
    docs = {f"d{i}": " ".join(rng.choices(words, k=rng.randint(1, 12))) for i in range(40)}
    index = BM25Index()
    index.add_many(docs.items())
    terms = {doc_id: tokenize(text) for doc_id, text in docs.items()}
    total = sum(len(t) for t in terms.values())
    for query in ("cache", "redis pool timeout", "lock lock index deploy", "nothing"):
        wanted = list(dict.fromkeys(tokenize(query)))
        dfs = [index.df(t) for t in wanted]
        for doc_id, score in index.search(query, k=len(docs)):
            tfs = [terms[doc_id].count(t) for t in wanted]
            assert bm25_score(tfs, dfs, len(terms[doc_id]), len(docs), total) == score
        assert bm25_score([0], [0], 3, len(docs), total) == 0.0
