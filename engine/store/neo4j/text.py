"""Lexical search in the Neo4j store: BM25 as the embedded store scores it,
over candidates the full-text index finds."""

from __future__ import annotations

from typing import Any

from neo4j import ManagedTransaction

from hippocampus.lexical import bm25_score
from hippocampus.model import RecallFilters
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    Neo4jConnection,
    one_list,
    one_statement,
    run_statement,
)
from hippocampus.store.neo4j.schema import TEXT_INDEX
from hippocampus.store.neo4j.vectors import MAX_CANDIDATES, candidate_widths

_TEXT_OVERSAMPLE = 4
"""Full-text searches ask for ``k`` times this many candidates first (at least
:data:`_MIN_TEXT_CANDIDATES`). Lucene picks them in its BM25 order, whose term
statistics are already the collection's (terms are tagged with it); only its
document count and mean length are the whole index's, which move a memory a
few places, not past four times ``k``: at 100k memories, the 50 best of 200 candidates
were the 50 best of 500 for 60 queries of 60, at half the time."""
_MIN_TEXT_CANDIDATES = 200
"""Full-text candidates of a first search: the ranking is exact when the
collection's memories sharing a term with the query are fewer."""


class Neo4jText(Neo4jConnection):
    """Lexical search, and memories sharing words with a text."""

    def search_text(
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by BM25 relevance of their content to ``query`` among
        those that pass ``filters``, scored as the embedded store scores them (its
        tokenizer, and this collection's own statistics); best first, scores > 0
        only, ties by id. The full-text index gives a bounded number of
        candidates (``recall/search_text`` says when the ranking is exact), more
        while the filters leave fewer than ``k`` of them."""
        terms, words = convert.text_query(collection, query)
        if not terms or k <= 0:
            return []
        params = {
            "index": TEXT_INDEX,
            "query": " ".join(words),
            "terms": words,
            **convert.filter_params(filters),
        }
        return self._read("search text", lambda tx: _text_hits(tx, collection, terms, params, k))

    def text_neighbours(self, collection: str, text: str, *, k: int) -> list[str]:
        """Up to ``k`` memories sharing words with ``text``, in the full-text
        index's order (``recall/text_neighbours``): no term counts are read, which
        for a long text against 200 candidates is most of :meth:`search_text`."""
        terms, words = convert.text_query(collection, text)
        if not terms or k <= 0:
            return []
        params = {"index": TEXT_INDEX, "query": " ".join(words), "k": k}
        rows = self._read(
            "search text", one_statement("recall/text_neighbours", params, collection)
        )
        return list(dict.fromkeys(one_list(rows, "ids")))


def _text_hits(
    tx: ManagedTransaction,
    collection: str,
    terms: list[str],
    params: dict[str, Any],
    k: int,
) -> list[tuple[str, float]]:
    """:meth:`Neo4jText.search_text`'s answer: the full-text index's candidates
    (widened while the filters leave fewer than ``k`` and more are there),
    scored by BM25 with the collection's counts, which the first search reads
    in the same round trip."""
    first = min(max(k * _TEXT_OVERSAMPLE, _MIN_TEXT_CANDIDATES), MAX_CANDIDATES)
    params = {**params, "plain_terms": terms}
    rows = (
        (width, run_statement(tx, "recall/search_text", collection, candidates=width, **params)[0])
        for width in candidate_widths(first)
    )
    width, row = next(rows)
    n, total = int(row["memories"]), int(row["length"])
    dfs = [int(df) for df in row["dfs"]]
    if not (n and total and any(dfs)):
        return []
    while len(row["hits"]) < k and row["seen"] >= width:
        # The filters left too few of the candidates, and the index has more.
        wider = next(rows, None)
        if wider is None:
            break
        width, row = wider
    # A memory deleted after the index handed its node over reads as nulls: its
    # id, its length and how often it holds each term.
    scored = [
        (hit["id"], bm25_score(hit["tfs"], dfs, hit["length"], n, total))
        for hit in row["hits"]
        if hit["id"] is not None and hit["length"] is not None and None not in hit["tfs"]
    ]
    ranked = sorted((hit for hit in scored if hit[1] > 0.0), key=lambda hit: (-hit[1], hit[0]))
    return ranked[:k]
