"""``hippo export`` and ``import`` (a collection as JSONL), ``setup`` (the Neo4j
schema) and ``migrate`` (a collection from one store to the other)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from hippocampus.api.cli.common import (
    UsageError,
    engine,
    progress,
    server,
    settings,
)
from hippocampus.errors import InvalidInputError


def register(
    add: Any, collection: argparse.ArgumentParser, remote: argparse.ArgumentParser
) -> None:
    """The commands of this group, added to the ``hippo`` parser."""
    p = add("import", "load a JSONL export into a collection")
    p.add_argument(
        "--collection",
        "-c",
        help="the collection to load into (default: the one the file's header names)",
    )
    p.add_argument("file", metavar="FILE", type=Path, help="a file written by export; - is stdin")
    p.set_defaults(run=import_)

    p = add("export", "write a collection as JSONL (a full backup)", collection, remote)
    p.add_argument("--out", "-o", type=Path, help="output file (default: stdout)")
    p.set_defaults(run=export)

    p = add("setup", "create the Neo4j schema (constraints, vector and full-text indexes)")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the indexes to come online (default: %(default)s)",
    )
    p.set_defaults(run=setup)

    p = add("migrate", "copy a collection between the embedded store and Neo4j", collection)
    p.add_argument(
        "--from", dest="source", choices=("embedded", "neo4j"), required=True, help="read from"
    )
    p.add_argument(
        "--to", dest="target", choices=("embedded", "neo4j"), required=True, help="write to"
    )
    p.add_argument("--into", help="the collection's name in the target (default: the same)")
    p.set_defaults(run=migrate)


def export(args: argparse.Namespace) -> int:
    config = settings(args)
    remote = server(args, config)
    counts: dict[str, int] = {"memory": 0, "edge": 0}
    with contextlib.ExitStack() as stack:
        if remote is not None:
            route = remote.collection(args.collection) + "/export"
            lines: Iterator[str] = stack.enter_context(contextlib.closing(remote.lines(route)))
        else:
            service = stack.enter_context(engine(config))
            lines = service.export_lines(args.collection)
        _write(_counted(lines, counts), args.out)
    print(
        f"exported {counts['memory']} memories and {counts['edge']} edges from {args.collection}",
        file=sys.stderr,
    )
    return 0


def _counted(lines: Iterator[str], counts: dict[str, int]) -> Iterator[str]:
    for line in lines:
        kind = json.loads(line)["type"]
        counts[kind] = counts.get(kind, 0) + 1
        yield line


def _write(lines: Iterator[str], out: Path | None) -> None:
    if out is None or str(out) == "-":
        for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    # Written beside the target and renamed at the end: a failed export never
    # leaves a truncated backup under the name of a good one.
    partial = out.with_name(out.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as f:
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


def import_(args: argparse.Namespace) -> int:
    path: Path = args.file
    with contextlib.ExitStack() as stack:
        if str(path) == "-":
            stream: IO[bytes] = sys.stdin.buffer
            total = None
        else:
            try:
                stream = stack.enter_context(path.open("rb"))
                total = path.stat().st_size
            except OSError as e:
                raise InvalidInputError(f"cannot read {path}: {e.strerror or e}") from e
        service = stack.enter_context(engine(settings(args)))
        # Progress in bytes read: exact without a first pass over a large file.
        bar = stack.enter_context(progress(total, "B", "import", unit_scale=True))
        records = _read_jsonl(stream, bar.update)
        first = next(records, None)
        # Into --collection when given, else the collection the file's header names.
        named = first.get("collection") if first and first.get("type") == "header" else None
        collection = args.collection or (named if isinstance(named, str) else None) or "default"
        report = service.import_records(
            collection, itertools.chain([first] if first is not None else [], records)
        )
        pending = service.pending_count(collection)
    print(
        f"imported {report.memories} memories and {report.edges} edges into "
        f"{collection} ({report.skipped_existing} already present)"
    )
    if pending:
        print(
            f"{pending} memories of {collection} have no vector from {service.embedder.name} "
            f"and are not found by similarity until embedded: run hippo reindex -c {collection}"
        )
    return 0


def _read_jsonl(stream: IO[bytes], advance: Any) -> Iterator[dict[str, Any]]:
    for number, raw in enumerate(stream, start=1):
        advance(len(raw))
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidInputError(
                f"line {number} is not JSON: {e}", field=f"line {number}"
            ) from e
        if not isinstance(record, dict):
            raise InvalidInputError(f"line {number} is not a JSON object", field=f"line {number}")
        yield record


def setup(args: argparse.Namespace) -> int:
    from hippocampus import admin

    config = settings(args)
    if config.store != "neo4j":
        print("the embedded store needs no setup: it creates its tables when it opens")
        return 0
    dimensions = admin.vector_dimensions(config)
    print(
        f"setting up Neo4j at {config.neo4j.uri} (database {config.neo4j.database}, "
        f"{dimensions}-d vector index); waiting until every index is online",
        flush=True,
    )
    admin.setup_neo4j(config, dimensions, timeout_s=args.timeout)
    print("the Neo4j schema is ready")
    return 0


def migrate(args: argparse.Namespace) -> int:
    from hippocampus import admin

    into = args.into or args.collection
    if args.source == args.target and into == args.collection:
        raise UsageError(
            "copying a collection onto itself: name another store with --to, "
            "or another collection with --into"
        )
    config = settings(args)
    with progress(None, "memories", "migrate") as bar:
        report = admin.migrate(
            config,
            args.collection,
            source=args.source,
            target=args.target,
            into=into,
            progress=bar.update,
        )
    renamed = f" as {into}" if into != args.collection else ""
    print(
        f"copied {args.collection} from {args.source} to {args.target}{renamed}: "
        f"{report.memories} memories ({report.vectors} with vectors), {report.edges} edges, "
        f"{report.hub_vectors} hub vectors, {report.events} events"
        + (
            f", {report.states} learned state document{'s' * (report.states != 1)}"
            if report.states
            else ""
        )
    )
    return 0
