"""/stats with graph health and /resurface at scale: latency through the API.

    .venv/bin/python bench/maintenance.py [--n 100000] [--requests 50] [--fresh 3] [--json]

Builds an embedded store of N synthetic memories in a temporary directory:
bench/synth.py texts with their hashing vectors (cached in ``.bench-cache/``,
shared with bench/recall.py), hub edges from the keyword extractor, as
bench/recall.py builds them, but aged and used as a long-lived collection is:
created over the past year, a third of them used (up to a dozen times, last
used some time after creation), a fifth with an FSRS review state, confidence
and importance varied, 5% archived, and ASSOCIATED edges between neighbours in
creation order (about 0.6 per memory, so the graph has triangles).

Then, through the API (FastAPI's TestClient in process: routing, auth and JSON
included, no network; the maintenance loop off), per route p50 / p95 / max over
``--requests`` requests after two warm-ups:

- ``GET /stats``: graph health as kept (the first request computed it);
- ``GET /stats?graph=false``;
- ``GET /stats?graph_max_age_s=0``: graph health computed in the request
  (``--fresh`` requests);
- ``GET /resurface?limit=10`` under the FSRS-style and the seed scheduler, from
  the store's due index; and with each scheduler as a caller's own (a
  subclass: no stored dates answer for it), which scans the collection as the
  route did before the index (``--scan`` requests).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient

from bench.recall import cached_vectors, keyword_record
from bench.synth import memories
from hippocampus.api.app import create_app
from hippocampus.config import HippoSettings
from hippocampus.embed import HashingEmbedder
from hippocampus.extract import KeywordConceptExtractor
from hippocampus.model import (
    Edge,
    EdgeType,
    Memory,
    Review,
    Tier,
    utcnow,
)
from hippocampus.schedule import FsrsScheduler, Scheduler, SeedScheduler
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

COLLECTION = "bench"
KEY = "bench-key-0001"
HEADERS = {"Authorization": f"Bearer {KEY}"}
DAY_S = 86_400.0


def log(message: str) -> None:
    # stderr, so that --json leaves exactly one object on stdout
    print(message, file=sys.stderr, flush=True)


class OwnFsrs(FsrsScheduler):
    """The FSRS-style scheduler as a caller's own: answered by a scan."""


class OwnSeed(SeedScheduler):
    """The seed rule as a caller's own: answered by a scan."""


def aged(rng: random.Random, memory: Memory) -> Memory:
    """``memory`` made some time in the past year, used and reviewed unevenly."""
    created = memory.created_at - timedelta(seconds=rng.uniform(0.0, 365 * DAY_S))
    age_s = (memory.created_at - created).total_seconds()
    uses, last_used, review = 0, None, None
    if rng.random() < 0.35:
        uses = rng.randint(1, 12)
        last_used = created + timedelta(seconds=rng.uniform(0.0, age_s))
    if rng.random() < 0.2:
        review = Review(
            stability=rng.uniform(0.5, 60.0),
            difficulty=rng.uniform(1.0, 10.0),
            last_review=created + timedelta(seconds=rng.uniform(0.0, age_s)),
            reviews=rng.randint(1, 6),
        )
    varied = [0.5] * 6 + [round(rng.uniform(0.2, 1.0), 2)] * 4
    return memory.model_copy(
        update={
            "created_at": created,
            "updated_at": last_used or created,
            "importance": rng.choice(varied),
            "tier": Tier.ARCHIVED if rng.random() < 0.05 else Tier.ACTIVE,
            "retrieval": memory.retrieval.model_copy(
                update={
                    "confidence": rng.choice(varied),
                    "usage_count": uses,
                    "last_used": last_used,
                    "review": review,
                }
            ),
        }
    )


def build(store: EmbeddedStore, n: int, seed: int) -> dict[str, int]:
    """Insert the memories with their vectors, hub edges and ASSOCIATED edges."""
    items = memories(n, seed=seed)
    embedder = HashingEmbedder()
    vectors = cached_vectors(embedder, items, seed)
    extractor = KeywordConceptExtractor(max_concepts=8, max_triggers=4)
    rng = random.Random(seed)
    now = utcnow()
    hub_edges = 0
    step = 2_000
    for start in range(0, n, step):
        chunk = items[start : start + step]
        records = []
        for offset, (m, ex) in enumerate(
            zip(chunk, extractor.extract_many([m.content for m in chunk]), strict=True)
        ):
            record = keyword_record(
                m,
                ex,
                vectors[start + offset],
                model=embedder.name,
                now=now,
                collection=COLLECTION,
            )
            hub_edges += len(record.edges)
            records.append(replace(record, memory=aged(rng, record.memory)))
        store.add_memories(COLLECTION, records)
    associated = [
        Edge(
            source=items[i].id,
            type=EdgeType.ASSOCIATED,
            target=items[i - back].id,
            weight=round(rng.uniform(0.3, 1.0), 2),
            co_occurrences=rng.randint(1, 9),
        )
        for i in range(2, n)
        for back in (1, 2)
        if rng.random() < 0.3
    ]
    for start in range(0, len(associated), 10_000):
        store.upsert_edges(COLLECTION, associated[start : start + 10_000])
    return {"hub_edges": hub_edges, "associated_edges": len(associated)}


