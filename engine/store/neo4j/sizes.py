"""What sizes a first vector search, as the store last read it: the database's
number of memories and each collection's counters.

A vector search asks the index for as many candidates as should hold ``k`` of
the collection's memories that pass its filters (see
:func:`hippocampus.store.neo4j.vectors._first_width`). Reading what that
takes, on every search, was a statement of its own ahead of the index search:
about 2 ms of a recall at 100,000 memories, on its slowest path. A size only
sizes a first search: one behind the truth asks for too few candidates (the
search widens) or too many, or sends a search to the exact scan; the answer is
the same. So each is kept for :data:`MAX_AGE_S`, and a collection's counters
also until this store changes its memories (another process's change shows
within that age).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from neo4j import ManagedTransaction

from hippocampus.store.neo4j import counts
from hippocampus.store.neo4j.statements import statement

MAX_AGE_S = 10.0
"""How long a read size serves first searches before it is read again."""
KEPT_COLLECTIONS = 1_024
"""Collections whose counters are kept at once; the least recently read go first."""


class Sizes:
    """The database's number of memories and the collections' counters, each read
    in the caller's transaction when the store holds none younger than
    :data:`MAX_AGE_S` (safe to share between threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memories: tuple[float, int] | None = None
        self._counters: OrderedDict[str, tuple[float, dict[tuple[Any, ...], Any]]] = OrderedDict()

    def memories(self, tx: ManagedTransaction) -> int:
        """How many memories the database holds, every collection's (a bound on the
        vector index's size: ``recall/index_size``)."""
        now = time.monotonic()
        with self._lock:
            kept = self._memories
        if kept is not None and now - kept[0] < MAX_AGE_S:
            return kept[1]
        sized = list(tx.run(statement("recall/index_size")))
        if not sized:
            return 0  # no answer (EXPLAIN, a stand-in driver): nothing to keep
        memories = int(sized[0]["memories"])
        with self._lock:
            self._memories = (now, memories)
        return memories

    def counters(self, tx: ManagedTransaction, collection: str) -> Mapping[tuple[Any, ...], Any]:
        """The collection's counters (:func:`~hippocampus.store.neo4j.counts.read`)."""
        now = time.monotonic()
        with self._lock:
            kept = self._counters.get(collection)
            if kept is not None and now - kept[0] < MAX_AGE_S:
                self._counters.move_to_end(collection)
                return kept[1]
        read = counts.read(tx, collection)
        with self._lock:
            self._counters[collection] = (now, read)
            self._counters.move_to_end(collection)
            while len(self._counters) > KEPT_COLLECTIONS:
                self._counters.popitem(last=False)
        return read

    def changed(self, collection: str) -> None:
        """This store changed the collection's memories: its counters are read
        again by the next search."""
        with self._lock:
            self._counters.pop(collection, None)
