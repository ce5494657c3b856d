"""``hippo remember``, ``recall`` and ``demo``: through the running server that
owns the data directory (or the one ``--url`` names), else on the directory."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Literal, TextIO

from pydantic import ValidationError

from hippocampus.api.cli.common import (
    Server,
    answer,
    aware_time,
    engine,
    first_error,
    iso,
    print_json,
    server,
    settings,
)
from hippocampus.errors import InvalidInputError
from hippocampus.model import NewMemory, RecallFilters, RecallResult
from hippocampus.retrieve import DEFAULT_RECIPE, RECIPES

if TYPE_CHECKING:
    from hippocampus.service import Hippocampus

_SNIPPET = 80


def register(
    add: Any, collection: argparse.ArgumentParser, remote: argparse.ArgumentParser
) -> None:
    """The commands of this group, added to the ``hippo`` parser."""
    p = add("remember", "store one memory", collection, remote)
    p.add_argument("text", metavar="TEXT", help="the memory's content; - reads stdin")
    p.add_argument("--category", default="insight", help="default: %(default)s")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--id", help="an external id (default: a new uuid)")
    p.add_argument("--importance", type=float, default=0.5, help="0-1, default: %(default)s")
    p.add_argument("--source", help="where the memory comes from")
    p.add_argument(
        "--conversation", help="the conversation it was said in (turns are linked in order)"
    )
    p.add_argument(
        "--occurred-at",
        type=aware_time,
        help="when it happened, ISO 8601 with an offset (2024-05-01T14:03:00Z); default: now",
    )
    p.add_argument("--speaker", help="who said it")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=remember)

    p = add("recall", "find memories similar to a query", collection, remote)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--limit", "-n", type=int, default=10, help="default: %(default)s")
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON, as POST /recall answers"
    )
    p.add_argument(
        "--full", action="store_true", help="with --json: each memory's whole retrieval block"
    )
    p.add_argument(
        "--recipe",
        default=DEFAULT_RECIPE,
        help=f"one of {', '.join(RECIPES)} (default %(default)s)",
    )
    p.add_argument("--explain", action="store_true", help="show the graph paths behind each hit")
    p.add_argument(
        "--occurred-after",
        type=aware_time,
        help="only memories that happened at or after this time (ISO 8601 with an offset)",
    )
    p.add_argument(
        "--occurred-before",
        type=aware_time,
        help="only memories that happened before this time (exclusive)",
    )
    p.add_argument("--speaker", action="append", help="only memories said by them (repeatable)")
    p.set_defaults(run=recall)

    p = add("demo", "load example memories and run a few recalls", remote)
    p.add_argument("--collection", "-c", default="demo", help="default: %(default)s")
    p.add_argument("--limit", "-n", type=int, default=3, help="results per query")
    p.set_defaults(run=demo)


def _memory_body(item: NewMemory) -> dict[str, Any]:
    """A memory as POST /memories takes it."""
    from hippocampus.api.schemas import MemoryIn

    fields = item.model_dump(mode="json")
    return {k: v for k, v in fields.items() if k in MemoryIn.model_fields and v not in (None, [])}


def remember(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        item = NewMemory(
            content=text,
            id=args.id,
            category=args.category,
            tags=args.tag or [],
            importance=args.importance,
            source=args.source,
            conversation_id=args.conversation,
            occurred_at=args.occurred_at,
            speaker=args.speaker,
        )
    except ValidationError as e:
        raise InvalidInputError(first_error(e)) from e

    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import RememberOut

        outcome = service.remember(args.collection, item)
        return RememberOut.from_engine(outcome).model_dump(mode="json")

    body = answer(args, "POST", "/memories", local, _memory_body(item))
    if args.json:
        print_json(body)
        return 1 if body["rejected"] else 0
    return _print_remembered(body)


def _print_remembered(body: dict[str, Any]) -> int:
    if body["id"] is None:
        print(f"error: not stored (quality {body['quality'] or 0.0:.2f})", file=sys.stderr)
        for reason in body["reasons"]:
            print(f"reason: {reason}", file=sys.stderr)
        return 1
    print(body["id"])
    if body["duplicate_of"] is not None:
        print(f"duplicate_of: {body['duplicate_of']}")
    for other in body["conflicts_with"]:
        print(f"conflicts_with: {other}")
    for other in body.get("supersedes", []):
        print(f"supersedes: {other}")
    for reason in body["reasons"]:
        print(f"reason: {reason}")
    return 0


def recall(args: argparse.Namespace) -> int:
    detail: Literal["compact", "full"] = "full" if args.full or not args.json else "compact"
    filters = RecallFilters(
        occurred_after=args.occurred_after,
        occurred_before=args.occurred_before,
        speakers=args.speaker or [],
    )

    def local(service: Hippocampus) -> dict[str, Any]:
        from hippocampus.api.schemas import RecallOut

        result = service.recall(
            args.collection,
            args.query,
            limit=args.limit,
            recipe=args.recipe,
            explain=args.explain,
            filters=filters,
        )
        return RecallOut.from_engine(result, detail=detail).model_dump(mode="json")

    request = {
        "query": args.query,
        "limit": args.limit,
        "recipe": args.recipe,
        "explain": args.explain,
        "detail": detail,
        "filters": {
            "occurred_after": iso(filters.occurred_after),
            "occurred_before": iso(filters.occurred_before),
            "speakers": filters.speakers,
        },
    }
    body = answer(args, "POST", "/recall", local, request)
    if args.json:
        # The API's answer to the same request: `results`, compact unless --full.
        print_json(body)
    else:
        print_results(body["results"])
        for warning in body["warnings"]:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def demo(args: argparse.Namespace) -> int:
    from hippocampus.demo import DEMO_QUERIES, load_demo

    config = settings(args)
    remote = server(args, config)
    if remote is not None:
        _demo_through(remote, args)
        return 0
    with engine(config) as service:
        outcomes = load_demo(service, args.collection)
        created = sum(o.created for o in outcomes)
        print(
            f"loaded {created} demo memories into {args.collection} "
            f"({len(outcomes) - created} were already there); embedder {service.embedder.name}"
        )
        for query in DEMO_QUERIES:
            print(f"\n? {query}")
            print_hits(service.recall(args.collection, query, limit=args.limit))
    return 0


def _demo_through(remote: Server, args: argparse.Namespace) -> None:
    """The demo over the running server's REST API: one batch, then the recalls."""
    from hippocampus.demo import DEMO_MEMORIES, DEMO_QUERIES

    routes = remote.collection(args.collection)
    answer = remote.call(
        "POST", routes + "/memories", {"memories": [_memory_body(m) for m in DEMO_MEMORIES]}
    )
    created = sum(bool(r["created"]) for r in answer["results"])
    print(
        f"loaded {created} demo memories into {args.collection} "
        f"({len(answer['results']) - created} were already there); server {remote.url}"
    )
    for query in DEMO_QUERIES:
        print(f"\n? {query}")
        found = remote.call(
            "POST", routes + "/recall", {"query": query, "limit": args.limit, "detail": "full"}
        )
        print_results(found["results"])


