"""A large collection of the embedded store, served: start-up, resident memory,
and the request paths that must not read the whole collection.

    .venv/bin/python bench/million.py --n 1000000 --data /tmp/hippo-million [--json]

The store in ``--data`` is built once, in a child process, as
``bench/maintenance.py`` builds its store (``bench/synth.py``'s memories with
their cached hashing vectors and keyword hub edges, aged and used as a
long-lived collection is, so that many are due for resurfacing, with ASSOCIATED
edges between neighbours), then closed, which saves the vector graph beside the
database. Later runs reuse it.

This process then starts the engine on that directory as ``hippo serve`` does
(hashing embedder, maintenance off) and times, through the REST API in process
(FastAPI's TestClient):

- start-up to ready: the engine opened and the collection's indexes built
  (vectors, graph loaded, text, walked graph, due dates), or loaded from the
  snapshot the last close saved when nothing was written since, and the
  process's resident memory then and at its peak;
- how long after the start the text search's tantivy candidates were filled
  (searches are exact until then; the timings below wait for it);
- ``GET /stats`` (graph health as kept: the first call computes it), its
  median over the next ten;
- ``GET /resurface?limit=10``, ``POST /associate`` on two concepts the
  collection holds, ``POST /recall`` (default recipe, limit 10): p50 and p95
  over ``--queries`` requests each, after a short warm-up;
- close: the engine shut down, which saves the indexes' snapshot (the recalls
  above taught edges, so the one loaded, if any, no longer stands).

Run it twice on one ``--data``: the first start builds the indexes from the
rows (or loads what an earlier close saved), the second loads them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.maintenance import COLLECTION, build
from bench.recall import log, memory_figures
from bench.synth import memories, queries

SEED = 7


def built(data: Path) -> bool:
    return (data / "hippo.sqlite3").exists() and (data / "built").exists()


def build_store(data: Path, n: int) -> None:
    """Build the collection in ``data`` (in this process: the child's job)."""
    from hippocampus.store.embedded import EmbeddedStore

    store = EmbeddedStore(data, synchronous="NORMAL")
    try:
        t0 = time.perf_counter()
        edges = build(store, n, SEED)
        log(f"  built {n} memories, {edges}, in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        store.wait_for_graphs(COLLECTION)
        log(f"  waited {time.perf_counter() - t0:.0f} s for the vector graph")
    finally:
        store.close()
    (data / "built").write_text(f"{n}\n")


def timed(call: Any, count: int) -> list[float]:
    out: list[float] = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def summary(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(float(np.percentile(times, 95)), 2),
    }


def measure(data: Path, n_queries: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from hippocampus.api.app import create_app
    from hippocampus.config import HippoSettings
    from hippocampus.service import Hippocampus

    settings = HippoSettings(data_dir=data, embedder="hashing", maintenance_interval_s=0.0)
    start = time.perf_counter()
    service = Hippocampus.from_settings(settings)
    service.warm()
    startup_s = time.perf_counter() - start
    snapshot = service.store.loaded_from_snapshot(COLLECTION)  # type: ignore[attr-defined]
    memory = memory_figures()
    log(f"  ready in {startup_s:.1f} s, {memory['rss_mb']} MB resident")
    # Searches are exact until tantivy holds the text; the timings below are of
    # the collection as it serves after that.
    service.store.wait_for_text_candidates(COLLECTION)  # type: ignore[attr-defined]
    text_s = time.perf_counter() - start
    log(f"  text candidates filled {text_s:.1f} s after the start")
    base = f"/v1/collections/{COLLECTION}"
    result: dict[str, Any] = {
        "startup_s": round(startup_s, 1),
        "snapshot": snapshot,
        "text_candidates_s": round(text_s, 1),
        **memory,
    }
    with TestClient(create_app(settings, service=service)) as client:

        def ok(response: Any) -> Any:
            assert response.status_code == 200, response.text
            return response.json()

        stats = timed(lambda _: ok(client.get(f"{base}/stats")), 11)
        first = ok(client.get(f"{base}/stats"))
        result["memories"] = first["memories"]
        result["stats_first_ms"] = round(stats[0], 1)
        result["stats"] = summary(stats[1:])
        timed(lambda _: ok(client.get(f"{base}/resurface")), 5)
        result["resurface"] = summary(
            timed(lambda _: ok(client.get(f"{base}/resurface?limit=10")), n_queries)
        )
        concepts = service.get(COLLECTION, memories(1, seed=SEED)[0].id).retrieval.concepts[:2]
        result["associate_context"] = concepts
        result["associate"] = summary(
            timed(lambda _: ok(client.post(f"{base}/associate", json={"context": concepts})), 10)
        )
        texts = queries(n_queries + 20)
        timed(lambda i: ok(client.post(f"{base}/recall", json={"query": texts[-1 - i]})), 20)
        result["recall"] = summary(
            timed(lambda i: ok(client.post(f"{base}/recall", json={"query": texts[i]})), n_queries)
        )
    result["peak_rss_mb"] = memory_figures()["peak_rss_mb"]
    start = time.perf_counter()
    service.close()
    result["close_s"] = round(time.perf_counter() - start, 1)
    return result


def print_table(r: dict[str, Any], n: int) -> None:
    rows = [
        ("memories", f"{r['memories']} in one collection (asked for {n})"),
        (
            "start-up to ready",
            f"{r['startup_s']} s (engine opened, "
            + ("indexes loaded from their snapshot" if r["snapshot"] else "indexes built")
            + ", vector graph loaded)",
        ),
        (
            "text candidates",
            f"tantivy filled {r['text_candidates_s']} s after the start (searches exact before)",
        ),
        ("resident memory", f"{r['rss_mb']} MB when ready, {r['peak_rss_mb']} MB at peak"),
        ("GET /stats", f"first {r['stats_first_ms']} ms, then p50 {r['stats']['p50_ms']} ms"),
        ("GET /resurface", f"p50 {r['resurface']['p50_ms']} ms, p95 {r['resurface']['p95_ms']} ms"),
        (
            "POST /associate",
            f"p50 {r['associate']['p50_ms']} ms, p95 {r['associate']['p95_ms']} ms "
            f"(context {r['associate_context']})",
        ),
        ("POST /recall", f"p50 {r['recall']['p50_ms']} ms, p95 {r['recall']['p95_ms']} ms"),
        ("close", f"{r['close_s']} s (the indexes' snapshot saved)"),
    ]
    width = max(len(name) for name, _ in rows)
    print("a large collection, served")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, required=True, help="the store's folder (kept)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.build_only:
        build_store(args.data, args.n)
        return 0
    if not built(args.data):
        log(f"  building {args.n} memories in {args.data} (once)")
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--build-only",
                "--n",
                str(args.n),
                "--data",
                str(args.data),
            ],
            check=True,
        )
    result = measure(args.data, args.queries)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, args.n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
