"""Soak: a steady mixed workload against one server for a fixed time, watching
the server process's memory, file descriptors and event log.

    .venv/bin/python bench/soak.py [--minutes 10 | --seconds 120] [--interval 60]
                                   [--clients 4] [--memories 300]
                                   [--retention-s 120] [--maintenance-s 15] [--json]

Starts ``hippo serve`` (hashing embedder by default) on a temporary data dir,
with the event log's retention at ``--retention-s`` seconds
(``HIPPO_EVENTS__MAX_AGE_DAYS``) and the maintenance round, which applies it,
every ``--maintenance-s`` seconds; remembers ``--memories`` notes, then runs
the workload of bench/workload.py from ``--clients`` threads. The working set
plateaus: once the clients hold 10 memories each that they remembered, a
remember forgets the oldest of them instead, so the memory count stays near
the seeded one; the event log stays within its
retention; conversations and surfacings do accumulate, on disk. Every
``--interval`` seconds it prints the server's RSS (``VmRSS`` in
/proc/PID/status), open descriptors (/proc/PID/fd), the data dir's size, the
events the log holds and the pages they take in SQLite (``dbstat``: the events
table and its indexes), requests answered and failed, throughput and p50 / p95
latency. At the end: RSS growth and the event log's size over the last half of
the run (from the sample at half time to the last one), the events logged in
all against those held, whether the log ever held more than its retention
allows (every sample, about every 5 s), and a check that the server holds
every acknowledged write.

Exits non-zero when RSS grew 5% or more over the last half, the log ever held
more events than were appended within its retention (plus a maintenance
interval and a round's time) before the sample, a request failed, or an
acknowledged write is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.server import Server
from bench.workload import (
    Client,
    Latencies,
    Ledger,
    Mix,
    counter,
    notes,
    percentile,
    preload,
    start_crew,
    verify,
)
from hippocampus.store.embedded.store import DB_FILE

COLLECTION = "soak"
MAX_GROWTH = 0.05
ROUND_SLACK_S = 5.0
"""Time a maintenance round may take beyond its interval (it waits the interval
after each round): part of the window an event may outlive its retention by."""
EVENT_LOG = ("events", "events_by_collection", "events_by_age")
"""The event log in SQLite: the table and its indexes (schema.sql, graph_sql)."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` in MiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def disk_mib(data_dir: Path) -> float:
    """The data dir's size: the database, its WAL, the lock."""
    return sum(f.stat().st_size for f in data_dir.iterdir() if f.is_file()) / 2**20


def event_log(data_dir: Path) -> tuple[int, int, float]:
    """Events the server's database holds, events ever appended (the AUTOINCREMENT
    high-water mark: compaction leaves it), and the MiB the table and its indexes
    take, read beside the server (WAL lets a reader in)."""
    conn = sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True, timeout=30.0)
    try:
        (held,) = conn.execute("SELECT count(*) FROM events").fetchone()
        appended = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        marks = ", ".join("?" * len(EVENT_LOG))
        (size,) = conn.execute(
            f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN ({marks})", EVENT_LOG
        ).fetchone()
    finally:
        conn.close()
    return int(held), int(appended[0]) if appended else 0, size / 2**20


