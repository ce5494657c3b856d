"""The in-memory BM25 index of one collection's memory content, rebuilt from SQLite
at start like the vector index (:mod:`hippocampus.store.embedded.index`), and kept in
step with it by the store's writes. A large collection's searches take their
candidates from tantivy (:mod:`~hippocampus.store.embedded.text_candidates`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from hippocampus.lexical import BM25Index, tokenize
from hippocampus.store.embedded.rwlock import RWLock
from hippocampus.store.embedded.text_candidates import (
    CANDIDATES_FROM,
    MAX_CANDIDATES,
    MIN_CANDIDATES,
    WIDEN,
    TextCandidates,
)

logger = logging.getLogger(__name__)


class TextIndex:
    """BM25 over the content of one collection's memories, by memory id.

    Thread safety as for :class:`~hippocampus.store.embedded.index.CollectionIndex`:
    searches share a read lock, each update holds the write lock, so a search sees
    an update wholly or not at all. The store serializes the updates themselves
    behind its write lock. Text is tokenized before the lock is taken, so readers
    wait only for the postings to change.

    Args:
        collection: the collection's name.
        candidates_from: memories from which searches take tantivy's candidates
            (``None``: never).
    """

    def __init__(self, collection: str, candidates_from: int | None = CANDIDATES_FROM) -> None:
        self.collection = collection
        self._lock = RWLock()
        self._bm25 = BM25Index()
        self._candidates_from = candidates_from
        self._candidates: TextCandidates | None = None

    @classmethod
    def build(
        cls,
        collection: str,
        rows: Iterable[tuple[str, str]],
        candidates_from: int | None = CANDIDATES_FROM,
    ) -> TextIndex:
        """An index over ``(memory_id, content)`` rows.

        Raises:
            KeyError: an id is repeated.
        """
        index = cls(collection, candidates_from)
        # Not shared yet: no lock needed.
        index._bm25.add_many(rows)
        index.plan_candidates()
        return index

    def plan_candidates(self) -> None:
        """Start filling tantivy when the collection is large enough (for an index
        built or restored whole; writes call it as they grow one)."""
        with self._lock.write():
            self._plan_candidates()

    def _plan_candidates(self) -> None:
        threshold = self._candidates_from
        if self._candidates is not None or threshold is None or len(self._bm25) < threshold:
            return
        try:
            candidates = TextCandidates(self.collection, self._bm25, self._lock)
        except ImportError as e:
            logger.warning(
                "collection %s: tantivy cannot be loaded (%s); text searches score every match",
                self.collection,
                e,
            )
            self._candidates_from = None
            return
        candidates.start(self._bm25.numbers())
        self._candidates = candidates

    def close(self) -> None:
        """Stop filling tantivy (searches stay exact after)."""
        candidates = self._candidates
        if candidates is not None:
            candidates.close()
            with self._lock.write():
                self._candidates = None

    def candidates_state(self) -> tuple[bool, int] | None:
        """``(whether searches take tantivy's candidates, documents waiting for
        it)``; ``None`` when the collection has none."""
        with self._lock.read():
            c = self._candidates
            return None if c is None else (c.ready, len(c.staged))

    def __len__(self) -> int:
        return len(self._bm25)

    def ids(self) -> set[str]:
        """The memories indexed (for checks)."""
        with self._lock.read():
            return self._bm25.ids()

    def search(
        self, query: str, *, k: int, allowed: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``k`` memories by BM25 score of their content against ``query``, among
        those ``allowed`` accepts (all when ``None``); best first, scores > 0, ties
        by id."""
        with self._lock.read():
            candidates = self._candidates
            if candidates is None or not candidates.ready:
                return self._bm25.search(query, k, allowed)
            terms = self._bm25.query_terms(query)
            if k <= 0 or not terms:
                return []
            count = max(MIN_CANDIDATES, WIDEN * k)
            while True:
                nums, whole = candidates.candidates(terms, count)
                hits = self._bm25.search_among(terms, nums, k, allowed)
                if len(hits) == k or whole:
                    return hits
                # Too few passed the filter: ask for twice what its pass rate
                # needs, or score every match when that is past the widest ask.
                rate = len(hits) / max(int(nums.size), 1)
                needed = 2 * k / rate if rate > 0.0 else float("inf")
                if count >= MAX_CANDIDATES or needed > MAX_CANDIDATES:
                    return self._bm25.search(query, k, allowed)
                count = min(max(WIDEN * count, int(needed)), MAX_CANDIDATES)

    def add(self, items: Sequence[tuple[str, str]]) -> None:
        """Index new ``(memory_id, content)`` memories.

        Raises:
            KeyError: an id is already indexed (the store checks ids first).
        """
        terms = [(memory_id, tokenize(content)) for memory_id, content in items]
        with self._lock.write():
            for memory_id, memory_terms in terms:
                self._bm25.add_terms(memory_id, memory_terms)
                self._staged(memory_id)
            if self._candidates is None:
                self._plan_candidates()

    def replace(self, memory_id: str, content: str) -> None:
        """Index ``content`` as the memory's, unless its terms are unchanged (most
        replaces edit metadata only: they leave readers undisturbed)."""
        terms = tuple(tokenize(content))
        # Only the store's writer thread changes the index, and this is it: reading
        # without the lock cannot see a write in progress.
        if self._bm25.terms_of(memory_id) == terms:
            return
        with self._lock.write():
            self._dropped(memory_id)
            self._bm25.replace_terms(memory_id, terms)
            self._staged(memory_id)

    def remove(self, memory_id: str) -> None:
        """Forget a memory (no-op when unknown)."""
        if memory_id not in self._bm25:
            return
        with self._lock.write():
            self._dropped(memory_id)
            self._bm25.remove(memory_id)

    def _staged(self, memory_id: str) -> None:
        """A document just indexed waits for tantivy. Caller holds the write lock."""
        if self._candidates is not None:
            num = self._bm25.number(memory_id)
            if num is not None:
                self._candidates.stage(num)

    def _dropped(self, memory_id: str) -> None:
        """A document about to go (or change) leaves tantivy's candidates. Caller
        holds the write lock."""
        if self._candidates is not None:
            num = self._bm25.number(memory_id)
            if num is not None:
                self._candidates.drop(num)
