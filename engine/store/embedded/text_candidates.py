"""Candidates for the text search of a large collection, from a tantivy index.

BM25 in :class:`~hippocampus.lexical.BM25Index` scores every document that
shares a term with the query: at a million memories, a recall's text search
(6.8 ms) and the duplicate check's (34 ms) grow with the collection. tantivy
skips the blocks of postings that cannot reach the best (block-max WAND) and
answered the same asks in 2.4 and 9.0 ms, every answer among the exact best
(``bench/bm25_libraries.py``, the benchmarks page). So a large collection's
text index asks tantivy, over the same terms, for a few times the results it
wants, and scores those exactly itself, as the Neo4j store does with its
full-text index: a score is never approximate, only the set of documents
scored is.

tantivy holds a copy of the terms in memory and is never saved: it is filled
in the background when a collection reaches the size, or is loaded or built
at that size, and searches stay exact until it is. Writes stage the documents
they change, and a worker adds them a batch at a time; the staged documents
are scored directly beside tantivy's candidates, so a search sees every write
at once. Each tantivy document carries a key, never reused; a document
removed or replaced has its key dropped at once (its hits are skipped) and
deleted from tantivy at the next commit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hippocampus.lexical import BM25Index
from hippocampus.store.embedded.graph_layout import grown
from hippocampus.store.embedded.rwlock import RWLock

logger = logging.getLogger(__name__)

CANDIDATES_FROM = 200_000
"""Memories of one collection from which its text search takes tantivy's
candidates. At 100,000 the store's own BM25 answers a recall in 0.5 ms and a
duplicate check in 1.8 ms (tantivy 0.3 and 1.0): too little to win back the
copy of the terms; at a million it is 6.8 and 34 ms."""

MIN_CANDIDATES = 64
"""Candidates asked of tantivy at least, for one search."""

WIDEN = 4
"""Candidates asked per result wanted; a filtered search that keeps too few
asks again for twice what the share that passed needs, and this many times
more at least."""

MAX_CANDIDATES = 4_096
"""Past this many candidates (or when none of an ask passed the filter) a
search scores every matching document instead."""

STAGED_MAX = 2_000
"""Documents waiting for tantivy beyond which searches score every matching
document: each staged one is scored on its own, in Python."""

BATCH = 2_000
"""Staged documents the worker adds to tantivy at once."""

HEAP = 64 * 2**20
"""tantivy's indexing buffer, in bytes."""

_DELETED_AT_ONCE = 1_024
"""Keys deleted from tantivy by one query."""

Keys = npt.NDArray[np.int64]


class _Tantivy:
    """tantivy in memory: each document its terms (split on spaces, as given)
    and a key; searched by BM25 over any of a query's terms."""

    def __init__(self) -> None:
        import tantivy

        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("terms", tokenizer_name="whitespace", index_option="freq")
        builder.add_unsigned_field("key", indexed=True, fast=True)
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        self._writer = self._index.writer(heap_size=HEAP, num_threads=1)
        self.searcher: Any = None

    def write(self, added: Sequence[tuple[int, str]], deleted: Sequence[int]) -> Any:
        """Add ``(key, terms)`` documents and delete keys; return a searcher
        that sees them (the current one is left as it is)."""
        t = self._tantivy
        for start in range(0, len(deleted), _DELETED_AT_ONCE):
            # By query: a term given as a Python int would be taken as signed.
            keys = deleted[start : start + _DELETED_AT_ONCE]
            self._writer.delete_documents_by_query(
                t.Query.boolean_query(
                    [(t.Occur.Should, t.Query.term_query(self._schema, "key", k)) for k in keys]
                )
            )
        for key, terms in added:
            doc = t.Document()
            doc.add_text("terms", terms)
            doc.add_unsigned("key", key)
            self._writer.add_document(doc)
        self._writer.commit()
        self._index.reload()
        return self._index.searcher()

    def search(self, searcher: Any, terms: Sequence[str], count: int) -> Keys:
        """The keys of up to ``count`` best documents for ``terms``, best first."""
        t = self._tantivy
        query = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self._schema, "terms", term)) for term in terms]
        )
        hits = searcher.search(query, count).hits
        if not hits:
            return np.zeros(0, dtype=np.int64)
        keys = searcher.fast_field_values("key", [address for _, address in hits])
        return np.asarray(keys, dtype=np.int64)


