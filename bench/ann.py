"""Approximate nearest-neighbour libraries on this machine, side by side.

Which library gives the embedded store approximate vector search? For each of
usearch (half precision, as the store keeps it), faiss-cpu (its HNSW index) and
hnswlib (both full precision), all with the store's graph degree (``--degree``,
M) and build width: the build time (two threads), the size of the saved index,
the time to save and load it, and one query at a time (one thread, as a request
runs), searched as the store searches: ``--candidates`` nearest asked of the
library, scored exactly, the best 10 kept; the search width doubled from the
candidates asked up to 1024 until recall@10 against exact search reaches the
target (a hit: a memory whose exact similarity reaches the tenth best, since
equal scores are interchangeable). Then filtered search, one memory in ten allowed
(a tier, a tag or a speaker is about that selective), where the library takes a
filter: its recall@10 against exact search over the allowed memories, at the
width that met the target unfiltered.

Vectors: the hashing embedder's vectors of ``bench/synth.py``'s memories (cached
in ``.bench-cache/`` as ``bench/recall.py`` caches them), unit length, compared
by inner product; queries are ``bench/synth.py``'s questions. A library that is
not installed is reported, not measured:

    .venv/bin/pip install -e '.[ann]'
    .venv/bin/python bench/ann.py [--n 100000] [--degree 32] [--candidates 64]
        [--queries 200] [--target 0.97] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.recall import cached_vectors
from bench.synth import memories, queries
from hippocampus.embed import HashingEmbedder
from hippocampus.store.embedded.index_ann import CONNECTIVITY, EXPANSION_ADD, MIN_CANDIDATES

K = 10
BUILD_WIDTH = EXPANSION_ADD
USEARCH_DTYPE = "f16"  # as the store keeps its graph: half precision
WIDTHS = (16, 32, 64, 128, 256, 512, 1024)
ALLOWED_EVERY = 10  # filtered search: memories whose id is a multiple of this


@dataclass
class Library:
    """One library's index behind the same four calls."""

    name: str
    build: Callable[[np.ndarray, int], Any]
    search: Callable[[Any, np.ndarray, int, int], np.ndarray]
    save: Callable[[Any, Path], None]
    load: Callable[[Path, int, int], Any]
    filtered: Callable[[Any, np.ndarray, int, int, np.ndarray], np.ndarray] | None
    """Search among the allowed ids only (``None``: the library takes no filter)."""


def _usearch() -> Library:
    from usearch.index import Index

    def build(matrix: np.ndarray, degree: int) -> Any:
        index = Index(
            ndim=matrix.shape[1],
            metric="ip",
            dtype=USEARCH_DTYPE,
            connectivity=degree,
            expansion_add=BUILD_WIDTH,
        )
        index.add(np.arange(len(matrix), dtype=np.uint64), matrix, threads=2)
        return index

    def search(index: Any, q: np.ndarray, k: int, width: int) -> np.ndarray:
        index.expansion_search = width
        return np.asarray(index.search(q, k, threads=1).keys, dtype=np.int64)

    def load(path: Path, n: int, dim: int) -> Any:
        return Index.restore(str(path))

    return Library("usearch", build, search, lambda i, p: i.save(str(p)), load, None)


def _faiss() -> Library:
    import faiss

    def build(matrix: np.ndarray, degree: int) -> Any:
        faiss.omp_set_num_threads(2)
        index = faiss.IndexHNSWFlat(matrix.shape[1], degree, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = BUILD_WIDTH
        index.add(matrix)
        faiss.omp_set_num_threads(1)
        return index

    def search(index: Any, q: np.ndarray, k: int, width: int) -> np.ndarray:
        index.hnsw.efSearch = width
        _, ids = index.search(q[None, :], k)
        return np.asarray(ids[0], dtype=np.int64)

    def filtered(index: Any, q: np.ndarray, k: int, width: int, allowed: np.ndarray) -> np.ndarray:
        selector = faiss.IDSelectorBatch(allowed)
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=width)
        _, ids = index.search(q[None, :], k, params=params)
        return np.asarray(ids[0], dtype=np.int64)

    def load(path: Path, n: int, dim: int) -> Any:
        return faiss.read_index(str(path))

    return Library(
        "faiss-cpu (HNSW)", build, search, lambda i, p: faiss.write_index(i, str(p)), load, filtered
    )


def _hnswlib() -> Library:
    import hnswlib

    def build(matrix: np.ndarray, degree: int) -> Any:
        index = hnswlib.Index(space="ip", dim=matrix.shape[1])
        index.init_index(max_elements=len(matrix), ef_construction=BUILD_WIDTH, M=degree)
        index.add_items(matrix, np.arange(len(matrix)), num_threads=2)
        return index

    def search(index: Any, q: np.ndarray, k: int, width: int) -> np.ndarray:
        index.set_ef(max(width, k))
        ids, _ = index.knn_query(q, k=k, num_threads=1)
        return np.asarray(ids[0], dtype=np.int64)

    def filtered(index: Any, q: np.ndarray, k: int, width: int, allowed: np.ndarray) -> np.ndarray:
        index.set_ef(max(width, k))
        ids, _ = index.knn_query(
            q, k=k, num_threads=1, filter=lambda label: label % ALLOWED_EVERY == 0
        )
        return np.asarray(ids[0], dtype=np.int64)

    def load(path: Path, n: int, dim: int) -> Any:
        index = hnswlib.Index(space="ip", dim=dim)
        index.load_index(str(path), max_elements=n)
        return index

    return Library("hnswlib", build, search, lambda i, p: i.save_index(str(p)), load, filtered)


