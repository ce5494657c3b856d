"""Counters the Neo4j store keeps beside the graph, so that :meth:`stats` and the
pending-embedding count read a few nodes instead of the whole collection.

Each write transaction that changes what is counted adds its changes (a
:class:`Tally`) to ``(:Count {collection, key, shard, n})`` nodes before it
commits, so a count is exact whenever the writes are. A key is a JSON array:
``["memories", category, tier, model]`` (``model``: the model of the stored
vector, ``null`` without one), ``["quality_scored"]``, ``["quality_sum"]``,
``["edges", type]``, ``["hubs", kind]``, ``["events", type]`` (events ever
appended; the retention's drops are counted on ``CompactedEvents``) and
``["terms"]`` (the terms of all memories' content, for BM25's mean length).
Document frequencies, for BM25's idf, are ``(:TermCount {collection, term, shard,
n})`` nodes alike: how many memories hold each term of the tokenizer the
embedded store's text index uses (:func:`hippocampus.lexical.tokenize`).

Every counter a write touches is locked until it commits, so writers that
touch one counter run one after the other. Each key is therefore split in
:data:`SHARDS` nodes, and each writer (a thread of a process) always adds to
the same one of them: writers to one collection spread over the shards, and a
read sums them. Keys are written in sorted order, after the transaction's other
writes, so two writers never hold each other's counters.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from neo4j import ManagedTransaction, Record

from hippocampus.lexical import tokenize
from hippocampus.model import HUB_OF_EDGE, EdgeType, Memory, Tier
from hippocampus.store.neo4j.statements import statement
from hippocampus.store.records import StoreStats

SHARDS = 8
"""Nodes per counter: how many writers to one collection may update its counts
at once without waiting for each other."""
MEMORIES = "memories"


def shard() -> int:
    """The counter shard of the calling thread: the same for every write it makes,
    and spread over :data:`SHARDS` across threads and processes."""
    writer = f"{os.getpid()}:{threading.get_ident()}"
    return zlib.crc32(writer.encode()) % SHARDS


def key(*parts: Any) -> str:
    """A counter's key: its parts as a JSON array (no separator can be confused
    with a category or type name)."""
    return json.dumps(parts, separators=(",", ":"), ensure_ascii=False)


class Tally:
    """What one write transaction adds to its collection's counters."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.quality_sum = 0.0
        self.terms: Counter[str] = Counter()

    def memory(
        self, memory: Memory, model: str | None, sign: int = 1, *, text: bool = True
    ) -> None:
        """Count a memory as stored (``sign`` 1) or as no longer stored (-1);
        ``model`` is that of its stored vector, ``None`` without one. With
        ``text``, its content's terms too."""
        self.add(MEMORIES, memory.category, Tier(memory.tier).value, model, n=sign)
        score = memory.retrieval.quality_score
        if score is not None:
            self.add("quality_scored", n=sign)
            self.quality_sum += sign * score
        if text:
            self.text(memory.content, sign)

    def changed(
        self, was: Memory, was_model: str | None, now: Memory, now_model: str | None
    ) -> None:
        """Count a memory rewritten from ``was`` to ``now``."""
        same = was.content == now.content  # most rewrites: no term to count
        self.memory(was, was_model, -1, text=not same)
        self.memory(now, now_model, text=not same)

    def text(self, content: str, sign: int = 1) -> None:
        """Count a memory's content in (``sign`` 1) or out (-1) of the text
        statistics: its terms, and each distinct one once."""
        terms = tokenize(content)
        self.add("terms", n=sign * len(terms))
        for term in set(terms):
            self.terms[term] += sign

    def add(self, *parts: Any, n: int) -> None:
        """Add ``n`` to the counter of key ``parts``."""
        self.counts[key(*parts)] += n

    def edges(self, edge_type: str, n: int) -> None:
        self.add("edges", edge_type, n=n)

    def hubs(self, kind: str, n: int) -> None:
        self.add("hubs", kind, n=n)

    def created(self, edge_type: str, counters: Any) -> None:
        """Count what a statement that only creates edges of ``edge_type`` (and the
        hubs they point at) created, from the server's counters of it."""
        self.edges(edge_type, counters.relationships_created)
        hub = HUB_OF_EDGE.get(EdgeType(edge_type))
        if hub is not None:
            self.hubs(hub.value, counters.nodes_created)

    def events(self, types: Iterable[str]) -> None:
        for event_type in types:
            self.add("events", event_type, n=1)

    def rows(self) -> list[dict[str, Any]]:
        """The changes as ``memory/add_counts`` takes them: sorted by key (the
        order the counters are locked in), without those that cancel out."""
        rows: list[dict[str, Any]] = [
            {"key": k, "n": n} for k, n in sorted(self.counts.items()) if n
        ]
        if self.quality_sum:
            rows.append({"key": key("quality_sum"), "n": self.quality_sum})
            rows.sort(key=lambda row: row["key"])
        return rows

    def term_rows(self) -> list[dict[str, Any]]:
        """The document-frequency changes as ``memory/add_term_counts`` takes
        them: sorted by term, without those that cancel out."""
        return [{"term": t, "n": n} for t, n in sorted(self.terms.items()) if n]

    def write(self, tx: ManagedTransaction, collection: str, at: int | None = None) -> None:
        """Add the changes to the collection's counters in ``tx`` (to the shard
        ``at``, by default the calling thread's): the counts, then the document
        frequencies (every writer locks them in this order)."""
        at = shard() if at is None else at
        add_rows(tx, "memory/add_counts", collection, at, self.rows())
        add_rows(tx, "memory/add_term_counts", collection, at, self.term_rows())


