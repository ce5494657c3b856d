"""Vectors the store has just read, kept a few seconds so that the next reads of
the same memories in one recall skip a round trip and the server's property reads.

A default recall read memory vectors three times over: dense search and the
similarities of the other candidates have their vectors in hand, crowding then
read the same candidates' vectors, and variety (MMR) those of the best thirty,
most of them among those. Each read is a transaction, and a vector read is the
server's costliest property read. Dense search, the similarities, crowding and
variety keep what they read here, and crowding and variety take from here what
is fresh.

A vector is kept at most :data:`RECENT_MAX_AGE_S` and among the
:data:`RECENT_KEPT` last read. Writes of this store that change or remove a
vector forget it, and a read that began before such a write keeps nothing
(:meth:`RecentVectors.mark`). A vector written by another process may be read
from here for up to :data:`RECENT_MAX_AGE_S` after it changed: the same as a
read that many seconds earlier.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from hippocampus.store.records import Vector

RECENT_MAX_AGE_S = 5.0
"""How long a vector read is answered from memory: a recall's reads are
milliseconds apart."""
RECENT_KEPT = 4096
"""Vectors kept at most (the least recently read go first): the reads of a few
dozen recalls."""


class RecentVectors:
    """Vectors read lately, by collection and memory id, with their model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (collection, id) -> (read at, model, vector), least recently read first.
        self._kept: OrderedDict[tuple[str, str], tuple[float, str, Vector]] = OrderedDict()
        # Writes that changed vectors so far, per collection (see mark()).
        self._writes: dict[str, int] = {}

    def mark(self, collection: str) -> int:
        """Taken before a read: :meth:`keep` keeps its vectors only if no write of
        the collection's vectors was forgotten since."""
        with self._lock:
            return self._writes.get(collection, 0)

    def keep(
        self, collection: str, mark: int, read: Iterable[tuple[str, str | None, Vector]]
    ) -> None:
        """Keep ``(memory id, model, vector)`` as read by a read that began at
        ``mark`` (a vector of no known model is not kept); nothing when the
        collection's vectors were written since."""
        now = time.monotonic()
        with self._lock:
            if self._writes.get(collection, 0) != mark:
                return
            for memory_id, model, vector in read:
                if model is None:
                    continue
                key = (collection, memory_id)
                self._kept[key] = (now, model, vector)
                self._kept.move_to_end(key)
            while len(self._kept) > RECENT_KEPT:
                self._kept.popitem(last=False)

    def take(self, collection: str, ids: Sequence[str], model: str | None) -> dict[str, Vector]:
        """The fresh vectors among ``ids``, of ``model`` (any model when ``None``)."""
        oldest = time.monotonic() - RECENT_MAX_AGE_S
        found: dict[str, Vector] = {}
        with self._lock:
            for memory_id in ids:
                kept = self._kept.get((collection, memory_id))
                if kept is None:
                    continue
                at, kept_model, vector = kept
                if at < oldest:
                    del self._kept[(collection, memory_id)]
                elif model is None or kept_model == model:
                    found[memory_id] = vector.copy()
        return found

    def forget(self, collection: str, ids: Iterable[str] | None = None) -> None:
        """The vectors of ``ids`` (all the collection's when ``None``) changed or
        are gone; reads begun before now keep nothing."""
        with self._lock:
            self._writes[collection] = self._writes.get(collection, 0) + 1
            if ids is None:
                for key in [key for key in self._kept if key[0] == collection]:
                    del self._kept[key]
            else:
                for memory_id in ids:
                    self._kept.pop((collection, memory_id), None)
