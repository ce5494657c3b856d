"""BM25 libraries on this machine, side by side with the store's own index.

Which lexical index serves a collection of a million memories? For the store's
``BM25Index``, SQLite FTS5, bm25s and tantivy, over the same terms (each memory
tokenized once by :func:`hippocampus.lexical.tokenize` and given to the others
as space-separated terms, so that every library matches the same words): the
build time, the resident memory it added and its files, one query at a time on
one thread for a recall's text search (``bench/synth.py``'s questions, the best
50) and for a new memory's word neighbours (the texts of memories held back
from the index, the best 5, as the duplicate check asks), how many of each
library's results are among the exact BM25 best (a hit: a memory whose exact
score reaches the k-th best, since equal scores are interchangeable), and what
adding 1,000 memories costs until a search sees them. A library that is not
installed is reported, not measured:

    .venv/bin/pip install -e '.[lexical]'
    .venv/bin/python bench/bm25_libraries.py [--n 100000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import memories, queries
from hippocampus.lexical import K1, B, BM25Index, tokenize

RECALL_K = 50
NEIGHBOURS_K = 5
ADDED = 1_000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


class Library(Protocol):
    """One library's index over documents numbered from 0."""

    def search(self, terms: list[str], text: str, k: int) -> list[int]: ...

    def add(self, start: int, docs: Sequence[list[str]]) -> None:
        """Index ``docs`` as numbers ``start`` on, searchable on return."""
        ...


class Store:
    """The store's own index: exact BM25, updated in place."""

    def __init__(self, docs: Sequence[list[str]], folder: Path) -> None:
        self.index = BM25Index()
        for i, terms in enumerate(docs):
            self.index.add_terms(str(i), terms)

    def search(self, terms: list[str], text: str, k: int) -> list[int]:
        return [int(doc) for doc, _ in self.index.search(text, k)]

    def add(self, start: int, docs: Sequence[list[str]]) -> None:
        for i, terms in enumerate(docs, start):
            self.index.add_terms(str(i), terms)


class Fts5:
    """SQLite FTS5 in a file beside the rest (``bm25()``: its own IDF, clamped)."""

    def __init__(self, docs: Sequence[list[str]], folder: Path) -> None:
        self.conn = sqlite3.connect(folder / "fts.sqlite3")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='unicode61')")
        self.add(0, docs)

    def search(self, terms: list[str], text: str, k: int) -> list[int]:
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self.conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?", (match, k)
        )
        return [rowid - 1 for (rowid,) in rows]

    def add(self, start: int, docs: Sequence[list[str]]) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT INTO docs(rowid, body) VALUES (?, ?)",
                ((i + 1, " ".join(terms)) for i, terms in enumerate(docs, start)),
            )


class Tantivy:
    """tantivy (Lucene's BM25 with one-byte length norms, block-max WAND) on disk."""

    def __init__(self, docs: Sequence[list[str]], folder: Path) -> None:
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", tokenizer_name="whitespace")
        builder.add_unsigned_field("num", stored=True, fast=True)
        self.schema = builder.build()
        path = folder / "tantivy"
        path.mkdir()
        self.index = tantivy.Index(self.schema, path=str(path))
        self.writer = self.index.writer(heap_size=256 * 2**20, num_threads=2)
        self.add(0, docs)

    def search(self, terms: list[str], text: str, k: int) -> list[int]:
        t = self.tantivy
        query = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, "body", term)) for term in terms]
        )
        return [
            self.searcher.doc(address)["num"][0]
            for _, address in self.searcher.search(query, k).hits
        ]

    def add(self, start: int, docs: Sequence[list[str]]) -> None:
        for i, terms in enumerate(docs, start):
            doc = self.tantivy.Document()
            doc.add_text("body", " ".join(terms))
            doc.add_unsigned("num", i)
            self.writer.add_document(doc)
        self.writer.commit()
        self.writer.wait_merging_threads()
        self.writer = self.index.writer(heap_size=256 * 2**20, num_threads=2)
        self.index.reload()
        self.searcher = self.index.searcher()


class Bm25s:
    """bm25s: scores computed at build into a sparse matrix; no updates (a rebuild)."""

    def __init__(self, docs: Sequence[list[str]], folder: Path) -> None:
        self.docs = list(docs)
        self._build()

    def _build(self) -> None:
        import bm25s

        self.retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        self.retriever.index(self.docs, show_progress=False)
        self.vocab = self.retriever.vocab_dict

    def search(self, terms: list[str], text: str, k: int) -> list[int]:
        known = [t for t in terms if t in self.vocab]
        if not known:
            return []
        found, scores = self.retriever.retrieve([known], k=k, show_progress=False, n_threads=1)
        return [int(d) for d, s in zip(found[0], scores[0], strict=True) if s > 0]

    def add(self, start: int, docs: Sequence[list[str]]) -> None:
        self.docs.extend(docs)
        self._build()