def over_retention(samples: list[tuple[float, int, int, float]], window_s: float) -> float:
    """The most the log held, over the samples taken once a whole window had
    passed, as a share of what was appended within the window before (from the
    last sample at or before its start: a wider window, a looser bound). Up to
    1.0, the log held nothing older than its retention allows."""
    worst = 0.0
    for t, held, appended, _ in samples:
        earlier = [s for s in samples if s[0] <= t - window_s]
        if not earlier:
            continue
        within = appended - earlier[-1][2]
        worst = max(worst, held / within if within else (float("inf") if held else 0.0))
    return worst


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--seconds", type=float, default=None, help="overrides --minutes")
    p.add_argument("--interval", type=float, default=60.0, help="seconds per report line")
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--memories", type=int, default=300)
    p.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    p.add_argument(
        "--retention-s", type=float, default=120.0, help="the event log keeps this many seconds"
    )
    p.add_argument(
        "--maintenance-s", type=float, default=15.0, help="seconds between maintenance rounds"
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = p.parse_args()
    total_s = args.seconds if args.seconds is not None else args.minutes * 60.0
    interval = min(args.interval, max(1.0, total_s / 4))

    with (
        tempfile.TemporaryDirectory(prefix="hippo-soak-") as tmp,
        Server(
            Path(tmp) / "data",
            Path(tmp) / "server.log",
            {
                "HIPPO_EMBEDDER": args.embedder,
                "HIPPO_EVENTS__MAX_AGE_DAYS": repr(args.retention_s / 86_400.0),
                "HIPPO_MAINTENANCE_INTERVAL_S": repr(args.maintenance_s),
            },
        ) as server,
    ):
        log(f"starting the server ({args.embedder} embedder) ...")
        server.start(timeout_s=300.0)
        pid = server.pid
        ledger = Ledger()
        latencies = Latencies()
        preloaded = notes(args.memories)
        preload(server.url, COLLECTION, preloaded, ledger)
        hot = [m.id for m in preloaded[:8]]
        next_note = counter(start=args.memories)
        stop = threading.Event()
        rows: list[dict[str, Any]] = []
        samples: list[tuple[float, float]] = [(0.0, rss_mib(pid))]
        log_samples: list[tuple[float, int, int, float]] = []
        log(
            f"soaking for {total_s:g} s with {args.clients} clients; RSS {samples[0][1]:.1f} MiB;"
            f" events kept {args.retention_s:g} s, maintenance every {args.maintenance_s:g} s"
        )
        if not args.json:
            print(
                f"{'t (s)':>7} {'RSS MiB':>8} {'fds':>5} {'disk MiB':>8} {'events':>7} "
                f"{'log MiB':>7} {'requests':>8} {'req/s':>6} {'p50 ms':>7} {'p95 ms':>7} "
                f"{'failed':>6}",
                flush=True,
            )
        started = time.monotonic()
        crew = start_crew(
            args.clients,
            lambda n: Client(
                server.url,
                COLLECTION,
                ledger,
                latencies,
                name=f"soak{n}",
                seed=n,
                hot=hot,
                next_note=next_note,
                mix=Mix(scratch_cap=10 * args.clients),
            ),
            go_on=lambda: not stop.is_set(),
            on_crash=stop.set,
        )
        next_row = interval
        while not stop.is_set():
            now = time.monotonic() - started
            if now >= total_s:
                break
            time.sleep(min(5.0, total_s - now, max(0.0, next_row - now)) or 0.05)
            now = time.monotonic() - started
            samples.append((now, rss_mib(pid)))
            held, appended, log_size = event_log(server.data_dir)
            log_samples.append((now, held, appended, log_size))
            if now + 0.01 >= next_row or now >= total_s:
                ms, failed = latencies.take()
                answered = [x for v in ms.values() for x in v]
                row = {
                    "t_s": round(now),
                    "rss_mib": round(samples[-1][1], 1),
                    "fds": open_fds(pid),
                    "disk_mib": round(disk_mib(server.data_dir), 1),
                    "events_held": held,
                    "event_log_mib": round(log_size, 2),
                    "requests": len(answered),
                    "rps": round(len(answered) / interval, 1),
                    "p50_ms": round(percentile(answered, 0.5), 1),
                    "p95_ms": round(percentile(answered, 0.95), 1),
                    "failed": sum(failed.values()),
                }
                rows.append(row)
                if not args.json:
                    print(
                        f"{row['t_s']:>7} {row['rss_mib']:>8} {row['fds']:>5} {row['disk_mib']:>8} "
                        f"{row['events_held']:>7} {row['event_log_mib']:>7} "
                        f"{row['requests']:>8} {row['rps']:>6} {row['p50_ms']:>7} "
                        f"{row['p95_ms']:>7} {row['failed']:>6}",
                        flush=True,
                    )
                next_row += interval
        stop.set()
        crew.join(timeout=120)
        _, failed = latencies.take()
        late_failures = sum(failed.values())
        elapsed = time.monotonic() - started
        log("checking every acknowledged write ...")
        httpx.post(f"{server.url}/v1/collections/{COLLECTION}/maintenance/decay", timeout=120.0)
        problems = verify(server.url, COLLECTION, ledger, pairs=False).problems
        final = httpx.get(
            f"{server.url}/v1/collections/{COLLECTION}/stats",
            params={"graph": "false"},
            timeout=120.0,
        ).json()
        count = final["memories"]

    half = elapsed / 2
    mid = min(samples, key=lambda s: abs(s[0] - half))
    end = samples[-1]
    growth = (end[1] - mid[1]) / mid[1]
    no_log = (0.0, 0, 0, 0.0)
    log_mid = min(log_samples, key=lambda s: abs(s[0] - half)) if log_samples else no_log
    log_end = log_samples[-1] if log_samples else no_log
    log_growth = (log_end[3] - log_mid[3]) / log_mid[3] if log_mid[3] else 0.0
    window_s = args.retention_s + args.maintenance_s + ROUND_SLACK_S
    over = over_retention(log_samples, window_s)
    failures = sum(r["failed"] for r in rows) + late_failures
    report = {
        "seconds": round(elapsed),
        "clients": args.clients,
        "embedder": args.embedder,
        "intervals": rows,
        "rss_start_mib": round(samples[0][1], 1),
        "rss_mid_mib": round(mid[1], 1),
        "rss_end_mib": round(end[1], 1),
        "rss_peak_mib": round(max(s[1] for s in samples), 1),
        "growth_last_half": round(growth, 4),
        "retention_s": args.retention_s,
        "maintenance_s": args.maintenance_s,
        "events_logged": final["events"],
        "events_retained": final["events_retained"],
        "event_log_mid_mib": round(log_mid[3], 2),
        "event_log_end_mib": round(log_end[3], 2),
        "event_log_peak_mib": round(max((s[3] for s in log_samples), default=0.0), 2),
        "event_log_growth_last_half": round(log_growth, 4),
        "events_held_peak": max((s[1] for s in log_samples), default=0),
        "held_over_appended_in_window": round(over, 3),
        "fds_start": rows[0]["fds"] if rows else None,
        "fds_end": rows[-1]["fds"] if rows else None,
        "memories_at_end": count,
        "acknowledged": ledger.acknowledged,
        "failed_requests": failures,
        "problems": problems + ledger.errors[:20] + [repr(e) for e in crew.crashed],
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"RSS start {report['rss_start_mib']} MiB, at half time {report['rss_mid_mib']} MiB, "
            f"end {report['rss_end_mib']} MiB (peak {report['rss_peak_mib']}); "
            f"growth over the last half {growth:+.1%} (limit {MAX_GROWTH:.0%}); "
            f"event log (kept {args.retention_s:g} s) {report['event_log_mid_mib']} MiB at half "
            f"time, {report['event_log_end_mib']} MiB at the end (peak "
            f"{report['event_log_peak_mib']}, growth over the last half {log_growth:+.1%}); "
            f"{report['events_logged']} events logged, {report['events_retained']} held at the "
            f"end, at most {report['events_held_peak']}: {over:.0%} of those appended within "
            f"the retention, interval and {ROUND_SLACK_S:g} s before (limit 100%); "
            f"fds {report['fds_start']} -> {report['fds_end']}; "
            f"{count} memories at the end; {ledger.acknowledged} acknowledged writes; "
            f"{failures} failed requests"
        )
        for problem in report["problems"]:
            print(f"problem: {problem}")
    too_much = growth >= MAX_GROWTH or over > 1.0
    return 1 if too_much or failures or report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
