"""How crowded memories' neighbourhoods are in the Neo4j store: their vectors
against a random sample of their collection's, read through the content hashes'
index and kept in memory a while (:meth:`Neo4jCrowding._sample`)."""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from neo4j import ManagedTransaction, Record

from hippocampus.dense import CROWDING_NEIGHBOURS, CROWDING_SAMPLE, VectorSample, crowding_of
from hippocampus.embed.base import normalize_rows
from hippocampus.store.neo4j import convert
from hippocampus.store.neo4j.connection import (
    Neo4jConnection,
    one_list,
    one_statement,
    run_statement,
)

SAMPLE_MAX_AGE_S = 60.0
"""How long a sample of a collection's vectors (for :meth:`Neo4jCrowding.crowding`)
is answered from memory before it is read again."""
SAMPLES_KEPT = 64
"""Samples held in memory at most (the least recently used go first): one per
collection and model in use, whatever the number of collections."""
_HASH_END = "\U0010ffff"
"""Above every content hash: where the circle of hashes a sample goes round ends."""


class Neo4jCrowding(Neo4jConnection):
    """Crowding, measured against a sample of each collection's vectors."""

    def _init_crowding(self) -> None:
        # (collection, model) -> (read at, sample), least recently used first, and
        # the samples being read now: see _sample.
        self._samples: OrderedDict[tuple[str, str], tuple[float, VectorSample]] = OrderedDict()
        self._sampling: dict[tuple[str, str], threading.Event] = {}
        self._samples_lock = threading.Lock()

    def crowding(self, collection: str, ids: Sequence[str], *, model: str) -> dict[str, float]:
        """How crowded the given memories' neighbourhoods are: their stored vectors
        of ``model`` (those read a moment ago from memory, :mod:`.recent`) against
        a sample of the collection's (see :meth:`_sample`)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        vectors = self._recent.take(collection, wanted, model)
        unread = [memory_id for memory_id in wanted if memory_id not in vectors]
        if unread:
            mark = self._recent.mark(collection)
            rows = self._read(
                "read vectors",
                one_statement("memory/model_vectors", {"ids": unread, "model": model}, collection),
            )
            read = convert.model_vectors_of(one_list(rows, "vectors"), model)
            self._recent.keep(collection, mark, read)
            vectors.update((memory_id, vector) for memory_id, _, vector in read)
        if not vectors:
            return {}
        sample = self._sample(collection, model)
        found = [mid for mid, v in vectors.items() if v.shape[0] == sample.vectors.shape[-1]]
        if not found:
            return {}
        units = normalize_rows(np.asarray([vectors[mid] for mid in found], dtype=np.float32))
        return crowding_of(found, units, sample, CROWDING_NEIGHBOURS)

    def _sample(self, collection: str, model: str) -> VectorSample:
        """The sample of ``model``'s vectors in the collection that crowding measures
        against (:meth:`_read_sample`), kept for :data:`SAMPLE_MAX_AGE_S` and among
        the :data:`SAMPLES_KEPT` last used. One thread reads a new one at a time:
        meanwhile the others take the old one, or wait when there is none."""
        key = (collection, model)
        while True:
            with self._samples_lock:
                kept = self._samples.get(key)
                if kept is not None:
                    self._samples.move_to_end(key)
                    if time.monotonic() - kept[0] < SAMPLE_MAX_AGE_S:
                        return kept[1]
                reading = self._sampling.get(key)
                if reading is None:
                    reading = self._sampling[key] = threading.Event()
                    break
            if kept is not None:
                return kept[1]
            reading.wait()  # then the new sample is kept, or the reader failed
        try:
            read_at = time.monotonic()
            sample = self._read_sample(collection, model)
            with self._samples_lock:
                self._samples[key] = (read_at, sample)
                self._samples.move_to_end(key)
                while len(self._samples) > SAMPLES_KEPT:
                    self._samples.popitem(last=False)
        finally:
            with self._samples_lock:
                del self._sampling[key]
            reading.set()
        return sample

    def _read_sample(self, collection: str, model: str) -> VectorSample:
        """Up to :data:`CROWDING_SAMPLE` of ``model``'s vectors in the collection,
        normalized: those whose content hashes follow a random hash, going round
        to the first hash when the last is reached. Content hashes (sha256) are
        spread evenly, so this is a random sample, read through an index in hash
        order (``cypher/memory/sample_vectors.cypher``) without reading the rest
        of the collection; its ``total`` is estimated from how far round the
        hashes it reaches (:func:`_sample_total`)."""
        start = f"{random.getrandbits(64):016x}"

        def work(tx: ManagedTransaction) -> tuple[list[Record], list[Record]]:
            def arc(low: str, high: str, size: int) -> list[Record]:
                params = {"model": model, "low": low, "high": high, "size": size}
                return run_statement(tx, "memory/sample_vectors", collection, **params)

            onward = arc(start, _HASH_END, CROWDING_SAMPLE)
            rest = CROWDING_SAMPLE - len(onward)
            return onward, arc("", start, rest) if rest else []

        onward, wrapped = self._read("read a sample of vectors", work)
        rows = [r for r in onward + wrapped if r["embedding"] is not None]
        if rows:
            vectors = normalize_rows(
                np.asarray([convert.vector_of(r["embedding"]) for r in rows], dtype=np.float32)
            )
        else:
            vectors = np.empty((0, 0), dtype=np.float32)
        return VectorSample(
            ids=[r["id"] for r in rows],
            vectors=vectors,
            total=_sample_total(start, onward, wrapped),
        )


def _hash_point(content_hash: str) -> float | None:
    """Where a content hash lies on the circle of hashes, in [0, 1); ``None`` for
    one that is not hexadecimal (not a hash the engine made)."""
    try:
        return int(content_hash[:16], 16) / 16**16 if len(content_hash) >= 16 else None
    except ValueError:
        return None


def _sample_total(start: str, onward: Sequence[Record], wrapped: Sequence[Record]) -> int:
    """How many memories a sample read from the hash ``start`` stands for: all
    there are when it came back short (it went all the way round); else ``n /
    a``, its ``n`` memories being spread evenly over the arc ``a`` of the circle
    of hashes that it covers."""
    n = len(onward) + len(wrapped)
    if n < CROWDING_SAMPLE:
        return n
    begin, end = _hash_point(start), _hash_point((wrapped or onward)[-1]["hash"])
    if begin is None or end is None:
        return n
    arc = end - begin + (1.0 if wrapped else 0.0)
    return max(n, round(n / arc)) if arc > 0.0 else n
