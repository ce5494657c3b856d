"""Throughput and latency per route under concurrent clients, against one real
server process on loopback.

    .venv/bin/python bench/load.py [--clients 1,4,16] [--seconds 20] [--requests N]
                                   [--memories 300] [--embedder hashing|minilm]
                                   [--slots N] [--store embedded|neo4j]
                                   [--workers N] [--json]

Starts ``hippo serve`` on a temporary data dir (the hashing embedder by default;
``--embedder minilm`` for the real model), remembers ``--memories`` incident
notes, then runs the mixed workload of bench/workload.py (remember / forget,
recall, conversation messages, engagement, feedback, decay passes) from 1, 4
and 16 client threads in turn, each level for ``--seconds`` (or until
``--requests`` answered). Every level runs the same mix: the clients share
one pool of the memories they remembered, and once it holds 20 a remember
forgets the oldest instead. Per level and route: requests, throughput, p50 / p95
/ p99 latency and failed requests (5xx or no answer). Client and server share
the machine's cores. ``--slots`` sets the server's HIPPO_ADMISSION__SLOTS (how
many heavy requests execute at once; 0: no limit), to compare. ``--store neo4j``
serves from the Neo4j that ``HIPPO_NEO4J__URI``, ``__USER``, ``__PASSWORD`` and
``__DATABASE`` name, in a collection of its own dropped afterwards; there
``--workers N`` runs ``hippo serve --workers N``, N processes sharing the one
database (the run starts once every worker answers).

Below the table, the run is held to its targets: at the most clients, total
requests/s at least the 1-client figure of the same run, and conversation
message and engagement p95 at most 10x their own 1-client p50.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.server import Server
from bench.workload import (
    ROUTES,
    Client,
    Latencies,
    Ledger,
    Mix,
    counter,
    notes,
    percentile,
    preload,
    start_crew,
)
from hippocampus.config import HippoSettings
from hippocampus.store.neo4j import Neo4jStore

COLLECTION = "load"
SLOW_ROUTES = ("message", "engage")  # p95 under load held to 10x their 1-client p50


def neo4j_settings() -> dict[str, str]:
    """The server's ``HIPPO_*`` for the Neo4j this environment names (the server
    is given no other ``HIPPO_`` variables)."""
    neo4j = HippoSettings().neo4j
    return {
        "HIPPO_STORE": "neo4j",
        "HIPPO_NEO4J__URI": neo4j.uri,
        "HIPPO_NEO4J__USER": neo4j.user,
        "HIPPO_NEO4J__PASSWORD": neo4j.password,
        "HIPPO_NEO4J__DATABASE": neo4j.database,
    }


@contextlib.contextmanager
def neo4j_collection(prefix: str) -> Iterator[str]:
    """A fresh collection in that Neo4j, its schema set up first; dropped after."""
    neo4j = HippoSettings().neo4j
    store = Neo4jStore.connect(
        neo4j.uri, user=neo4j.user, password=neo4j.password, database=neo4j.database
    )
    with contextlib.closing(store):
        store.setup()
        name = f"{prefix}{uuid.uuid4().hex[:8]}"
        try:
            yield name
        finally:
            log(f"dropping {name} ...")
            store.drop_collection(name)


def log(message: str) -> None:
    # stderr, so that --json leaves exactly one object on stdout
    print(message, file=sys.stderr, flush=True)


def run_level(
    url: str,
    collection: str,
    clients: int,
    seconds: float,
    requests: int | None,
    *,
    ledger: Ledger,
    hot: list[str],
    next_note: Callable[[], int],
) -> dict[str, Any]:
    """One level: ``clients`` threads until the time or the request budget is spent."""
    latencies = Latencies()
    deadline = time.monotonic() + seconds
    budget = counter()
    started = time.perf_counter()
    crew = start_crew(
        clients,
        lambda n: Client(
            url,
            collection,
            ledger,
            latencies,
            name=f"c{clients}-{n}",
            seed=1000 * clients + n,
            hot=hot,
            next_note=next_note,
            mix=Mix(scratch_cap=20),
        ),
        go_on=lambda: time.monotonic() < deadline and (requests is None or budget() < requests),
    )
    crew.join()
    elapsed = time.perf_counter() - started
    if crew.crashed:
        raise crew.crashed[0]
    ms, failed = latencies.take()
    routes = {}
    for route in (*ROUTES, "all"):
        samples = [x for v in ms.values() for x in v] if route == "all" else ms.get(route, [])
        fails = sum(failed.values()) if route == "all" else failed.get(route, 0)
        if not samples and not fails:
            continue
        routes[route] = {
            "requests": len(samples),
            "rps": round(len(samples) / elapsed, 1),
            "p50_ms": round(percentile(samples, 0.50), 1),
            "p95_ms": round(percentile(samples, 0.95), 1),
            "p99_ms": round(percentile(samples, 0.99), 1),
            "failed": fails,
        }
    return {"clients": clients, "seconds": round(elapsed, 1), "routes": routes}


def targets(levels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run against its targets: the most clients against 1 client."""
    alone = next((level for level in levels if level["clients"] == 1), None)
    crowd = max(levels, key=lambda level: level["clients"])
    if alone is None or crowd is alone:
        return []
    checks = [
        {
            "what": f"req/s at {crowd['clients']} clients >= at 1",
            "value": crowd["routes"]["all"]["rps"],
            "limit": alone["routes"]["all"]["rps"],
            "met": crowd["routes"]["all"]["rps"] >= alone["routes"]["all"]["rps"],
        }
    ]
    for route in SLOW_ROUTES:
        if route in alone["routes"] and route in crowd["routes"]:
            limit = round(10 * alone["routes"][route]["p50_ms"], 1)
            value = crowd["routes"][route]["p95_ms"]
            checks.append(
                {
                    "what": f"{route} p95 at {crowd['clients']} clients <= 10x its 1-client p50",
                    "value": value,
                    "limit": limit,
                    "met": value <= limit,
                }
            )
    return checks


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", default="1,4,16", help="comma-separated client counts")
    p.add_argument("--seconds", type=float, default=20.0, help="per level")
    p.add_argument("--requests", type=int, default=None, help="per level; stops a level early")
    p.add_argument("--memories", type=int, default=300, help="remembered before the run")
    p.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    p.add_argument(
        "--slots", type=int, default=None, help="HIPPO_ADMISSION__SLOTS (default: the server's)"
    )
    p.add_argument(
        "--store",
        choices=("embedded", "neo4j"),
        default="embedded",
        help="the server's store (neo4j: the one HIPPO_NEO4J__* names)",
    )
    p.add_argument(
        "--workers", type=int, default=1, help="server processes (above 1: --store neo4j only)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = p.parse_args()
    if args.workers > 1 and args.store != "neo4j":
        p.error("--workers above 1 needs --store neo4j: one process owns an embedded data dir")
    levels = [int(x) for x in args.clients.split(",") if x.strip()]
    settings = {"HIPPO_EMBEDDER": args.embedder}
    if args.slots is not None:
        settings["HIPPO_ADMISSION__SLOTS"] = str(args.slots)

    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hippo-load-")))
        collection = COLLECTION
        if args.store == "neo4j":
            settings.update(neo4j_settings())
            # A shared database may hold other runs' collections: one of its own.
            collection = stack.enter_context(neo4j_collection(f"{COLLECTION}-"))
        server = stack.enter_context(
            Server(tmp / "data", tmp / "server.log", settings, workers=args.workers)
        )
        log(f"starting the server ({args.store} store, {args.embedder} embedder) ...")
        server.start(timeout_s=300.0)
        if args.workers > 1:
            log(f"{args.workers} workers answered: pids {sorted(server.worker_pids())}")
        ledger = Ledger()
        preloaded = notes(args.memories)
        preload(server.url, collection, preloaded, ledger)
        hot = [m.id for m in preloaded[:8]]
        next_note = counter(start=args.memories)
        log(f"{args.memories} memories remembered; warming up ...")
        run_level(server.url, collection, 2, 3.0, None, ledger=ledger, hot=hot, next_note=next_note)
        results = []
        for clients in levels:
            log(f"{clients} clients for {args.seconds:g} s ...")
            results.append(
                run_level(
                    server.url,
                    collection,
                    clients,
                    args.seconds,
                    args.requests,
                    ledger=ledger,
                    hot=hot,
                    next_note=next_note,
                )
            )
        problems = list(ledger.errors)

    checks = targets(results)
    report: dict[str, Any] = {
        "store": args.store,
        "workers": args.workers,
        "embedder": args.embedder,
        "memories": args.memories,
        "slots": args.slots,
        "levels": results,
        "targets": checks,
    }
    if problems:
        report["errors"] = problems[:20]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"store {args.store}, {args.workers} worker(s), {args.embedder} embedder")
        print(
            f"{'clients':>7}  {'route':<9} {'requests':>8} {'req/s':>7} "
            f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'failed':>6}"
        )
        for level in results:
            for route, r in level["routes"].items():
                print(
                    f"{level['clients']:>7}  {route:<9} {r['requests']:>8} {r['rps']:>7} "
                    f"{r['p50_ms']:>8} {r['p95_ms']:>8} {r['p99_ms']:>8} {r['failed']:>6}"
                )
        for check in checks:
            verdict = "met" if check["met"] else "MISSED"
            print(f"{check['what']}: {check['value']} (limit {check['limit']}): {verdict}")
        for problem in problems[:20]:
            print(f"unexpected answer: {problem}")
    failed = sum(r["failed"] for level in results for r in level["routes"].values())
    return 1 if problems or failed else 0


if __name__ == "__main__":
    sys.exit(main())
