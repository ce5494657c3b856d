"""Lexical (BM25) search at scale: the bare index, then through the embedded store.

    .venv/bin/python bench/lexical.py --n 100000 [--queries 200] [--json]

In memory: tokenizes N synthetic memories, builds a BM25Index, and times queries
(unfiltered, and with a predicate that passes about one memory in six), then a
round of replaces and the first query after them. Through the store: writes the
same memories without vectors, reopens, times the cold build of the collection's
indexes, and times ``store.search_text`` with the default filters (active tier)
and with a category filter.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import SynthMemory, memories, queries
from hippocampus.lexical import BM25Index, tokenize
from hippocampus.model import Memory, RecallFilters, content_hash, utcnow
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore

COLLECTION = "bench"
K = 10
CHUNK = 2_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(fn: Any, runs: list[Any]) -> list[float]:
    """Milliseconds per call of ``fn(arg)`` for each arg, after a short warm-up."""
    for arg in runs[:20]:
        fn(arg)
    gc.collect()
    out = []
    for arg in runs:
        start = time.perf_counter()
        fn(arg)
        out.append((time.perf_counter() - start) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 3)


def run(n: int, n_queries: int, seed: int) -> dict[str, Any]:
    items = memories(n, seed=seed)
    qtexts = queries(n_queries)
    r: dict[str, Any] = {"n": n, "queries": n_queries, "k": K}
    in_memory(items, qtexts, r)
    gc.collect()
    in_store(items, qtexts, r)
    return r


def in_memory(items: list[SynthMemory], qtexts: list[str], r: dict[str, Any]) -> None:
    n = len(items)
    r["words_per_memory"] = round(sum(len(m.content.split()) for m in items) / n, 1)
    start = time.perf_counter()
    for m in items:
        tokenize(m.content)
    r["tokenize_s"] = round(time.perf_counter() - start, 2)
    index = BM25Index()
    start = time.perf_counter()
    index.add_many((m.id, m.content) for m in items)
    r["build_s"] = round(time.perf_counter() - start, 2)
    r["terms"] = len(index._postings)  # a benchmark may look inside
    r["query_terms"] = round(sum(len(set(tokenize(q))) for q in qtexts) / len(qtexts), 1)

    ms = timed(lambda q: index.search(q, K), qtexts)
    r["query_p50_ms"], r["query_p95_ms"] = pct(ms, 50), pct(ms, 95)
    category = {m.id: m.category for m in items}
    ms = timed(lambda q: index.search(q, K, lambda i: category[i] == "bug_fix"), qtexts)
    r["filtered_p50_ms"], r["filtered_p95_ms"] = pct(ms, 50), pct(ms, 95)

    # Replaces with new content, then the first query (it recomputes the length norms).
    swaps = list(zip(items[:1000], reversed(items[-1000:]), strict=True))
    start = time.perf_counter()
    for a, b in swaps:
        index.replace(a.id, b.content)
    r["replace_us"] = round((time.perf_counter() - start) / len(swaps) * 1e6, 1)
    start = time.perf_counter()
    index.search(qtexts[0], K)
    r["query_after_write_ms"] = round((time.perf_counter() - start) * 1000, 3)


def in_store(items: list[SynthMemory], qtexts: list[str], r: dict[str, Any]) -> None:
    n = len(items)
    with tempfile.TemporaryDirectory(prefix="hippo-bench-") as tmp:
        data = Path(tmp) / "data"
        now = utcnow()
        with EmbeddedStore(data, synchronous="OFF") as store:
            for at in range(0, n, CHUNK):
                store.add_memories(
                    COLLECTION,
                    [
                        MemoryRecord(
                            Memory(
                                id=m.id,
                                collection=COLLECTION,
                                content=m.content,
                                category=m.category,
                                tags=list(m.tags),
                                created_at=now,
                                updated_at=now,
                                content_hash=content_hash(m.content),
                            )
                        )
                        for m in items[at : at + CHUNK]
                    ],
                )
        log(f"  stored {n} memories")
        with EmbeddedStore(data, synchronous="OFF") as store:
            # The two builds the first use of a collection runs, timed apart.
            start = time.perf_counter()
            store._build_index(COLLECTION)
            r["store_filter_index_s"] = round(time.perf_counter() - start, 2)
            start = time.perf_counter()
            store._build_text_index(COLLECTION)
            r["store_text_index_s"] = round(time.perf_counter() - start, 2)
        with EmbeddedStore(data, synchronous="OFF") as store:
            start = time.perf_counter()
            store.search_text(COLLECTION, qtexts[0], k=K, filters=RecallFilters())
            r["store_cold_s"] = round(time.perf_counter() - start, 2)
            ms = timed(
                lambda q: store.search_text(COLLECTION, q, k=K, filters=RecallFilters()), qtexts
            )
            r["store_p50_ms"], r["store_p95_ms"] = pct(ms, 50), pct(ms, 95)
            bug_fixes = RecallFilters(categories=["bug_fix"])
            ms = timed(lambda q: store.search_text(COLLECTION, q, k=K, filters=bug_fixes), qtexts)
            r["store_filtered_p50_ms"], r["store_filtered_p95_ms"] = pct(ms, 50), pct(ms, 95)


def print_table(r: dict[str, Any]) -> None:
    rows = [
        ("memories", f"{r['n']} synthetic, {r['words_per_memory']} words each, {r['terms']} terms"),
        ("queries", f"{r['queries']}, {r['query_terms']} distinct terms each, k={r['k']}"),
        ("tokenize", f"{r['tokenize_s']} s (all memories)"),
        ("BM25 build", f"{r['build_s']} s (tokenize + postings)"),
        ("query p50 / p95", f"{r['query_p50_ms']:.3f} / {r['query_p95_ms']:.3f} ms"),
        (
            "filtered p50 / p95",
            f"{r['filtered_p50_ms']:.3f} / {r['filtered_p95_ms']:.3f} ms (predicate, 1 in 6)",
        ),
        ("replace", f"{r['replace_us']} µs per memory (content changed)"),
        ("query after write", f"{r['query_after_write_ms']:.3f} ms (recomputes length norms)"),
        ("store: filter index", f"{r['store_filter_index_s']} s (cold build from SQLite)"),
        ("store: text index", f"{r['store_text_index_s']} s (cold build from SQLite)"),
        ("store: first search", f"{r['store_cold_s']} s (reopen: both builds + query)"),
        ("store p50 / p95", f"{r['store_p50_ms']:.3f} / {r['store_p95_ms']:.3f} ms (active tier)"),
        (
            "store filtered",
            f"{r['store_filtered_p50_ms']:.3f} / {r['store_filtered_p95_ms']:.3f} ms (category)",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print("lexical benchmark")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (default %(default)s)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args()
    result = run(args.n, args.queries, args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
