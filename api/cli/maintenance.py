"""``hippo reindex``, ``use``, ``decay``, ``tiers`` and ``stats``: through the
running server that owns the data directory (or the one ``--url`` names), else
on the directory. Either way each prints the REST API's answer."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from hippocampus.api.cli.common import (
    UsageError,
    answer,
    engine,
    print_json,
    progress,
    server,
    settings,
)

if TYPE_CHECKING:
    from hippocampus.service import Hippocampus

_REINDEX_STEP = 1000


def register(
    add: Any, collection: argparse.ArgumentParser, remote: argparse.ArgumentParser
) -> None:
    """The commands of this group, added to the ``hippo`` parser."""
    p = add(
        "reindex", "embed memories that have no vector from the current model", collection, remote
    )
    p.set_defaults(run=reindex)

    p = add(
        "use",
        "record memories used together (strengthens their association)",
        collection,
        remote,
    )
    p.add_argument("ids", metavar="ID", nargs="+", help="two or more memory ids")
    p.add_argument("--context", action="append", help="a concept of the context (repeatable)")
    p.set_defaults(run=use)

    p = add(
        "decay", "one temporal decay pass over the edges (once a day counts)", collection, remote
    )
    p.set_defaults(run=decay)

    p = add(
        "tiers",
        "apply the tier policy: archive idle memories, quarantine bad ones",
        collection,
        remote,
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=tiers)

    p = add("stats", "counts for a collection", collection, remote)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=stats)


def reindex(args: argparse.Namespace) -> int:
    config = settings(args)
    remote = server(args, config)
    if remote is not None:
        done = 0
        route = remote.collection(args.collection) + f"/maintenance/reindex?limit={_REINDEX_STEP}"
        while True:
            answer = remote.call("POST", route)
            done += answer["reindexed"]
            if answer["remaining"] == 0 or answer["reindexed"] == 0:
                break
        print(f"re-embedded {done} memories of {args.collection} with {answer['model']}")
        return 0
    with engine(config) as service:
        pending = service.pending_count(args.collection)
        name = service.embedder.name
        print(
            f"{pending} memories of {args.collection} wait for a vector from {name}",
            file=sys.stderr,
        )
        with progress(pending, "memories", "reindex") as bar:
            done = service.reindex(args.collection, progress=bar.update)
    print(f"re-embedded {done} memories of {args.collection} with {name}")
    return 0


def use(args: argparse.Namespace) -> int:
    if len(set(args.ids)) < 2:
        raise UsageError("name at least two different memories used together")
    context = args.context or []

    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import EdgeOut, UsedTogetherOut

        found = service.record_use(args.collection, args.ids, context=context)
        out = UsedTogetherOut(edges=[EdgeOut.from_engine(e) for e in found])
        return out.model_dump(mode="json")

    body = {"ids": args.ids, "context": context}
    for edge in answer(args, "POST", "/memories/used-together", local, body)["edges"]:
        print(f"{edge['source']} -- {edge['target']}  weight {edge['weight']:.2f}")
    return 0


def decay(args: argparse.Namespace) -> int:
    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import DecayOut

        done = service.decay(args.collection)
        return DecayOut(collection=args.collection, decayed=done).model_dump(mode="json")

    decayed = answer(args, "POST", "/maintenance/decay", local)["decayed"]
    print(f"decay pass on {args.collection}: {decayed} edges decayed")
    return 0


def tiers(args: argparse.Namespace) -> int:
    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import TiersOut

        done = service.apply_tiers(args.collection)
        return TiersOut.from_engine(done).model_dump(mode="json", by_alias=True)

    report = answer(args, "POST", "/maintenance/tiers", local)
    if args.json:
        print_json(report)
        return 0
    print(
        f"tier pass on {args.collection}: {report['examined']} examined, {report['archived']} "
        f"archived, {report['quarantined']} quarantined, {report['restored']} restored"
    )
    for change in report["changes"]:
        print(f"  {change['id']}: {change['from']} -> {change['to']} ({change['reason']})")
    run = report["retrained"]
    if run is not None:
        kept = "kept" if run["accepted"] else "discarded"
        print(f"quality model retrained: {kept} ({run['reason']})")
    return 0


def stats(args: argparse.Namespace) -> int:
    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import StatsOut

        return StatsOut.from_engine(service.stats(args.collection), None).model_dump(mode="json")

    body = answer(args, "GET", "/stats?graph=false", local)
    if args.json:
        print_json(body)
        return 0
    _print_stats(body)
    return 0


def _print_stats(body: dict[str, Any]) -> None:
    quality = body["quality"]
    rows: list[tuple[str, Any]] = [
        ("collection", body["collection"]),
        ("memories", body["memories"]),
        ("pending embeddings", body["pending_embeddings"]),
        ("events", body["events"]),
        ("events retained", body["events_retained"]),
        ("embedder", body["embedder"]),
        ("extractor", body["extractor"]),
        ("quality min score", quality["min_score"]),
        ("quality model", f"v{quality['model_version']}"),
        ("quality trained at", quality["trained_at"] or "never (prior)"),
    ]
    for title in ("by_category", "by_tier", "hubs", "edges"):
        name = {"by_category": "category", "by_tier": "tier"}.get(title, title)
        rows.extend((f"{name}: {key}", n) for key, n in sorted(body[title].items()))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