LIBRARIES: dict[str, Callable[[], Library]] = {
    "usearch": _usearch,
    "faiss-cpu": _faiss,
    "hnswlib": _hnswlib,
}


def exact(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ q
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def rescored(matrix: np.ndarray, q: np.ndarray, found: np.ndarray) -> np.ndarray:
    """The best K of the candidates ``found`` (row numbers) by exact similarity."""
    rows = np.sort(found[found >= 0])
    return rows[np.argsort(-(matrix[rows] @ q))[:K]]


def measure(
    lib: Library,
    matrix: np.ndarray,
    qs: np.ndarray,
    target: float,
    folder: Path,
    degree: int,
    candidates: int,
) -> dict[str, Any]:
    started = time.perf_counter()
    index = lib.build(matrix, degree)
    built = time.perf_counter() - started
    path = folder / lib.name.split()[0]
    started = time.perf_counter()
    lib.save(index, path)
    saved = time.perf_counter() - started
    started = time.perf_counter()
    index = lib.load(path, len(matrix), matrix.shape[1])
    loaded = time.perf_counter() - started
    # A hit: a memory whose exact similarity reaches the tenth best (equal scores
    # are interchangeable). Candidates are scored exactly and cut to K, as the
    # store does.
    tenth = [float(np.sort(matrix @ q)[-K]) for q in qs]
    result: dict[str, Any] = {
        "build_s": round(built, 2),
        "index_mb": round(path.stat().st_size / 2**20, 1),
        "save_s": round(saved, 2),
        "load_s": round(loaded, 2),
        "widths": [],
    }
    for width in [w for w in WIDTHS if w >= candidates] or [candidates]:
        times, hits = [], 0
        for q, least in zip(qs, tenth, strict=True):
            started = time.perf_counter()
            got = rescored(matrix, q, lib.search(index, q, candidates, width))
            times.append((time.perf_counter() - started) * 1000)
            hits += int(np.sum(matrix[got] @ q >= least - 1e-5))
        recall = hits / (K * len(qs))
        row = {
            "width": width,
            "recall": round(recall, 4),
            "p50_ms": round(statistics.median(times), 3),
            "p95_ms": round(float(np.percentile(times, 95)), 3),
        }
        result["widths"].append(row)
        if recall >= target:
            break
    chosen = result["widths"][-1]
    result["chosen"] = chosen
    if lib.filtered is None:
        result["filtered"] = None
        return result
    allowed = np.arange(0, len(matrix), ALLOWED_EVERY, dtype=np.int64)
    sub = matrix[allowed]
    times, hits = [], 0
    for q in qs:
        least = float(np.sort(sub @ q)[-K])
        started = time.perf_counter()
        got = lib.filtered(index, q, candidates, max(chosen["width"], candidates), allowed)
        got = rescored(matrix, q, got)
        times.append((time.perf_counter() - started) * 1000)
        hits += int(np.sum(matrix[got] @ q >= least - 1e-5))
    result["filtered"] = {
        "recall": round(hits / (K * len(qs)), 4),
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(float(np.percentile(times, 95)), 3),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (default %(default)s)")
    parser.add_argument(
        "--degree", type=int, default=CONNECTIVITY, help="graph degree M (%(default)s)"
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=MIN_CANDIDATES,
        help="nearest asked of the library, scored exactly, best K kept (%(default)s)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--target", type=float, default=0.97, help="recall@10 to reach")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    embedder = HashingEmbedder()
    matrix = np.ascontiguousarray(
        cached_vectors(embedder, memories(args.n, seed=args.seed), args.seed), dtype=np.float32
    )
    qs = np.ascontiguousarray(embedder.encode(queries(args.queries)), dtype=np.float32)
    times = []
    for q in qs[:50]:
        started = time.perf_counter()
        exact(matrix, q, K)
        times.append((time.perf_counter() - started) * 1000)
    results: dict[str, Any] = {"n": args.n, "exact_p50_ms": round(statistics.median(times), 3)}
    with tempfile.TemporaryDirectory(prefix="hippo-ann-") as tmp:
        for name, make in LIBRARIES.items():
            try:
                lib = make()
            except ImportError:
                results[name] = None
                print(f"{name}: not installed (pip install -e '.[ann]')", file=sys.stderr)
                continue
            print(f"{name}: measuring", file=sys.stderr)
            results[name] = measure(
                lib, matrix, qs, args.target, Path(tmp), args.degree, args.candidates
            )
    if args.json:
        print(json.dumps(results))
        return 0
    print_table(results, args)
    return 0


def print_table(results: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"ANN at {args.n:,} x 384-d (hashing), M={args.degree}, {args.queries} queries, k={K}, "
        f"target recall@10 {args.target}; exact numpy p50 {results['exact_p50_ms']} ms"
    )
    header = (
        "library", "build s", "index MB", "save s", "load s", "width", "recall",
        "p50 ms", "p95 ms", "filtered recall", "filtered p50",
    )  # fmt: skip
    print(" | ".join(header))
    for name in LIBRARIES:
        r = results.get(name)
        if r is None:
            print(f"{name} | not installed")
            continue
        c = r["chosen"]
        f = r["filtered"]
        cells = [
            name, r["build_s"], r["index_mb"], r["save_s"], r["load_s"], c["width"],
            c["recall"], c["p50_ms"], c["p95_ms"],
            "no filter" if f is None else f["recall"], "-" if f is None else f["p50_ms"],
        ]  # fmt: skip
        print(" | ".join(str(x) for x in cells))


if __name__ == "__main__":
    sys.exit(main())
