"""The in-memory BM25 index of one collection's memory content, rebuilt from SQLite
at start like the vector index (:mod:`hippocampus.store.embedded.index`), and kept in
step with it by the store's writes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from hippocampus.lexical import BM25Index, tokenize
from hippocampus.store.embedded.rwlock import RWLock


class TextIndex:
    """BM25 over the content of one collection's memories, by memory id.

    Thread safety as for :class:`~hippocampus.store.embedded.index.CollectionIndex`:
    searches share a read lock, each update holds the write lock, so a search sees
    an update wholly or not at all. The store serializes the updates themselves
    behind its write lock. Text is tokenized before the lock is taken, so readers
    wait only for the postings to change.
    """

    def __init__(self, collection: str) -> None:
        self.collection = collection
        self._lock = RWLock()
        self._bm25 = BM25Index()

    @classmethod
    def build(cls, collection: str, rows: Iterable[tuple[str, str]]) -> TextIndex:
        """An index over ``(memory_id, content)`` rows.

        Raises:
            KeyError: an id is repeated.
        """
        index = cls(collection)
        # Not shared yet: no lock needed.
        index._bm25.add_many(rows)
        return index

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
            return self._bm25.search(query, k, allowed)

    def add(self, items: Sequence[tuple[str, str]]) -> None:
        """Index new ``(memory_id, content)`` memories.

        Raises:
            KeyError: an id is already indexed (the store checks ids first).
        """
        terms = [(memory_id, tokenize(content)) for memory_id, content in items]
        with self._lock.write():
            for memory_id, memory_terms in terms:
                self._bm25.add_terms(memory_id, memory_terms)

    def replace(self, memory_id: str, content: str) -> None:
        """Index ``content`` as the memory's, unless its terms are unchanged (most
        replaces edit metadata only: they leave readers undisturbed)."""
        terms = tuple(tokenize(content))
        # Only the store's writer thread changes the index, and this is it: reading
        # without the lock cannot see a write in progress.
        if self._bm25.terms_of(memory_id) == terms:
            return
        with self._lock.write():
            self._bm25.replace_terms(memory_id, terms)

    def remove(self, memory_id: str) -> None:
        """Forget a memory (no-op when unknown)."""
        if memory_id not in self._bm25:
            return
        with self._lock.write():
            self._bm25.remove(memory_id)
