"""The embedded store's lexical search (:class:`~hippocampus.store.roles.TextRole`):
BM25 over content, from the in-memory text index."""

from __future__ import annotations

import time

from hippocampus.model import RecallFilters, Tier
from hippocampus.store.embedded.base import EmbeddedBase


class EmbeddedText(EmbeddedBase):
    """BM25 search over the in-memory text index, filtered by the vector index."""

    def search_text(
        self, collection: str, query: str, *, k: int, filters: RecallFilters
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by BM25 relevance of their content to ``query``, among
        those that pass ``filters`` (applied as by :meth:`search_vectors`); best
        first, scores > 0 only, ties by id.

        Content is tokenized by :func:`hippocampus.lexical.tokenize` (case-folded,
        stop words dropped, lightly stemmed); each distinct query term counts once.
        """
        self._check_open()
        index = self._index(collection)
        text = self._texts.get(collection)
        if text is None:  # only when closed since _index() returned
            self._check_open()
            return []
        with index.matching(filters) as passes:
            return text.search(query, k=k, allowed=passes)

    def text_neighbours(self, collection: str, text: str, *, k: int) -> list[str]:
        """Up to ``k`` memories of any tier sharing words with ``text``, best first
        by BM25 (:meth:`search_text`'s ranking, which costs nothing more here)."""
        hits = self.search_text(collection, text, k=k, filters=RecallFilters(tiers=list(Tier)))
        return [memory_id for memory_id, _ in hits]

    def reads_side_by_side(self, collection: str) -> bool:
        """Whether a recall of ``collection`` searches text beside vectors: once
        its text search takes tantivy's candidates. tantivy and the vector graph
        (usearch) search outside the interpreter, so the two overlap on two cores
        (p50 14.7 against 17.2 ms a recall at a million); a smaller collection's
        searches run in Python and numpy and only take turns (9.4 against 8.2 ms
        at 20,000)."""
        text = self._texts.get(collection)
        state = text.candidates_state() if text is not None else None
        return state is not None and state[0]

    def wait_for_text_candidates(self, collection: str, timeout_s: float | None = None) -> bool:
        """Block until the collection's text searches take tantivy's candidates
        with nothing waiting for it; ``True`` at once for a collection too small
        to have them, ``False`` on timeout. Beyond the contract (benchmarks,
        tests)."""
        self._index(collection)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            text = self._texts.get(collection)
            state = text.candidates_state() if text is not None else None
            if state is None or state == (True, 0):
                return True
            if self._closed or (deadline is not None and time.monotonic() > deadline):
                return False
            time.sleep(0.05)