LIBRARIES: dict[str, tuple[str | None, Callable[[Sequence[list[str]], Path], Library]]] = {
    "store BM25Index": (None, Store),
    "SQLite FTS5": (None, Fts5),
    "tantivy": ("tantivy", Tantivy),
    "bm25s": ("bm25s", Bm25s),
}


def installed(module: str | None) -> bool:
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def kth_best(exact: BM25Index, text: str, k: int) -> float:
    """The exact k-th best score for ``text`` (0.0 when nothing matches)."""
    scores = exact._scores(text)  # a benchmark may look inside
    if scores is None:
        return 0.0
    best = scores[scores > 0]
    if not best.size:
        return 0.0
    return float(np.sort(best)[::-1][min(k, best.size) - 1])


def run(n: int, n_queries: int, seed: int) -> dict[str, Any]:
    items = memories(n + n_queries + ADDED, seed=seed)
    docs = [tokenize(m.content) for m in items[:n]]
    added = [tokenize(m.content) for m in items[n : n + ADDED]]
    asks = {
        "recall": (queries(n_queries), RECALL_K),
        "neighbours": ([m.content for m in items[n + ADDED :]], NEIGHBOURS_K),
    }
    # The exact index stays for the hits: a library's results are scored by it.
    exact = BM25Index()
    for i, terms in enumerate(docs):
        exact.add_terms(str(i), terms)
    truth = {
        name: [kth_best(exact, text, k) for text in texts] for name, (texts, k) in asks.items()
    }
    out: dict[str, Any] = {
        "n": n,
        "queries": n_queries,
        "terms_per_memory": round(sum(map(len, docs)) / n, 1),
        "libraries": {},
    }
    for name, (module, make) in LIBRARIES.items():
        if not installed(module):
            log(f"{name}: not installed (pip install -e '.[lexical]')")
            out["libraries"][name] = None
            continue
        log(f"{name}: building over {n} memories")
        out["libraries"][name] = measure(make, docs, added, asks, exact, truth)
        gc.collect()
    return out


def measure(
    make: Callable[[Sequence[list[str]], Path], Library],
    docs: list[list[str]],
    added: list[list[str]],
    asks: dict[str, tuple[list[str], int]],
    exact: BM25Index,
    truth: dict[str, list[float]],
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="hippo-bm25-"))
    try:
        gc.collect()
        before = rss_mb()
        start = time.perf_counter()
        library = make(docs, folder)
        r: dict[str, Any] = {"build_s": round(time.perf_counter() - start, 1)}
        gc.collect()
        r["rss_mb"] = round(rss_mb() - before)
        r["files_mb"] = round(folder_mb(folder))
        for name, (texts, k) in asks.items():
            terms = [list(dict.fromkeys(tokenize(text))) for text in texts]
            for i in range(min(20, len(texts))):
                library.search(terms[i], texts[i], k)
            times: list[float] = []
            hits = wanted = 0
            for i, text in enumerate(texts):
                start = time.perf_counter()
                found = library.search(terms[i], text, k)
                times.append((time.perf_counter() - start) * 1000)
                kth = truth[name][i]
                if kth > 0:
                    scores = exact._scores(text)
                    assert scores is not None
                    hits += sum(1 for doc in found if scores[doc] >= kth - 1e-9)
                    wanted += min(k, int(np.count_nonzero(scores >= kth - 1e-9)))
            r[name] = {
                "k": k,
                "p50_ms": round(float(np.percentile(times, 50)), 2),
                "p95_ms": round(float(np.percentile(times, 95)), 2),
                "recall": round(hits / wanted, 4) if wanted else None,
            }
        start = time.perf_counter()
        library.add(len(docs), added)
        r["add_1000_s"] = round(time.perf_counter() - start, 2)
        del library
        return r
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def print_table(result: dict[str, Any]) -> None:
    print(
        f"BM25 at {result['n']:,} memories ({result['terms_per_memory']} terms each), "
        f"{result['queries']} asks of each kind, one at a time"
    )
    print()
    header = [
        "library",
        "build",
        "RSS added",
        "files",
        f"recall top {RECALL_K}: p50 / p95",
        "exact hits",
        f"neighbours top {NEIGHBOURS_K}: p50 / p95",
        "exact hits",
        f"add {ADDED:,}",
    ]
    print(" | ".join(header))
    print("|".join("---" for _ in header))
    for name, r in result["libraries"].items():
        if r is None:
            print(f"{name} | not installed")
            continue
        cells = [name, f"{r['build_s']} s", f"{r['rss_mb']:,} MB", f"{r['files_mb']:,} MB"]
        for ask in ("recall", "neighbours"):
            a = r[ask]
            cells += [f"{a['p50_ms']} / {a['p95_ms']} ms", f"{a['recall']}"]
        cells.append(f"{r['add_1000_s']} s")
        print(" | ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (default %(default)s)")
    parser.add_argument("--queries", type=int, default=200, help="asks of each kind")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args(argv)
    result = run(args.n, args.queries, args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
