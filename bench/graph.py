"""Associative expansion at scale: the embedded store's ``expand`` on a synthetic graph.

    .venv/bin/python bench/graph.py --n 100000 [--queries 200] [--json]

The graph has the shape of a real collection at that size: every memory links to
about 15 hubs (1-2 of 30 domains, 3 of 800 triggers, 10 of 5,000 concepts, picked
with Zipf-like popularity, so a few dozen hubs hold 5k+ memories), a fifth of the
hub edges are reinforced above the membership weight, and half as many ASSOCIATED
edges as memories link memories that were retrieved together. It is written once
through ``add_memories`` (cached under ``.bench-cache/``), then the store is opened
afresh so the adjacency is rebuilt from SQLite as at a restart.

Timed per query, for two anchor mixes (the recall pipeline's usual few query hubs
plus 5 memories it starts from, and a heavy one): ``store.expand`` with default
``ExpandParams`` (the contract: paths included), and the same walk without
building paths. Beside them, a bare numpy brute-force top-10 over 100k × 384
float32 vectors, the yardstick recall latency is held to.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hippocampus.model import Edge, EdgeType, Memory, RecallFilters, content_hash
from hippocampus.model.association import MEMORY_NODE, Anchor, ExpandParams
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.graph import CollectionGraph

CACHE = Path(__file__).resolve().parent.parent / ".bench-cache"
COLLECTION = "bench-graph"
T0 = datetime(2025, 1, 1, tzinfo=UTC)
KINDS = (("Domain", EdgeType.IN_DOMAIN, 30, 0.8), ("Trigger", EdgeType.HAS_TRIGGER, 800, 0.8))
CONCEPTS = ("Concept", EdgeType.ABOUT, 5000, 0.7)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def zipf_sampler(rng: np.random.Generator, n: int, a: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** a
    return p / p.sum()


def synth_edges(n: int, seed: int) -> list[list[Edge]]:
    """The hub and ASSOCIATED edges leaving each memory ``g{i}``."""
    rng = np.random.default_rng(seed)
    ids = [f"g{i:07d}" for i in range(n)]
    out: list[list[Edge]] = [[] for _ in range(n)]
    for kind, edge_type, count, a in (*KINDS, CONCEPTS):
        p = zipf_sampler(rng, count, a)
        per = {"Domain": None, "Trigger": 3, "Concept": 10}[kind]
        for i in range(n):
            k = per if per is not None else int(rng.integers(1, 3))
            for h in rng.choice(count, size=k, replace=False, p=p).tolist():
                weight = 0.5 if rng.random() < 0.8 else float(rng.uniform(0.5, 1.0))
                target = f"{kind.lower()} {h}"
                out[i].append(Edge(source=ids[i], type=edge_type, target=target, weight=weight))
    for _ in range(n // 2):
        i, j = sorted(rng.integers(0, n, size=2).tolist())
        if i != j:
            # From the later memory, so that its target exists when it is written.
            weight = float(rng.uniform(0.3, 0.9))
            out[j].append(
                Edge(source=ids[j], type=EdgeType.ASSOCIATED, target=ids[i], weight=weight)
            )
    return out


def build(data: Path, n: int, seed: int) -> None:
    edges = synth_edges(n, seed)
    store = EmbeddedStore(data, synchronous="OFF")
    try:
        step = 2_000
        for start in range(0, n, step):
            records = []
            for i in range(start, min(n, start + step)):
                text = f"synthetic memory {i}"
                memory = Memory(
                    id=f"g{i:07d}",
                    collection=COLLECTION,
                    content=text,
                    created_at=T0,
                    updated_at=T0,
                    content_hash=content_hash(text),
                )
                own = {(e.type, e.target): e for e in edges[i]}
                records.append(MemoryRecord(memory=memory, edges=tuple(own.values())))
            store.add_memories(COLLECTION, records)
            if start % 20_000 == 0:
                log(f"  wrote {start + len(records)} memories")
    finally:
        store.close()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def anchor_sets(
    graph: CollectionGraph, n: int, hubs: int, starts: int, queries: int, seed: int
) -> list[list[Anchor]]:
    """Query hubs drawn by popularity (queries name common concepts more often),
    among triggers and concepts (the pipeline does not anchor on domains), plus
    random memories to start from, with falling strengths."""
    rng = random.Random(seed)
    names = [
        (kind, name, degree)
        for kind in ("Trigger", "Concept")
        for name, degree in _hubs(graph, kind)
    ]
    weights = [degree for _, _, degree in names]
    sets = []
    for _ in range(queries):
        chosen: dict[tuple[str, str], Anchor] = {}
        while len(chosen) < hubs:
            kind, name, _ = rng.choices(names, weights)[0]
            chosen[(kind, name)] = Anchor(kind=kind, name=name, strength=rng.uniform(0.6, 1.0))
        anchors = list(chosen.values())
        for r in range(starts):
            anchors.append(
                Anchor(kind=MEMORY_NODE, name=f"g{rng.randrange(n):07d}", strength=1.0 / (1 + r))
            )
        sets.append(anchors)
    return sets


def _hubs(graph: CollectionGraph, kind: str) -> list[tuple[str, int]]:
    code = {"Domain": 1, "Trigger": 2, "Concept": 3}[kind]
    return [
        (name, int(graph._len[node])) for (c, name), node in graph._hub_node.items() if c == code
    ]


def run(n: int, queries: int, seed: int) -> dict[str, Any]:
    data = CACHE / f"graph-{n}-seed{seed}"
    if not (data / "hippo.sqlite3").exists():
        log(f"writing a {n}-memory graph to {data} (once)")
        start = time.perf_counter()
        build(data, n, seed)
        log(f"  written in {time.perf_counter() - start:.0f} s")

    store = EmbeddedStore(data, synchronous="NORMAL")
    try:
        start = time.perf_counter()
        index = store._index(COLLECTION)
        first_use_s = time.perf_counter() - start
        start = time.perf_counter()
        graph = store._build_graph(COLLECTION, index)
        rebuild_s = time.perf_counter() - start
        graph = store._graph(COLLECTION)
        degrees = sorted((int(graph._len[node]) for node in graph._hub_node.values()), reverse=True)
        params = ExpandParams()
        filters = RecallFilters()
        rows = []
        for label, hubs, starts in (("5 hubs + 5 starts", 5, 5), ("8 hubs + 10 starts", 8, 10)):
            sets = anchor_sets(graph, n, hubs, starts, queries, seed)
            for anchors in sets[:10]:  # warm up: scratch pool, caches
                store.expand(COLLECTION, anchors, params=params, filters=filters)
            gc.collect()
            with_paths, without, results, paths = [], [], [], []
            for anchors in sets:
                start = time.perf_counter()
                found = store.expand(COLLECTION, anchors, params=params, filters=filters)
                with_paths.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                store.expand(COLLECTION, anchors, params=params, filters=filters, paths=False)
                without.append((time.perf_counter() - start) * 1000)
                results.append(len(found))
                paths.append(sum(len(e.paths) for e in found))
            rows.append(
                {
                    "anchors": label,
                    "expand_p50_ms": pct(with_paths, 50),
                    "expand_p95_ms": pct(with_paths, 95),
                    "walk_p50_ms": pct(without, 50),
                    "walk_p95_ms": pct(without, 95),
                    "results": float(np.mean(results)),
                    "paths": float(np.mean(paths)),
                }
            )
    finally:
        store.close()

    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((100_000, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    brute = []
    for i in range(queries + 20):
        q = matrix[i % 1000] + 0.1
        start = time.perf_counter()
        scores = matrix @ q
        top = np.argpartition(-scores, 10)[:10]
        top[np.argsort(-scores[top])]
        if i >= 20:
            brute.append((time.perf_counter() - start) * 1000)
    return {
        "n": n,
        "queries": queries,
        "edges": graph.edge_count,
        "hubs": len(degrees),
        "hubs_over_5k": sum(d > 5000 for d in degrees),
        "largest_hub": degrees[0] if degrees else 0,
        "first_use_s": first_use_s,
        "graph_rebuild_s": rebuild_s,
        "brute_force_p50_ms": pct(brute, 50),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = run(args.n, args.queries, args.seed)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['n']:,} memories, {report['edges']:,} walked edges, {report['hubs']:,} hubs "
        f"({report['hubs_over_5k']} over 5k memories, largest {report['largest_hub']:,})"
    )
    print(
        f"first use (vector, text and graph index) {report['first_use_s']:.2f} s; "
        f"graph rebuild alone {report['graph_rebuild_s']:.2f} s"
    )
    print(f"numpy brute-force top-10 over 100k x 384: p50 {report['brute_force_p50_ms']:.2f} ms")
    print()
    header = (
        f"{'anchors':<20}{'expand p50':>12}{'p95':>8}{'no paths p50':>14}{'p95':>8}"
        f"{'results':>9}{'paths':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in report["rows"]:
        print(
            f"{row['anchors']:<20}{row['expand_p50_ms']:>10.2f}ms{row['expand_p95_ms']:>6.2f}ms"
            f"{row['walk_p50_ms']:>12.2f}ms{row['walk_p95_ms']:>6.2f}ms"
            f"{row['results']:>9.0f}{row['paths']:>8.0f}"
        )


if __name__ == "__main__":
    main()