class TextCandidates:
    """tantivy over one collection's BM25 documents, by document number.

    ``num_of_key[key]`` is the document number a key stands for (-1: dropped);
    ``key_of_num[num]`` the inverse (-1: none yet). ``staged`` holds the numbers
    whose current terms tantivy lacks or does not show yet. Changes happen under
    the text index's write lock; searches run under its read lock; the worker
    takes the write lock only to pick a batch and to publish it.

    Args:
        collection: for the logs.
        bm25: the exact index it stands beside.
        lock: the text index's lock.
    """

    def __init__(self, collection: str, bm25: BM25Index, lock: RWLock) -> None:
        self.collection = collection
        self._bm25 = bm25
        self._lock = lock
        self._tantivy = _Tantivy()
        self._searcher: Any = None
        self.num_of_key: Keys = np.full(1024, -1, dtype=np.int64)
        self.key_of_num: Keys = np.full(1024, -1, dtype=np.int64)
        self._next_key = 0
        self.staged: set[int] = set()
        # The staged documents not given to tantivy yet (the rest are on their way).
        self._queue: set[int] = set()
        self._dropped: list[int] = []
        self._closing = False
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None

    # -- writes (under the text index's write lock) ---------------------------------

    def stage(self, num: int) -> None:
        """Document ``num`` is new, or its terms changed (after :meth:`drop`)."""
        self.staged.add(num)
        self._queue.add(num)
        self._wake.set()

    def drop(self, num: int) -> None:
        """Document ``num`` is removed, or about to get other terms."""
        self.staged.discard(num)
        self._queue.discard(num)
        if num < self.key_of_num.shape[0]:
            key = int(self.key_of_num[num])
            if key >= 0:
                self.num_of_key[key] = -1
                self.key_of_num[num] = -1
                self._dropped.append(key)
                self._wake.set()

    def start(self, nums: Sequence[int]) -> None:
        """Stage every document of ``nums`` and start the worker."""
        self.staged.update(nums)
        self._queue.update(nums)
        if self._worker is None:
            self._worker = threading.Thread(
                target=self._fill, name=f"hippo-text-{self.collection}"[:15], daemon=True
            )
            self._worker.start()
        self._wake.set()

    def close(self) -> None:
        """Stop the worker (it finishes the batch it writes)."""
        self._closing = True
        self._wake.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    # -- reads (under the text index's read lock) -----------------------------------

    @property
    def ready(self) -> bool:
        """Whether searches take tantivy's candidates."""
        return self._searcher is not None and len(self.staged) <= STAGED_MAX

    def candidates(self, terms: Sequence[str], count: int) -> tuple[npt.NDArray[np.intp], bool]:
        """The numbers of tantivy's ``count`` best documents for ``terms`` that are
        still current, with every staged number; and whether tantivy had fewer to
        give (then every document holding a term is among them)."""
        keys = self._tantivy.search(self._searcher, terms, count)
        whole = keys.shape[0] < count
        keys = keys[keys < self.num_of_key.shape[0]]
        nums = self.num_of_key[keys]
        nums = nums[nums >= 0]
        if self.staged:
            staged = np.fromiter(self.staged, dtype=np.int64, count=len(self.staged))
            nums = np.concatenate([nums, staged])
        return nums.astype(np.intp), whole

    # -- the worker ------------------------------------------------------------------

    def _fill(self) -> None:
        reported = time.monotonic()
        while not self._closing:
            self._wake.wait()
            self._wake.clear()
            while not self._closing:
                with self._lock.write():
                    batch = self._pick()
                    dropped, self._dropped = self._dropped, []
                if not batch and not dropped:
                    break
                try:
                    searcher = self._tantivy.write(
                        [(key, " ".join(terms)) for _, key, terms in batch], dropped
                    )
                except (ValueError, RuntimeError, OSError):
                    logger.exception(
                        "collection %s: the text candidates failed; searches stay exact",
                        self.collection,
                    )
                    with self._lock.write():
                        self._searcher = None
                    return
                with self._lock.write():
                    self._searcher = searcher
                    for num, key, _ in batch:
                        # Not removed nor changed while tantivy took it: shown now.
                        if self.key_of_num[num] == key:
                            self.staged.discard(num)
                    left = len(self.staged)
                if time.monotonic() - reported > 10.0:
                    reported = time.monotonic()
                    logger.info(
                        "collection %s: text candidates: %d documents to go",
                        self.collection,
                        left,
                    )
                time.sleep(0.001)

    def _pick(self) -> list[tuple[int, int, tuple[str, ...]]]:
        """Up to :data:`BATCH` staged documents with a fresh key each; they stay
        staged until tantivy shows them."""
        batch: list[tuple[int, int, tuple[str, ...]]] = []
        while self._queue and len(batch) < BATCH:
            num = self._queue.pop()
            terms = self._bm25.terms_of_number(num)
            if terms is None:  # a free number: its document is gone
                self.staged.discard(num)
                continue
            key = self._next_key
            self._next_key += 1
            self.num_of_key = grown(self.num_of_key, key + 1, -1)
            self.key_of_num = grown(self.key_of_num, num + 1, -1)
            self.num_of_key[key] = num
            self.key_of_num[num] = key
            batch.append((num, key, terms))
        return batch
