"""``hippo``: run the server, or work on a data directory from a shell.

Every command builds :class:`~engine.config.HippoSettings` from the environment
(``HIPPO_*``) with the command-line flags on top, opens the engine (``setup`` and
``migrate``: the stores alone), does one thing and closes it again. Only
``serve`` keeps the engine open; while it runs it owns the embedded data
directory, so the other commands refuse to touch it (use the REST API instead).

Exit codes: 0 done, 1 the engine refused or failed (``error: …`` on stderr; a
memory the quality gate rejected included), 2 bad usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TextIO

from pydantic import ValidationError

from api.auth import is_loopback
from engine.config import HippoSettings
from engine.errors import DataDirLockedError, HippoError, InvalidInputError
from engine.model import NewMemory, RecallResult
from engine.retrieve import DEFAULT_RECIPE, RECIPES
from engine.service import Hippocampus
from engine.store.factory import open_store

if TYPE_CHECKING:
    from engine.store.neo4j import Neo4jStore

_SNIPPET = 80


class _UsageError(Exception):
    """A request the CLI refuses before touching the engine (exit 2)."""


# -- settings and the engine ------------------------------------------------------


def _settings(args: argparse.Namespace, **extra: Any) -> HippoSettings:
    overrides: dict[str, Any] = dict(extra)
    if args.data_dir is not None:
        overrides["data_dir"] = args.data_dir
    if args.embedder is not None:
        overrides["embedder"] = args.embedder
    try:
        # Init arguments outrank HIPPO_* variables in pydantic-settings: flags win.
        return HippoSettings(**overrides)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in e.errors()
        )
        raise _UsageError(f"invalid settings: {problems}") from e


@contextlib.contextmanager
def _engine(settings: HippoSettings) -> Iterator[Hippocampus]:
    service = Hippocampus.from_settings(settings)
    try:
        yield service
    finally:
        service.close()


def _progress(total: int | None, unit: str, desc: str, *, unit_scale: bool = False) -> Any:
    from tqdm import tqdm

    # disable=None: a bar on a terminal, silence in pipes and logs.
    return tqdm(
        total=total,
        unit=unit,
        unit_scale=unit_scale,
        desc=desc,
        file=sys.stderr,
        disable=None,
        leave=False,
    )


# -- serve ------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    extra: dict[str, Any] = {}
    if args.host is not None:
        extra["host"] = args.host
    if args.port is not None:
        extra["port"] = args.port
    settings = _settings(args, **extra)
    if not settings.key_map() and not is_loopback(settings.host.strip("[]")):
        raise _UsageError(
            f"refusing to serve on {settings.host}: no API keys are configured, so anyone "
            "who can reach the port could read and write every collection. Set "
            "HIPPO_API_KEYS (KEY=collection,...;KEY2=*) or serve on 127.0.0.1."
        )
    level = logging.getLevelNamesMapping().get(settings.log_level.upper())
    if level is None:
        raise _UsageError(f"HIPPO_LOG_LEVEL={settings.log_level!r} is not a logging level")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import uvicorn

    from api.app import create_app

    with _engine(settings) as service:
        # The CLI opens the engine itself (not the app on start-up) so that a locked
        # data dir or a missing model is reported here, plainly, before uvicorn runs.
        app = create_app(settings, service=service)
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        where = settings.data_dir.resolve() if settings.store == "embedded" else settings.neo4j.uri
        print(
            f"hippo: store {settings.store} at {where}, "
            f"embedder {service.embedder.name}, extractor {service.extractor.name}",
            flush=True,
        )
        if not settings.key_map():
            print("hippo: no API keys configured: serving loopback only", flush=True)
        print(f"hippo: serving http://{host}:{settings.port} (docs at /docs)", flush=True)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=settings.host,
                port=settings.port,
                log_level=level,
                # One process owns an embedded data dir: never more than one worker.
                workers=1,
            )
        )

        def stop(signum: int, frame: object) -> None:
            # Uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal
            # again with the handlers it found; if those were the defaults the process
            # would die before the store is closed. This handler lets run() return, and
            # also covers a signal that lands before uvicorn has installed its own.
            server.should_exit = True

        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, stop)
        try:
            server.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 0


# -- memories ---------------------------------------------------------------------


def _cmd_remember(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        item = NewMemory(
            content=text,
            id=args.id,
            category=args.category,
            tags=args.tag or [],
            importance=args.importance,
            source=args.source,
        )
    except ValidationError as e:
        raise InvalidInputError(_first_error(e)) from e
    with _engine(_settings(args)) as service:
        outcome = service.remember(args.collection, item)
    memory = outcome.memory
    if args.json:
        _print_json(
            {
                "id": memory.id if memory is not None else None,
                "created": outcome.created,
                "rejected": outcome.rejected,
                "duplicate_of": outcome.duplicate_of,
                "conflicts_with": outcome.conflicts_with,
                "embedded": outcome.embedded,
                "quality": outcome.quality,
                "sanitized": outcome.sanitized,
                "reasons": outcome.reasons,
            }
        )
        return 1 if outcome.rejected else 0
    if memory is None:
        print(f"error: not stored (quality {outcome.quality or 0.0:.2f})", file=sys.stderr)
        for reason in outcome.reasons:
            print(f"reason: {reason}", file=sys.stderr)
        return 1
    print(memory.id)
    if outcome.duplicate_of is not None:
        print(f"duplicate_of: {outcome.duplicate_of}")
    for other in outcome.conflicts_with:
        print(f"conflicts_with: {other}")
    for reason in outcome.reasons:
        print(f"reason: {reason}")
    return 0


def _cmd_recall(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        result = service.recall(
            args.collection,
            args.query,
            limit=args.limit,
            recipe=args.recipe,
            explain=args.explain,
        )
    if args.json:
        _print_json(result.model_dump(mode="json"))
    else:
        _print_hits(result)
    return 0


def _print_hits(result: RecallResult, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if not result.hits:
        print("(no memories found)", file=out)
        return
    id_width = min(36, max(2, *(len(h.memory.id) for h in result.hits)))
    cat_width = max(8, *(len(h.memory.category) for h in result.hits))
    print(
        f"{'#':>2}  {'score':>6}  {'id':<{id_width}}  {'category':<{cat_width}}  content", file=out
    )
    for rank, hit in enumerate(result.hits, start=1):
        print(
            f"{rank:>2}  {hit.score:>6.3f}  {_cut(hit.memory.id, id_width):<{id_width}}  "
            f"{hit.memory.category:<{cat_width}}  {_cut(hit.memory.content, _SNIPPET)}",
            file=out,
        )
        for path in hit.paths or []:
            walk = " -> ".join(
                [f"{path.anchor.kind}:{path.anchor.name}"]
                + [
                    f"[{s.type.value} {s.weight:.2f}] {s.kind}:{_cut(s.name, 30)}"
                    for s in path.steps
                ]
            )
            print(f"{'':>10}via {walk}  ({path.strength:.3f})", file=out)


def _cut(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# -- backup -----------------------------------------------------------------------


def _cmd_export(args: argparse.Namespace) -> int:
    counts = {"memory": 0, "edge": 0}
    with _engine(_settings(args)) as service:
        records = service.export(args.collection)
        if args.out is None or str(args.out) == "-":
            for record in records:
                counts[record["type"]] = counts.get(record["type"], 0) + 1
                sys.stdout.write(_jsonl(record))
            sys.stdout.flush()
        else:
            # Written beside the target and renamed at the end: a failed export
            # never leaves a truncated backup under the name of a good one.
            out: Path = args.out
            partial = out.with_name(out.name + ".partial")
            try:
                with partial.open("w", encoding="utf-8") as f:
                    for record in records:
                        counts[record["type"]] = counts.get(record["type"], 0) + 1
                        f.write(_jsonl(record))
                    f.flush()
                    os.fsync(f.fileno())
                partial.replace(out)
            finally:
                partial.unlink(missing_ok=True)
    print(
        f"exported {counts['memory']} memories and {counts['edge']} edges from {args.collection}",
        file=sys.stderr,
    )
    return 0


def _jsonl(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _cmd_import(args: argparse.Namespace) -> int:
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
        service = stack.enter_context(_engine(_settings(args)))
        # Progress in bytes read: exact without a first pass over a large file.
        bar = stack.enter_context(_progress(total, "B", "import", unit_scale=True))
        report = service.import_records(args.collection, _read_jsonl(stream, bar.update))
    print(
        f"imported {report.memories} memories and {report.edges} edges into "
        f"{args.collection} ({report.skipped_existing} already present)"
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


# -- maintenance ------------------------------------------------------------------


def _cmd_reindex(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        pending = service.pending_count(args.collection)
        name = service.embedder.name
        print(f"{pending} memories of {args.collection} wait for a {name} vector", file=sys.stderr)
        with _progress(pending, "memories", "reindex") as bar:
            done = service.reindex(args.collection, progress=bar.update)
    print(f"re-embedded {done} memories of {args.collection} with {name}")
    return 0


def _cmd_tiers(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        report = service.apply_tiers(args.collection)
    if args.json:
        _print_json(report.model_dump(mode="json"))
        return 0
    print(
        f"tier pass on {args.collection}: {report.examined} examined, {report.archived} "
        f"archived, {report.quarantined} quarantined, {report.restored} restored"
    )
    for change in report.changes:
        print(f"  {change['id']}: {change['from']} -> {change['to']} ({change['reason']})")
    if report.retrained is not None:
        run = report.retrained
        print(f"quality model retrained: {'kept' if run.accepted else 'discarded'} ({run.reason})")
    return 0


def _cmd_use(args: argparse.Namespace) -> int:
    if len(set(args.ids)) < 2:
        raise _UsageError("name at least two different memories used together")
    with _engine(_settings(args)) as service:
        edges = service.record_use(args.collection, args.ids, context=args.context or [])
    for edge in edges:
        print(f"{edge.source} -- {edge.target}  weight {edge.weight:.2f}")
    return 0


def _cmd_decay(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        decayed = service.decay(args.collection)
    print(f"decay pass on {args.collection}: {decayed} edges decayed")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    with _engine(_settings(args)) as service:
        stats = service.stats(args.collection)
    if args.json:
        _print_json(stats.model_dump(mode="json"))
        return 0
    rows: list[tuple[str, Any]] = [
        ("collection", stats.collection),
        ("memories", stats.memories),
        ("pending embeddings", stats.pending_embeddings),
        ("events", stats.events),
        ("embedder", stats.embedder),
        ("extractor", stats.extractor),
        ("quality min score", stats.quality.min_score),
        ("quality model", f"v{stats.quality.model_version}"),
        (
            "quality trained at",
            stats.quality.trained_at.isoformat() if stats.quality.trained_at else "never (prior)",
        ),
    ]
    for title, counts in (
        ("category", stats.by_category),
        ("tier", stats.by_tier),
        ("hubs", stats.hubs),
        ("edges", stats.edges),
    ):
        rows.extend((f"{title}: {name}", n) for name, n in sorted(counts.items()))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return 0


def _cmd_setup(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if settings.store != "neo4j":
        print("the embedded store needs no setup: it creates its tables when it opens")
        return 0
    dimensions = settings.neo4j.vector_dimensions or _embedder_dimensions(settings)
    with contextlib.closing(_neo4j_store(settings, dimensions)) as store:
        print(
            f"setting up Neo4j at {settings.neo4j.uri} (database {settings.neo4j.database}, "
            f"{dimensions}-d vector index); waiting until every index is online",
            flush=True,
        )
        store.setup(timeout_s=args.timeout)
    print("the Neo4j schema is ready")
    return 0


def _embedder_dimensions(settings: HippoSettings) -> int:
    from engine.embed import make_embedder

    embedder = make_embedder(
        settings.embedder,
        model_path=settings.model_path,
        batch_size=settings.embed_batch_size,
        precision=settings.embed_precision,
    )
    return embedder.dim


def _neo4j_store(settings: HippoSettings, dimensions: int | None = None) -> Neo4jStore:
    from engine.store.neo4j import Neo4jStore

    store = open_store(settings, kind="neo4j", dimensions=dimensions)
    assert isinstance(store, Neo4jStore)
    return store


def _cmd_migrate(args: argparse.Namespace) -> int:
    from engine.service import PORTABLE_STATE, PORTABLE_STATE_PREFIXES
    from engine.store.copy import copy_collection

    into = args.into or args.collection
    if args.source == args.target and into == args.collection:
        raise _UsageError(
            "copying a collection onto itself: name another store with --to, "
            "or another collection with --into"
        )
    settings = _settings(args)
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(contextlib.closing(open_store(settings, kind=args.source)))
        target = source
        if args.target != args.source:
            target = stack.enter_context(contextlib.closing(open_store(settings, kind=args.target)))
        for store in {id(source): source, id(target): target}.values():
            store.check()
        bar = stack.enter_context(_progress(None, "memories", "migrate"))
        report = copy_collection(
            source,
            target,
            args.collection,
            into=into,
            progress=bar.update,
            states=PORTABLE_STATE,
            state_prefixes=PORTABLE_STATE_PREFIXES,
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


_BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def _benches() -> dict[str, str]:
    """The runnable benchmarks of the source checkout: name -> first docstring line."""
    found: dict[str, str] = {}
    if not _BENCH_DIR.is_dir():
        return found
    for path in sorted(_BENCH_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' not in text:
            continue
        doc = text.split('"""', 2)[1] if text.startswith('"""') else ""
        found[path.stem] = " ".join(doc.strip().splitlines()[0].split()) if doc.strip() else ""
    return found


def _cmd_bench(args: argparse.Namespace) -> int:
    import subprocess

    benches = _benches()
    if not benches:
        print(
            f"error: no benchmarks here: they are in a source checkout ({_BENCH_DIR})",
            file=sys.stderr,
        )
        return 1
    if args.name is None:
        width = max(len(name) for name in benches)
        for name, summary in benches.items():
            print(f"{name:<{width}}  {summary}")
        print("\nrun one: hippo bench NAME [its options]; hippo bench NAME --help for them")
        return 0
    if args.name not in benches:
        raise _UsageError(f"no benchmark {args.name!r}; one of: {', '.join(benches)}")
    # Each benchmark is its own program (bench/NAME.py): run with this interpreter
    # from the checkout, its options passed on untouched.
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{args.name}", *args.options],
        cwd=_BENCH_DIR.parent,
        check=False,
    )
    return done.returncode


def _cmd_demo(args: argparse.Namespace) -> int:
    from engine.demo import DEMO_QUERIES, load_demo

    with _engine(_settings(args)) as service:
        outcomes = load_demo(service, args.collection)
        created = sum(o.created for o in outcomes)
        print(
            f"loaded {created} demo memories into {args.collection} "
            f"({len(outcomes) - created} were already there); embedder {service.embedder.name}"
        )
        for query in DEMO_QUERIES:
            print(f"\n? {query}")
            _print_hits(service.recall(args.collection, query, limit=args.limit))
    return 0


# -- plumbing ---------------------------------------------------------------------


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hippo`` argument parser."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, help="embedded store directory (default: $HIPPO_DATA_DIR)"
    )
    common.add_argument(
        "--embedder",
        choices=("minilm", "hashing"),
        help="minilm (the model) or hashing (no model) (default: $HIPPO_EMBEDDER)",
    )
    collection = _Parser(add_help=False)
    collection.add_argument("--collection", "-c", default="default", help="default: %(default)s")

    parser = _Parser(
        prog="hippo", description="Hippocampus: a graph-based associative memory engine."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, *parents: _Parser) -> _Parser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common, *parents])

    p = add("serve", "run the REST API")
    p.add_argument("--host", help="default: $HIPPO_HOST or 127.0.0.1")
    p.add_argument("--port", type=int, help="default: $HIPPO_PORT or 8000")
    p.set_defaults(run=_cmd_serve)

    p = add("remember", "store one memory", collection)
    p.add_argument("text", metavar="TEXT", help="the memory's content; - reads stdin")
    p.add_argument("--category", default="insight", help="default: %(default)s")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--id", help="an external id (default: a new uuid)")
    p.add_argument("--importance", type=float, default=0.5, help="0-1, default: %(default)s")
    p.add_argument("--source", help="where the memory comes from")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_remember)

    p = add("recall", "find memories similar to a query", collection)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--limit", "-n", type=int, default=10, help="default: %(default)s")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument(
        "--recipe",
        default=DEFAULT_RECIPE,
        help=f"one of {', '.join(RECIPES)} (default %(default)s)",
    )
    p.add_argument("--explain", action="store_true", help="show the graph paths behind each hit")
    p.set_defaults(run=_cmd_recall)

    p = add("import", "load a JSONL export into a collection", collection)
    p.add_argument("file", metavar="FILE", type=Path, help="a file written by export; - is stdin")
    p.set_defaults(run=_cmd_import)

    p = add("export", "write a collection as JSONL (a full backup)", collection)
    p.add_argument("--out", "-o", type=Path, help="output file (default: stdout)")
    p.set_defaults(run=_cmd_export)

    p = add("reindex", "embed memories that have no vector from the current model", collection)
    p.set_defaults(run=_cmd_reindex)

    p = add("use", "record memories used together (strengthens their association)", collection)
    p.add_argument("ids", metavar="ID", nargs="+", help="two or more memory ids")
    p.add_argument("--context", action="append", help="a concept of the context (repeatable)")
    p.set_defaults(run=_cmd_use)

    p = add("decay", "one temporal decay pass over the edges (once a day counts)", collection)
    p.set_defaults(run=_cmd_decay)

    p = add(
        "tiers", "apply the tier policy: archive idle memories, quarantine bad ones", collection
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_tiers)

    p = add("stats", "counts for a collection", collection)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_cmd_stats)

    p = add("setup", "create the Neo4j schema (constraints, vector and full-text indexes)")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds to wait for the indexes to come online (default: %(default)s)",
    )
    p.set_defaults(run=_cmd_setup)

    p = add("migrate", "copy a collection between the embedded store and Neo4j", collection)
    p.add_argument(
        "--from", dest="source", choices=("embedded", "neo4j"), required=True, help="read from"
    )
    p.add_argument(
        "--to", dest="target", choices=("embedded", "neo4j"), required=True, help="write to"
    )
    p.add_argument("--into", help="the collection's name in the target (default: the same)")
    p.set_defaults(run=_cmd_migrate)

    p = sub.add_parser(
        "bench",
        help="run a benchmark (bench/NAME.py) of a source checkout; none: list them",
        description="Run one of the benchmarks in bench/ (each prints a table), or list them.",
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="the benchmark; none: list them")
    p.add_argument("options", metavar="OPTION", nargs=argparse.REMAINDER, help="passed on to it")
    p.set_defaults(run=_cmd_bench)

    p = add("demo", "load example memories and run a few recalls")
    p.add_argument("--collection", "-c", default="demo", help="default: %(default)s")
    p.add_argument("--limit", "-n", type=int, default=3, help="results per query")
    p.set_defaults(run=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hippo`` with ``argv`` (default: the process arguments); returns the exit code."""
    # The model stack draws a "Loading weights" bar on every start; the CLI's own
    # output is what people read. Read by huggingface_hub when transformers loads.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error already printed
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        code: int = args.run(args)
        return code
    except _UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except DataDirLockedError as e:
        print(f"error: {e.message}", file=sys.stderr)
        print(
            "hint: the data dir is in use by a running server, which owns it; "
            "use its REST API, or stop the server first",
            file=sys.stderr,
        )
        return 1
    except HippoError as e:
        where = f" ({e.field})" if e.field and e.field not in e.message else ""
        print(f"error: {e.message}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `hippo export | head`: the reader left; nothing to report.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
