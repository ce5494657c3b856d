"""Crash loop: kill -9 the server mid-workload, again and again; nothing
acknowledged may be lost and the store must stay consistent.

    .venv/bin/python bench/crashloop.py [--trials 20] [--seed 0] [--clients 3]
                                        [--min-s 1.5] [--max-s 5.0] [--json]

One data dir for the whole run. Each trial starts ``hippo serve`` on it (hashing
embedder), runs the mixed workload of bench/workload.py from ``--clients``
threads (remember and forget, recall, conversation messages, engagement,
helpful feedback on a few hot memories, decay passes) and SIGKILLs the server
after a random ``--min-s``..``--max-s`` seconds, requests in flight. Then:

1. the store is opened in this process, which rebuilds its in-memory indexes
   from disk, and :meth:`EmbeddedStore.integrity_problems` must find nothing
   (SQLite ``PRAGMA integrity_check``; vector index, text index and graph
   against the tables);
2. the server is started again and must hold every write acknowledged in any
   trial so far: memories with their content, forgets, and the usage_count
   and feedback-edge co_occurrences increments (requests left unanswered by
   the kill may or may not have been applied; the server's word is then taken
   for them). Bare-retrieval learning is batched by design (a crash may lose
   the unwritten batch), so co-retrieval edges are not counted here.

Prints one line per trial and the totals; ``--json`` prints
``{"trials", "acknowledged", "lost", ...}`` (and the lines on stderr). Exits
non-zero when anything was lost or an integrity check failed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.server import Server
from bench.workload import (
    Client,
    Latencies,
    Ledger,
    Mix,
    counter,
    notes,
    preload,
    start_crew,
    verify,
)
from hippocampus.store.embedded import EmbeddedStore

COLLECTION = "crashloop"
PRELOADED = 60
HOT = 6


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def trial(
    server: Server,
    ledger: Ledger,
    *,
    number: int,
    clients: int,
    kill_after_s: float,
    hot: list[str],
    next_note: Any,
) -> dict[str, Any]:
    """Run the workload, kill the server, check the files, restart, check the writes."""
    before = ledger.acknowledged
    latencies = Latencies()
    killed = threading.Event()
    crew = start_crew(
        clients,
        lambda n: Client(
            server.url,
            COLLECTION,
            ledger,
            latencies,
            name=f"t{number}c{n}",
            seed=number * 100 + n,
            hot=hot,
            next_note=next_note,
            mix=Mix(scratch_cap=8 * clients, decay=4),
        ),
        go_on=lambda: not killed.is_set(),
    )
    time.sleep(kill_after_s)
    with ledger.lock:  # holding it freezes the in-flight count while the signal goes
        assert server.proc is not None
        server.proc.kill()
        in_flight = ledger.in_flight
    killed.set()
    crew.join(timeout=120)
    server.kill()  # reaps the process
    if crew.crashed:
        raise crew.crashed[0]

    store = EmbeddedStore(server.data_dir)
    try:
        integrity = store.integrity_problems()
    finally:
        store.close()
    server.start()
    verdict = verify(server.url, COLLECTION, ledger, pairs=False, settle=True)
    return {
        "trial": number,
        "kill_after_s": round(kill_after_s, 2),
        "in_flight": in_flight,
        "acknowledged": ledger.acknowledged - before,
        "lost": verdict.lost,
        "problems": integrity + verdict.problems + list(ledger.errors),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--clients", type=int, default=3)
    p.add_argument("--min-s", type=float, default=1.5, help="earliest kill, after the start")
    p.add_argument("--max-s", type=float, default=5.0, help="latest kill")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = p.parse_args()
    rng = random.Random(args.seed)

    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="hippo-crashloop-") as tmp,
        Server(Path(tmp) / "data", Path(tmp) / "server.log") as server,
    ):
        server.start()
        ledger = Ledger()
        preloaded = notes(PRELOADED)
        preload(server.url, COLLECTION, preloaded, ledger)
        with ledger.lock:
            ledger.acknowledged += PRELOADED
        next_note = counter(start=PRELOADED)
        # With --json the table goes to stderr, so stdout holds only the object.
        show = log if args.json else print
        show(
            f"{'trial':>5} {'kill at s':>9} {'in flight':>9} {'acknowledged':>12} "
            f"{'lost':>5} {'problems':>8}"
        )
        for number in range(1, args.trials + 1):
            row = trial(
                server,
                ledger,
                number=number,
                clients=args.clients,
                kill_after_s=rng.uniform(args.min_s, args.max_s),
                hot=[m.id for m in preloaded[:HOT]],
                next_note=next_note,
            )
            rows.append(row)
            show(
                f"{row['trial']:>5} {row['kill_after_s']:>9} {row['in_flight']:>9} "
                f"{row['acknowledged']:>12} {row['lost']:>5} {len(row['problems']):>8}"
            )
            for problem in row["problems"][:10]:
                show(f"      {problem}")
        memories = len(ledger.memories)

    lost = sum(r["lost"] for r in rows)
    problems = [p for r in rows for p in r["problems"]]
    report = {
        "trials": len(rows),
        "acknowledged": ledger.acknowledged,
        "lost": lost,
        "integrity_ok": not problems,
        "killed_with_requests_in_flight": sum(1 for r in rows if r["in_flight"]),
        "memories_at_end": memories,
        "problems": problems[:50],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"{report['trials']} trials, {report['acknowledged']} acknowledged writes, "
            f"{lost} lost, {len(problems)} problems; "
            f"{report['killed_with_requests_in_flight']} kills landed with requests in flight"
        )
    return 1 if lost or problems else 0


if __name__ == "__main__":
    sys.exit(main())