def add_rows(
    tx: ManagedTransaction, name: str, collection: str, at: int, rows: Sequence[dict[str, Any]]
) -> None:
    """Run ``memory/add_counts`` or ``memory/add_term_counts`` on ``rows``."""
    if rows:
        params = {"collection": collection, "shard": at, "counts": list(rows)}
        tx.run(statement(name), params).consume()


def census(tx: ManagedTransaction, collection: str) -> Tally:
    """A collection's counts, read from everything it holds (``schema/count_*``):
    what setup() stores for a collection written before the store kept counters."""
    tally = Tally()

    def rows(name: str) -> list[Record]:
        return list(tx.run(statement(name), {"collection": collection}))

    for row in rows("schema/count_memories"):
        tally.add(MEMORIES, row["category"], row["tier"], row["model"], n=int(row["n"]))
        tally.add("quality_scored", n=int(row["scored"]))
        tally.quality_sum += float(row["quality_sum"] or 0.0)
    for row in rows("schema/count_edges"):
        tally.edges(row["type"], int(row["n"]))
    for row in rows("schema/count_hubs"):
        tally.hubs(row["kind"], int(row["n"]))
    # Events ever appended: those held and those the retention dropped.
    for name in ("schema/count_events", "memory/stats_compacted_events"):
        for row in rows(name):
            tally.add("events", row["type"], n=int(row["n"]))
    return tally


def read(tx: ManagedTransaction, collection: str) -> dict[tuple[Any, ...], Any]:
    """The collection's counters by key (as a tuple), summed over their shards."""
    rows = tx.run(statement("memory/read_counts"), {"collection": collection})
    return {tuple(json.loads(row["key"])): row["n"] for row in rows}


def passing(
    counts: Mapping[tuple[Any, ...], Any],
    *,
    model: str,
    categories: Sequence[str],
    tiers: Sequence[str],
) -> tuple[int, int]:
    """Memories with a vector of ``model``: how many are of one of ``categories``
    (any, when empty) and ``tiers``, and how many there are."""
    passed = total = 0
    for parts, n in counts.items():
        if parts[0] == MEMORIES and parts[3] == model:
            total += n
            if (not categories or parts[1] in categories) and parts[2] in tiers:
                passed += n
    return int(passed), int(total)


def pending(counts: Mapping[tuple[Any, ...], Any], model: str) -> int:
    """Memories with no vector of ``model``: all of them, less those with one."""
    total = with_model = 0
    for parts, n in counts.items():
        if parts[0] == MEMORIES:
            total += n
            if parts[3] == model:
                with_model += n
    return int(total - with_model)


def stats_of(counts: Mapping[tuple[Any, ...], Any], compacted: Sequence[Record]) -> StoreStats:
    """:class:`StoreStats` from the counters and the ``CompactedEvents`` counts."""
    stats = StoreStats()
    appended: dict[str, int] = {}
    for parts, n in counts.items():
        if not n:
            continue
        what = parts[0]
        if what == MEMORIES:
            _, category, tier, model = parts
            stats.memories += n
            stats.by_category[category] = stats.by_category.get(category, 0) + n
            stats.by_tier[tier] = stats.by_tier.get(tier, 0) + n
            if model is None:
                stats.pending_embeddings += n
        elif what == "quality_scored":
            stats.quality_scored = int(n)
        elif what == "quality_sum":
            stats.quality_sum = float(n)
        elif what == "edges":
            stats.edges[parts[1]] = int(n)
        elif what == "hubs":
            stats.hubs[parts[1]] = int(n)
        elif what == "events":
            appended[parts[1]] = int(n)
    if not stats.quality_scored:
        stats.quality_sum = 0.0
    dropped = {row["type"]: int(row["n"]) for row in compacted}
    stats.events_by_type = dict(sorted(appended.items()))
    stats.events = sum(appended.values())
    stats.events_retained = stats.events - sum(dropped.values())
    return stats