def print_hits(result: RecallResult, out: TextIO | None = None) -> None:
    """A recall's hits, one line each."""
    from hippocampus.api.schemas import RecallOut

    body = RecallOut.from_engine(result, detail="full").model_dump(mode="json")
    print_results(body["results"], out)


def print_results(results: list[dict[str, Any]], out: TextIO | None = None) -> None:
    """A recall's results (as POST /recall answers them, full), one line each."""
    out = out or sys.stdout
    if not results:
        print("(no memories found)", file=out)
        return
    id_width = min(36, max(2, *(len(h["id"]) for h in results)))
    cat_width = max(8, *(len(h["memory"]["category"]) for h in results))
    print(
        f"{'#':>2}  {'score':>6}  {'id':<{id_width}}  {'category':<{cat_width}}  content", file=out
    )
    for rank, hit in enumerate(results, start=1):
        memory = hit["memory"]
        print(
            f"{rank:>2}  {hit['score']:>6.3f}  {_cut(hit['id'], id_width):<{id_width}}  "
            f"{memory['category']:<{cat_width}}  {_cut(memory['content'], _SNIPPET)}",
            file=out,
        )
        for newer in memory.get("superseded_by") or []:
            print(f"{'':>10}superseded by {newer}", file=out)
        for path in hit.get("paths") or []:
            print(f"{'':>10}via {_walk(path)}  ({path['strength']:.3f})", file=out)


def _walk(path: dict[str, Any]) -> str:
    anchor = path["anchor"]
    return " -> ".join(
        [f"{anchor['kind']}:{anchor['name']}"]
        + [
            f"[{s['type']} {s['weight']:.2f}] {s['kind']}:{_cut(s['name'], 30)}"
            for s in path["steps"]
        ]
    )


def _cut(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