def timed(client: TestClient, path: str, count: int, **params: Any) -> dict[str, float]:
    """p50 / p95 / max in ms of ``count`` GETs of ``path``, after two warm-ups."""
    for _ in range(2):
        r = client.get(path, params=params, headers=HEADERS)
        r.raise_for_status()
    gc.collect()
    ms = []
    for _ in range(count):
        started = time.perf_counter()
        r = client.get(path, params=params, headers=HEADERS)
        ms.append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "max_ms": round(max(ms), 2),
        "requests": count,
    }


def run(n: int, requests: int, fresh: int, scan: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hippo-bench-") as tmp:
        data = Path(tmp) / "data"
        store = EmbeddedStore(data, synchronous="NORMAL")
        started = time.perf_counter()
        built = build(store, n, seed)
        build_s = time.perf_counter() - started
        log(f"  built {n} memories, {built} in {build_s:.1f} s")
        service = Hippocampus(store, HashingEmbedder(), KeywordConceptExtractor())
        settings = HippoSettings(
            data_dir=data, embedder="hashing", api_keys=f"{KEY}=*", maintenance_interval_s=0
        )
        result: dict[str, Any] = {"n": n, **built, "build_s": round(build_s, 1)}
        try:
            with TestClient(create_app(settings, service=service)) as client:
                base = f"/v1/collections/{COLLECTION}"
                started = time.perf_counter()
                first = client.get(f"{base}/stats", headers=HEADERS).json()
                result["stats_first_s"] = round(time.perf_counter() - started, 2)
                result["graph"] = {
                    k: first["graph"][k]
                    for k in ("nodes", "edges", "clustering", "components", "largest_component")
                }
                log(f"  first /stats (graph health computed): {result['stats_first_s']} s")
                result["stats_kept"] = timed(client, f"{base}/stats", requests)
                result["stats_no_graph"] = timed(client, f"{base}/stats", requests, graph="false")
                result["stats_fresh"] = timed(client, f"{base}/stats", fresh, graph_max_age_s=0)
                took = client.get(f"{base}/stats", headers=HEADERS).json()["graph"]["took_s"]
                result["graph_health_took_s"] = took
                log("  /stats timed")
                schedulers: list[tuple[str, Scheduler, Scheduler]] = [
                    ("fsrs", FsrsScheduler(), OwnFsrs()),
                    ("seed", SeedScheduler(), OwnSeed()),
                ]
                now = utcnow()
                for name, indexed, own in schedulers:
                    due = sum(
                        1
                        for m in store.iter_memories(COLLECTION)
                        if m.tier == Tier.ACTIVE and indexed.urgency(m, now) >= 1.0
                    )
                    service.scheduler = indexed
                    fast = timed(client, f"{base}/resurface", requests, limit=10)
                    got = client.get(f"{base}/resurface?limit=10", headers=HEADERS).json()
                    service.scheduler = own
                    slow = timed(client, f"{base}/resurface", scan, limit=10)
                    scanned = client.get(f"{base}/resurface?limit=10", headers=HEADERS).json()
                    same = [r["memory"]["id"] for r in got["results"]] == [
                        r["memory"]["id"] for r in scanned["results"]
                    ]
                    result[f"resurface_{name}"] = {
                        "due": due,
                        "index": fast,
                        "scan": slow,
                        "same_results": same,
                    }
                    log(f"  /resurface ({name}) timed")
        finally:
            service.close()
    return result


def print_table(r: dict[str, Any]) -> None:
    def line(name: str, t: dict[str, float]) -> str:
        return (
            f"{name:<38} {t['p50_ms']:>10.2f} {t['p95_ms']:>10.2f} {t['max_ms']:>10.2f}"
            f" {t['requests']:>5}"
        )

    g = r["graph"]
    print(
        f"maintenance benchmark: {r['n']} memories, {r['hub_edges']} hub edges, "
        f"{r['associated_edges']} ASSOCIATED edges (built in {r['build_s']} s)"
    )
    print(
        f"graph: {g['nodes']} nodes, {g['edges']} edges, clustering {g['clustering']:.4f}, "
        f"{g['components']} components (largest {g['largest_component']}); computing it "
        f"took {r['graph_health_took_s']} s; the first /stats, which computed it, "
        f"{r['stats_first_s']} s"
    )
    print(f"{'request':<38} {'p50 ms':>10} {'p95 ms':>10} {'max ms':>10} {'n':>5}")
    print(line("GET /stats (graph health kept)", r["stats_kept"]))
    print(line("GET /stats?graph=false", r["stats_no_graph"]))
    print(line("GET /stats?graph_max_age_s=0 (computed)", r["stats_fresh"]))
    for name in ("fsrs", "seed"):
        x = r[f"resurface_{name}"]
        print(line(f"GET /resurface?limit=10 {name}, index", x["index"]))
        print(line(f"GET /resurface?limit=10 {name}, scan", x["scan"]))
        print(f"  {name}: {x['due']} memories due; index and scan agree: {x['same_results']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (default %(default)s)")
    parser.add_argument("--requests", type=int, default=50, help="timed requests per route")
    parser.add_argument("--fresh", type=int, default=3, help="timed /stats computing graph health")
    parser.add_argument("--scan", type=int, default=5, help="timed /resurface by scan")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object only")
    args = parser.parse_args()
    result = run(args.n, args.requests, args.fresh, args.scan, args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
