"""bench/bm25_libraries.py: each library is asked what the store's index is, and
its results are counted against the exact BM25 best."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bm25_libraries
from bench.bm25_libraries import Fts5, Store, kth_best, measure, print_table, run
from hippocampus.lexical import BM25Index, tokenize

DOCS = [
    "redis cache timeout on the session store",
    "postgres connection pool exhausted under load",
    "redis cluster failover during the deploy",
    "the deploy pipeline runs the integration tests",
    "session tokens expire after an hour",
]


def exact_over(docs: list[list[str]]) -> BM25Index:
    index = BM25Index()
    for i, terms in enumerate(docs):
        index.add_terms(str(i), terms)
    return index


def test_the_store_is_exact_and_a_library_that_misses_is_counted() -> None:
    docs = [tokenize(d) for d in DOCS]
    exact = exact_over(docs)
    asks = {"recall": (["redis session timeout", "deploy tests"], 2)}
    truth = {"recall": [kth_best(exact, text, 2) for text in asks["recall"][0]]}
    r = measure(Store, docs, [tokenize("redis sentinel")], asks, exact, truth)
    assert r["recall"]["recall"] == 1.0

    class Wrong(Store):
        """Answers with the worst documents: no hit can be counted."""

        def search(self, terms: list[str], text: str, k: int) -> list[int]:
            found = [int(doc) for doc, _ in self.index.search(text, len(DOCS))]
            return [d for d in range(len(DOCS)) if d not in found[:k]][:k]

    r = measure(Wrong, docs, [], asks, exact, truth)
    assert r["recall"]["recall"] == 0.0


def test_fts5_matches_the_same_terms(tmp_path: Path) -> None:
    docs = [tokenize(d) for d in DOCS]
    fts = Fts5(docs, tmp_path)
    assert set(fts.search(["redis"], "redis", 5)) == {0, 2}
    fts.add(len(docs), [tokenize("redis sentinel")])
    assert set(fts.search(["redis"], "redis", 5)) == {0, 2, 5}


def test_a_small_run_reports_every_library(capsys: pytest.CaptureFixture[str]) -> None:
    result = run(300, 8, seed=7)
    libraries = result["libraries"]
    assert set(libraries) == set(bm25_libraries.LIBRARIES)
    store = libraries["store BM25Index"]
    assert store["recall"]["recall"] == store["neighbours"]["recall"] == 1.0
    assert 0.0 < libraries["SQLite FTS5"]["recall"]["recall"] <= 1.0
    for name, (module, _) in bm25_libraries.LIBRARIES.items():
        if module is not None and not bm25_libraries.installed(module):
            assert libraries[name] is None
    print_table(result)
    out = capsys.readouterr().out
    assert out.count("\n") >= 2 + len(libraries)
